/* reward_c.c — a user's reward function in C: compiled with the system compiler into a private
 * temporary folder (mkdtemp), loaded with dlopen, the folder removed at once (the mapping stays).
 *
 * The compiler is `cc` (or $BATON_CC), run as
 *     cc -std=c11 -O2 -Wall -Wextra -fPIC -shared -I TMP/include -o TMP/reward.so FILE -lm
 * with baton/race_reward.h written under TMP/include (the text below is the header itself; a unit
 * test keeps the two equal). Its messages are returned in the error when it fails and logged as
 * warnings when it succeeds with some. The file must define reward_function; the header declares
 * it, so a definition with another signature does not compile. */
#include "race_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char race_reward_header[] =
    "/* race_reward.h — the header for a user's C reward function (`baton race ... --reward reward.c`).\n"
    " *\n"
    " * A reward file defines\n"
    " *\n"
    " *     #include \"baton/race_reward.h\"\n"
    " *     double reward_function(const struct baton_race_params *p) { ... }\n"
    " *\n"
    " * baton compiles it with the system compiler (cc, warnings on) into a private temporary folder and\n"
    " * loads it with dlopen. struct baton_race_params mirrors the `params` dictionary that the AWS\n"
    " * DeepRacer simulator passes to a Python reward function: the same fields, names, units and\n"
    " * meanings (see docs/race.md). A reward must be finite and within [-1e5, 1e5]; anything else stops\n"
    " * the run with a message naming the step.\n"
    " *\n"
    " * This header stands alone (only <stddef.h>): it is copied next to the user's file when it is\n"
    " * compiled, so it must not include other baton headers. */\n"
    "#ifndef BATON_RACE_REWARD_H\n"
    "#define BATON_RACE_REWARD_H\n"
    "\n"
    "#include <stddef.h>\n"
    "\n"
    "struct baton_race_params {\n"
    "    int all_wheels_on_track;       /* 1 when all four wheels are on the track */\n"
    "    double x, y;                   /* metres: the front of the car (0.14 m ahead of its centre) */\n"
    "    double heading;                /* degrees, -180..180, 0 = +x, counter-clockwise positive */\n"
    "    double distance_from_center;   /* metres from the centre line */\n"
    "    double projection_distance;    /* metres along the centre line from its first waypoint */\n"
    "    double progress;               /* percent of the lap driven since the episode's start, 0..100 */\n"
    "    int steps;                     /* steps in this episode, counting this one (15 per second) */\n"
    "    double speed;                  /* m/s: the speed the action asked for (0.1..4) */\n"
    "    double steering_angle;         /* degrees, -30..30, positive = left: the action's angle */\n"
    "    double track_width;            /* metres between the borders where the car is */\n"
    "    double track_length;           /* metres: the centre line's length */\n"
    "    const double (*waypoints)[2];  /* the centre line's points (x, y); a loop repeats the first last */\n"
    "    int num_waypoints;\n"
    "    int closest_waypoints[2];      /* indices of the waypoints behind and ahead of the car */\n"
    "    int is_left_of_center;         /* 1 when the car is left of the centre line (driving direction) */\n"
    "    int is_reversed;               /* 1 when this episode drives the track in reverse */\n"
    "    int is_crashed;                /* 1 when this step ended touching an object (never in time trials) */\n"
    "    int is_offtrack;               /* 1 when no wheel is on the track */\n"
    "    double sim_time;               /* simulated seconds since the simulator started */\n"
    "\n"
    "    /* objects (object-avoidance and head-to-bot races: boxes first, then bot cars); time trials\n"
    "     * have none: num_objects = 0 and the arrays NULL */\n"
    "    int num_objects;\n"
    "    int closest_objects[2];                     /* indices of the objects behind and ahead of the car\n"
    "                                                   by distance along the centre line (wrapping round) */\n"
    "    const double (*objects_location)[2];        /* (x, y) of each object's centre, metres */\n"
    "    const int *objects_left_of_center;          /* 1 when left of the centre line (driving direction) */\n"
    "    const double *objects_speed;                /* m/s (0 for a box) */\n"
    "    const double *objects_heading;              /* degrees, -180..180 */\n"
    "    const double *objects_distance_from_center; /* metres from the centre line */\n"
    "    const double *objects_distance;             /* metres along the centre line from its first waypoint */\n"
    "    int object_in_camera;                       /* 1 when the object ahead is in the camera's view */\n"
    "};\n"
    "\n"
    "/* What the user's file defines. */\n"
    "double reward_function(const struct baton_race_params *p);\n"
    "\n"
    "#endif\n";

