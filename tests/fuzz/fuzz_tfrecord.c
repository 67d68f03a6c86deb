/* fuzz_tfrecord.c — libFuzzer target: TFRecord streams through baton_rec_read_at, the push
 * reader and baton_sample_parse (tf.train.Example), plus the Example decoder run on the raw input
 * itself (random bytes rarely carry valid CRCs) and format detection. */
#include "fuzz_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_stream(BATON_FMT_TFRECORD, data, size);
    if (size > 1) {
        baton_rec raw = {data + 1, size - 1, 0, size - 1};
        fuzz_touch_sample(BATON_FMT_TFRECORD, &raw);
        baton_rec_format f;
        baton_err err;
        rec_detect(data + 1, size - 1, "fuzz", &f, &err);
    }
    return 0;
}
