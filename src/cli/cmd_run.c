/* cmd_run.c — `baton run [JOBFILE]`, the main job. With a job file it is `baton fleet run`. With
 * none it runs the built-in demo: ResNet-8 on Fashion-MNIST on a simulated spot fleet.
 *
 * The demo: pack Fashion-MNIST (both splits) into RecordIO shards once (the "object store",
 * WORK/data), write the job file WORK/demo.yaml (edit it and pass it back to `baton run` to play),
 * and run it: one training job (target capacity 1) drawn from three instance types in two zones,
 * the trainer streaming its data (pipe mode) and keeping checkpoints and logs on the job's volume,
 * the spot market interrupting it with two-minute notices (time scaled so hours pass in minutes)
 * when training reaches 30 % and 65 % of its steps — the same relay on a fast machine and a busy
 * one; --hazard-scale: a seeded, stormy market draws the interruptions instead — replacements
 * launched at each notice, the volume moved when a replacement lands in the other zone. At the end: the final checkpoint's accuracy on the test split, wall time,
 * interruptions, work lost and cost against on-demand. Run again: a finished demo starts over, an
 * interrupted one (Ctrl-C) resumes. */
#include "baton/fleet.h"
#include "baton/train.h"
#include "cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEMO_JOB "fmnist-resnet8"

static int pack_split(const char *data, const char *split, baton_err *err)
{
    char out[4096], js[4200];
    if (baton_path_join(out, sizeof out, data, split, err)) return err->code;
    snprintf(js, sizeof js, "%s/dataset.json", out);
    if (access(js, F_OK) == 0) return BATON_OK;   /* packed by an earlier run */
    baton_pack_opts o;
    baton_pack_opts_default(&o);
    o.from = "fashion-mnist";
    o.split = split;
    o.out_dir = out;
    o.shard_mb = 16;
    o.progress = isatty(2);
    baton_manifest m;
    double t0 = baton_now();
    if (baton_pack(&o, &m, err)) return err->code;
    printf("packed %-5s %6llu images into %zu RecordIO shard(s) in %.1f s -> %s\n", split,
           (unsigned long long)m.samples, m.nshards, baton_now() - t0, out);
    baton_manifest_free(&m);
    return BATON_OK;
}

/* The demo's settings. Its interruptions are scheduled at 30 % and 65 % of the job's steps, each once
 * training has reached that step (the trainer's progress, not the clock), so every run on every
 * machine shows the relay twice; --hazard-scale draws them from a stormy market instead, and then
 * how many there are depends on how fast this machine trains. */
typedef struct demo_cfg {
    uint64_t epochs, max_steps, total, seed;
    uint64_t at[2];               /* the scheduled interruptions' steps (unless random) */
    double scale, hazard;
    int random;
} demo_cfg;

#define DEMO_STEPS_PER_EPOCH ((60000 + 127) / 128)   /* Fashion-MNIST's training split at batch 128 */

static void demo_plan(demo_cfg *c)
{
    c->total = c->epochs * DEMO_STEPS_PER_EPOCH;
    if (c->max_steps && c->max_steps < c->total) c->total = c->max_steps;
    c->at[0] = (c->total * 30 + 50) / 100;
    c->at[1] = (c->total * 65 + 50) / 100;
}

static int write_job(const char *path, const char *data_abs, const demo_cfg *c, baton_err *err)
{
    char text[4096], steps[64] = "", market[1024];
    if (c->max_steps) snprintf(steps, sizeof steps, " --max-steps %llu", (unsigned long long)c->max_steps);
    if (c->random)
        snprintf(market, sizeof market,
                 "  hazard_scale: %g      # a stormy market: an interruption every 25-40 simulated minutes, not every few months\n"
                 "  random: true          # drawn from the types' hazard: how many depends on this machine's speed\n",
                 c->hazard);
    else
        snprintf(market, sizeof market,
                 "  # interruptions at 30 %% and 65 %% of the job's %llu steps: each once training has reached that step\n"
                 "  # (the trainer's progress, not the clock), so any machine, fast or busy, shows the relay twice.\n"
                 "  # For a stormy random market instead: random: true, hazard_scale: 6000 (`baton run --hazard-scale 6000`).\n"
                 "  interruptions:\n"
                 "    - {at_step: %llu}\n"
                 "    - {at_step: %llu}\n",
                 (unsigned long long)c->total, (unsigned long long)c->at[0], (unsigned long long)c->at[1]);
    int n = snprintf(text, sizeof text,
                     "# The built-in demo of `baton run`: ResNet-8 on Fashion-MNIST on a simulated spot fleet.\n"
                     "# Edit it and run `baton run %s` (or `baton fleet run`); docs/jobfile.md has every field.\n"
                     "name: " DEMO_JOB "\n"
                     "command: >\n"
                     "  baton train --data file://%s/train --mode pipe --model resnet8 --epochs %llu%s\n"
                     "  --batch 128 --seed 1 --ckpt-dir ckpt --ckpt-every-steps 50 --log logs/train.csv --quiet\n"
                     "target_capacity: 1\n"
                     "allocation_strategy: lowest-price\n"
                     "retries: 2\n"
                     "instance_types:\n"
                     "  - {name: c5.xlarge, on_demand_price: 0.17, spot_price: {us-east-1a: 0.0561, us-east-1b: 0.0598}, interruption: \">20%%\"}\n"
                     "  - {name: c5a.xlarge, on_demand_price: 0.154, spot_price: {us-east-1a: 0.0566, us-east-1b: 0.0540}, speed: 0.95, interruption: \">20%%\"}\n"
                     "  - {name: m5.xlarge, on_demand_price: 0.192, spot_price: {us-east-1a: 0.0688, us-east-1b: 0.0652}, interruption: \"15-20%%\"}\n"
                     "zones: [us-east-1a, us-east-1b]\n"
                     "volume:\n"
                     "  checkpoints: ckpt\n"
                     "market:\n"
                     "  time_scale: %g          # one wall second = %g simulated seconds\n"
                     "  seed: %llu\n"
                     "  launch_delay: 90s\n"
                     "  notice: 2m\n"
                     "  capacity_cooldown: 30m\n"
                     "%s",
                     path, data_abs, (unsigned long long)c->epochs, steps, c->scale, c->scale, (unsigned long long)c->seed,
                     market);
    if (n < 0 || (size_t)n >= sizeof text) return baton_err_set(err, BATON_ERR_ARG, "%s: data path too long", path);
    return baton_file_write_atomic(path, text, (size_t)n, err);
}

