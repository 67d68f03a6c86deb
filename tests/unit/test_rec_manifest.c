/* test_rec_manifest.c — rec: dataset.json. A full manifest survives to_json → parse unchanged
 * (and serialises to the same bytes again), save + load through a folder, a folder without a
 * manifest, and one malformed field at a time — each error names the field. Piece checksums: a
 * shard's pieces survive the round trip, and pieces that contradict the shard's CRC32C, a list of
 * the wrong length or a size out of range are refused naming the field. */
#include "baton/rec.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static baton_manifest sample(void)
{
    baton_manifest m = {0};
    m.version = 1;
    m.name = strdup("fashion-mnist");
    m.split = strdup("train");
    m.format = BATON_FMT_RECORDIO;
    m.encoding = BATON_ENC_RAW;
    m.quality = 0;
    m.classes = 3;
    m.class_names = calloc(3, sizeof *m.class_names);
    m.class_names[0] = strdup("T-shirt/top");
    m.class_names[1] = strdup("Trouser \"quoted\"");
    m.class_names[2] = strdup("Bag");
    m.shape[0] = 28;
    m.shape[1] = 28;
    m.shape[2] = 1;
    m.channels = 1;
    m.mean[0] = 0.2860406f;
    m.std[0] = 0.35302424f;
    m.seed = 9007199254740991ULL;   /* 2^53 - 1: the largest exact value */
    m.shuffled = 1;
    m.nshards = 2;
    m.shards = calloc(2, sizeof *m.shards);
    m.shards[0] = (baton_shard_info){strdup("train-00000.rec"), strdup("train-00000.idx"),
                                     123456789012ULL, 40000, 0xe3069283U, 500000, 0x0000abcdU, 0, NULL};
    m.shards[1] = (baton_shard_info){strdup("train-00001.rec"), NULL, 99, 20000, 0, 0, 0, 0, NULL};
    m.samples = 60000;
    return m;
}

static int same(const baton_manifest *a, const baton_manifest *b)
{
    if (a->version != b->version || strcmp(a->name, b->name) || strcmp(a->split, b->split) ||
        a->format != b->format || a->encoding != b->encoding || a->quality != b->quality ||
        a->samples != b->samples || a->classes != b->classes || a->channels != b->channels ||
        a->seed != b->seed || a->shuffled != b->shuffled || a->nshards != b->nshards ||
        memcmp(a->shape, b->shape, sizeof a->shape))
        return 0;
    for (uint32_t k = 0; k < a->classes; k++)
        if (strcmp(a->class_names[k], b->class_names[k])) return 0;
    for (uint32_t k = 0; k < a->channels; k++)
        if (a->mean[k] != b->mean[k] || a->std[k] != b->std[k]) return 0;
    for (size_t i = 0; i < a->nshards; i++) {
        const baton_shard_info *x = &a->shards[i], *y = &b->shards[i];
        if (strcmp(x->file, y->file) || !x->index != !y->index ||
            (x->index && strcmp(x->index, y->index)) || x->bytes != y->bytes ||
            x->records != y->records || x->crc32c != y->crc32c ||
            x->index_bytes != y->index_bytes || x->index_crc32c != y->index_crc32c)
            return 0;
    }
    return 1;
}

/* Replace the first occurrence of `from` in json by `to`, parse, expect FORMAT naming `field`. */
static int rejects(const char *json, const char *from, const char *to, const char *field)
{
    const char *at = strstr(json, from);
    if (!at) {
        fprintf(stderr, "test bug: '%s' not in the JSON\n", from);
        return 0;
    }
    size_t n = strlen(json) - strlen(from) + strlen(to);
    char *text = malloc(n + 1);
    size_t pre = (size_t)(at - json);
    memcpy(text, json, pre);
    memcpy(text + pre, to, strlen(to));
    strcpy(text + pre + strlen(to), at + strlen(from));
    baton_manifest m;
    baton_err err = {0};
    int rc = baton_manifest_parse("dataset.json", text, n, &m, &err);
    char want[128];
    snprintf(want, sizeof want, "dataset.json: %s", field);
    int ok = rc == BATON_ERR_FORMAT && strstr(err.msg, want) != NULL;
    if (!ok) fprintf(stderr, "'%s' -> '%s': rc %d: %s\n", from, to, rc, err.msg);
    if (rc == BATON_OK) baton_manifest_free(&m);
    free(text);
    return ok;
}

