/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* TLS over a TCP transport (tls.h). Design (docs/design.md "Transport and TLS"):
 *
 * - The socket is nonblocking and every SSL call runs under t->mu, so a reader thread and a
 *   writer thread can share one SSL object; nobody waits while holding the mutex (the caller
 *   polls the socket for rfs_transport_wants and tries again).
 * - Writes go through a staging buffer: OpenSSL requires a write that returned WANT_WRITE to
 *   be repeated with the same bytes, so those bytes are kept here until they are out, and the
 *   caller (who presents them again anyway) is told they were taken only then.
 * - A peer that ends the stream without close_notify is an orderly end (IGNORE_UNEXPECTED_EOF):
 *   the rfs protocol is framed, so a truncated frame is still detected above. */
#include "transport/iov.h"
#include "transport/tls.h"

#include "common/err.h"
#include "proto/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STAGE_CAP (64 * 1024) /* bytes handed to one SSL_write: four full records */
#define FIRST_CAP 8           /* the server's first bytes, kept to recognise plaintext */

typedef struct tls_transport {
    rfs_transport base;
    rfs_transport *tcp; /* owns the socket */
    SSL *ssl;
    pthread_mutex_t mu;   /* every SSL call on ssl */
    short want_r, want_w; /* what the last EAGAIN of a read / a write waits for */
    uint8_t *stage;
    size_t stage_len;
    int stage_pending;        /* stage holds bytes SSL_write must be given again */
    uint8_t first[FIRST_CAP]; /* client: the first bytes the server sent */
    size_t nfirst;
} tls_transport;

static tls_transport *tls_of(rfs_transport *t)
{
    return (tls_transport *)t;
}

/* The reason of the oldest queued OpenSSL error, or fallback; clears the queue. */
static const char *ssl_reason(char *buf, size_t cap, const char *fallback)
{
    unsigned long e = ERR_get_error();
    if (!e) {
        snprintf(buf, cap, "%s", fallback);
    } else {
        const char *r = ERR_reason_error_string(e);
        if (r)
            snprintf(buf, cap, "%s", r);
        else
            ERR_error_string_n(e, buf, cap);
    }
    ERR_clear_error();
    return buf;
}

/* Maps a failed SSL call (ret) under t->mu to errno / want; returns -1, or 0 for an orderly
 * end. Failures other than EAGAIN set the thread's rfs message. */
static long failed(tls_transport *t, int ret, const char *doing, short *want)
{
    int saved = errno;
    int e = SSL_get_error(t->ssl, ret);
    char why[256];
    switch (e) {
    case SSL_ERROR_WANT_READ:
        *want = POLLIN;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        *want = POLLOUT;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (saved == 0)
            return 0;
        rfs_fail(RFS_E_CONN, "%s: connection lost while %s: %s", t->base.peer, doing,
                 strerror(saved));
        errno = saved;
        return -1;
    default:
        rfs_fail(RFS_E_CONN, "%s: TLS error while %s: %s", t->base.peer, doing,
                 ssl_reason(why, sizeof why, "protocol error"));
        errno = EPROTO;
        return -1;
    }
}

/* Gives the staged bytes to SSL_write (t->mu held): their count, or -1 / errno. */
static long write_stage(tls_transport *t)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(t->ssl, t->stage, (int)t->stage_len);
    if (r > 0) {
        t->stage_pending = 0;
        return r;
    }
    t->stage_pending = 1;
    long f = failed(t, r, "sending", &t->want_w);
    if (f == 0) { /* the peer closed: writing cannot go on */
        errno = EPIPE;
        rfs_fail(RFS_E_CONN, "%s: connection closed by peer while sending", t->base.peer);
        return -1;
    }
    return f;
}

