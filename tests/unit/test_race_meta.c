/* test_race_meta.c — DeepRacer's model files: the console's and deepracer-for-cloud's own
 * model_metadata.json and hyperparameters.json (tests/race/, as those tools write them: a 2019 file
 * with only an action list, the console's with index, sensor, network and version, drfc's discrete
 * and continuous defaults) parse to the values they hold; keys left out take the console's
 * defaults; values may be numbers or numeric strings; the formatter's output parses back to the
 * same struct; and bad files (unknown action space type, a speed outside 0.1..4, steering outside
 * +-30, an empty or missing action list, low not below high, unsimulated sensors, another
 * algorithm, a negative lr, whole numbers that are not, not JSON) are errors naming the file and
 * the field. */
#include "../../src/ppo/ppo_internal.h"
#include "baton/race.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static int meta_str(const char *text, baton_ppo_meta *m, baton_err *err)
{
    return ppo_meta_parse("model_metadata.json", text, strlen(text), m, err);
}

static int hyper_str(const char *text, baton_ppo_hyper *h, baton_err *err)
{
    return ppo_hyper_parse("hyperparameters.json", text, strlen(text), h, err);
}

static void test_documented_metadata(void)
{
    baton_ppo_meta m;
    baton_err err = {0};
    CHECK_MSG(ppo_meta_load("tests/race/console_model_metadata.json", &m, &err) == BATON_OK, "%s", err.msg);
    baton_ppo_meta d;
    ppo_meta_default(&d);
    CHECK(m.action_type == BATON_PPO_DISCRETE && m.nactions == 10 && m.obs == BATON_PPO_OBS_CAMERA);
    CHECK(!strcmp(m.version, "4"));
    /* the console's default actions are the guide's table: -30/0.4, -30/0.8, -15/0.4, ... */
    CHECK(d.nactions == 10 && memcmp(d.actions, m.actions, 10 * sizeof m.actions[0]) == 0);
    CHECK(m.actions[3].steer_deg == -15 && m.actions[3].speed_mps == 0.8 && m.actions[9].steer_deg == 30);

    CHECK_MSG(ppo_meta_load("tests/race/model_metadata_2019.json", &m, &err) == BATON_OK, "%s", err.msg);
    CHECK(m.nactions == 6 && m.actions[3].speed_mps == 1 && m.obs == BATON_PPO_OBS_CAMERA);

    CHECK_MSG(ppo_meta_load("tests/race/drfc_model_metadata.json", &m, &err) == BATON_OK, "%s", err.msg);
    CHECK(m.nactions == 5 && m.actions[0].steer_deg == -30 && m.actions[4].speed_mps == 0.6);

    CHECK_MSG(ppo_meta_load("tests/race/drfc_model_metadata_cont.json", &m, &err) == BATON_OK, "%s", err.msg);
    CHECK(m.action_type == BATON_PPO_CONTINUOUS && m.speed_low == 1 && m.speed_high == 2);
    CHECK(m.steer_low == -30 && m.steer_high == 30 && !strcmp(m.version, "5"));

    /* DeepRacer's spellings: type in upper case with spaces, numbers as strings, version a number,
     * the sensor list of simapp 1 ("observation"), unknown keys */
    const char *t = "{\"action_space\": {\"steering_angle\": {\"low\": \"-20\", \"high\": 20.5},"
                    " \"speed\": {\"low\": 0.5, \"high\": \"4\"}}, \"action_space_type\": \" Continuous \","
                    " \"version\": 3, \"sensor\": [\"observation\"], \"lidar_config\": {}, \"whatever\": 1}";
    CHECK_MSG(meta_str(t, &m, &err) == BATON_OK, "%s", err.msg);
    CHECK(m.steer_low == -20 && m.steer_high == 20.5 && m.speed_high == 4 && !strcmp(m.version, "3"));
    CHECK(meta_str("{\"action_space\": [{\"steering_angle\": 0, \"speed\": 1}], \"sensor\": [\"BATON_SENSOR_VECTOR\"],"
                   " \"neural_network\": \"BATON_SENSOR_MLP\"}", &m, &err) == BATON_OK && m.obs == BATON_PPO_OBS_SENSOR);
    CHECK(m.lidar == 0);
    /* the sensor vector with the LIDAR (races with objects), written back as read */
    CHECK(meta_str("{\"action_space\": [{\"steering_angle\": 0, \"speed\": 1}], \"sensor\": [\"LIDAR\", "
                   "\"BATON_SENSOR_VECTOR\"]}", &m, &err) == BATON_OK && m.obs == BATON_PPO_OBS_SENSOR && m.lidar == 1);
    char *s = ppo_meta_format(&m);
    CHECK(s && strstr(s, "[\"BATON_SENSOR_VECTOR\", \"LIDAR\"]"));
    baton_ppo_meta b;
    CHECK(s && meta_str(s, &b, &err) == BATON_OK && b.lidar == 1);
    free(s);
}

