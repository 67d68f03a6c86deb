/* jobfile.c — the job-file parser (YAML through libyaml's document loader) shared by every fleet
 * backend. Types named bare get their prices from the one catalog (infer.h); job.c has what a
 * parsed job offers (names, durations, loading from a file, freeing).
 *
 * Contract: baton_job_parse accepts one YAML document whose top level is a mapping of the fields
 * in docs/jobfile.md; anything else fails with "FILE:LINE: FIELD: what was wrong". Unknown fields,
 * duplicate keys, anchors/aliases, wrong types, out-of-range numbers and unknown enum words are
 * errors. Backend sections (`slurm:`, `aws:`) and `env:` are flattened to key/value pairs with
 * their line numbers and not interpreted here. On failure *job is left empty (freed). Walking the
 * document (values, mappings, lists, flattening) is jobfile_yaml.c's. */
#include "baton/infer.h"
#include "jobfile_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ------------------------------------------------------------------ instance types */
static int zone_price_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg,
                           const char *path)
{
    baton_job_type *t = arg;
    if (strlen(key) >= sizeof t->zone_prices[0].zone) return jf_fail(c, kn, path, "zone name too long");
    if (jf_grow((void **)&t->zone_prices, t->nzone_prices, sizeof *t->zone_prices, c->err, c->file))
        return c->err->code;
    baton_job_zone_price *z = &t->zone_prices[t->nzone_prices];
    memcpy(z->zone, key, strlen(key) + 1);
    if (jf_get_number(c, vn, path, 0, 1e5, "a price in dollars per hour", &z->price)) return c->err->code;
    t->nzone_prices++;
    return 0;
}

typedef struct type_seen {
    baton_job_type *t;
    int has_od, has_spot, has_speed, has_bucket;
} type_seen;

static int type_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    type_seen *s = arg;
    baton_job_type *t = s->t;
    if (!strcmp(key, "name")) return jf_get_string(c, vn, path, t->name, sizeof t->name);
    if (!strcmp(key, "on_demand_price")) {
        s->has_od = 1;
        return jf_get_number(c, vn, path, 0, 1e5, "a price in dollars per hour", &t->on_demand_price);
    }
    if (!strcmp(key, "spot_price")) {
        s->has_spot = 1;
        if (vn->type == YAML_MAPPING_NODE) {
            t->spot_price = -1;   /* every zone must then be listed; checked later */
            return jf_each_pair(c, vn, path, zone_price_pair, t);
        }
        return jf_get_number(c, vn, path, 0, 1e5, "a price in dollars per hour (or zone: price lines)",
                          &t->spot_price);
    }
    if (!strcmp(key, "speed")) {
        s->has_speed = 1;
        return jf_get_number(c, vn, path, 1e-3, 1e6, "a relative speed (1 = baseline)", &t->speed);
    }
    if (!strcmp(key, "interruption")) {
        const char *v = "";
        if (jf_scalar(c, vn, path, &v)) return c->err->code;
        s->has_bucket = 1;
        if (fleet_bucket_parse(v, &t->bucket))
            return jf_fail(c, vn, path, "expected a Spot Advisor bucket: <5%%, 5-10%%, 10-15%%, 15-20%% or >20%%, got '%.32s'", v);
        return 0;
    }
    return jf_unknown(c, kn, path, "name, on_demand_price, spot_price, speed, interruption");
}

/* The catalog's types a job can run on bare (current instances with both prices), for messages. */
static int catalog_names(char *out, size_t cap)
{
    const baton_infer_catalog *c = baton_infer_catalog_builtin();
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < c->n && k + 32 < cap; i++)
        if (c->e[i].kind != BATON_CAT_ACCEL && !c->e[i].retired && c->e[i].spot >= 0)
            k += (size_t)snprintf(out + k, cap - k, "%s%s", k ? ", " : "", c->e[i].name);
    return 0;
}

