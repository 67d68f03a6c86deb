/* version.c — the library's own version, for a program that was compiled against one set of
 * headers and runs against whichever libbaton.so the dynamic loader found (util.h). The soname
 * (libbaton.so.<ABI>) already keeps another ABI out; this check also names both versions and
 * catches a library older than the headers within one ABI (a function added in a minor version). */
#include "baton/util.h"

const char *baton_version(void) { return BATON_VERSION; }

int baton_abi_version(void) { return BATON_ABI_VERSION; }

int baton_version_check(int abi, int major, int minor, baton_err *err)
{
    if (abi != BATON_ABI_VERSION)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "libbaton %s has ABI %d; this program was built for ABI %d (headers %d.%d): rebuild it "
                             "against the installed headers",
                             BATON_VERSION, BATON_ABI_VERSION, abi, major, minor);
    if (major != BATON_VERSION_MAJOR || minor > BATON_VERSION_MINOR)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "libbaton %s is older than the headers this program was built with (%d.%d): install "
                             "libbaton %d.%d or later",
                             BATON_VERSION, major, minor, major, minor);
    return BATON_OK;
}
