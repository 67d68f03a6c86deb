/* test_infer_plan.c — the catalog, the cost model and the planners: Young/Daly against the
 * published vectors, the seed's cost column from the seed's latencies, catalog and latencies-file
 * errors with their line numbers, configurations, projections (always labelled projected), the
 * pick under an SLO, the physical bounds on every projection over the catalog (memory-bandwidth floor,
 * efficiency capped at 100 %), what is not projected and why, the order of the rows, nearest-rank
 * percentiles, the JSON line round trip, plan train's arithmetic, and the Pareto chart. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baton/infer.h"
#include "baton/ckpt.h"
#include "check.h"

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

static int catalog_err(const char *text, const char *want)
{
    baton_infer_catalog c;
    baton_err err = {0};
    int rc = baton_infer_catalog_parse("cat.csv", text, strlen(text), &c, &err);
    if (rc == BATON_OK) {
        baton_infer_catalog_free(&c);
        fprintf(stderr, "accepted: %s\n", text);
        return 0;
    }
    if (!strstr(err.msg, want)) fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
    return strstr(err.msg, want) != NULL;
}

static int latency_err(const char *text, const char *want)
{
    baton_latency_row *r = NULL;
    size_t n = 0;
    baton_err err = {0};
    int rc = baton_latencies_parse("lat.csv", text, strlen(text), &r, &n, &err);
    free(r);
    if (rc == BATON_OK) return 0;
    if (!strstr(err.msg, want)) fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
    return strstr(err.msg, want) != NULL;
}

static void young_daly(void)
{
    /* REFERENCE: delta = 5 min; M = 24 h -> 116.7 min; 6 h -> 56.7 min; 15 min -> 9.14 min */
    CHECK_MSG(near(baton_ckpt_daly_interval(5, 24 * 60), 116.7, 0.05), "%f", baton_ckpt_daly_interval(5, 24 * 60));
    CHECK_MSG(near(baton_ckpt_daly_interval(5, 6 * 60), 56.7, 0.05), "%f", baton_ckpt_daly_interval(5, 6 * 60));
    CHECK_MSG(near(baton_ckpt_daly_interval(5, 15), 9.14, 0.005), "%f", baton_ckpt_daly_interval(5, 15));
    CHECK(near(baton_ckpt_young_interval(5, 24 * 60), 120.0, 1e-9));   /* sqrt(2 * 5 * 1440) */
    CHECK(baton_ckpt_daly_interval(10, 4) == 4);                         /* delta >= 2M: M */
    CHECK(near(baton_ckpt_daly_interval(300, 86400), 116.7 * 60, 3));     /* unit-free: seconds too */
    /* Daly's wall time: no interruptions -> work plus the writes */
    CHECK(near(baton_daly_wall(1000, 100, 1, 0, 0), 1010, 1e-9));
    /* with interruptions it costs more, and the optimum beats a much longer or shorter interval */
    const double M = 3600, d = 10, R = 60, W = 36000, tau = baton_ckpt_daly_interval(d, M);
    const double best = baton_daly_wall(W, tau, d, M, R);
    CHECK(best > W * (1 + d / tau));
    CHECK(best < baton_daly_wall(W, tau * 4, d, M, R) && best < baton_daly_wall(W, tau / 4, d, M, R));
    CHECK(near(baton_ckpt_mtbi_hours(0.10), 730 / -log(0.9), 1e-9));
    CHECK(isinf(baton_ckpt_mtbi_hours(0)));
}

static void seed_costs(void)
{
    CHECK(near(baton_cost_sequential(0.68, 0.04461), 0.8426, 1e-4));
    CHECK(near(baton_cost_throughput(0.68, 1 / 0.04461), 0.8426, 1e-4));
    baton_infer_catalog c;
    baton_err err = {0};
    CHECK_MSG(baton_infer_catalog_load(NULL, &c, &err) == BATON_OK, "%s", err.msg);
    baton_latency_row *r = NULL;
    size_t n = 0;
    CHECK_MSG(baton_latencies_load("docs/seed-latencies.csv", &r, &n, &err) == BATON_OK, "%s", err.msg);
    baton_plan_infer_opts o = {.slo_p90_ms = 50, .include_retired = 1};   /* as the seed compared them */
    baton_plan_infer p = {0};
    CHECK_MSG(r && baton_plan_infer_file(&c, r, n, &o, &p, &err) == BATON_OK, "%s", err.msg);
    /* the seed's cost column: $0.84, $0.83, $0.24 per 100k (within rounding to the cent) */
    static const struct {
        const char *config;
        double cost;
    } want[] = {{"c5.4xlarge", 0.84}, {"c5.4xlarge+eia1.xlarge", 0.83}, {"c5.large+eia1.medium", 0.24}};
    for (size_t k = 0; k < 3; k++) {
        int found = 0;
        for (size_t i = 0; i < p.n; i++)
            if (!strcmp(p.rows[i].config, want[k].config)) {
                found = 1;
                CHECK_MSG(near(p.rows[i].cost_seq, want[k].cost, 0.0065), "%s: $%.4f, seed $%.2f", want[k].config,
                          p.rows[i].cost_seq, want[k].cost);
                CHECK(p.rows[i].source == BATON_SRC_FILE && p.rows[i].p90_from_mean);
            }
        CHECK_MSG(found, "%s missing from the plan", want[k].config);
    }
    /* the cheapest meeting 50 ms is c5.large with eia1.medium; with 30 ms it is the eia1.large one */
    CHECK(p.pick >= 0 && !strcmp(p.rows[p.pick].config, "c5.large+eia1.medium"));
    baton_plan_infer_free(&p);
    o.slo_p90_ms = 30;
    CHECK(baton_plan_infer_file(&c, r, n, &o, &p, &err) == BATON_OK);
    CHECK(p.pick >= 0 && !strcmp(p.rows[p.pick].config, "c5.large+eia1.large"));
    baton_plan_infer_free(&p);
    o.slo_p90_ms = 5;   /* nothing is that fast */
    CHECK(baton_plan_infer_file(&c, r, n, &o, &p, &err) == BATON_OK && p.pick == -1);
    baton_plan_infer_free(&p);
    /* Elastic Inference is retired: by default its rows are shown, marked, and never picked */
    o.slo_p90_ms = 50;
    o.include_retired = 0;
    CHECK(baton_plan_infer_file(&c, r, n, &o, &p, &err) == BATON_OK);
    CHECK(p.pick >= 0 && !strcmp(p.rows[p.pick].config, "c5.4xlarge") && !p.rows[p.pick].retired);
    int retired_rows = 0;
    for (size_t i = 0; i < p.n; i++) retired_rows += p.rows[i].retired && strstr(p.rows[i].config, "eia1.");
    CHECK_EQ_U(retired_rows, 3);
    baton_plan_infer_free(&p);
    /* without the override, the catalog's own price for the EI row (0.68 + 0.52 $/h) */
    baton_infer_config cf;
    CHECK(baton_infer_catalog_config(&c, "c5.4xlarge+eia1.xlarge", &cf, &err) == BATON_OK);
    CHECK(near(cf.on_demand, 1.20, 1e-9) && near(baton_cost_sequential(cf.on_demand, 0.02034), 0.678, 0.001));
    /* a configuration the catalog does not know is an error naming the file's line */
    const char *bad = "configuration,mean_ms\nc5.large,10\nc9.huge,5\n";
    baton_latency_row *br = NULL;
    size_t bn = 0;
    CHECK(baton_latencies_parse("lat.csv", bad, strlen(bad), &br, &bn, &err) == BATON_OK && bn == 2);
    CHECK(baton_plan_infer_file(&c, br, bn, &o, &p, &err) == BATON_ERR_NOTFOUND);
    CHECK_MSG(strstr(err.msg, "line 3") && strstr(err.msg, "c9.huge"), "%s", err.msg);
    free(br);
    free(r);
    baton_infer_catalog_free(&c);
}