static int parse_type(ctx *c, yaml_node_t *n, const char *path)
{
    baton_job *j = c->job;
    if (j->ntypes >= BATON_JOB_MAX_TYPES) return jf_fail(c, n, path, "more than %d instance types", BATON_JOB_MAX_TYPES);
    if (jf_grow((void **)&j->types, j->ntypes, sizeof *j->types, c->err, c->file)) return c->err->code;
    baton_job_type *t = &j->types[j->ntypes++];
    t->line = line_of(n);
    t->speed = 1;
    type_seen s = {t, 0, 0, 0, 0};
    if (n->type == YAML_SCALAR_NODE) {
        if (jf_get_string(c, n, path, t->name, sizeof t->name)) return c->err->code;
    } else if (n->type == YAML_MAPPING_NODE) {
        if (jf_each_pair(c, n, path, type_pair, &s)) return c->err->code;
        if (!t->name[0]) return jf_fail(c, n, path, "missing 'name' (e.g. name: c5.xlarge)");
    } else {
        return jf_fail(c, n, path, "expected a type name or a mapping with name and prices, got a list");
    }
    for (const char *p = t->name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
            return jf_fail(c, n, path, "instance type '%.64s': only letters, digits, '.', '-' and '_'", t->name);
    for (size_t i = 0; i + 1 < j->ntypes; i++)
        if (!strcmp(j->types[i].name, t->name))
            return jf_fail(c, n, path, "instance type '%s' listed twice (first on line %d)", t->name, j->types[i].line);
    const baton_infer_catalog_entry *e = baton_infer_catalog_find(baton_infer_catalog_builtin(), t->name);
    if (e && (e->kind == BATON_CAT_ACCEL || e->retired)) e = NULL;   /* not an instance one can launch */
    if (!s.has_od || !s.has_spot) {
        if (!e || (!s.has_spot && e->spot < 0)) {
            char names[1024];
            catalog_names(names, sizeof names);
            return jf_fail(c, n, path, "%s instance type '%s': give on_demand_price and spot_price, or use one of %s",
                        e ? "no spot price in the catalog for" : "unknown", t->name, names);
        }
        t->from_catalog = 1;
        if (!s.has_od) t->on_demand_price = e->on_demand;
        if (!s.has_spot) t->spot_price = e->spot;
    }
    if (e && !s.has_speed && e->train_speed > 0) t->speed = e->train_speed;
    if (!s.has_bucket) t->bucket = e && e->interruption >= 0 ? (baton_bucket)e->interruption : BATON_BUCKET_5_10;
    if (t->spot_price > t->on_demand_price)
        baton_log(BATON_LOG_WARN, "%s:%d: instance type %s: spot price $%g/h is above its on-demand price $%g/h",
                  c->file, t->line, t->name, t->spot_price, t->on_demand_price);
    return 0;
}

/* ------------------------------------------------------------------ volume, market */
static int volume_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    (void)arg;
    if (!strcmp(key, "checkpoints")) {
        if (jf_get_string(c, vn, path, j->volume.checkpoints, sizeof j->volume.checkpoints)) return c->err->code;
        const char *p = j->volume.checkpoints;
        if (!*p || *p == '/' || strstr(p, ".."))
            return jf_fail(c, vn, path, "a relative folder inside the volume, without '..'");
        return 0;
    }
    if (!strcmp(key, "seed")) return jf_get_string(c, vn, path, j->volume.seed, sizeof j->volume.seed);
    if (!strcmp(key, "size_gb")) return jf_get_number(c, vn, path, 1, 65536, "a size in GB", &j->volume.size_gb);
    return jf_unknown(c, kn, path, "checkpoints, seed, size_gb");
}

static int nodes_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    long v;
    (void)arg;
    if (strcmp(key, "min") && strcmp(key, "max")) return jf_unknown(c, kn, path, "min, max");
    if (jf_get_int(c, vn, path, 1, 1024, &v)) return c->err->code;
    *(key[1] == 'i' ? &j->nodes.min : &j->nodes.max) = (int)v;
    return 0;
}

