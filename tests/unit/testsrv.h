/* testsrv.h — loopback servers for unit tests that need them: nginx (tests/servers/nginx.sh), the
 * RADOS Gateway (tests/servers/rgw.sh) and the fault-injecting proxy (tests/servers/faultproxy.c,
 * compiled into the scratch folder on first use).
 *
 * Owns: one scratch folder per test program and every server started in it. Cleanup is done by a
 * watchdog process forked at srv_init(): it waits for the test program to go away (normal exit,
 * failed check, crash, sanitizer abort) and then stops the servers and removes the folder, so no
 * daemon survives a test. srv_done() triggers it and waits for it.
 *
 * Servers that are not installed make srv_*_start return 0 and print "skip: ..."; the caller then
 * skips those checks (and passes). */
#ifndef BATON_TESTSRV_H
#define BATON_TESTSRV_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char srv_dir[256];
static int srv_pipe_w = -1;
static pid_t srv_watchdog = -1;
static char srv_root[1024];   /* repository root (where tests/servers lives) */

/* A free TCP port on 127.0.0.1 below the ephemeral range. */
static inline int srv_free_port(void)
{
    static unsigned seed;
    if (!seed) seed = (unsigned)getpid() ^ (unsigned)time(NULL);
    for (int i = 0; i < 500; i++) {
        seed = seed * 1103515245u + 12345u;
        int port = 20000 + (int)((seed >> 8) % 12000);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok) return port;
    }
    return -1;
}

static inline int srv_have(const char *prog)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1 || test -x /usr/sbin/%s", prog, prog);
    return system(cmd) == 0;
}

/* Fork the watchdog and create the scratch folder. Returns 0 on failure. */
static inline int srv_init(const char *tag)
{
    const char *root = getenv("BATON_ROOT");
    if (!root) root = ".";
    snprintf(srv_root, sizeof srv_root, "%s", root);
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/tests/servers/rgw.sh", srv_root);
    if (access(probe, R_OK) != 0) {
        fprintf(stderr, "testsrv: %s not found (run from the repository root or set BATON_ROOT)\n", probe);
        return 0;
    }
    snprintf(srv_dir, sizeof srv_dir, "/tmp/baton-%s-XXXXXX", tag);
    if (!mkdtemp(srv_dir)) return 0;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        /* the watchdog: wait for EOF (the test program is gone), then clean up */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        close(p[1]);
        char c;
        while (read(p[0], &c, 1) != 0 && errno == EINTR) {
        }
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "d='%s'; r='%s';"
                 " if [ -f \"$d/pids\" ]; then for p in $(cat \"$d/pids\"); do kill \"$p\" 2>/dev/null; done; fi;"
                 " [ -d \"$d/nginx\" ] && \"$r/tests/servers/nginx.sh\" stop \"$d/nginx\" >/dev/null 2>&1;"
                 " [ -d \"$d/rgw\" ] && \"$r/tests/servers/rgw.sh\" stop \"$d/rgw\" >/dev/null 2>&1;"
                 " [ -n \"${BATON_KEEP_TMP:-}\" ] || rm -rf \"$d\"",
                 srv_dir, srv_root);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    srv_pipe_w = p[1];
    srv_watchdog = pid;
    return 1;
}

/* Stop every server and remove the folder (the watchdog does it); waits for it. */
static inline void srv_done(void)
{
    if (srv_pipe_w < 0) return;
    close(srv_pipe_w);
    srv_pipe_w = -1;
    int st;
    while (waitpid(srv_watchdog, &st, 0) < 0 && errno == EINTR) {
    }
}

static inline void srv_note_pid(pid_t pid)
{
    char path[300];
    snprintf(path, sizeof path, "%s/pids", srv_dir);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%ld\n", (long)pid);
        fclose(f);
    }
}