static int demo(const char *work, const demo_cfg *c)
{
    baton_err err = {0};
    char data[4096], data_abs[PATH_MAX], jobfile[4200], state[4200];
    double t0 = baton_now();
    if (baton_mkdir_p(work, &err) || baton_path_join(data, sizeof data, work, "data", &err)) return cli_fail("run", &err);
    printf("baton demo: ResNet-8 on Fashion-MNIST on a simulated spot fleet (work folder %s)\n", work);
    if (pack_split(data, "train", &err) || pack_split(data, "test", &err)) return cli_fail("run", &err);
    if (!realpath(data, data_abs)) {
        baton_err_set(&err, BATON_ERR_IO, "%s: cannot resolve", data);
        return cli_fail("run", &err);
    }
    snprintf(jobfile, sizeof jobfile, "%s/demo.yaml", work);
    snprintf(state, sizeof state, "%s/fleet", work);
    if (write_job(jobfile, data_abs, c, &err)) return cli_fail("run", &err);

    /* a finished demo starts over; an interrupted one resumes */
    char jdir[4096];
    if (!baton_fleet_job_dir(state, DEMO_JOB, jdir, sizeof jdir, &err)) {
        baton_fleet_report old;
        baton_err e2 = {0};
        if (!baton_fleet_report_load(jdir, &old, &e2)) {
            int over = !strcmp(old.rec.job.state, "done") || !strcmp(old.rec.job.state, "failed");
            baton_fleet_report_free(&old);
            if (over) baton_remove_tree(jdir);
            else printf("resuming the demo from %s\n", jdir);
        }
    }
    char how[256];
    if (c->random)
        snprintf(how, sizeof how, "interruptions drawn from a stormy market (hazard x%g, seed %llu: how many depends on "
                 "this machine's speed)", c->hazard, (unsigned long long)c->seed);
    else
        snprintf(how, sizeof how, "interruptions scheduled at 30 %% and 65 %% of the job's %llu steps (steps %llu and %llu)",
                 (unsigned long long)c->total, (unsigned long long)c->at[0], (unsigned long long)c->at[1]);
    printf("job file %s: 1 training job on spot capacity (c5.xlarge, c5a.xlarge, m5.xlarge in 2 zones),\n"
           "time x%g, %s,\nwith 2-minute notices; events below, timeline at the end\n\n", jobfile, c->scale, how);
    baton_fleet_opts o;
    baton_fleet_opts_default(&o);
    o.state_dir = state;
    o.progress = isatty(2) && !getenv("BATON_NO_PROGRESS");
    o.progress_total = c->total;
    int rc = cli_fleet_run_file("run", jobfile, &o, 0, NULL);
    if (rc != CLI_OK) return rc;

    /* accuracy of the final checkpoint on the test split */
    baton_fleet_report r;
    if (baton_fleet_report_load(jdir, &r, &err)) return cli_fail("run", &err);
    char ckpt[4200], test[4200], dur[32], sim[32];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", r.rec.ntasks ? r.rec.tasks[0].volume : "");
    snprintf(test, sizeof test, "%s/test", data);
    baton_eval_result ev;
    if (baton_eval_run(ckpt, test, BATON_MODE_MOUNT, 1, NULL, 256, 0, 0, 0, BATON_NN_PRECISION_F32, &ev, &err)) {
        baton_fleet_report_free(&r);
        return cli_fail("run", &err);
    }
    const baton_cost_total *t = &r.total;
    baton_fleet_fmt_duration(baton_now() - t0, dur, sizeof dur);
    baton_fleet_fmt_duration(r.now_sim, sim, sizeof sim);
    printf("\nbaton demo done\n");
    printf("  accuracy     %.4f on the %llu test images, never trained on (checkpoint step %llu)\n", ev.accuracy,
           (unsigned long long)ev.samples, (unsigned long long)ev.step);
    printf("  wall time    %s (the fleet: %s simulated at x%g)\n", dur, sim, r.rec.job.time_scale);
    printf("  interruptions %d (%d with notice; %s), %d instance(s); work lost %lld steps\n", r.interruptions,
           r.with_notice, c->random ? "drawn from the market's hazard" : "scheduled at 30 % and 65 % of the steps",
           (int)r.rec.ninsts, (long long)r.lost_steps);
    printf("  time         useful %.0f s, restarts %.0f s, lost %.0f s (simulated)\n", t->useful_s, t->restart_s,
           t->lost_s);
    baton_fleet_deadline_stats dl;
    if (baton_fleet_deadlines(&r, &dl) > 0) {
        printf("  deadlines    %zu notice(s): committed p50 %.2f s / max %.2f s after the notice, exited p50 %.2f s / "
               "max %.2f s", dl.n, dl.commit_p50, dl.commit_max, dl.exit_p50, dl.exit_max);
        if (dl.with_deadline)
            printf("; margin p50 %.1f s, min %.1f s (%zu of %zu inside)", dl.margin_p50, dl.margin_min, dl.inside,
                   dl.with_deadline);
        printf("\n");
    }
    printf("  cost         spot $%.4f vs on-demand $%.4f for the same work: %.1f %% saved "
           "(SageMaker-style %.1f %%)\n", t->spot_cost, t->counterfactual_cost, t->savings_vs_on_demand_pct,
           t->savings_sagemaker_pct);
    printf("  timeline     %s/timeline.svg; details: baton fleet status " DEMO_JOB " --state %s\n", jdir, state);
    baton_eval_result_free(&ev);
    baton_fleet_report_free(&r);
    return CLI_OK;
}