/* nodes: N, or {min: M, max: N} (either may be left out: the other's value) */
static int parse_nodes(ctx *c, yaml_node_t *vn, const char *path)
{
    baton_job *j = c->job;
    j->nodes.line = line_of(vn);
    if (vn->type == YAML_SCALAR_NODE) {
        long v;
        if (jf_get_int(c, vn, path, 1, 1024, &v)) return c->err->code;
        j->nodes.min = j->nodes.max = (int)v;
        return 0;
    }
    if (vn->type != YAML_MAPPING_NODE) return jf_fail(c, vn, path, "expected a number of machines or {min: M, max: N}");
    if (jf_each_pair(c, vn, path, nodes_pair, NULL)) return c->err->code;
    if (!j->nodes.min && !j->nodes.max) return jf_fail(c, vn, path, "give min, max or both");
    if (!j->nodes.min) j->nodes.min = j->nodes.max;
    if (!j->nodes.max) j->nodes.max = j->nodes.min;
    if (j->nodes.min > j->nodes.max)
        return jf_fail(c, vn, path, "min (%d) is more than max (%d)", j->nodes.min, j->nodes.max);
    return 0;
}

static int interrupt_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job_interrupt *in = arg;
    if (!strcmp(key, "task")) {
        long v;
        if (jf_get_int(c, vn, path, 0, BATON_JOB_MAX_COMMANDS - 1, &v)) return c->err->code;
        in->task = (int)v;
        return 0;
    }
    if (!strcmp(key, "after")) return jf_get_duration(c, vn, path, &in->after);
    if (!strcmp(key, "notice")) return jf_get_duration(c, vn, path, &in->notice);
    if (!strcmp(key, "after_steps")) {
        long v;
        if (jf_get_int(c, vn, path, 1, 1000000000L, &v)) return c->err->code;
        in->after_steps = v;
        return 0;
    }
    if (!strcmp(key, "at_step")) {
        long v;
        if (jf_get_int(c, vn, path, 1, 1000000000L, &v)) return c->err->code;
        in->at_step = v;
        return 0;
    }
    return jf_unknown(c, kn, path, "task, after, after_steps, at_step, notice");
}

static int interrupt_item(ctx *c, yaml_node_t *e, const char *sub, void *arg)
{
    baton_job *j = c->job;
    if (jf_grow((void **)&j->market.interrupts, j->market.ninterrupts, sizeof *j->market.interrupts, c->err, c->file))
        return c->err->code;
    baton_job_interrupt *in = &j->market.interrupts[j->market.ninterrupts++];
    in->notice = -1;
    in->after = -1;
    in->line = line_of(e);
    if (jf_each_pair(c, e, sub, interrupt_pair, in)) return c->err->code;
    if (in->after_steps > 0 && in->at_step > 0)
        return jf_fail(c, e, sub, "give 'after_steps' (steps this instance trained) or 'at_step' (the task's step), not both");
    if (in->after < 0 && (in->after_steps > 0 || in->at_step > 0)) in->after = 0;
    if (in->after < 0)
        return jf_fail(c, e, sub, "missing 'after' (simulated time after the instance starts), 'after_steps' or 'at_step'");
    if (in->notice < 0) in->notice = -2;   /* the market's default notice; resolved below */
    return 0;
}

