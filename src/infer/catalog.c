/* catalog.c — the instance catalog, the one list of machine types every command uses: plan infer,
 * plan train, job files (types named without prices) and `baton fleet catalog`. A CSV file users
 * edit; the built-in default is docs/catalog.csv's text (a test keeps the two identical), parsed
 * once (baton_infer_catalog_builtin). Configurations are "INSTANCE" or "INSTANCE+ACCELERATOR".
 *
 * Format: '#' lines and blank lines are comments; the first other line is the header, naming the
 * columns the file has, in any order: name, kind, on_demand_per_h (these three required),
 * spot_per_h, interruption (a Spot Advisor bucket: <5%, 5-10%, 10-15%, 15-20%, >20%), train_speed
 * (relative to c5.xlarge), vcpus, memory_gib, fp32_tflops, status (current | retired) and notes
 * (last when present: the rest of the line, commas included). Then one type per line. Names are
 * [A-Za-z0-9._-], unique. kind is cpu, gpu or accelerator. Numbers may be empty (unknown); a spot
 * price above on demand is accepted with a warning. Every problem is reported with its line
 * number and field; nothing is half-loaded. */
#include "infer_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char builtin[] =
    "# baton's instance catalog: the one list of machine types every command uses (plan infer, plan train,\n"
    "# job files and `baton fleet catalog`). EC2, us-east-1, Linux; on-demand list prices; spot prices are a\n"
    "# typical recent reading (about 30-40 % of on demand) and interruption the Spot Advisor bucket (share of\n"
    "# instances reclaimed per month) — illustrative: set your own in a job file or a --catalog file when they\n"
    "# matter. train_speed: training throughput relative to c5.xlarge (the local fleet simulates progress\n"
    "# with it; GPUs are rough guesses). kind: cpu | gpu | accelerator (an accelerator is attached to an\n"
    "# instance: \"c5.large+eia1.medium\" costs both and runs on the accelerator's FLOPS). status: current, or\n"
    "# retired (no longer sold: kept so that older studies reproduce, never picked unless asked). Empty\n"
    "# fields are unknown; fp32_tflops of the seed articles where they give one.\n"
    "name,kind,on_demand_per_h,spot_per_h,interruption,train_speed,vcpus,memory_gib,fp32_tflops,status,notes\n"
    "c5.large,cpu,0.085,0.034,<5%,0.5,2,4,0.084,current,TFLOPS not in the seed: c5.4xlarge's 0.67 x 2/16 vCPUs\n"
    "c5.xlarge,cpu,0.17,0.068,5-10%,1.0,4,8,0.168,current,TFLOPS not in the seed: c5.4xlarge's 0.67 x 4/16 vCPUs\n"
    "c5.2xlarge,cpu,0.34,0.131,5-10%,2.0,8,16,0.335,current,TFLOPS: c5.4xlarge's 0.67 x 8/16 vCPUs\n"
    "c5.4xlarge,cpu,0.68,0.262,10-15%,4.0,16,32,0.67,current,seed\n"
    "c5a.xlarge,cpu,0.154,0.062,<5%,0.95,4,8,,current,AMD EPYC; no FP32 figure\n"
    "c6i.xlarge,cpu,0.17,0.066,<5%,1.1,4,8,,current,no FP32 figure\n"
    "m5.large,cpu,0.096,0.036,<5%,0.5,2,8,,current,no FP32 figure\n"
    "m5.xlarge,cpu,0.192,0.074,5-10%,1.0,4,16,,current,no FP32 figure\n"
    "m5.2xlarge,cpu,0.384,0.148,10-15%,2.0,8,32,,current,no FP32 figure\n"
    "r5.xlarge,cpu,0.252,0.087,<5%,1.0,4,32,,current,no FP32 figure\n"
    "p2.xlarge,gpu,0.90,0.27,>20%,6.0,4,61,,current,one K80 GPU; the seed gives no FP32 figure\n"
    "p3.2xlarge,gpu,3.06,0.918,15-20%,25.0,8,61,15.7,current,one V100 GPU\n"
    "g4dn.xlarge,gpu,0.526,0.158,10-15%,10.0,4,16,8.1,current,one T4 GPU (8.1 TFLOPS FP32)\n"
    "g5.xlarge,gpu,1.006,0.302,10-15%,18.0,4,16,31.2,current,one A10G GPU (31.2 TFLOPS FP32)\n"
    "eia1.medium,accelerator,0.13,,,,,1,1.0,retired,Elastic Inference (no new customers since 2023-04-15; retired); memory in GB of the accelerator\n"
    "eia1.large,accelerator,0.26,,,,,2,2.0,retired,Elastic Inference (retired); price not in the seed (list price)\n"
    "eia1.xlarge,accelerator,0.52,,,,,4,4.0,retired,Elastic Inference (retired); price from the seed's c5.xlarge+eia1.xlarge at 0.69\n";

/* The columns a catalog may have; the header line names those it has, in any order (notes, when
 * present, last: it takes the rest of the line, commas included). */
enum { COL_NAME, COL_KIND, COL_OD, COL_SPOT, COL_INT, COL_SPEED, COL_VCPUS, COL_MEM, COL_TFLOPS, COL_STATUS, COL_NOTES,
       NCOLS };
static const char *const col_names[NCOLS] = {"name", "kind", "on_demand_per_h", "spot_per_h", "interruption",
                                             "train_speed", "vcpus", "memory_gib", "fp32_tflops", "status", "notes"};

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
                                 "interruption, train_speed, vcpus, memory_gib, fp32_tflops, status, notes last)",
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
    if (!strcmp(v[COL_KIND], "cpu")) e->kind = BATON_CAT_CPU;
    else if (!strcmp(v[COL_KIND], "gpu")) e->kind = BATON_CAT_GPU;
    else if (!strcmp(v[COL_KIND], "accelerator")) e->kind = BATON_CAT_ACCEL;
    else
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: kind '%s': expected cpu, gpu or accelerator", name, line,
                             v[COL_KIND]);
    double vc = 0;
    int rc;
    if ((rc = field_num(name, line, "on_demand_per_h", v[COL_OD], 1, 0, &e->on_demand, err)) ||
        (rc = field_num(name, line, "spot_per_h", v[COL_SPOT], 0, -1, &e->spot, err)) ||
        (rc = field_num(name, line, "train_speed", v[COL_SPEED], 0, -1, &e->train_speed, err)) ||
        (rc = field_num(name, line, "vcpus", v[COL_VCPUS], 0, 0, &vc, err)) ||
        (rc = field_num(name, line, "memory_gib", v[COL_MEM], 0, -1, &e->memory_gib, err)) ||
        (rc = field_num(name, line, "fp32_tflops", v[COL_TFLOPS], 0, -1, &e->tflops, err)))
        return rc;
    if (vc != floor(vc) || vc > 1e6)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: vcpus: '%s' is not a whole number", name, line, v[COL_VCPUS]);
    if (e->tflops == 0 || e->train_speed == 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s is 0 (leave it empty when unknown)", name, line,
                             e->tflops == 0 ? "fp32_tflops" : "train_speed");
    e->vcpus = (int)vc;
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
        const baton_infer_catalog_entry *twice = baton_infer_catalog_find(c, e->name);
        if (twice) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s is listed twice (first on line %zu)", name, line,
                               e->name, twice->line);
            break;
        }
        c->n++;
    }
    free(copy);
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
    cfg->tflops = acc ? acc->tflops : inst->tflops;
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
