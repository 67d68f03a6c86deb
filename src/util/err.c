/* err.c — error values: a status code plus a message naming the file, offset, field or line.
 * Contract: never allocates, never exits; messages are truncated to fit baton_err.msg. */
#include "baton/util.h"

#include <errno.h>
#include <string.h>

int baton_err_set(baton_err *err, int code, const char *fmt, ...)
{
    if (!err) return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

int baton_err_prefix(baton_err *err, const char *fmt, ...)
{
    if (!err) return BATON_ERR_ARG;
    char pre[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t pl = strlen(pre), cap = sizeof err->msg;
    /* the message already names this (a file, a URI): say it once, not "x: x: ..." */
    if (pl && !strncmp(old, pre, pl) && old[pl] == ':') return err->code;
    if (pl > cap - 3) pl = cap - 3;
    memcpy(err->msg, pre, pl);
    memcpy(err->msg + pl, ": ", 2);
    size_t ol = strnlen(old, sizeof old);
    if (ol > cap - pl - 3) ol = cap - pl - 3;
    memcpy(err->msg + pl + 2, old, ol);
    err->msg[pl + 2 + ol] = 0;
    return err->code;
}

int baton_err_errno(baton_err *err, int e, const char *what, const char *path)
{
    int code = (e == ENOSPC || e == EDQUOT) ? BATON_ERR_NOSPACE
             : (e == ENOENT || e == ENOTDIR) ? BATON_ERR_NOTFOUND : BATON_ERR_IO;
    return baton_err_set(err, code, "%s: %s: %s", path, what, strerror(e));
}

const char *baton_status_name(int code)
{
    switch (code) {
    case BATON_OK: return "ok";
    case BATON_END: return "end";
    case BATON_NEED_MORE: return "need-more";
    case BATON_STOPPED: return "stopped";
    case BATON_ERR_IO: return "io error";
    case BATON_ERR_TRUNCATED: return "truncated";
    case BATON_ERR_CORRUPT: return "corrupted";
    case BATON_ERR_FORMAT: return "bad format";
    case BATON_ERR_NOMEM: return "out of memory";
    case BATON_ERR_ARG: return "bad argument";
    case BATON_ERR_NOTFOUND: return "not found";
    case BATON_ERR_NET: return "network error";
    case BATON_ERR_NOSPACE: return "no space left";
    case BATON_ERR_BUSY: return "busy";
    case BATON_ERR_USAGE: return "bad option";
    case BATON_ERR_DENIED: return "denied";
    }
    return "unknown status";
}
