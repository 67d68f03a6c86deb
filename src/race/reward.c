/* reward.c — reward functions: the three examples of the DeepRacer developer guide built in, the
 * user's C or Python file behind the same call, and the check every result passes (finite, within
 * ±1e5, as the simulator requires) with a message naming the step and the params when it fails.
 *
 * The built-ins follow the guide's Python line by line, so the same params give the same double:
 *   follow_center_line   markers at 0.1, 0.25, 0.5 × track_width: 1.0 / 0.5 / 0.1, else 1e-3
 *                        (also DeepRacer's default reward)
 *   stay_inside_borders  1.0 when all wheels are on the track and 0.5·width − distance ≥ 0.05,
 *                        else 1e-3
 *   prevent_zigzag       follow_center_line × 0.8 when |steering_angle| > 15 */
#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

enum { REWARD_BUILTIN, REWARD_C, REWARD_PY };

struct baton_race_reward {
    int kind;
    char name[512];
    race_reward_fn fn;
    void *handle;             /* dlopen handle (C) or interpreter state (Python) */
};

double baton_race_reward_follow_center_line(const struct baton_race_params *p)
{
    double track_width = p->track_width, distance_from_center = p->distance_from_center;
    double marker_1 = 0.1 * track_width, marker_2 = 0.25 * track_width, marker_3 = 0.5 * track_width;
    double reward;
    if (distance_from_center <= marker_1) reward = 1.0;
    else if (distance_from_center <= marker_2) reward = 0.5;
    else if (distance_from_center <= marker_3) reward = 0.1;
    else reward = 1e-3;
    return reward;
}

double race_reward_stay_inside_borders(const struct baton_race_params *p)
{
    double reward = 1e-3;
    if (p->all_wheels_on_track && (0.5 * p->track_width - p->distance_from_center) >= 0.05) reward = 1.0;
    return reward;
}

double race_reward_prevent_zigzag(const struct baton_race_params *p)
{
    double reward = baton_race_reward_follow_center_line(p);
    if (fabs(p->steering_angle) > 15) reward *= 0.8;
    return reward;
}

static const struct {
    const char *name;
    race_reward_fn fn;
} builtins[] = {
    {"follow_center_line", baton_race_reward_follow_center_line},
    {"stay_inside_borders", race_reward_stay_inside_borders},
    {"prevent_zigzag", race_reward_prevent_zigzag},
};

int baton_race_python_available(void)
{
    return race_python_built();
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

int baton_race_reward_open(const char *spec, baton_race_reward **out, baton_err *err)
{
    *out = NULL;
    if (!spec || !*spec) spec = "follow_center_line";
    baton_race_reward *r = calloc(1, sizeof *r);
    if (!r) return baton_err_set(err, BATON_ERR_NOMEM, "reward: out of memory");
    snprintf(r->name, sizeof r->name, "%s", spec);
    int rc = BATON_OK;
    size_t i = 0;
    for (; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(spec, builtins[i].name)) break;
    if (i < sizeof builtins / sizeof builtins[0]) {
        r->kind = REWARD_BUILTIN;
        r->fn = builtins[i].fn;
    } else if (ends_with(spec, ".c")) {
        r->kind = REWARD_C;
        rc = race_reward_c_open(spec, &r->handle, &r->fn, err);
    } else if (ends_with(spec, ".py")) {
        r->kind = REWARD_PY;
        rc = race_reward_py_open(spec, &r->handle, err);
    } else {
        rc = baton_err_set(err, BATON_ERR_ARG, "reward '%s': not a built-in (follow_center_line, "
                           "stay_inside_borders, prevent_zigzag), a .c or a .py file", spec);
    }
    if (rc) {
        free(r);
        return rc;
    }
    *out = r;
    return BATON_OK;
}

void baton_race_reward_free(baton_race_reward *r)
{
    if (!r) return;
    if (r->kind == REWARD_C) race_reward_c_close(r->handle);
    if (r->kind == REWARD_PY) race_reward_py_close(r->handle);
    free(r);
}

const char *race_reward_name(const baton_race_reward *r)
{
    return r->name;
}

static int bad_value(const baton_race_reward *r, const struct baton_race_params *p, double v, baton_err *err)
{
    return baton_err_set(err, BATON_ERR_ARG, "%s: reward at step %d is %.17g (it must be finite and within "
                         "[-1e5, 1e5]); params: x=%.4f y=%.4f heading=%.2f progress=%.3f speed=%.3f "
                         "steering_angle=%.2f distance_from_center=%.4f track_width=%.4f "
                         "all_wheels_on_track=%s is_offtrack=%s closest_waypoints=[%d, %d]",
                         r->name, p->steps, v, p->x, p->y, p->heading, p->progress, p->speed, p->steering_angle,
                         p->distance_from_center, p->track_width, p->all_wheels_on_track ? "True" : "False",
                         p->is_offtrack ? "True" : "False", p->closest_waypoints[0], p->closest_waypoints[1]);
}

int baton_race_reward_eval_batch(baton_race_reward *r, const struct baton_race_params *p, size_t n,
                                 double *out, baton_err *err)
{
    if (r->kind == REWARD_PY) {
        int rc = race_reward_py_call(r->handle, p, n, out, err);
        if (rc) return rc;
    } else {
        for (size_t i = 0; i < n; i++) out[i] = r->fn(&p[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(out[i]) || out[i] < -1e5 || out[i] > 1e5) return bad_value(r, &p[i], out[i], err);
    return BATON_OK;
}

int baton_race_reward_eval(baton_race_reward *r, const struct baton_race_params *p, double *out, baton_err *err)
{
    return baton_race_reward_eval_batch(r, p, 1, out, err);
}