/* A shard of 10000 bytes in 4 KiB pieces (3 of them, the last 1808 bytes). */
static void pieces(void)
{
    uint8_t data[10000];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 3);
    baton_manifest m = sample(), back;
    baton_err err = {0};
    baton_shard_info *si = &m.shards[1];
    si->bytes = sizeof data;
    si->crc32c = baton_crc32c(0, data, sizeof data);
    si->piece_bytes = 4096;
    CHECK(baton_shard_pieces(si) == 3 && baton_shard_pieces(&m.shards[0]) == 0);
    si->piece_crc32c = malloc(3 * sizeof *si->piece_crc32c);
    for (int k = 0; k < 3; k++)
        si->piece_crc32c[k] = baton_crc32c(0, data + 4096 * k, k < 2 ? 4096 : sizeof data - 8192);
    char *json = baton_manifest_to_json(&m);
    CHECK(json && strstr(json, "\"piece_bytes\":\t4096"));
    char hex[32];
    snprintf(hex, sizeof hex, "\"%08x%08x%08x\"", si->piece_crc32c[0], si->piece_crc32c[1], si->piece_crc32c[2]);
    CHECK_MSG(json && strstr(json, hex), "%s", json);
    CHECK_MSG(baton_manifest_parse("dataset.json", json, strlen(json), &back, &err) == BATON_OK, "%s", err.msg);
    CHECK(back.shards[1].piece_bytes == 4096 && back.shards[0].piece_bytes == 0 && !back.shards[0].piece_crc32c &&
          !memcmp(back.shards[1].piece_crc32c, si->piece_crc32c, 3 * sizeof *si->piece_crc32c));
    baton_manifest_free(&back);
    char wrong[32];
    snprintf(wrong, sizeof wrong, "\"%08x%08x%08x\"", si->piece_crc32c[0], si->piece_crc32c[1] ^ 1, si->piece_crc32c[2]);
    CHECK(rejects(json, hex, wrong, "shards[1].piece_crc32c: its pieces sum to CRC32C"));
    snprintf(wrong, sizeof wrong, "\"%08x%08x\"", si->piece_crc32c[0], si->piece_crc32c[1]);
    CHECK(rejects(json, hex, wrong, "shards[1].piece_crc32c: 16 characters, expected 8 hexadecimal digits for each of the 3"));
    snprintf(wrong, sizeof wrong, "\"%08x%08xzz%06x\"", si->piece_crc32c[0], si->piece_crc32c[1], 0);
    CHECK(rejects(json, hex, wrong, "shards[1].piece_crc32c: piece 2 (characters 16..23)"));
    CHECK(rejects(json, "\"piece_bytes\":\t4096", "\"piece_bytes\":\t4095", "shards[1].piece_bytes"));
    CHECK(rejects(json, "\"piece_bytes\":\t4096", "\"piece_bytesx\":\t4096", "shards[1].piece_bytes: is missing"));
    CHECK(rejects(json, "\"piece_crc32c\"", "\"piece_crc\"", "shards[1].piece_crc32c: is missing"));
    free(json);
    baton_manifest_free(&m);
}

/* Every shard's index in one file: round trip, and bytes that are not the indexes' sum, a shard
 * without an index or a path for a name refused naming the field. */
static void indexes(void)
{
    baton_manifest m = sample(), back;
    baton_err err = {0};
    free(m.shards[1].file);
    m.shards[1] = (baton_shard_info){strdup("train-00001.rec"), strdup("train-00001.idx"), 99, 20000, 0, 700, 1, 0, NULL};
    m.indexes = strdup(BATON_INDEXES_NAME);
    m.indexes_bytes = 500700;
    char *json = baton_manifest_to_json(&m);
    CHECK_MSG(json && strstr(json, "\"indexes\":\t{") && strstr(json, "\"bytes\":\t500700"), "%s", json ? json : "");
    CHECK_MSG(baton_manifest_parse("dataset.json", json, strlen(json), &back, &err) == BATON_OK, "%s", err.msg);
    CHECK(back.indexes && !strcmp(back.indexes, "dataset.idx") && back.indexes_bytes == 500700);
    baton_manifest_free(&back);
    CHECK(rejects(json, "\"bytes\":\t500700", "\"bytes\":\t500701", "indexes.bytes: 500701, but the shards' indexes hold 500700"));
    CHECK(rejects(json, "\"file\":\t\"dataset.idx\"", "\"file\":\t\"../dataset.idx\"", "indexes.file"));
    CHECK(rejects(json, "\"index\":\t\"train-00001.idx\"", "\"index\":\tnull", "indexes: given, but shards[1] has no index"));
    free(json);
    baton_manifest_free(&m);
}

