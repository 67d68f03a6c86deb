/*
 * faultproxy.c — a small TCP proxy on loopback that injects faults, so that
 * baton's tests can check how its HTTP / S3 clients survive a server that
 * drops connections mid-body or answers with errors.
 *
 * Owns: one listening socket on 127.0.0.1:LISTEN_PORT, one thread per accepted
 * connection, the optional log file. Standalone: libc + pthreads only.
 * Build:  cc -O2 -Wall -Wextra -Werror -std=c11 -D_GNU_SOURCE faultproxy.c -o faultproxy -lpthread
 *
 * Usage:  faultproxy [options] LISTEN_PORT UPSTREAM_PORT
 *   LISTEN_PORT 0 picks a free port. Connections are forwarded to
 *   127.0.0.1:UPSTREAM_PORT. Once listening it prints "listening PORT\n" on
 *   stdout (flushed) with the real port, so a script can wait for that line.
 *
 * Contract:
 *   - Unit of fault: one accepted connection, numbered 1, 2, 3... in accept
 *     order. By default the proxy makes each connection carry one HTTP request:
 *     it reads the request head (up to 64 KiB), removes Connection, Keep-Alive
 *     and Proxy-Connection headers and adds "Connection: close", so the server
 *     closes after its response and a keep-alive client opens a new connection
 *     for the next request: "every K-th connection" == "every K-th request".
 *     --keep-alive turns the rewriting off (bytes pass untouched; faults then
 *     count connections, not requests). Data that is not an HTTP request head
 *     within 64 KiB is passed through untouched.
 *   - --fail-every K   connection n with n % K == 0 gets
 *                      "HTTP/1.1 500 Internal Server Error", Content-Length: 0,
 *                      Connection: close, and is never forwarded upstream.
 *   - --fail-prob P    likewise, with probability P per connection.
 *   - --drop-after-bytes N  on a selected connection, relay N bytes of the
 *                      server's answer (head included) to the client, then close
 *                      the client connection (FIN; with --reset an RST) and the
 *                      upstream one. Selected: every connection, or with
 *                      --drop-every K those with n % K == 0, or with
 *                      --drop-prob P each with probability P.
 *   - --no-ranges      also removes Range and If-Range from each request head: the
 *                      server answers 200 with the whole object, as a plain
 *                      static server (python3 -m http.server) does.
 *   - --delay-ms MS    wait MS milliseconds before forwarding each connection.
 *   - --seed S         seed for the --*-prob choices. The choice for connection
 *                      n depends only on (S, n), not on thread timing.
 *   - --max-seconds T  exit(0) by itself after T seconds (default 600); it never
 *                      runs forever. --idle-seconds I (default 60) closes a
 *                      connection that moved no byte for I seconds.
 *   - --log FILE       one line per connection when it ends:
 *                      "conn=N action=forward|fail500|drop|upstream-error|..."
 *                      with bytes each way, milliseconds and the request line.
 *   - Resets and errors from either side end that connection only; SIGPIPE is
 *     ignored. Exit status: 0 at --max-seconds or on SIGTERM/SIGINT, 2 on usage
 *     errors, 1 if it cannot listen.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024)
#define BUF_SIZE (64 * 1024)

/* ------------------------------------------------------------ options */
static struct {
    int listen_port;
    int upstream_port;
    long long drop_after;   /* -1: off */
    long drop_every;        /* 0: off (all connections when drop_after is set) */
    double drop_prob;       /* <0: off */
    long fail_every;        /* 0: off */
    double fail_prob;       /* <0: off */
    long delay_ms;
    unsigned long long seed;
    double max_seconds;
    double idle_seconds;
    int keep_alive;
    int no_ranges;
    int reset;
    const char *log_path;
} opt = {
    .listen_port = -1, .upstream_port = -1, .drop_after = -1, .drop_prob = -1.0,
    .fail_prob = -1.0, .seed = 1, .max_seconds = 600.0, .idle_seconds = 60.0,
};

