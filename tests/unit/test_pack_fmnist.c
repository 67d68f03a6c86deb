/* test_pack_fmnist.c — `baton pack --from fashion-mnist` end to end through the library: packs
 * both splits in raw, PNG and JPEG (RecordIO and TFRecord), reads every record back, decodes it
 * and compares label and pixels with the IDX source, by record id. Raw and PNG must be exact;
 * JPEG's mean absolute error is reported and bounded. Skips (passes) if Debian's
 * dataset-fashion-mnist is not installed. */
#include "../../src/img/img_internal.h"
#include "baton/img.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

#define FM "/usr/share/datasets/fashion-mnist"

static void compare(const char *dir, const baton_idxu *images, const baton_idxu *labels,
                    baton_encoding enc, double *mae_out)
{
    baton_manifest m;
    baton_err err = {0};
    CHECK_MSG(baton_manifest_load(dir, &m, &err) == BATON_OK, "%s", err.msg);
    size_t n = images->dims[0], px = (size_t)28 * 28;
    CHECK_EQ_U(m.samples, n);
    CHECK(m.classes == 10 && m.shape[0] == 28 && m.shape[1] == 28 && m.shape[2] == 1);
    CHECK(m.encoding == enc);
    uint8_t *seen = calloc(n, 1);
    baton_image im = {0};
    double abs_err = 0;
    uint64_t records = 0, label_bad = 0, pixel_bad = 0, dup = 0, decode_bad = 0;
    for (size_t s = 0; s < m.nshards; s++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, m.shards[s].file);
        baton_rec_file *f = baton_rec_file_open(path, m.format, 1, &err);
        CHECK_MSG(f != NULL, "%s", err.msg);
        if (!f) continue;
        baton_rec r;
        int rc;
        while ((rc = baton_rec_file_next(f, &r, &err)) == BATON_OK) {
            baton_sample smp;
            if (baton_sample_parse(m.format, r.data, r.len, path, r.offset, &smp, &err)) {
                decode_bad++;
                continue;
            }
            records++;
            if (smp.id >= n || seen[smp.id]) {
                dup++;
                continue;
            }
            seen[smp.id] = 1;
            if (smp.label != (float)labels->data[smp.id]) label_bad++;
            if (baton_img_decode(smp.img, smp.img_len, enc, m.shape, &im, &err)) {
                decode_bad++;
                continue;
            }
            const uint8_t *src = images->data + smp.id * px;
            if (enc == BATON_ENC_JPEG) {
                long sum = 0;
                for (size_t i = 0; i < px; i++) sum += labs((long)im.px[i] - (long)src[i]);
                abs_err += (double)sum / (double)px;
            } else if (memcmp(im.px, src, px) != 0) {
                pixel_bad++;
            }
        }
        CHECK_MSG(rc == BATON_END, "%s", err.msg);
        CHECK(baton_rec_file_checksum(f) == m.shards[s].crc32c);
        baton_rec_file_close(f);
    }
    CHECK_EQ_U(records, n);
    CHECK_EQ_U(dup, 0);
    CHECK_EQ_U(label_bad, 0);
    CHECK_EQ_U(pixel_bad, 0);
    CHECK_EQ_U(decode_bad, 0);
    *mae_out = records ? abs_err / (double)records : 0;
    free(seen);
    baton_image_free(&im);
    baton_manifest_free(&m);
}

int main(void)
{
    if (access(FM "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("skip: %s not installed\n", FM);
        CHECK_DONE();
    }
    char tmp[] = "/tmp/baton-test-pack-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    static const struct {
        const char *split, *img, *lab;
    } splits[] = {
        {"train", FM "/train-images-idx3-ubyte.gz", FM "/train-labels-idx1-ubyte.gz"},
        {"test", FM "/t10k-images-idx3-ubyte.gz", FM "/t10k-labels-idx1-ubyte.gz"},
    };
    static const baton_encoding encs[] = {BATON_ENC_RAW, BATON_ENC_PNG, BATON_ENC_JPEG};
    for (int s = 0; s < 2; s++) {
        baton_idxu images, labels;
        baton_err err = {0};
        CHECK_MSG(img_idxu_load(splits[s].img, &images, &err) == BATON_OK, "%s", err.msg);
        CHECK_MSG(img_idxu_load(splits[s].lab, &labels, &err) == BATON_OK, "%s", err.msg);
        for (int e = 0; e < 3; e++) {
            char out[512];
            snprintf(out, sizeof out, "%s/%s-%d", tmp, splits[s].split, e);
            baton_pack_opts o;
            baton_pack_opts_default(&o);
            o.from = "fashion-mnist";
            o.split = splits[s].split;
            o.out_dir = out;
            o.encoding = encs[e];
            o.format = e == 1 ? BATON_FMT_TFRECORD : BATON_FMT_RECORDIO;
            o.shard_mb = 16;
            o.seed = 3;
            baton_manifest m;
            double t0 = baton_now();
            int rc = baton_pack(&o, &m, &err);
            CHECK_MSG(rc == BATON_OK, "%s", err.msg);
            if (rc) continue;
            double dt = baton_now() - t0;
            baton_manifest_free(&m);
            double mae = 0;
            compare(out, &images, &labels, encs[e], &mae);
            printf("%-5s %-4s %-8s packed in %.2f s%s", splits[s].split, baton_encoding_name(encs[e]),
                   baton_rec_format_name(o.format), dt, encs[e] == BATON_ENC_JPEG ? "" : ", exact\n");
            if (encs[e] == BATON_ENC_JPEG) {
                printf(", JPEG q%d mean absolute error %.3f (of 255)\n", o.quality, mae);
                CHECK_MSG(mae < 3.0, "JPEG MAE %.3f", mae);
            }
        }
        img_idxu_free(&images);
        img_idxu_free(&labels);
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
