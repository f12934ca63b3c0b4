/*
 * rtt_bench.c - the round trip of a make-resident of an already-resident
 * list through vidmmd, as a ratio to a plain Unix-socket echo round trip
 * of the same size measured in the same run (docs/PERFORMANCE.md).
 *
 *   rtt_bench VIDMMD [--list N] [--iters N]
 * starts VIDMMD on a scratch socket, measures, stops it (SIGTERM).
 * Prints nanoseconds per round trip (best of 5 runs) for: the echo over a
 * SOCK_SEQPACKET socketpair to a forked process; the daemon's ECHO; the
 * make-resident; and the ratio make-resident / echo.  Then the context
 * calls: a CONTEXT_FENCE query, and a virtual submission of one write
 * followed by CONTEXT_WAIT for it (GPU work and the daemon's parked-wait
 * tick included), each as a ratio to the same echo.
 */
#define _GNU_SOURCE
#include "dtest.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double echo_rtt(size_t size, int iters)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        static uint8_t b[65536];
        ssize_t r;
        while ((r = recv(sv[1], b, sizeof b, 0)) > 0)
            if (send(sv[1], b, (size_t)r, MSG_NOSIGNAL) != r)
                break;
        _exit(0);
    }
    close(sv[1]);
    static uint8_t b[65536];
    memset(b, 1, size);
    double best = 1e18;
    for (int run = 0; run < 5; run++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < iters; i++) {
            if (send(sv[0], b, size, MSG_NOSIGNAL) != (ssize_t)size || recv(sv[0], b, sizeof b, 0) <= 0)
                return -1;
        }
        double per = (double)(now_ns() - t0) / iters;
        if (per < best)
            best = per;
    }
    close(sv[0]);
    waitpid(pid, NULL, 0);
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: rtt_bench VIDMMD [--list N] [--iters N]\n");
        return 2;
    }
    uint32_t nlist = 16;
    int iters = 20000;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--list"))
            nlist = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters"))
            iters = atoi(argv[i + 1]);
    }
    if (nlist < 1 || nlist > 4096 || iters < 1)
        return 2;
    char dir[] = "/tmp/vidmmd-bench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char sock[128];
    snprintf(sock, sizeof sock, "%s/s", dir);
    struct vidmm_client *c = NULL;
    pid_t d = dt_start_daemon("rtt_bench", argv[1], sock, &c);
    if (d < 0)
        return 1;
    vidmm_handle dev = 0, q = 0;
    vidmm_handle *h = calloc(nlist, sizeof *h);
    vidmm_client_device_create(c, &dev);
    vidmm_client_paging_queue_create(c, dev, 0, &q);
    for (uint32_t i = 0; i < nlist; i++) {
        struct softgpu_alloc_desc ad = dt_desc(SOFTGPU_ALLOC_TEXTURE, 64 * 1024);
        vidmm_client_allocation_create2(c, &ad, sizeof ad, 0, &h[i]);
    }
    vidmm_status st = dt_make_resident(c, dev, q, h, nlist);
    if (st < 0) {
        fprintf(stderr, "rtt_bench: make_resident: %s\n", vidmm_status_str(st));
        return 1;
    }
    size_t req = 24 + 24 + 8 * (size_t)nlist, rep = 24 + 8 + 16;
    double echo = echo_rtt(req, iters);
    static uint8_t pay[65536];
    double decho = 1e18, mr = 1e18;
    for (int run = 0; run < 5; run++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < iters; i++)
            vidmm_client_echo(c, pay, req - 24);
        double per = (double)(now_ns() - t0) / iters;
        decho = per < decho ? per : decho;
        t0 = now_ns();
        for (int i = 0; i < iters; i++) {
            struct vidmm_make_resident_args a;
            memset(&a, 0, sizeof a);
            a.paging_queue = q;
            a.allocations = h;
            a.count = nlist;
            st = vidmm_client_make_resident(c, dev, &a);
            if (st != VIDMM_OK) {
                fprintf(stderr, "rtt_bench: make_resident of a resident list: %s\n", vidmm_status_str(st));
                return 1;
            }
        }
        per = (double)(now_ns() - t0) / iters;
        mr = per < mr ? per : mr;
    }
    /* Contexts: a 64 KiB command buffer and a target, mapped. */
    vidmm_handle ctx = 0, cmd = 0, tgt = 0;
    uint64_t cmd_va = 0, tgt_va = 0, sub = 0, done = 0, fence = 0;
    struct softgpu_alloc_desc cd = dt_desc(SOFTGPU_ALLOC_CONSTANT, 64 * 1024);
    struct vidmm_context_desc xd;
    memset(&xd, 0, sizeof xd);
    xd.node = SOFTGPU_NODE_GRAPHICS;
    void *cp = NULL;
    st = vidmm_client_allocation_create(c, &cd, sizeof cd, &cmd);
    if (st >= 0)
        st = vidmm_client_allocation_create(c, &cd, sizeof cd, &tgt);
    if (st >= 0)
        st = vidmm_client_gpuva_map(c, 0, 0, 0, cmd, 0, 64 * 1024, 0, 0, &cmd_va);
    if (st >= 0)
        st = vidmm_client_gpuva_map(c, 0, 0, 0, tgt, 0, 64 * 1024, 0, 0, &tgt_va);
    if (st >= 0)
        st = vidmm_client_context_create(c, dev, &xd, &ctx);
    if (st >= 0)
        st = vidmm_client_allocation_lock(c, cmd, &cp);
    struct softgpu_cmdbuf cb = { cp, 0, 4096 };
    if (st >= 0)
        st = softgpu_cmd_write32(&cb, tgt_va, 1);
    if (cp)
        vidmm_client_allocation_unlock(c, cmd);
    if (st < 0) {
        fprintf(stderr, "rtt_bench: context setup: %s\n", vidmm_status_str(st));
        return 1;
    }
    int sub_iters = iters / 20 ? iters / 20 : 1;
    double cf = 1e18, sw = 1e18;
    for (int run = 0; run < 5; run++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < iters; i++)
            vidmm_client_context_fence(c, ctx, &sub, &done);
        double per = (double)(now_ns() - t0) / iters;
        cf = per < cf ? per : cf;
        t0 = now_ns();
        for (int i = 0; i < sub_iters; i++) {
            st = vidmm_client_submit_virtual(c, ctx, cmd_va, cb.size, &fence);
            if (st >= 0)
                st = vidmm_client_context_wait(c, ctx, fence, UINT64_MAX);
            if (st < 0) {
                fprintf(stderr, "rtt_bench: submit and wait: %s\n", vidmm_status_str(st));
                return 1;
            }
        }
        per = (double)(now_ns() - t0) / sub_iters;
        sw = per < sw ? per : sw;
    }
    vidmm_client_disconnect(c);
    kill(d, SIGTERM);
    int ws = 0;
    waitpid(d, &ws, 0);
    rmdir(dir);
    printf("rtt_bench: list of %u allocations, %d round trips x 5 runs (best run), request %zu bytes, reply %zu\n",
           nlist, iters, req, rep);
    printf("rtt_bench: plain Unix-socket echo      %8.0f ns\n", echo);
    printf("rtt_bench: vidmmd ECHO                 %8.0f ns  (%.2fx echo)\n", decho, decho / echo);
    printf("rtt_bench: vidmmd make-resident        %8.0f ns  (%.2fx echo)\n", mr, mr / echo);
    printf("rtt_bench: vidmmd context fence query  %8.0f ns  (%.2fx echo)\n", cf, cf / echo);
    printf("rtt_bench: vidmmd submit + wait        %8.0f ns  (%.2fx echo; %d pairs per run)\n", sw, sw / echo,
           sub_iters);
    printf("rtt_bench: daemon exit %s\n", WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? "clean" : "NOT CLEAN");
    free(h);
    return 0;
}
