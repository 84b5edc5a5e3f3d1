/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The listening socket: "HOST:PORT" or "[IPv6]:PORT", port 0 = any free port. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "server.h"

int rfsd_split_host_port(const char *spec, char *host, size_t cap, char *port, size_t pcap)
{
    const char *colon;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':')
            return -1;
        size_t n = (size_t)(close - spec - 1);
        if (n == 0 || n >= cap)
            return -1;
        memcpy(host, spec + 1, n);
        host[n] = '\0';
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon || colon == spec || memchr(spec, ':', (size_t)(colon - spec)))
            return -1;
        size_t n = (size_t)(colon - spec);
        if (n >= cap)
            return -1;
        memcpy(host, spec, n);
        host[n] = '\0';
    }
    const char *p = colon + 1;
    if (!*p || strlen(p) >= pcap || strspn(p, "0123456789") != strlen(p) || atol(p) > 65535)
        return -1;
    strcpy(port, p);
    return 0;
}

int rfsd_listen(const char *spec, char *addr, size_t addr_cap, int *fd_out)
{
    char host[256], port[8];
    if (rfsd_split_host_port(spec, host, sizeof host, port, sizeof port)) {
        RFS_LOGE("--listen '%s': expected HOST:PORT or [IPV6]:PORT", spec);
        return -1;
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) {
        RFS_LOGE("--listen '%s': %s", spec, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        RFS_LOGE("cannot listen on %s: %s", spec, strerror(err));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    char ip[INET6_ADDRSTRLEN];
    if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
        snprintf(addr, addr_cap, "[%s]:%u", ip, ntohs(s6->sin6_port));
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
        snprintf(addr, addr_cap, "%s:%u", ip, ntohs(s4->sin_port));
    }
    *fd_out = fd;
    return 0;
}
