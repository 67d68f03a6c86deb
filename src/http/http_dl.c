/* http_dl.c — libcurl and libmicrohttpd opened at their first use, not at every start.
 *
 * Linked the usual way, every baton process — each command, each test program, the Python
 * module — loaded both at start with the thirty libraries they need (TLS twice over, Kerberos,
 * LDAP, SSH, IDN, RTMP, brotli): 14 of the 40 ms of CPU that a `baton --version` took on a
 * two-core virtual machine, most of them in relocations and page faults, paid also by the many
 * commands that never open a connection. Here the functions baton calls are defined under their
 * own names, hidden in the library (never exported: a program that links libcurl itself keeps
 * its own), and each forwards to the real one, found with dlopen(RTLD_LOCAL) the first time any
 * of its library's functions is called.
 *
 * Contract:
 *   1. A library is opened at most once per process (pthread_once), by its soname (the Makefile
 *      passes the one the headers were built against).
 *   2. When it cannot be opened, or lacks a function, every call fails the way the library
 *      reports failure: curl_easy_init, curl_multi_init, curl_slist_append and MHD_start_daemon
 *      return NULL, the CURLcode and CURLMcode functions CURLE_FAILED_INIT and
 *      CURLM_INTERNAL_ERROR, and curl_easy_strerror says which library and why (dlerror's text),
 *      so http_global_init's message names the cause. The rest take a handle that only a loaded
 *      library gives, or do nothing.
 *   3. The variadic setters forward their one argument by the option's type, the CURLOPTTYPE_*
 *      ranges of curl.h by which libcurl itself reads it; curl_easy_getinfo's is a pointer;
 *      MHD_start_daemon forwards its option list whole (MHD_start_daemon_va). */
#define CURL_DISABLE_TYPECHECK   /* plain prototypes: the functions are defined here */
#include "http.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#ifndef BATON_CURL_SONAME
#define BATON_CURL_SONAME "libcurl.so.4"
#endif
#ifndef BATON_MHD_SONAME
#define BATON_MHD_SONAME "libmicrohttpd.so.12"
#endif
#define HIDDEN __attribute__((visibility("hidden")))

typedef struct dl_lib {
    const char *soname;
    pthread_once_t once;
    int ok;
    char why[300];
} dl_lib;

/* dl_open: L's library and each of the n names into fns (the pointers stored as void *, as
 * POSIX's dlsym hands them); L->ok only when all were found. */
static void dl_open(dl_lib *L, const char *const *names, void **fns, size_t n)
{
    void *h = dlopen(L->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(L->why, sizeof L->why, "%s could not be loaded (%s)", L->soname, dlerror());
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (!(fns[i] = dlsym(h, names[i]))) {
            snprintf(L->why, sizeof L->why, "%s has no %s", L->soname, names[i]);
            return;   /* the handle stays open: a failure is final for the process */
        }
    L->ok = 1;
}

/* ---------------------------------------------------------------- libcurl */
#define CURL_FUNCS(X)                                                                    \
    X(CURLcode, curl_global_init, (long))                                                \
    X(void, curl_global_cleanup, (void))                                                 \
    X(CURL *, curl_easy_init, (void))                                                    \
    X(CURLcode, curl_easy_setopt, (CURL *, CURLoption, ...))                             \
    X(CURLcode, curl_easy_perform, (CURL *))                                             \
    X(void, curl_easy_cleanup, (CURL *))                                                 \
    X(void, curl_easy_reset, (CURL *))                                                   \
    X(CURLcode, curl_easy_getinfo, (CURL *, CURLINFO, ...))                              \
    X(const char *, curl_easy_strerror, (CURLcode))                                      \
    X(char *, curl_easy_escape, (CURL *, const char *, int))                             \
    X(CURLcode, curl_easy_pause, (CURL *, int))                                          \
    X(void, curl_free, (void *))                                                         \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist *, const char *))       \
    X(void, curl_slist_free_all, (struct curl_slist *))                                  \
    X(CURLM *, curl_multi_init, (void))                                                  \
    X(CURLMcode, curl_multi_add_handle, (CURLM *, CURL *))                               \
    X(CURLMcode, curl_multi_remove_handle, (CURLM *, CURL *))                            \
    X(CURLMcode, curl_multi_setopt, (CURLM *, CURLMoption, ...))                         \
    X(CURLMcode, curl_multi_perform, (CURLM *, int *))                                   \
    X(CURLMcode, curl_multi_poll, (CURLM *, struct curl_waitfd *, unsigned, int, int *)) \
    X(CURLMcode, curl_multi_wakeup, (CURLM *))                                           \
    X(CURLMsg *, curl_multi_info_read, (CURLM *, int *))                                 \
    X(CURLMcode, curl_multi_cleanup, (CURLM *))

