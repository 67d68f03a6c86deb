/* cmd_fleet.c — `baton fleet run|status|cancel|check|catalog`: the fleet supervisor's command line.
 * run reads a job file, runs the fleet to its end (or resumes it from the state folder) and prints
 * the report; status reads a job's database (also while it runs); cancel asks the supervisor to
 * stop every worker after a checkpoint. Exit codes: run 0 when every task is done, 1 when a task
 * failed (with the reason), 75 when the job was cancelled (run it again to resume). */
#include "baton/fleet.h"
#include "baton/infer.h"
#include "cli.h"

#include <cJSON.h>

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void bin_dir(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = 0;
    if (n <= 0) return;
    exe[n] = 0;
    baton_path_dirname(exe, out, cap);
}

static int print_report(const char *cmd, const char *dir, int json, const char *svg, int events)
{
    baton_fleet_report r;
    baton_err err = {0};
    if (baton_fleet_report_load(dir, &r, &err)) return cli_fail(cmd, &err);
    if (json) {
        char *s = baton_fleet_report_json(&r, events);
        if (s) printf("%s\n", s);
        free(s);
    } else {
        baton_fleet_report_print(stdout, &r, events);
    }
    int rc = CLI_OK;
    if (svg && baton_fleet_report_svg(&r, svg, &err)) rc = cli_fail(cmd, &err);
    baton_fleet_report_free(&r);
    return rc;
}

int cli_fleet_run_file(const char *cmd, const char *path, struct baton_fleet_opts *o, int json, const char *svg)
{
    baton_err err = {0};
    uint8_t *text;
    size_t len;
    if (baton_file_read_all(path, BATON_JOB_MAX_BYTES, &text, &len, &err)) {
        baton_err_prefix(&err, "job file");
        return cli_fail(cmd, &err);
    }
    baton_job job;
    if (baton_job_parse(path, (const char *)text, len, &job, &err) || baton_job_resolve_paths(&job, &err)) {
        free(text);
        return cli_fail(cmd, &err);
    }
    if (job.backend != BATON_BACKEND_LOCAL) {   /* slurm, aws: cmd_fleet_remote.c */
        const int b = (int)job.backend;
        baton_job_free(&job);
        free(text);
        struct cli_fleet_args a = {.sub = "run", .pos = path, .poll = 2};
        return cli_fleet_remote(&a, b);
    }
    char bdir[PATH_MAX];
    bin_dir(bdir, sizeof bdir);
    if (bdir[0] && !o->bin_dir) o->bin_dir = bdir;
    char problems[4096];
    if (baton_job_check_commands(&job, o->bin_dir, problems, sizeof problems)) {   /* before any launch */
        fprintf(stderr, "baton %s: %s: the job's command cannot run as written:\n%s", cmd, path, problems);
        baton_job_free(&job);
        free(text);
        return CLI_ERROR;
    }
    o->jobfile_text = (const char *)text;
    baton_fleet_summary sum;
    char name[BATON_JOB_NAME_MAX + 1];
    snprintf(name, sizeof name, "%s", job.name);
    int rc = baton_fleet_run(&job, o, &sum, &err);
    baton_job_free(&job);
    free(text);
    if (rc) return cli_fail(cmd, &err);
    if (!o->quiet && !json) printf("\n");
    int prc = print_report(cmd, sum.dir, json, svg, 0);
    if (!json) printf("files: %s/{fleet.db,events.jsonl,report.json,timeline.svg}\n", sum.dir);
    if (prc) return prc;
    if (!strcmp(sum.state, "failed")) {
        fprintf(stderr, "baton %s: %s\n", cmd, sum.failure[0] ? sum.failure : "a task failed");
        return CLI_ERROR;
    }
    if (!strcmp(sum.state, "cancelled")) {
        fprintf(stderr, "baton %s: job %s was cancelled; run it again to resume\n", cmd, name);
        return CLI_INTERRUPTED;
    }
    return CLI_OK;
}

