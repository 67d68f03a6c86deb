/* sys.c — the system-call table. Library code that touches files calls baton_sys.X instead of X,
 * so a test can replace one entry (e.g. make write fail with ENOSPC after N bytes) and check that
 * nothing is lost. baton_sys_reset() puts the real calls back. */
#include "baton/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int sys_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }

#define REAL_CALLS                                                                    \
    {                                                                                 \
        .open = sys_open, .read = read, .write = write, .pread = pread, .pwrite = pwrite, \
        .fsync = fsync, .close = close, .rename = rename, .unlink = unlink, .mkdir = mkdir, .mmap = mmap, \
        .munmap = munmap, .fstat = fstat,                                             \
    }

static const baton_sys_table real = REAL_CALLS;
baton_sys_table baton_sys = REAL_CALLS;

void baton_sys_reset(void) { baton_sys = real; }
