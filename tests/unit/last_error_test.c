/*
 * last_error_test.c - every failing call leaves a readable reason
 * (vidmm_last_error, vidmm/status.h): the entry, the status, and the
 * argument or handle and rule where a check knows them; a call that
 * succeeds leaves it empty; each thread has its own.  The API fuzzer
 * checks the first rule after every call of its corpora.
 */
#include "harness/test.h"
#include "sg_fixture.h"

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
    struct sg_fx f;
    if (!sg_fx_open(&f, 64 * MIB, 64 * MIB, 1))
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

    struct sg_proc p;
    sg_new_proc(f.a, &p, 0, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h = sg_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 1);
    /* Evict what the device never listed: names the allocation, the
     * device and the rule; nothing changed. */
    struct vidmm_evict_args ev = { .allocations = &h, .count = 1 };
    T_ST(vidmm_evict(f.a, p.dev, &ev), VIDMM_E_STATE);
    T_CHECK(has("vidmm_evict: VIDMM_E_STATE"));
    T_CHECK(has("residency list"));
    T_ST(vidmm_evict(f.a, p.dev, NULL), VIDMM_E_INVALID_ARG);
    T_CHECK(has("args is NULL"));
    /* A paging queue of another device. */
    struct sg_proc q;
    sg_new_proc(f.a, &q, 0, VIDMM_CONTEXT_VIRTUAL);
    struct vidmm_make_resident_args mr = { .paging_queue = q.queue, .allocations = &h, .count = 1 };
    T_ST(vidmm_make_resident(f.a, p.dev, &mr), VIDMM_E_INVALID_HANDLE);
    T_CHECK(has("not a paging queue of device"));
    /* The driver's description refused at creation: the rule. */
    struct softgpu_alloc_desc d;
    sg_desc(&d, SOFTGPU_ALLOC_TEXTURE, 0x80u, MIB, 0);
    vidmm_handle bad = 0;
    T_CHECK(vidmm_allocation_create(f.a, &d, sizeof d, &bad) < 0);
    T_CHECK(has("vidmm_allocation_create"));
    /* Waits outside the entry mechanism keep it too. */
    T_ST(vidmm_paging_queue_wait(f.a, 0xdead, 1, 0), VIDMM_E_INVALID_HANDLE);
    T_CHECK(has("vidmm_paging_queue_wait: VIDMM_E_INVALID_HANDLE"));
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    T_CHECK(vidmm_last_error()[0] == '\0');
    vidmm_process_destroy(f.a, q.proc);
    vidmm_process_destroy(f.a, p.proc);
    sg_fx_close(&f);
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
    struct sg_fx f;
    if (!sg_fx_open(&f, 64 * MIB, 64 * MIB, 1))
        return;
    T_ST(vidmm_allocation_destroy(f.a, 0x1234), VIDMM_E_INVALID_HANDLE);
    struct other o = { f.a, "" };
    pthread_t t;
    T_CHECK(pthread_create(&t, NULL, other_thread, &o) == 0);
    pthread_join(t, NULL);
    T_CHECK(strstr(o.seen, "0x5678") != NULL);
    T_CHECK(has("0x1234"));   /* this thread's reason is untouched */
    sg_fx_close(&f);
}

void suite_last_error(void);
void suite_last_error(void)
{
    t_run("last_error.names_entry_and_rule", names_entry_and_rule);
    t_run("last_error.open_says_why", open_says_why);
    t_run("last_error.per_thread", per_thread);
}