static FILE *log_file;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_ulong conn_counter;
static volatile sig_atomic_t stop_flag;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: faultproxy [options] LISTEN_PORT UPSTREAM_PORT\n"
            "  --drop-after-bytes N  close the client after N bytes of the answer\n"
            "  --drop-every K        drop only every K-th connection\n"
            "  --drop-prob P         drop each connection with probability P\n"
            "  --reset               drop with an RST instead of a FIN\n"
            "  --fail-every K        answer every K-th connection with HTTP 500\n"
            "  --fail-prob P         answer with HTTP 500 with probability P\n"
            "  --delay-ms MS         delay each connection by MS ms\n"
            "  --seed S              seed for the probabilities (default 1)\n"
            "  --max-seconds T       exit after T seconds (default 600)\n"
            "  --idle-seconds I      close connections idle for I s (default 60)\n"
            "  --keep-alive          do not force 'Connection: close'\n"
            "  --no-ranges           remove Range and If-Range (answers are 200, whole)\n"
            "  --log FILE            one line per connection\n");
    exit(2);
}

static long long parse_ll(const char *name, const char *s, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "faultproxy: %s: bad value '%s' (want %lld..%lld)\n", name, s, lo, hi);
        exit(2);
    }
    return v;
}

static double parse_d(const char *name, const char *s, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "faultproxy: %s: bad value '%s' (want %g..%g)\n", name, s, lo, hi);
        exit(2);
    }
    return v;
}

static void parse_args(int argc, char **argv)
{
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-') {
            const char *v = NULL;
            int has_val = strcmp(a, "--keep-alive") != 0 && strcmp(a, "--reset") != 0 &&
                          strcmp(a, "--no-ranges") != 0 &&
                          strcmp(a, "--help") != 0;
            if (has_val) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "faultproxy: %s needs a value\n", a);
                    usage();
                }
                v = argv[++i];
            }
            if (!strcmp(a, "--drop-after-bytes")) opt.drop_after = parse_ll(a, v, 0, (long long)1 << 60);
            else if (!strcmp(a, "--drop-every")) opt.drop_every = (long)parse_ll(a, v, 1, 1000000000);
            else if (!strcmp(a, "--drop-prob")) opt.drop_prob = parse_d(a, v, 0.0, 1.0);
            else if (!strcmp(a, "--fail-every")) opt.fail_every = (long)parse_ll(a, v, 1, 1000000000);
            else if (!strcmp(a, "--fail-prob")) opt.fail_prob = parse_d(a, v, 0.0, 1.0);
            else if (!strcmp(a, "--delay-ms")) opt.delay_ms = (long)parse_ll(a, v, 0, 3600000);
            else if (!strcmp(a, "--seed")) opt.seed = (unsigned long long)parse_ll(a, v, 0, INT64_MAX);
            else if (!strcmp(a, "--max-seconds")) opt.max_seconds = parse_d(a, v, 0.001, 86400.0);
            else if (!strcmp(a, "--idle-seconds")) opt.idle_seconds = parse_d(a, v, 0.001, 86400.0);
            else if (!strcmp(a, "--log")) opt.log_path = v;
            else if (!strcmp(a, "--keep-alive")) opt.keep_alive = 1;
            else if (!strcmp(a, "--reset")) opt.reset = 1;
            else if (!strcmp(a, "--no-ranges")) opt.no_ranges = 1;
            else {
                if (strcmp(a, "--help") != 0) fprintf(stderr, "faultproxy: unknown option %s\n", a);
                usage();
            }
        } else if (npos == 0) {
            opt.listen_port = (int)parse_ll("LISTEN_PORT", a, 0, 65535);
            npos++;
        } else if (npos == 1) {
            opt.upstream_port = (int)parse_ll("UPSTREAM_PORT", a, 1, 65535);
            npos++;
        } else {
            usage();
        }
    }
    if (npos != 2) usage();
    if (opt.no_ranges && opt.keep_alive) {
        fprintf(stderr, "faultproxy: --no-ranges rewrites request heads, which --keep-alive leaves alone\n");
        exit(2);
    }
    if ((opt.drop_every || opt.drop_prob >= 0) && opt.drop_after < 0) {
        fprintf(stderr, "faultproxy: --drop-every/--drop-prob need --drop-after-bytes\n");
        exit(2);
    }
}

