/*
 * last_error_test.c - every failing call leaves a readable reason
 * (vidmm_last_error, vidmm/status.h): the entry, the status, and the
 * argument or handle and rule where a check knows them; a call that
 * succeeds leaves it empty; each thread has its own.  The API fuzzer
 * checks the first rule after every call of its corpora.
 */
#include "harness/test.h"
#include "softgpu_fixture.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

static int has(const char *needle)
{
    const char *t = vidmm_last_error();
    if (strstr(t, needle))
        return 1;
    printf("  last error '%s' lacks '%s'\n", t, needle);
    return 0;
}

static void names_entry_and_rule(void)
{
    struct softgpu_fx f;
    T_CHECK(softgpu_fx_open(&f, 64 * MIB, 64 * MIB, 1) == 0);   /* 0: opened */
    if (!f.a)
        return;
    T_CHECK(vidmm_last_error() != NULL);
    T_ST(vidmm_allocation_destroy(NULL, 1), VIDMM_E_INVALID_ARG);
    T_CHECK(has("vidmm_allocation_destroy: VIDMM_E_INVALID_ARG: adapter is NULL"));
    T_ST(vidmm_allocation_destroy(f.a, 0x1234), VIDMM_E_INVALID_HANDLE);
    T_CHECK(has("allocation handle 0x1234"));
    /* Success empties it. */
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
    T_CHECK(vidmm_last_error()[0] == '\0');

    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, 0, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 1);
    /* Evict what the device never listed: names the allocation, the
     * device and the rule; nothing changed. */
    struct vidmm_evict_args ev = { .allocations = &h, .count = 1 };
    T_ST(vidmm_evict(f.a, p.dev, &ev), VIDMM_E_STATE);
    T_CHECK(has("vidmm_evict: VIDMM_E_STATE"));
    T_CHECK(has("residency list"));
    T_ST(vidmm_evict(f.a, p.dev, NULL), VIDMM_E_INVALID_ARG);
    T_CHECK(has("args is NULL"));
    /* A paging queue of another device. */
    struct softgpu_proc q;
    softgpu_new_proc(f.a, &q, 0, VIDMM_CONTEXT_VIRTUAL);
    struct vidmm_make_resident_args mr = { .paging_queue = q.queue, .allocations = &h, .count = 1 };
    T_ST(vidmm_make_resident(f.a, p.dev, &mr), VIDMM_E_INVALID_HANDLE);
    T_CHECK(has("not a paging queue of device"));
    /* A creation flag that does not exist: the argument and the rule. */
    struct softgpu_alloc_desc d;
    softgpu_desc(&d, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0);
    vidmm_handle bad = 0;
    T_ST(vidmm_allocation_create2(f.a, &d, sizeof d, 0x8u, &bad), VIDMM_E_INVALID_ARG);
    T_CHECK(has("vidmm_allocation_create2: VIDMM_E_INVALID_ARG: create flags 0x8"));
    /* Waits outside the entry mechanism keep it too. */
    T_ST(vidmm_paging_queue_wait(f.a, 0xdead, 1, 0), VIDMM_E_INVALID_HANDLE);
    T_CHECK(has("vidmm_paging_queue_wait: VIDMM_E_INVALID_HANDLE"));
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    T_CHECK(vidmm_last_error()[0] == '\0');
    vidmm_process_destroy(f.a, q.proc);
    vidmm_process_destroy(f.a, p.proc);
    softgpu_fx_close(&f);
}

/* A refusal names what was wrong: "entry: STATUS: reason", the reason
 * being more than the status again.  Prints the text of one that does
 * not (and of every one, with VIDMM_TEST_VERBOSE set). */
static int reasoned(vidmm_status st, const char *call, int line)
{
    const char *t = vidmm_last_error();
    const char *s = strstr(t, "VIDMM_E_");
    const char *r = s ? strstr(s, ": ") : NULL;
    if (st < 0 && r && r[2] != '\0')
        return 1;
    printf("  line %d: %s returned %s; last error '%s' gives no reason\n", line, call, vidmm_status_str(st), t);
    return 0;
}
#define REFUSED(call) T_CHECK(reasoned((call), #call, __LINE__))

/* The audit of the README's promise: one refusal of every public entry
 * that takes an adapter (and the three a new user met first: a lock
 * without CPU_VISIBLE, a move to a segment that does not exist, short
 * private driver data).  Each must fail and say why. */
