/*
 * trace_read.c - the trace reader: reading lines (bounded, with the
 * faults a file that is no trace gives), the header, splitting a line into
 * tokens, and parsing the argument syntax of docs/TRACE_FORMAT.md (ids,
 * key=value arguments, sizes, addresses, flag sets, lists, command-buffer
 * commands and patches).  Executing the lines is replay.c's.
 */
#include "trace_read.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tr_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 0);
    uint64_t mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    case 't': case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (mul > 1 && *end == 'i')
        end++;
    if (mul > 1 && *end == 'B')
        end++;
    if (*end || end == s || v > UINT64_MAX / mul)
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

/* ---- reading lines -------------------------------------------------- */

/* The longest line read: 256 MiB.  A trace line is as long as what it
 * lists: the longest a trace can need is a make-resident, evict or offer
 * list naming every allocation a trace can name (ids go to 2^24, so at
 * most 2^24 entries of at most 10 bytes: 160 MiB), far above any real
 * use (a list of 10,000 allocations is 70 KB).  The cap keeps a file
 * that is no trace (a text without newlines, a stream without end) from
 * growing the line buffer until the host runs out of memory, and names
 * the real cause instead. */
#define TR_MAX_LINE (256u << 20)

static int line_fault(struct replay *r, const char *what)
{
    fprintf(stderr, "%s:%" PRIu64 ": %s\n", r->path, r->lineno + 1, what);
    r->failed = 1;
    return -1;
}

/* One raw line into r->buf (newline kept, NUL-terminated): its length,
 * or -1 at the end of the file or on a fault (r->failed, reported).
 * Every byte read goes into r->hash; r->hash_line is the hash before the
 * line.  The end of a version-2 trace must be its end record, and
 * nothing may follow that. */
static long read_line(struct replay *r)
{
    size_t len = 0;
    uint64_t h = r->hash;
    r->hash_line = h;
    for (;;) {
        if (r->buf_cap - len < 2) {
            if (r->buf_cap >= TR_MAX_LINE)
                return line_fault(r, "line longer than 256 MiB: not a vidmm trace");
            size_t cap = r->buf_cap ? r->buf_cap * 2 : 256;
            if (cap > TR_MAX_LINE)
                cap = TR_MAX_LINE;
            char *nb = realloc(r->buf, cap);
            if (!nb)
                return line_fault(r, "out of memory for the line buffer");
            r->buf = nb;
            r->buf_cap = cap;
        }
        int c = getc_unlocked(r->f);
        if (c == EOF)
            break;
        if (c == '\0')
            return line_fault(r, "binary data (a NUL byte): not a vidmm trace");
        h = (h ^ (unsigned char)c) * 0x100000001b3ull;
        r->buf[len++] = (char)c;
        if (c == '\n')
            break;
    }
    r->hash = h;
    if (ferror(r->f)) {
        char m[160];
        snprintf(m, sizeof m, "read error: %s", strerror(errno));
        return line_fault(r, m);
    }
    if (len && r->ended)
        return line_fault(r, "bytes after the end record: the trace was appended to or is two traces");
    if (len == 0) {
        if (r->version >= 2 && !r->ended) {
            char m[200];
            snprintf(m, sizeof m,
                     "trace cut short: version %d ends with an end record ('end calls=N checksum=...'), "
                     "this one ends after %" PRIu64 " call lines without one",
                     r->version, r->body_calls);
            return line_fault(r, m);
        }
        return -1;
    }
    r->buf[len] = '\0';
    return (long)len;
}

/* The end record "end calls=N checksum=0x...": the call lines before it
 * and the FNV-1a 64 of every byte before it must agree.  0, or 1 with
 * the disagreement reported. */