/* Start nginx serving `root`; *port receives its port. 1 = up, 0 = skipped or failed (*failed). */
static inline int srv_nginx_start(const char *root, int *port, int *failed)
{
    *failed = 0;
    if (!srv_have("nginx")) {
        printf("skip: nginx is not installed\n");
        return 0;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        *port = srv_free_port();
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s/tests/servers/nginx.sh' start '%s/nginx' %d '%s' >/dev/null 2>'%s/nginx.err'",
                 srv_root, srv_dir, *port, root, srv_dir);
        if (system(cmd) == 0) return 1;
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cat '%s/nginx.err' >&2", srv_dir);
    if (system(cmd) != 0) fprintf(stderr, "nginx did not start\n");
    *failed = 1;
    return 0;
}

/* Start the RADOS Gateway; on success the AWS_* variables of this process point at it. */
static inline int srv_rgw_start(int mem_mb, int *port, int *failed)
{
    *failed = 0;
    const char *progs[] = {"radosgw", "radosgw-admin", "ceph-mon", "ceph-osd", "ceph", "monmaptool"};
    for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) {
        if (!srv_have(progs[i])) {
            printf("skip: %s is not installed (scripts/deps-servers.sh)\n", progs[i]);
            return 0;
        }
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        *port = srv_free_port();
        int mon = srv_free_port();
        if (mon == *port) mon = *port + 1;
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "BATON_RGW_ACCESS_KEY=batontestkey BATON_RGW_SECRET_KEY=batontestsecret0123 "
                 "BATON_RGW_MEM_MB=%d '%s/tests/servers/rgw.sh' start '%s/rgw' %d %d >/dev/null 2>'%s/rgw.err'",
                 mem_mb, srv_root, srv_dir, *port, mon, srv_dir);
        if (system(cmd) == 0) {
            char ep[64];
            snprintf(ep, sizeof ep, "http://127.0.0.1:%d", *port);
            setenv("AWS_ENDPOINT_URL", ep, 1);
            setenv("AWS_ACCESS_KEY_ID", "batontestkey", 1);
            setenv("AWS_SECRET_ACCESS_KEY", "batontestsecret0123", 1);
            setenv("AWS_REGION", "us-east-1", 1);
            unsetenv("AWS_SESSION_TOKEN");
            unsetenv("AWS_ENDPOINT_URL_S3");
            return 1;
        }
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tail -n 30 '%s/rgw.err' >&2", srv_dir);
    if (system(cmd) != 0) fprintf(stderr, "radosgw did not start\n");
    *failed = 1;
    return 0;
}

/* Build (once) and start faultproxy in front of 127.0.0.1:upstream with extra options (a
 * NULL-terminated list). Returns its pid (> 0) and its port in *port, or -1. */
static inline pid_t srv_proxy_start(int upstream, int *port, const char *const *opts)
{
    char bin[300], cmd[2048];
    snprintf(bin, sizeof bin, "%s/faultproxy", srv_dir);
    if (access(bin, X_OK) != 0) {
        snprintf(cmd, sizeof cmd, "${CC:-cc} -O2 -std=c11 -D_GNU_SOURCE '%s/tests/servers/faultproxy.c' -o '%s' -lpthread",
                 srv_root, bin);
        if (system(cmd) != 0) return -1;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return -1;
    const char *argv[40];
    int n = 0;
    char up[16], logpath[300];
    snprintf(up, sizeof up, "%d", upstream);
    snprintf(logpath, sizeof logpath, "%s/faultproxy.log", srv_dir);
    argv[n++] = bin;
    argv[n++] = "--max-seconds";
    argv[n++] = "300";
    argv[n++] = "--log";
    argv[n++] = logpath;
    for (int i = 0; opts && opts[i] && n < 34; i++) argv[n++] = opts[i];
    argv[n++] = "0";
    argv[n++] = up;
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(p[1], 1);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    srv_note_pid(pid);
    char line[64];
    size_t k = 0;
    *port = -1;
    while (k + 1 < sizeof line) {
        ssize_t r = read(p[0], line + k, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (line[k] == '\n') break;
        k++;
    }
    line[k] = 0;
    close(p[0]);
    if (sscanf(line, "listening %d", port) != 1 || *port <= 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static inline void srv_proxy_stop(pid_t pid)
{
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* Deterministic pseudo-random bytes (not crypto), so a file can be regenerated. */
static inline void srv_fill(unsigned char *p, size_t n, unsigned long long seed)
{
    unsigned long long x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

static inline int srv_write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

#endif
