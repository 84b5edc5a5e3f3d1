/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Invariants of the manifest decoder (manifest/format.c) on arbitrary bytes, shared by the
 * libFuzzer target fuzz_manifest and the corpus test tests/manifest/test_corpus.c. */
#ifndef RFS_TESTS_MANIFEST_CHECK_H
#define RFS_TESTS_MANIFEST_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* Decodes data; aborts when an invariant breaks: a refused manifest left something behind, an
 * error class other than the documented ones, an accepted manifest that does not encode back
 * to the same bytes, or a mapped piece outside its extent and object range. Returns 1 if the
 * bytes were accepted. */
int rfsm_check_bytes(const uint8_t *data, size_t size);

#endif