static int ensure_stage(tls_transport *t)
{
    if (!t->stage && !(t->stage = malloc(STAGE_CAP))) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

static long tls_send_nb(rfs_transport *tt, const struct iovec *iov, int n, int more)
{
    tls_transport *t = tls_of(tt);
    pthread_mutex_lock(&t->mu);
    long r;
    if (!t->stage_pending) {
        if (ensure_stage(t)) {
            pthread_mutex_unlock(&t->mu);
            return -1;
        }
        size_t k = 0;
        for (int i = 0; i < n && k < STAGE_CAP; i++) {
            size_t c = iov[i].iov_len < STAGE_CAP - k ? iov[i].iov_len : STAGE_CAP - k;
            memcpy(t->stage + k, iov[i].iov_base, c);
            k += c;
        }
        t->stage_len = k;
        if (k == 0) {
            pthread_mutex_unlock(&t->mu);
            return 0;
        }
    }
    r = write_stage(t);
    pthread_mutex_unlock(&t->mu);
    return r;
}

static long tls_sendfile_nb(rfs_transport *tt, int fd, uint64_t off, size_t len)
{
    tls_transport *t = tls_of(tt);
    pthread_mutex_lock(&t->mu);
    if (!t->stage_pending) {
        if (ensure_stage(t)) {
            pthread_mutex_unlock(&t->mu);
            return -1;
        }
        ssize_t got;
        do {
            got = pread(fd, t->stage, len < STAGE_CAP ? len : STAGE_CAP, (off_t)off);
        } while (got < 0 && errno == EINTR);
        if (got <= 0) {
            pthread_mutex_unlock(&t->mu);
            return (long)got;
        }
        t->stage_len = (size_t)got;
    }
    long r = write_stage(t);
    pthread_mutex_unlock(&t->mu);
    return r;
}

static long tls_recv_nb(rfs_transport *tt, void *buf, size_t len)
{
    tls_transport *t = tls_of(tt);
    pthread_mutex_lock(&t->mu);
    ERR_clear_error();
    errno = 0;
    int r = SSL_read(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
    long out =
        r > 0 ? r
              : failed(t, r, SSL_is_init_finished(t->ssl) ? "receiving" : "in the TLS handshake",
                       &t->want_r);
    pthread_mutex_unlock(&t->mu);
    return out;
}

static short tls_wants(rfs_transport *tt, short dflt)
{
    tls_transport *t = tls_of(tt);
    pthread_mutex_lock(&t->mu);
    short w = (dflt & POLLIN) ? t->want_r : t->want_w;
    if (!w)
        w = dflt;
    pthread_mutex_unlock(&t->mu);
    return w;
}

static int wait_for(rfs_transport *t, short dflt)
{
    struct pollfd p = {.fd = t->fd, .events = rfs_transport_wants(t, dflt)};
    int rc;
    do {
        rc = poll(&p, 1, -1);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? -1 : 0;
}

/* Blocking side (the client): the nonblocking calls plus a poll while nothing moves. */
static int tls_write_all(rfs_transport *t, const struct iovec *iov, int n)
{
    struct iovec cur[64];
    int i = 0;
    size_t done = 0;
    while (i < n) {
        int k = 0;
        for (int j = i; j < n && k < 64; j++) {
            cur[k] = iov[j];
            if (j == i) {
                cur[k].iov_base = (char *)iov[j].iov_base + done;
                cur[k].iov_len -= done;
            }
            k++;
        }
        long w = tls_send_nb(t, cur, k, 0);
        if (w < 0 && errno == EAGAIN) {
            if (wait_for(t, POLLOUT) == 0)
                continue;
        }
        if (w < 0) {
            if (errno != EPROTO && errno != EPIPE)
                rfs_fail(RFS_E_CONN, "%s: connection lost while sending: %s", t->peer,
                         strerror(errno));
            return RFS_E_CONN;
        }
        rfs_iov_advance(iov, n, &i, &done, (size_t)w);
    }
    return RFS_OK;
}

static long read_some_at(rfs_transport *t, void *buf, size_t len, size_t got, size_t want)
{
    for (;;) {
        long r = tls_recv_nb(t, buf, len);
        if (r > 0)
            return r;
        if (r == 0) {
            if (got == 0)
                return rfs_fail(RFS_E_CONN, "%s: connection closed by peer", t->peer);
            return rfs_fail(RFS_E_CONN, "%s: connection closed by peer after %zu of %zu bytes",
                            t->peer, got, want);
        }
        if (errno == EAGAIN && wait_for(t, POLLIN) == 0)
            continue;
        if (errno != EPROTO && errno != EAGAIN && errno != 0)
            rfs_fail(RFS_E_CONN, "%s: connection lost while receiving: %s", t->peer,
                     strerror(errno));
        return RFS_E_CONN;
    }
}

static int tls_read_all(rfs_transport *t, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        long r = read_some_at(t, (char *)buf + got, len - got, got, len);
        if (r < 0)
            return (int)r;
        got += (size_t)r;
    }
    return RFS_OK;
}

static long tls_read_some(rfs_transport *t, void *buf, size_t len)
{
    return read_some_at(t, buf, len, 0, len);
}

static void tls_shutdown(rfs_transport *t)
{
    shutdown(t->fd, SHUT_RDWR);
}

static void tls_close(rfs_transport *tt)
{
    tls_transport *t = tls_of(tt);
    SSL_free(t->ssl);
    rfs_transport_close(t->tcp);
    pthread_mutex_destroy(&t->mu);
    free(t->stage);
    free(t);
}

static const rfs_transport_ops tls_ops = {
    .write_all = tls_write_all,
    .read_all = tls_read_all,
    .read_some = tls_read_some,
    .shutdown = tls_shutdown,
    .close = tls_close,
    .send_nb = tls_send_nb,
    .sendfile_nb = tls_sendfile_nb,
    .recv_nb = tls_recv_nb,
    .wants = tls_wants,
};

/* Wraps tcp (its socket made nonblocking) around a new SSL of ctx. */
static int wrap(SSL_CTX *ctx, rfs_transport *tcp, tls_transport **out)
{
    *out = NULL;
    tls_transport *t = calloc(1, sizeof *t);
    SSL *ssl = SSL_new(ctx);
    int fl = fcntl(tcp->fd, F_GETFL);
    if (!t || !ssl || fl < 0 || fcntl(tcp->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
        SSL_set_fd(ssl, tcp->fd) != 1) {
        ERR_clear_error();
        SSL_free(ssl);
        free(t);
        char peer[sizeof tcp->peer];
        snprintf(peer, sizeof peer, "%s", tcp->peer);
        rfs_transport_close(tcp);
        return rfs_fail(RFS_E_NOMEM, "%s: cannot set up TLS (out of memory)", peer);
    }
    t->base.ops = &tls_ops;
    t->base.fd = tcp->fd;
    snprintf(t->base.peer, sizeof t->base.peer, "%s", tcp->peer);
    t->tcp = tcp;
    t->ssl = ssl;
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return RFS_OK;
}

static void base_ctx_options(SSL_CTX *ctx)
{
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    /* The staging buffer stays at one address, but say so in case it ever moves. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

/* ---- client ---- */

/* Keeps the first bytes the server sends, to tell a plaintext rfsd from a TLS failure. */
static long record_first(BIO *b, int oper, const char *argp, size_t len, int argi, long argl,
                         int ret, size_t *processed)
{
    (void)len;
    (void)argi;
    (void)argl;
    if (oper == (BIO_CB_READ | BIO_CB_RETURN) && ret > 0 && processed) {
        tls_transport *t = (tls_transport *)BIO_get_callback_arg(b);
        size_t n = *processed;
        if (n > FIRST_CAP - t->nfirst)
            n = FIRST_CAP - t->nfirst;
        memcpy(t->first + t->nfirst, argp, n);
        t->nfirst += n;
    }
    return ret;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint32_t le32_at(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reads the rest of a plaintext rfs error reply whose first bytes were t->first, briefly, and
 * turns it into the server's own message. Parsed by hand (protocol.md §1, §6): its op is the
 * garbage the server read from our ClientHello, which a full decoder rightly refuses. */
static int plaintext_answer(tls_transport *t, const char *server)
{
    uint8_t frame[RFS_HDR_SIZE + 2 + RFS_MAX_MSG];
    size_t have = t->nfirst;
    memcpy(frame, t->first, have);
    size_t want = RFS_HDR_SIZE;
    int64_t deadline = now_ms() + 2000;
    int sized = 0;
    for (;;) {
        if (!sized && have >= RFS_HDR_SIZE) {
            sized = 1;
            uint32_t body = le32_at(frame + 20);
            if (body < 2 || body > sizeof frame - RFS_HDR_SIZE)
                break;
            want = RFS_HDR_SIZE + body;
        }
        if (have >= want || now_ms() >= deadline)
            break;
        ssize_t r = recv(t->base.fd, frame + have, want - have, MSG_DONTWAIT);
        if (r > 0) {
            have += (size_t)r;
        } else if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {.fd = t->base.fd, .events = POLLIN};
            poll(&p, 1, 100);
        } else {
            break;
        }
    }
    uint32_t status = have >= RFS_HDR_SIZE ? le32_at(frame + 16) : 0;
    size_t mlen = have >= RFS_HDR_SIZE + 2 ? (size_t)(frame[24] | frame[25] << 8) : 0;
    if (sized && have == want && status && mlen + 2 + RFS_HDR_SIZE == want) {
        const char *msg = (const char *)frame + RFS_HDR_SIZE + 2;
        if (rfs_err_from_wire(status) == RFS_E_BUSY)
            return rfs_fail(RFS_E_BUSY, "server %s refused the connection: %.*s", server, (int)mlen,
                            msg);
        return rfs_fail(RFS_E_AUTH,
                        "server %s does not offer TLS (it answered in plaintext: "
                        "%.*s); use an rfs:// name without RFS_TLS, or start rfsd with "
                        "--tls-cert and --tls-key",
                        server, (int)mlen, msg);
    }
    return rfs_fail(RFS_E_AUTH,
                    "server %s does not offer TLS (it answered in plaintext); use "
                    "an rfs:// name without RFS_TLS, or start rfsd with --tls-cert and "
                    "--tls-key",
                    server);
}

static void hex_of(const unsigned char *d, unsigned n, char *out)
{
    static const char x[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        out[2 * i] = x[d[i] >> 4];
        out[2 * i + 1] = x[d[i] & 15];
    }
    out[2 * n] = '\0';
}

static int cert_pin(X509 *c, char hex[RFS_TLS_PIN_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (X509_digest(c, EVP_sha256(), md, &n) != 1 || n != 32)
        return -1;
    hex_of(md, n, hex);
    return 0;
}

/* The pin as 64 lowercase hex digits: "sha256:" prefix, colons and case are allowed. */
static int normalize_pin(const char *in, char out[RFS_TLS_PIN_HEX])
{
    if (strncasecmp(in, "sha256:", 7) == 0 || strncasecmp(in, "sha256/", 7) == 0)
        in += 7;
    size_t k = 0;
    for (; *in; in++) {
        if (*in == ':' || *in == ' ')
            continue;
        char c = (char)(*in >= 'A' && *in <= 'F' ? *in - 'A' + 'a' : *in);
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) || k >= 64)
            return -1;
        out[k++] = c;
    }
    out[k] = '\0';
    return k == 64 ? 0 : -1;
}

static int is_ip_literal(const char *host)
{
    ASN1_OCTET_STRING *a = a2i_IPADDRESS(host);
    if (!a)
        return 0;
    ASN1_OCTET_STRING_free(a);
    return 1;
}

/* One message for a certificate the chain check refused. */
static int verify_failure(SSL *ssl, const char *server, const char *host, const char *ca)
{
    long v = SSL_get_verify_result(ssl);
    char where[600];
    if (ca && *ca)
        snprintf(where, sizeof where, "the CA file %s (RFS_TLS_CA)", ca);
    else
        snprintf(where, sizeof where,
                 "the system's CAs (set RFS_TLS_CA to the CA file, or "
                 "RFS_TLS_PIN to the certificate's fingerprint)");
    switch (v) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
        return rfs_fail(RFS_E_AUTH, "TLS: server %s's certificate has expired", server);
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return rfs_fail(RFS_E_AUTH, "TLS: server %s's certificate is not valid yet", server);
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        return rfs_fail(RFS_E_AUTH,
                        "TLS: server %s has a self-signed certificate that is not "
                        "trusted by %s",
                        server, where);
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
        return rfs_fail(RFS_E_AUTH, "TLS: server %s's certificate is not signed by a CA in %s",
                        server, where);
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return rfs_fail(RFS_E_AUTH, "TLS: server %s's certificate is not issued for '%s'", server,
                        host);
    default:
        return rfs_fail(RFS_E_AUTH, "TLS: cannot verify server %s's certificate: %s", server,
                        X509_verify_cert_error_string(v));
    }
}

/* Runs the client handshake on t within deadline; 0 or a negative rfs_err with message. */
static int handshake(tls_transport *t, int64_t deadline, int timeout_ms, const char *host,
                     const char *ca, int pinned)
{
    const char *server = t->base.peer;
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_connect(t->ssl);
        if (r == 1)
            return RFS_OK;
        int saved = errno;
        int e = SSL_get_error(t->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return rfs_fail(RFS_E_TIMEOUT, "server %s: no TLS handshake within %d ms", server,
                                timeout_ms);
            struct pollfd p = {.fd = t->base.fd,
                               .events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT};
            if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
                return rfs_fail(RFS_E_CONN, "server %s: poll: %s", server, strerror(errno));
            continue;
        }
        if (t->nfirst >= 4 && le32_at(t->first) == RFS_MAGIC) {
            ERR_clear_error();
            return plaintext_answer(t, server);
        }
        if (!pinned && SSL_get_verify_result(t->ssl) != X509_V_OK) {
            ERR_clear_error();
            return verify_failure(t->ssl, server, host, ca);
        }
        char why[256];
        if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
            ERR_clear_error();
            return rfs_fail(RFS_E_AUTH,
                            "server %s closed the connection in the TLS handshake%s%s"
                            " (does it offer TLS? is it rfsd?)",
                            server, saved ? ": " : "", saved ? strerror(saved) : "");
        }
        return rfs_fail(RFS_E_AUTH, "TLS handshake with server %s failed: %s", server,
                        ssl_reason(why, sizeof why, "protocol error"));
    }
}

int rfs_tls_connect(const char *host, unsigned port, const rfs_transport_opts *o,
                    const rfs_tls_client_cfg *cfg, rfs_transport **out)
{
    *out = NULL;
    char pin[RFS_TLS_PIN_HEX] = "";
    const char *ca = cfg && cfg->ca_file && cfg->ca_file[0] ? cfg->ca_file : NULL;
    if (cfg && cfg->pin && cfg->pin[0] && normalize_pin(cfg->pin, pin))
        return rfs_fail(RFS_E_INVAL,
                        "RFS_TLS_PIN: expected the SHA-256 fingerprint of the "
                        "server's certificate as 64 hex digits (colons allowed), as "
                        "`rfs tls-pin CERT` or `openssl x509 -noout -fingerprint -sha256` "
                        "print it");
    if (!pin[0] && ca && access(ca, R_OK) != 0)
        return rfs_fail(RFS_E_INVAL, "RFS_TLS_CA %s: %s", ca, strerror(errno));
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return rfs_fail(RFS_E_NOMEM, "cannot set up TLS (out of memory)");
    base_ctx_options(ctx);
    if (pin[0]) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* checked against the pin below */
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int ok = ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL)
                    : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1) {
            char why[256];
            ssl_reason(why, sizeof why, "unreadable");
            SSL_CTX_free(ctx);
            return rfs_fail(RFS_E_INVAL, "RFS_TLS_CA %s: cannot load CA certificates: %s",
                            ca ? ca : "(system default)", why);
        }
    }
    rfs_transport *tcp;
    int rc = rfs_tcp_connect(host, port, o, &tcp);
    if (rc) {
        SSL_CTX_free(ctx);
        return rc;
    }
    tls_transport *t;
    rc = wrap(ctx, tcp, &t);
    SSL_CTX_free(ctx); /* the SSL keeps its reference */
    if (rc)
        return rc;
    if (!pin[0]) {
        if (is_ip_literal(host)) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host);
        } else {
            SSL_set_tlsext_host_name(t->ssl, host);
            SSL_set1_host(t->ssl, host);
        }
    }
    BIO *rb = SSL_get_rbio(t->ssl);
    BIO_set_callback_arg(rb, (char *)t);
    BIO_set_callback_ex(rb, record_first);
    int timeout_ms = o && o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
    rc = handshake(t, now_ms() + timeout_ms, timeout_ms, host, ca, pin[0] != 0);
    BIO_set_callback_ex(rb, NULL);
    if (!rc && pin[0]) {
        X509 *peer = SSL_get1_peer_certificate(t->ssl);
        char got[RFS_TLS_PIN_HEX];
        if (!peer || cert_pin(peer, got))
            rc = rfs_fail(RFS_E_AUTH,
                          "TLS: server %s sent no certificate to check against "
                          "RFS_TLS_PIN",
                          t->base.peer);
        else if (strcmp(got, pin) != 0)
            rc = rfs_fail(RFS_E_AUTH,
                          "TLS: server %s's certificate does not match RFS_TLS_PIN "
                          "(its SHA-256 fingerprint is %s, the pin %s)",
                          t->base.peer, got, pin);
        X509_free(peer);
    }
    if (rc) {
        tls_close(&t->base);
        return rc;
    }
    *out = &t->base;
    return RFS_OK;
}