static void round_trip_meta(const baton_ppo_meta *m)
{
    char *s = ppo_meta_format(m);
    CHECK(s != NULL);
    if (!s) return;
    baton_ppo_meta b;
    baton_err err = {0};
    CHECK_MSG(meta_str(s, &b, &err) == BATON_OK, "%s: %s", err.msg, s);
    CHECK(b.action_type == m->action_type && b.obs == m->obs && !strcmp(b.version, m->version));
    if (m->action_type == BATON_PPO_DISCRETE)
        CHECK(b.nactions == m->nactions && !memcmp(b.actions, m->actions, m->nactions * sizeof m->actions[0]));
    else
        CHECK(b.steer_low == m->steer_low && b.steer_high == m->steer_high && b.speed_low == m->speed_low &&
              b.speed_high == m->speed_high);
    CHECK(strstr(s, "\"training_algorithm\":\t\"clipped_ppo\"") != NULL);
    free(s);
}

static void test_format(void)
{
    baton_ppo_meta m;
    ppo_meta_default(&m);
    round_trip_meta(&m);
    m.actions[2] = (baton_ppo_action){-7.25, 3.3};
    m.obs = BATON_PPO_OBS_SENSOR;
    round_trip_meta(&m);
    m.action_type = BATON_PPO_CONTINUOUS;
    m.speed_low = 0.75, m.speed_high = 3.9, m.steer_low = -28.5;
    round_trip_meta(&m);

    baton_ppo_hyper h, b;
    ppo_hyper_default(&h);
    h.lr = 1.25e-4, h.loss_type = BATON_PPO_LOSS_MSE, h.stack_size = 3, h.term_cond_max_episodes = 12345;
    char *s = ppo_hyper_format(&h);
    baton_err err = {0};
    CHECK(s && hyper_str(s, &b, &err) == BATON_OK);
    CHECK(s && !memcmp(&h, &b, sizeof h));
    free(s);
}

