/* test_pack_folder.c — `pack --from imagefolder:DIR`: class folders become labels in name order,
 * a folder of same-size images gets that shape in dataset.json, mixed sizes get shape 0 and are
 * refused for raw encoding, and files already in the requested encoding are stored unchanged. */
#include "baton/img.h"
#include "check.h"

#include <stdlib.h>
#include <sys/stat.h>

static void write_img(const char *path, uint32_t h, uint32_t w, baton_encoding enc, uint8_t seed)
{
    baton_image im = {0};
    baton_err err;
    baton_image_resize(&im, h, w, 3, &err);
    for (size_t i = 0; i < (size_t)h * w * 3; i++) im.px[i] = (uint8_t)(seed * 31 + i * 7);
    baton_buf b = {0};
    CHECK(baton_img_encode(&im, enc, 90, &b, &err) == BATON_OK);
    FILE *f = fopen(path, "wb");
    fwrite(b.data, 1, b.len, f);
    fclose(f);
    baton_buf_free(&b);
    baton_image_free(&im);
}

static int pack(const char *from, const char *out, baton_encoding enc, baton_manifest *m, baton_err *err)
{
    baton_pack_opts o;
    baton_pack_opts_default(&o);
    o.from = from;
    o.out_dir = out;
    o.encoding = enc;
    o.shuffle = 0;
    return baton_pack(&o, m, err);
}

int main(void)
{
    char dir[] = "/tmp/baton-test-folder-XXXXXX", p[600], from[700], out[600];
    CHECK(mkdtemp(dir) != NULL);
    const char *classes[] = {"zebra", "ant"};  /* sorted: ant = 0, zebra = 1 */
    for (int c = 0; c < 2; c++) {
        snprintf(p, sizeof p, "%s/same/%s", dir, classes[c]);
        baton_err e;
        baton_mkdir_p(p, &e);
        for (int k = 0; k < 3; k++) {
            snprintf(p, sizeof p, "%s/same/%s/%d.%s", dir, classes[c], k, k % 2 ? "png" : "jpg");
            write_img(p, 6, 8, k % 2 ? BATON_ENC_PNG : BATON_ENC_JPEG, (uint8_t)(c * 3 + k));
        }
    }
    baton_manifest m;
    baton_err err = {0};
    snprintf(from, sizeof from, "imagefolder:%s/same", dir);
    snprintf(out, sizeof out, "%s/out1", dir);
    CHECK_MSG(pack(from, out, BATON_ENC_PNG, &m, &err) == BATON_OK, "%s", err.msg);
    CHECK(m.samples == 6 && m.classes == 2);
    CHECK(m.shape[0] == 6 && m.shape[1] == 8 && m.shape[2] == 3);
    CHECK(m.classes == 2 && !strcmp(m.class_names[0], "ant") && !strcmp(m.class_names[1], "zebra"));
    baton_manifest_free(&m);
    snprintf(out, sizeof out, "%s/out2", dir);
    CHECK_MSG(pack(from, out, BATON_ENC_RAW, &m, &err) == BATON_OK, "%s", err.msg);
    baton_manifest_free(&m);

    /* a different size: shape becomes variable, raw is refused with the reason */
    snprintf(p, sizeof p, "%s/same/ant/9.png", dir);
    write_img(p, 5, 5, BATON_ENC_PNG, 9);
    snprintf(out, sizeof out, "%s/out3", dir);
    CHECK_MSG(pack(from, out, BATON_ENC_JPEG, &m, &err) == BATON_OK, "%s", err.msg);
    CHECK(m.shape[0] == 0 && m.channels == 3 && m.samples == 7);
    baton_manifest_free(&m);
    snprintf(out, sizeof out, "%s/out4", dir);
    CHECK(pack(from, out, BATON_ENC_RAW, &m, &err) != BATON_OK);
    CHECK_MSG(strstr(err.msg, "5x5") != NULL, "%s", err.msg);
    struct stat st;
    snprintf(p, sizeof p, "%s/out4/dataset.json", dir);
    CHECK(stat(p, &st) != 0);  /* nothing published */

    /* an undecodable file is named */
    snprintf(p, sizeof p, "%s/same/ant/bad.png", dir);
    FILE *f = fopen(p, "wb");
    fputs("\x89PNG\r\n\x1a\nnot really", f);
    fclose(f);
    snprintf(out, sizeof out, "%s/out5", dir);
    CHECK(pack(from, out, BATON_ENC_JPEG, &m, &err) != BATON_OK);
    CHECK_MSG(strstr(err.msg, "bad.png") != NULL, "%s", err.msg);

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