static int end_record(struct replay *r, char *s)
{
    char *tok[4];
    int n = rd_tokenize(s, tok, 4);
    uint64_t calls, sum;
    if (n != 3 || strncmp(tok[1], "calls=", 6) || strncmp(tok[2], "checksum=", 9) ||
        tr_parse_u64(tok[1] + 6, &calls) || tr_parse_u64(tok[2] + 9, &sum)) {
        rd_bad(r, "bad end record (want: end calls=N checksum=0xHEX)", NULL);
        return 1;
    }
    char m[200];
    if (calls != r->body_calls) {
        snprintf(m, sizeof m, "end record says %" PRIu64 " call lines, the trace has %" PRIu64
                 ": lines were lost or added", calls, r->body_calls);
        rd_bad(r, m, NULL);
        return 1;
    }
    if (sum != r->hash_line) {
        snprintf(m, sizeof m, "checksum mismatch: the end record says 0x%016" PRIx64 ", the bytes before it "
                 "give 0x%016" PRIx64 ": the trace was changed", sum, r->hash_line);
        rd_bad(r, m, NULL);
        return 1;
    }
    r->ended = 1;
    return 0;
}

/* A body line that is a call (not a frame marker, "begin" or the end). */
static void count_call(struct replay *r, const char *s)
{
    if (strncmp(s, "frame", 5) || (s[5] != ' ' && s[5] != '\t' && s[5]))
        if (strcmp(s, "begin"))
            r->body_calls++;
}

/* The next non-blank, non-comment line, stripped of its newline and of a
 * trailing comment; NULL at the end of the file or on a fault (then
 * r->failed is set and the fault reported).  The end record is checked
 * here and not returned. */
char *rd_next_line(struct replay *r)
{
    if (r->pending) {
        r->pending = 0;
        return r->buf;
    }
    for (;;) {
        if (read_line(r) < 0)
            return NULL;
        r->lineno++;
        char *hash = strchr(r->buf, '#');
        if (hash)
            *hash = '\0';
        size_t len = strlen(r->buf);
        while (len && (r->buf[len - 1] == '\n' || r->buf[len - 1] == '\r' || r->buf[len - 1] == ' ' ||
                       r->buf[len - 1] == '\t'))
            r->buf[--len] = '\0';
        char *s = r->buf;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            continue;
        if (!strncmp(s, "end", 3) && (s[3] == ' ' || s[3] == '\t' || !s[3])) {
            if (end_record(r, s)) {
                r->failed = 1;
                return NULL;
            }
            continue;   /* the next read must find the end of the file */
        }
        if (r->in_body)
            count_call(r, s);
        return s;
    }
}

int rd_tokenize(char *s, char **tok, int max)
{
    int n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        if (n == max)
            return -1;
        tok[n++] = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
        if (*s)
            *s++ = '\0';
    }
    return n;
}

int rd_bad(struct replay *r, const char *what, const char *tok)
{
    fprintf(stderr, "%s:%" PRIu64 ": %s%s%s\n", r->path, r->lineno, what, tok ? ": " : "", tok ? tok : "");
    return 1;
}

static int read_header(struct replay *r, struct tr_header *h);

/* Read a version-2 trace through once, before anything runs: its end
 * record must agree.  0, or 1 with the fault reported. */
static int prove_whole(const char *path)
{
    struct replay v;
    struct tr_header h;
    memset(&v, 0, sizeof v);
    v.path = path;
    v.hash = TR_FNV_OFFSET;
    v.f = fopen(path, "r");
    if (!v.f) {
        fprintf(stderr, "vidmm: cannot open '%s': %s\n", path, strerror(errno));
        return 1;
    }
    int bad = read_header(&v, &h);
    while (!bad && rd_next_line(&v))
        ;
    bad |= v.failed;
    replay_close(&v);
    return bad;
}

int replay_open(struct replay *r, const char *path, struct tr_header *h, int strict)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        memset(r, 0, sizeof(*r));
        fprintf(stderr, "vidmm: cannot open '%s': %s\n", path, strerror(errno));
        return 1;
    }
    struct stat sb;
    int regular = 0;
    if (fstat(fileno(f), &sb) == 0) {
        /* fopen accepts a directory; its first read fails.  Say so before
         * the caller starts an adapter for it. */
        if (S_ISDIR(sb.st_mode)) {
            memset(r, 0, sizeof(*r));
            fprintf(stderr, "vidmm: '%s' is a directory, not a trace\n", path);
            fclose(f);
            return 1;
        }
        regular = S_ISREG(sb.st_mode);
    }
    if (replay_open_stream(r, f, path, h, strict))
        return 1;
    r->file_size = regular ? (uint64_t)sb.st_size : 0;
    /* A regular file can be read twice: prove it whole before anything
     * runs. */
    if (r->version >= 2 && regular && prove_whole(path)) {
        replay_close(r);
        return 1;
    }
    return 0;
}

