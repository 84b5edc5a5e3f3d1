/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "auth.h"
#include "err.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

int rfs_auth_random(uint8_t *out, size_t n)
{
    return RAND_bytes(out, (int)n) == 1 ? RFS_OK
                                        : rfs_fail(RFS_E_IO, "no random bytes from OpenSSL");
}

static void mac3(const char *secret, size_t slen, const char *label, const uint8_t *a,
                 const uint8_t *b, uint8_t mac[RFS_AUTH_MAC])
{
    uint8_t msg[64 + 2 * RFS_AUTH_NONCE];
    size_t ll = strlen(label);
    memcpy(msg, label, ll);
    memcpy(msg + ll, a, RFS_AUTH_NONCE);
    memcpy(msg + ll + RFS_AUTH_NONCE, b, RFS_AUTH_NONCE);
    unsigned int outlen = RFS_AUTH_MAC;
    HMAC(EVP_sha256(), secret, (int)slen, msg, ll + 2 * RFS_AUTH_NONCE, mac, &outlen);
}

void rfs_auth_client_mac(const char *secret, size_t slen, const uint8_t *server_nonce,
                         const uint8_t *client_nonce, uint8_t mac[RFS_AUTH_MAC])
{
    mac3(secret, slen, "rfs-auth-client-v1", server_nonce, client_nonce, mac);
}

void rfs_auth_server_mac(const char *secret, size_t slen, const uint8_t *server_nonce,
                         const uint8_t *client_nonce, uint8_t mac[RFS_AUTH_MAC])
{
    mac3(secret, slen, "rfs-auth-server-v1", client_nonce, server_nonce, mac);
}

int rfs_auth_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

int rfs_auth_read_token_file(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return rfs_fail(rfs_err_from_errno(errno), "token file %s: %s", path, strerror(errno));
    size_t n = fread(out, 1, cap, f);
    int toolong = (n == cap);
    fclose(f);
    if (toolong)
        return rfs_fail(RFS_E_INVAL, "token file %s: longer than %zu bytes", path, cap - 1);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        n--;
    out[n] = '\0';
    if (n == 0)
        return rfs_fail(RFS_E_INVAL, "token file %s is empty", path);
    if (memchr(out, '\0', n))
        return rfs_fail(RFS_E_INVAL, "token file %s contains a NUL byte", path);
    return RFS_OK;
}