static void test_documented_hyper(void)
{
    baton_ppo_hyper h, d;
    baton_err err = {0};
    ppo_hyper_default(&d);
    CHECK(d.batch_size == 64 && d.num_epochs == 3 && d.lr == 0.0003 && d.beta_entropy == 0.01);
    CHECK(d.discount_factor == 0.999 && d.loss_type == BATON_PPO_LOSS_HUBER && d.num_episodes_between_training == 20);
    CHECK_MSG(ppo_hyper_load("tests/race/console_hyperparameters.json", &h, &err) == BATON_OK, "%s", err.msg);
    CHECK(!memcmp(&h, &d, sizeof h));   /* the console's file holds exactly the defaults */
    CHECK_MSG(ppo_hyper_load("tests/race/drfc_hyperparameters.json", &h, &err) == BATON_OK, "%s", err.msg);
    CHECK(h.discount_factor == 0.995 && h.num_epochs == 10 && h.term_cond_avg_score == 350 &&
          h.term_cond_max_episodes == 1000 && h.loss_type == BATON_PPO_LOSS_HUBER);
    /* the simulator's spellings: "Huber", "Mean squared error", numbers as strings */
    CHECK(hyper_str("{\"loss_type\": \"Mean squared error\", \"num_epochs\": \"5\", \"lr\": \"1e-4\"}", &h, &err) == BATON_OK);
    CHECK(h.loss_type == BATON_PPO_LOSS_MSE && h.num_epochs == 5 && h.lr == 1e-4 && h.batch_size == 64);
    CHECK(hyper_str("{\"loss_type\": \"Huber\", \"stack_size\": 2.0}", &h, &err) == BATON_OK &&
          h.loss_type == BATON_PPO_LOSS_HUBER && h.stack_size == 2);
    CHECK(hyper_str("{}", &h, &err) == BATON_OK && !memcmp(&h, &d, sizeof h));
}

/* text must fail naming every word in want (the file, the field, the value) */
static void bad_meta(const char *text, const char *want1, const char *want2)
{
    baton_ppo_meta m;
    ppo_meta_default(&m);
    m.nactions = 7;
    baton_err err = {0};
    int rc = meta_str(text, &m, &err);
    CHECK_MSG(rc == BATON_ERR_FORMAT, "accepted: %s", text);
    CHECK_MSG(strstr(err.msg, "model_metadata.json") && strstr(err.msg, want1) && (!want2 || strstr(err.msg, want2)),
              "message '%s' for %s", err.msg, text);
    CHECK(m.nactions == 7);   /* untouched */
}

static void bad_hyper(const char *text, const char *want1, const char *want2)
{
    baton_ppo_hyper h;
    baton_err err = {0};
    CHECK_MSG(hyper_str(text, &h, &err) == BATON_ERR_FORMAT, "accepted: %s", text);
    CHECK_MSG(strstr(err.msg, "hyperparameters.json") && strstr(err.msg, want1) && (!want2 || strstr(err.msg, want2)),
              "message '%s' for %s", err.msg, text);
}