/* splitmix64: the random choice for connection n depends on (seed, n, salt) only. */
static double unit_random(unsigned long long n, unsigned long long salt)
{
    unsigned long long z = opt.seed + 0x9e3779b97f4a7c15ULL * (n * 4 + salt + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0; /* [0,1) */
}

/* ------------------------------------------------------------ I/O helpers */
/* Send all of buf; 0 on success, -1 on error (reset, closed). */
static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                if (poll(&p, 1, (int)(opt.idle_seconds * 1000)) <= 0) return -1;
                continue;
            }
            return -1;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Wait until fd is readable; 1 ready, 0 timeout, -1 error. */
static int wait_readable(int fd, double seconds)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        int r = poll(&p, 1, (int)(seconds * 1000));
        if (r < 0 && errno == EINTR) continue;
        return r < 0 ? -1 : r;
    }
}

static int connect_upstream(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opt.upstream_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Find the end of an HTTP head ("\r\n\r\n"); returns its length or 0. */
static size_t head_length(const char *buf, size_t len)
{
    for (size_t i = 3; i < len; i++)
        if (buf[i - 3] == '\r' && buf[i - 2] == '\n' && buf[i - 1] == '\r' && buf[i] == '\n')
            return i + 1;
    return 0;
}

/* Does the buffer start like an HTTP request line ("TOKEN SP")? */
static int looks_like_http(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && i < 16 && buf[i] >= 'A' && buf[i] <= 'Z') i++;
    return i > 0 && i < len && buf[i] == ' ';
}

/* Rewrite a request head: drop Connection / Keep-Alive / Proxy-Connection
 * (and Range / If-Range with --no-ranges),
 * add "Connection: close". out must hold hlen + 32 bytes. Returns new length. */
static size_t rewrite_head(const char *head, size_t hlen, char *out)
{
    size_t o = 0, i = 0;
    int first = 1;
    while (i < hlen) {
        size_t j = i;
        while (j + 1 < hlen && !(head[j] == '\r' && head[j + 1] == '\n')) j++;
        size_t linelen = j + 2 - i; /* with CRLF */
        if (j + 1 >= hlen) linelen = hlen - i;
        if (linelen == 2 && !first) break; /* the empty line ending the head */
        int skip = 0;
        if (!first) {
            static const char *const drop[] = {"connection:", "keep-alive:", "proxy-connection:", "range:",
                                               "if-range:"};
            size_t ndrop = opt.no_ranges ? 5 : 3;
            for (size_t d = 0; d < ndrop; d++) {
                size_t dl = strlen(drop[d]);
                if (linelen >= dl && strncasecmp(head + i, drop[d], dl) == 0) skip = 1;
            }
        }
        if (!skip) {
            memcpy(out + o, head + i, linelen);
            o += linelen;
        }
        first = 0;
        i += linelen;
    }
    static const char cc[] = "Connection: close\r\n\r\n";
    memcpy(out + o, cc, sizeof cc - 1);
    return o + sizeof cc - 1;
}

/* ------------------------------------------------------------ logging */
static void log_line(const char *fmt, ...)
{
    if (!log_file) return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&log_mu);
    vfprintf(log_file, fmt, ap);
    fputc('\n', log_file);
    fflush(log_file);
    pthread_mutex_unlock(&log_mu);
    va_end(ap);
}

/* Copy the request line (printable ASCII, at most 160 chars) into out. */
static void request_line(const char *buf, size_t len, char *out, size_t outsz)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < outsz && k < 160; i++) {
        char c = buf[i];
        if (c == '\r' || c == '\n') break;
        out[k++] = (c >= 32 && c < 127 && c != '"') ? c : '?';
    }
    out[k] = 0;
}

/* ------------------------------------------------------------ one connection */
struct conn {
    int cfd;
    unsigned long n;
};

static void close_client(int cfd, int reset)
{
    if (reset) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(cfd);
}

/* After answering a client ourselves: send FIN, read (and discard) what it
 * still sends for up to 1 s, so that closing does not turn into an RST that
 * could destroy our answer before the client has read it. */
