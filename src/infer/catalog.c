/* catalog.c — the instance catalog, the one list of machine types every command uses: plan infer,
 * plan train, job files (types named without prices) and `baton fleet catalog`. A CSV file users
 * edit; the built-in default is docs/catalog.csv's text (a test keeps the two identical), parsed
 * once (baton_infer_catalog_builtin). Configurations are "INSTANCE" or "INSTANCE+ACCELERATOR".
 *
 * Format: '#' lines and blank lines are comments; the first other line is the header, naming the
 * columns the file has, in any order: name, kind, on_demand_per_h (these three required),
 * spot_per_h, interruption (a Spot Advisor bucket: <5%, 5-10%, 10-15%, 15-20%, >20%), train_speed
 * (relative to c5.xlarge), vcpus, memory_gib, chip (what runs the model: free text without commas),
 * chips (how many per instance, default 1), fp32_tflops, fp16_tflops, mem_bw_gbs (per chip),
 * call_us, launch_us (a device's least cost per query and per kernel, microseconds), project (yes | no: may plan infer project onto it), status (current | retired) and notes (last
 * when present: the rest of the line, commas included). A catalog of an older version (fewer
 * columns) loads with the missing ones unknown. Then one type per line. Names are [A-Za-z0-9._-],
 * unique. kind is cpu, gpu, neuron or accelerator. Numbers may be empty (unknown); a spot price
 * above on demand is accepted with a warning. Every problem is reported with its line number and
 * field; nothing is half-loaded. */