static void test_bad(void)
{
    const char *one = "[{\"steering_angle\": 0, \"speed\": 1}]";
    char t[512];
    snprintf(t, sizeof t, "{\"action_space\": %s, \"action_space_type\": \"discreet\"}", one);
    bad_meta(t, "action_space_type", "discreet");
    bad_meta("{\"action_space\": [{\"steering_angle\": 0, \"speed\": 1}, {\"steering_angle\": 10, \"speed\": 5}]}",
             "action_space[1].speed", "0.1..4");
    bad_meta("{\"action_space\": [{\"steering_angle\": 0, \"speed\": 0.05}]}", "action_space[0].speed", "0.05");
    bad_meta("{\"action_space\": [{\"steering_angle\": -45, \"speed\": 1}]}", "action_space[0].steering_angle", "-45");
    bad_meta("{\"action_space\": []}", "action_space", "empty");
    bad_meta("{\"sensor\": [\"FRONT_FACING_CAMERA\"]}", "action_space", "missing");
    bad_meta("{\"action_space\": [{\"speed\": 1}]}", "action_space[0].steering_angle", "missing");
    bad_meta("{\"action_space\": [{\"steering_angle\": \"left\", \"speed\": 1}]}", "steering_angle", "not a number");
    bad_meta("{\"action_space\": [7]}", "action_space[0]", "not an object");
    bad_meta("{\"action_space\": {\"steering_angle\": {\"low\": -30, \"high\": 30}, \"speed\": {\"low\": 2, \"high\": 1}},"
             " \"action_space_type\": \"continuous\"}", "action_space.speed", "low 2");
    bad_meta("{\"action_space\": {\"steering_angle\": {\"low\": -30, \"high\": 30}, \"speed\": {\"low\": 1, \"high\": 4.5}},"
             " \"action_space_type\": \"continuous\"}", "action_space.speed.high", "4.5");
    bad_meta("{\"action_space\": {\"speed\": {\"low\": 1, \"high\": 2}}, \"action_space_type\": \"continuous\"}",
             "action_space.steering_angle", NULL);
    snprintf(t, sizeof t, "{\"action_space\": %s, \"action_space_type\": \"continuous\"}", one);
    bad_meta(t, "action_space", "continuous");
    bad_meta("{\"action_space\": {\"speed\": {}}}", "action_space", "discrete");
    snprintf(t, sizeof t, "{\"action_space\": %s, \"sensor\": [\"FRONT_FACING_CAMERA\", \"SECTOR_LIDAR\"]}", one);
    bad_meta(t, "SECTOR_LIDAR", "not simulated");
    snprintf(t, sizeof t, "{\"action_space\": %s, \"sensor\": [\"FRONT_FACING_CAMERA\", \"LIDAR\"]}", one);
    bad_meta(t, "LIDAR", "not with the camera");
    snprintf(t, sizeof t, "{\"action_space\": %s, \"sensor\": [\"BATON_SENSOR_VECTOR\", \"LIDAR\", \"LIDAR\"]}", one);
    bad_meta(t, "LIDAR", "once");
    snprintf(t, sizeof t, "{\"action_space\": %s, \"sensor\": [\"FRONT_FACING_CAMERA\", \"observation\"]}", one);
    bad_meta(t, "sensor", "exactly one");
    snprintf(t, sizeof t, "{\"action_space\": %s, \"training_algorithm\": \"SAC\"}", one);
    bad_meta(t, "training_algorithm", "sac");
    snprintf(t, sizeof t, "{\"action_space\": %s, \"neural_network\": \"DEEP_CONVOLUTIONAL_NETWORK_DEEP\"}", one);
    bad_meta(t, "neural_network", "DEEP_CONVOLUTIONAL_NETWORK_DEEP");
    bad_meta("{\"action_space\": [", "not JSON: at byte 17 (line 1, column 18)", NULL);
    bad_meta("[1, 2]", "not a JSON object", NULL);
    snprintf(t, sizeof t, "{\"action_space\": %s} x", one);
    bad_meta(t, "text after", NULL);

    bad_hyper("{\"lr\": -0.1}", "lr", "positive");
    bad_hyper("{\"lr\": 0}", "lr", "positive");
    bad_hyper("{\"batch_size\": 0}", "batch_size", "1..4096");
    bad_hyper("{\"num_epochs\": 2.5}", "num_epochs", "whole number");
    bad_hyper("{\"num_episodes_between_training\": \"ten\"}", "num_episodes_between_training", "whole number");
    bad_hyper("{\"discount_factor\": 1.5}", "discount_factor", "1.5");
    bad_hyper("{\"discount_factor\": 0}", "discount_factor", NULL);
    bad_hyper("{\"loss_type\": \"l1\"}", "loss_type", "l1");
    bad_hyper("{\"beta_entropy\": -1}", "beta_entropy", NULL);
    bad_hyper("{\"stack_size\": 40}", "stack_size", "1..16");
    bad_hyper("{\"exploration_type\": 3}", "exploration_type", NULL);
    bad_hyper("{\"lr\": \"fast\"}", "lr", "not a number");
    bad_hyper("\"hello\"", "not a JSON object", NULL);
    baton_ppo_hyper h;
    baton_err err = {0};
    CHECK(ppo_hyper_load("tests/race/no_such_hyperparameters.json", &h, &err) != BATON_OK &&
          strstr(err.msg, "no_such_hyperparameters.json"));
}

int main(void)
{
    test_documented_metadata();
    test_format();
    test_documented_hyper();
    test_bad();
    CHECK_DONE();
}
