/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* LZ4 and Zstandard behind common/compress.h. */
#include "common/compress.h"

#include "common/err.h"
#include "common/shuffle.h"
#include "common/tbuf.h"

#include <lz4.h>
#include <pthread.h>
#include <zstd.h>

/* Per-thread zstd contexts, freed when their thread ends. */
static pthread_key_t cctx_key, dctx_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void free_cctx(void *p)
{
    ZSTD_freeCCtx(p);
}
static void free_dctx(void *p)
{
    ZSTD_freeDCtx(p);
}

static void make_keys(void)
{
    pthread_key_create(&cctx_key, free_cctx);
    pthread_key_create(&dctx_key, free_dctx);
}

/* The codec a shuffled one runs after the shuffle (the codec itself otherwise). */
static unsigned base_of(unsigned codec)
{
    return codec == RFS_CODEC_LZ4_SHUF    ? RFS_CODEC_LZ4
           : codec == RFS_CODEC_ZSTD_SHUF ? RFS_CODEC_ZSTD
                                          : codec;
}

static int shuffled(unsigned codec)
{
    return codec == RFS_CODEC_LZ4_SHUF || codec == RFS_CODEC_ZSTD_SHUF;
}

static ZSTD_CCtx *cctx(void)
{
    pthread_once(&key_once, make_keys);
    ZSTD_CCtx *c = pthread_getspecific(cctx_key);
    if (!c && (c = ZSTD_createCCtx()) && pthread_setspecific(cctx_key, c)) {
        ZSTD_freeCCtx(c);
        c = NULL;
    }
    return c;
}

static ZSTD_DCtx *dctx(void)
{
    pthread_once(&key_once, make_keys);
    ZSTD_DCtx *d = pthread_getspecific(dctx_key);
    if (!d && (d = ZSTD_createDCtx()) && pthread_setspecific(dctx_key, d)) {
        ZSTD_freeDCtx(d);
        d = NULL;
    }
    return d;
}

const char *rfs_codec_name(unsigned codec)
{
    switch (codec) {
    case RFS_CODEC_LZ4: return "lz4";
    case RFS_CODEC_ZSTD: return "zstd";
    case RFS_CODEC_LZ4_SHUF: return "lz4+shuffle";
    case RFS_CODEC_ZSTD_SHUF: return "zstd+shuffle";
    default: return "unknown codec";
    }
}

int rfs_codec_known(unsigned codec)
{
    return codec >= RFS_CODEC_LZ4 && codec <= RFS_CODEC_LAST;
}

size_t rfs_codec_bound(unsigned codec, size_t n)
{
    codec = base_of(codec);
    if (codec == RFS_CODEC_LZ4)
        return n > (size_t)LZ4_MAX_INPUT_SIZE ? 0 : (size_t)LZ4_compressBound((int)n);
    if (codec == RFS_CODEC_ZSTD)
        return ZSTD_compressBound(n);
    return 0;
}

static size_t compress_plain(unsigned codec, int level, void *dst, size_t cap, const void *src,
                             size_t n)
{
    size_t out = 0;
    if (codec == RFS_CODEC_LZ4) {
        if (n > (size_t)LZ4_MAX_INPUT_SIZE || cap > (size_t)INT32_MAX)
            return 0;
        int r = LZ4_compress_default(src, dst, (int)n, (int)cap);
        out = r > 0 ? (size_t)r : 0;
    } else if (codec == RFS_CODEC_ZSTD) {
        ZSTD_CCtx *c = cctx();
        if (!c)
            return 0;
        size_t r = ZSTD_compressCCtx(c, dst, cap, src, n, level);
        out = ZSTD_isError(r) ? 0 : r;
    }
    return out < n ? out : 0;
}

size_t rfs_codec_compress(unsigned codec, int level, void *dst, size_t cap, const void *src,
                          size_t n)
{
    if (!shuffled(codec))
        return compress_plain(codec, level, dst, cap, src, n);
    uint8_t *tmp = rfs_tbuf(RFS_TBUF_SHUFFLE, n);
    if (!tmp)
        return 0;
    rfs_shuffle(tmp, src, n, RFS_SHUFFLE_ELEM);
    return compress_plain(base_of(codec), level, dst, cap, tmp, n);
}

static int decompress_plain(unsigned codec, void *dst, size_t raw_len, const void *src, size_t n);

int rfs_codec_decompress(unsigned codec, void *dst, size_t raw_len, const void *src, size_t n)
{
    if (!shuffled(codec))
        return decompress_plain(codec, dst, raw_len, src, n);
    uint8_t *tmp = rfs_tbuf(RFS_TBUF_SHUFFLE, raw_len);
    if (!tmp)
        return rfs_fail(RFS_E_NOMEM, "out of memory to unshuffle %zu bytes", raw_len);
    int rc = decompress_plain(base_of(codec), tmp, raw_len, src, n);
    if (rc == RFS_OK)
        rfs_unshuffle(dst, tmp, raw_len, RFS_SHUFFLE_ELEM);
    return rc;
}

static int decompress_plain(unsigned codec, void *dst, size_t raw_len, const void *src, size_t n)
{
    if (codec == RFS_CODEC_LZ4) {
        if (raw_len > (size_t)INT32_MAX || n > (size_t)INT32_MAX)
            return rfs_fail(RFS_E_TOOBIG, "lz4 payload of %zu bytes too large", raw_len);
        int r = LZ4_decompress_safe(src, dst, (int)n, (int)raw_len);
        if (r < 0 || (size_t)r != raw_len)
            return rfs_fail(RFS_E_PROTO, "corrupt lz4 payload: %s (declared %zu bytes)",
                            r < 0 ? "not a valid block" : "size differs from the declared one",
                            raw_len);
        return RFS_OK;
    }
    if (codec == RFS_CODEC_ZSTD) {
        /* the frame's own size field must agree with the declared size before any work */
        unsigned long long fs = ZSTD_getFrameContentSize(src, n);
        if (fs == ZSTD_CONTENTSIZE_ERROR || (fs != ZSTD_CONTENTSIZE_UNKNOWN && fs != raw_len))
            return rfs_fail(RFS_E_PROTO, "corrupt zstd payload: %s (declared %zu bytes)",
                            fs == ZSTD_CONTENTSIZE_ERROR ? "not a zstd frame"
                                                         : "its size differs from the declared one",
                            raw_len);
        ZSTD_DCtx *d = dctx();
        if (!d)
            return rfs_fail(RFS_E_NOMEM, "out of memory for a zstd context");
        size_t r = ZSTD_decompressDCtx(d, dst, raw_len, src, n);
        if (ZSTD_isError(r) || r != raw_len)
            return rfs_fail(RFS_E_PROTO, "corrupt zstd payload: %s (declared %zu bytes)",
                            ZSTD_isError(r) ? ZSTD_getErrorName(r) : "fewer bytes than declared",
                            raw_len);
        return RFS_OK;
    }
    return rfs_fail(RFS_E_INVAL, "unknown compression codec %u", codec);
}