static void catalog(void)
{
    baton_infer_catalog c;
    baton_err err = {0};
    /* the shipped file is the built-in default */
    uint8_t *data = NULL;
    size_t len = 0;
    CHECK_MSG(baton_file_read_all("docs/catalog.csv", 1 << 20, &data, &len, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(data && len == strlen(baton_infer_catalog_builtin_csv()) && !memcmp(data, baton_infer_catalog_builtin_csv(), len),
              "docs/catalog.csv differs from the built-in catalog");
    free(data);
    CHECK(baton_infer_catalog_load(NULL, &c, &err) == BATON_OK);
    const baton_infer_catalog_entry *e = baton_infer_catalog_find(&c, "p3.2xlarge");
    CHECK(e && e->kind == BATON_CAT_GPU && near(e->on_demand, 3.06, 1e-9) && near(e->tflops, 15.7, 1e-9) &&
          e->vcpus == 8);
    e = baton_infer_catalog_find(&c, "c5.4xlarge");
    CHECK(e && near(e->on_demand, 0.68, 1e-9) && near(e->tflops, 0.67, 1e-9) && near(e->spot, 0.262, 1e-9) &&
          e->interruption == 2 && near(e->train_speed, 4, 1e-9) && !e->retired);
    e = baton_infer_catalog_find(&c, "eia1.medium");
    CHECK(e && e->kind == BATON_CAT_ACCEL && near(e->on_demand, 0.13, 1e-9) && near(e->tflops, 1.0, 1e-9) &&
          e->retired && e->spot < 0 && e->interruption < 0);
    /* today's families: chips, FP16, memory bandwidth; no projection where it would be invented */
    e = baton_infer_catalog_find(&c, "p5.48xlarge");
    CHECK(e && e->kind == BATON_CAT_GPU && e->chips == 8 && near(e->tflops, 67, 1e-9) && near(e->fp16_tflops, 989, 1e-9) &&
          near(e->mem_bw_gbs, 3350, 1e-9) && e->project && !strcmp(e->chip, "NVIDIA H100 80GB") && e->vcpus == 192);
    e = baton_infer_catalog_find(&c, "inf2.xlarge");
    CHECK(e && e->kind == BATON_CAT_NEURON && !e->project && near(e->fp16_tflops, 190, 1e-9) && !e->retired);
    e = baton_infer_catalog_find(&c, "c7g.xlarge");
    CHECK(e && e->kind == BATON_CAT_CPU && !e->project && strstr(e->chip, "Graviton3"));
    static const char *const families[] = {"c7i.", "c7g.", "m7i.", "g4dn.", "g5.", "g6.", "inf2.", "p4d.", "p5."};
    for (size_t k = 0; k < sizeof families / sizeof *families; k++) {
        int found = 0;
        for (size_t i = 0; i < c.n; i++)
            if (!strncmp(c.e[i].name, families[k], strlen(families[k])) && !c.e[i].retired && c.e[i].vcpus > 0 &&
                c.e[i].memory_gib > 0 && c.e[i].chip[0] && c.e[i].tflops > 0)
                found = 1;
        CHECK_MSG(found, "no current %s type with vCPUs, memory, chip and FP32", families[k]);
    }
    /* every current GPU or Neuron type has the memory bandwidth its projection is bounded by */
    for (size_t i = 0; i < c.n; i++)
        if ((c.e[i].kind == BATON_CAT_GPU || c.e[i].kind == BATON_CAT_NEURON) && !c.e[i].retired)
            CHECK_MSG(c.e[i].mem_bw_gbs > 0 && c.e[i].tflops > 0, "%s", c.e[i].name);
    baton_infer_config cf;
    CHECK(baton_infer_catalog_config(&c, "c5.large+eia1.medium", &cf, &err) == BATON_OK);
    /* spot: the instance's spot price plus the accelerator's on-demand one */
    CHECK(near(cf.on_demand, 0.215, 1e-9) && near(cf.tflops, 1.0, 1e-9) && cf.accel && near(cf.spot, 0.164, 1e-9) &&
          cf.retired);
    CHECK(baton_infer_catalog_config(&c, "eia1.medium", &cf, &err) == BATON_ERR_ARG && strstr(err.msg, "accelerator"));
    CHECK(baton_infer_catalog_config(&c, "c5.large+c5.xlarge", &cf, &err) == BATON_ERR_ARG);
    CHECK(baton_infer_catalog_config(&c, "m9.large", &cf, &err) == BATON_ERR_NOTFOUND && strstr(err.msg, "m9.large"));
    baton_infer_config *all = NULL;
    size_t n = 0;
    CHECK(baton_infer_catalog_configs(&c, 0, &all, &n, &err) == BATON_OK);
    CHECK_EQ_U(n, 23);   /* the current instances; the accelerators (Elastic Inference) are retired */
    free(all);
    CHECK(baton_infer_catalog_configs(&c, 1, &all, &n, &err) == BATON_OK);
    CHECK_EQ_U(n, 23 + 14 * 3);   /* and each of the 14 cpu instances with each of 3 accelerators */
    free(all);
    /* the one catalog serves the fleet too: every current instance has both prices, a speed and a bucket */
    const baton_infer_catalog *b = baton_infer_catalog_builtin();
    CHECK(b->n == c.n);
    for (size_t i = 0; i < b->n; i++)
        if (b->e[i].kind != BATON_CAT_ACCEL && !b->e[i].retired)
            CHECK_MSG(b->e[i].spot >= 0 && b->e[i].spot < b->e[i].on_demand && b->e[i].train_speed > 0 &&
                          b->e[i].interruption >= 0,
                      "%s", b->e[i].name);
    baton_infer_catalog_free(&c);

    /* a user's catalog: spot prices, comments, the notes column optional, notes with commas */
    const char *mine = "# mine\n\nname,kind,on_demand_per_h,spot_per_h,vcpus,memory_gib,fp32_tflops\n"
                       "x1,cpu,1.0,0.3,8,16,1.5\n"
                       "acc,accelerator,0.5,,,4,10\n";
    CHECK(baton_infer_catalog_parse("mine.csv", mine, strlen(mine), &c, &err) == BATON_OK && c.n == 2);
    CHECK(baton_infer_catalog_config(&c, "x1+acc", &cf, &err) == BATON_OK && near(cf.spot, 0.8, 1e-9));
    baton_infer_catalog_free(&c);

    const char *hdr = "name,kind,on_demand_per_h,spot_per_h,vcpus,memory_gib,fp32_tflops,notes\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%sa,cpu,1,,2,4,1,ok\nb,cpu,abc,,2,4,1,\n", hdr);
    CHECK(catalog_err(buf, "cat.csv:3: on_demand_per_h: 'abc' is not a number"));
    snprintf(buf, sizeof buf, "%sa,tpu,1,,2,4,1,\n", hdr);
    CHECK(catalog_err(buf, "cat.csv:2: kind 'tpu'"));
    snprintf(buf, sizeof buf, "# c\n%sa,cpu,1,,2,4,1,\na,cpu,2,,2,4,1,\n", hdr);
    CHECK(catalog_err(buf, "cat.csv:4: a is listed twice (first on line 3)"));
    snprintf(buf, sizeof buf, "%sa,cpu,1,,2\n", hdr);
    CHECK(catalog_err(buf, "cat.csv:2: 5 fields"));
    snprintf(buf, sizeof buf, "%sa,cpu,-1,,2,4,1,\n", hdr);
    CHECK(catalog_err(buf, "cat.csv:2: on_demand_per_h: -1 is negative"));
    snprintf(buf, sizeof buf, "%sa,cpu,,,2,4,1,\n", hdr);
    CHECK(catalog_err(buf, "cat.csv:2: on_demand_per_h is required"));
    snprintf(buf, sizeof buf, "%sa+b,cpu,1,,2,4,1,\n", hdr);
    CHECK(catalog_err(buf, "cat.csv:2: name 'a+b'"));
    snprintf(buf, sizeof buf, "%sa,cpu,1,,2.5,4,1,\n", hdr);
    CHECK(catalog_err(buf, "cat.csv:2: vcpus"));
    CHECK(catalog_err("name,price\na,1\n", "cat.csv:1: header: column 'price' is unknown"));
    CHECK(catalog_err("name,kind,notes,vcpus\na,cpu,x,1\n", "column 'notes' must come last"));
    CHECK(catalog_err("name,vcpus\na,1\n", "needs the columns name, kind and on_demand_per_h"));
    /* the columns in any order, the new ones included */
    const char *mine2 = "kind,name,on_demand_per_h,status,interruption,train_speed\ncpu,y,1,retired,>20%,2\n";
    CHECK(baton_infer_catalog_parse("m2.csv", mine2, strlen(mine2), &c, &err) == BATON_OK && c.n == 1 &&
          c.e[0].retired && c.e[0].interruption == 4 && near(c.e[0].train_speed, 2, 1e-12) && c.e[0].spot < 0);
    baton_infer_catalog_free(&c);
    /* the chip columns */
    const char *mine3 = "name,kind,on_demand_per_h,chip,chips,fp32_tflops,fp16_tflops,mem_bw_gbs,project\n"
                        "n1,neuron,2,Some NPU,4,10,80,500,no\ng1,gpu,3,Some GPU,,20,,900,\n";
    CHECK(baton_infer_catalog_parse("m3.csv", mine3, strlen(mine3), &c, &err) == BATON_OK && c.n == 2);
    CHECK(c.e[0].kind == BATON_CAT_NEURON && c.e[0].chips == 4 && near(c.e[0].fp16_tflops, 80, 1e-12) &&
          near(c.e[0].mem_bw_gbs, 500, 1e-12) && !c.e[0].project && !strcmp(c.e[0].chip, "Some NPU"));
    CHECK(c.e[1].chips == 1 && c.e[1].fp16_tflops < 0 && c.e[1].project);   /* defaults */
    CHECK(baton_infer_catalog_config(&c, "g1", &cf, &err) == BATON_OK && near(cf.mem_bw_gbs, 900, 1e-12) &&
          cf.project && cf.run_kind == BATON_CAT_GPU && cf.chips == 1);
    baton_infer_catalog_free(&c);
    CHECK(catalog_err("name,kind,on_demand_per_h,project\na,cpu,1,maybe\n", "cat.csv:2: project 'maybe'"));
    CHECK(catalog_err("name,kind,on_demand_per_h,chips\na,gpu,1,0\n", "cat.csv:2: chips"));
    CHECK(catalog_err("name,kind,on_demand_per_h,mem_bw_gbs\na,gpu,1,0\n", "cat.csv:2: mem_bw_gbs is 0"));
    CHECK(catalog_err("name,kind,on_demand_per_h\na,tpu,1\n", "expected cpu, gpu, neuron or accelerator"));
    CHECK(catalog_err("name,kind,on_demand_per_h,interruption\na,cpu,1,often\n", "cat.csv:2: interruption 'often'"));
    CHECK(catalog_err("name,kind,on_demand_per_h,status\na,cpu,1,gone\n", "cat.csv:2: status 'gone'"));
    CHECK(catalog_err("# only a comment\n", "empty"));
    CHECK(catalog_err(hdr, "no types"));
}

static void latencies(void)
{
    const char *ok = "label,configuration,mean_ms,p90_ms,batch,per_s\nx,c5.large,10,12,4,\ny,c5.xlarge,5,,1,300\n";
    baton_latency_row *r = NULL;
    size_t n = 0;
    baton_err err = {0};
    CHECK_MSG(baton_latencies_parse("lat.csv", ok, strlen(ok), &r, &n, &err) == BATON_OK && n == 2, "%s", err.msg);
    if (n == 2) {
        CHECK(!strcmp(r[0].config, "c5.large") && !strcmp(r[0].label, "x") && r[0].batch == 4);
        CHECK(near(r[0].per_s, 400, 1e-9) && near(r[0].p90_ms, 12, 1e-12));   /* batch / mean */
        CHECK(r[1].p90_ms < 0 && near(r[1].per_s, 300, 1e-12) && r[1].price_per_h < 0 && r[1].line == 3);
    }
    free(r);
    CHECK(latency_err("configuration,mean_ms,speed\nc5.large,1,2\n", "lat.csv:1: unknown column 'speed'"));
    CHECK(latency_err("configuration,p90_ms\nc5.large,1\n", "needs the columns configuration and mean_ms"));
    CHECK(latency_err("configuration,mean_ms\nc5.large,1\nc5.large,fast\n", "lat.csv:3: mean_ms: 'fast'"));
    CHECK(latency_err("configuration,mean_ms\n# c\nc5.large,1,3\n", "lat.csv:3: 3 fields, the header has 2"));
    CHECK(latency_err("configuration,mean_ms\nc5.large,0\n", "lat.csv:2: mean_ms must be > 0"));
    CHECK(latency_err("configuration,mean_ms,batch\nc5.large,1,0.5\n", "lat.csv:2: batch"));
    CHECK(latency_err("configuration,mean_ms,mean_ms\n", "appears twice"));
    CHECK(latency_err("configuration,mean_ms\n", "no rows"));
}

static const baton_plan_row *row_of(const baton_plan_infer *p, const char *config)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->rows[i].config, config)) return &p->rows[i];
    return NULL;
}

