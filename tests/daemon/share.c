/*
 * share.c - a shared allocation across two client processes of one
 * vidmmd (docs/DAEMON.md "Shared allocations").
 *
 *   share SOCKET
 *
 * Why its own program: the share crosses processes, so the test is two
 * of them (fork) with a socketpair between them, as two applications
 * passing a descriptor would be.  The creator makes a shared allocation,
 * fills it, exports it and sends the descriptor over the socketpair; the
 * opener opens it on its own connection, reads the creator's bytes and
 * writes its own, which the creator reads back.  Then the creator goes -
 * it exits in the first round and is SIGKILLed in the second - and the
 * opener still reads intact bytes, a third connection can still open it,
 * and once the last holder lets go the allocation is gone (the adapter's
 * live allocations are back where they were, the descriptor opens
 * nothing).  Refusals on the way: a descriptor of a file the client made
 * itself (even with the same bytes), of /dev/null, a second open by a
 * holder, an export of an allocation not created shareable.
 */
#define _GNU_SOURCE   /* memfd_create */
#include "dtest.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIZE (256u << 10)

/* One byte and, optionally, one descriptor over the socketpair. */
static int send_msg(int sock, char tag, int fd)
{
    return vmmd_send(sock, &tag, 1, fd, 0) == 1 ? 0 : -1;
}

static char recv_msg(int sock, int *fd)
{
    char tag = 0;
    long r = vmmd_recv(sock, &tag, 1, 0, fd, NULL, NULL);
    return r == 1 ? tag : 0;
}

/* The creator (a child): create, fill (seed 1), export, send the
 * descriptor; wait for the opener's bytes (seed 2) and say whether it
 * sees them; then exit, or wait to be killed. */
static int creator(const char *sock, int link, int wait_for_kill)
{
    struct vidmm_client *c = NULL;
    if (vidmm_client_connect(sock, &c) < 0)
        return 10;
    struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, SIZE);
    vidmm_handle h = 0, plain = 0;
    if (vidmm_client_allocation_create2(c, &d, sizeof d, VIDMM_CREATE_SHARED | VIDMM_CREATE_RESIDENT, &h) < 0)
        return 11;
    if (dt_fill(c, h, 1, 0, SIZE) < 0)
        return 12;
    /* Not shareable: refused, no descriptor. */
    int fd = -1;
    if (vidmm_client_allocation_create2(c, &d, sizeof d, 0, &plain) < 0 ||
        vidmm_client_share_export(c, plain, &fd) != VIDMM_E_NOT_SUPPORTED || fd != -1)
        return 13;
    if (vidmm_client_share_export(c, h, &fd) < 0 || fd < 0)
        return 14;
    if (send_msg(link, 'F', fd) < 0)
        return 15;
    close(fd);   /* the descriptor in flight keeps the export alive; the handle holds the allocation */
    if (recv_msg(link, NULL) != 'W')
        return 16;
    char verdict = dt_verify(c, h, 2, 0, SIZE) == 1 ? 'Y' : 'N';
    if (send_msg(link, verdict, -1) < 0)
        return 17;
    if (wait_for_kill)
        for (;;)
            pause();
    /* Exits without destroying anything: the daemon's teardown lets go. */
    return 0;
}

static uint64_t live_allocations(struct vidmm_client *c)
{
    uint64_t live = 0;
    vidmm_client_debug_check(c, NULL, NULL, &live);
    return live;
}

/* Holders of h as the daemon sees them once it has noticed the creator's
 * connection is gone (its teardown runs when its event loop reads the
 * close; the poll is bounded, the test asserts the count, not a time). */
static uint32_t holders_settled(struct vidmm_client *c, vidmm_handle h, uint32_t want)
{
    struct vidmm_client_share_info si;
    memset(&si, 0, sizeof si);
    for (int i = 0; i < 500; i++) {
        if (vidmm_client_share_query(c, h, &si) < 0)
            return 0;
        if (si.holders == want)
            break;
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    }
    return si.holders;
}

