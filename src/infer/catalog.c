/* catalog.c — the instance catalog: a CSV file users edit (instance and accelerator types with
 * on-demand and spot $/h, vCPUs, memory, FP32 TFLOPS), the built-in default holding the seed
 * articles' figures (also shipped as docs/catalog.csv; a test keeps the two identical), and
 * configurations "INSTANCE" or "INSTANCE+ACCELERATOR".
 *
 * Format: '#' lines and blank lines are comments; the first other line is the header
 *   name,kind,on_demand_per_h,spot_per_h,vcpus,memory_gib,fp32_tflops,notes
 * then one type per line. notes is the rest of the line (it may hold commas). Names are
 * [A-Za-z0-9._-], unique. kind is cpu, gpu or accelerator. on_demand_per_h is required (>= 0);
 * the other numbers may be empty (unknown). Every problem is reported with its line number and
 * field; nothing is half-loaded. */
#include "infer_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char builtin[] =
    "# baton's instance catalog. Defaults: the figures of the seed articles (EC2, us-east-1, on-demand).\n"
    "# Edit or extend it and pass it with --catalog FILE. Empty fields are unknown. kind: cpu | gpu | accelerator\n"
    "# (an accelerator is attached to an instance: \"c5.large+eia1.medium\" costs both, and runs on the\n"
    "# accelerator's FLOPS). No spot prices are in the seed: `plan train` then assumes --spot-discount.\n"
    "name,kind,on_demand_per_h,spot_per_h,vcpus,memory_gib,fp32_tflops,notes\n"
    "c5.large,cpu,0.085,,2,4,0.084,TFLOPS not in the seed: c5.4xlarge's 0.67 x 2/16 vCPUs\n"
    "c5.xlarge,cpu,0.17,,4,8,0.168,TFLOPS not in the seed: c5.4xlarge's 0.67 x 4/16 vCPUs\n"
    "c5.4xlarge,cpu,0.68,,16,32,0.67,seed\n"
    "p2.xlarge,gpu,0.90,,4,61,,one K80 GPU; the seed gives no FP32 figure\n"
    "p3.2xlarge,gpu,3.06,,8,61,15.7,one V100 GPU\n"
    "eia1.medium,accelerator,0.13,,,1,1.0,Elastic Inference; memory in GB of the accelerator\n"
    "eia1.large,accelerator,0.26,,,2,2.0,price not in the seed (list price)\n"
    "eia1.xlarge,accelerator,0.52,,,4,4.0,price from the seed's c5.xlarge+eia1.xlarge at 0.69\n";

static const char header[] = "name,kind,on_demand_per_h,spot_per_h,vcpus,memory_gib,fp32_tflops,notes";

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

int baton_infer_catalog_parse(const char *name, const char *text, size_t len, baton_infer_catalog *c, baton_err *err)
{
    c->e = NULL;
    c->n = 0;
    char *copy;
    int crc = infer_text_copy(name, text, len, &copy, err);
    if (crc) return crc;
    int rc = BATON_OK, have_header = 0;
    size_t cap = 0, line = 0;
    char *s = copy, *l;
    while (!rc && (l = infer_text_line(&s, &line))) {
        if (!have_header) {
            char h[256];
            snprintf(h, sizeof h, "%s", l);
            for (char *p = h; *p; p++)
                if (*p == ' ') memmove(p, p + 1, strlen(p));
            const size_t nn = strlen(header) - strlen(",notes");   /* the notes column may be left out */
            if (strcmp(h, header) && !(strlen(h) == nn && !strncmp(h, header, nn)))
                rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: expected the header line \"%s\"", name, line, header);
            have_header = 1;
            continue;
        }
        char *f[8];
        int nf = split(l, f, 8);
        if (nf < 7) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %d fields; expected %s", name, line, nf, header);
            break;
        }
        for (int i = 0; i < nf; i++) infer_text_trim(&f[i]);
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
        memset(e, 0, sizeof *e);
        e->line = line;
        if (!valid_name(f[0]) || strlen(f[0]) >= sizeof e->name) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: name '%s': expected 1-%zu of [A-Za-z0-9._-]", name, line,
                               f[0], sizeof e->name - 1);
            break;
        }
        snprintf(e->name, sizeof e->name, "%s", f[0]);
        if (baton_infer_catalog_find(c, e->name)) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s is listed twice (first on line %zu)", name, line,
                               e->name, baton_infer_catalog_find(c, e->name)->line);
            break;
        }
        if (!strcmp(f[1], "cpu")) e->kind = BATON_CAT_CPU;
        else if (!strcmp(f[1], "gpu")) e->kind = BATON_CAT_GPU;
        else if (!strcmp(f[1], "accelerator")) e->kind = BATON_CAT_ACCEL;
        else {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: kind '%s': expected cpu, gpu or accelerator", name,
                               line, f[1]);
            break;
        }
        double vc = 0;
        if ((rc = field_num(name, line, "on_demand_per_h", f[2], 1, 0, &e->on_demand, err)) ||
            (rc = field_num(name, line, "spot_per_h", f[3], 0, -1, &e->spot, err)) ||
            (rc = field_num(name, line, "vcpus", f[4], 0, 0, &vc, err)) ||
            (rc = field_num(name, line, "memory_gib", f[5], 0, -1, &e->memory_gib, err)) ||
            (rc = field_num(name, line, "fp32_tflops", f[6], 0, -1, &e->tflops, err)))
            break;
        if (vc != floor(vc) || vc > 1e6) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: vcpus: '%s' is not a whole number", name, line, f[4]);
            break;
        }
        if (e->tflops == 0) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: fp32_tflops is 0 (leave it empty when unknown)", name,
                               line);
            break;
        }
        e->vcpus = (int)vc;
        if (nf == 8) snprintf(e->notes, sizeof e->notes, "%s", f[7]);
        c->n++;
    }
    free(copy);
    if (!rc && !have_header) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: empty (no header line)", name);
    if (!rc && c->n == 0) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: no types listed", name);
    if (rc) baton_infer_catalog_free(c);
    return rc;
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

int baton_infer_catalog_configs(const baton_infer_catalog *c, baton_infer_config **out, size_t *n, baton_err *err)
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
        if (c->e[i].kind != BATON_CAT_ACCEL) combine(&c->e[i], NULL, &v[k++]);
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].kind == BATON_CAT_CPU)
            for (size_t j = 0; j < c->n; j++)
                if (c->e[j].kind == BATON_CAT_ACCEL) combine(&c->e[i], &c->e[j], &v[k++]);
    *out = v;
    *n = k;
    return BATON_OK;
}
