/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The fuzz seed corpus (tests/fuzz/corpus, written by make_corpus.py from docs/protocol.md,
 * independently of the C encoder) decodes as its file name says: ok-req-* as requests,
 * ok-rep-* as replies, ok-stream-* as several valid frames, bad-* refused. This keeps the
 * documented layout and the codec in step. */
#include "proto_util.h"

#include "tests/fuzz/frame_check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

static const char *corpus_dir;

static size_t load(const char *name, uint8_t *out, size_t cap)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", corpus_dir, name);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    size_t n = fread(out, 1, cap, f);
    fclose(f);
    return n;
}

/* Refused somewhere: bad header, truncated, or both body decoders say no. */
static int refused(const uint8_t *b, size_t n)
{
    rfs_hdr h;
    if (n < RFS_HDR_SIZE || rfs_hdr_decode(b, RFS_FRAME_HARD_MAX, &h) != RFS_OK)
        return 1;
    rfs_req q;
    rfs_rep p;
    const uint8_t *body = b + RFS_HDR_SIZE;
    size_t len = n - RFS_HDR_SIZE;
    if (len < h.body_len || rfs_frame_check_sum(&h, &body, &len) != RFS_OK)
        return 1;
    return rfs_req_decode(&h, body, len, &q) != RFS_OK &&
           rfs_rep_decode(&h, body, len, &p) != RFS_OK;
}

static void test_corpus(void **state)
{
    static uint8_t b[1 << 16];
    DIR *d = opendir(corpus_dir);
    assert_non_null(d);
    int ok = 0, bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        if (nm[0] == '.')
            continue;
        size_t n = load(nm, b, sizeof b);
        rfs_check_frames(b, n); /* aborts on a broken invariant */
        if (strncmp(nm, "ok-req-", 7) == 0) {
            rfs_req r;
            if (unframe_req(b, n, &r) != RFS_OK)
                fail_msg("%s: %s", nm, rfs_last_error());
            ok++;
        } else if (strncmp(nm, "ok-rep-", 7) == 0) {
            rfs_rep r;
            if (unframe_rep(b, n, &r) != RFS_OK)
                fail_msg("%s: %s", nm, rfs_last_error());
            ok++;
        } else if (strncmp(nm, "ok-stream-", 10) == 0) {
            if (rfs_check_frames(b, n) < 2)
                fail_msg("%s: fewer than two frames decoded", nm);
            ok++;
        } else if (strncmp(nm, "ok-packed-", 10) == 0 || strncmp(nm, "bad-packed-", 11) == 0) {
            /* compressed requests: the pack header (and the decompression, in
             * rfs_check_frames above) decide; the plain decoders refuse the flag */
            rfs_hdr h;
            assert_int_equal(rfs_hdr_decode(b, RFS_FRAME_DEFAULT, &h), RFS_OK);
            rfs_pack_info pi;
            const uint8_t *body = b + RFS_HDR_SIZE;
            size_t blen = n - RFS_HDR_SIZE;
            int prc = blen < h.body_len ? RFS_E_PROTO : rfs_frame_check_sum(&h, &body, &blen);
            if (!prc)
                prc = rfs_frame_pack_info(&h, body, blen, RFS_FRAME_DEFAULT, &pi);
            int decoded = rfs_check_frames(b, n) == 1; /* unpacked and decoded */
            if (nm[0] == 'o') {
                if (prc != RFS_OK || !decoded)
                    fail_msg("%s: refused: %s", nm, rfs_last_error());
                ok++;
            } else {
                if (prc == RFS_OK && decoded)
                    fail_msg("%s: accepted", nm);
                bad++;
            }
        } else if (strncmp(nm, "bad-", 4) == 0) {
            if (!refused(b, n))
                fail_msg("%s: accepted", nm);
            bad++;
        } else {
            fail_msg("%s: unexpected corpus file name", nm);
        }
    }
    closedir(d);
    assert_true(ok >= 40);
    assert_true(bad >= 20);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    corpus_dir = argv[1];
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_corpus)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