int replay_open_stream(struct replay *r, FILE *f, const char *name, struct tr_header *h, int strict)
{
    memset(r, 0, sizeof(*r));
    r->path = name;
    r->strict = strict;
    r->hash = TR_FNV_OFFSET;
    r->f = f;
    /* On a fault nothing stays open: the caller has nothing to close. */
    if (read_header(r, h)) {
        replay_close(r);
        return 1;
    }
    if (strict && r->version == 1)
        fprintf(stderr, "%s: note: trace format version 1 has no end record, so this trace cannot be proven "
                        "whole (one cut at a line boundary replays as a shorter trace); record it again for "
                        "version %d\n", name, TR_FORMAT_VERSION);
    return 0;
}

/* The header lines, up to "begin" or the first call line.  0, or 1 with
 * a message on stderr. */
static int read_header(struct replay *r, struct tr_header *h)
{
    tr_header_defaults(h);
    snprintf(h->scenario, sizeof h->scenario, "file");
    int seen_version = 0;
    char *s;
    while ((s = rd_next_line(r)) != NULL) {
        char *tok[8];
        char copy[512];
        snprintf(copy, sizeof copy, "%s", s);
        int n = rd_tokenize(copy, tok, 8);
        if (n <= 0)
            continue;
        uint64_t v;
        if (!strcmp(tok[0], "begin")) {
            if (r->strict && !seen_version)
                break;
            r->in_body = 1;
            return 0;
        }
        if (!strcmp(tok[0], "vidmm-trace") && n == 2) {
            if (seen_version)
                return rd_bad(r, "a second version line", NULL);
            if (tr_parse_u64(tok[1], &v) || v < 1 || v > TR_FORMAT_VERSION) {
                rd_bad(r, "unsupported trace format version (this vidmm reads versions 1 and 2)", tok[1]);
                return 1;
            }
            seen_version = 1;
            r->version = (int)v;
        } else if (!strcmp(tok[0], "scenario") && n == 2) {
            snprintf(h->scenario, sizeof h->scenario, "%s", tok[1]);
        } else if (!strcmp(tok[0], "adapter") && n == 2) {
            snprintf(h->preset, sizeof h->preset, "%s", tok[1]);
        } else if (!strcmp(tok[0], "driver") && n == 2) {
            /* A plug-in driver's name or file (docs/VKGPU.md). */
            if (strlen(tok[1]) >= sizeof h->driver)
                return rd_bad(r, "driver name too long", NULL);
            snprintf(h->driver, sizeof h->driver, "%s", tok[1]);
        } else if (!strcmp(tok[0], "driver-options") && n == 2) {
            if (strlen(tok[1]) >= sizeof h->driver_options)
                return rd_bad(r, "driver-options too long", NULL);
            snprintf(h->driver_options, sizeof h->driver_options, "%s", tok[1]);
        } else if (!strcmp(tok[0], "segment") && n == 3) {
            if (tr_parse_u64(tok[1], &v) || v == 0 || v > SOFTGPU_MAX_SEGMENTS ||
                tr_parse_u64(tok[2], &h->segment_size[v]))
                return rd_bad(r, "bad segment line (want: segment ID SIZE)", NULL);
        } else if (!strcmp(tok[0], "mmu-levels") && n == 2) {
            if (tr_parse_u64(tok[1], &v) || v > 6)
                return rd_bad(r, "bad mmu-levels", tok[1]);
            h->mmu_levels = (uint32_t)v;
        } else if (!strcmp(tok[0], "system-memory") && n == 2) {
            if (tr_parse_u64(tok[1], &h->system_memory))
                return rd_bad(r, "bad system-memory", tok[1]);
        } else if (!strcmp(tok[0], "synchronous") && n == 2) {
            if (tr_parse_u64(tok[1], &v) || v > 1)
                return rd_bad(r, "bad synchronous (0 or 1)", tok[1]);
            h->synchronous = (int)v;
        } else if (!strcmp(tok[0], "policy") && n == 2) {
            snprintf(h->policy, sizeof h->policy, "%s", tok[1]);
        } else if (!strcmp(tok[0], "seed") && n == 2) {
            if (tr_parse_u64(tok[1], &h->seed))
                return rd_bad(r, "bad seed", tok[1]);
        } else {
            /* A scenario file may leave out the header and "begin". */
            if (r->strict && !seen_version)
                break;
            r->pending = 1;
            r->in_body = 1;
            count_call(r, s);
            memmove(r->buf, s, strlen(s) + 1);
            return 0;
        }
    }
    if (r->failed)
        return 1;
    if (r->strict && !seen_version)
        return rd_bad(r, "not a vidmm trace: no version line ('vidmm-trace 2') before the first call", NULL);
    return 0;
}