static void round_trip(const char *sock, int kill_it)
{
    struct vidmm_client *b = NULL;
    CHECK_ST(vidmm_client_connect(sock, &b), VIDMM_OK);
    if (!b)
        return;
    uint64_t live0 = live_allocations(b);
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) {
        CHECK(0, "socketpair: %s", strerror(errno));
        vidmm_client_disconnect(b);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(sp[0]);
        _exit(creator(sock, sp[1], kill_it));
    }
    close(sp[1]);
    int fd = -1;
    CHECK(recv_msg(sp[0], &fd) == 'F' && fd >= 0, "no descriptor from the creator");
    vidmm_handle h = 0;
    CHECK_ST(vidmm_client_share_open(b, fd, &h), VIDMM_OK);
    CHECK(dt_verify(b, h, 1, 0, SIZE) == 1, "the opener does not read the creator's bytes");
    struct vidmm_client_share_info si;
    memset(&si, 0, sizeof si);
    CHECK_ST(vidmm_client_share_query(b, h, &si), VIDMM_OK);
    CHECK(si.holders == 2 && si.creator_holds == 1 && si.is_creator == 0, "holders %u creator %u is_creator %u",
          si.holders, si.creator_holds, si.is_creator);
    /* A holder opens again: refused, its handle stays the one. */
    vidmm_handle again = 0;
    CHECK_ST(vidmm_client_share_open(b, fd, &again), VIDMM_E_STATE);
    CHECK(again == 0, "a handle came back from a refused open");
    /* The opener's own handle in its own calls: GPU VA, residency on a
     * device of its own, queries. */
    {
        vidmm_handle dev = 0, q = 0;
        uint64_t va = 0;
        CHECK_ST(vidmm_client_device_create(b, &dev), VIDMM_OK);
        CHECK_ST(vidmm_client_paging_queue_create(b, dev, 0, &q), VIDMM_OK);
        CHECK_ST(dt_make_resident(b, dev, q, &h, 1), VIDMM_OK);
        CHECK_ST(vidmm_client_gpuva_map(b, 0, 0, 0, h, 0, SIZE, 0, 0, &va), VIDMM_OK);
        CHECK(va != 0, "no VA");
        struct vidmm_client_allocation_info ai;
        memset(&ai, 0, sizeof ai);
        CHECK_ST(vidmm_client_allocation_query(b, h, &ai), VIDMM_OK);
        CHECK(ai.size >= SIZE && ai.resident, "size %llu resident %u", (unsigned long long)ai.size, ai.resident);
        CHECK_ST(vidmm_client_gpuva_free(b, va, SIZE), VIDMM_OK);
        CHECK_ST(vidmm_client_device_destroy(b, dev), VIDMM_OK);   /* its references go with it */
    }
    CHECK_ST(dt_fill(b, h, 2, 0, SIZE), VIDMM_OK);
    CHECK(send_msg(sp[0], 'W', -1) == 0, "link");
    CHECK(recv_msg(sp[0], NULL) == 'Y', "the creator does not read the opener's bytes");
    /* The creator goes. */
    if (kill_it)
        kill(pid, SIGKILL);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (kill_it)
        CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "creator status 0x%x", ws);
    else
        CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "creator status 0x%x", ws);
    close(sp[0]);
    CHECK(holders_settled(b, h, 1) == 1, "the creator's hold outlived its connection");
    CHECK_ST(vidmm_client_share_query(b, h, &si), VIDMM_OK);
    CHECK(si.creator_holds == 0, "creator_holds %u", si.creator_holds);
    CHECK(dt_verify(b, h, 2, 0, SIZE) == 1, "bytes changed when the creator went");
    /* A third process (another connection) still opens it by the descriptor. */
    struct vidmm_client *c3 = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c3), VIDMM_OK);
    if (c3) {
        vidmm_handle h3 = 0;
        CHECK_ST(vidmm_client_share_open(c3, fd, &h3), VIDMM_OK);
        CHECK(h3 != 0 && dt_verify(c3, h3, 2, 0, SIZE) == 1, "third connection's bytes");
        CHECK_ST(vidmm_client_allocation_destroy(c3, h3), VIDMM_OK);
        CHECK_ST(vidmm_client_allocation_destroy(c3, h3), VIDMM_E_INVALID_HANDLE);
        vidmm_client_disconnect(c3);
    }
    /* Forgeries: a file of the client's own with the same size, and
     * /dev/null; neither names a share. */
    int own = memfd_create("forged", MFD_CLOEXEC);
    uint8_t bytes[16];
    CHECK(own >= 0 && pread(fd, bytes, sizeof bytes, 0) == (ssize_t)sizeof bytes &&
              pwrite(own, bytes, sizeof bytes, 0) == (ssize_t)sizeof bytes,
          "forged file");
    vidmm_handle forged = 0;
    CHECK_ST(vidmm_client_share_open(b, own, &forged), VIDMM_E_INVALID_HANDLE);
    int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK_ST(vidmm_client_share_open(b, dn, &forged), VIDMM_E_INVALID_HANDLE);
    CHECK(forged == 0, "a forged descriptor opened a share");
    close(own);
    close(dn);
    /* Bad arguments: refused, nothing changed. */
    struct vidmm_client_share_info before, after;
    CHECK_ST(vidmm_client_share_query(b, h, &before), VIDMM_OK);
    int efd = 123;
    CHECK_ST(vidmm_client_share_export(b, h, NULL), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_share_export(b, 0, &efd), VIDMM_E_INVALID_HANDLE);
    CHECK(efd == 123, "a refused export wrote a descriptor");
    CHECK_ST(vidmm_client_share_open(b, -1, &forged), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_share_open(b, fd, NULL), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_share_query(b, h, NULL), VIDMM_E_INVALID_ARG);
    CHECK(forged == 0, "a refused open named a handle");
    CHECK_ST(vidmm_client_share_query(b, h, &after), VIDMM_OK);
    CHECK(after.holders == before.holders && after.is_creator == before.is_creator,
          "the holders changed after refused calls (%u, before %u)", after.holders, before.holders);
    /* The export file is sealed: its holder cannot write it. */
    CHECK(pwrite(fd, "x", 1, 0) < 0, "the export file took a write");
    /* The last holder lets go: nothing is left. */
    CHECK_ST(vidmm_client_allocation_destroy(b, h), VIDMM_OK);
    CHECK(live_allocations(b) == live0, "live allocations %llu, before %llu", (unsigned long long)live_allocations(b),
          (unsigned long long)live0);
    vidmm_handle late = 0;
    CHECK_ST(vidmm_client_share_open(b, fd, &late), VIDMM_E_INVALID_HANDLE);
    uint32_t violations = 1;
    CHECK_ST(vidmm_client_debug_check(b, &violations, NULL, NULL), VIDMM_OK);
    CHECK(violations == 0, "adapter check: %u violations", violations);
    close(fd);
    vidmm_client_disconnect(b);
}

int main(int argc, char **argv)
{
    dt_name = "daemon share";
    if (argc < 2) {
        fprintf(stderr, "usage: share SOCKET\n");
        return 2;
    }
    round_trip(argv[1], 0);   /* the creator exits */
    round_trip(argv[1], 1);   /* the creator is SIGKILLed */
    return dt_summary();
}
