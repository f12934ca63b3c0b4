/*
 * replay_main.c - a plain main() for the fuzz harnesses, so their corpora
 * replay with any C compiler and without libFuzzer (make test, the
 * sanitizer build, valgrind).  Arguments are files or directories (every
 * regular file inside, not recursive); each is read whole and handed to
 * LLVMFuzzerTestOneInput once.  A harness that finds a violation aborts,
 * so reaching the end means every input passed.  Prints
 * "fuzz: N passed, 0 failed" (the line tests/run.sh sums), with -q only that.
 */
#include "fuzz.h"

#include <dirent.h>
#include <sys/stat.h>

static unsigned long replayed;
static int verbose = 1;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        return -1;
    }
    if (verbose > 1)
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    replayed++;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) {
            rc = -1;
            break;
        }
        snprintf(names[n], len, "%s/%s", path, e->d_name);
        n++;
    }
    closedir(d);
    if (names)
        qsort(names, n, sizeof *names, cmp_names);   /* a stable order: reproducible runs */
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            rc = replay_file(names[i]);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0) {
            verbose = 0;
            continue;
        }
        if (strcmp(argv[i], "-v") == 0) {
            verbose = 2;
            continue;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            bad++;
        } else if (S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i])) {
            bad++;
        }
    }
    printf("fuzz: %lu passed, %d failed\n", replayed, bad);
    return bad ? 1 : 0;
}
