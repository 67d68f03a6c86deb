/* test_ckpt_safetensors.c — safetensors: golden bytes of a tiny file, round trip of F32 and I64
 * tensors with metadata, every validation error of the header parser, loading into named tensors
 * (missing / unexpected / wrong shape leave the targets untouched), a model of another name, and a
 * C mirror of the Python peer's parser (check_weights.py) accepting what we write. */
#include "../../src/ckpt/ckpt_internal.h"
#include "baton/ckpt.h"
#include "check.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

/* A file from raw header text and a data area of data_len bytes (values 0..). */
static size_t mkfile(uint8_t *out, const char *json, size_t data_len)
{
    size_t n = strlen(json);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(out + 8, json, n);
    for (size_t i = 0; i < data_len; i++) out[8 + n + i] = (uint8_t)i;
    return 8 + n + data_len;
}

/* Parse a crafted header; return the status and leave the message in err. */
static int try_hdr(const char *json, size_t data_len, baton_err *err)
{
    static uint8_t buf[1 << 16];
    size_t n = mkfile(buf, json, data_len);
    baton_st_header h;
    memset(err, 0, sizeof *err);
    int rc = ckpt_st_parse_header("t.safetensors", buf, n, n, &h, err);
    if (rc == BATON_OK) baton_st_header_free(&h);
    return rc;
}

#define BAD(json, dlen, code, needle)                                                          \
    do {                                                                                       \
        baton_err e_;                                                                          \
        int rc_ = try_hdr(json, dlen, &e_);                                                    \
        CHECK_MSG(rc_ == (code) && strstr(e_.msg, needle), "rc %d msg '%s' want '%s'", rc_, e_.msg, \
                  needle);                                                                     \
    } while (0)

static void test_golden(void)
{
    static const uint8_t want[] = {
        0x70, 0, 0, 0, 0, 0, 0, 0,   /* header length 112 = 107 bytes of JSON + 5 spaces */
        '{', '"', 'a', '"', ':', '{', '"', 'd', 't', 'y', 'p', 'e', '"', ':', '"', 'F', '3', '2', '"', ',',
        '"', 's', 'h', 'a', 'p', 'e', '"', ':', '[', '2', ']', ',', '"', 'd', 'a', 't', 'a', '_', 'o', 'f',
        'f', 's', 'e', 't', 's', '"', ':', '[', '0', ',', '8', ']', '}', ',', '"', 'n', '"', ':', '{', '"',
        'd', 't', 'y', 'p', 'e', '"', ':', '"', 'I', '6', '4', '"', ',', '"', 's', 'h', 'a', 'p', 'e', '"',
        ':', '[', ']', ',', '"', 'd', 'a', 't', 'a', '_', 'o', 'f', 'f', 's', 'e', 't', 's', '"', ':', '[',
        '8', ',', '1', '6', ']', '}', '}', ' ', ' ', ' ', ' ', ' ',
        0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40,   /* 1.0f, 2.0f */
        0x03, 0, 0, 0, 0, 0, 0, 0,                         /* int64 3 */
    };
    float a[2] = {1.0f, 2.0f};
    int64_t nv = 3, sa[1] = {2};
    baton_st_entry t[2] = {{"a", BATON_ST_F32, 1, sa, a}, {"n", BATON_ST_I64, 0, NULL, &nv}};
    char p[512];
    path_of(p, sizeof p, "golden.safetensors");
    baton_err err = {0};
    CHECK(ckpt_st_write_file(p, t, 2, NULL, NULL, 0, &err) == BATON_OK);
    uint8_t *got;
    size_t len;
    CHECK(baton_file_read_all(p, 1 << 20, &got, &len, &err) == BATON_OK);
    CHECK_EQ_U(len, sizeof want);
    CHECK(len == sizeof want && memcmp(got, want, len) == 0);
    free(got);
}

/* The checks of check_weights.py's load_safetensors, in C: 8-byte LE length, 8 + n <= size, JSON,
 * dtype in its map, 0 <= b <= e <= len(body), and a reshape that needs numel * size == e - b. */