#include "infer_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char builtin[] =
    "# baton's instance catalog: the one list of machine types every command uses (plan infer, plan train,\n"
    "# job files and `baton fleet catalog`). EC2, us-east-1, Linux. on_demand_per_h: AWS's price list for\n"
    "# us-east-1 of 2026-01-19 (the on-demand table generated from the AWS Price List API that Karpenter\n"
    "# ships), read on 2026-12-01; the seed's rows kept their 2019 figures where AWS's list still agrees.\n"
    "# spot_per_h is a typical reading (about 30-40 % of on demand) and interruption the Spot Advisor bucket\n"
    "# (share of instances reclaimed per month): illustrative, set your own in a job file or a --catalog\n"
    "# file when they matter. train_speed: training throughput relative to c5.xlarge (the local fleet\n"
    "# simulates progress with it; rough guesses beyond the seed's CPUs; inf2's is its vCPUs'). kind: cpu | gpu | neuron (the\n"
    "# instance's AWS Inferentia or Trainium chips run models compiled by the Neuron SDK) | accelerator\n"
    "# (attached to an instance: \"c5.large+eia1.medium\" costs both and runs on the accelerator's FLOPS).\n"
    "# chip: what runs the model (the GPU, the accelerator, or the CPU); chips: how many per instance.\n"
    "# fp32_tflops, fp16_tflops (FP16/BF16 dense, tensor cores or AMX where the chip has them) and\n"
    "# mem_bw_gbs (its memory bandwidth, GB/s) are per chip; for a CPU instance, the share of its vCPUs.\n"
    "# GPU, Inferentia and Elastic Inference figures are their makers' data sheets; CPU figures for the\n"
    "# 7th generation are cores x all-core turbo clock x FLOPs per cycle (Sapphire Rapids at 3.2 GHz: 64\n"
    "# FP32 with AVX-512, 1024 BF16 with AMX; Graviton3 at 2.6 GHz: 32 FP32); the seed's c5 figures are its\n"
    "# own. project: yes | no — no where plan infer's projection (this host's FLOP efficiency carried to\n"
    "# another chip) would be invented rather than estimated: Arm CPUs (the efficiency measured on x86\n"
    "# does not carry over) and Inferentia (it runs Neuron-compiled graphs, not this engine). status:\n"
    "# current, or retired (no longer sold: kept so that older studies reproduce, never picked unless\n"
    "# asked). call_us and launch_us (devices: GPUs, Neuron chips): the least any query costs there whatever\n"
    "# its size, microseconds: call_us once per query (the input's and the logits' copies over PCIe and the\n"
    "# wait for the result, about 10 us each way) plus launch_us per kernel the model runs (a CUDA kernel\n"
    "# launch costs about 5 us; the seed's ResNet-152 at 12.31 ms on a V100, 0.73 ms of it FLOPs, shows\n"
    "# frameworks pay more): floors that keep a projection from promising what no real call delivers.\n"
    "# Empty fields are unknown.\n"
    "name,kind,on_demand_per_h,spot_per_h,interruption,train_speed,vcpus,memory_gib,chip,chips,fp32_tflops,fp16_tflops,mem_bw_gbs,call_us,launch_us,project,status,notes\n"
    "c5.large,cpu,0.085,0.034,<5%,0.5,2,4,Intel Xeon (Skylake/Cascade Lake),1,0.084,,,,,yes,current,TFLOPS not in the seed: c5.4xlarge's 0.67 x 2/16 vCPUs\n"
    "c5.xlarge,cpu,0.17,0.068,5-10%,1.0,4,8,Intel Xeon (Skylake/Cascade Lake),1,0.168,,,,,yes,current,TFLOPS not in the seed: c5.4xlarge's 0.67 x 4/16 vCPUs\n"
    "c5.2xlarge,cpu,0.34,0.131,5-10%,2.0,8,16,Intel Xeon (Skylake/Cascade Lake),1,0.335,,,,,yes,current,TFLOPS: c5.4xlarge's 0.67 x 8/16 vCPUs\n"
    "c5.4xlarge,cpu,0.68,0.262,10-15%,4.0,16,32,Intel Xeon (Skylake/Cascade Lake),1,0.67,,,,,yes,current,seed\n"
    "c5a.xlarge,cpu,0.154,0.062,<5%,0.95,4,8,AMD EPYC 7R32,1,,,,,,yes,current,no FP32 figure\n"
    "c6i.xlarge,cpu,0.17,0.066,<5%,1.1,4,8,Intel Xeon 8375C (Ice Lake),1,,,,,,yes,current,no FP32 figure\n"
    "c7i.large,cpu,0.08925,0.035,<5%,0.6,2,4,Intel Xeon 8488C (Sapphire Rapids),1,0.205,3.28,,,,yes,current,1 core x 3.2 GHz; BF16 with AMX\n"
    "c7i.xlarge,cpu,0.1785,0.071,5-10%,1.2,4,8,Intel Xeon 8488C (Sapphire Rapids),1,0.41,6.55,,,,yes,current,2 cores x 3.2 GHz; BF16 with AMX\n"
    "c7g.xlarge,cpu,0.145,0.058,<5%,1.1,4,8,AWS Graviton3 (Arm Neoverse V1),1,0.333,,,,,no,current,Arm: the FLOP efficiency measured on an x86 host does not carry over: measure it there (baton infer-bench --json)\n"
    "m5.large,cpu,0.096,0.036,<5%,0.5,2,8,Intel Xeon (Skylake/Cascade Lake),1,,,,,,yes,current,no FP32 figure\n"
    "m5.xlarge,cpu,0.192,0.074,5-10%,1.0,4,16,Intel Xeon (Skylake/Cascade Lake),1,,,,,,yes,current,no FP32 figure\n"
    "m5.2xlarge,cpu,0.384,0.148,10-15%,2.0,8,32,Intel Xeon (Skylake/Cascade Lake),1,,,,,,yes,current,no FP32 figure\n"
    "m7i.xlarge,cpu,0.2016,0.080,<5%,1.2,4,16,Intel Xeon 8488C (Sapphire Rapids),1,0.41,6.55,,,,yes,current,2 cores x 3.2 GHz; BF16 with AMX\n"
    "r5.xlarge,cpu,0.252,0.087,<5%,1.0,4,32,Intel Xeon (Skylake/Cascade Lake),1,,,,,,yes,current,no FP32 figure\n"
    "p2.xlarge,gpu,0.90,0.27,>20%,6.0,4,61,NVIDIA K80 (one GK210),1,4.37,,240,20,5,yes,current,previous generation; half a K80 board (8.73 TFLOPS and 480 GB/s for two GPUs with boost)\n"
    "p3.2xlarge,gpu,3.06,0.918,15-20%,25.0,8,61,NVIDIA V100 16GB,1,15.7,125,900,20,5,yes,current,one V100 GPU\n"
    "g4dn.xlarge,gpu,0.526,0.158,10-15%,10.0,4,16,NVIDIA T4,1,8.1,65,320,20,5,yes,current,one T4 GPU\n"
    "g5.xlarge,gpu,1.006,0.302,10-15%,18.0,4,16,NVIDIA A10G,1,31.2,,600,20,5,yes,current,one A10G GPU (AWS publishes no tensor figure for the A10G)\n"
    "g6.xlarge,gpu,0.8048,0.32,5-10%,15.0,4,16,NVIDIA L4,1,30.3,121,300,20,5,yes,current,one L4 GPU\n"
    "inf2.xlarge,neuron,0.7582,0.23,<5%,1.0,4,16,AWS Inferentia2,1,47.5,190,820,20,5,no,current,Inferentia2 runs graphs compiled by the Neuron SDK, not this engine: measure it there\n"
    "p4d.24xlarge,gpu,21.957642,8.8,>20%,400.0,96,1152,NVIDIA A100 40GB,8,19.5,312,1555,20,5,yes,current,eight A100 GPUs\n"
    "p5.4xlarge,gpu,6.88,2.75,15-20%,75.0,16,256,NVIDIA H100 80GB,1,67,989,3350,20,5,yes,current,one H100 GPU\n"
    "p5.48xlarge,gpu,55.04,22.0,>20%,600.0,192,2048,NVIDIA H100 80GB,8,67,989,3350,20,5,yes,current,eight H100 GPUs\n"
    "eia1.medium,accelerator,0.13,,,,,1,Elastic Inference,1,1.0,,,,,yes,retired,Elastic Inference (no new customers since 2023-04-15; retired); memory in GB of the accelerator\n"
    "eia1.large,accelerator,0.26,,,,,2,Elastic Inference,1,2.0,,,,,yes,retired,Elastic Inference (retired); price not in the seed (list price)\n"
    "eia1.xlarge,accelerator,0.52,,,,,4,Elastic Inference,1,4.0,,,,,yes,retired,Elastic Inference (retired); price from the seed's c5.xlarge+eia1.xlarge at 0.69\n";

