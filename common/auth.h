/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Shared-secret challenge-response (HMAC-SHA256). The secret never crosses the wire:
 *   client mac = HMAC(secret, "rfs-auth-client-v1" || server_nonce || client_nonce)
 *   server mac = HMAC(secret, "rfs-auth-server-v1" || client_nonce || server_nonce)
 * so each side proves it knows the secret (mutual authentication). */
#ifndef RFS_COMMON_AUTH_H
#define RFS_COMMON_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define RFS_AUTH_NONCE 32
#define RFS_AUTH_MAC 32
#define RFS_TOKEN_MAX 4096

int rfs_auth_random(uint8_t *out, size_t n); /* 0 or RFS_E_IO */
void rfs_auth_client_mac(const char *secret, size_t slen, const uint8_t *server_nonce,
                         const uint8_t *client_nonce, uint8_t mac[RFS_AUTH_MAC]);
void rfs_auth_server_mac(const char *secret, size_t slen, const uint8_t *server_nonce,
                         const uint8_t *client_nonce, uint8_t mac[RFS_AUTH_MAC]);
/* Constant-time compare: 1 if equal. */
int rfs_auth_equal(const uint8_t *a, const uint8_t *b, size_t n);
/* Reads a token file (trailing newline stripped); refuses empty, oversized or NUL-containing
 * files. Returns 0 or an rfs_err with a message. */
int rfs_auth_read_token_file(const char *path, char *out, size_t cap);

#endif