static const char *skip_of(const baton_plan_infer *p, const char *config)
{
    for (size_t i = 0; i < p->nskipped; i++)
        if (!strcmp(p->skipped[i].config, config)) return p->skipped[i].reason;
    return NULL;
}

static void measured_plan(void)
{
    baton_infer_catalog c;
    baton_err err = {0};
    CHECK(baton_infer_catalog_load(NULL, &c, &err) == BATON_OK);
    baton_infer_stats st[2];
    memset(st, 0, sizeof st);
    /* 2.4e7 FLOPs in 0.5 ms = 48 GFLOP/s of a 440 GFLOP/s peak: 10.9 % efficiency */
    st[0] = (baton_infer_stats){.ctx = {2, 1, BATON_INFER_FAST}, .model = "lenet", .mean_ms = 0.5, .p50_ms = 0.45,
                                .p90_ms = 0.6, .per_s = 2000, .peak_gflops = 440, .flops = 2.4e7, .min_bytes = 2.5e5,
                                .kernels = 6};
    st[1] = (baton_infer_stats){.ctx = {1, 1, BATON_INFER_GPU}, .skipped = "no CUDA build"};
    baton_plan_infer_opts o = {.slo_p90_ms = 0.5, .project = 1};
    baton_plan_infer p = {0};
    CHECK_MSG(baton_plan_infer_measured(&c, st, 2, &o, &p, &err) == BATON_OK, "%s", err.msg);
    /* the measured row (unpriced: no --here), then one projection per configuration with TFLOPS */
    CHECK(p.n >= 2 && p.rows[0].source == BATON_SRC_MEASURED && !strcmp(p.rows[0].config, "this machine") &&
          p.rows[0].price_per_h < 0 && p.rows[0].cost_thr < 0 && !p.rows[0].meets);
    CHECK(near(p.rows[0].efficiency, 48.0 / 440, 1e-9) && strstr(p.rows[0].basis, "of 440 GFLOP/s"));
    int projected = 0;
    for (size_t i = 1; i < p.n; i++) {
        CHECK(p.rows[i].source == BATON_SRC_PROJECTED && p.rows[i].basis[0]);
        projected++;
        CHECK(strcmp(p.rows[i].config, "c7g.xlarge") && strcmp(p.rows[i].config, "inf2.xlarge"));   /* project: no */
    }
    CHECK_MSG(projected == 15, "%d", projected);   /* the current configurations with an FP32 figure */
    /* p3.2xlarge: 0.6 ms x 440 GFLOP/s / 15.7 TFLOPS, above its floor (0.25 MB / 900 GB/s), plus what
     * a call costs there: 20 us + 6 kernels x 5 us */
    const baton_plan_row *p3 = row_of(&p, "p3.2xlarge");
    const double call = (20 + 6 * 5) / 1e3, p3_mean = 0.5 * 440 / 15700 + call;
    CHECK(p3 && near(p3->p90_ms, 0.6 * 440 / 15700 + call, 1e-9) && p3->meets && !p3->at_floor &&
          near(p3->call_ms, call, 1e-12));
    CHECK(p3 && near(p3->per_s, 1e3 / p3_mean, 1e-6) && near(p3->floor_ms, 2.5e5 / 900e9 * 1e3, 1e-12));
    CHECK(p3 && strstr(p3->basis, "15.7 TFLOPS x 10.9%") && strstr(p3->basis, "+ 0.05 ms a call"));
    /* a CPU pays no call: the model runs in place */
    const baton_plan_row *c7 = row_of(&p, "c7i.large");
    CHECK(c7 && c7->call_ms == 0 && near(c7->mean_ms, 0.5 * 440 / 205, 1e-9));
    /* several chips: one replica each (the latency of one, eight times the images/s) */
    const baton_plan_row *one = row_of(&p, "p5.4xlarge"), *eight = row_of(&p, "p5.48xlarge");
    CHECK(one && eight && near(one->mean_ms, eight->mean_ms, 1e-12) && near(eight->per_s, 8 * one->per_s, 1e-6) &&
          strstr(eight->basis, "8 replicas"));
    /* not projected, with the catalog's reason: Graviton (Arm) and Inferentia; no FP32 figure */
    CHECK(skip_of(&p, "c7g.xlarge") && strstr(skip_of(&p, "c7g.xlarge"), "Arm"));
    CHECK(skip_of(&p, "inf2.xlarge") && strstr(skip_of(&p, "inf2.xlarge"), "Neuron"));
    CHECK(skip_of(&p, "m5.large") && strstr(skip_of(&p, "m5.large"), "no FP32"));
    CHECK(!skip_of(&p, "c5.large+eia1.medium"));   /* retired: not even considered */
    /* the pick meets the SLO and is the cheapest that does */
    CHECK(p.pick > 0 && p.rows[p.pick].meets);
    for (size_t i = 0; i < p.n; i++)
        if (p.rows[i].meets && p.rows[i].cost_thr >= 0) CHECK(p.rows[i].cost_thr >= p.rows[p.pick].cost_thr);
    baton_plan_infer_free(&p);
    /* a projection resting on the memory floor alone never beats a measured row that meets the SLO:
     * "gpu1" is cheaper on paper (its FLOPs would take nothing; its floor is all there is) */
    {
        const char cat[] = "name,kind,on_demand_per_h,chips,fp32_tflops,mem_bw_gbs,call_us,launch_us,project\n"
                           "cpu1,cpu,1.0,1,0.44,,,,yes\n"
                           "gpu1,gpu,0.1,1,1000,100,0,0,yes\n";
        baton_infer_catalog two;
        CHECK(baton_infer_catalog_parse("two.csv", cat, sizeof cat - 1, &two, &err) == BATON_OK);
        baton_plan_infer_opts oh = {.slo_p90_ms = 10, .project = 1, .here = "cpu1"};
        CHECK(baton_plan_infer_measured(&two, st, 1, &oh, &p, &err) == BATON_OK);
        const baton_plan_row *g = row_of(&p, "gpu1");
        CHECK(g && g->at_floor && g->meets && g->cost_thr < p.rows[0].cost_thr);
        CHECK(p.pick == 0 && p.rows[0].source == BATON_SRC_MEASURED);
        baton_plan_infer_free(&p);
        oh.here = NULL;   /* nothing measured is priced: the bound is all there is, and it is picked */
        CHECK(baton_plan_infer_measured(&two, st, 1, &oh, &p, &err) == BATON_OK);
        CHECK(p.pick >= 0 && !strcmp(p.rows[p.pick].config, "gpu1"));
        baton_plan_infer_free(&p);
        baton_infer_catalog_free(&two);
    }
    /* a measurement without its kernel count (an older infer-bench) is not projected onto a device */
    st[0].kernels = 0;
    CHECK(baton_plan_infer_measured(&c, st, 2, &o, &p, &err) == BATON_OK);
    CHECK(!row_of(&p, "p3.2xlarge") && skip_of(&p, "p3.2xlarge") && strstr(skip_of(&p, "p3.2xlarge"), "kernel count"));
    CHECK(row_of(&p, "c7i.large"));
    baton_plan_infer_free(&p);
    st[0].kernels = 6;

    /* --here prices the measured row and is not projected onto itself */
    o.here = "c5.large";
    o.slo_p90_ms = 1;
    CHECK(baton_plan_infer_measured(&c, st, 2, &o, &p, &err) == BATON_OK);
    CHECK(!strcmp(p.rows[0].config, "c5.large") && near(p.rows[0].price_per_h, 0.085, 1e-12) && p.rows[0].meets);
    CHECK(near(p.rows[0].cost_thr, 0.085 * 1e5 / (3600 * 2000), 1e-12));
    for (size_t i = 1; i < p.n; i++) CHECK(strcmp(p.rows[i].config, "c5.large"));
    /* the order: the pick first, then by throughput-bound cost; one row per configuration */
    size_t idx[256];
    size_t m = baton_plan_infer_order(&p, 0, idx);
    CHECK(m == p.n && (long)idx[0] == p.pick);   /* one context: every row is its configuration's */
    for (size_t k = 2; k < m; k++) CHECK(p.rows[idx[k]].cost_thr >= p.rows[idx[k - 1]].cost_thr);
    CHECK(baton_plan_infer_svg("/tmp/baton-test-pareto.svg", &p, &o, &err) == BATON_OK);
    uint8_t *svg = NULL;
    size_t len = 0;
    CHECK(baton_file_read_all("/tmp/baton-test-pareto.svg", 1 << 20, &svg, &len, &err) == BATON_OK);
    /* distinct markers (a dot measured, diamonds projected); labels on the front only, the pick's named */
    CHECK(svg && strstr((char *)svg, "<svg") && strstr((char *)svg, "Pareto front") && strstr((char *)svg, "projected") &&
          strstr((char *)svg, "<circle") && strstr((char *)svg, "<polygon") && strstr((char *)svg, "(pick)"));
    int labels = 0;
    for (const char *q = svg ? (const char *)svg : ""; (q = strstr(q, "font-size=\"10\"")); q++) labels++;
    CHECK_MSG(labels >= 1 && labels < (int)p.n - 3, "%d labels for %zu rows", labels, p.n);
    free(svg);
    remove("/tmp/baton-test-pareto.svg");
    baton_plan_infer_free(&p);

    /* two contexts: one row per configuration by default, every row with all */
    baton_infer_stats two[2] = {st[0], st[0]};
    two[1].ctx.batch = 8;
    two[1].mean_ms = 2.0;
    two[1].p90_ms = 2.2;
    two[1].per_s = 4000;
    CHECK(baton_plan_infer_measured(&c, two, 2, &o, &p, &err) == BATON_OK);
    size_t *ix = calloc(p.n, sizeof *ix);
    CHECK(ix && baton_plan_infer_order(&p, 1, ix) == p.n);
    m = ix ? baton_plan_infer_order(&p, 0, ix) : 0;
    CHECK(m == p.n / 2 && (long)ix[0] == p.pick);
    for (size_t k = 0; k < m; k++)
        for (size_t j = k + 1; j < m; j++) CHECK(strcmp(p.rows[ix[k]].config, p.rows[ix[j]].config));
    free(ix);
    baton_plan_infer_free(&p);

    /* projection off: the measured row only */
    o.project = 0;
    CHECK(baton_plan_infer_measured(&c, st, 2, &o, &p, &err) == BATON_OK && p.n == 1);
    baton_plan_infer_free(&p);
    o.here = "nope";
    CHECK(baton_plan_infer_measured(&c, st, 2, &o, &p, &err) == BATON_ERR_NOTFOUND && strstr(err.msg, "--here"));
    baton_infer_catalog_free(&c);
}

