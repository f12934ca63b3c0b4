/*
 * share.c - shared allocations: tokens, holders, and the last holder's
 * release (vidmm/share.h, docs/SHARING.md).
 *
 * Why here: a holder letting go touches the VA space of its process
 * (process/), its devices' residency references (residency/) and, for
 * the last holder, the allocation's destruction (this module), so it
 * lives in the allocation-lifetime layer.  The lookups every entry makes
 * (an opener's handle to the allocation) are in handle/handle.c, below
 * every module that names allocations.
 *
 * A shared allocation has one struct vidmm_share (its token and its
 * holders) and one struct vidmm_share_holder per holding process: the
 * creator's, named by the allocation's own handle and kept first in the
 * list, and one per opener, named by a handle of the adapter's
 * share-holder table.  The adapter's table of tokens is a hash table
 * by token (open addressing, below): an open costs O(1) expected.
 */
#include "handle/lookup.h"
#include "model/objects.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "allocation/allocation.h"
#include "fence/inflight.h"
#include "process/process.h"
#include "residency/residency.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* splitmix64's finaliser: the fallback's mixer. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static int token_equal(const uint64_t t[2], const struct vidmm_share_token *k)
{
    return t[0] == k->value[0] && t[1] == k->value[1];
}

/* ---- the token table: open addressing on token[0] (random bits),
 * linear probing, at most half full, deletion by backward shift (no
 * tombstones), so a lookup is O(1) expected whatever the number of
 * shares. */

static struct vidmm_share *share_find(const struct vidmm_adapter *a, const struct vidmm_share_token *k)
{
    if (!a->sharing.share_index_cap)
        return NULL;
    uint32_t mask = a->sharing.share_index_cap - 1;
    for (uint32_t i = (uint32_t)k->value[0] & mask;; i = (i + 1) & mask) {
        struct vidmm_share *s = a->sharing.share_index[i];
        if (!s || token_equal(s->token, k))
            return s;
    }
}

/* Room for one more share: the table doubled (rehashed) when it would be
 * more than half full.  VIDMM_E_NO_HOST_MEMORY leaves it as it was. */
static vidmm_status index_reserve(struct vidmm_adapter *a)
{
    if ((uint64_t)(a->sharing.share_count + 1) * 2 <= a->sharing.share_index_cap)
        return VIDMM_OK;
    uint32_t cap = a->sharing.share_index_cap ? a->sharing.share_index_cap * 2 : 16;
    if (!cap)
        return VIDMM_E_NO_HOST_MEMORY;   /* 2^31 shares */
    struct vidmm_share **t = vidmm_hzalloc(a->ha, VIDMM_SITE_SHARE_INDEX, (size_t)cap * sizeof(*t),
                                           _Alignof(struct vidmm_share *));
    if (!t)
        return VIDMM_E_NO_HOST_MEMORY;
    for (uint32_t i = 0; i < a->sharing.share_index_cap; i++) {
        struct vidmm_share *s = a->sharing.share_index[i];
        if (!s)
            continue;
        uint32_t j = (uint32_t)s->token[0] & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = s;
    }
    if (a->sharing.share_index)
        vidmm_hfree(a->ha, a->sharing.share_index, (size_t)a->sharing.share_index_cap * sizeof(*t), _Alignof(struct vidmm_share *));
    a->sharing.share_index = t;
    a->sharing.share_index_cap = cap;
    return VIDMM_OK;
}

static void index_insert(struct vidmm_adapter *a, struct vidmm_share *s)
{
    uint32_t mask = a->sharing.share_index_cap - 1;
    uint32_t i = (uint32_t)s->token[0] & mask;
    while (a->sharing.share_index[i])
        i = (i + 1) & mask;
    a->sharing.share_index[i] = s;
}

