/* net.c — a listening TCP socket for baton's own HTTP servers (the metadata emulator, the league's
 * page): "HOST:PORT" or "[V6]:PORT" (port 0: any free one), loopback only unless the caller allows
 * other addresses, the URL it can be reached at.
 *
 * Contract: returns the socket (close-on-exec) or -1 with err naming the address; a malformed
 * address or a non-loopback one not allowed is BATON_ERR_USAGE / BATON_ERR_ARG. */
#include "baton/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
        if (IN6_IS_ADDR_V4MAPPED(a)) return a->s6_addr[12] == 127;
    }
    return 0;
}

int baton_net_listen(const char *spec, int allow_remote, char *url, size_t ucap, int *port, int *v6, baton_err *err)
{
    char host[256], serv[16];
    const char *colon = strrchr(spec, ':');
    if (!colon || !colon[1] || strlen(colon + 1) >= sizeof serv)
        return baton_err_set(err, BATON_ERR_USAGE, "listen address '%s': expected HOST:PORT", spec), -1;
    size_t hl = (size_t)(colon - spec);
    const char *h = spec;
    if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= sizeof host)
        return baton_err_set(err, BATON_ERR_USAGE, "listen address '%s': expected HOST:PORT", spec), -1;
    memcpy(host, h, hl);
    host[hl] = 0;
    snprintf(serv, sizeof serv, "%s", colon + 1);
    char *end;
    long pn = strtol(serv, &end, 10);
    if (*end || pn < 0 || pn > 65535)
        return baton_err_set(err, BATON_ERR_USAGE, "listen address '%s': port must be 0..65535", spec), -1;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
    int grc = getaddrinfo(host, serv, &hints, &ai);
    if (grc) return baton_err_set(err, BATON_ERR_USAGE, "listen address '%s': %s", spec, gai_strerror(grc)), -1;
    if (!allow_remote && !is_loopback(ai->ai_addr)) {
        freeaddrinfo(ai);
        baton_err_set(err, BATON_ERR_ARG,
                      "listen address '%s' is not a loopback address (add --allow-remote to serve other machines)",
                      spec);
        return -1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
        int e = errno;
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return baton_err_set(err, BATON_ERR_IO, "listen on %s: %s", spec, strerror(e)), -1;
    }
    *v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char num[INET6_ADDRSTRLEN + 1] = "";
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) ||
        getnameinfo((struct sockaddr *)&ss, sl, num, sizeof num, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV)) {
        int e = errno;
        close(fd);
        return baton_err_set(err, BATON_ERR_IO, "listen on %s: getsockname: %s", spec, strerror(e)), -1;
    }
    *port = atoi(serv);
    snprintf(url, ucap, *v6 ? "http://[%s]:%d" : "http://%s:%d", num, *port);
    return fd;
}