void replay_close(struct replay *r)
{
    if (r->f)
        fclose(r->f);
    free(r->buf);
    for (int k = 0; k < TR_KINDS; k++)
        free(r->map[k]);
    free(r->last_fence);
    memset(r, 0, sizeof(*r));
}

/* ---- ids ------------------------------------------------------------ */

/* The file id of token s for kind k ("A12" -> 12), 0 if not one. */
static uint32_t file_id(enum tr_kind k, const char *s)
{
    if (s[0] != tr_kind_prefix[k] || !s[1])
        return 0;
    char *end;
    unsigned long v = strtoul(s + 1, &end, 10);
    if (*end || v == 0 || v > (1ul << 24))
        return 0;
    return (uint32_t)v;
}

int rd_map_set(struct replay *r, enum tr_kind k, uint32_t fid, uint32_t id)
{
    if (fid >= r->map_cap[k]) {
        uint32_t nc = r->map_cap[k] ? r->map_cap[k] : 256;
        while (nc <= fid)
            nc *= 2;
        uint32_t *n = realloc(r->map[k], (size_t)nc * sizeof(*n));
        if (!n)
            return -1;
        memset(n + r->map_cap[k], 0, (size_t)(nc - r->map_cap[k]) * sizeof(*n));
        r->map[k] = n;
        r->map_cap[k] = nc;
    }
    r->map[k][fid] = id;
    return 0;
}

/* The recording-layer id of an existing object named by token s. */
int rd_ref(struct replay *r, enum tr_kind k, const char *s, uint32_t *id)
{
    uint32_t fid = file_id(k, s);
    if (!fid || fid >= r->map_cap[k] || !r->map[k][fid]) {
        char what[48];
        snprintf(what, sizeof what, "expected a known %c id", tr_kind_prefix[k]);
        return rd_bad(r, what, s);
    }
    *id = r->map[k][fid];
    return 0;
}

/* A new object's file id (must not be in use). */
int rd_def(struct replay *r, enum tr_kind k, const char *s, uint32_t *fid)
{
    *fid = file_id(k, s);
    if (!*fid) {
        char what[48];
        snprintf(what, sizeof what, "expected a new %c id", tr_kind_prefix[k]);
        return rd_bad(r, what, s);
    }
    if (*fid < r->map_cap[k] && r->map[k][*fid])
        return rd_bad(r, "id defined twice", s);
    return 0;
}

/* ---- key=value arguments -------------------------------------------- */

const char *rd_kv(const struct rd_args *a, const char *key)
{
    size_t kl = strlen(key);
    struct rd_seen *s = a->seen;
    if (s) {
        int known = 0;
        for (int k = 0; k < s->nasked && !known; k++)
            known = !strcmp(s->asked[k], key);
        if (!known && s->nasked < (int)(sizeof s->asked / sizeof s->asked[0]))
            s->asked[s->nasked++] = key;
    }
    for (int i = 1; i < a->n; i++)
        if (!strncmp(a->tok[i], key, kl) && a->tok[i][kl] == '=') {
            if (s && i < 64)
                s->used |= 1ull << i;
            return a->tok[i] + kl + 1;
        }
    return NULL;
}