static int list_jobs(const char *state, int json)
{
    DIR *d = opendir(state);
    if (!d) {
        fprintf(stderr, "baton fleet status: %s: no fleet state folder (run a job first, or give --state)\n", state);
        return CLI_ERROR;
    }
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char dir[4096];
        baton_err err = {0};
        if (baton_path_join(dir, sizeof dir, state, e->d_name, &err)) continue;
        baton_fleet_report r;
        if (baton_fleet_report_load(dir, &r, &err)) continue;
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "job", r.rec.job.name);
            cJSON_AddStringToObject(o, "state", r.rec.job.state);
            cJSON_AddNumberToObject(o, "tasks", (double)r.rec.ntasks);
            cJSON_AddNumberToObject(o, "instances", (double)r.rec.ninsts);
            cJSON_AddNumberToObject(o, "interruptions", r.interruptions);
            cJSON_AddNumberToObject(o, "spot_cost", r.total.spot_cost);
            char *js = baton_json_print(o, 0);
            printf("%s%s", n++ ? ",\n" : "[\n", js ? js : "null");
            free(js);
            cJSON_Delete(o);
        } else {
            if (!n++) printf("%-32s %-10s %6s %8s %13s %10s\n", "job", "state", "tasks", "instances", "interruptions", "spot$");
            printf("%-32s %-10s %6zu %8zu %13d %10.4f\n", r.rec.job.name, r.rec.job.state, r.rec.ntasks, r.rec.ninsts,
                   r.interruptions, r.total.spot_cost);
        }
        baton_fleet_report_free(&r);
    }
    closedir(d);
    if (json) printf(n ? "\n]\n" : "[]\n");
    else if (!n) printf("no jobs under %s\n", state);
    return CLI_OK;
}

/* ------------------------------------------------------------------ run, status, cancel */
/* Where each option applies: bit (subcommand × backend). */
enum { RUN_L = 1, RUN_S = 2, RUN_A = 4, ST_L = 8, ST_S = 16, ST_A = 32, CA_L = 64, CA_S = 128, CA_A = 256 };
#define ALL_RUN (RUN_L | RUN_S | RUN_A)
#define ALL_OF_THEM 511
static const struct { const char *name; int where; } applies[] = {
    {"backend", ALL_OF_THEM}, {"state", ALL_OF_THEM},
    {"time-scale", RUN_L}, {"seed", RUN_L}, {"hazard-scale", RUN_L}, {"interrupts", RUN_L}, {"quiet", RUN_L},
    {"imds", RUN_L}, {"svg", RUN_L | ST_L}, {"json", RUN_L | RUN_S | ST_L | ST_S}, {"events", ST_L},
    {"grace", CA_L}, {"wait", RUN_S | ST_S}, {"timeout", RUN_S | ST_S}, {"poll", RUN_S | ST_S},
    {"out", RUN_A | ST_A | CA_A}, {"account", RUN_A}, {"api", RUN_A}, {"dry-run", RUN_A}, {"apply", RUN_A},
    {"region", ST_A | CA_A},
};