static void linger_close(int cfd)
{
    char tmp[4096];
    shutdown(cfd, SHUT_WR);
    double end = now_s() + 1.0;
    while (now_s() < end) {
        if (wait_readable(cfd, end - now_s()) <= 0) break;
        ssize_t r = recv(cfd, tmp, sizeof tmp, 0);
        if (r <= 0) break;
    }
    close(cfd);
}

static void *conn_main(void *arg)
{
    struct conn c = *(struct conn *)arg;
    free(arg);
    double t0 = now_s();
    char *buf = malloc(BUF_SIZE);
    char *head = malloc(HEAD_MAX);
    char *rew = malloc(HEAD_MAX + 64);
    char reqline[200] = "-";
    const char *action = "forward";
    long long up_bytes = 0, down_bytes = 0;
    int ufd = -1;
    size_t hlen = 0, have = 0;

    if (!buf || !head || !rew) {
        action = "oom";
        close(c.cfd);
        goto out;
    }

    int fail = (opt.fail_every && c.n % (unsigned long)opt.fail_every == 0) ||
               (opt.fail_prob >= 0 && unit_random(c.n, 0) < opt.fail_prob);
    int drop = 0;
    if (opt.drop_after >= 0) {
        if (opt.drop_every) drop = c.n % (unsigned long)opt.drop_every == 0;
        else if (opt.drop_prob >= 0) drop = unit_random(c.n, 1) < opt.drop_prob;
        else drop = 1;
    }

    /* Read the request head unless the bytes are to pass untouched. */
    if (fail || !opt.keep_alive) {
        while (have < HEAD_MAX) {
            int r = wait_readable(c.cfd, opt.idle_seconds);
            if (r <= 0) break;
            ssize_t got = recv(c.cfd, head + have, HEAD_MAX - have, 0);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            have += (size_t)got;
            if ((hlen = head_length(head, have)) > 0) break;
            if (!looks_like_http(head, have) && have >= 17) break;
        }
        request_line(head, have, reqline, sizeof reqline);
        up_bytes = (long long)have;
        if (have == 0) {
            action = "client-closed";
            close(c.cfd);
            goto out;
        }
    }

    if (fail) {
        static const char resp[] = "HTTP/1.1 500 Internal Server Error\r\n"
                                   "Content-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";
        action = "fail500";
        if (send_all(c.cfd, resp, sizeof resp - 1) == 0) down_bytes = (long long)sizeof resp - 1;
        linger_close(c.cfd);
        goto out;
    }

    if (opt.delay_ms > 0) {
        struct timespec ts = {.tv_sec = opt.delay_ms / 1000, .tv_nsec = (opt.delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
    }

    ufd = connect_upstream();
    if (ufd < 0) {
        static const char resp[] = "HTTP/1.1 502 Bad Gateway\r\n"
                                   "Content-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";
        action = "upstream-error";
        send_all(c.cfd, resp, sizeof resp - 1);
        linger_close(c.cfd);
        goto out;
    }

    /* Forward what was read of the request: rewritten head, then the rest. */
    if (have > 0) {
        int ok;
        if (hlen > 0 && looks_like_http(head, have)) {
            size_t rl = rewrite_head(head, hlen, rew);
            ok = send_all(ufd, rew, rl) == 0 && send_all(ufd, head + hlen, have - hlen) == 0;
        } else {
            ok = send_all(ufd, head, have) == 0; /* not HTTP: untouched */
        }
        if (!ok) {
            action = "upstream-error";
            close(c.cfd);
            goto out;
        }
    }

    /* Relay both ways until both sides are done (or a drop / error / idle). */
    struct pollfd p[2];
    int cli_open = 1, up_open = 1; /* directions: client->up, up->client */
    action = "forward";
    while (cli_open || up_open) {
        int np = 0, ci = -1, ui = -1;
        if (cli_open) { ci = np; p[np].fd = c.cfd; p[np].events = POLLIN; p[np].revents = 0; np++; }
        if (up_open) { ui = np; p[np].fd = ufd; p[np].events = POLLIN; p[np].revents = 0; np++; }
        int r = poll(p, (nfds_t)np, (int)(opt.idle_seconds * 1000));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            action = r == 0 ? "idle-timeout" : "poll-error";
            break;
        }
        if (ci >= 0 && p[ci].revents) {
            ssize_t got = recv(c.cfd, buf, BUF_SIZE, 0);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) { action = "client-reset"; break; }
            if (got == 0) {
                cli_open = 0;
                shutdown(ufd, SHUT_WR);
            } else if (send_all(ufd, buf, (size_t)got) < 0) {
                action = "upstream-reset";
                break;
            } else {
                up_bytes += got;
            }
        }
        if (ui >= 0 && p[ui].revents) {
            ssize_t got = recv(ufd, buf, BUF_SIZE, 0);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) { action = "upstream-reset"; break; }
            if (got == 0) {
                up_open = 0;
                shutdown(c.cfd, SHUT_WR);
                /* The answer is complete: nothing more to wait for. */
                if (!opt.keep_alive) break;
                continue;
            }
            size_t n = (size_t)got;
            int dropping = 0;
            if (drop && down_bytes + (long long)n >= opt.drop_after) {
                n = (size_t)(opt.drop_after - down_bytes);
                dropping = 1;
            }
            if (n > 0 && send_all(c.cfd, buf, n) < 0) {
                action = "client-reset";
                break;
            }
            down_bytes += (long long)n;
            if (dropping) {
                action = "drop";
                break;
            }
        }
    }
    close_client(c.cfd, opt.reset && strcmp(action, "drop") == 0);
    close(ufd);