#define AS_FIELD(ret, name, args) ret(*name) args;
#define AS_NAME(ret, name, args) #name,
static struct {
    CURL_FUNCS(AS_FIELD)
} cu;
static const char *const cu_names[] = {CURL_FUNCS(AS_NAME)};
static dl_lib cu_lib = {BATON_CURL_SONAME, PTHREAD_ONCE_INIT, 0, ""};

static void cu_load(void) { dl_open(&cu_lib, cu_names, (void **)&cu, sizeof cu_names / sizeof *cu_names); }
static int cu_ready(void)
{
    pthread_once(&cu_lib.once, cu_load);
    return cu_lib.ok;
}

HIDDEN CURLcode curl_global_init(long flags) { return cu_ready() ? cu.curl_global_init(flags) : CURLE_FAILED_INIT; }
HIDDEN void curl_global_cleanup(void) { if (cu_ready()) cu.curl_global_cleanup(); }
HIDDEN CURL *curl_easy_init(void) { return cu_ready() ? cu.curl_easy_init() : NULL; }
HIDDEN CURLcode curl_easy_perform(CURL *h) { return cu_ready() ? cu.curl_easy_perform(h) : CURLE_FAILED_INIT; }
HIDDEN void curl_easy_cleanup(CURL *h) { if (cu_ready()) cu.curl_easy_cleanup(h); }
HIDDEN void curl_easy_reset(CURL *h) { if (cu_ready()) cu.curl_easy_reset(h); }
HIDDEN const char *curl_easy_strerror(CURLcode c) { return cu_ready() ? cu.curl_easy_strerror(c) : cu_lib.why; }
HIDDEN char *curl_easy_escape(CURL *h, const char *s, int n) { return cu_ready() ? cu.curl_easy_escape(h, s, n) : NULL; }
HIDDEN CURLcode curl_easy_pause(CURL *h, int mask) { return cu_ready() ? cu.curl_easy_pause(h, mask) : CURLE_FAILED_INIT; }
HIDDEN void curl_free(void *p) { if (cu_ready()) cu.curl_free(p); }
HIDDEN struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
    return cu_ready() ? cu.curl_slist_append(l, s) : NULL;
}
HIDDEN void curl_slist_free_all(struct curl_slist *l) { if (cu_ready()) cu.curl_slist_free_all(l); }
HIDDEN CURLM *curl_multi_init(void) { return cu_ready() ? cu.curl_multi_init() : NULL; }
HIDDEN CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
    return cu_ready() ? cu.curl_multi_add_handle(m, h) : CURLM_INTERNAL_ERROR;
}
HIDDEN CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
    return cu_ready() ? cu.curl_multi_remove_handle(m, h) : CURLM_INTERNAL_ERROR;
}
HIDDEN CURLMcode curl_multi_perform(CURLM *m, int *running)
{
    return cu_ready() ? cu.curl_multi_perform(m, running) : CURLM_INTERNAL_ERROR;
}
HIDDEN CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned nfds, int ms, int *ret)
{
    return cu_ready() ? cu.curl_multi_poll(m, fds, nfds, ms, ret) : CURLM_INTERNAL_ERROR;
}
HIDDEN CURLMcode curl_multi_wakeup(CURLM *m) { return cu_ready() ? cu.curl_multi_wakeup(m) : CURLM_INTERNAL_ERROR; }
HIDDEN CURLMsg *curl_multi_info_read(CURLM *m, int *left) { return cu_ready() ? cu.curl_multi_info_read(m, left) : NULL; }
HIDDEN CURLMcode curl_multi_cleanup(CURLM *m) { return cu_ready() ? cu.curl_multi_cleanup(m) : CURLM_INTERNAL_ERROR; }

/* The option's one argument, read as libcurl reads it: a long below CURLOPTTYPE_OBJECTPOINT, a
 * pointer (data or function) below CURLOPTTYPE_OFF_T, a curl_off_t below CURLOPTTYPE_BLOB, a
 * pointer (struct curl_blob *) above. curl_multi_setopt's options use the same ranges. */
#define FORWARD_OPT(call, h, o, ap)                                                   \
    ((o) < CURLOPTTYPE_OBJECTPOINT ? call(h, o, va_arg(ap, long))                     \
     : (o) < CURLOPTTYPE_OFF_T     ? call(h, o, va_arg(ap, void *))                   \
     : (o) < CURLOPTTYPE_BLOB      ? call(h, o, va_arg(ap, curl_off_t))               \
                                   : call(h, o, va_arg(ap, void *)))