static int market_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    (void)arg;
    if (!strcmp(key, "time_scale"))
        return jf_get_number(c, vn, path, 1e-3, 1e6, "a number (simulated seconds per wall second)", &j->market.time_scale);
    if (!strcmp(key, "seed")) {
        long v;
        if (jf_get_int(c, vn, path, 0, 2147483647L, &v)) return c->err->code;
        j->market.seed = (uint64_t)v;
        return 0;
    }
    if (!strcmp(key, "launch_delay")) return jf_get_duration(c, vn, path, &j->market.launch_delay);
    if (!strcmp(key, "notice")) return jf_get_duration(c, vn, path, &j->market.notice);
    if (!strcmp(key, "capacity_cooldown")) return jf_get_duration(c, vn, path, &j->market.capacity_cooldown);
    if (!strcmp(key, "hazard_scale"))
        return jf_get_number(c, vn, path, 0, 1e9, "a multiplier", &j->market.hazard_scale);
    if (!strcmp(key, "random")) {
        c->has_random = 1;
        return jf_get_bool(c, vn, path, &j->market.random);
    }
    if (!strcmp(key, "interruptions")) return jf_each_item(c, vn, path, "a list of {after, notice, task}", interrupt_item, NULL);
    return jf_unknown(c, kn, path, "time_scale, seed, launch_delay, notice, hazard_scale, capacity_cooldown, random, interruptions");
}

/* ------------------------------------------------------------------ top level */
typedef struct top_seen {
    yaml_node_t *command, *commands, *capacity, *zones_node, *types_node, *name_node, *backend;
} top_seen;

static int command_item(ctx *c, yaml_node_t *e, const char *sub, void *arg)
{
    baton_job *j = c->job;
    if (j->ncommands >= BATON_JOB_MAX_COMMANDS) return jf_fail(c, e, sub, "more than %d commands", BATON_JOB_MAX_COMMANDS);
    if (jf_grow((void **)&j->commands, j->ncommands, sizeof *j->commands, c->err, c->file)) return c->err->code;
    j->ncommands++;
    return jf_get_strdup(c, e, sub, &j->commands[j->ncommands - 1]);
}

static int type_item(ctx *c, yaml_node_t *e, const char *sub, void *arg) { return parse_type(c, e, sub); }