int cmd_run(int argc, char **argv)
{
    const char *work = "baton-demo";
    /* time x20: the two-minute notice is six wall seconds, room for a step and a checkpoint on a machine
     * whose cores are busy with other work too (at x60 two seconds were not: 1.3 s steps at a load of 9
     * on two cores, the trainer killed at the deadline) */
    demo_cfg c = {.epochs = 2, .seed = 3, .scale = 20, .hazard = 6000};
    const struct cli_opt opts[] = {
        {"work", CLI_STR, &work, "working folder for the demo (default ./baton-demo)"},
        {"epochs", CLI_U64, &c.epochs, "demo: training epochs (default 2)"},
        {"max-steps", CLI_U64, &c.max_steps, "demo: stop training at step K >= 10 (a shorter demo; default: all epochs)"},
        {"time-scale", CLI_DBL, &c.scale, "simulated seconds per wall second (demo default 20; a job file's otherwise)"},
        {"seed", CLI_U64, &c.seed, "market seed (demo default 3; a job file's otherwise)"},
        {"hazard-scale", CLI_DBL, &c.hazard,
         "demo: draw interruptions from a stormy market, each type's rate times X, instead of scheduling them at 30 % "
         "and 65 % of the steps (6000 is stormy)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("run", "[JOBFILE] [--work DIR] [--epochs N] [--max-steps K] [--time-scale X] [--seed S] "
                  "[--hazard-scale X]", opts, argc, argv, pos, 1, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos == 1) {
        /* a job file says what to train: the demo's options would be silently ignored, so refuse them */
        static const char *const demo_only[] = {"epochs", "max-steps", "hazard-scale", "work"};
        for (size_t i = 0; i < sizeof demo_only / sizeof demo_only[0]; i++)
            if (cli_given(argc, argv, demo_only[i])) {
                fprintf(stderr, "baton run: --%s is an option of the built-in demo; with a job file, set it in the "
                                "file (its command, its market section)\n", demo_only[i]);
                return CLI_USAGE;
            }
        baton_fleet_opts o;
        baton_fleet_opts_default(&o);
        o.progress = isatty(2) && !getenv("BATON_NO_PROGRESS");
        if (cli_given(argc, argv, "time-scale")) o.time_scale = c.scale;   /* as `baton fleet run` takes them */
        if (cli_given(argc, argv, "seed")) o.seed_set = 1, o.seed = c.seed;
        return cli_fleet_run_file("run", pos[0], &o, 0, NULL);
    }
    c.random = cli_given(argc, argv, "hazard-scale");
    if (c.epochs < 1 || c.epochs > 100000 || c.scale <= 0 || !(c.hazard >= 0) ||
        (cli_given(argc, argv, "max-steps") && c.max_steps < 10)) {
        fprintf(stderr, "baton run: --epochs must be 1..100000, --max-steps >= 10, --time-scale > 0, --hazard-scale >= 0\n");
        return CLI_USAGE;
    }
    demo_plan(&c);
    return demo(work, &c);
}