int rd_unknown_keys(const struct rd_args *a, const char *verb)
{
    if (!a->seen)
        return 0;
    for (int i = 1; i < a->n && i < 64; i++) {
        const char *eq = strchr(a->tok[i], '=');
        if (!eq || (a->seen->used >> i) & 1)
            continue;
        char what[512];
        int len = snprintf(what, sizeof what, "unknown key '%.*s' for %s (", (int)(eq - a->tok[i]), a->tok[i], verb);
        for (int k = 0; k < a->seen->nasked && len > 0 && (size_t)len < sizeof what; k++)
            len += snprintf(what + len, sizeof what - (size_t)len, "%s%s=", k ? ", " : "", a->seen->asked[k]);
        if (len > 0 && (size_t)len < sizeof what)
            snprintf(what + len, sizeof what - (size_t)len, "%s)", a->seen->nasked ? "" : "it takes no key=value");
        return rd_bad(a->r, what, NULL);
    }
    return 0;
}

int rd_kv_u64(const struct rd_args *a, const char *key, uint64_t def_value, int required, uint64_t *out)
{
    const char *v = rd_kv(a, key);
    if (!v) {
        if (required) {
            char what[64];
            snprintf(what, sizeof what, "missing %s=", key);
            return rd_bad(a->r, what, NULL);
        }
        *out = def_value;
        return 0;
    }
    if (tr_parse_u64(v, out)) {
        char what[64];
        snprintf(what, sizeof what, "bad number for %s", key);
        return rd_bad(a->r, what, v);
    }
    return 0;
}

int rd_kv_u32(const struct rd_args *a, const char *key, uint32_t def_value, int required, uint32_t *out)
{
    uint64_t v;
    if (rd_kv_u64(a, key, def_value, required, &v))
        return 1;
    if (v > UINT32_MAX)
        return rd_bad(a->r, "value out of range", key);
    *out = (uint32_t)v;
    return 0;
}

/* An address: V<n>, V<n>+OFF, or a number. */
static int parse_addr(struct replay *r, const char *s, struct tr_addr *out)
{
    out->v = 0;
    out->off = 0;
    if (s[0] == 'V') {
        char name[32];
        const char *plus = strchr(s, '+');
        size_t len = plus ? (size_t)(plus - s) : strlen(s);
        if (len >= sizeof name)
            return rd_bad(r, "bad address", s);
        memcpy(name, s, len);
        name[len] = '\0';
        if (rd_ref(r, TR_VA, name, &out->v))
            return 1;
        if (plus && tr_parse_u64(plus + 1, &out->off))
            return rd_bad(r, "bad address offset", s);
        return 0;
    }
    if (tr_parse_u64(s, &out->off))
        return rd_bad(r, "bad address", s);
    return 0;
}

int rd_kv_addr(const struct rd_args *a, const char *key, int required, struct tr_addr *out)
{
    const char *v = rd_kv(a, key);
    out->v = 0;
    out->off = 0;
    if (!v) {
        if (required) {
            char what[64];
            snprintf(what, sizeof what, "missing %s=", key);
            return rd_bad(a->r, what, NULL);
        }
        return 0;
    }
    return parse_addr(a->r, v, out);
}

/* The entries of a comma-separated list: one more than its commas. */
static uint32_t list_entries(const char *s)
{
    uint32_t count = 1;
    for (const char *p = s; *p; p++)
        count += *p == ',';
    return count;
}

/* Flags: "-", a number, or names joined by ','. */
int rd_flags(struct replay *r, const char *s, const char *const names[2], uint32_t *out)
{
    *out = 0;
    if (!s || !strcmp(s, "-"))
        return 0;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", s);
    for (char *save = NULL, *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (names && !strcmp(p, names[0]))
            *out |= 1u;
        else if (names && !strcmp(p, names[1]))
            *out |= 2u;
        else if (!tr_parse_u64(p, &v) && v <= UINT32_MAX)
            *out |= (uint32_t)v;
        else {
            char what[160];
            snprintf(what, sizeof what, "unknown flag '%s' (-, a number, or %s%s%s joined by ',')", p,
                     names ? names[0] : "", names ? " and " : "", names ? names[1] : "");
            return rd_bad(r, what, NULL);
        }
    }
    return 0;
}