/* The physical floor, over the whole catalog: no projected latency below what the chip's memory
 * bandwidth allows for the bytes a query must move, none above the efficiency measured here. */
static void projection_bounds(void)
{
    baton_infer_catalog c;
    baton_err err = {0};
    CHECK(baton_infer_catalog_load(NULL, &c, &err) == BATON_OK);
    /* lenet as measured on a 2-core x86 host (infer-bench --json --peak): 0.3853 ms at batch 1 */
    baton_infer_stats lenet = {.ctx = {1, 1, BATON_INFER_FAST}, .model = "lenet", .mean_ms = 0.3853,
                               .p50_ms = 0.3307, .p90_ms = 0.4746, .per_s = 2595, .flops = 23984896,
                               .peak_gflops = 161.2, .min_bytes = 4802704, .kernels = 6};
    /* a wide MLP (25M weights: 100 MB, 5e7 FLOPs a query, memory-bound on every chip), and a host
     * whose peak was under-measured */
    baton_infer_stats big = lenet, hot = lenet;
    big.min_bytes = 1e8;
    big.flops = 5e7;
    big.mean_ms = 2;
    big.p90_ms = 2.2;
    big.per_s = 500;
    hot.peak_gflops = 20;   /* 62 GFLOP/s achieved: "310 % efficiency" */
    const baton_infer_stats *cases[] = {&lenet, &big, &hot};
    for (size_t k = 0; k < 3; k++) {
        baton_plan_infer_opts o = {.project = 1, .include_retired = 1};
        baton_plan_infer p;
        CHECK(baton_plan_infer_measured(&c, cases[k], 1, &o, &p, &err) == BATON_OK);
        int floors = 0;
        for (size_t i = 1; i < p.n; i++) {
            const baton_plan_row *r = &p.rows[i];
            baton_infer_config cf;
            CHECK(baton_infer_catalog_config(&c, r->config, &cf, &err) == BATON_OK);
            const double floor_ms = cf.mem_bw_gbs > 0 ? cases[k]->min_bytes / (cf.mem_bw_gbs * 1e9) * 1e3 : 0;
            const double compute_ms = cases[k]->flops / (cf.tflops * 1e12) * 1e3;   /* at 100 % efficiency */
            const double call_ms = cf.run_kind != BATON_CAT_CPU ? (cf.call_us + cases[k]->kernels * cf.launch_us) / 1e3 : 0;
            CHECK_MSG(r->mean_ms >= (floor_ms + call_ms) * (1 - 1e-12) && r->p90_ms >= (floor_ms + call_ms) * (1 - 1e-12),
                      "%s: %g ms below its floor %g ms + a call's %g ms", r->config, r->mean_ms, floor_ms, call_ms);
            if (cf.run_kind != BATON_CAT_CPU) CHECK_MSG(r->call_ms >= 0.05, "%s: a device call for free", r->config);
            CHECK_MSG(r->mean_ms >= compute_ms * (1 - 1e-12), "%s: %g ms beats its chip's peak (%g ms)", r->config,
                      r->mean_ms, compute_ms);
            if (cf.run_kind != BATON_CAT_CPU) CHECK_MSG(r->floor_ms > 0, "%s: a device without its floor", r->config);
            floors += r->at_floor;
            CHECK(!r->at_floor || strstr(r->basis, "memory"));
        }
        if (cases[k] == &lenet) {
            /* lenet on p3.2xlarge: 0.3853 ms x 161.2 / 15700 = 0.00396 ms by FLOPs, raised to the
             * 4.8 MB / 900 GB/s = 0.00534 ms its memory needs */
            const baton_plan_row *p3 = row_of(&p, "p3.2xlarge");
            CHECK(p3 && p3->at_floor && near(p3->mean_ms, 4802704 / 900e9 * 1e3 + 0.05, 1e-12));
        }
        if (cases[k] == &big) CHECK(floors >= 5);   /* every GPU is memory-bound for it */
        if (cases[k] == &hot) {
            /* efficiency capped at 100 %: c5.4xlarge runs the FLOPs at its peak, no faster */
            const baton_plan_row *c54 = row_of(&p, "c5.4xlarge");
            CHECK(c54 && near(c54->mean_ms, 23984896 / 0.67e12 * 1e3, 1e-12));
        }
        baton_plan_infer_free(&p);
    }
    /* no model size: devices are not projected onto (the floor is unknown), CPUs still are */
    baton_infer_stats old = lenet;
    old.min_bytes = 0;
    baton_plan_infer_opts o = {.project = 1};
    baton_plan_infer p;
    CHECK(baton_plan_infer_measured(&c, &old, 1, &o, &p, &err) == BATON_OK);
    CHECK(!row_of(&p, "p3.2xlarge") && skip_of(&p, "p3.2xlarge") && strstr(skip_of(&p, "p3.2xlarge"), "min_bytes"));
    CHECK(row_of(&p, "c7i.xlarge") != NULL);
    baton_plan_infer_free(&p);
    /* a catalog GPU without a bandwidth figure is not projected onto */
    const char *nobw = "name,kind,on_demand_per_h,fp32_tflops\ng9,gpu,1,50\nc9,cpu,0.1,0.2\n";
    baton_infer_catalog nb;
    CHECK(baton_infer_catalog_parse("nb.csv", nobw, strlen(nobw), &nb, &err) == BATON_OK);
    CHECK(baton_plan_infer_measured(&nb, &lenet, 1, &o, &p, &err) == BATON_OK);
    CHECK(!row_of(&p, "g9") && skip_of(&p, "g9") && strstr(skip_of(&p, "g9"), "bandwidth") && row_of(&p, "c9"));
    baton_plan_infer_free(&p);
    baton_infer_catalog_free(&nb);
    baton_infer_catalog_free(&c);
}

