/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Capability strings: encoding, Ed25519 signatures, key files (capability.h). */
#include "capability.h"
#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct rfs_cap_key {
    EVP_PKEY *pkey;
    uint8_t pub[RFS_CAP_PUB_LEN];
};

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t b64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = b64[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = b64[v & 63];
    }
    out[o] = '\0';
    return o;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

/* Decodes n characters (no padding) into out (cap bytes). -1 on a bad character, a length
 * no encoder makes, nonzero bits left over, or too many bytes. */
static long b64_decode(const char *in, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4 == 1)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    unsigned bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_val(in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return -1;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return acc ? -1 : (long)o; /* leftover bits must be zero: one string per body */
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

const char *rfs_cap_right_name(unsigned right)
{
    switch (right) {
    case RFS_CAP_READ: return "read";
    case RFS_CAP_WRITE: return "write";
    case RFS_CAP_MANAGE: return "manage";
    default: return "?";
    }
}

int rfs_cap_looks_like(const char *s)
{
    return s && strncmp(s, RFS_CAP_PREFIX, strlen(RFS_CAP_PREFIX)) == 0;
}

#define SIG_LABEL "rfs-cap-v1"

static int sig_msg(const uint8_t *body, size_t len, uint8_t *msg)
{
    memcpy(msg, SIG_LABEL, strlen(SIG_LABEL));
    memcpy(msg + strlen(SIG_LABEL), body, len);
    return (int)(strlen(SIG_LABEL) + len);
}

int rfs_cap_parse(const char *s, rfs_cap_parsed *out)
{
    memset(out, 0, sizeof *out);
    if (!rfs_cap_looks_like(s))
        return rfs_fail(RFS_E_AUTH, "not a capability (it does not start with %s)", RFS_CAP_PREFIX);
    const char *enc = s + strlen(RFS_CAP_PREFIX);
    size_t n = strlen(enc);
    while (n && (enc[n - 1] == '\n' || enc[n - 1] == '\r' || enc[n - 1] == ' '))
        n--; /* pasted from a terminal */
    uint8_t raw[RFS_CAP_BODY_FIXED + RFS_CAP_MAX_PATH + RFS_CAP_SIG_LEN];
    long len =
        n + strlen(RFS_CAP_PREFIX) <= RFS_CAP_MAX_LEN ? b64_decode(enc, n, raw, sizeof raw) : -1;
    if (len < (long)(RFS_CAP_BODY_FIXED + RFS_CAP_SIG_LEN))
        return rfs_fail(RFS_E_AUTH, "malformed capability (damaged or truncated when copied)");
    size_t blen = (size_t)len - RFS_CAP_SIG_LEN;
    const uint8_t *b = raw;
    rfs_cap *c = &out->cap;
    unsigned plen = (unsigned)b[36] | (unsigned)b[37] << 8;
    if (b[0] != 1)
        return rfs_fail(RFS_E_AUTH, "capability of version %u; this rfs knows version 1", b[0]);
    if (b[3] != 0 || (b[1] != RFS_CAP_KIND_CAP && b[1] != RFS_CAP_KIND_LEASE) || b[2] < 1 ||
        b[2] > 3 || plen == 0 || plen > RFS_CAP_MAX_PATH || RFS_CAP_BODY_FIXED + plen != blen)
        return rfs_fail(RFS_E_AUTH, "malformed capability (damaged or truncated when copied)");
    c->kind = b[1];
    c->right = b[2];
    memcpy(c->key_id, b + 4, RFS_CAP_KEYID_LEN);
    c->serial = get64(b + 12);
    c->expires = get64(b + 20);
    c->auth_until = get64(b + 28);
    memcpy(c->path, b + RFS_CAP_BODY_FIXED, plen);
    c->path[plen] = '\0';
    if (strlen(c->path) != plen || c->path[0] != '/' || c->auth_until > c->expires)
        return rfs_fail(RFS_E_AUTH, "malformed capability (damaged or truncated when copied)");
    memcpy(out->body, b, blen);
    out->body_len = blen;
    memcpy(out->sig, b + blen, RFS_CAP_SIG_LEN);
    return RFS_OK;
}

int rfs_cap_check_sig(const rfs_cap_parsed *p, const uint8_t pub[RFS_CAP_PUB_LEN])
{
    EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, RFS_CAP_PUB_LEN);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    uint8_t msg[sizeof SIG_LABEL + sizeof p->body];
    int mlen = sig_msg(p->body, p->body_len, msg);
    int ok = k && ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
             EVP_DigestVerify(ctx, p->sig, RFS_CAP_SIG_LEN, msg, (size_t)mlen) == 1;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(k);
    return ok ? RFS_OK
              : rfs_fail(RFS_E_AUTH, "capability refused: bad signature (altered, or not made "
                                     "by the key it names)");
}

