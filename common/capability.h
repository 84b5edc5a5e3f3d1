/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Capabilities (docs/security.md "Capabilities"): a printable string that grants one right
 * (read, write or manage) on one file until a time, signed with the Ed25519 key of the server
 * that issued it (its "home" server). Any server that trusts the issuer's public key checks it
 * without a shared account. It is a bearer credential: whoever holds the string holds the
 * right.
 *
 *   string = "rfscap1." base64url(body || signature), no padding
 *   body   = u8 version (1), u8 kind, u8 right, u8 0, key_id[8], u64 serial, u64 expires,
 *            u64 auth_until, u16 path_len, path            (little-endian)
 *   signature = Ed25519(issuer key, "rfs-cap-v1" || body)
 *
 * A *lease* (kind 2) is a short-lived copy of a capability the issuer hands to a client that
 * holds the capability, for the data servers: they accept from other issuers only leases,
 * so a revoked capability stops opening connections there when its last lease lapses. This
 * file has no I/O beyond reading and writing key files; it is pure besides OpenSSL. */
#ifndef RFS_COMMON_CAPABILITY_H
#define RFS_COMMON_CAPABILITY_H

#include <stddef.h>
#include <stdint.h>

#define RFS_CAP_PREFIX "rfscap1."
#define RFS_PUB_PREFIX "rfspub1."
#define RFS_CAP_KEYID_LEN 8u
#define RFS_CAP_PUB_LEN 32u
#define RFS_CAP_SIG_LEN 64u
#define RFS_CAP_MAX_PATH 1024u /* so that a capability fits a frame before authentication */
#define RFS_CAP_BODY_FIXED 38u
#define RFS_CAP_MAX_LEN 1536u /* the printable string, without its NUL */
#define RFS_PUB_STR_LEN 52u   /* "rfspub1." + 43 base64url characters + NUL */

enum { RFS_CAP_READ = 1, RFS_CAP_WRITE = 2, RFS_CAP_MANAGE = 3 };
enum { RFS_CAP_KIND_CAP = 1, RFS_CAP_KIND_LEASE = 2 };

typedef struct rfs_cap {
    unsigned kind;  /* RFS_CAP_KIND_* */
    unsigned right; /* RFS_CAP_READ < WRITE < MANAGE: each implies the ones below */
    uint8_t key_id[RFS_CAP_KEYID_LEN];
    uint64_t serial;     /* random, chosen by the issuer; a lease has its capability's */
    uint64_t expires;    /* Unix seconds: no request is served under it from then on */
    uint64_t auth_until; /* Unix seconds: no connection authenticates with it from then on */
    char path[RFS_CAP_MAX_PATH + 1];
} rfs_cap;

/* "read", "write", "manage" (or "?"). */
const char *rfs_cap_right_name(unsigned right);
/* 1 when s starts like a capability string (the prefix). */
int rfs_cap_looks_like(const char *s);

/* Structure only (no signature check): decodes s into *out and keeps the signed body and the
 * signature for rfs_cap_check_sig. RFS_E_AUTH with a message naming the fault otherwise. */
typedef struct rfs_cap_parsed {
    rfs_cap cap;
    uint8_t body[RFS_CAP_BODY_FIXED + RFS_CAP_MAX_PATH];
    size_t body_len;
    uint8_t sig[RFS_CAP_SIG_LEN];
} rfs_cap_parsed;
int rfs_cap_parse(const char *s, rfs_cap_parsed *out);
/* RFS_OK when p's signature is made by the key pub; RFS_E_AUTH "bad signature" otherwise. */
int rfs_cap_check_sig(const rfs_cap_parsed *p, const uint8_t pub[RFS_CAP_PUB_LEN]);

/* A signing key (an OpenSSL EVP_PKEY of type Ed25519). */
typedef struct rfs_cap_key rfs_cap_key;
/* Loads the PEM private key in path; when it does not exist and make is set, makes a new key
 * and writes it there (mode 0600, created exclusively). RFS_OK or an error with a message. */
int rfs_cap_key_load(const char *path, int make, rfs_cap_key **out);
void rfs_cap_key_free(rfs_cap_key *k);
void rfs_cap_key_pub(const rfs_cap_key *k, uint8_t pub[RFS_CAP_PUB_LEN]);
/* The key id: the first 8 bytes of SHA-256 of the public key. */
void rfs_cap_key_id(const uint8_t pub[RFS_CAP_PUB_LEN], uint8_t id[RFS_CAP_KEYID_LEN]);
/* "rfspub1.<base64url>" and back (RFS_E_INVAL with a message when malformed). */
void rfs_cap_pub_format(const uint8_t pub[RFS_CAP_PUB_LEN], char out[RFS_PUB_STR_LEN]);
int rfs_cap_pub_parse(const char *s, uint8_t pub[RFS_CAP_PUB_LEN]);

/* Signs cap (its key_id is set from k) into out (at least RFS_CAP_MAX_LEN + 1 bytes). */
int rfs_cap_sign(const rfs_cap_key *k, rfs_cap *cap, char *out, size_t outcap);

/* Does a connection authenticated with cap for cap->path reach path?  The file itself, and
 * for a manifest its objects: path + ".c<digits>.r<digits>" (docs/manifest.md). A lease
 * reaches the objects only, never the manifest: a data server that keeps a lease it was
 * shown cannot use it to change the layout or the manifest on the home server. */
int rfs_cap_covers(const rfs_cap *cap, const char *path);
/* Is path a hidden temporary of the file that `rfs put` writes and renames over it
 * (".NAME.rfs-part-SUFFIX" in the same directory)? A write capability (not a lease) reaches
 * those too. */
int rfs_cap_is_temp(const rfs_cap *cap, const char *path);

#endif