static int python_accepts(const uint8_t *d, size_t len, size_t *ntensors)
{
    if (len < 8) return 0;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | d[i];
    if (8 + n > len) return 0;
    cJSON *root = cJSON_ParseWithLength((const char *)d + 8, (size_t)n);
    if (!root) return 0;
    size_t body = len - 8 - (size_t)n, count = 0;
    int ok = 1;
    for (cJSON *it = root->child; it && ok; it = it->next) {
        if (!strcmp(it->string, "__metadata__")) continue;
        const char *dt = cJSON_GetObjectItem(it, "dtype")->valuestring;
        size_t es = !strcmp(dt, "F32") ? 4 : !strcmp(dt, "I64") ? 8 : !strcmp(dt, "F64") ? 8 : 0;
        if (!es) ok = 0;
        cJSON *of = cJSON_GetObjectItem(it, "data_offsets");
        double b = cJSON_GetArrayItem(of, 0)->valuedouble, e = cJSON_GetArrayItem(of, 1)->valuedouble;
        if (!(0 <= b && b <= e && e <= (double)body)) ok = 0;
        double numel = 1;
        cJSON *sh = cJSON_GetObjectItem(it, "shape");
        for (cJSON *x = sh->child; x; x = x->next) numel *= x->valuedouble;
        if (numel * (double)es != e - b) ok = 0;
        count++;
    }
    cJSON_Delete(root);
    *ntensors = count;
    return ok;
}

static void test_round_trip(void)
{
    float w[2 * 3 * 2];
    for (int i = 0; i < 12; i++) w[i] = (float)i * 0.5f - 3.0f;
    float b[3] = {-1.5f, 0.0f, 1e-30f};
    int64_t nbt = 123456789012345LL, z[1];
    int64_t sw[3] = {2, 3, 2}, sb[1] = {3}, sz[2] = {0, 4};
    baton_st_entry t[4] = {
        {"fc.weight", BATON_ST_F32, 3, sw, w},
        {"bn.num_batches_tracked", BATON_ST_I64, 0, NULL, &nbt},
        {"fc.bias", BATON_ST_F32, 1, sb, b},
        {"empty", BATON_ST_I64, 2, sz, z},
    };
    const char *mk[] = {"format", "quote\"d"}, *mv[] = {"pt", "a\\b\n"};
    char p[512];
    path_of(p, sizeof p, "rt.safetensors");
    baton_err err = {0};
    CHECK(ckpt_st_write_file(p, t, 4, mk, mv, 2, &err) == BATON_OK);
    baton_st_header h;
    uint8_t *d;
    CHECK(baton_st_read_file(p, &h, &d, &err) == BATON_OK);
    CHECK_EQ_U(h.ntensors, 4);
    CHECK_EQ_U(h.header_len % 8, 0);
    CHECK_EQ_U(h.data_start % 8, 0);
    CHECK_EQ_U(h.nmeta, 2);
    CHECK(h.nmeta == 2 && !strcmp(h.meta_keys[1], "quote\"d") && !strcmp(h.meta_vals[1], "a\\b\n"));
    if (h.ntensors == 4) {
        CHECK(!strcmp(h.tensors[0].name, "fc.weight") && h.tensors[0].ndim == 3 && h.tensors[0].shape[2] == 2);
        CHECK(!memcmp(d + h.data_start + h.tensors[0].begin, w, sizeof w));
        CHECK(h.tensors[1].dtype == BATON_ST_I64 && h.tensors[1].ndim == 0 && h.tensors[1].numel == 1);
        CHECK(!memcmp(d + h.data_start + h.tensors[1].begin, &nbt, 8));
        CHECK(!memcmp(d + h.data_start + h.tensors[2].begin, b, sizeof b));
        CHECK(h.tensors[3].numel == 0 && h.tensors[3].begin == h.tensors[3].end);
        CHECK(h.tensors[0].begin == 0 && h.tensors[1].begin == 48 && h.tensors[2].begin == 56);
        CHECK(ckpt_st_find(&h, "fc.bias") == 2 && ckpt_st_find(&h, "nope") == -1);
    }
    size_t len = h.data_start + h.data_len, nt = 0;
    CHECK(python_accepts(d, len, &nt) && nt == 4);
    baton_st_header_free(&h);
    free(d);
}