static int key_fill(rfs_cap_key *k)
{
    size_t n = RFS_CAP_PUB_LEN;
    if (EVP_PKEY_get_raw_public_key(k->pkey, k->pub, &n) != 1 || n != RFS_CAP_PUB_LEN)
        return rfs_fail(RFS_E_INVAL, "the capability key is not an Ed25519 key");
    return RFS_OK;
}

static int key_make(const char *path, rfs_cap_key *k)
{
    EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
    int ok = pc && EVP_PKEY_keygen_init(pc) == 1 && EVP_PKEY_keygen(pc, &k->pkey) == 1;
    EVP_PKEY_CTX_free(pc);
    if (!ok)
        return rfs_fail(RFS_E_IO, "making an Ed25519 key failed (OpenSSL)");
    /* 0600 and exclusive: a key file that appeared meanwhile (another rfsd) is not replaced */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return rfs_fail(RFS_E_IO, "%s: cannot create the capability key: %s", path,
                        strerror(errno));
    FILE *f = fdopen(fd, "w");
    ok = f && PEM_write_PrivateKey(f, k->pkey, NULL, NULL, 0, NULL, NULL) == 1;
    ok = f && fflush(f) == 0 && fsync(fd) == 0 && ok;
    if (f)
        fclose(f);
    else
        close(fd);
    if (!ok) {
        unlink(path);
        return rfs_fail(RFS_E_IO, "%s: writing the capability key failed", path);
    }
    return RFS_OK;
}

int rfs_cap_key_load(const char *path, int make, rfs_cap_key **out)
{
    *out = NULL;
    rfs_cap_key *k = calloc(1, sizeof *k);
    if (!k)
        return rfs_fail(RFS_E_NOMEM, "out of memory");
    int rc = RFS_OK;
    FILE *f = fopen(path, "re");
    if (!f && errno == ENOENT && make) {
        rc = key_make(path, k);
    } else if (!f) {
        rc = rfs_fail(RFS_E_IO, "%s: cannot read the capability key: %s", path, strerror(errno));
    } else {
        struct stat st;
        if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
            rc = rfs_fail(RFS_E_ACCESS,
                          "%s: the capability key is readable by others (mode %o); "
                          "chmod 600 it",
                          path, (unsigned)(st.st_mode & 0777));
        else if (!(k->pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL)))
            rc = rfs_fail(RFS_E_INVAL, "%s: not a PEM private key", path);
        fclose(f);
    }
    if (rc == RFS_OK)
        rc = key_fill(k);
    if (rc != RFS_OK) {
        rfs_cap_key_free(k);
        return rc;
    }
    *out = k;
    return RFS_OK;
}

void rfs_cap_key_free(rfs_cap_key *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->pkey);
    free(k);
}

void rfs_cap_key_pub(const rfs_cap_key *k, uint8_t pub[RFS_CAP_PUB_LEN])
{
    memcpy(pub, k->pub, RFS_CAP_PUB_LEN);
}

void rfs_cap_key_id(const uint8_t pub[RFS_CAP_PUB_LEN], uint8_t id[RFS_CAP_KEYID_LEN])
{
    uint8_t h[SHA256_DIGEST_LENGTH];
    SHA256(pub, RFS_CAP_PUB_LEN, h);
    memcpy(id, h, RFS_CAP_KEYID_LEN);
}

void rfs_cap_pub_format(const uint8_t pub[RFS_CAP_PUB_LEN], char out[RFS_PUB_STR_LEN])
{
    memcpy(out, RFS_PUB_PREFIX, strlen(RFS_PUB_PREFIX));
    b64_encode(pub, RFS_CAP_PUB_LEN, out + strlen(RFS_PUB_PREFIX));
}

int rfs_cap_pub_parse(const char *s, uint8_t pub[RFS_CAP_PUB_LEN])
{
    size_t pl = strlen(RFS_PUB_PREFIX);
    size_t n = s ? strlen(s) : 0;
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
        n--;
    if (n <= pl || strncmp(s, RFS_PUB_PREFIX, pl) != 0 ||
        b64_decode(s + pl, n - pl, pub, RFS_CAP_PUB_LEN) != (long)RFS_CAP_PUB_LEN)
        return rfs_fail(RFS_E_INVAL,
                        "not a server's public key (expected %s and 43 characters, as "
                        "rfsd --print-cap-key prints)",
                        RFS_PUB_PREFIX);
    return RFS_OK;
}

