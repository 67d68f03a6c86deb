/* fuzz_fleet_backends.c — libFuzzer target: the Slurm and AWS backends on any input. The bytes
 * are a job file: when it parses, each backend's check either refuses it naming the job file or
 * accepts it, and then the batch script and the user data are generated (user data within EC2's
 * limit or refused). The same bytes also go through the status parsers (a `scontrol show job`
 * line, a run log), whose results must stay in range. */
#include "../../src/fleet/remote_internal.h"
#include "baton/fleet_backend.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_job j;
    baton_err err = {0};
    if (baton_job_parse("job.yaml", (const char *)data, size, &j, &err) == BATON_OK) {
        baton_slurm_opts so;
        baton_aws_opts ao;
        baton_buf b = {0};
        if (baton_slurm_check(&j, &so, &err) == BATON_OK) {
            if (fleet_slurm_script(&j, &so, 0, "/vol/task-0", "/bin", &b, &err) || b.len < 100) abort();
        } else if (strncmp(err.msg, "job.yaml", 8)) {
            abort();
        }
        b.len = 0;
        j.backend = BATON_BACKEND_AWS;
        if (baton_aws_check(&j, &ao, &err) == BATON_OK) {
            int rc = fleet_aws_userdata(&j, &ao, j.ncommands - 1, &b, &err);
            if (rc ? rc != BATON_ERR_ARG : b.len > BATON_AWS_USERDATA_MAX) abort();
        } else if (strncmp(err.msg, "job.yaml", 8)) {
            abort();
        }
        baton_buf_free(&b);
        baton_job_free(&j);
    }
    char *line = malloc(size + 1);
    if (!line) return 0;
    memcpy(line, data, size);
    line[size] = 0;
    baton_slurm_task t;
    memset(&t, 0, sizeof t);
    fleet_slurm_parse_show(line, &t);
    if (t.restarts < 0 || !t.state[0] || strlen(t.state) >= sizeof t.state) abort();
    fleet_slurm_parse_runlog((const char *)data, size, &t);
    if (t.runs < 0 || t.notices < 0 || t.crashes < 0 || t.last_rc < -1 || t.last_rc > 255) abort();
    free(line);
    return 0;
}
