/* fuzz_recordio.c — libFuzzer target: RecordIO streams through baton_rec_read_at, the push
 * reader (chunk size from the first input byte) and baton_sample_parse (IRHeader); see
 * fuzz_stream.h for the invariants checked. */
#include "fuzz_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_stream(BATON_FMT_RECORDIO, data, size);
    return 0;
}