/* The columns a catalog may have; the header line names those it has, in any order (notes, when
 * present, last: it takes the rest of the line, commas included). */
enum { COL_NAME, COL_KIND, COL_OD, COL_SPOT, COL_INT, COL_SPEED, COL_VCPUS, COL_MEM, COL_CHIP, COL_CHIPS, COL_TFLOPS,
       COL_FP16, COL_MEMBW, COL_CALL, COL_LAUNCH, COL_PROJECT, COL_STATUS, COL_NOTES, NCOLS };
static const char *const col_names[NCOLS] = {"name",        "kind",     "on_demand_per_h", "spot_per_h",
                                             "interruption", "train_speed", "vcpus",         "memory_gib",
                                             "chip",         "chips",    "fp32_tflops",     "fp16_tflops",
                                             "mem_bw_gbs",   "call_us",  "launch_us",       "project",
                                             "status",       "notes"};
static const char *const kind_names[] = {"cpu", "gpu", "accelerator", "neuron"};

const char *baton_infer_kind_name(int kind)
{
    return kind >= 0 && kind < (int)(sizeof kind_names / sizeof *kind_names) ? kind_names[kind] : "?";
}

const char *baton_infer_catalog_builtin_csv(void) { return builtin; }

void baton_infer_catalog_free(baton_infer_catalog *c)
{
    free(c->e);
    c->e = NULL;
    c->n = 0;
}

/* A number field; empty gives *v = dflt unless required. */
static int field_num(const char *name, size_t line, const char *field, const char *s, int required, double dflt,
                     double *v, baton_err *err)
{
    if (!*s) {
        if (required) return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s is required", name, line, field);
        *v = dflt;
        return BATON_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(x))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s: '%s' is not a number", name, line, field, s);
    if (x < 0) return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s: %s is negative", name, line, field, s);
    *v = x;
    return BATON_OK;
}