static int parse_args(const char *sub, int argc, char **argv, struct cli_fleet_args *a, int *help)
{
    memset(a, 0, sizeof *a);
    a->sub = sub;
    a->poll = 2;
    a->grace = 300;
    a->events = 20;
    const struct cli_opt opts[] = {
        {"backend", CLI_STR, &a->backend, "local | slurm | aws (default: the job file's; docs/slurm.md, docs/aws.md)"},
        {"state", CLI_STR, &a->state, "state folder (default: the job file's state_dir, else ./baton-fleet)"},
        {"time-scale", CLI_DBL, &a->time_scale, "local run: simulated seconds per wall second (overrides market.time_scale)"},
        {"seed", CLI_U64, &a->seed, "local run: market seed (overrides market.seed)"},
        {"hazard-scale", CLI_DBL, &a->hazard, "local run: multiply every interruption rate (turns the random market on)"},
        {"interrupts", CLI_STR, &a->interrupts, "local run: explicit schedule AFTER[/NOTICE][@TASK],... (simulated)"},
        {"quiet", CLI_FLAG, &a->quiet, "local run: no event lines"},
        {"imds", CLI_STR, &a->imds, "local run: workers' metadata service: normal | garbage | unreachable (fault tests)"},
        {"json", CLI_FLAG, &a->json, "the report (status: with every event) as JSON"},
        {"svg", CLI_STR, &a->svg, "local: also write the timeline to FILE"},
        {"events", CLI_INT, &a->events, "local status: how many recent events to show (default 20)"},
        {"grace", CLI_DBL, &a->grace, "local cancel: seconds to wait for the workers to stop (default 300)"},
        {"wait", CLI_FLAG, &a->wait, "slurm run/status: wait until every task has finished"},
        {"timeout", CLI_DBL, &a->timeout, "slurm, with --wait: give up after SEC seconds (0: never)"},
        {"poll", CLI_DBL, &a->poll, "slurm, with --wait: seconds between looks at the queue (default 2)"},
        {"out", CLI_STR, &a->out, "aws: folder of the generated artefacts (default STATE/JOB/aws)"},
        {"account", CLI_STR, &a->account, "aws run: the 12-digit account id the roles live in"},
        {"api", CLI_STR, &a->api, "aws run: auto-scaling-group (default) | ec2-fleet | spot-fleet (overrides aws.api)"},
        {"dry-run", CLI_FLAG, &a->dry_run, "aws run: write the artefacts and print the aws commands (default)"},
        {"apply", CLI_FLAG, &a->apply, "aws run: run the aws commands (needs credentials)"},
        {"region", CLI_STR, &a->region, "aws status/cancel: the region (default: from the artefacts)"},
        {0},
    };
    char cmd[32];
    snprintf(cmd, sizeof cmd, "fleet %s", sub);
    const char *pos[1] = {NULL};
    int npos;
    const char *syn = !strcmp(sub, "run") ? "JOBFILE [options; --help lists them with where they apply]"
                                          : "[JOB | JOBFILE] [options]";
    if (cli_parse(cmd, syn, opts, argc, argv, pos, 1, &npos, help)) return CLI_USAGE;
    a->pos = npos ? pos[0] : NULL;
    a->seed_set = cli_given(argc, argv, "seed");
    a->hazard_set = cli_given(argc, argv, "hazard-scale");
    return 0;
}

/* Every option given must apply to this subcommand on this backend. */
static int check_applies(const struct cli_fleet_args *a, int backend, int argc, char **argv)
{
    const int row = !strcmp(a->sub, "run") ? 0 : !strcmp(a->sub, "status") ? 1 : 2;
    const int bit = 1 << (row * 3 + (backend == BATON_BACKEND_SLURM ? 1 : backend == BATON_BACKEND_AWS ? 2 : 0));
    for (size_t i = 0; i < sizeof applies / sizeof applies[0]; i++)
        if (!(applies[i].where & bit) && cli_given(argc, argv, applies[i].name)) {
            fprintf(stderr, "baton fleet %s: --%s does not apply to the %s backend's %s (baton fleet %s --help)\n",
                    a->sub, applies[i].name, baton_backend_name((baton_backend)backend), a->sub, a->sub);
            return CLI_USAGE;
        }
    return 0;
}

static int local_run(const struct cli_fleet_args *a)
{
    if (!a->pos) {
        fprintf(stderr, "baton fleet run: a job file is required (docs/jobfile.md)\n");
        return CLI_USAGE;
    }
    if (a->imds && strcmp(a->imds, "normal") && strcmp(a->imds, "garbage") && strcmp(a->imds, "unreachable")) {
        fprintf(stderr, "baton fleet run: --imds %s: expected normal, garbage or unreachable\n", a->imds);
        return CLI_USAGE;
    }
    if (a->time_scale < 0 || (a->hazard_set && a->hazard < 0)) {
        fprintf(stderr, "baton fleet run: --time-scale and --hazard-scale must not be negative\n");
        return CLI_USAGE;
    }
    baton_fleet_opts o;
    baton_fleet_opts_default(&o);
    o.state_dir = a->state;
    o.time_scale = a->time_scale;
    o.interrupts = a->interrupts;
    o.quiet = a->quiet;
    o.imds_mode = a->imds;
    if (a->seed_set) o.seed_set = 1, o.seed = a->seed;
    if (a->hazard_set) o.hazard_set = 1, o.hazard_scale = a->hazard;
    o.progress = !o.quiet && isatty(2) && !getenv("BATON_NO_PROGRESS");
    return cli_fleet_run_file("fleet run", a->pos, &o, a->json, a->svg);
}

