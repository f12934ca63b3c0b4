/*
 * listen_exec.c - what a service manager does for a socket-activated
 * vidmmd, without the service manager (docs/DAEMON.md "Socket
 * activation"): create and bind the listening socket, put it at
 * descriptor 3, set LISTEN_FDS=1 and LISTEN_PID to our own pid (which
 * exec keeps), and exec the daemon.  tests/daemon/run.sh uses it.
 *
 *   listen_exec SOCKET PROGRAM [ARGS...]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: listen_exec SOCKET PROGRAM [ARGS...]\n");
        return 2;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(argv[1]) >= sizeof sa.sun_path) {
        fprintf(stderr, "listen_exec: socket path too long\n");
        return 2;
    }
    strcpy(sa.sun_path, argv[1]);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);   /* no CLOEXEC: it must survive exec */
    unlink(argv[1]);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0) {
        perror("listen_exec: socket");
        return 1;
    }
    /* A service manager would set the socket unit's SocketMode=; the
     * daemon may run as another user (--user) in the test. */
    chmod(argv[1], 0666);
    if (fd != 3) {
        if (dup2(fd, 3) != 3) {
            perror("listen_exec: dup2");
            return 1;
        }
        close(fd);
    }
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    setenv("LISTEN_FDS", "1", 1);
    setenv("LISTEN_PID", pid, 1);
    setenv("LISTEN_FDNAMES", "vidmmd.socket", 1);
    execv(argv[2], argv + 2);
    perror("listen_exec: exec");
    return 127;
}