static int zone_item(ctx *c, yaml_node_t *e, const char *sub, void *arg)
{
    baton_job *j = c->job;
    if (j->nzones >= BATON_JOB_MAX_ZONES) return jf_fail(c, e, sub, "more than %d zones", BATON_JOB_MAX_ZONES);
    char *z = j->zones[j->nzones];
    if (jf_get_string(c, e, sub, z, sizeof j->zones[0])) return c->err->code;
    if (!*z) return jf_fail(c, e, sub, "is empty");
    for (const char *p = z; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
            return jf_fail(c, e, sub, "zone '%s': only letters, digits, '-' and '_'", z);
    for (size_t k = 0; k < j->nzones; k++)
        if (!strcmp(j->zones[k], z)) return jf_fail(c, e, sub, "zone '%s' listed twice", z);
    j->nzones++;
    return 0;
}

static int parse_commands(ctx *c, yaml_node_t *vn, const char *path)
{
    baton_job *j = c->job;
    if (vn->type == YAML_SCALAR_NODE) {
        if (jf_grow((void **)&j->commands, 0, sizeof *j->commands, c->err, c->file)) return c->err->code;
        j->ncommands = 1;
        return jf_get_strdup(c, vn, path, &j->commands[0]);
    }
    if (jf_each_item(c, vn, path, "a command line or a list of them", command_item, NULL)) return c->err->code;
    if (!j->ncommands) return jf_fail(c, vn, path, "the list is empty");
    return 0;
}

/* name: it names the job's folder */
static int top_name(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    top_seen *s = arg;
    s->name_node = vn;
    if (jf_get_string(c, vn, path, j->name, sizeof j->name)) return c->err->code;
    if (!j->name[0] || j->name[0] == '.' || j->name[0] == '-')
        return jf_fail(c, vn, path, "must start with a letter or digit");
    for (const char *p = j->name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
            return jf_fail(c, vn, path, "only letters, digits, '.', '-' and '_' (it names a folder)");
    return 0;
}

static int top_backend(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    top_seen *s = arg;
    const char *v = "";
    s->backend = vn;
    if (jf_scalar(c, vn, path, &v)) return c->err->code;
    if (!strcmp(v, "local")) j->backend = BATON_BACKEND_LOCAL;
    else if (!strcmp(v, "slurm")) j->backend = BATON_BACKEND_SLURM;
    else if (!strcmp(v, "aws")) j->backend = BATON_BACKEND_AWS;
    else return jf_fail(c, vn, path, "expected local, slurm or aws, got '%.32s'", v);
    return 0;
}

/* command (one) or commands (a list), not both */
static int top_command(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    top_seen *s = arg;
    if (s->command || s->commands)
        return jf_fail(c, kn, path, "give either 'command' or 'commands', not both");
    if (!strcmp(key, "command")) {
        s->command = vn;
        if (vn->type != YAML_SCALAR_NODE)
            return jf_fail(c, vn, path, "expected one command line (use 'commands:' for a list)");
    } else {
        s->commands = vn;
    }
    return parse_commands(c, vn, path);
}

static int top_capacity(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    top_seen *s = arg;
    long v;
    s->capacity = vn;
    if (jf_get_int(c, vn, path, 1, 1024, &v)) return c->err->code;
    j->target_capacity = (int)v;
    return 0;
}

static int top_alloc(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    const char *v = "";
    if (jf_scalar(c, vn, path, &v)) return c->err->code;
    if (!strcmp(v, "price-capacity-optimized") || !strcmp(v, "priceCapacityOptimized"))
        j->alloc = BATON_ALLOC_PRICE_CAPACITY_OPTIMIZED;
    else if (!strcmp(v, "lowest-price") || !strcmp(v, "lowestPrice")) j->alloc = BATON_ALLOC_LOWEST_PRICE;
    else if (!strcmp(v, "capacity-optimized") || !strcmp(v, "capacityOptimized"))
        j->alloc = BATON_ALLOC_CAPACITY_OPTIMIZED;
    else
        return jf_fail(c, vn, path, "expected price-capacity-optimized (the default), capacity-optimized or "
                    "lowest-price, got '%.32s'", v);
    j->alloc_line = line_of(vn);
    return 0;
}

static int top_retries(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    long v;
    if (jf_get_int(c, vn, path, 0, 1000, &v)) return c->err->code;
    j->retries = (int)v;
    return 0;
}

static int top_types(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    top_seen *s = arg;
    s->types_node = vn;
    return jf_each_item(c, vn, path, "a list of instance types", type_item, NULL);
}

static int top_zones(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    top_seen *s = arg;
    s->zones_node = vn;
    if (vn->type == YAML_SCALAR_NODE) {
        j->nzones = 1;
        return jf_get_string(c, vn, path, j->zones[0], sizeof j->zones[0]);
    }
    return jf_each_item(c, vn, path, "a list of zone names", zone_item, NULL);
}

/* env: NAME: value lines, each NAME a valid variable name */
static int top_env(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    if (vn->type != YAML_MAPPING_NODE) return jf_fail(c, vn, path, "expected NAME: value lines");
    flat_arg fa = {&j->env, &j->nenv, 1};
    size_t before = j->nenv;
    if (jf_each_pair(c, vn, "", jf_flatten_pair, &fa)) return c->err->code;
    for (size_t i = before; i < j->nenv; i++) {
        const char *k = j->env[i].key;
        int okname = (isalpha((unsigned char)k[0]) || k[0] == '_');
        for (const char *p = k; *p && okname; p++) okname = isalnum((unsigned char)*p) || *p == '_';
        if (!okname)
            return baton_err_set(c->err, BATON_ERR_FORMAT, "%s:%d: env.%s: not a valid environment variable name",
                                 c->file, j->env[i].line, k);
    }
    return 0;
}

/* slurm or aws: the backend's options, flattened */
static int top_backend_opts(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    baton_job *j = c->job;
    if (vn->type != YAML_MAPPING_NODE) return jf_fail(c, vn, path, "expected a mapping of %s options", key);
    flat_arg fa = {&j->backend_opts, &j->nbackend_opts, 0};
    return jf_flatten(c, vn, path, &fa);
}

static int top_nodes(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    return parse_nodes(c, vn, path);
}

static int top_state_dir(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    return jf_get_string(c, vn, path, c->job->state_dir, sizeof c->job->state_dir);
}

static int top_volume(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    return jf_each_pair(c, vn, path, volume_pair, NULL);
}

static int top_market(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    return jf_each_pair(c, vn, path, market_pair, NULL);
}

/* The job file's top-level keys, each with its parser. */
static const struct {
    const char *key;
    pair_fn fn;
} top_keys[] = {
    {"name", top_name}, {"backend", top_backend}, {"command", top_command}, {"commands", top_command},
    {"target_capacity", top_capacity}, {"allocation_strategy", top_alloc}, {"retries", top_retries},
    {"nodes", top_nodes}, {"instance_types", top_types}, {"zones", top_zones}, {"state_dir", top_state_dir},
    {"volume", top_volume}, {"market", top_market}, {"env", top_env}, {"slurm", top_backend_opts},
    {"aws", top_backend_opts},
};

static int top_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path)
{
    for (size_t k = 0; k < sizeof top_keys / sizeof top_keys[0]; k++)
        if (!strcmp(key, top_keys[k].key)) return top_keys[k].fn(c, key, kn, vn, arg, path);
    return jf_unknown(c, kn, path,
                   "name, backend, command, commands, target_capacity, allocation_strategy, retries, nodes, "
                   "instance_types, zones, state_dir, volume, market, env, slurm, aws");
}

/* Every node may be reached from exactly one parent: that rules out aliases (and so cycles and
 * exponential expansion) without walking anything twice. */
static int check_no_aliases(ctx *c)
{
    yaml_document_t *d = c->doc;
    size_t n = (size_t)(d->nodes.top - d->nodes.start);
    unsigned char *refs = calloc(n + 1, 1);
    if (!refs) return baton_err_set(c->err, BATON_ERR_NOMEM, "%s: out of memory", c->file);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        yaml_node_t *nd = d->nodes.start + i;
        int kids[2];
        if (nd->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = nd->data.sequence.items.start; it < nd->data.sequence.items.top; it++)
                if (*it >= 1 && (size_t)*it <= n && refs[*it]++) {
                    rc = jf_fail(c, nd, "yaml", "anchors and aliases (*name) are not supported in job files");
                    break;
                }
        } else if (nd->type == YAML_MAPPING_NODE) {
            for (yaml_node_pair_t *p = nd->data.mapping.pairs.start; p < nd->data.mapping.pairs.top && !rc; p++) {
                kids[0] = p->key;
                kids[1] = p->value;
                for (int k = 0; k < 2; k++)
                    if (kids[k] >= 1 && (size_t)kids[k] <= n && refs[kids[k]]++) {
                        rc = jf_fail(c, node_at(c, kids[0]), "yaml",
                                  "anchors and aliases (*name) are not supported in job files");
                        break;
                    }
            }
        }
    }
    free(refs);
    return rc;
}

