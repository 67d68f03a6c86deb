/* test_train_state.c — baton_train_state_parse: a state.json as the trainer writes it parses into
 * the right fields; seeds as decimal strings up to 2^64-1; null metrics; and each kind of bad input
 * is refused with a message naming the field (a step of 1e300, which a plain cast would turn into
 * undefined behaviour, a fractional or negative integer, batch 0, cursor seed != hyper seed,
 * correct > seen, an all-zero RNG, a bad hex word, trailing bytes, a non-object, a text cut short). */
#include "baton/train.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const char *good =
    "{\"model\":\"mlp\",\"step\":30,\"epoch\":1,\"cursor\":{\"seed\":\"7\",\"epoch\":1,\"position\":1920},"
    "\"dropout_rng\":[\"f2dfdac63743373c\",\"ca0cf077e482fb10\",\"033cce6e86e194e7\",\"89ba41126f341537\"],"
    "\"hyper\":{\"seed\":\"7\",\"batch\":64,\"epochs\":2},"
    "\"epoch_sums\":{\"loss_sum\":2450.5,\"correct\":1095,\"seen\":1920,\"seconds\":0.25},"
    "\"metrics\":{\"loss\":0.5,\"accuracy\":0.75,\"val_loss\":null,\"val_accuracy\":0.7}}\n";

/* good with the first occurrence of from replaced by to */
static int parse_with(const char *from, const char *to, baton_err *err)
{
    char buf[2048];
    const char *at = strstr(good, from);
    if (!at) return 999;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
    baton_train_state st;
    return baton_train_state_parse(buf, strlen(buf), &st, err);
}

static void bad(const char *from, const char *to, const char *field)
{
    baton_err err = {0};
    int rc = parse_with(from, to, &err);
    CHECK_MSG(rc == BATON_ERR_FORMAT && strstr(err.msg, field), "%s -> %s: rc %d, %s", from, to, rc, err.msg);
}

/* The writer and the parser agree: every field survives a round trip, exactly (doubles too). */
static void round_trip(void)
{
    baton_train_state a = {.step = 80, .epoch = 2, .cursor = {18446744073709551615ull, 2, 0},
                           .seed = 18446744073709551615ull, .batch = 256, .epochs = 3, .steps_per_epoch = 40,
                           .base_lr = 0.1 / 3, .total_steps = 120, .momentum = 0.9, .weight_decay = 5e-4,
                           .nesterov = 1, .rng = {1, 2, 3, 0xffffffffffffffffull}, .ep_loss_sum = 1.0 / 7,
                           .ep_seconds = 2.5, .ep_correct = 3, .ep_seen = 4, .has_val = 1, .loss = 0.25,
                           .accuracy = 0.5, .val_loss = 1e-9, .val_accuracy = 0.75, .norm_channels = 3,
                           .mean = {0.1f, 0.2f, 0.3f}, .std = {0.4f, 0.5f, 0.6f}, .input_shape = {32, 32, 3},
                           .classes = 10};
    snprintf(a.model, sizeof a.model, "resnet20");
    char *js = baton_train_state_format(&a);
    baton_train_state b;
    baton_err err = {0};
    CHECK_MSG(js && baton_train_state_parse(js, strlen(js), &b, &err) == BATON_OK, "%s", err.msg);
    CHECK(!strcmp(b.model, "resnet20") && b.step == 80 && b.epoch == 2 && b.cursor.seed == a.cursor.seed &&
          b.cursor.epoch == 2 && b.seed == a.seed && b.batch == 256 && b.epochs == 3 && b.steps_per_epoch == 40);
    CHECK(b.has_schedule && b.base_lr == a.base_lr && b.total_steps == 120);
    CHECK(!memcmp(b.rng, a.rng, sizeof a.rng) && b.ep_loss_sum == a.ep_loss_sum && b.ep_seconds == 2.5 &&
          b.ep_correct == 3 && b.ep_seen == 4);
    CHECK(b.has_metrics && b.has_val && b.loss == 0.25 && b.accuracy == 0.5 && b.val_loss == 1e-9 && b.val_accuracy == 0.75);
    CHECK(b.norm_channels == 3 && !memcmp(b.mean, a.mean, sizeof a.mean) && !memcmp(b.std, a.std, sizeof a.std));
    CHECK(!memcmp(b.input_shape, a.input_shape, sizeof a.input_shape) && b.classes == 10);
    free(js);
}

/* Every double written reads back bit-identical (a property test over random doubles). */
static void doubles_round_trip(void)
{
    baton_rng r;
    baton_rng_seed(&r, 42);
    int exact = 0, n = 2000;
    for (int i = 0; i < n; i++) {
        baton_train_state a = {.batch = 1, .rng = {1}, .ep_seen = 1, .epochs = 1, .steps_per_epoch = 1,
                               .input_shape = {1, 1, 1}, .classes = 1};
        snprintf(a.model, sizeof a.model, "m");
        uint64_t bits = baton_rng_next(&r);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v) || v < 0) v = fabs((double)(bits >> 11) / 9007199254740992.0) * pow(10, (int)(bits % 40) - 20);
        if (!(v > 0)) v = 1.0 / (i + 3);
        a.ep_loss_sum = v, a.base_lr = v, a.ep_seconds = v / 3, a.loss = -v;
        char *js = baton_train_state_format(&a);
        baton_train_state b;
        baton_err err = {0};
        if (js && baton_train_state_parse(js, strlen(js), &b, &err) == BATON_OK && b.ep_loss_sum == a.ep_loss_sum &&
            b.ep_seconds == a.ep_seconds && b.loss == a.loss)
            exact++;
        free(js);
    }
    CHECK_MSG(exact == n, "%d of %d random doubles came back bit-identical", exact, n);
}

