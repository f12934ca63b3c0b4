/*
 * explore.h - the deterministic explorer's schedule and world
 * (docs/TESTING.md "Deterministic exploration").
 *
 * A schedule is a flat list of events: the API calls of several
 * simulated threads (one per process slot), interleaved with engine
 * steps, time passing, hangs, power transitions and injected host or
 * driver failures.  explore_run executes one schedule on a fresh softgpu
 * in manual mode over the simulated OS seam (sim_os.h), with both
 * checkers after every event; where vidmm blocks inside a call, the
 * scheduler picks, from the schedule's seed, which engine moves (or lets
 * virtual time pass).  Same events and seed, same run.
 */
#ifndef VIDMM_SIM_EXPLORE_H
#define VIDMM_SIM_EXPLORE_H

#include <stdint.h>

enum ex_op {
    EX_PROC,          /* a: slot - process, device, paging queue, context */
    EX_PROC_DESTROY,  /* a: slot */
    EX_ALLOC,         /* a: alloc slot, b: owner process, c: size class */
    EX_MAP,           /* a: alloc slot - all of it, anywhere in its owner's space */
    EX_RESIDENT,      /* a: alloc slot - make-resident, not waited for */
    EX_EVICT,         /* a: alloc slot */
    EX_DESTROY,       /* a: alloc slot */
    EX_MOVE,          /* a: alloc slot, b: segment */
    EX_FILLS,         /* a: process, b: command alloc, c: target alloc - a buffer of FILLs */
    EX_HANG,          /* a: process, b: command alloc, c: word alloc - a WAIT nobody meets */
    EX_RESERVE_ZERO,  /* a: process - 64 KiB reserved as zero */
    EX_STANDBY,
    EX_RESUME,
    EX_TICK,          /* half a TDR timeout passes, then the OS timer looks for hangs */
    EX_STEP,          /* a: engine (node, or 3 = the copy engine) */
    EX_PAGING_HANG,   /* the copy engine hangs on its next buffer */
    EX_HOST_FAIL,     /* a: the a-th host allocation from now fails (once) */
    EX_DRIVER_FAIL,   /* a: the op (explore.c drv_ops), b + 1: its call from now that fails, c: sticky
                         (that call and the later ones) - during the next event only */
    EX_FAULT,         /* a: process, b: command alloc - a write to a GPU VA nothing maps (a page fault) */
    EX_HIBERNATE,
    EX_NOPS
};

/* id: the event's place in the generated schedule.  The scheduler's
 * choices inside the event's waits are drawn from (seed, id), so removing
 * other events while shrinking leaves this event's choices as they were. */
struct ex_event {
    uint8_t op, a, b, c;
    uint16_t id;
};

/* Outcome of one schedule. */
struct ex_result {
    int failed;            /* a checker, the touch check, a deadlock or a crash */
    uint32_t at;           /* the event it failed after */
    uint32_t events;       /* events run */
    uint32_t steps;        /* engine steps (explicit and inside waits) */
    uint64_t hash;         /* of every status and step: the same run gives the same hash */
    char msg[512];         /* the first violation */
};

struct ex_options {
    int driver_failures;   /* generate EX_DRIVER_FAIL events */
    int verbose;           /* print each event and status */
};

/* Generate the schedule of seed: n events at most into ev; returns the
 * count. */
uint32_t ex_generate(uint64_t seed, const struct ex_options *o, struct ex_event *ev, uint32_t n);
/* Run a schedule (in this process; the caller forks). */
void ex_run(uint64_t seed, const struct ex_event *ev, uint32_t n, const struct ex_options *o,
            struct ex_result *r);
const char *ex_op_name(unsigned op);
/* "op a b c [id]" (id defaults to the line's place); 0 on success. */
int ex_parse(const char *line, struct ex_event *e);

#endif