/* Split line (modified in place) at commas into at most max fields; the last takes the rest. */
static int split(char *line, char **f, int max)
{
    int n = 0;
    char *s = line;
    while (n < max - 1) {
        char *c = strchr(s, ',');
        f[n++] = s;
        if (!c) return n;
        *c = 0;
        s = c + 1;
    }
    f[n++] = s;
    return n;
}

static int valid_name(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
              *s == '_' || *s == '-'))
            return 0;
    return 1;
}

static const char *const bucket_names[5] = {"<5%", "5-10%", "10-15%", "15-20%", ">20%"};

const char *baton_infer_bucket_name(int b) { return b >= 0 && b < 5 ? bucket_names[b] : "?"; }

int baton_infer_bucket_parse(const char *s, int *b)
{
    static const char *const alt[5] = {"<5", "5-10", "10-15", "15-20", ">20"};
    static const char *const word[5] = {"lt5", "5-10", "10-15", "15-20", "gt20"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, bucket_names[i]) || !strcmp(s, alt[i]) || !strcmp(s, word[i])) {
            *b = i;
            return 0;
        }
    return -1;
}

/* The header line: which column each field is (col[i] for field i); the required ones present. */
static int parse_header(const char *name, size_t line, char *l, int *col, int *ncol, baton_err *err)
{
    char *f[NCOLS + 1];
    int nf = split(l, f, NCOLS + 1), seen[NCOLS] = {0};
    for (int i = 0; i < nf; i++) {
        infer_text_trim(&f[i]);
        int k = 0;
        while (k < NCOLS && strcmp(f[i], col_names[k])) k++;
        if (k == NCOLS || seen[k] || (k == COL_NOTES && i != nf - 1))
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "%s:%zu: header: column '%s' %s (columns: name, kind, on_demand_per_h, spot_per_h, "
                                 "interruption, train_speed, vcpus, memory_gib, chip, chips, fp32_tflops, fp16_tflops, "
                                 "mem_bw_gbs, call_us, launch_us, project, status, notes last)",
                                 name, line, f[i], k == NCOLS ? "is unknown" : seen[k] ? "is listed twice" : "must come last");
        seen[k] = 1;
        col[i] = k;
    }
    if (!seen[COL_NAME] || !seen[COL_KIND] || !seen[COL_OD])
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: the header needs the columns name, kind and on_demand_per_h",
                             name, line);
    *ncol = nf;
    return BATON_OK;
}