static void test_errors(void)
{
    baton_err e;
    baton_st_header h;
    uint8_t small[4] = {1, 2, 3, 4};
    CHECK(ckpt_st_parse_header("t.safetensors", small, 4, 4, &h, &e) == BATON_ERR_TRUNCATED &&
          strstr(e.msg, "8-byte header length"));
    uint8_t big[16] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    CHECK(ckpt_st_parse_header("t.safetensors", big, 16, 16, &h, &e) == BATON_ERR_TRUNCATED &&
          strstr(e.msg, "runs past the end"));
    uint8_t huge[16] = {0x00, 0xe1, 0xf5, 0x05 + 1, 0, 0, 0, 0};   /* > 100 MB, file claims 1 GB */
    CHECK(ckpt_st_parse_header("t.safetensors", huge, 16, 1u << 30, &h, &e) == BATON_ERR_FORMAT &&
          strstr(e.msg, "limit"));
    uint8_t part[16] = {100, 0, 0, 0, 0, 0, 0, 0, '{'};
    CHECK(ckpt_st_parse_header("t.safetensors", part, 16, 1000, &h, &e) == BATON_ERR_TRUNCATED);
    BAD("", 0, BATON_ERR_FORMAT, "does not start with '{'");
    BAD("[1]     ", 0, BATON_ERR_FORMAT, "does not start with '{'");
    BAD("{\"a\":", 0, BATON_ERR_FORMAT, "header at offset 8: not JSON: at byte 4 (line 1, column 5)");
    BAD("{}  x", 0, BATON_ERR_FORMAT, "header at offset 8: text after the JSON object (at byte 4)");
    BAD("{\"a\":1}", 0, BATON_ERR_FORMAT, "t.safetensors: tensor 'a': is not an object");
    BAD("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, BATON_ERR_FORMAT, "tensor 'a'.dtype: is missing");
    BAD("{\"a\":{\"dtype\":\"F12\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2, BATON_ERR_FORMAT,
        "tensor 'a'.dtype: \"F12\" is not a safetensors dtype");
    BAD("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, BATON_ERR_FORMAT,
        "tensor 'a'");   /* 2 elements of 2 bytes in 2 bytes */
    BAD("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, BATON_ERR_FORMAT, "tensor 'a'.shape: is missing");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, BATON_ERR_FORMAT, "tensor 'a'.shape[0]: is not a whole number");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, BATON_ERR_FORMAT, "shape[0]");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,\"2\"],\"data_offsets\":[0,4]}}", 4, BATON_ERR_FORMAT, "shape[1]");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, BATON_ERR_FORMAT,
        "9 dimensions");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, BATON_ERR_FORMAT, "[begin, end]");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]}}", 4, BATON_ERR_FORMAT, "tensor 'a'.data_offsets[1]: is not a whole number");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, BATON_ERR_FORMAT, "outside the data area");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", 4, BATON_ERR_FORMAT,
        "tensor 'a'.data_offsets: [0, 8] outside the data area (4 bytes)");
    BAD("{\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[10,64],\"data_offsets\":[0,12]}}", 12, BATON_ERR_FORMAT,
        "t.safetensors: tensor 'fc.weight'.data_offsets: [0, 12] hold 12 bytes, shape [10, 64] F32 needs 2560");
    BAD("{\"a\":{\"dtype\":\"I64\",\"shape\":[4503599627370496,4503599627370496],\"data_offsets\":[0,8]}}", 8,
        BATON_ERR_FORMAT, "overflows 64 bits");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, BATON_ERR_FORMAT, "overlap");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, BATON_ERR_FORMAT,
        "bytes [4, 8) belong to no tensor");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6, BATON_ERR_FORMAT,
        "tensors end at data offset 4 but the data area holds 6 bytes");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, BATON_ERR_FORMAT, "'a' appears twice");
    BAD("{\"__metadata__\":{\"k\":1}}", 0, BATON_ERR_FORMAT, "__metadata__: 'k': the value is not a string");
    BAD("{\"__metadata__\":[]}", 0, BATON_ERR_FORMAT, "__metadata__: is not an object");
    BAD("{\"__metadata__\":{},\"__metadata__\":{}}", 0, BATON_ERR_FORMAT, "appears twice");
    BAD("{}", 3, BATON_ERR_FORMAT, "no tensors, but 3 bytes");
    /* accepted: empty file body, whitespace padding, metadata only */
    CHECK(try_hdr("{}      ", 0, &e) == BATON_OK);
    CHECK(try_hdr("{\"__metadata__\":{\"a\":\"b\"}}\n\t\r ", 0, &e) == BATON_OK);
}

/* Every safetensors dtype: names, sizes, a file written and read back byte for byte; and a
 * snapshot of named entries committed into a checkpoint that verifies. */
