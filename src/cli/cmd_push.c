/* cmd_push.c — `baton push DIR URI`: upload a packed dataset folder (dataset.json last). */
#include "baton/io.h"
#include "cli.h"

int cmd_push(int argc, char **argv)
{
    baton_store_opts so;
    baton_store_opts_default(&so);
    int quiet = 0, create = 0;
    const struct cli_opt opts[] = {
        {"s3-endpoint", CLI_STR, &so.s3_endpoint, "S3 endpoint (else AWS_ENDPOINT_URL)"},
        {"create-bucket", CLI_FLAG, &create, "create the S3 bucket first if it does not exist"},
        {"quiet", CLI_FLAG, &quiet, "no progress line"},
        {0},
    };
    const char *pos[2];
    int npos, help;
    if (cli_parse("push", "DIR s3://bucket/prefix [--create-bucket]", opts, argc, argv, pos, 2, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos != 2) {
        fprintf(stderr, "baton push: expected DIR and a destination URI\n");
        return CLI_USAGE;
    }
    baton_err err = {0};
    baton_store *dst;
    if (baton_store_open(pos[1], &so, &dst, &err)) return cli_fail("push", &err);
    int rc = BATON_OK;
    if (create && baton_store_kind_of(dst) == BATON_STORE_S3) rc = baton_store_create_bucket(dst, &err);
    if (rc == BATON_OK) rc = baton_dataset_push(pos[0], dst, !quiet, &err);
    if (rc == BATON_OK) printf("pushed %s to %s\n", pos[0], baton_store_uri(dst));
    baton_store_close(dst);
    return rc ? cli_fail("push", &err) : CLI_OK;
}