/* One type line into e. */
static int parse_entry(const char *name, size_t line, char *l, const int *col, int ncol, baton_infer_catalog_entry *e,
                       baton_err *err)
{
    char *f[NCOLS + 1];
    const int has_notes = col[ncol - 1] == COL_NOTES;
    int nf = split(l, f, has_notes ? ncol : NCOLS + 1);
    if (nf != ncol && !(has_notes && nf == ncol - 1))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %d fields, the header has %d", name, line, nf, ncol);
    const char *v[NCOLS];
    for (int k = 0; k < NCOLS; k++) v[k] = "";
    for (int i = 0; i < nf; i++) {
        infer_text_trim(&f[i]);
        v[col[i]] = f[i];
    }
    memset(e, 0, sizeof *e);
    e->line = line;
    if (!valid_name(v[COL_NAME]) || strlen(v[COL_NAME]) >= sizeof e->name)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: name '%s': expected 1-%zu of [A-Za-z0-9._-]", name, line,
                             v[COL_NAME], sizeof e->name - 1);
    snprintf(e->name, sizeof e->name, "%s", v[COL_NAME]);
    e->kind = -1;
    for (int k = 0; k < (int)(sizeof kind_names / sizeof *kind_names); k++)
        if (!strcmp(v[COL_KIND], kind_names[k])) e->kind = k;
    if (e->kind < 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: kind '%s': expected cpu, gpu, neuron or accelerator", name,
                             line, v[COL_KIND]);
    double vc = 0, chips = 1;
    int rc;
    if ((rc = field_num(name, line, "on_demand_per_h", v[COL_OD], 1, 0, &e->on_demand, err)) ||
        (rc = field_num(name, line, "spot_per_h", v[COL_SPOT], 0, -1, &e->spot, err)) ||
        (rc = field_num(name, line, "train_speed", v[COL_SPEED], 0, -1, &e->train_speed, err)) ||
        (rc = field_num(name, line, "vcpus", v[COL_VCPUS], 0, 0, &vc, err)) ||
        (rc = field_num(name, line, "memory_gib", v[COL_MEM], 0, -1, &e->memory_gib, err)) ||
        (rc = field_num(name, line, "chips", v[COL_CHIPS], 0, 1, &chips, err)) ||
        (rc = field_num(name, line, "fp32_tflops", v[COL_TFLOPS], 0, -1, &e->tflops, err)) ||
        (rc = field_num(name, line, "fp16_tflops", v[COL_FP16], 0, -1, &e->fp16_tflops, err)) ||
        (rc = field_num(name, line, "mem_bw_gbs", v[COL_MEMBW], 0, -1, &e->mem_bw_gbs, err)) ||
        (rc = field_num(name, line, "call_us", v[COL_CALL], 0, -1, &e->call_us, err)) ||
        (rc = field_num(name, line, "launch_us", v[COL_LAUNCH], 0, -1, &e->launch_us, err)))
        return rc;
    if (vc != floor(vc) || vc > 1e6)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: vcpus: '%s' is not a whole number", name, line, v[COL_VCPUS]);
    if (chips != floor(chips) || chips < 1 || chips > 1024)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: chips: '%s' is not a whole number from 1 to 1024", name,
                             line, v[COL_CHIPS]);
    const char *zero = e->tflops == 0 ? "fp32_tflops" : e->train_speed == 0 ? "train_speed"
                     : e->fp16_tflops == 0 ? "fp16_tflops" : e->mem_bw_gbs == 0 ? "mem_bw_gbs" : NULL;
    if (zero)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s is 0 (leave it empty when unknown)", name, line, zero);
    e->vcpus = (int)vc;
    e->chips = (int)chips;
    if (strlen(v[COL_CHIP]) >= sizeof e->chip)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: chip: at most %zu characters", name, line,
                             sizeof e->chip - 1);
    snprintf(e->chip, sizeof e->chip, "%s", v[COL_CHIP]);
    if (*v[COL_PROJECT] && strcmp(v[COL_PROJECT], "yes") && strcmp(v[COL_PROJECT], "no"))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: project '%s': expected yes or no", name, line,
                             v[COL_PROJECT]);
    e->project = strcmp(v[COL_PROJECT], "no") != 0;
    e->interruption = -1;
    if (*v[COL_INT] && baton_infer_bucket_parse(v[COL_INT], &e->interruption))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: interruption '%s': expected a Spot Advisor bucket: <5%%, "
                             "5-10%%, 10-15%%, 15-20%% or >20%%", name, line, v[COL_INT]);
    if (*v[COL_STATUS] && strcmp(v[COL_STATUS], "current") && strcmp(v[COL_STATUS], "retired"))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: status '%s': expected current or retired", name, line,
                             v[COL_STATUS]);
    e->retired = !strcmp(v[COL_STATUS], "retired");
    if (e->spot > e->on_demand)
        baton_log(BATON_LOG_WARN, "%s:%zu: %s: spot price $%g/h is above its on-demand price $%g/h", name, line, e->name,
                  e->spot, e->on_demand);
    snprintf(e->notes, sizeof e->notes, "%s", v[COL_NOTES]);
    return BATON_OK;
}