static void test_dtypes(void)
{
    static const struct { const char *name; size_t size; } want[] = {
        {"F32", 4}, {"I64", 8}, {"F64", 8}, {"F16", 2}, {"BF16", 2}, {"I32", 4}, {"I16", 2}, {"I8", 1},
        {"U8", 1}, {"BOOL", 1}, {"U16", 2}, {"U32", 4}, {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    };
    CHECK_EQ_U(sizeof want / sizeof want[0], BATON_ST_NDTYPES);
    baton_st_entry e[BATON_ST_NDTYPES];
    int64_t shape[BATON_ST_NDTYPES][2];
    uint8_t data[BATON_ST_NDTYPES][3 * 2 * 8];
    char names[BATON_ST_NDTYPES][16];
    for (int i = 0; i < BATON_ST_NDTYPES; i++) {
        CHECK(baton_st_dtype_parse(want[i].name) == i);
        CHECK(!strcmp(baton_st_dtype_name(i), want[i].name));
        CHECK_EQ_U(baton_st_dtype_size(i), want[i].size);
        for (size_t k = 0; k < sizeof data[i]; k++) data[i][k] = (uint8_t)(i * 31 + k * 7);
        shape[i][0] = 3, shape[i][1] = 2;
        snprintf(names[i], sizeof names[i], "t.%s", want[i].name);
        e[i] = (baton_st_entry){.name = names[i], .dtype = i, .ndim = i % 3 == 0 ? 0 : 2, .shape = shape[i],
                                .data = data[i]};
    }
    CHECK(baton_st_dtype_parse("F12") < 0 && baton_st_dtype_size(BATON_ST_NDTYPES) == 0 &&
          !strcmp(baton_st_dtype_name(-1), "?"));
    char path[600];
    path_of(path, sizeof path, "dtypes.safetensors");
    baton_err err = {0};
    CHECK(ckpt_st_write_file(path, e, BATON_ST_NDTYPES, NULL, NULL, 0, &err) == BATON_OK);
    baton_st_header h;
    uint8_t *file = NULL;
    CHECK(baton_st_read_file(path, &h, &file, &err) == BATON_OK);
    CHECK_EQ_U(h.ntensors, BATON_ST_NDTYPES);
    for (size_t i = 0; file && i < h.ntensors && i < BATON_ST_NDTYPES; i++) {
        const baton_st_tensor *t = &h.tensors[i];
        size_t bytes = want[i].size * (e[i].ndim ? 6 : 1);
        CHECK(!strcmp(t->name, names[i]) && t->dtype == (int)i && t->ndim == e[i].ndim);
        CHECK(t->end - t->begin == bytes && !memcmp(file + h.data_start + t->begin, data[i], bytes));
    }
    baton_st_header_free(&h);
    free(file);
    /* through a store: named entries in both files, a checkpoint that verifies */
    char cdir[600];
    path_of(cdir, sizeof cdir, "entries");
    baton_ckpt_store *s = NULL;
    CHECK(baton_ckpt_store_open(cdir, 2, &s, &err) == BATON_OK);
    if (!s) return;
    CHECK(baton_ckpt_snapshot_entries(s, e, 5, e + 5, BATON_ST_NDTYPES - 5, 9, "{\"step\":9}", 9, BATON_CKPT_WAIT,
                                      &err) == BATON_OK);
    CHECK(baton_ckpt_persist_sync(s, &err) == BATON_OK);
    char cp[4096];
    uint64_t step = 0;
    CHECK(baton_ckpt_store_latest(s, cp, sizeof cp, &step, &err) == BATON_OK && step == 9);
    CHECK_MSG(baton_ckpt_verify(cp, &err) == BATON_OK, "%s", err.msg);
    /* a bad entry names its file and tensor */
    baton_st_entry bad = e[0];
    bad.dtype = 99;
    CHECK(baton_ckpt_snapshot_entries(s, &bad, 1, NULL, 0, 0, "{\"step\":10}", 10, BATON_CKPT_WAIT, &err) ==
              BATON_ERR_ARG && strstr(err.msg, "model.safetensors") && strstr(err.msg, "t.F32"));
    baton_ckpt_store_close(s);
}

static void test_load(void)
{
    float w[6] = {1, 2, 3, 4, 5, 6};
    int64_t c = 7, sw[2] = {2, 3};
    baton_st_entry t[2] = {{"w", BATON_ST_F32, 2, sw, w}, {"c", BATON_ST_I64, 0, NULL, &c}};
    char p[512];
    path_of(p, sizeof p, "load.safetensors");
    baton_err err = {0};
    CHECK(ckpt_st_write_file(p, t, 2, NULL, NULL, 0, &err) == BATON_OK);

    float tw[6] = {0};
    int64_t tc = 0;
    baton_nn_tensor tg[3] = {
        {.name = "c", .dtype = BATON_NN_I64, .ndim = 0, .numel = 1, .data = &tc},
        {.name = "w", .dtype = BATON_NN_F32, .ndim = 2, .shape = {2, 3}, .numel = 6, .data = tw},
        {.name = "extra", .dtype = BATON_NN_F32, .ndim = 1, .shape = {1}, .numel = 1, .data = tw},
    };
    CHECK(ckpt_st_load_tensors(p, tg, 2, "test set", NULL, &err) == BATON_OK);
    CHECK(tc == 7 && tw[5] == 6.0f);
    memset(tw, 0, sizeof tw);
    tc = 0;
    CHECK(ckpt_st_load_tensors(p, tg, 3, "test set", NULL, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "tensor 'extra' [1] F32 is missing") && strstr(err.msg, "another model"));
    CHECK(tc == 0 && tw[0] == 0.0f);   /* nothing written on error */
    CHECK(ckpt_st_load_tensors(p, tg + 1, 1, "test set", NULL, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "unexpected tensor 'c'"));
    tg[1].shape[1] = 2;
    tg[1].shape[0] = 3;
    CHECK(ckpt_st_load_tensors(p, tg, 2, "test set", NULL, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "tensor 'w' is [2, 3] F32 in the file, test set expects [3, 2] F32"), "%s", err.msg);
    tg[1].shape[0] = 2;
    tg[1].shape[1] = 3;
    tg[0].dtype = BATON_NN_F32;
    CHECK(ckpt_st_load_tensors(p, tg, 2, "test set", NULL, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "tensor 'c' is [] I64"));

    /* a real model's file into a model of another architecture */
    baton_nn_spec sl = {"lenet", 1, 28, 28, 10, 1, 1}, sr = {"resnet8", 1, 28, 28, 10, 1, 1};
    baton_nn_model *ml = NULL, *mr = NULL, *ml2 = NULL;
    CHECK(baton_nn_model_create(&sl, NULL, &ml, &err) == BATON_OK);
    CHECK(baton_nn_model_create(&sr, NULL, &mr, &err) == BATON_OK);
    sl.seed = 99;
    CHECK(baton_nn_model_create(&sl, NULL, &ml2, &err) == BATON_OK);
    if (ml && mr && ml2) {
        size_t n = baton_nn_model_ntensors(ml);
        baton_st_entry *e = calloc(n, sizeof *e);
        baton_nn_tensor *ts = calloc(n, sizeof *ts);
        for (size_t i = 0; i < n; i++) {
            baton_nn_model_tensor(ml, i, &ts[i]);
            e[i] = (baton_st_entry){ts[i].name, ts[i].dtype, ts[i].ndim, ts[i].shape, ts[i].data};
        }
        path_of(p, sizeof p, "lenet.safetensors");
        CHECK(ckpt_st_write_file(p, e, n, NULL, NULL, 0, &err) == BATON_OK);
        CHECK(baton_ckpt_load_model(p, mr, &err) == BATON_ERR_FORMAT);
        CHECK_MSG(strstr(err.msg, "another model") && strstr(err.msg, "model resnet8"), "%s", err.msg);
        CHECK(baton_ckpt_load_model(p, ml2, &err) == BATON_OK);
        int same = 1;
        for (size_t i = 0; i < n; i++) {
            baton_nn_tensor t2;
            baton_nn_model_tensor(ml2, i, &t2);
            same &= !memcmp(t2.data, ts[i].data, ts[i].numel * baton_st_dtype_size(ts[i].dtype));
        }
        CHECK(same);
        uint8_t *d;
        size_t len, nt = 0;
        CHECK(baton_file_read_all(p, 1 << 24, &d, &len, &err) == BATON_OK);
        CHECK(python_accepts(d, len, &nt) && nt == n);
        free(d);
        free(e);
        free(ts);
    }
    baton_nn_model_free(ml);
    baton_nn_model_free(mr);
    baton_nn_model_free(ml2);
}

int main(void)
{
    baton_log_set_level(BATON_LOG_ERROR);
    snprintf(dir, sizeof dir, "/tmp/baton-test-st.%ld", (long)getpid());
    baton_err err;
    baton_mkdir_p(dir, &err);
    test_golden();
    test_round_trip();
    test_errors();
    test_dtypes();
    test_load();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
    CHECK_DONE();
}