/* ---- server ---- */

struct rfs_tls_server {
    pthread_mutex_t mu;
    SSL_CTX *ctx; /* current certificate; connections hold their own reference */
    char *cert_file, *key_file;
};

static int load_ctx(const char *cert, const char *key, SSL_CTX **out)
{
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return rfs_fail(RFS_E_NOMEM, "cannot set up TLS (out of memory)");
    base_ctx_options(ctx);
    /* No resumption: every connection is long-lived, and no ticket keys need rotating. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        SSL_CTX_free(ctx);
        return rfs_fail(RFS_E_INVAL, "--tls-cert %s: cannot load a PEM certificate: %s", cert,
                        ssl_reason(why, sizeof why, "unreadable"));
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        SSL_CTX_free(ctx);
        if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            return rfs_fail(RFS_E_INVAL,
                            "--tls-key %s does not belong to the certificate in "
                            "%s",
                            key, cert);
        }
        return rfs_fail(RFS_E_INVAL, "--tls-key %s: cannot load a PEM private key: %s", key,
                        ssl_reason(why, sizeof why, "unreadable"));
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        SSL_CTX_free(ctx);
        ERR_clear_error();
        return rfs_fail(RFS_E_INVAL, "--tls-key %s does not belong to the certificate in %s", key,
                        cert);
    }
    *out = ctx;
    return RFS_OK;
}

int rfs_tls_server_new(const char *cert_file, const char *key_file, rfs_tls_server **out)
{
    *out = NULL;
    SSL_CTX *ctx;
    int rc = load_ctx(cert_file, key_file, &ctx);
    if (rc)
        return rc;
    rfs_tls_server *s = calloc(1, sizeof *s);
    if (!s || !(s->cert_file = strdup(cert_file)) || !(s->key_file = strdup(key_file))) {
        if (s)
            free(s->cert_file);
        free(s);
        SSL_CTX_free(ctx);
        return rfs_fail(RFS_E_NOMEM, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    s->ctx = ctx;
    *out = s;
    return RFS_OK;
}

int rfs_tls_server_reload(rfs_tls_server *s)
{
    SSL_CTX *ctx;
    int rc = load_ctx(s->cert_file, s->key_file, &ctx);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->mu);
    SSL_CTX *old = s->ctx;
    s->ctx = ctx;
    pthread_mutex_unlock(&s->mu);
    SSL_CTX_free(old); /* connections still using it hold their own reference */
    return RFS_OK;
}