int baton_infer_catalog_parse(const char *name, const char *text, size_t len, baton_infer_catalog *c, baton_err *err)
{
    c->e = NULL;
    c->n = 0;
    char *copy;
    int crc = infer_text_copy(name, text, len, &copy, err);
    if (crc) return crc;
    int rc = BATON_OK, have_header = 0, col[NCOLS + 1], ncol = 0;
    size_t cap = 0, line = 0;
    char *s = copy, *l;
    while (!rc && (l = infer_text_line(&s, &line))) {
        if (!have_header) {
            rc = parse_header(name, line, l, col, &ncol, err);
            have_header = 1;
            continue;
        }
        if (c->n == cap) {
            cap = cap ? 2 * cap : 16;
            baton_infer_catalog_entry *ne = realloc(c->e, cap * sizeof *ne);
            if (!ne) {
                rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
                break;
            }
            c->e = ne;
        }
        baton_infer_catalog_entry *e = &c->e[c->n];
        if ((rc = parse_entry(name, line, l, col, ncol, e, err))) break;
        c->n++;
    }
    free(copy);
    if (!rc && c->n > 1) {   /* a name listed twice: O(n log n) */
        const char **names = malloc(c->n * sizeof *names);
        if (!names) rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
        for (size_t k = 0; names && k < c->n; k++) names[k] = c->e[k].name;
        size_t first, dup = names ? baton_first_duplicate(names, c->n, &first) : c->n;
        free(names);
        if (dup < c->n)
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s is listed twice (first on line %zu)", name,
                               c->e[dup].line, c->e[dup].name, c->e[first].line);
    }
    if (!rc && !have_header) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: empty (no header line)", name);
    if (!rc && c->n == 0) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: no types listed", name);
    if (rc) baton_infer_catalog_free(c);
    return rc;
}

static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static baton_infer_catalog builtin_cat;

static void builtin_parse(void)
{
    baton_err err = {0};
    if (baton_infer_catalog_parse("built-in catalog", builtin, sizeof builtin - 1, &builtin_cat, &err))
        baton_log(BATON_LOG_ERROR, "%s", err.msg);   /* a test keeps the built-in text valid */
}

const baton_infer_catalog *baton_infer_catalog_builtin(void)
{
    pthread_once(&builtin_once, builtin_parse);
    return &builtin_cat;
}

int baton_infer_catalog_load(const char *path, baton_infer_catalog *c, baton_err *err)
{
    if (!path) return baton_infer_catalog_parse("built-in catalog", builtin, sizeof builtin - 1, c, err);
    uint8_t *data = NULL;
    size_t len = 0;
    int rc = baton_file_read_all(path, 16u << 20, &data, &len, err);
    if (rc) return rc;
    rc = baton_infer_catalog_parse(path, (const char *)data, len, c, err);
    free(data);
    return rc;
}

const baton_infer_catalog_entry *baton_infer_catalog_find(const baton_infer_catalog *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].name, name)) return &c->e[i];
    return NULL;
}

static void combine(const baton_infer_catalog_entry *inst, const baton_infer_catalog_entry *acc, baton_infer_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    if (acc) snprintf(cfg->name, sizeof cfg->name, "%s+%s", inst->name, acc->name);
    else snprintf(cfg->name, sizeof cfg->name, "%s", inst->name);
    cfg->kind = inst->kind;
    cfg->accel = acc != NULL;
    cfg->vcpus = inst->vcpus;
    cfg->on_demand = inst->on_demand + (acc ? acc->on_demand : 0);
    /* accelerators have no spot market of their own: their on-demand price is added */
    cfg->spot = inst->spot < 0 ? -1 : inst->spot + (acc ? (acc->spot >= 0 ? acc->spot : acc->on_demand) : 0);
    /* what runs the model: the accelerator when there is one, else the instance's own chip(s) */
    const baton_infer_catalog_entry *run = acc ? acc : inst;
    cfg->tflops = run->tflops;
    cfg->fp16_tflops = run->fp16_tflops;
    cfg->mem_bw_gbs = run->mem_bw_gbs;
    cfg->call_us = run->call_us;
    cfg->launch_us = run->launch_us;
    cfg->chips = run->chips;
    cfg->run_kind = run->kind;
    cfg->project = inst->project && (!acc || acc->project);
    snprintf(cfg->chip, sizeof cfg->chip, "%s", run->chip);
    snprintf(cfg->notes, sizeof cfg->notes, "%s", !run->project ? run->notes : !inst->project ? inst->notes : "");
    cfg->retired = inst->retired || (acc && acc->retired);
}

