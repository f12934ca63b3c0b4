/*
 * observe_test.c - vidmm/observe.h: allocation names and user data, the
 * walk over the live allocations with its filters, the GpuMemDump
 * statistics JSON (its structure, checked here without python; the
 * schema itself is checked by tests/stats_schema_test.sh), the DRM
 * fdinfo text, and the debug callback (leaks at close, rule violations).
 */
#include "harness/test.h"
#include "unit/softgpu_fixture.h"
#include "model/objects.h"
#include "handle/lookup.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)

/* ---- a small JSON checker: syntax, and the top level's keys ------------ */

struct js {
    const char *p;
    int depth;
    char top[8][32];
    int ntop;
};

static int js_value(struct js *j);

static void js_ws(struct js *j)
{
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r')
        j->p++;
}

/* A string; its first 31 bytes into out (may be NULL). */
static int js_string(struct js *j, char *out)
{
    if (*j->p != '"')
        return 0;
    j->p++;
    size_t n = 0;
    while (*j->p && *j->p != '"') {
        if ((unsigned char)*j->p < 0x20)
            return 0;
        if (*j->p == '\\') {
            j->p++;
            if (!strchr("\"\\/bfnrtu", *j->p))
                return 0;
        }
        if (out && n < 31)
            out[n++] = *j->p;
        j->p++;
    }
    if (out)
        out[n] = '\0';
    if (*j->p != '"')
        return 0;
    j->p++;
    return 1;
}

static int js_value(struct js *j)
{
    js_ws(j);
    if (*j->p == '{' || *j->p == '[') {
        char close = *j->p == '{' ? '}' : ']';
        int obj = *j->p == '{';
        j->p++;
        j->depth++;
        js_ws(j);
        if (*j->p == close) {
            j->p++;
            j->depth--;
            return 1;
        }
        for (;;) {
            js_ws(j);
            if (obj) {
                char key[32];
                if (!js_string(j, key))
                    return 0;
                if (j->depth == 1 && j->ntop < 8)
                    snprintf(j->top[j->ntop++], sizeof j->top[0], "%s", key);
                js_ws(j);
                if (*j->p++ != ':')
                    return 0;
            }
            if (!js_value(j))
                return 0;
            js_ws(j);
            if (*j->p == ',') {
                j->p++;
                continue;
            }
            if (*j->p != close)
                return 0;
            j->p++;
            j->depth--;
            return 1;
        }
    }
    if (*j->p == '"')
        return js_string(j, NULL);
    if (*j->p == '-' || isdigit((unsigned char)*j->p)) {
        j->p++;
        while (isdigit((unsigned char)*j->p))
            j->p++;
        return 1;
    }
    for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1)
        if (!strncmp(j->p, lit, strlen(lit))) {
            j->p += strlen(lit);
            return 1;
        }
    return 0;
}

/* Valid JSON whose top level is exactly the GpuMemDump keys. */
static int json_ok(const char *s)
{
    struct js j = { s, 0, { { 0 } }, 0 };
    if (!js_value(&j))
        return 0;
    js_ws(&j);
    if (*j.p)
        return 0;
    static const char *const want[] = { "General", "Total", "MemoryInfo", "DefaultPools", "CustomPools" };
    if (j.ntop != 5)
        return 0;
    for (int i = 0; i < 5; i++)
        if (strcmp(j.top[i], want[i]))
            return 0;
    return 1;
}

/* The statistics with the two-call pattern (malloc'd; NULL on failure). */
static char *stats(struct vidmm_adapter *a)
{
    size_t n = 0;
    T_ST(vidmm_adapter_stats_json(a, NULL, 0, &n), VIDMM_OK);
    char *s = malloc(n);
    if (!s)
        return NULL;
    size_t n2 = 0;
    T_ST(vidmm_adapter_stats_json(a, s, n, &n2), VIDMM_OK);
    T_EQ(n2, n);
    T_EQ(strlen(s) + 1, n);
    return s;
}