void rfs_tls_server_free(rfs_tls_server *s)
{
    if (!s)
        return;
    SSL_CTX_free(s->ctx);
    pthread_mutex_destroy(&s->mu);
    free(s->cert_file);
    free(s->key_file);
    free(s);
}

int rfs_tls_server_wrap(rfs_tls_server *s, rfs_transport *tcp, rfs_transport **out)
{
    *out = NULL;
    pthread_mutex_lock(&s->mu);
    SSL_CTX *ctx = s->ctx;
    SSL_CTX_up_ref(ctx);
    pthread_mutex_unlock(&s->mu);
    tls_transport *t;
    int rc = wrap(ctx, tcp, &t);
    SSL_CTX_free(ctx);
    if (rc)
        return rc;
    SSL_set_accept_state(t->ssl);
    *out = &t->base;
    return RFS_OK;
}

int rfs_tls_pin_of_file(const char *pem_file, char hex[RFS_TLS_PIN_HEX])
{
    FILE *f = fopen(pem_file, "r");
    if (!f)
        return rfs_fail(RFS_E_NOENT, "%s: %s", pem_file, strerror(errno));
    X509 *c = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    ERR_clear_error();
    if (!c)
        return rfs_fail(RFS_E_INVAL, "%s: no PEM certificate in it", pem_file);
    int rc = cert_pin(c, hex) ? rfs_fail(RFS_E_INVAL, "%s: cannot hash the certificate", pem_file)
                              : RFS_OK;
    X509_free(c);
    return rc;
}

int rfs_tls_peer_pin(rfs_transport *t, uint8_t out[32])
{
    if (!t || t->ops != &tls_ops)
        return rfs_fail(RFS_E_INVAL, "not a TLS connection");
    tls_transport *tt = (tls_transport *)t;
    pthread_mutex_lock(&tt->mu);
    X509 *peer = SSL_get1_peer_certificate(tt->ssl);
    pthread_mutex_unlock(&tt->mu);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    int ok = peer && X509_digest(peer, EVP_sha256(), md, &n) == 1 && n == 32;
    X509_free(peer);
    if (!ok)
        return rfs_fail(RFS_E_AUTH, "%s: no server certificate to pin", t->peer);
    memcpy(out, md, 32);
    return RFS_OK;
}