static int finish(ctx *c, yaml_node_t *root, top_seen *s)
{
    baton_job *j = c->job;
    if (!s->command && !s->commands)
        return jf_fail(c, root, "command", "missing: the program each instance runs (e.g. command: baton train ...)");
    if (!j->name[0]) return jf_fail(c, root, "name", "missing: a name for the job (it names the state folder)");
    if (!j->target_capacity) j->target_capacity = (int)j->ncommands;
    if ((size_t)j->target_capacity > j->ncommands)
        return jf_fail(c, s->capacity, "target_capacity",
                    "%d instances but %zu command(s): each instance runs one command; list one command per "
                    "experiment under 'commands:' (a sweep)", j->target_capacity, j->ncommands);
    int needs_market = j->backend != BATON_BACKEND_SLURM;
    if (needs_market && !j->ntypes)
        return jf_fail(c, root, "instance_types", "missing: at least one instance type (e.g. - c5.xlarge)");
    if (needs_market && !j->nzones) return jf_fail(c, root, "zones", "missing: at least one zone (e.g. [us-east-1a])");
    for (size_t i = 0; i < j->ntypes; i++) {
        baton_job_type *t = &j->types[i];
        for (size_t k = 0; k < t->nzone_prices; k++) {
            int known = 0;
            for (size_t z = 0; z < j->nzones; z++) known |= !strcmp(j->zones[z], t->zone_prices[k].zone);
            if (!known)
                return baton_err_set(c->err, BATON_ERR_FORMAT,
                                     "%s:%d: instance_types[%zu].spot_price.%s: zone not listed under 'zones'",
                                     c->file, t->line, i, t->zone_prices[k].zone);
        }
        if (t->spot_price < 0) {   /* per-zone map: every zone needs a price */
            for (size_t z = 0; z < j->nzones; z++) {
                int has = 0;
                for (size_t k = 0; k < t->nzone_prices; k++) has |= !strcmp(j->zones[z], t->zone_prices[k].zone);
                if (!has)
                    return baton_err_set(c->err, BATON_ERR_FORMAT,
                                         "%s:%d: instance_types[%zu].spot_price: no price for zone %s",
                                         c->file, t->line, i, j->zones[z]);
            }
        }
    }
    for (size_t i = 0; i < j->market.ninterrupts; i++) {
        baton_job_interrupt *in = &j->market.interrupts[i];
        if ((size_t)in->task >= j->ncommands)
            return baton_err_set(c->err, BATON_ERR_FORMAT,
                                 "%s:%d: market.interruptions[%zu].task: %d, but there are %zu command(s) (tasks 0..%zu)",
                                 c->file, in->line, i, in->task, j->ncommands, j->ncommands - 1);
        if (in->notice == -2) in->notice = j->market.notice;
    }
    if (!c->has_random) j->market.random = j->market.ninterrupts == 0;
    return 0;
}