out:
    log_line("conn=%lu action=%s up_bytes=%lld down_bytes=%lld ms=%.1f request=\"%s\"", c.n, action,
             up_bytes, down_bytes, (now_s() - t0) * 1000.0, reqline);
    free(buf);
    free(head);
    free(rew);
    return NULL;
}

/* ------------------------------------------------------------ main */
static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* Backstop: even if the accept loop were stuck, SIGALRM ends the process. */
    alarm((unsigned)opt.max_seconds + 5);

    if (opt.log_path) {
        log_file = fopen(opt.log_path, "a");
        if (!log_file) {
            fprintf(stderr, "faultproxy: cannot open log %s: %s\n", opt.log_path, strerror(errno));
            return 1;
        }
    }

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0) {
        perror("faultproxy: socket");
        return 1;
    }
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opt.listen_port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 128) < 0) {
        fprintf(stderr, "faultproxy: cannot listen on 127.0.0.1:%d: %s\n", opt.listen_port, strerror(errno));
        return 1;
    }
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);
    int port = ntohs(addr.sin_port);
    log_line("start listen=%d upstream=%d drop_after=%lld drop_every=%ld drop_prob=%g fail_every=%ld "
             "fail_prob=%g delay_ms=%ld seed=%llu keep_alive=%d reset=%d max_seconds=%g",
             port, opt.upstream_port, opt.drop_after, opt.drop_every, opt.drop_prob, opt.fail_every,
             opt.fail_prob, opt.delay_ms, opt.seed, opt.keep_alive, opt.reset, opt.max_seconds);
    printf("listening %d\n", port);
    fflush(stdout);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);

    double deadline = now_s() + opt.max_seconds;
    const char *why = "max-seconds";
    while (!stop_flag) {
        double left = deadline - now_s();
        if (left <= 0) break;
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int r = poll(&p, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
        if (r <= 0) continue; /* timeout or EINTR: re-check the flags */
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0) continue; /* ECONNABORTED, EMFILE...: keep serving */
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = malloc(sizeof *c);
        if (!c) {
            close(cfd);
            continue;
        }
        c->cfd = cfd;
        c->n = atomic_fetch_add(&conn_counter, 1) + 1;
        pthread_t th;
        if (pthread_create(&th, &attr, conn_main, c) != 0) {
            close(cfd);
            free(c);
        }
    }
    if (stop_flag) why = "signal";
    close(lfd);
    log_line("exit reason=%s connections=%lu", why, (unsigned long)atomic_load(&conn_counter));
    /* Connection threads may still be running: take the log lock so no line is
     * half-written, flush, and leave without running exit handlers under them. */
    pthread_mutex_lock(&log_mu);
    if (log_file) fflush(log_file);
    fflush(stdout);
    _exit(0);
}