/* An allocation list: "-" or A<n>,A<m>,... into a malloc'ed array. */
int rd_list(struct replay *r, const char *s, uint32_t **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s)
        return rd_bad(r, "missing allocation list", NULL);
    if (!strcmp(s, "-"))
        return 0;
    uint32_t count = list_entries(s);
    uint32_t *list = malloc((size_t)count * sizeof(*list));
    if (!list)
        return rd_bad(r, "out of memory", NULL);
    const char *p = s;
    for (uint32_t i = 0; i < count; i++) {
        char name[32];
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len >= sizeof name) {
            free(list);
            return rd_bad(r, "bad allocation list", s);
        }
        memcpy(name, p, len);
        name[len] = '\0';
        if (rd_ref(r, TR_ALLOC, name, &list[i])) {
            free(list);
            return 1;
        }
        p = comma ? comma + 1 : p + len;
    }
    *out = list;
    *n = count;
    return 0;
}

/* The positional (non key=value) tokens after the verb. */
int rd_positional(const struct rd_args *a, const char **pos, int max)
{
    int n = 0;
    for (int i = 1; i < a->n; i++)
        if (!strchr(a->tok[i], '=') && n < max)
            pos[n++] = a->tok[i];
    return n;
}

int rd_want_pos(struct replay *r, int have, int want, const char *usage)
{
    if (have >= want)
        return 0;
    return rd_bad(r, "missing arguments; usage", usage);
}

int rd_kind(struct replay *r, const char *s, enum softgpu_alloc_kind *k)
{
    for (uint32_t i = 1; i <= SOFTGPU_ALLOC_HEAP; i++)
        if (s && !strcmp(s, tr_alloc_kind_name(i))) {
            *k = (enum softgpu_alloc_kind)i;
            return 0;
        }
    char what[256];
    int len = snprintf(what, sizeof what, "unknown allocation kind '%s' (kind=", s ? s : "(none)");
    for (uint32_t i = 1; i <= SOFTGPU_ALLOC_HEAP && len > 0 && (size_t)len < sizeof what; i++)
        len += snprintf(what + len, sizeof what - (size_t)len, "%s%s", i > 1 ? "|" : "", tr_alloc_kind_name(i));
    if (len > 0 && (size_t)len < sizeof what)
        snprintf(what + len, sizeof what - (size_t)len, ")");
    return rd_bad(r, what, NULL);
}

int rd_group(struct replay *r, const char *s, enum vidmm_segment_group *g)
{
    if (!strcmp(s, "local"))
        *g = VIDMM_SEGMENT_GROUP_LOCAL;
    else if (!strcmp(s, "non-local"))
        *g = VIDMM_SEGMENT_GROUP_NON_LOCAL;
    else
        return rd_bad(r, "segment group must be local or non-local", s);
    return 0;
}

void rd_remember_fence(struct replay *r, uint32_t q, uint64_t fence)
{
    if (q >= r->last_fence_cap) {
        uint32_t nc = r->last_fence_cap ? r->last_fence_cap : 64;
        while (nc <= q)
            nc *= 2;
        uint64_t *n = realloc(r->last_fence, (size_t)nc * sizeof(*n));
        if (!n)
            return;
        memset(n + r->last_fence_cap, 0, (size_t)(nc - r->last_fence_cap) * sizeof(*n));
        r->last_fence = n;
        r->last_fence_cap = nc;
    }
    if (fence)
        r->last_fence[q] = fence;
}

/* A command list: "-" or OP[:OPERAND...],... (malloc'ed). */
int rd_cmds(struct replay *r, const char *s, struct tr_cmd **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s)
        return rd_bad(r, "missing cmds=", NULL);
    if (!strcmp(s, "-"))
        return 0;
    uint32_t count = list_entries(s);
    struct tr_cmd *cmds = calloc(count, sizeof(*cmds));
    char *copy = strdup(s);
    if (!cmds || !copy) {
        free(cmds);
        free(copy);
        return rd_bad(r, "out of memory", NULL);
    }
    uint32_t i = 0;
    int err = 0;
    for (char *save = NULL, *c = strtok_r(copy, ",", &save); c && !err; c = strtok_r(NULL, ",", &save), i++) {
        char *fsave = NULL, *f = strtok_r(c, ":", &fsave);
        if (!f || tr_cmd_parse_name(f, &cmds[i].op)) {
            err = rd_bad(r, "unknown command", f ? f : c);
            break;
        }
        int want = tr_cmd_operands(cmds[i].op), got = 0;
        for (f = strtok_r(NULL, ":", &fsave); f && !err; f = strtok_r(NULL, ":", &fsave), got++)
            err = got >= want ? rd_bad(r, "too many operands", f) : parse_addr(r, f, &cmds[i].arg[got]);
        if (!err && got != want)
            err = rd_bad(r, "wrong operand count for command", tr_cmd_name(cmds[i].op));
    }
    free(copy);
    if (err || i != count) {
        free(cmds);
        return err ? 1 : rd_bad(r, "bad command list", s);
    }
    *out = cmds;
    *n = count;
    return 0;
}