static void job_defaults(baton_job *j)
{
    memset(j, 0, sizeof *j);
    j->retries = 2;
    j->volume.size_gb = 20;
    memcpy(j->volume.checkpoints, "ckpt", 5);
    j->market.time_scale = 1;
    j->market.launch_delay = 90;
    j->market.notice = 120;
    j->market.hazard_scale = 1;
    j->market.capacity_cooldown = 3600;
}

/* Replace the first occurrence of v in [from, to) of *text by the marker; 1 when found. */
static int replace_in(char **text, size_t from, size_t to, const char *v, const char *marker)
{
    size_t vl = strlen(v), ml = strlen(marker);
    char *at = NULL;
    for (size_t i = from; vl && i + vl <= to && !at; i++)
        if (!memcmp(*text + i, v, vl)) at = *text + i;
    if (!at) return 0;
    size_t off = (size_t)(at - *text), n = strlen(*text);
    char *out = malloc(n - vl + ml + 1);
    if (!out) return -1;
    memcpy(out, *text, off);
    memcpy(out + off, marker, ml);
    memcpy(out + off + ml, *text + off + vl, n - off - vl + 1);
    free(*text);
    *text = out;
    return 1;
}

char *baton_job_redact_env(const baton_job *job, const char *text)
{
    static const char marker[] = "<redacted>";
    char *t = strdup(text ? text : "");
    for (size_t i = 0; t && i < job->nenv; i++) {
        const char *v = job->env[i].value;
        if (!v || !*v) continue;
        size_t from = 0, to;
        for (int line = 1; line < job->env[i].line && t[from]; line++) {   /* the value's line */
            const char *nl = strchr(t + from, '\n');
            from = nl ? (size_t)(nl - t) + 1 : strlen(t);
        }
        const char *nl = strchr(t + from, '\n');
        to = nl ? (size_t)(nl - t) : strlen(t);
        /* the value comes after its key and the key's ':' (so a value that is part of its key, or
         * of an earlier key of a flow map, is not what gets replaced) */
        size_t kl = strlen(job->env[i].key), at = from;
        while (at + kl <= to && memcmp(t + at, job->env[i].key, kl)) at++;
        const char *colon = at + kl <= to ? memchr(t + at + kl, ':', to - at - kl) : NULL;
        int r = colon ? replace_in(&t, (size_t)(colon - t) + 1, to, v, marker) : 0;
        if (r == 0 && !strstr(marker, v))   /* not where its line says: every occurrence */
            while ((r = replace_in(&t, 0, strlen(t), v, marker)) == 1) r = 0;
        if (r < 0) {
            free(t);
            return NULL;
        }
    }
    return t;
}