int baton_infer_catalog_config(const baton_infer_catalog *c, const char *name, baton_infer_config *cfg, baton_err *err)
{
    char a[100];
    if (snprintf(a, sizeof a, "%s", name) >= (int)sizeof a)
        return baton_err_set(err, BATON_ERR_ARG, "configuration '%s': name too long", name);
    char *plus = strchr(a, '+');
    if (plus) *plus = 0;
    const baton_infer_catalog_entry *inst = baton_infer_catalog_find(c, a), *acc = plus ? baton_infer_catalog_find(c, plus + 1) : NULL;
    if (!inst)
        return baton_err_set(err, BATON_ERR_NOTFOUND, "configuration '%s': %s is not in the catalog", name, a);
    if (inst->kind == BATON_CAT_ACCEL)
        return baton_err_set(err, BATON_ERR_ARG, "configuration '%s': %s is an accelerator, not an instance", name, a);
    if (plus && !acc)
        return baton_err_set(err, BATON_ERR_NOTFOUND, "configuration '%s': %s is not in the catalog", name, plus + 1);
    if (acc && acc->kind != BATON_CAT_ACCEL)
        return baton_err_set(err, BATON_ERR_ARG, "configuration '%s': %s is not an accelerator", name, plus + 1);
    combine(inst, acc, cfg);
    return BATON_OK;
}

int baton_infer_catalog_configs(const baton_infer_catalog *c, int include_retired, baton_infer_config **out, size_t *n,
                                baton_err *err)
{
    size_t ni = 0, na = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->e[i].kind == BATON_CAT_ACCEL) na++;
        else ni++;
    }
    size_t ncpu = 0;
    for (size_t i = 0; i < c->n; i++) ncpu += c->e[i].kind == BATON_CAT_CPU;
    baton_infer_config *v = calloc(ni + ncpu * na + 1, sizeof *v);
    if (!v) return baton_err_set(err, BATON_ERR_NOMEM, "catalog: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].kind != BATON_CAT_ACCEL && (include_retired || !c->e[i].retired)) combine(&c->e[i], NULL, &v[k++]);
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].kind == BATON_CAT_CPU && (include_retired || !c->e[i].retired))
            for (size_t j = 0; j < c->n; j++)
                if (c->e[j].kind == BATON_CAT_ACCEL && (include_retired || !c->e[j].retired))
                    combine(&c->e[i], &c->e[j], &v[k++]);
    *out = v;
    *n = k;
    return BATON_OK;
}

/* A number, or null when unknown (negative). */
static void num_or_null(cJSON *o, const char *key, double v)
{
    if (v >= 0) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

char *baton_infer_catalog_entry_json(const baton_infer_catalog_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", e->name);
    cJSON_AddStringToObject(o, "kind", baton_infer_kind_name(e->kind));
    cJSON_AddNumberToObject(o, "on_demand_per_h", e->on_demand);
    num_or_null(o, "spot_per_h", e->spot);
    num_or_null(o, "train_speed", e->train_speed > 0 ? e->train_speed : -1);
    if (e->interruption >= 0) cJSON_AddStringToObject(o, "interruption", baton_infer_bucket_name(e->interruption));
    else cJSON_AddNullToObject(o, "interruption");
    cJSON_AddNumberToObject(o, "vcpus", e->vcpus);
    num_or_null(o, "memory_gib", e->memory_gib);
    if (e->chip[0]) cJSON_AddStringToObject(o, "chip", e->chip);
    else cJSON_AddNullToObject(o, "chip");
    cJSON_AddNumberToObject(o, "chips", e->chips);
    num_or_null(o, "fp32_tflops", e->tflops);
    num_or_null(o, "fp16_tflops", e->fp16_tflops);
    num_or_null(o, "mem_bw_gbs", e->mem_bw_gbs);
    num_or_null(o, "call_us", e->call_us);
    num_or_null(o, "launch_us", e->launch_us);
    cJSON_AddBoolToObject(o, "project", e->project);
    cJSON_AddStringToObject(o, "status", e->retired ? "retired" : "current");
    cJSON_AddStringToObject(o, "notes", e->notes);
    char *s = baton_json_print(o, 0);
    cJSON_Delete(o);
    return s;
}