HIDDEN CURLcode curl_easy_setopt(CURL *h, CURLoption o, ...)
{
    if (!cu_ready()) return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, o);
    CURLcode rc = FORWARD_OPT(cu.curl_easy_setopt, h, o, ap);
    va_end(ap);
    return rc;
}

HIDDEN CURLMcode curl_multi_setopt(CURLM *m, CURLMoption o, ...)
{
    if (!cu_ready()) return CURLM_INTERNAL_ERROR;
    va_list ap;
    va_start(ap, o);
    CURLMcode rc = FORWARD_OPT(cu.curl_multi_setopt, m, o, ap);
    va_end(ap);
    return rc;
}

HIDDEN CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    if (!cu_ready()) return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    CURLcode rc = cu.curl_easy_getinfo(h, info, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

/* ---------------------------------------------------------------- libmicrohttpd */
#define MHD_FUNCS(X)                                                                                         \
    X(struct MHD_Daemon *, MHD_start_daemon_va,                                                              \
      (unsigned, uint16_t, MHD_AcceptPolicyCallback, void *, MHD_AccessHandlerCallback, void *, va_list))    \
    X(void, MHD_stop_daemon, (struct MHD_Daemon *))                                                          \
    X(const char *, MHD_lookup_connection_value, (struct MHD_Connection *, enum MHD_ValueKind, const char *)) \
    X(int, MHD_get_connection_values_n, (struct MHD_Connection *, enum MHD_ValueKind,                        \
                                         MHD_KeyValueIteratorN, void *))                                     \
    X(const union MHD_ConnectionInfo *, MHD_get_connection_info,                                             \
      (struct MHD_Connection *, enum MHD_ConnectionInfoType, ...))                                           \
    X(struct MHD_Response *, MHD_create_response_from_buffer, (size_t, void *, enum MHD_ResponseMemoryMode)) \
    X(enum MHD_Result, MHD_add_response_header, (struct MHD_Response *, const char *, const char *))         \
    X(enum MHD_Result, MHD_queue_response, (struct MHD_Connection *, unsigned, struct MHD_Response *))       \
    X(void, MHD_destroy_response, (struct MHD_Response *))

static struct {
    MHD_FUNCS(AS_FIELD)
} mh;
static const char *const mh_names[] = {MHD_FUNCS(AS_NAME)};
static dl_lib mh_lib = {BATON_MHD_SONAME, PTHREAD_ONCE_INIT, 0, ""};

static void mh_load(void) { dl_open(&mh_lib, mh_names, (void **)&mh, sizeof mh_names / sizeof *mh_names); }
static int mh_ready(void)
{
    pthread_once(&mh_lib.once, mh_load);
    return mh_lib.ok;
}

const char *http_server_why(void)
{
    return mh_ready() ? "" : mh_lib.why;
}

HIDDEN struct MHD_Daemon *MHD_start_daemon(unsigned flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
                                           MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    if (!mh_ready()) return NULL;
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = mh.MHD_start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}
HIDDEN void MHD_stop_daemon(struct MHD_Daemon *d) { if (mh_ready()) mh.MHD_stop_daemon(d); }
HIDDEN const char *MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind k, const char *key)
{
    return mh_ready() ? mh.MHD_lookup_connection_value(c, k, key) : NULL;
}
HIDDEN int MHD_get_connection_values_n(struct MHD_Connection *c, enum MHD_ValueKind k, MHD_KeyValueIteratorN it,
                                       void *cls)
{
    return mh_ready() ? mh.MHD_get_connection_values_n(c, k, it, cls) : -1;
}
/* the info types baton asks for take no further argument */
HIDDEN const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c,
                                                               enum MHD_ConnectionInfoType t, ...)
{
    return mh_ready() ? mh.MHD_get_connection_info(c, t) : NULL;
}
HIDDEN struct MHD_Response *MHD_create_response_from_buffer(size_t n, void *buf, enum MHD_ResponseMemoryMode mode)
{
    return mh_ready() ? mh.MHD_create_response_from_buffer(n, buf, mode) : NULL;
}
HIDDEN enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *name, const char *value)
{
    return mh_ready() ? mh.MHD_add_response_header(r, name, value) : MHD_NO;
}
HIDDEN enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
    return mh_ready() ? mh.MHD_queue_response(c, status, r) : MHD_NO;
}
HIDDEN void MHD_destroy_response(struct MHD_Response *r) { if (mh_ready()) mh.MHD_destroy_response(r); }