static int local_status(const struct cli_fleet_args *a)
{
    const char *state = a->state ? a->state : "baton-fleet";
    if (!a->pos) return list_jobs(state, a->json);
    char dir[4096];
    baton_err err = {0};
    if (baton_fleet_job_dir(state, a->pos, dir, sizeof dir, &err)) return cli_fail("fleet status", &err);
    return print_report("fleet status", dir, a->json, a->svg, a->json ? 1 : a->events < 0 ? 0 : a->events);
}

static int local_cancel(const struct cli_fleet_args *a)
{
    if (!a->pos) {
        fprintf(stderr, "baton fleet cancel: which job? (baton fleet status lists them)\n");
        return CLI_USAGE;
    }
    if (!(a->grace >= 0)) {
        fprintf(stderr, "baton fleet cancel: --grace must be a number of seconds >= 0\n");
        return CLI_USAGE;
    }
    char dir[4096];
    baton_err err = {0};
    if (baton_fleet_job_dir(a->state ? a->state : "baton-fleet", a->pos, dir, sizeof dir, &err) ||
        baton_fleet_cancel(dir, a->grace, &err))
        return cli_fail("fleet cancel", &err);
    printf("job %s cancelled; `baton fleet run` with its job file resumes it\n", a->pos);
    return CLI_OK;
}

/* run, status, cancel: parse once, find the backend, check the options against it, dispatch. */
static int fleet_sub(const char *sub, int argc, char **argv)
{
    struct cli_fleet_args a;
    int help = 0;
    if (parse_args(sub, argc, argv, &a, &help)) return help ? CLI_OK : CLI_USAGE;
    int b = cli_fleet_backend(&a);
    if (b < 0) return CLI_USAGE;
    int rc = check_applies(&a, b, argc, argv);
    if (rc) return rc;
    if (b != BATON_BACKEND_LOCAL) return cli_fleet_remote(&a, b);
    return !strcmp(sub, "run") ? local_run(&a) : !strcmp(sub, "status") ? local_status(&a) : local_cancel(&a);
}

static int fleet_check(int argc, char **argv)
{
    const struct cli_opt opts[] = {{0}};
    const char *pos[1];
    int npos, help;
    if (cli_parse("fleet check", "JOBFILE", opts, argc, argv, pos, 1, &npos, &help)) return help ? CLI_OK : CLI_USAGE;
    if (npos != 1) {
        fprintf(stderr, "baton fleet check: a job file is required\n");
        return CLI_USAGE;
    }
    baton_job j;
    baton_err err = {0};
    if (baton_job_load(pos[0], &j, &err)) return cli_fail("fleet check", &err);
    printf("%s: job %s, backend %s, %zu task(s), capacity %d, %s, %d retries\n", pos[0], j.name,
           baton_backend_name(j.backend), j.ncommands, j.target_capacity, baton_alloc_name(j.alloc), j.retries);
    for (size_t i = 0; i < j.ntypes; i++) {
        const baton_job_type *t = &j.types[i];
        printf("  %-12s on demand $%.4f/h, spot", t->name, t->on_demand_price);
        for (size_t z = 0; z < j.nzones; z++)
            printf(" %s%s$%.4f/h", j.nzones > 1 ? j.zones[z] : "", j.nzones > 1 ? " " : "", baton_job_spot_price(t, j.zones[z]));
        printf(", speed %g, interruptions %s%s\n", t->speed, baton_bucket_name(t->bucket), t->from_catalog ? " [catalog]" : "");
    }
    printf("  zones:");
    for (size_t z = 0; z < j.nzones; z++) printf(" %s", j.zones[z]);
    printf("\n  market: time x%g, seed %llu, launch %gs, notice %gs, %s, %zu scheduled interruption(s)\n",
           j.market.time_scale, (unsigned long long)j.market.seed, j.market.launch_delay, j.market.notice,
           j.market.random ? "random" : "no random interruptions", j.market.ninterrupts);
    int rc = CLI_OK;
    if (j.backend == BATON_BACKEND_LOCAL) {   /* elsewhere the commands run on other machines */
        char bdir[PATH_MAX], problems[4096];
        bin_dir(bdir, sizeof bdir);
        if (baton_job_check_commands(&j, bdir[0] ? bdir : NULL, problems, sizeof problems)) {
            fprintf(stderr, "baton fleet check: %s: the job's command cannot run as written:\n%s", pos[0], problems);
            rc = CLI_ERROR;
        } else {
            printf("  commands: programs found, --data folders hold dataset.json, named files are in the volume seed\n");
        }
    }
    baton_job_free(&j);
    return rc;
}