static void every_refusal_names_why(void)
{
    struct softgpu_fx f;
    T_CHECK(softgpu_fx_open(&f, 64 * MIB, 64 * MIB, 1) == 0);   /* 0: opened */
    if (!f.a)
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, 0, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 1);
    struct softgpu_alloc_desc d;
    softgpu_desc(&d, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0);
    vidmm_handle nv = 0, out = 0;
    T_ST(vidmm_allocation_create2(f.a, &d, sizeof d, 0, &nv), VIDMM_OK);
    void *cpu = NULL;
    const vidmm_handle bogus = 0x7777;

    REFUSED(vidmm_allocation_lock(f.a, nv, &cpu));
    T_CHECK(has("CPU_VISIBLE"));
    REFUSED(vidmm_allocation_move(f.a, h, 9));
    T_CHECK(has("segment 9"));
    REFUSED(vidmm_allocation_move_discard(f.a, h, 9));
    T_CHECK(has("segment 9"));
    REFUSED(vidmm_allocation_create(f.a, &d, 3, &out));
    T_CHECK(has("private"));
    REFUSED(vidmm_allocation_create(f.a, &d, sizeof d, NULL));
    REFUSED(vidmm_allocation_create2(f.a, NULL, 0, 0, &out));
    REFUSED(vidmm_allocation_query(f.a, h, NULL));
    REFUSED(vidmm_allocation_query(f.a, bogus, &(struct vidmm_allocation_state){ 0 }));
    REFUSED(vidmm_allocation_physical_ranges(f.a, bogus, NULL, 0, &(uint32_t){ 0 }));
    REFUSED(vidmm_allocation_lock(f.a, h, NULL));
    REFUSED(vidmm_allocation_unlock(f.a, h));
    REFUSED(vidmm_adapter_flip(f.a, 99, h));
    REFUSED(vidmm_device_create(f.a, bogus, &out));
    REFUSED(vidmm_device_destroy(f.a, bogus));
    REFUSED(vidmm_device_query(f.a, bogus, &(struct vidmm_device_info){ 0 }));
    REFUSED(vidmm_context_create(f.a, p.dev, NULL, &out));
    REFUSED(vidmm_context_create(f.a, p.dev, &(struct vidmm_context_desc){ 99, VIDMM_CONTEXT_VIRTUAL, 0, 0 }, &out));
    REFUSED(vidmm_context_destroy(f.a, bogus));
    REFUSED(vidmm_context_query(f.a, bogus, &(struct vidmm_context_info){ 0 }));
    REFUSED(vidmm_device_allocation_create(f.a, bogus, &d, sizeof d, 0, &out));
    REFUSED(vidmm_device_lock(f.a, bogus, h, &cpu));
    REFUSED(vidmm_device_unlock(f.a, p.dev, bogus));
    REFUSED(vidmm_process_create(f.a, NULL));
    REFUSED(vidmm_process_destroy(f.a, bogus));
    uint64_t va = 0;
    REFUSED(vidmm_gpuva_reserve(f.a, p.proc, 0, 0, 0, 0, 0, &va));
    REFUSED(vidmm_gpuva_map(f.a, p.proc, 0, 0, 0, bogus, 0, MIB, 0, 0, &va));
    REFUSED(vidmm_gpuva_unmap(f.a, p.proc, 0x10000001, MIB));
    REFUSED(vidmm_gpuva_free(f.a, p.proc, 0x10000000, MIB));
    REFUSED(vidmm_gpuva_update(f.a, p.proc, NULL, 1));
    REFUSED(vidmm_process_root_page_table(f.a, bogus, &(struct vidmm_physical_address){ 0 }));
    REFUSED(vidmm_process_query(f.a, p.proc, NULL));
    REFUSED(vidmm_gpuva_query(f.a, bogus, 0, NULL, 0, &(uint32_t){ 0 }));
    REFUSED(vidmm_adapter_query_gpummu(f.a, NULL));
    REFUSED(vidmm_adapter_query_paging_process(f.a, NULL));
    REFUSED(vidmm_paging_queue_create(f.a, bogus, VIDMM_PAGING_QUEUE_NORMAL, &out));
    REFUSED(vidmm_paging_queue_create(f.a, p.dev, 99, &out));
    REFUSED(vidmm_paging_queue_destroy(f.a, bogus));
    REFUSED(vidmm_paging_queue_fence(f.a, bogus, &va));
    REFUSED(vidmm_make_resident(f.a, p.dev, NULL));
    REFUSED(vidmm_allocation_set_priority(f.a, bogus, 0));
    REFUSED(vidmm_allocation_residency(f.a, h, NULL));
    REFUSED(vidmm_allocation_set_next_use(f.a, bogus, 1));
    REFUSED(vidmm_adapter_set_eviction_policy(f.a, &(struct vidmm_eviction_policy){ 0 }));
    REFUSED(vidmm_offer(f.a, p.dev, NULL, 1, 0));
    REFUSED(vidmm_reclaim(f.a, bogus, &h, 1, NULL, NULL));
    REFUSED(vidmm_query_video_memory_info(f.a, p.proc, (enum vidmm_segment_group)99,
                                          &(struct vidmm_video_memory_info){ 0 }));
    REFUSED(vidmm_change_video_memory_reservation(f.a, bogus, VIDMM_SEGMENT_GROUP_LOCAL, 0));
    REFUSED(vidmm_process_set_budget(f.a, p.proc, (enum vidmm_segment_group)99, 0));
    REFUSED(vidmm_register_trim_notification(f.a, bogus, NULL, NULL));
    REFUSED(vidmm_residency_get_stats(f.a, NULL));
    REFUSED(vidmm_submit_virtual(f.a, bogus, 0, 64, &va));
    REFUSED(vidmm_submit_physical(f.a, p.ctx, NULL));
    REFUSED(vidmm_context_fence(f.a, bogus, &va, &va));
    REFUSED(vidmm_context_wait(f.a, bogus, 1, 0));
    REFUSED(vidmm_submit_get_stats(f.a, NULL));
    REFUSED(vidmm_share_export(f.a, p.proc, bogus, &(struct vidmm_share_token){ { 0, 0 } }));
    REFUSED(vidmm_share_open(f.a, p.proc, NULL, &out));
    REFUSED(vidmm_share_query(f.a, bogus, &(struct vidmm_share_info){ 0 }));
    REFUSED(vidmm_adapter_query_info(f.a, NULL));
    REFUSED(vidmm_segment_query(f.a, 9, &(struct vidmm_segment_info){ 0 }));
    REFUSED(vidmm_adapter_get_tdr_stats(f.a, NULL));
    REFUSED(vidmm_adapter_set_power_state(f.a, 99));
    REFUSED(vidmm_adapter_get_power_state(f.a, NULL));
    REFUSED(vidmm_adapter_get_power_stats(f.a, NULL));
    REFUSED(vidmm_allocation_set_name(f.a, bogus, "x"));
    REFUSED(vidmm_allocation_get_name(f.a, bogus, NULL, 0, NULL));
    REFUSED(vidmm_allocation_set_user_data(f.a, bogus, NULL));
    REFUSED(vidmm_allocation_get_user_data(f.a, h, NULL));
    REFUSED(vidmm_allocation_iterate(f.a, NULL, NULL, NULL));
    REFUSED(vidmm_adapter_stats_json(f.a, NULL, 1, NULL));
    REFUSED(vidmm_process_fdinfo(f.a, bogus, NULL, 0, NULL));
    REFUSED(vidmm_segment_region_name(f.a, 9, (char[16]){ 0 }, 16));
    /* Nothing of it changed the adapter. */
    T_CHECK(softgpu_checked(f.a, f.sg) == 0);
    T_ST(vidmm_allocation_destroy(f.a, nv), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    vidmm_process_destroy(f.a, p.proc);
    softgpu_fx_close(&f);
}