static void index_remove(struct vidmm_adapter *a, const struct vidmm_share *s)
{
    uint32_t mask = a->sharing.share_index_cap - 1;
    uint32_t i = (uint32_t)s->token[0] & mask;
    while (a->sharing.share_index[i] != s) {
        if (VIDMM_BUG_ON_MSG(a, !a->sharing.share_index[i], "token table: the share being removed is not in its run"))
            return;
        i = (i + 1) & mask;
    }
    /* Backward shift: every later entry of the run that may move into
     * the hole does, so no lookup ever stops early at it. */
    for (uint32_t j = (i + 1) & mask; a->sharing.share_index[j]; j = (j + 1) & mask) {
        uint32_t home = (uint32_t)a->sharing.share_index[j]->token[0] & mask;
        /* j's entry may fill i when its home is not in (i, j] cyclically. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            a->sharing.share_index[i] = a->sharing.share_index[j];
            i = j;
        }
    }
    a->sharing.share_index[i] = NULL;
}

void vidmm_share_fini(struct vidmm_adapter *a)
{
    if (a->sharing.share_index)
        vidmm_hfree(a->ha, a->sharing.share_index, (size_t)a->sharing.share_index_cap * sizeof(*a->sharing.share_index),
                    _Alignof(struct vidmm_share *));
    a->sharing.share_index = NULL;
    a->sharing.share_index_cap = 0;
}

/* 128 bits from the system's entropy source (getentropy): never 0, 0,
 * and unique without a check (a collision among 2^64 shares has
 * probability about 2^-1).  Without a source, the clock, a counter and
 * addresses mixed - unique only because they are checked against every
 * live share (one token-table lookup), and guessable by whoever sees the clock
 * (docs/DECISIONS.md D56). */
static void make_token(struct vidmm_adapter *a, const struct vidmm_share *s, uint64_t out[2])
{
    for (;;) {
        uint64_t t[2];
        int random = getentropy(t, sizeof(t)) == 0;
        if (!random) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            t[0] = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)s);
            t[1] = mix64(t[0] ^ a->sharing.share_tokens ^ ((uint64_t)(uintptr_t)a << 1));
        }
        a->sharing.share_tokens++;
        struct vidmm_share_token k = { { t[0], t[1] } };
        if ((t[0] | t[1]) && (random || !share_find(a, &k))) {
            out[0] = t[0];
            out[1] = t[1];
            return;
        }
    }
}

/* The holding process's list of its holds (teardown walks it). */
static void hold_link(struct vidmm_process *p, struct vidmm_share_holder *sh)
{
    sh->proc_prev = NULL;
    sh->proc_next = p->sharing.share_holds;
    if (p->sharing.share_holds)
        p->sharing.share_holds->proc_prev = sh;
    p->sharing.share_holds = sh;
    p->sharing.share_hold_count++;
}

static void hold_unlink(struct vidmm_process *p, struct vidmm_share_holder *sh)
{
    if (sh->proc_prev)
        sh->proc_prev->proc_next = sh->proc_next;
    else
        p->sharing.share_holds = sh->proc_next;
    if (sh->proc_next)
        sh->proc_next->proc_prev = sh->proc_prev;
    sh->proc_prev = sh->proc_next = NULL;
    p->sharing.share_hold_count--;
}

vidmm_status vidmm_share_attach(struct vidmm_adapter *a, struct vidmm_allocation *al, vidmm_handle process)
{
    struct vidmm_share *s = vidmm_hzalloc(a->ha, VIDMM_SITE_SHARE_OBJECT, sizeof(*s), _Alignof(struct vidmm_share));
    if (!s)
        return VIDMM_E_NO_HOST_MEMORY;
    struct vidmm_share_holder *sh = vidmm_hzalloc(a->ha, VIDMM_SITE_SHARE_HOLDER, sizeof(*sh),
                                                  _Alignof(struct vidmm_share_holder));
    /* The token table grows last: any refusal leaves everything as it was. */
    if (!sh || index_reserve(a) < 0) {
        if (sh)
            vidmm_hfree(a->ha, sh, sizeof(*sh), _Alignof(struct vidmm_share_holder));
        vidmm_hfree(a->ha, s, sizeof(*s), _Alignof(struct vidmm_share));
        return VIDMM_E_NO_HOST_MEMORY;
    }
    s->al = al;
    make_token(a, s, s->token);
    sh->share = s;
    sh->process = process;
    sh->self = al->self;
    sh->creator = 1;
    s->holders = sh;
    s->holder_count = 1;
    s->next = a->sharing.shares;
    if (a->sharing.shares)
        a->sharing.shares->prev = s;
    a->sharing.shares = s;
    a->sharing.share_count++;
    index_insert(a, s);
    hold_link(vidmm_process_get(a, process), sh);
    al->share = s;
    al->shared = 1;
    return VIDMM_OK;
}

