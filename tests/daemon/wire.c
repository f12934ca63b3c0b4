/*
 * tests/daemon/wire.c - the wire protocol's one table (daemon/proto.def)
 * against its users, without a daemon:
 *  - every request round-trips: its fields, seeded at random, encoded
 *    by the table's encoder behind a header, come back equal from the
 *    daemon's own decoder (vmmd_decode_request), variable parts
 *    included; one byte less or more is refused;
 *  - every reply and record round-trips through its encoder and
 *    decoder, and re-encodes to the same bytes;
 *  - every encoder writes exactly its table size;
 *  - docs/PROTOCOL.md carries the field list the table gives (the block
 *    between the "wire-table" markers, printed by `wire --markdown`)
 *    and a row with the right number for every request.
 * Usage: wire PROTOCOL.md [SEED] | wire --markdown.  Prints the seed it
 * used (VIDMM_TEST_SEED or the second argument replays one) and
 * "daemon wire: N passed, M failed".
 */
#include "dtest.h"
#include "proto.h"

#include <inttypes.h>

static uint64_t rng;

static uint64_t next_rand(void)
{
    /* splitmix64: every bit of every field gets exercised */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- field-wise fill and compare, from the table ---------------------------- */

#define VMMD_F(t, n) m->n = (vmmd_##t)next_rand();
#define VMMD_A(t, n, k) for (size_t i = 0; i < (k); i++) m->n[i] = (vmmd_##t)next_rand();
#define VMMD_B(n, k) for (size_t i = 0; i < (k); i++) m->n[i] = (char)next_rand();
#define FILL(kind, name, fields) \
    static void fill_##kind##_##name(struct vmmd_##kind##_##name *m) { fields }
#define VMMD_REQ(OP, name, fields) FILL(req, name, fields)
#define VMMD_REP(OP, name, fields) FILL(rep, name, fields)
#define VMMD_REC(name, fields) FILL(rec, name, fields)
#define VMMD_REQ0(OP, name)
#define VMMD_REP0(OP, name)
#include "proto.def"
#undef VMMD_F
#undef VMMD_A
#undef VMMD_B
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC

/* The number of fields of a and b that differ. */
#define VMMD_F(t, n) bad += a->n != b->n;
#define VMMD_A(t, n, k) for (size_t i = 0; i < (k); i++) bad += a->n[i] != b->n[i];
#define VMMD_B(n, k) bad += memcmp(a->n, b->n, (k)) != 0;
#define DIFF(kind, name, fields)                                                              \
    static int diff_##kind##_##name(const struct vmmd_##kind##_##name *a,                     \
                                    const struct vmmd_##kind##_##name *b)                     \
    {                                                                                         \
        int bad = 0;                                                                          \
        fields                                                                                \
        return bad;                                                                           \
    }
#define VMMD_REQ(OP, name, fields) DIFF(req, name, fields)
#define VMMD_REP(OP, name, fields) DIFF(rep, name, fields)
#define VMMD_REC(name, fields) DIFF(rec, name, fields)
#include "proto.def"
#undef VMMD_F
#undef VMMD_A
#undef VMMD_B
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REQ0
#undef VMMD_REP0

/* ---- requests ------------------------------------------------------------------ */

static uint8_t msg[VMMD_MAX_MESSAGE + 1];

/* The variable part of request op: the element size and where its count
 * lives in the fixed part m (NULL: none). */
static uint32_t *tail_count(uint16_t op, union vmmd_request_fields *m, uint32_t *elem)
{
    *elem = 8;
    switch (op) {
    case VMMD_OP_ALLOC_CREATE: *elem = 1; return &m->alloc_create.private_size;
    case VMMD_OP_MAKE_RESIDENT: return &m->make_resident.count;
    case VMMD_OP_EVICT: return &m->evict.count;
    case VMMD_OP_OFFER: return &m->offer.count;
    case VMMD_OP_RECLAIM: return &m->reclaim.count;
    case VMMD_OP_GPUVA_UPDATE: *elem = VMMD_GPUVA_OP_SIZE; return &m->gpuva_update.count;
    default: *elem = 0; return NULL;
    }
}

/* A request message of opcode op, payload len bytes (already at msg +
 * header), decoded. */
static int decode(uint16_t op, uint32_t len, struct vmmd_request *out)
{
    vmmd_header_put(msg, op, len, op == VMMD_OP_SHARE_OPEN ? VMMD_FLAG_FD : 0, 0x1122334455667788ull);
    return vmmd_decode_request(msg, VMMD_HEADER_SIZE + len, out);
}

/* After decoding: the variable part the request carried (k elements
 * of elem bytes after size fixed bytes) is where the decoder says. */
static void check_tail(const char *nm, const struct vmmd_request *d, uint32_t size, uint32_t k, uint32_t elem)
{
    const uint8_t *want = msg + VMMD_HEADER_SIZE + size;
    if (elem == 1)
        CHECK(d->data == want && d->data_size == k, "%s: private data at the wrong place or size", nm);
    else
        CHECK(d->list == want && d->list_count == k, "%s: list at the wrong place or count", nm);
}

static void request_round_trip(uint16_t op, const char *nm, uint32_t size, void (*fill)(union vmmd_request_fields *),
                               void (*put)(uint8_t *, const union vmmd_request_fields *),
                               int (*diff)(const union vmmd_request_fields *, const union vmmd_request_fields *))
{
    union vmmd_request_fields m;
    memset(&m, 0, sizeof m);
    if (fill)
        fill(&m);
    uint32_t elem, k = 0;
    uint32_t *count = tail_count(op, &m, &elem);
    if (count)
        *count = k = (uint32_t)(next_rand() % 4);
    uint8_t *p = msg + VMMD_HEADER_SIZE;
    memset(p, 0xA5, size + (size_t)k * elem + 1);
    if (put)
        put(p, &m);
    CHECK(p[size] == 0xA5, "%s: the encoder wrote past its %u bytes", nm, size);
    for (size_t i = 0; i < (size_t)k * elem; i++)
        p[size + i] = (uint8_t)next_rand();
    uint32_t len = size + k * elem;
    struct vmmd_request d;
    int rc = decode(op, len, &d);
    CHECK(rc == VMMD_DECODE_OK, "%s: decode %s", nm, vmmd_decode_str(rc));
    CHECK(vmmd_request_fixed_size(op) == (int)size, "%s: fixed size %d, table %u", nm, vmmd_request_fixed_size(op),
          size);
    if (rc == VMMD_DECODE_OK) {
        CHECK(d.h.opcode == op && d.h.request_id == 0x1122334455667788ull, "%s: header", nm);
        CHECK(!diff || diff(&m, &d.m) == 0, "%s: %d fields came back different", nm, diff ? diff(&m, &d.m) : 0);
        if (count)
            check_tail(nm, &d, size, k, elem);
    }
    if (op == VMMD_OP_ECHO)
        return;   /* any length is an echo */
    if (len > 0)
        CHECK(decode(op, len - 1, &d) == VMMD_DECODE_BAD_PAYLOAD, "%s: one byte short accepted", nm);
    CHECK(decode(op, len + 1, &d) == VMMD_DECODE_BAD_PAYLOAD, "%s: one byte more accepted", nm);
}

/* Adapters from the typed functions to the union (the member is the
 * union's first byte, so the casts name the same object). */
#define VMMD_REQ(OP, name, fields)                                                                  \
    static void ufill_##name(union vmmd_request_fields *u) { fill_req_##name(&u->name); }          \
    static void uput_##name(uint8_t *p, const union vmmd_request_fields *u)                        \
    {                                                                                               \
        vmmd_put_req_##name(p, &u->name);                                                           \
    }                                                                                               \
    static int udiff_##name(const union vmmd_request_fields *a, const union vmmd_request_fields *b) \
    {                                                                                               \
        return diff_req_##name(&a->name, &b->name);                                                 \
    }
#define VMMD_REQ0(OP, name)
#define VMMD_REP(OP, name, fields)
#define VMMD_REP0(OP, name)
#define VMMD_REC(name, fields)
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REQ0

static int requests(void)
{
    int n = 0;
#define VMMD_REQ(OP, name, fields)                                                                           \
    request_round_trip(VMMD_OP_##OP, #OP, VMMD_REQ_##OP##_SIZE, ufill_##name, uput_##name, udiff_##name); \
    n++;
#define VMMD_REQ0(OP, name)                                        \
    request_round_trip(VMMD_OP_##OP, #OP, 0, NULL, NULL, NULL);    \
    n++;
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REQ0
#undef VMMD_REP
#undef VMMD_REP0
#undef VMMD_REC
    return n;
}

/* ---- replies and records ------------------------------------------------------- */

static int replies(void)
{
    int n = 0;
    uint8_t a[VMMD_MAX_PAYLOAD], b[VMMD_MAX_PAYLOAD];
#define ROUND_TRIP(kind, name, label, size)                                                       \
    do {                                                                                          \
        struct vmmd_##kind##_##name m, d;                                                         \
        memset(&m, 0, sizeof m);                                                                  \
        memset(&d, 0, sizeof d);                                                                  \
        fill_##kind##_##name(&m);                                                                 \
        memset(a, 0xA5, (size_t)(size) + 1);                                                      \
        vmmd_put_##kind##_##name(a, &m);                                                          \
        CHECK(a[size] == 0xA5, "%s: the encoder wrote past its %u bytes", label, (unsigned)(size)); \
        vmmd_get_##kind##_##name(a, &d);                                                          \
        CHECK(diff_##kind##_##name(&m, &d) == 0, "%s: fields came back different", label);       \
        vmmd_put_##kind##_##name(b, &d);                                                          \
        CHECK(memcmp(a, b, (size)) == 0, "%s: re-encoded to other bytes", label);                 \
        n++;                                                                                      \
    } while (0);
#define VMMD_REP(OP, name, fields) ROUND_TRIP(rep, name, #OP " reply", VMMD_REP_##OP##_SIZE)
#define VMMD_REC(name, fields) ROUND_TRIP(rec, name, #name " record", VMMD_REC_##name##_SIZE)
#define VMMD_REQ(OP, name, fields)
#define VMMD_REQ0(OP, name)
#define VMMD_REP0(OP, name) CHECK(VMMD_REP_##OP##_SIZE == 0, #OP " reply"); n++;
#include "proto.def"
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REQ
#undef VMMD_REQ0
#undef VMMD_REP0
#undef ROUND_TRIP
    return n;
}

/* ---- the field list of docs/PROTOCOL.md -------------------------------------- */

static char *text_add(char *t, size_t *len, const char *s)
{
    size_t k = strlen(s);
    char *n = realloc(t, *len + k + 1);
    if (!n) {
        free(t);
        exit(2);
    }
    memcpy(n + *len, s, k + 1);
    *len += k;
    return n;
}

/* One field of a row: its text, then the offset moves on. */
static void field(char **t, size_t *len, const char *text, size_t *o, size_t size, const char **sep)
{
    *t = text_add(*t, len, text);
    *o += size;
    *sep = ", ";
}

/* The markdown block: one row per entry, fields with their offsets. */
static char *markdown(void)
{
    char *t = NULL, f[128];
    size_t len = 0;
    size_t o = 0;
    const char *sep = "";
    t = text_add(t, &len, "| message | bytes | fields (offset: type name) |\n|---|---|---|\n");
#define VMMD_F(ty, n) { snprintf(f, sizeof f, "%s%zu: " #ty " " #n, sep, o); field(&t, &len, f, &o, sizeof(vmmd_##ty), &sep); }
#define VMMD_A(ty, n, k) { snprintf(f, sizeof f, "%s%zu: " #ty " " #n "[%d]", sep, o, k); \
                           field(&t, &len, f, &o, (k) * sizeof(vmmd_##ty), &sep); }
#define VMMD_B(n, k) { snprintf(f, sizeof f, "%s%zu: char " #n "[%d]", sep, o, k); field(&t, &len, f, &o, (k), &sep); }
#define ROW(label, size, ...)                                             \
    snprintf(f, sizeof f, "| %s | %u | ", label, (unsigned)(size));       \
    t = text_add(t, &len, f);                                             \
    o = 0;                                                                \
    sep = "";                                                             \
    __VA_ARGS__                                                           \
    t = text_add(t, &len, " |\n");
#define VMMD_REQ(OP, name, fields) ROW(#OP " request", VMMD_REQ_##OP##_SIZE, fields)
#define VMMD_REP(OP, name, fields) ROW(#OP " reply", VMMD_REP_##OP##_SIZE, fields)
#define VMMD_REC(name, fields) ROW(#name " record", VMMD_REC_##name##_SIZE, fields)
#define VMMD_REQ0(OP, name) ROW(#OP " request", 0, t = text_add(t, &len, "-");)
#define VMMD_REP0(OP, name) ROW(#OP " reply", 0, t = text_add(t, &len, "-");)
#include "proto.def"
#undef VMMD_F
#undef VMMD_A
#undef VMMD_B
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REQ0
#undef VMMD_REP0
#undef ROW
    return t;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *t = NULL, buf[4096];
    size_t len = 0, k;
    while ((k = fread(buf, 1, sizeof buf - 1, f)) > 0) {
        buf[k] = 0;
        t = text_add(t, &len, buf);
    }
    fclose(f);
    return t;
}

#define BEGIN_MARK "<!-- wire-table begin: build/tests/daemon/wire --markdown -->\n"
#define END_MARK "<!-- wire-table end -->"

static void docs(const char *path)
{
    char *doc = slurp(path), *want = markdown();
    CHECK(doc != NULL, "cannot read %s", path);
    if (!doc) {
        free(want);
        return;
    }
    const char *b = strstr(doc, BEGIN_MARK), *e = b ? strstr(b, END_MARK) : NULL;
    CHECK(b && e, "%s: no wire-table block", path);
    if (b && e) {
        b += strlen(BEGIN_MARK);
        int same = (size_t)(e - b) == strlen(want) && memcmp(b, want, strlen(want)) == 0;
        CHECK(same, "%s: the wire-table block is not proto.def's (regenerate it with wire --markdown)", path);
    }
    /* The Requests table names every request with its number. */
    char row[96];
#define VMMD_REQ(OP, name, fields) CHECK_ROW(OP)
#define VMMD_REQ0(OP, name) CHECK_ROW(OP)
#define CHECK_ROW(OP)                                                                             \
    snprintf(row, sizeof row, "\n| %d | " #OP " |", VMMD_OP_##OP);                               \
    CHECK(strstr(doc, row) != NULL, "%s: no Requests row \"| %d | %s |\"", path, VMMD_OP_##OP, #OP);
#define VMMD_REP(OP, name, fields)
#define VMMD_REP0(OP, name)
#define VMMD_REC(name, fields)
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REQ0
#undef VMMD_REP
#undef VMMD_REP0
#undef VMMD_REC
#undef CHECK_ROW
    free(doc);
    free(want);
}

int main(int argc, char **argv)
{
    dt_name = "daemon wire";
    if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
        char *t = markdown();
        fputs(t, stdout);
        free(t);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: wire PROTOCOL.md [SEED] | wire --markdown\n");
        return 2;
    }
    const char *env = getenv("VIDMM_TEST_SEED");
    rng = argc > 2 ? strtoull(argv[2], NULL, 0) : env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("daemon wire: seed %" PRIu64 " (VIDMM_TEST_SEED replays it)\n", rng);
    int nreq = 0, nrep = 0;
    for (int round = 0; round < 16; round++) {
        nreq = requests();
        nrep = replies();
    }
    printf("daemon wire: %d requests, %d replies and records, 16 rounds each\n", nreq, nrep);
    docs(argv[1]);
    printf("daemon wire: %d passed, %d failed\n", dt_pass, dt_fail);
    return dt_fail ? 1 : 0;
}