static char *fdinfo(struct vidmm_adapter *a, vidmm_handle p)
{
    size_t n = 0;
    T_ST(vidmm_process_fdinfo(a, p, NULL, 0, &n), VIDMM_OK);
    char *s = malloc(n);
    if (s)
        T_ST(vidmm_process_fdinfo(a, p, s, n, &n), VIDMM_OK);
    return s;
}

/* The value of "key:\t<n> KiB" in fdinfo text, in KiB; -1 if absent. */
static long long fd_value(const char *s, const char *key)
{
    size_t k = strlen(key);
    for (const char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, key, k) && l[k] == ':')
            return strtoll(l + k + 1, NULL, 10);
    return -1;
}

/* ---- names and user data ------------------------------------------------ */

static void names(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    vidmm_handle h = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 1);
    char buf[300];
    size_t n = 99;
    T_ST(vidmm_allocation_get_name(f.a, h, buf, sizeof buf, &n), VIDMM_OK);
    T_EQ(n, 1);
    T_CHECK(buf[0] == '\0');
    T_ST(vidmm_allocation_set_name(f.a, h, "shadow map"), VIDMM_OK);
    T_ST(vidmm_allocation_get_name(f.a, h, NULL, 0, &n), VIDMM_OK);
    T_EQ(n, 11);
    T_ST(vidmm_allocation_get_name(f.a, h, buf, sizeof buf, NULL), VIDMM_OK);
    T_CHECK(!strcmp(buf, "shadow map"));
    /* Too small: the prefix, NUL-terminated, and the size needed. */
    char tiny[4];
    T_ST(vidmm_allocation_get_name(f.a, h, tiny, sizeof tiny, &n), VIDMM_E_BUFFER_TOO_SMALL);
    T_CHECK(!strcmp(tiny, "sha"));
    T_EQ(n, 11);
    /* Bad input changes nothing. */
    char longname[VIDMM_ALLOCATION_NAME_MAX + 2];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    static const char *const bad[] = { "tab\there", "line\n", "\x7f", "\xc3", "\xc0\xaf", "\xed\xa0\x80",
                                       "\xf4\x90\x80\x80", "\xc2\x85", "\xff" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        T_ST(vidmm_allocation_set_name(f.a, h, bad[i]), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_set_name(f.a, h, longname), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_get_name(f.a, h, NULL, 0, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_get_name(f.a, h, buf, 0, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_set_name(NULL, h, "x"), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_set_name(f.a, h + 1, "x"), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_get_name(f.a, h, buf, sizeof buf, NULL), VIDMM_OK);
    T_CHECK(!strcmp(buf, "shadow map"));
    /* The longest name, and UTF-8. */
    longname[VIDMM_ALLOCATION_NAME_MAX] = '\0';
    T_ST(vidmm_allocation_set_name(f.a, h, longname), VIDMM_OK);
    T_ST(vidmm_allocation_get_name(f.a, h, buf, sizeof buf, &n), VIDMM_OK);
    T_EQ(n, VIDMM_ALLOCATION_NAME_MAX + 1);
    T_ST(vidmm_allocation_set_name(f.a, h, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xae"), VIDMM_OK);
    /* The host allocator refuses: the old name stays. */
    fault_alloc_arm(&f.fa, 1, 0);
    T_ST(vidmm_allocation_set_name(f.a, h, "other"), VIDMM_E_NO_HOST_MEMORY);
    fault_alloc_disarm(&f.fa);
    T_ST(vidmm_allocation_get_name(f.a, h, buf, sizeof buf, NULL), VIDMM_OK);
    T_CHECK(!strcmp(buf, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xae"));
    /* NULL and "" remove it; the host block goes back. */
    int64_t blocks = f.fa.live_blocks;
    T_ST(vidmm_allocation_set_name(f.a, h, NULL), VIDMM_OK);
    T_EQ(f.fa.live_blocks, blocks - 1);
    T_ST(vidmm_allocation_set_name(f.a, h, ""), VIDMM_OK);
    T_ST(vidmm_allocation_get_name(f.a, h, buf, sizeof buf, &n), VIDMM_OK);
    T_EQ(n, 1);
    /* User data. */
    void *ud = &f;
    T_ST(vidmm_allocation_get_user_data(f.a, h, &ud), VIDMM_OK);
    T_CHECK(ud == NULL);
    T_ST(vidmm_allocation_set_user_data(f.a, h, &f), VIDMM_OK);
    T_ST(vidmm_allocation_get_user_data(f.a, h, &ud), VIDMM_OK);
    T_CHECK(ud == &f);
    T_ST(vidmm_allocation_get_user_data(f.a, h, NULL), VIDMM_E_INVALID_ARG);
    /* A destroyed allocation's name is released with it, and a new
     * allocation in its slot starts unnamed. */
    T_ST(vidmm_allocation_set_name(f.a, h, "gone"), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    T_ST(vidmm_allocation_get_name(f.a, h, buf, sizeof buf, NULL), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_get_user_data(f.a, h, &ud), VIDMM_E_INVALID_HANDLE);
    vidmm_handle h2 = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 1);
    T_ST(vidmm_allocation_get_name(f.a, h2, buf, sizeof buf, &n), VIDMM_OK);
    T_EQ(n, 1);
    T_ST(vidmm_allocation_get_user_data(f.a, h2, &ud), VIDMM_OK);
    T_CHECK(ud == NULL);
    /* Left named at close: released by the close (softgpu_fx_close checks). */
    T_ST(vidmm_allocation_set_name(f.a, h2, "left"), VIDMM_OK);
    softgpu_fx_close(&f);
}

/* ---- the walk ------------------------------------------------------------ */

static uint32_t count(struct vidmm_adapter *a, const struct vidmm_allocation_filter *flt)
{
    uint64_t cur = 0;
    uint32_t n = 0;
    struct vidmm_allocation_item it;
    vidmm_status st;
    while ((st = vidmm_allocation_iterate(a, flt, &cur, &it)) == VIDMM_OK)
        n++;
    T_ST(st, VIDMM_NO_MORE);
    return n;
}

static void iterate(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    struct softgpu_proc p[2];
    for (int i = 0; i < 2; i++)
        softgpu_new_proc(f.a, &p[i], SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h[8];
    for (int i = 0; i < 8; i++) {
        h[i] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 0);
        char nm[16];
        snprintf(nm, sizeof nm, "tex%d", i);
        T_ST(vidmm_allocation_set_name(f.a, h[i], nm), VIDMM_OK);
    }
    /* 0-2 resident for process 0, 3-4 for process 1, 5-7 never resident. */
    softgpu_make_resident(f.a, p[0].dev, p[0].queue, &h[0], 3);
    softgpu_make_resident(f.a, p[1].dev, p[1].queue, &h[3], 2);
    T_ST(vidmm_offer(f.a, p[0].dev, &h[2], 1, VIDMM_OFFER_NORMAL), VIDMM_OK);

    T_EQ(count(f.a, NULL), 8);
    struct vidmm_allocation_filter flt = { VIDMM_FILTER_PROCESS, 0, p[0].proc, 0, 0 };
    T_EQ(count(f.a, &flt), 3);
    flt.process = p[1].proc;
    T_EQ(count(f.a, &flt), 2);
    flt.process = 0;
    T_EQ(count(f.a, &flt), 3);
    flt = (struct vidmm_allocation_filter){ VIDMM_FILTER_RESIDENCY, 0, 0, VIDMM_RESIDENCY_RESIDENT, 0 };
    T_EQ(count(f.a, &flt), 4);
    flt.residency = VIDMM_RESIDENCY_OFFERED;
    T_EQ(count(f.a, &flt), 1);
    flt.residency = VIDMM_RESIDENCY_EVICTED | VIDMM_RESIDENCY_OFFERED;
    T_EQ(count(f.a, &flt), 4);
    flt = (struct vidmm_allocation_filter){ VIDMM_FILTER_RESIDENCY | VIDMM_FILTER_PROCESS, 0, p[0].proc,
                                            VIDMM_RESIDENCY_RESIDENT, 0 };
    T_EQ(count(f.a, &flt), 2);
    /* By segment: the resident ones are in memory segments; the items
     * agree with vidmm_allocation_query. */
    uint32_t in_mem = 0;
    for (uint32_t s = 0; s < 4; s++) {
        struct vidmm_adapter_info ai;
        T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
        if (s >= ai.segment_count)
            break;
        flt = (struct vidmm_allocation_filter){ VIDMM_FILTER_SEGMENT, s, 0, 0, 0 };
        uint64_t cur = 0;
        struct vidmm_allocation_item it;
        while (vidmm_allocation_iterate(f.a, &flt, &cur, &it) == VIDMM_OK) {
            struct vidmm_allocation_state as = softgpu_alloc_state(f.a, it.handle);
            T_EQ(it.segment_id, s);
            T_EQ(as.segment_id, s);
            T_EQ_U64(it.size, as.size);
            T_CHECK(!strncmp(it.name, "tex", 3));
            in_mem += s != 0;
        }
    }
    T_EQ(in_mem, 5);   /* 0-4: an offered allocation keeps its placement until memory is needed */

    /* Destroying between calls: the cursor is a slot, the walk goes on
     * and returns every survivor once. */
    uint64_t cur = 0;
    struct vidmm_allocation_item it;
    T_ST(vidmm_allocation_iterate(f.a, NULL, &cur, &it), VIDMM_OK);
    T_CHECK(it.handle == h[0]);
    T_ST(vidmm_allocation_destroy(f.a, h[1]), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, h[0]), VIDMM_OK);
    uint32_t rest = 0;
    while (vidmm_allocation_iterate(f.a, NULL, &cur, &it) == VIDMM_OK) {
        T_CHECK(it.handle != h[0] && it.handle != h[1]);
        rest++;
    }
    T_EQ(rest, 6);
    T_ST(vidmm_allocation_iterate(f.a, NULL, &cur, &it), VIDMM_NO_MORE);

    /* Bad input. */
    cur = 0;
    T_ST(vidmm_allocation_iterate(NULL, NULL, &cur, &it), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_iterate(f.a, NULL, NULL, &it), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_iterate(f.a, NULL, &cur, NULL), VIDMM_E_INVALID_ARG);
    flt = (struct vidmm_allocation_filter){ 0x80, 0, 0, 0, 0 };
    T_ST(vidmm_allocation_iterate(f.a, &flt, &cur, &it), VIDMM_E_INVALID_ARG);
    flt = (struct vidmm_allocation_filter){ VIDMM_FILTER_SEGMENT, 99, 0, 0, 0 };
    T_ST(vidmm_allocation_iterate(f.a, &flt, &cur, &it), VIDMM_E_INVALID_ARG);
    flt = (struct vidmm_allocation_filter){ VIDMM_FILTER_RESIDENCY, 0, 0, 0, 0 };
    T_ST(vidmm_allocation_iterate(f.a, &flt, &cur, &it), VIDMM_E_INVALID_ARG);
    flt.residency = 0x8;
    T_ST(vidmm_allocation_iterate(f.a, &flt, &cur, &it), VIDMM_E_INVALID_ARG);
    flt = (struct vidmm_allocation_filter){ 0, 0, 0, 0, 1 };
    T_ST(vidmm_allocation_iterate(f.a, &flt, &cur, &it), VIDMM_E_INVALID_ARG);
    cur = 1ull << 40;
    T_ST(vidmm_allocation_iterate(f.a, NULL, &cur, &it), VIDMM_E_INVALID_ARG);
    T_EQ_U64(cur, 1ull << 40);
    softgpu_fx_close(&f);
}

/* ---- statistics ----------------------------------------------------------- */

static void stats_json(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    char *s = stats(f.a);
    T_CHECK(s && json_ok(s));
    free(s);
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, (uint64_t)(i + 1) * MIB, 0, 0);
        char nm[32];
        snprintf(nm, sizeof nm, "quote\"back\\slash %d", i);
        T_ST(vidmm_allocation_set_name(f.a, h[i], nm), VIDMM_OK);
    }
    softgpu_make_resident(f.a, p.dev, p.queue, h, 3);
    T_ST(vidmm_allocation_set_user_data(f.a, h[0], &f), VIDMM_OK);
    s = stats(f.a);
    T_CHECK(s && json_ok(s));
    if (s) {
        /* Every allocation by name (escaped), as a suballocation and in
         * vidmm's list; budgets; no top-level extension. */
        T_CHECK(strstr(s, "\"Name\": \"quote\\\"back\\\\slash 0\"") != NULL);
        T_CHECK(strstr(s, "\"name\": \"quote\\\"back\\\\slash 3\"") != NULL);
        T_CHECK(strstr(s, "\"residency\": \"evicted\"") != NULL);
        T_CHECK(strstr(s, "\"residency\": \"resident\"") != NULL);
        T_CHECK(strstr(s, "\"user_data\": \"") != NULL);
        T_CHECK(strstr(s, "\"budget\": ") != NULL);
        T_CHECK(strstr(s, "\"Segment 0 (system)\"") != NULL);
        T_CHECK(strstr(s, "\"MapRefCount\": 0") != NULL);
        /* Too small: the prefix and VIDMM_E_BUFFER_TOO_SMALL. */
        char part[64];
        size_t n = 0;
        T_ST(vidmm_adapter_stats_json(f.a, part, sizeof part, &n), VIDMM_E_BUFFER_TOO_SMALL);
        T_EQ(n, strlen(s) + 1);
        T_EQ(strlen(part), sizeof part - 1);
        T_CHECK(!strncmp(part, s, sizeof part - 1));
        /* The same state, the same text. */
        char *again = stats(f.a);
        T_CHECK(again && !strcmp(again, s));
        free(again);
    }
    free(s);
    /* Bad input; the scratch list refused. */
    size_t n;
    char one[8];
    T_ST(vidmm_adapter_stats_json(NULL, NULL, 0, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_stats_json(f.a, NULL, 0, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_stats_json(f.a, NULL, 8, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_stats_json(f.a, one, 0, &n), VIDMM_E_INVALID_ARG);
    int64_t blocks = f.fa.live_blocks;
    fault_alloc_arm(&f.fa, 1, 0);
    T_ST(vidmm_adapter_stats_json(f.a, NULL, 0, &n), VIDMM_E_NO_HOST_MEMORY);
    fault_alloc_disarm(&f.fa);
    T_EQ(f.fa.live_blocks, blocks);
    softgpu_fx_close(&f);
}

/* ---- fdinfo ----------------------------------------------------------------- */

static int line_ok(const char *l, size_t len)
{
    /* "drm-<key>:\t<value>" or "vidmm-<key>:\t<n> KiB" */
    const char *colon = memchr(l, ':', len);
    if (!colon || colon + 1 >= l + len || colon[1] != '\t')
        return 0;
    if (strncmp(l, "drm-", 4) && strncmp(l, "vidmm-", 6))
        return 0;
    for (const char *c = l; c < colon; c++)
        if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '-'))
            return 0;
    if (!strncmp(l, "drm-driver:", 11))
        return 1;
    const char *v = colon + 2;
    while (v < l + len && isdigit((unsigned char)*v))
        v++;
    if (!strncmp(l, "drm-client-id:", 14))
        return v == l + len;
    return v + 4 == l + len && !strncmp(v, " KiB", 4);
}

static void fdinfo_text(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    struct softgpu_proc p[2];
    for (int i = 0; i < 2; i++)
        softgpu_new_proc(f.a, &p[i], SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h[4];
    for (int i = 0; i < 4; i++)
        h[i] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 0);
    softgpu_make_resident(f.a, p[0].dev, p[0].queue, h, 3);
    /* h[0] shared: on process 1's list too. */
    softgpu_make_resident(f.a, p[1].dev, p[1].queue, &h[0], 1);
    T_ST(vidmm_offer(f.a, p[0].dev, &h[1], 1, VIDMM_OFFER_NORMAL), VIDMM_OK);
    char *s = fdinfo(f.a, p[0].proc);
    T_CHECK(s != NULL);
    if (s) {
        T_CHECK(!strncmp(s, "drm-driver:\tvidmm\ndrm-client-id:\t", 33));
        for (const char *l = s; *l;) {
            const char *e = strchr(l, '\n');
            T_CHECK(e != NULL);
            if (!e)
                break;
            if (!line_ok(l, (size_t)(e - l)))
                fprintf(stderr, "fdinfo line: %.*s\n", (int)(e - l), l);
            T_CHECK(line_ok(l, (size_t)(e - l)));
            l = e + 1;
        }
        /* Totals over regions: its three allocations (h[3] belongs to
         * nobody yet); resident all three, one shared, one purgeable. */
        long long total = 0, resident = 0, shared = 0, purgeable = 0;
        struct vidmm_adapter_info ai;
        T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
        for (uint32_t id = 0; id < ai.segment_count; id++) {
            char region[16], key[48];
            T_ST(vidmm_segment_region_name(f.a, id, region, sizeof region), VIDMM_OK);
            snprintf(key, sizeof key, "drm-total-%s", region);
            T_CHECK(fd_value(s, key) >= 0);
            total += fd_value(s, key);
            snprintf(key, sizeof key, "drm-resident-%s", region);
            resident += fd_value(s, key);
            snprintf(key, sizeof key, "drm-shared-%s", region);
            shared += fd_value(s, key);
            snprintf(key, sizeof key, "drm-purgeable-%s", region);
            purgeable += fd_value(s, key);
        }
        T_EQ(total, 3 * 1024);
        T_EQ(shared, 1024);
        T_EQ(purgeable + resident >= 3 * 1024 - 1024, 1);
        T_CHECK(fd_value(s, "drm-total-system") >= 0);
        T_CHECK(fd_value(s, "drm-total-vram0") >= 0);
        T_CHECK(fd_value(s, "vidmm-budget-local") > 0);
    }
    free(s);
    s = fdinfo(f.a, p[1].proc);
    if (s) {
        long long shared = fd_value(s, "drm-shared-vram0") + fd_value(s, "drm-shared-vram1") +
                           fd_value(s, "drm-shared-system");
        T_EQ(shared, 1024);
    }
    free(s);
    char region[16];
    T_ST(vidmm_segment_region_name(f.a, 0, region, sizeof region), VIDMM_OK);
    T_CHECK(!strcmp(region, "system"));
    T_ST(vidmm_segment_region_name(f.a, 1, region, sizeof region), VIDMM_OK);
    T_CHECK(!strcmp(region, "vram0"));
    T_ST(vidmm_segment_region_name(f.a, 99, region, sizeof region), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_segment_region_name(f.a, 0, region, 4), VIDMM_E_INVALID_ARG);
    size_t n;
    T_ST(vidmm_process_fdinfo(f.a, h[0], NULL, 0, &n), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_process_fdinfo(f.a, p[0].proc, NULL, 0, NULL), VIDMM_E_INVALID_ARG);
    char small[10];
    T_ST(vidmm_process_fdinfo(f.a, p[0].proc, small, sizeof small, &n), VIDMM_E_BUFFER_TOO_SMALL);
    T_CHECK(!strcmp(small, "drm-drive"));
    softgpu_fx_close(&f);
}

/* ---- the debug callback ------------------------------------------------------ */

struct msgs {
    int n[3];
    char text[64][160];
    int count;
};

static void capture(void *user, enum vidmm_debug_severity sev, const char *text)
{
    struct msgs *m = user;
    if ((unsigned)sev < 3)
        m->n[sev]++;
    if (m->count < 64)
        snprintf(m->text[m->count++], sizeof m->text[0], "%s: %s", vidmm_debug_severity_str(sev), text);
}

static int has(const struct msgs *m, const char *a, const char *b)
{
    for (int i = 0; i < m->count; i++)
        if (strstr(m->text[i], a) && (!b || strstr(m->text[i], b)))
            return 1;
    return 0;
}

static void debug_callback(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    struct msgs m;
    memset(&m, 0, sizeof m);
    T_ST(vidmm_adapter_set_debug_callback(NULL, capture, &m), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_set_debug_callback(f.a, capture, &m), VIDMM_OK);
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h[2];
    for (int i = 0; i < 2; i++)
        h[i] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 0);
    T_ST(vidmm_allocation_set_name(f.a, h[0], "leaked texture"), VIDMM_OK);
    softgpu_make_resident(f.a, p.dev, p.queue, h, 1);
    /* A clean adapter: no rule message. */
    T_EQ(vidmm_adapter_check_rules(f.a, NULL, 0), 0);
    T_EQ(m.count, 0);
    /* A violation made by hand (the process over budget after its own
     * make-resident): one ERROR, the report's line, even with no report
     * buffer. */
    struct vidmm_process *pr = vidmm_process_at(f.a, (uint32_t)(p.proc & 0xFFFFFFu));
    T_CHECK(pr != NULL);
    if (pr) {
        uint64_t u = pr->res.usage_after_mr[0], b = pr->res.budget_after_mr[0];
        int ct = pr->res.last_mr_cant_trim[0];
        pr->res.usage_after_mr[0] = 2 * MIB;
        pr->res.budget_after_mr[0] = MIB;
        pr->res.last_mr_cant_trim[0] = 0;
        T_EQ(vidmm_adapter_check_rules(f.a, NULL, 0), 1);
        pr->res.usage_after_mr[0] = u;
        pr->res.budget_after_mr[0] = b;
        pr->res.last_mr_cant_trim[0] = ct;
        T_EQ(m.n[VIDMM_DEBUG_ERROR], 1);
        T_CHECK(has(&m, "error: budget.usage_le_budget:", NULL));
    }
    /* Removed: nothing more arrives. */
    T_ST(vidmm_adapter_set_debug_callback(f.a, NULL, NULL), VIDMM_OK);
    T_EQ(vidmm_adapter_check_rules(f.a, NULL, 0), 0);
    T_ST(vidmm_adapter_set_debug_callback(f.a, capture, &m), VIDMM_OK);
    /* Close with the process and both allocations alive: a warning each
     * and a summary, by name. */
    m.count = 0;
    memset(m.n, 0, sizeof m.n);
    softgpu_fx_close(&f);
    T_EQ(m.n[VIDMM_DEBUG_WARNING], 4);
    T_CHECK(has(&m, "warning: leak: process", "1 devices, 1 allocations, 1024 KiB"));
    T_CHECK(has(&m, "leak: allocation", "'leaked texture'"));
    T_CHECK(has(&m, "'leaked texture'", "resident"));
    T_CHECK(has(&m, "''", "evicted"));
    T_CHECK(has(&m, "leak: 1 processes and 2 allocations (2048 KiB) alive at close", NULL));
    T_CHECK(!strcmp(vidmm_debug_severity_str((enum vidmm_debug_severity)7), "?"));
}

/* A clean close says nothing. */
static void no_leaks_no_messages(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    struct msgs m;
    memset(&m, 0, sizeof m);
    T_ST(vidmm_adapter_set_debug_callback(f.a, capture, &m), VIDMM_OK);
    vidmm_handle h = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, MIB, 0, 0);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    softgpu_fx_close(&f);
    T_EQ(m.count, 0);
}

void suite_observe(void);
void suite_observe(void)
{
    t_run("observe.names", names);
    t_run("observe.iterate", iterate);
    t_run("observe.stats_json", stats_json);
    t_run("observe.fdinfo", fdinfo_text);
    t_run("observe.debug_callback", debug_callback);
    t_run("observe.no_leaks_no_messages", no_leaks_no_messages);
}