/* A physical allocation list: "-" or A<n>[:write],... */
int rd_submit_allocs(struct replay *r, const char *s, uint32_t **ids, uint32_t **flags, uint32_t *n)
{
    *ids = NULL;
    *flags = NULL;
    *n = 0;
    if (!s)
        return rd_bad(r, "missing allocs=", NULL);
    if (!strcmp(s, "-"))
        return 0;
    uint32_t count = list_entries(s);
    uint32_t *a = calloc(count, sizeof(*a)), *fl = calloc(count, sizeof(*fl));
    char *copy = strdup(s);
    int err = !a || !fl || !copy ? rd_bad(r, "out of memory", NULL) : 0;
    uint32_t i = 0;
    for (char *save = NULL, *c = err ? NULL : strtok_r(copy, ",", &save); c && !err;
         c = strtok_r(NULL, ",", &save), i++) {
        char *colon = strchr(c, ':');
        if (colon) {
            *colon++ = '\0';
            for (char *fs = NULL, *f = strtok_r(colon, ":", &fs); f && !err; f = strtok_r(NULL, ":", &fs)) {
                uint64_t v;
                if (!strcmp(f, "write"))
                    fl[i] |= VIDMM_SUBMIT_WRITE;
                else if (!tr_parse_u64(f, &v) && v <= UINT32_MAX)
                    fl[i] |= (uint32_t)v;
                else
                    err = rd_bad(r, "unknown allocation flag", f);
            }
        }
        if (!err)
            err = rd_ref(r, TR_ALLOC, c, &a[i]);
    }
    free(copy);
    if (err || i != count) {
        free(a);
        free(fl);
        return err ? 1 : rd_bad(r, "bad allocation list", s);
    }
    *ids = a;
    *flags = fl;
    *n = count;
    return 0;
}

/* Patch locations: "-" or INDEX+ALLOCATION_OFFSET@PATCH_OFFSET,... */
int rd_patches(struct replay *r, const char *s, struct tr_patch **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s)
        return rd_bad(r, "missing patches=", NULL);
    if (!strcmp(s, "-"))
        return 0;
    uint32_t count = list_entries(s);
    struct tr_patch *pl = calloc(count, sizeof(*pl));
    if (!pl)
        return rd_bad(r, "out of memory", NULL);
    const char *p = s;
    for (uint32_t i = 0; i < count; i++) {
        char *end;
        unsigned long long ix = strtoull(p, &end, 10), ao = 0, po = 0;
        int ok = end != p && *end == '+';
        if (ok) {
            const char *q = end + 1;
            ao = strtoull(q, &end, 0);
            ok = end != q && *end == '@';
        }
        if (ok) {
            const char *q = end + 1;
            po = strtoull(q, &end, 0);
            ok = end != q && (*end == ',' || !*end) && ix <= UINT32_MAX && ao <= UINT32_MAX && po <= UINT32_MAX;
        }
        if (!ok) {
            free(pl);
            return rd_bad(r, "bad patch location (want INDEX+OFFSET@PATCH_OFFSET)", p);
        }
        pl[i].index = (uint32_t)ix;
        pl[i].allocation_offset = (uint32_t)ao;
        pl[i].patch_offset = (uint32_t)po;
        p = *end ? end + 1 : end;
    }
    *out = pl;
    *n = count;
    return 0;
}

/* The default size of a GPU access at va: the rest of the VA range. */
uint64_t rd_range_rest(struct tr *t, struct tr_addr va)
{
    struct tr_obj *o = tr_get(t, TR_VA, va.v);
    return o && o->size > va.off ? o->size - va.off : 0;
}

