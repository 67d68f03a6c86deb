/* crop_args.c — the crop flags that `baton train`, `baton eval` and `baton bench-io` share (--crop,
 * --size, --scale A,B, --ratio A,B): parsed and checked once, into the pipeline's fields. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int pair(const char *cmd, const char *name, const char *s, double hi, float out[2])
{
    double a, b;
    char tail;
    if (sscanf(s, "%lf,%lf%c", &a, &b, &tail) != 2 || !(a > 0 && a <= b && b <= hi) || !isfinite(b)) {
        fprintf(stderr, "baton %s: --%s '%s': expected A,B with 0 < A <= B%s\n", cmd, name, s, hi <= 1 ? " <= 1" : "");
        return -1;
    }
    out[0] = (float)a;
    out[1] = (float)b;
    return 0;
}

int cli_crop_finish(const struct cli_crop *c, const char *cmd, struct cli_crop_out *o)
{
    memset(o, 0, sizeof *o);
    if (c->crop && baton_crop_parse(c->crop, &o->crop)) {
        fprintf(stderr, "baton %s: --crop '%s': expected random-resized, center, pad or none\n", cmd, c->crop);
        return -1;
    }
    if (c->size < 0 || c->size > 4096) {
        fprintf(stderr, "baton %s: --size %d: expected 1..4096\n", cmd, c->size);
        return -1;
    }
    int crops = o->crop == BATON_CROP_RANDOM_RESIZED || o->crop == BATON_CROP_CENTER;
    if ((c->size && !crops && c->crop) || ((c->scale || c->ratio) && o->crop != BATON_CROP_RANDOM_RESIZED)) {
        fprintf(stderr, "baton %s: --size goes with --crop random-resized or center, --scale and --ratio with random-resized\n", cmd);
        return -1;
    }
    if ((c->scale && pair(cmd, "scale", c->scale, 1, o->scale)) || (c->ratio && pair(cmd, "ratio", c->ratio, 1e6, o->ratio)))
        return -1;
    o->size = (uint32_t)c->size;
    o->set = c->crop != NULL;
    return 0;
}