static void holder_free(struct vidmm_adapter *a, struct vidmm_share_holder *sh)
{
    struct vidmm_process *p = vidmm_process_get(a, sh->process);
    if (p)
        hold_unlink(p, sh);
    if (!sh->creator)
        vidmm_objtab_remove(&a->share_holders, sh->self);
    vidmm_hfree(a->ha, sh, sizeof(*sh), _Alignof(struct vidmm_share_holder));
}

/* The holder lets go.  Refused (VIDMM_E_BUSY, nothing changed) while it
 * holds CPU locks, unless its process is dying (its locks go with it). */
static vidmm_status let_go(struct vidmm_adapter *a, struct vidmm_share_holder *sh, int dying)
{
    struct vidmm_share *s = sh->share;
    struct vidmm_allocation *al = s->al;
    if (sh->locks && !dying)
        return vidmm_fail(VIDMM_E_BUSY, "shared allocation 0x%llx: still locked through this handle",
                          (unsigned long long)sh->self);
    if (sh->locks) {
        vidmm_allocation_drop_locks(a, al, sh->locks);
        sh->locks = 0;
    }
    struct vidmm_share_holder **pp = &s->holders;
    while (*pp != sh)
        pp = &(*pp)->next;
    if (s->holder_count == 1) {
        /* The last holder: the allocation goes (deferred while GPU work
         * uses it), its token with it. */
        *pp = NULL;
        if (s->prev)
            s->prev->next = s->next;
        else
            a->sharing.shares = s->next;
        if (s->next)
            s->next->prev = s->prev;
        a->sharing.share_count--;
        index_remove(a, s);
        al->share = NULL;
        al->shared = 0;
        /* Still private to its creator (and on its list) if the creator
         * was the last holder; adapter-wide (private_process 0, on no
         * list) if an opener was: no process's list is made up here. */
        holder_free(a, sh);
        vidmm_hfree(a->ha, s, sizeof(*s), _Alignof(struct vidmm_share));
        vidmm_allocation_destroy_unlocked(a, al);
        return VIDMM_OK;
    }
    /* Others still hold it: only this process's view goes - its GPU VA
     * mappings, its devices' residency references, its ownership.  GPU
     * work in flight may still read through those mappings: it finishes
     * first (a dying process's contexts were waited for already, and
     * its teardown must not stop: it does not wait again). */
    struct vidmm_process *p = vidmm_process_get(a, sh->process);
    if (!dying && p && al->busy && vidmm_va_object_mapping_count(&p->vs, al->self)) {
        vidmm_inflight_wait_idle(a, al);
        if (al->busy)
            return VIDMM_E_TIMEOUT;   /* an engine hung: nothing changed, reset as the entry returns */
    }
    if (p) {
        vidmm_process_unmap_allocation_in(a, p, al);
        vidmm_residency_process_lets_go(a, al, p);
    }
    if (sh->creator)
        vidmm_allocation_unlist_private(a, al);   /* the openers' now: named through their handles only */
    *pp = sh->next;
    s->holder_count--;
    holder_free(a, sh);
    return VIDMM_OK;
}

vidmm_status vidmm_share_close(struct vidmm_adapter *a, struct vidmm_share_holder *sh)
{
    return let_go(a, sh, 0);
}

void vidmm_share_process_gone(struct vidmm_adapter *a, struct vidmm_process *p)
{
    /* Its own holds only (one per share it holds): let_go unlinks the
     * first each time. */
    while (p->sharing.share_holds)
        (void)let_go(a, p->sharing.share_holds, 1);
}