static void stats_io(void)
{
    double v[10];
    for (int i = 0; i < 10; i++) v[i] = i + 1;
    CHECK(baton_infer_percentile(v, 10, 0.5) == 5 && baton_infer_percentile(v, 10, 0.9) == 9);
    CHECK(baton_infer_percentile(v, 10, 0.99) == 10 && baton_infer_percentile(v, 10, 0) == 1);
    CHECK(baton_infer_percentile(v, 1, 0.9) == 1);
    baton_infer_stats s = {.ctx = {2, 8, BATON_INFER_FAST}, .model = "resnet20", .cold_start_ms = 42.5,
                           .first_ms = 0.9, .mean_ms = 0.51, .p50_ms = 0.5, .p90_ms = 0.6, .p95_ms = 0.7,
                           .p99_ms = 0.9, .per_s = 15686.3, .queries = 1234, .flops = 8e7, .peak_gflops = 440};
    char *js = baton_infer_stats_json(&s);
    baton_infer_stats b;
    baton_err err = {0};
    CHECK_MSG(js && baton_infer_stats_parse("x", 1, js, &b, &err) == BATON_OK, "%s", err.msg);
    CHECK(b.ctx.threads == 2 && b.ctx.batch == 8 && b.ctx.path == BATON_INFER_FAST && !strcmp(b.model, "resnet20"));
    CHECK(near(b.p90_ms, 0.6, 1e-9) && near(b.cold_start_ms, 42.5, 1e-9) && b.queries == 1234 &&
          near(b.peak_gflops, 440, 1e-9) && near(b.per_s, 15686.3, 1e-9));
    free(js);
    CHECK(baton_infer_stats_parse("m.json", 7, "{\"threads\":1,\"batch\":1,\"path\":\"fast\",\"mean_ms\":1,\"per_s\":9}",
                                  &b, &err) != BATON_OK);
    CHECK_MSG(strstr(err.msg, "m.json:7") && strstr(err.msg, "p50_ms"), "%s", err.msg);
    CHECK(baton_infer_stats_parse("m.json", 2, "{\"threads\":1,\"batch\":1,\"path\":\"tpu\"}", &b, &err) != BATON_OK &&
          strstr(err.msg, "path"));
    CHECK(baton_infer_stats_parse("m.json", 3, "not json", &b, &err) != BATON_OK && strstr(err.msg, "m.json:3"));
    CHECK(baton_infer_stats_parse("m.json", 1, "{\"threads\":1,\"batch\":4,\"path\":\"gpu\",\"skipped\":\"no CUDA build\"}",
                                  &b, &err) == BATON_OK && !strcmp(b.skipped, "no CUDA build") && b.ctx.batch == 4);
}

