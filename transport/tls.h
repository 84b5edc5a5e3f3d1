/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* TLS stream transport over OpenSSL's libssl (docs/security.md "TLS", docs/design.md
 * "Transport and TLS").
 *
 * One SSL object serves a reader thread and a writer thread at once, which OpenSSL does not
 * allow by itself: every SSL call is made under the transport's mutex on a nonblocking
 * socket, and waiting (poll) happens with the mutex released, so a reader waiting for the
 * next request never holds up a reply and the other way round. */
#ifndef RFS_TRANSPORT_TLS_H
#define RFS_TRANSPORT_TLS_H

#include "transport/transport.h"

/* SHA-256 of a certificate as 64 hex digits (the pin's form), with its NUL. */
#define RFS_TLS_PIN_HEX 65

typedef struct rfs_tls_client_cfg {
    const char *ca_file; /* PEM CA bundle; NULL or "": the system's CAs */
    const char *pin;     /* SHA-256 fingerprint of the server's certificate (hex, colons
                            allowed); set: verify by this pin instead of a CA */
} rfs_tls_client_cfg;

/* TCP connect, then a TLS (1.2 or later) handshake within the connect timeout that verifies
 * the server: by pin, or by CA chain and host name (or IP address). Every failure is one
 * message naming the cause; certificate and protocol mismatches are RFS_E_AUTH (not worth
 * retrying), a lost or silent connection RFS_E_CONN / RFS_E_TIMEOUT. A server that answers in
 * plaintext is recognised: its refusal (say, "server busy") is returned with its own class. */
int rfs_tls_connect(const char *host, unsigned port, const rfs_transport_opts *o,
                    const rfs_tls_client_cfg *cfg, rfs_transport **out);

/* The SHA-256 of the certificate the server of client connection t presented (the raw form
 * of a pin), e.g. to tell another server how to verify it (third-party copy). */
int rfs_tls_peer_pin(rfs_transport *t, uint8_t out[32]);

/* Server side: a certificate and key, shared by every connection. */
typedef struct rfs_tls_server rfs_tls_server;
/* Loads and checks the PEM certificate (chain) and key. 0, or RFS_E_INVAL with a message. */
int rfs_tls_server_new(const char *cert_file, const char *key_file, rfs_tls_server **out);
/* Loads the files again (SIGHUP): new connections use the new certificate, existing ones keep
 * theirs. On failure the previous certificate stays and the message says why. */
int rfs_tls_server_reload(rfs_tls_server *s);
void rfs_tls_server_free(rfs_tls_server *s);
/* Wraps an accepted nonblocking TCP transport (taking it over) in TLS; the handshake runs
 * inside the first reads. RFS_E_NOMEM on failure (tcp is then closed). */
int rfs_tls_server_wrap(rfs_tls_server *s, rfs_transport *tcp, rfs_transport **out);

/* SHA-256 fingerprint of the first certificate in a PEM file, as hex (rfs tls-pin). */
int rfs_tls_pin_of_file(const char *pem_file, char hex[RFS_TLS_PIN_HEX]);

#endif