static vidmm_status share_export(struct vidmm_adapter *a, vidmm_handle process, vidmm_handle h,
                                 struct vidmm_share_token *token)
{
    if (!a || !token)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "token is NULL");
    struct vidmm_process *p;
    struct vidmm_allocation *al = NULL;
    vidmm_status st = vidmm_process_lookup(a, process, &p);
    if (st >= 0)
        st = vidmm_allocation_lookup_for(a, h, process, &al);
    if (st < 0)
        return st;
    if (!al->share)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "allocation 0x%llx was not created with VIDMM_CREATE_SHARED",
                          (unsigned long long)h);
    al->share->exported++;
    token->value[0] = al->share->token[0];
    token->value[1] = al->share->token[1];
    return VIDMM_OK;
}

static vidmm_status share_open(struct vidmm_adapter *a, vidmm_handle process, const struct vidmm_share_token *token,
                               vidmm_handle *out)
{
    if (!a || !token || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !token ? "token is NULL" : "out is NULL");
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, process, &p);
    if (st < 0)
        return st;
    struct vidmm_share *s = (token->value[0] | token->value[1]) ? share_find(a, token) : NULL;
    if (!s)
        return vidmm_fail(VIDMM_E_INVALID_HANDLE, "share token: names no live shared allocation of this adapter");
    struct vidmm_share_holder **tail = &s->holders;
    for (; *tail; tail = &(*tail)->next)
        if ((*tail)->process == process)
            return vidmm_fail(VIDMM_E_STATE, "process 0x%llx holds this shared allocation already (handle 0x%llx)",
                              (unsigned long long)process, (unsigned long long)(*tail)->self);
    struct vidmm_share_holder *sh = vidmm_hzalloc(a->ha, VIDMM_SITE_SHARE_HOLDER, sizeof(*sh),
                                                  _Alignof(struct vidmm_share_holder));
    if (!sh)
        return VIDMM_E_NO_HOST_MEMORY;
    uint64_t h;
    st = vidmm_objtab_add(&a->share_holders, a->ha, sh, &h);
    if (st < 0) {
        vidmm_hfree(a->ha, sh, sizeof(*sh), _Alignof(struct vidmm_share_holder));
        return st == VIDMM_E_BUSY ? VIDMM_E_NO_HOST_MEMORY : st;   /* 16 M open handles per adapter */
    }
    sh->share = s;
    sh->process = process;
    sh->self = h;
    hold_link(vidmm_process_get(a, process), sh);
    *tail = sh;   /* after the creator's, which stays first */
    s->holder_count++;
    *out = h;
    return VIDMM_OK;
}

static vidmm_status share_query(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_share_info *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "out is NULL");
    const struct vidmm_share_holder *sh = vidmm_share_holder_of(a, h);
    if (!sh)
        return vidmm_fail(VIDMM_E_INVALID_HANDLE, "allocation handle 0x%llx: not a holder's handle of a shared allocation",
                          (unsigned long long)h);
    memset(out, 0, sizeof(*out));
    out->holders = sh->share->holder_count;
    out->creator_holds = sh->share->holders->creator;
    out->locks = sh->locks;
    out->is_creator = sh->creator;
    out->process = sh->process;
    out->exports = sh->share->exported;
    return VIDMM_OK;
}

/* ---- the structure checker's part (vidmm_adapter_check) ---------------- */