/* The instance types a job file can name without prices: the one catalog's current instances. */
static int fleet_catalog(int argc, char **argv)
{
    int json = 0;
    const char *file = NULL;
    const struct cli_opt opts[] = {
        {"json", CLI_FLAG, &json, "one JSON array, an object per type"},
        {"catalog", CLI_STR, &file, "catalog CSV (default: the built-in one, docs/catalog.csv)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("fleet catalog", "[--json] [--catalog FILE]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    baton_infer_catalog own = {0};
    baton_err err = {0};
    if (file && baton_infer_catalog_load(file, &own, &err)) return cli_fail("fleet catalog", &err);
    const baton_infer_catalog *c = file ? &own : baton_infer_catalog_builtin();
    if (!json)
        printf("%-14s %-6s %5s %6s %-38s %13s %10s %6s %s\n", "type", "kind", "vCPUs", "GiB", "chip", "on-demand $/h",
               "spot $/h", "speed", "interruptions");
    int shown = 0;
    for (size_t i = 0; i < c->n; i++) {
        const baton_infer_catalog_entry *e = &c->e[i];
        if (e->kind == BATON_CAT_ACCEL || e->retired) continue;   /* not instances a fleet launches */
        if (json) {   /* one array, a type per line */
            char *js = baton_infer_catalog_entry_json(e);
            printf("%s%s", shown++ ? ",\n" : "[\n", js ? js : "null");
            free(js);
            continue;
        }
        char spot[16] = "-", speed[16] = "-", mem[16] = "-", chip[64];
        if (e->spot >= 0) snprintf(spot, sizeof spot, "%.4f", e->spot);
        if (e->train_speed > 0) snprintf(speed, sizeof speed, "%.2f", e->train_speed);
        if (e->memory_gib >= 0) snprintf(mem, sizeof mem, "%g", e->memory_gib);
        if (e->chips > 1) snprintf(chip, sizeof chip, "%d x %s", e->chips, e->chip[0] ? e->chip : "?");
        else snprintf(chip, sizeof chip, "%s", e->chip[0] ? e->chip : "-");
        printf("%-14s %-6s %5d %6s %-38s %13.4f %10s %6s %s\n", e->name, baton_infer_kind_name(e->kind), e->vcpus, mem,
               chip, e->on_demand, spot, speed, e->interruption >= 0 ? baton_infer_bucket_name(e->interruption) : "-");
    }
    if (json) printf(shown ? "\n]\n" : "[]\n");
    else if (!file)
        printf("(on demand: AWS's us-east-1 Linux list, see docs/catalog.csv for its date; spot prices and buckets are "
               "illustrative: set them in the job file when they matter)\n");
    else
        printf("(from %s)\n", file);
    baton_infer_catalog_free(&own);
    return CLI_OK;
}

int cmd_fleet(int argc, char **argv)
{
    const char *usage = "usage: baton fleet run JOBFILE | status [JOB] | cancel JOB | check JOBFILE | catalog  (--help on each;\n"
                        "       --backend slurm|aws or the job file's backend: docs/slurm.md, docs/aws.md)\n";
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "run") || !strcmp(argv[1], "status") || !strcmp(argv[1], "cancel"))
        return fleet_sub(argv[1], argc - 1, argv + 1);
    if (!strcmp(argv[1], "catalog")) return fleet_catalog(argc - 1, argv + 1);
    if (!strcmp(argv[1], "check")) return fleet_check(argc - 1, argv + 1);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    fprintf(stderr, "baton fleet: unknown subcommand '%s'\n%s", argv[1], usage);
    return CLI_USAGE;
}
