/* cmd_pack.c — `baton pack`: option parsing and a summary line; the work is baton_pack(). */
#include "baton/img.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_pack(int argc, char **argv)
{
    baton_pack_opts o;
    baton_pack_opts_default(&o);
    const char *format = "recordio", *encode = NULL, *resize = NULL;
    int no_shuffle = 0, quiet = 0, json = 0, piece_kb = (int)(BATON_PIECE_BYTES_DEFAULT >> 10);
    const struct cli_opt opts[] = {
        {"from", CLI_STR, &o.from, "fashion-mnist[:DIR] | imagefolder:DIR | cifar10:DIR"},
        {"out", CLI_STR, &o.out_dir, "output folder (shards + dataset.json)"},
        {"format", CLI_STR, &format, "recordio (default) | tfrecord"},
        {"encode", CLI_STR, &encode, "raw | png | jpeg (default raw; imagefolder: each file's bytes as they are)"},
        {"quality", CLI_INT, &o.quality, "JPEG quality 1..100 (default 95)"},
        {"shard-mb", CLI_DBL, &o.shard_mb, "target shard size in MB (default 64)"},
        {"piece-kb", CLI_INT, &piece_kb, "checksum every N KiB of a shard (default 64; 4..65536): readers check a piece before using it"},
        {"split", CLI_STR, &o.split, "train (default) | test"},
        {"resize", CLI_STR, &resize, "HxW: every image to that size (bilinear); N: the shorter side to N, keeping the aspect (antialiased)"},
        {"jpeg-restart", CLI_FLAG, &o.jpeg_restart, "JPEG records transcoded losslessly (same pixels; +0.1% bytes for 4:2:0 photos, ~12% at 4:4:4) to a restart marker after every MCU: a crop decodes only its box's MCUs"},
        {"seed", CLI_U64, &o.seed, "record order seed (default 0); output is deterministic"},
        {"no-shuffle", CLI_FLAG, &no_shuffle, "keep the source order"},
        {"quiet", CLI_FLAG, &quiet, "no progress line"},
        {"json", CLI_FLAG, &json, "print dataset.json after packing"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("pack", "--from SOURCE --out DIR [options]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    char miss[256];
    if (cli_missing(miss, "--from", o.from, "--out", o.out_dir, NULL)) {
        fprintf(stderr, "baton pack: %s (baton pack --help)\n", miss);
        return CLI_USAGE;
    }
    if (baton_rec_format_parse(format, &o.format)) {
        fprintf(stderr, "baton pack: --format '%s': expected recordio or tfrecord\n", format);
        return CLI_USAGE;
    }
    if (encode && baton_encoding_parse(encode, &o.encoding)) {
        fprintf(stderr, "baton pack: --encode '%s': expected raw, png or jpeg\n", encode);
        return CLI_USAGE;
    }
    if (strcmp(o.split, "train") && strcmp(o.split, "test")) {
        fprintf(stderr, "baton pack: --split '%s': expected train or test\n", o.split);
        return CLI_USAGE;
    }
    if (resize) {
        unsigned h = 0, w = 0;
        char tail;
        if ((sscanf(resize, "%ux%u%c", &h, &w, &tail) != 2 || !h || !w) &&
            (sscanf(resize, "%u%c", &h, &tail) != 1 || !h || (w = 0))) {
            fprintf(stderr, "baton pack: --resize '%s': expected HxW (e.g. 224x224) or the shorter side (e.g. 256)\n",
                    resize);
            return CLI_USAGE;
        }
        o.resize_h = h;
        o.resize_w = w;
    }
    if (piece_kb < (int)(BATON_PIECE_BYTES_MIN >> 10) || piece_kb > (int)(BATON_PIECE_BYTES_MAX >> 10)) {
        fprintf(stderr, "baton pack: --piece-kb %d: expected %u..%u\n", piece_kb, BATON_PIECE_BYTES_MIN >> 10,
                BATON_PIECE_BYTES_MAX >> 10);
        return CLI_USAGE;
    }
    o.piece_bytes = (uint64_t)piece_kb << 10;
    o.shuffle = !no_shuffle;
    o.progress = !quiet;
    baton_manifest m;
    baton_err err = {0};
    double t0 = baton_now();
    if (baton_pack(&o, &m, &err)) return cli_fail("pack", &err);
    double dt = baton_now() - t0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < m.nshards; i++) bytes += m.shards[i].bytes;
    if (json) {
        char *s = baton_manifest_to_json(&m);
        if (s) puts(s);
        free(s);
    } else {
        printf("packed %llu %s/%s images into %zu %s shard(s) in %s: %.1f MB, %s, %.1f s\n",
               (unsigned long long)m.samples, m.name, m.split, m.nshards,
               baton_rec_format_name(m.format), o.out_dir, (double)bytes / 1e6,
               m.encoding == BATON_ENC_UNKNOWN ? "mixed (each file's own)" : baton_encoding_name(m.encoding), dt);
    }
    baton_manifest_free(&m);
    return CLI_OK;
}
