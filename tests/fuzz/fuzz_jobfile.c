/* fuzz_jobfile.c — libFuzzer target: the job-file parser (YAML through libyaml, then our walk).
 * Any input either parses or fails with a message that names the file and a line; a parsed job
 * satisfies the invariants the supervisor relies on. */
#include "baton/fleet.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_job j;
    baton_err err = {0};
    if (baton_job_parse("job.yaml", (const char *)data, size, &j, &err) == BATON_OK) {
        if (!j.ncommands || !j.name[0] || j.target_capacity < 1 || (size_t)j.target_capacity > j.ncommands) abort();
        if (j.backend != BATON_BACKEND_SLURM && (!j.ntypes || !j.nzones)) abort();
        for (size_t i = 0; i < j.market.ninterrupts; i++)
            if ((size_t)j.market.interrupts[i].task >= j.ncommands || j.market.interrupts[i].notice < 0) abort();
        baton_job_free(&j);
    } else if (strncmp(err.msg, "job.yaml:", 9) != 0) {
        abort();
    }
    return 0;
}