int rfs_cap_sign(const rfs_cap_key *k, rfs_cap *cap, char *out, size_t outcap)
{
    size_t plen = strlen(cap->path);
    if (plen == 0 || plen > RFS_CAP_MAX_PATH)
        return rfs_fail(RFS_E_NAME, "%s: a capability's path has 1..%u bytes", cap->path,
                        RFS_CAP_MAX_PATH);
    rfs_cap_key_id(k->pub, cap->key_id);
    uint8_t raw[RFS_CAP_BODY_FIXED + RFS_CAP_MAX_PATH + RFS_CAP_SIG_LEN];
    raw[0] = 1;
    raw[1] = (uint8_t)cap->kind;
    raw[2] = (uint8_t)cap->right;
    raw[3] = 0;
    memcpy(raw + 4, cap->key_id, RFS_CAP_KEYID_LEN);
    put64(raw + 12, cap->serial);
    put64(raw + 20, cap->expires);
    put64(raw + 28, cap->auth_until);
    raw[36] = (uint8_t)plen;
    raw[37] = (uint8_t)(plen >> 8);
    memcpy(raw + RFS_CAP_BODY_FIXED, cap->path, plen);
    size_t blen = RFS_CAP_BODY_FIXED + plen;
    uint8_t msg[sizeof SIG_LABEL + sizeof raw];
    int mlen = sig_msg(raw, blen, msg);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t slen = RFS_CAP_SIG_LEN;
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, k->pkey) == 1 &&
             EVP_DigestSign(ctx, raw + blen, &slen, msg, (size_t)mlen) == 1 &&
             slen == RFS_CAP_SIG_LEN;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return rfs_fail(RFS_E_IO, "signing the capability failed (OpenSSL)");
    size_t total = blen + RFS_CAP_SIG_LEN;
    size_t need = strlen(RFS_CAP_PREFIX) + (total * 4 + 2) / 3 + 1;
    if (need > outcap || need > RFS_CAP_MAX_LEN + 1)
        return rfs_fail(RFS_E_TOOBIG, "capability longer than %u characters", RFS_CAP_MAX_LEN);
    memcpy(out, RFS_CAP_PREFIX, strlen(RFS_CAP_PREFIX));
    b64_encode(raw, total, out + strlen(RFS_CAP_PREFIX));
    return RFS_OK;
}

/* ".c<digits>.r<digits>" and nothing else */
static int object_suffix(const char *s)
{
    if (*s++ != '.' || *s++ != 'c' || *s < '0' || *s > '9')
        return 0;
    while (*s >= '0' && *s <= '9')
        s++;
    if (*s++ != '.' || *s++ != 'r' || *s < '0' || *s > '9')
        return 0;
    while (*s >= '0' && *s <= '9')
        s++;
    return *s == '\0';
}

int rfs_cap_covers(const rfs_cap *cap, const char *path)
{
    size_t n = strlen(cap->path);
    if (strncmp(path, cap->path, n) != 0)
        return 0;
    if (path[n] == '\0')
        return cap->kind != RFS_CAP_KIND_LEASE; /* a lease is for the data servers' objects */
    size_t l = n;
    /* objects belong to manifests only: a plain file's capability covers that file alone */
    return l > 5 && strcmp(cap->path + l - 5, ".rfsm") == 0 && object_suffix(path + n);
}

int rfs_cap_is_temp(const rfs_cap *cap, const char *path)
{
    if (cap->kind == RFS_CAP_KIND_LEASE)
        return 0;
    const char *slash = strrchr(cap->path, '/');
    size_t dirlen = slash ? (size_t)(slash - cap->path) + 1 : 0;
    const char *base = cap->path + dirlen;
    static const char tag[] = ".rfs-part-";
    if (strncmp(path, cap->path, dirlen) != 0 || path[dirlen] != '.')
        return 0;
    const char *p = path + dirlen + 1;
    size_t bl = strlen(base);
    if (strncmp(p, base, bl) != 0 || strncmp(p + bl, tag, sizeof tag - 1) != 0)
        return 0;
    p += bl + sizeof tag - 1;
    if (!*p)
        return 0;
    for (; *p; p++)
        if (*p == '/')
            return 0;
    return 1;
}