static void plan_train(void)
{
    baton_infer_catalog c;
    baton_err err = {0};
    CHECK(baton_infer_catalog_load(NULL, &c, &err) == BATON_OK);
    baton_plan_train_opts o = {.samples_per_s = 1000, .here = "c5.4xlarge", .dataset = 60000, .epochs = 10,
                               .interrupt_month = 0.10, .ckpt_seconds = 10, .restart_seconds = 120, .spot_discount = 0.6};
    baton_plan_train p;
    CHECK_MSG(baton_plan_train_run(&c, &o, &p, &err) == BATON_OK, "%s", err.msg);
    CHECK(near(p.mtbi_h, 730 / -log(0.9), 1e-9));
    int seen = 0;
    for (size_t i = 0; i < p.n; i++) {
        const baton_plan_train_row *r = &p.rows[i];
        CHECK(strncmp(r->config, "eia1", 4));   /* accelerators do not train */
        CHECK(r->spot_hours >= r->hours && r->overhead > 0 && !r->spot_estimated);   /* the catalog's spot price */
        CHECK(near(r->spot_cost, r->spot_hours * r->spot_price, 1e-9));
        if (!strcmp(r->config, "c5.4xlarge")) {
            seen++;
            CHECK(r->source == BATON_SRC_MEASURED && near(r->hours, 600.0 / 3600, 1e-12));
            CHECK(near(r->od_cost, 600.0 / 3600 * 0.68, 1e-12) && near(r->spot_price, 0.262, 1e-12));
        }
        if (!strcmp(r->config, "p3.2xlarge")) {
            seen++;   /* projected by TFLOPS: 1000 x 15.7 / 0.67 */
            CHECK(r->source == BATON_SRC_PROJECTED && near(r->samples_per_s, 1000 * 15.7 / 0.67, 1e-6));
            CHECK(near(r->hours, 600000.0 / r->samples_per_s / 3600, 1e-12));
        }
        CHECK(strcmp(r->config, "c7g.xlarge") && strcmp(r->config, "inf2.xlarge"));   /* project: no */
    }
    CHECK(seen == 2);
    baton_plan_train_free(&p);
    /* a catalog without a spot price: --spot-discount stands in, marked as estimated */
    const char *nospot = "name,kind,on_demand_per_h,fp32_tflops\nc5.4xlarge,cpu,0.68,0.67\n";
    baton_infer_catalog ns;
    CHECK(baton_infer_catalog_parse("ns.csv", nospot, strlen(nospot), &ns, &err) == BATON_OK);
    CHECK(baton_plan_train_run(&ns, &o, &p, &err) == BATON_OK && p.n == 1 && p.rows[0].spot_estimated &&
          near(p.rows[0].spot_price, 0.68 * 0.4, 1e-12));
    baton_plan_train_free(&p);
    baton_infer_catalog_free(&ns);
    /* a bf16 rate (--precision bf16): projected by the bf16 figures (fp16_tflops) from the --here
     * type's, onto the types that have one; the others (no bfloat16: the flag is refused there)
     * are left out, and without a --here type that has a bf16 figure there is nothing to project */
    baton_plan_train_opts b = o;
    b.here = "c7i.xlarge";
    b.bf16 = 1;
    CHECK_MSG(baton_plan_train_run(&c, &b, &p, &err) == BATON_OK, "%s", err.msg);
    int bseen = 0;
    for (size_t i = 0; i < p.n; i++) {
        const baton_plan_train_row *r = &p.rows[i];
        CHECK_MSG(strncmp(r->config, "c5.", 3) && strncmp(r->config, "c6i.", 4), "%s has no bfloat16", r->config);
        double want = !strcmp(r->config, "c7i.xlarge") ? 1000 : !strcmp(r->config, "m7i.xlarge") ? 1000   /* same chip */
                    : !strcmp(r->config, "c7i.large") ? 1000 * 3.28 / 6.55 : !strcmp(r->config, "p3.2xlarge") ? 1000 * 125 / 6.55 : -1;
        if (want < 0) continue;
        bseen++;
        CHECK_MSG(near(r->samples_per_s, want, 1e-6), "%s: %g samples/s, expected %g", r->config, r->samples_per_s, want);
        CHECK(r->source == (!strcmp(r->config, "c7i.xlarge") ? BATON_SRC_MEASURED : BATON_SRC_PROJECTED));
    }
    CHECK(bseen == 4);
    baton_plan_train_free(&p);
    b.here = "c5.4xlarge";
    CHECK(baton_plan_train_run(&c, &b, &p, &err) == BATON_ERR_USAGE && strstr(err.msg, "fp16_tflops"));
    b.here = NULL;
    CHECK(baton_plan_train_run(&c, &b, &p, &err) == BATON_ERR_USAGE);
    o.samples_per_s = 0;
    CHECK(baton_plan_train_run(&c, &o, &p, &err) == BATON_ERR_USAGE);
    baton_infer_catalog_free(&c);
}

int main(void)
{
    young_daly();
    seed_costs();
    catalog();
    latencies();
    measured_plan();
    projection_bounds();
    stats_io();
    plan_train();
    /* the peak FLOP/s measurement gives a plausible, positive figure */
    double g = baton_infer_peak_gflops(1, 0.05);
    CHECK_MSG(g > 0.5 && g < 1e5, "%f GFLOP/s", g);
    CHECK_DONE();
}