static void open_says_why(void)
{
    struct vidmm_adapter *a = NULL;
    T_ST(vidmm_adapter_open(NULL, &a), VIDMM_E_INVALID_ARG);
    T_CHECK(has("vidmm_adapter_open: VIDMM_E_INVALID_ARG: info is NULL"));
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    T_CHECK(has("abi_version 0"));
}

struct other {
    struct vidmm_adapter *a;
    char seen[512];
};

static void *other_thread(void *arg)
{
    struct other *o = arg;
    /* Its own failure, its own text. */
    (void)vidmm_allocation_destroy(o->a, 0x5678);
    snprintf(o->seen, sizeof o->seen, "%s", vidmm_last_error());
    return NULL;
}

static void per_thread(void)
{
    struct softgpu_fx f;
    T_CHECK(softgpu_fx_open(&f, 64 * MIB, 64 * MIB, 1) == 0);   /* 0: opened */
    if (!f.a)
        return;
    T_ST(vidmm_allocation_destroy(f.a, 0x1234), VIDMM_E_INVALID_HANDLE);
    struct other o = { f.a, "" };
    pthread_t t;
    T_CHECK(pthread_create(&t, NULL, other_thread, &o) == 0);
    pthread_join(t, NULL);
    T_CHECK(strstr(o.seen, "0x5678") != NULL);
    T_CHECK(has("0x1234"));   /* this thread's reason is untouched */
    softgpu_fx_close(&f);
}

void suite_last_error(void);
void suite_last_error(void)
{
    t_run("last_error.names_entry_and_rule", names_entry_and_rule);
    t_run("last_error.every_refusal_names_why", every_refusal_names_why);
    t_run("last_error.open_says_why", open_says_why);
    t_run("last_error.per_thread", per_thread);
}