#define COMPILER_OUTPUT_MAX 6000

static int write_file(const char *path, const char *text, baton_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return baton_err_set(err, BATON_ERR_IO, "%s: %s", path, strerror(errno));
    int rc = baton_write_all(fd, text, strlen(text), path, err);
    close(fd);
    return rc;
}

/* Run argv with stdout and stderr into out (at most cap-1 bytes kept). Returns the exit status,
 * or -1 when it could not be started. */
static int run_capture(char *const argv[], char *out, size_t cap, baton_err *err)
{
    int pfd[2];
    out[0] = 0;
    if (pipe2(pfd, O_CLOEXEC)) return baton_err_set(err, BATON_ERR_IO, "pipe: %s", strerror(errno)), -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    if (rc) {
        close(pfd[0]);
        baton_err_set(err, BATON_ERR_IO, "cannot run the compiler '%s': %s", argv[0], strerror(rc));
        return -1;
    }
    size_t n = 0;
    for (;;) {
        char tmp[4096];
        ssize_t r = read(pfd[0], tmp, sizeof tmp);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        size_t take = (size_t)r < cap - 1 - n ? (size_t)r : cap - 1 - n;
        memcpy(out + n, tmp, take);
        n += take;
    }
    out[n] = 0;
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return baton_err_set(err, BATON_ERR_IO, "waitpid: %s", strerror(errno)), -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void cleanup(const char *dir)
{
    if (dir[0]) baton_remove_tree(dir);
}

int race_reward_c_open(const char *path, void **handle, race_reward_fn *fn, baton_err *err)
{
    *handle = NULL;
    *fn = NULL;
    struct stat st;
    if (stat(path, &st)) return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return baton_check_regular(path, err) ? err->code : baton_err_set(err, BATON_ERR_ARG, "%s: not a regular file", path);
    const char *tmpdir = getenv("TMPDIR");
    char dir[4096], inc[4200], hdr[4300], so[4200];
    snprintf(dir, sizeof dir, "%s/baton-reward-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) return baton_err_set(err, BATON_ERR_IO, "%s: cannot make a temporary folder: %s", dir,
                                            strerror(errno));
    snprintf(inc, sizeof inc, "%s/include", dir);
    snprintf(hdr, sizeof hdr, "%s/baton", inc);
    int rc = BATON_OK;
    if (mkdir(inc, 0700) || mkdir(hdr, 0700)) {
        rc = baton_err_set(err, BATON_ERR_IO, "%s: %s", hdr, strerror(errno));
        goto done;
    }
    snprintf(hdr, sizeof hdr, "%s/baton/race_reward.h", inc);
    if ((rc = write_file(hdr, race_reward_header, err))) goto done;
    snprintf(so, sizeof so, "%s/reward.so", dir);
    const char *cc = getenv("BATON_CC");
    char *argv[] = {(char *)(cc && *cc ? cc : "cc"), "-std=c11", "-O2", "-Wall", "-Wextra", "-fPIC", "-shared",
                    "-I", inc, "-o", so, (char *)path, "-lm", NULL};
    char *msg = malloc(COMPILER_OUTPUT_MAX);
    if (!msg) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        goto done;
    }
    int status = run_capture(argv, msg, COMPILER_OUTPUT_MAX, err);
    size_t ml = strlen(msg);
    while (ml && msg[ml - 1] == '\n') msg[--ml] = 0;
    if (status < 0) {
        rc = err->code;
    } else if (status != 0) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: does not compile (%s exited with %d):\n%s", path, argv[0],
                           status, msg);
    } else if (ml) {
        baton_log(BATON_LOG_WARN, "%s: compiler warnings:\n%s", path, msg);
    }
    free(msg);
    if (rc) goto done;
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: cannot load the compiled file: %s", path, dlerror());
        goto done;
    }
    void *sym = dlsym(h, "reward_function");
    if (!sym) {
        dlclose(h);
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: defines no reward_function (write: double "
                           "reward_function(const struct baton_race_params *p) { ... })", path);
        goto done;
    }
    *handle = h;
    memcpy(fn, &sym, sizeof sym);
done:
    cleanup(dir);
    return rc;
}

void race_reward_c_close(void *handle)
{
    if (handle) dlclose(handle);
}