/* Collections nested deeper than this are refused before the document is built: a job file needs
 * three or four levels, and libyaml's scanner does work quadratic in the depth of flow nesting. The
 * check reads events, stopping at the first one too deep, so its own work stays linear. */
#define JOB_MAX_DEPTH 64

static int depth_ok(const char *name, const char *text, size_t len, baton_err *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0, rc = 0, done = 0;
    while (!done && !rc) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) break;   /* the document load reports the syntax error */
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
            if (++depth > JOB_MAX_DEPTH)
                rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: collections nested deeper than %d levels",
                                   name, ev.start_mark.line + 1, JOB_MAX_DEPTH);
        } else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return rc;
}

int baton_job_parse(const char *name, const char *text, size_t len, baton_job *job, baton_err *err)
{
    job_defaults(job);
    snprintf(job->path, sizeof job->path, "%s", name);
    if (len > BATON_JOB_MAX_BYTES)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu bytes, more than the %u accepted for a job file",
                             name, len, BATON_JOB_MAX_BYTES);
    if (depth_ok(name, text, len, err)) return err->code;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: yaml: %s%s%s", name,
                               parser.problem_mark.line + 1, parser.problem ? parser.problem : "malformed",
                               parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return rc;
    }
    ctx c = {name, &doc, err, job, 0};
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:1: the job file is empty", name);
    } else {
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: yaml: %s", name, parser.problem_mark.line + 1,
                               parser.problem ? parser.problem : "malformed");
        } else {
            if (yaml_document_get_root_node(&extra))
                rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: a second YAML document ('---'); a job file holds one",
                                   name, extra.start_mark.line + 1);
            yaml_document_delete(&extra);
        }
    }
    if (!rc) rc = check_no_aliases(&c);
    top_seen seen = {0};
    if (!rc && root->type != YAML_MAPPING_NODE)
        rc = jf_fail(&c, root, "job", "expected a mapping of fields (name:, command:, ...), got %s", jf_kind_name(root));
    if (!rc) rc = jf_each_pair(&c, root, "", top_pair, &seen);
    if (!rc) rc = finish(&c, root, &seen);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc) baton_job_free(job);
    return rc;
}

void baton_job_free(baton_job *job)
{
    for (size_t i = 0; i < job->ncommands; i++) free(job->commands[i]);
    free(job->commands);
    for (size_t i = 0; i < job->ntypes; i++) free(job->types[i].zone_prices);
    free(job->types);
    free(job->market.interrupts);
    for (size_t i = 0; i < job->nenv; i++) free(job->env[i].key), free(job->env[i].value);
    free(job->env);
    for (size_t i = 0; i < job->nbackend_opts; i++)
        free(job->backend_opts[i].key), free(job->backend_opts[i].value);
    free(job->backend_opts);
    char path[sizeof job->path];
    memcpy(path, job->path, sizeof path);
    job_defaults(job);
    memcpy(job->path, path, sizeof path);
}
