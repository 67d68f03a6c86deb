/* fleet_proc.c — worker processes for the local fleet: spawning a command under a status-writing
 * shim in its own process group, recognising a process across a supervisor restart (pid plus
 * /proc start time), reaping, killing a whole group, and reading what a worker leaves behind (the
 * shim's status file, the trainer's progress file, checkpoint folder names).
 *
 * After fork the child only calls async-signal-safe functions: everything it needs (argv, envp,
 * paths) is prepared before the fork. */
#include "baton/ckpt.h"
#include "fleet_parts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

uint64_t fleet_proc_start_time(int pid)
{
    if (pid <= 0) return 0;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')');   /* the command name may hold spaces and parentheses */
    if (!p || p[1] != ' ') return 0;
    p += 2;                        /* field 3: the state; a zombie is as good as gone */
    if (*p == 'Z' || *p == 'X') return 0;
    for (int i = 0; i < 19; i++) { /* on to field 22: starttime */
        p = strchr(p, ' ');
        if (!p) return 0;
        p++;
    }
    return strtoull(p, NULL, 10);
}

int fleet_proc_same(int pid, uint64_t start)
{
    return pid > 0 && start && fleet_proc_start_time(pid) == start;
}

int fleet_worker_reap(int pid, int *code)
{
    int st;
    pid_t r;
    do r = waitpid(pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r != pid) return 0;
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
    return 1;
}

void fleet_worker_kill(int pid)
{
    if (pid > 1) kill(-pid, SIGKILL);
}

int fleet_worker_read_status(const char *status_path, int *code, double *mtime)
{
    char buf[32];
    int fd = open(status_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int ok = n > 0 && fstat(fd, &st) == 0;
    close(fd);
    if (!ok) return 0;
    buf[n] = 0;
    char *end;
    long v = strtol(buf, &end, 10);
    if (end == buf || v < 0 || v > 255) return 0;
    *code = (int)v;
    if (mtime) *mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec * 1e-9;
    return 1;
}

int64_t fleet_progress_file_read(const char *path)
{
    char buf[32];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf || v < 0) return -1;
    return (int64_t)v;
}

int64_t fleet_ckpt_newest_name(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int64_t best = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t step;
        if (baton_ckpt_parse_name(e->d_name, &step) && (int64_t)step > best) best = (int64_t)step;
    }
    closedir(d);
    return best;
}

/* Write "CODE\n" to path via path.tmp + rename; async-signal-safe. */
static void shim_write_status(const char *path, const char *tmp, int code)
{
    char buf[8];
    int n = 0;
    if (code >= 100) buf[n++] = (char)('0' + code / 100);
    if (code >= 10) buf[n++] = (char)('0' + code / 10 % 10);
    buf[n++] = (char)('0' + code % 10);
    buf[n++] = '\n';
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ssize_t w = write(fd, buf, (size_t)n);
    (void)w;
    fsync(fd);
    close(fd);
    rename(tmp, path);
}

void fleet_reset_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP) sigaction(s, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static void close_from(int lowfd, int keep1, int keep2)
{
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (int fd = lowfd; fd < max; fd++)
        if (fd != keep1 && fd != keep2) close(fd);
}

int fleet_worker_spawn(const baton_worker_spec *w, int *pid_out, uint64_t *start, baton_err *err)
{
    *pid_out = 0;
    *start = 0;
    /* the environment: ours, with w->env entries replacing same-named ones */
    size_t nenv = 0;
    while (environ[nenv]) nenv++;
    char **envp = calloc(nenv + w->nenv + 1, sizeof *envp);
    char tmp_status[4200];
    if (!envp) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int replaced = 0;
        for (size_t j = 0; j < w->nenv && !replaced; j++)
            replaced = !strncmp(w->env[j], environ[i], nl) && w->env[j][nl] == '=';
        if (!replaced) envp[k++] = environ[i];
    }
    for (size_t j = 0; j < w->nenv; j++) envp[k++] = (char *)w->env[j];
    envp[k] = NULL;
    snprintf(tmp_status, sizeof tmp_status, "%s.tmp", w->status_path);
    unlink(w->status_path);

    int logfd = open(w->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) {
        int rc = baton_err_set(err, BATON_ERR_IO, "%s: cannot open the worker log: %s", w->log_path, strerror(errno));
        free(envp);
        return rc;
    }
    int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    char *argv[] = {"sh", "-c", (char *)w->command, NULL};
    pid_t pid = fork();
    if (pid < 0) {
        int rc = baton_err_set(err, BATON_ERR_IO, "fork: %s", strerror(errno));
        close(logfd);
        if (nullfd >= 0) close(nullfd);
        free(envp);
        return rc;
    }
    if (pid == 0) {
        /* the shim: own process group, no inherited descriptors but the log, immune to the
         * polite signals (the command gets them; the shim must outlive it to write the status) */
        setpgid(0, 0);
        close_from(3, logfd, nullfd);
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(SIGTERM, &ign, NULL);
        sigaction(SIGINT, &ign, NULL);
        sigaction(SIGHUP, &ign, NULL);
        sigaction(SIGPIPE, &ign, NULL);
        pid_t c = fork();
        if (c == 0) {
            fleet_reset_signals();
            if (chdir(w->cwd) != 0) _exit(126);
            dup2(nullfd >= 0 ? nullfd : logfd, 0);
            dup2(logfd, 1);
            dup2(logfd, 2);
            execve("/bin/sh", argv, envp);
            _exit(127);
        }
        int code = 127;
        if (c > 0) {
            int st;
            pid_t r;
            do r = waitpid(c, &st, 0);
            while (r < 0 && errno == EINTR);
            code = r != c ? 255 : WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
        }
        shim_write_status(w->status_path, tmp_status, code);
        _exit(code);
    }
    setpgid(pid, pid);   /* also from here, so the group exists before we might signal it */
    close(logfd);
    if (nullfd >= 0) close(nullfd);
    free(envp);
    *pid_out = (int)pid;
    for (int i = 0; i < 100 && !*start; i++) {   /* /proc entry appears at once; be patient anyway */
        *start = fleet_proc_start_time((int)pid);
        if (!*start) usleep(1000);
    }
    return BATON_OK;
}