int main(void)
{
    round_trip();
    doubles_round_trip();
    baton_train_state st;
    baton_err err = {0};
    CHECK_MSG(baton_train_state_parse(good, strlen(good), &st, &err) == BATON_OK, "%s", err.msg);
    CHECK(!strcmp(st.model, "mlp") && st.step == 30 && st.epoch == 1);
    CHECK(st.cursor.seed == 7 && st.cursor.epoch == 1 && st.cursor.position == 1920);
    CHECK(st.seed == 7 && st.batch == 64);
    CHECK(st.rng[0] == 0xf2dfdac63743373cull && st.rng[3] == 0x89ba41126f341537ull);
    CHECK(st.ep_loss_sum == 2450.5 && st.ep_correct == 1095 && st.ep_seen == 1920 && st.ep_seconds == 0.25);
    CHECK(st.has_metrics && st.has_val && st.loss == 0.5 && isnan(st.val_loss) && st.val_accuracy == 0.7);

    CHECK(parse_with("\"seed\":\"7\",\"epoch\":1", "\"seed\":\"18446744073709551615\",\"epoch\":1", &err) ==
          BATON_ERR_FORMAT);   /* differs from hyper.seed */
    {
        char buf[2048];
        snprintf(buf, sizeof buf, "%s", good);
        char *p;
        while ((p = strstr(buf, "\"seed\":\"7\"")) != NULL) {
            memmove(p + 29, p + 10, strlen(p + 10) + 1);
            memcpy(p, "\"seed\":\"18446744073709551615\"", 29);
        }
        CHECK_MSG(baton_train_state_parse(buf, strlen(buf), &st, &err) == BATON_OK, "%s", err.msg);
        CHECK(st.seed == UINT64_MAX && st.cursor.seed == UINT64_MAX);
    }
    /* the text need not be NUL-terminated: a prefix is cut short */
    CHECK(baton_train_state_parse(good, 40, &st, &err) == BATON_ERR_FORMAT);

    bad("\"step\":30", "\"step\":1e300", "state.json: step:");
    bad("\"step\":30", "\"step\":30.5", "state.json: step:");
    bad("\"step\":30", "\"step\":-1", "state.json: step:");
    bad("\"step\":30", "\"step\":\"3x\"", "state.json: step:");
    bad("\"position\":1920", "\"position\":\"99999999999999999999999\"", "cursor.position");
    bad("\"batch\":64", "\"batch\":0", "hyper.batch");
    bad("\"batch\":64", "\"batch\":4294967296", "hyper.batch");
    bad("{\"seed\":\"7\",\"epoch\":1", "{\"seed\":\"8\",\"epoch\":1", "cursor.seed");
    bad("\"correct\":1095", "\"correct\":1921", "state.json: epoch_sums.correct: 1921 exceeds seen");
    bad("\"loss_sum\":2450.5", "\"loss_sum\":-1", "epoch_sums.loss_sum");
    bad("\"f2dfdac63743373c\",\"ca0cf077e482fb10\",\"033cce6e86e194e7\",\"89ba41126f341537\"",
        "\"0\",\"0\",\"000\",\"0\"", "all zero");
    bad("\"f2dfdac63743373c\"", "\"f2dfdac63743373c0\"", "dropout_rng: word 0");
    bad("\"ca0cf077e482fb10\"", "\"-1\"", "dropout_rng: word 1");
    bad("\"ca0cf077e482fb10\"", "17", "dropout_rng: word 1");
    bad("\"model\":\"mlp\"", "\"model\":\"\"", "state.json: model:");
    bad("\"model\":\"mlp\"", "\"model\":\"a-model-name-that-is-far-too-long-to-fit\"", "state.json: model:");
    bad("\"hyper\":{", "\"hyperX\":{", "state.json: hyper: is missing");
    bad("\"loss\":0.5", "\"loss\":\"x\"", "metrics.loss");
    bad("}\n", "} x", "after the JSON");
    /* normalisation: optional; 1..4 channels, finite means, positive stds */
    CHECK(st.norm_channels == 0);
    {
        const char *norm = "\"normalisation\":{\"mean\":[0.286],\"std\":[0.353]},\"epoch_sums\"";
        char buf[2048];
        const char *at = strstr(good, "\"epoch_sums\"");
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - good), good, norm, at + strlen("\"epoch_sums\""));
        CHECK_MSG(baton_train_state_parse(buf, strlen(buf), &st, &err) == BATON_OK, "%s", err.msg);
        CHECK(st.norm_channels == 1 && fabsf(st.mean[0] - 0.286f) < 1e-7f && fabsf(st.std[0] - 0.353f) < 1e-7f);
    }
    bad("\"epoch_sums\"", "\"normalisation\":{\"mean\":[0.1],\"std\":[0]},\"epoch_sums\"", "normalisation");
    bad("\"epoch_sums\"", "\"normalisation\":{\"mean\":[0.1,0.2],\"std\":[1]},\"epoch_sums\"", "normalisation");
    bad("\"epoch_sums\"", "\"normalisation\":{\"mean\":[],\"std\":[]},\"epoch_sums\"", "normalisation");
    bad("\"epoch_sums\"", "\"normalisation\":[1],\"epoch_sums\"", "normalisation");
    const char *arr = "[1,2]";
    CHECK(baton_train_state_parse(arr, strlen(arr), &st, &err) == BATON_ERR_FORMAT && strstr(err.msg, "object"));
    CHECK_DONE();
}