int main(void)
{
    pieces();
    indexes();
    baton_manifest m = sample(), back;
    baton_err err = {0};
    char *json = baton_manifest_to_json(&m);
    CHECK(json != NULL);
    CHECK(strstr(json, "\"crc32c\":\t\"e3069283\"") || strstr(json, "\"crc32c\": \"e3069283\""));
    CHECK(strstr(json, "\"index_crc32c\":\t\"0000abcd\"") != NULL);
    CHECK(strstr(json, "123456789012") && strstr(json, "9007199254740991"));
    CHECK(strstr(json, "0.2860406") != NULL);   /* shortest text for the float */
    CHECK_MSG(baton_manifest_parse("dataset.json", json, strlen(json), &back, &err) == BATON_OK,
              "%s", err.msg);
    CHECK(same(&m, &back));
    char *again = baton_manifest_to_json(&back);
    CHECK(again && !strcmp(again, json));   /* deterministic */
    free(again);
    baton_manifest_free(&back);
    /* field order is fixed */
    const char *order[] = {"baton_dataset", "\"name\"", "split", "format", "encoding", "quality",
                           "samples", "\"classes\"", "class_names", "shape", "channels", "mean",
                           "std", "seed", "shuffled", "shards"};
    const char *prev = json;
    int ordered = 1;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const char *at = strstr(json, order[i]);
        if (!at || at < prev) ordered = 0;
        else prev = at;
    }
    CHECK(ordered);

    /* save + load */
    char dir[] = "/tmp/baton-test-manifest-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(baton_manifest_load(dir, &back, &err) == BATON_ERR_NOTFOUND);
    char want[128];
    snprintf(want, sizeof want, "%s: no dataset.json (not a baton dataset folder)", dir);
    CHECK_MSG(!strcmp(err.msg, want), "%s", err.msg);
    CHECK_MSG(baton_manifest_save(dir, &m, &err) == BATON_OK, "%s", err.msg);
    CHECK(baton_manifest_load(dir, &back, &err) == BATON_OK && same(&m, &back));
    baton_manifest_free(&back);
    /* saving an invalid manifest is refused and leaves the old file alone */
    uint64_t seed = m.seed;
    m.seed = (uint64_t)1 << 60;
    CHECK(baton_manifest_save(dir, &m, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "seed") && strstr(err.msg, "2^53"), "%s", err.msg);
    m.seed = seed;
    m.samples = 5;
    CHECK(baton_manifest_save(dir, &m, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "samples") != NULL);
    m.samples = 60000;
    CHECK(baton_manifest_load(dir, &back, &err) == BATON_OK && same(&m, &back));
    baton_manifest_free(&back);
    char path[128];
    snprintf(path, sizeof path, "%s/dataset.json", dir);
    unlink(path);
    rmdir(dir);

    /* one broken field at a time */
    CHECK(rejects(json, "\"bytes\":\t123456789012", "\"bytes\":\t-1",
                  "shards[0].bytes: is not a whole number"));
    CHECK(rejects(json, "\"bytes\":\t99", "\"bytes\":\t\"99\"",
                  "shards[1].bytes: is not a whole number"));
    CHECK(rejects(json, "\"bytes\":\t99", "\"bytes\":\t1.5", "shards[1].bytes"));
    CHECK(rejects(json, "\"bytes\":\t99", "\"bytes\":\t1e300", "shards[1].bytes"));
    CHECK(rejects(json, "\"bytes\":\t99", "\"bytes\":\t9007199254740993", "shards[1].bytes"));
    CHECK(rejects(json, "\"train-00001.rec\"", "\"../x.rec\"", "shards[1].file"));
    CHECK(rejects(json, "\"train-00001.rec\"", "\"a/b.rec\"", "shards[1].file"));
    CHECK(rejects(json, "\"train-00001.rec\"", "\"\"", "shards[1].file"));
    CHECK(rejects(json, "\"train-00001.rec\"", "\"train-00000.rec\"", "shards[1].file"));
    CHECK(rejects(json, "\"train-00000.idx\"", "\"..\"", "shards[0].index"));
    CHECK(rejects(json, "\"e3069283\"", "\"e306928\"", "shards[0].crc32c"));
    CHECK(rejects(json, "\"e3069283\"", "\"e306928g\"", "shards[0].crc32c"));
    CHECK(rejects(json, "\"e3069283\"", "3809055363", "shards[0].crc32c"));
    CHECK(rejects(json, "\"records\":\t20000", "\"records\":\t20001",
                  "samples: 60000, but the shards hold 60001"));
    CHECK(rejects(json, "\"classes\":\t3", "\"classes\":\t4", "class_names"));
    CHECK(rejects(json, "\"Bag\"", "7", "class_names[2]: is not a string"));
    CHECK(rejects(json, "\"channels\":\t1", "\"channels\":\t5", "channels"));
    CHECK(rejects(json, "\"channels\":\t1", "\"channels\":\t0", "channels"));
    CHECK(rejects(json, "\"channels\":\t1", "\"channels\":\t3", "shape[2]"));
    CHECK(rejects(json, "[28, 28, 1]", "[28, 0, 1]", "shape"));
    CHECK(rejects(json, "[28, 28, 1]", "[28, 28]", "shape"));
    CHECK(rejects(json, "[0.35302424]", "[0]", "std[0]: is not a number > 0"));
    CHECK(rejects(json, "[0.35302424]", "[1, 2]", "std: expected an array of 1 numbers"));
    CHECK(rejects(json, "[0.2860406]", "[\"x\"]", "mean[0]"));
    CHECK(rejects(json, "\"recordio\"", "\"zip\"", "format"));
    CHECK(rejects(json, "\"raw\"", "\"gif\"", "encoding"));
    CHECK(rejects(json, "\"quality\":\t0", "\"quality\":\t101", "quality"));
    CHECK(rejects(json, "\"shuffled\":\ttrue", "\"shuffled\":\t1", "shuffled"));
    CHECK(rejects(json, "\"baton_dataset\":\t1", "\"baton_dataset\":\t2",
                  "baton_dataset: version 2"));
    CHECK(rejects(json, "\"baton_dataset\":\t1", "\"x\":\t1", "baton_dataset: is missing"));
    CHECK(rejects(json, "\"split\":\t\"train\"", "\"split\":\tnull", "split: is not a string"));
    CHECK(rejects(json, "\"seed\":\t9007199254740991", "\"seed\":\t18446744073709551615",
                  "seed: is not a whole number in 0..2^53-1"));
    CHECK(rejects(json, "\"shards\":\t[", "\"shards\":\t[1, ", "shards[0]: is not an object"));
    CHECK(rejects(json, "\"fashion-mnist\",", "\"fashion-mnist\"", "not JSON: at byte 49 (line 4, column 2)"));
    CHECK(baton_manifest_parse("dataset.json", "[1]", 3, &back, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(!strcmp(err.msg, "dataset.json: not a JSON object"), "%s", err.msg);
    /* shape all zero (sizes vary) is fine, and an unknown field is ignored */
    const char *var = strstr(json, "[28, 28, 1]") ? "[28, 28, 1]" : NULL;
    CHECK(var != NULL);
    if (var) {
        const char *at = strstr(json, var);
        char text[8192];
        snprintf(text, sizeof text, "%.*s[0, 0, 0], \"extra\": {\"a\": [1]}%s", (int)(at - json),
                 json, at + strlen(var));
        int rc = baton_manifest_parse("dataset.json", text, strlen(text), &back, &err);
        CHECK_MSG(rc == BATON_OK, "%s", err.msg);
        if (rc == BATON_OK) baton_manifest_free(&back);
    }
    /* trailing garbage, empty input, truncated input */
    char text[8192];
    snprintf(text, sizeof text, "%s x", json);
    CHECK(baton_manifest_parse("dataset.json", text, strlen(text), &back, &err) ==
          BATON_ERR_FORMAT);
    CHECK(baton_manifest_parse("dataset.json", "", 0, &back, &err) == BATON_ERR_FORMAT);
    int cuts = 1;
    for (size_t n = 0; n + 1 < strlen(json); n += 7)
        if (baton_manifest_parse("dataset.json", json, n, &back, &err) != BATON_ERR_FORMAT)
            cuts = 0;
    CHECK(cuts);
    free(json);
    baton_manifest_free(&m);
    baton_manifest_free(&m);   /* freeing twice is harmless: it zeroes */
    CHECK_DONE();
}