/* The checker's tally: violations counted, the last one in words. */
struct share_tally {
    int e;
    char *msg;
    size_t n;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void share_bad(struct share_tally *t, const char *fmt, ...)
{
    va_list ap;
    t->e++;
    va_start(ap, fmt);
    vsnprintf(t->msg, t->n, fmt, ap);
    va_end(ap);
}

/* The holders of share s (of allocation al): each of s, of a live
 * process, the creator's first, openers in the holder table, one hold
 * per process; their count and locks. */
static void check_holders(const struct vidmm_adapter *a, const struct vidmm_share *s, const struct vidmm_allocation *al,
                          uint32_t *openers, struct share_tally *t)
{
    uint32_t holders = 0;
    uint64_t locks = 0;
    for (const struct vidmm_share_holder *sh = s->holders; sh && holders <= s->holder_count; sh = sh->next) {
        holders++;
        locks += sh->locks;
        if (sh->share != s || !vidmm_process_get(a, sh->process))
            share_bad(t, "allocation 0x%llx: a holder of another share, or of a dead process",
                      (unsigned long long)al->self);
        if (sh->creator && (sh != s->holders || sh->self != al->self || al->private_process != sh->process))
            share_bad(t, "allocation 0x%llx: the creator's hold is not first, not its handle or not its process",
                      (unsigned long long)al->self);
        if (!sh->creator) {
            ++*openers;
            if (vidmm_objtab_get(&a->share_holders, sh->self) != sh)
                share_bad(t, "allocation 0x%llx: opener handle 0x%llx not in the holder table",
                          (unsigned long long)al->self, (unsigned long long)sh->self);
        }
        for (const struct vidmm_share_holder *o = sh->next; o; o = o->next)
            if (o->process == sh->process)
                share_bad(t, "allocation 0x%llx: two holds of one process", (unsigned long long)al->self);
    }
    if (holders != s->holder_count || !holders)
        share_bad(t, "allocation 0x%llx: %u holders listed, count says %u", (unsigned long long)al->self, holders,
                  s->holder_count);
    if (!s->holders->creator && al->private_process)
        share_bad(t, "allocation 0x%llx: the creator let go but it is still private to a process",
                  (unsigned long long)al->self);
    if (locks != al->lock_count)
        share_bad(t, "allocation 0x%llx: locked %u times, its holders' locks sum to %llu", (unsigned long long)al->self,
                  al->lock_count, (unsigned long long)locks);
}

/* Does process hold share s? */
static int holds(const struct vidmm_share *s, vidmm_handle process)
{
    const struct vidmm_share_holder *sh = s->holders;
    while (sh && sh->process != process)
        sh = sh->next;
    return sh != NULL;
}

/* Only holders' processes map al (its list of mapping processes), own
 * it for budgets, or list it on a device. */
static void check_share_users(const struct vidmm_share *s, const struct vidmm_allocation *al, struct share_tally *t)
{
    for (const struct vidmm_va_user *u = vidmm_process_users_of(al); u; u = u->next)
        if (!holds(s, u->process->self))
            share_bad(t, "allocation 0x%llx: mapped by a process that does not hold it", (unsigned long long)al->self);
    if (vidmm_residency_owner(al) && !holds(s, vidmm_residency_owner(al)))
        share_bad(t, "allocation 0x%llx: owned by a process that does not hold it", (unsigned long long)al->self);
    for (const struct vidmm_residency_ref *r = vidmm_residency_refs_of(al); r; r = r->al_next)
        if (!holds(s, r->dev->process->self))
            share_bad(t, "allocation 0x%llx: on the residency list of a device of a process that does not hold it",
                      (unsigned long long)al->self);
}

/* Each share: a live allocation that points back, list links, a unique
 * non-zero token, its holders and users.  The shares counted. */
static uint32_t check_shares(const struct vidmm_adapter *a, uint32_t *openers, struct share_tally *t)
{
    uint32_t shares = 0;
    for (const struct vidmm_share *s = a->sharing.shares; s && shares <= a->sharing.share_count; s = s->next) {
        shares++;
        const struct vidmm_allocation *al = s->al;
        if (!al || !al->live || al->zombie || al->share != s || !al->shared || vidmm_handle_get_any(a, al->self) != al) {
            share_bad(t, "share %u: its allocation is not live, deferred, or does not point back", shares);
            continue;
        }
        if (s->next && s->next->prev != s)
            share_bad(t, "share of allocation 0x%llx: list links disagree", (unsigned long long)al->self);
        if (!(s->token[0] | s->token[1]))
            share_bad(t, "share of allocation 0x%llx: zero token", (unsigned long long)al->self);
        /* Pairwise, so only on adapters of up to 1,024 shares: the
         * walker stays O(n) on large ones (docs/ARCHITECTURE.md "Cost"). */
        for (const struct vidmm_share *o = s->next; o && a->sharing.share_count <= 1024; o = o->next)
            if (o->token[0] == s->token[0] && o->token[1] == s->token[1])
                share_bad(t, "two shares have one token");
        check_holders(a, s, al, openers, t);
        check_share_users(s, al, t);
    }
    return shares;
}

/* The token table: each share found by its token, no other entry. */
static void check_token_table(const struct vidmm_adapter *a, struct share_tally *t)
{
    uint32_t indexed = 0;
    for (uint32_t i = 0; i < a->sharing.share_index_cap; i++)
        indexed += a->sharing.share_index[i] != NULL;
    if (indexed != a->sharing.share_count || (uint64_t)a->sharing.share_count * 2 > a->sharing.share_index_cap)
        share_bad(t, "token table: %u entries in %u slots, %u shares", indexed, a->sharing.share_index_cap, a->sharing.share_count);
    for (const struct vidmm_share *s = a->sharing.shares; s; s = s->next) {
        struct vidmm_share_token k = { { s->token[0], s->token[1] } };
        if (share_find(a, &k) != s) {
            share_bad(t, "token table: the share of allocation 0x%llx is not found by its token",
                      (unsigned long long)(s->al ? s->al->self : 0));
            break;
        }
    }
}

/* Each process's list of its holds: its own, linked both ways, as many
 * as counted; together, every hold. */
static void check_process_holds(const struct vidmm_adapter *a, struct share_tally *t)
{
    uint64_t listed = 0, held = 0;   /* held: the holders the shares list (their counts are checked above) */
    for (const struct vidmm_share *sp = a->sharing.shares; sp && held <= a->share_holders.live + a->sharing.share_count; sp = sp->next)
        for (const struct vidmm_share_holder *sh = sp->holders; sh && held <= a->share_holders.live + a->sharing.share_count;
             sh = sh->next)
            held++;
    const struct vidmm_process *p;
    vidmm_for_each_process(a, p) {
        uint32_t k = 0;
        for (const struct vidmm_share_holder *sh = p->sharing.share_holds; sh && k <= p->sharing.share_hold_count;
             sh = sh->proc_next) {
            k++;
            if (sh->process != p->self || (sh->proc_next && sh->proc_next->proc_prev != sh) ||
                (sh == p->sharing.share_holds && sh->proc_prev))
                share_bad(t, "process 0x%llx: list of share holds broken", (unsigned long long)p->self);
        }
        if (k != p->sharing.share_hold_count)
            share_bad(t, "process 0x%llx: %u share holds listed, count says %u", (unsigned long long)p->self, k,
                      p->sharing.share_hold_count);
        listed += k;
    }
    if (listed != held)
        share_bad(t, "%llu holds on the processes' lists, the shares have %llu", (unsigned long long)listed,
                  (unsigned long long)held);
}

/* In phases: the shares with their holders and users, the token table,
 * the processes' lists of holds, then the counts. */
int vidmm_share_check(const struct vidmm_adapter *a, char *msg, size_t n)
{
    struct share_tally t = { 0, msg, n };
    uint32_t openers = 0;
    uint32_t shares = check_shares(a, &openers, &t);
    check_token_table(a, &t);
    check_process_holds(a, &t);
    if (shares != a->sharing.share_count)
        share_bad(&t, "%u shares listed, count says %u", shares, a->sharing.share_count);
    if (openers != a->share_holders.live)
        share_bad(&t, "%u opener holds listed, the holder table has %u handles", openers, a->share_holders.live);
    if (vidmm_objtab_check(&a->share_holders))
        share_bad(&t, "share holder handle table inconsistent");
    return t.e;
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_share_export(struct vidmm_adapter *a, vidmm_handle process, vidmm_handle h,
                                struct vidmm_share_token *token)
{
    VIDMM_ENTRY(a, share_export(a, process, h, token));
}

vidmm_status vidmm_share_open(struct vidmm_adapter *a, vidmm_handle process, const struct vidmm_share_token *token,
                              vidmm_handle *out)
{
    VIDMM_ENTRY(a, share_open(a, process, token, out));
}

vidmm_status vidmm_share_query(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_share_info *out)
{
    VIDMM_ENTRY(a, share_query(a, h, out));
}
