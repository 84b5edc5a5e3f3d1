/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* See zauto.h. The auto decision, per state (a file on the client, an open file on rfsd):
 *  - Off, it samples now and then: the first SAMPLE bytes of a frame compressed with each codec
 *    the receiver takes (lz4, zstd, and both after a byte shuffle) and decompressed again,
 *    timed. The first frame is sampled; after a sample that says
 *    "off" the next one waits twice as long (8 MiB doubling to 256 MiB), so incompressible data
 *    costs well under 1% of a core, and a file whose data become compressible is noticed.
 *  - On, every frame is compressed with the chosen codec, and its ratio and speed feed the
 *    estimates; the other codecs are sampled every 64 MiB.
 *  - Each frame applies SEMPLAR's condition, in its pipelined form, with the estimates and
 *    the link rate B the sender measured (from sends that had to wait for the socket: then the
 *    link drained the frame; until one did, TCP's congestion window per round trip stands in).
 *    Compression, transmission and decompression overlap (a stream compresses frame k+1 while
 *    frame k is on the wire), so codec k carries min(Sc_k, r_k B, Sd_k) raw bytes per second
 *    against B raw: it is worth it when that is more, and the codec that carries the most is
 *    used. The sum 1/Sc + 1/(rB) + 1/Sd of the serial form ranked a fast codec with a poor
 *    ratio close to a slower one with a good ratio, and the choice flipped between them from
 *    frame to frame. A change of choice needs a 10% gain; dropping a codec that no longer
 *    beats raw needs none. No estimate of B, or no sample: raw. Sc is measured on the calling
 *    thread, so it already counts the cores the other streams' compression takes. */
#include "common/zauto.h"

#include "common/clock.h"
#include "common/compress.h"
#include "common/debug.h"
#include "common/err.h"
#include "common/tbuf.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* auto leaves payloads under 4 KiB raw (not worth a decision); an explicit codec is tried on
 * anything from 64 bytes, and a payload that does not shrink goes raw anyway */
#define MIN_PACK_AUTO ((size_t)4 << 10)
#define MIN_PACK ((size_t)64)
#define SAMPLE ((size_t)256 << 10)
#define INTERVAL_MIN ((uint64_t)8 << 20)
#define INTERVAL_MAX ((uint64_t)256 << 20)
#define RESAMPLE_ON ((uint64_t)64 << 20)
#define EWMA 0.3

typedef rfs_zest est;

struct rfs_zstate {
    unsigned mode;
    int level;
    pthread_mutex_t mu;
    est e[RFS_CODEC_LAST + 1]; /* by codec id */
    unsigned choice;           /* auto: codec in use, 0 none */
    uint64_t since_sample;     /* payload bytes since the last sample */
    uint64_t interval;
    rfs_zstats st;
};

int rfs_zmode_parse(const char *s, unsigned *mode, int *level)
{
    *level = RFS_ZSTD_LEVEL_DEFAULT;
    if (!s || !*s || !strcmp(s, "auto")) {
        *mode = RFS_Z_AUTO;
        return RFS_OK;
    }
    if (!strcmp(s, "none")) {
        *mode = RFS_Z_NONE;
        return RFS_OK;
    }
    size_t len = strlen(s);
    static const char shuf[] = "+shuffle";
    int shuffle = len > sizeof shuf - 1 && !strcmp(s + len - (sizeof shuf - 1), shuf);
    if (shuffle)
        len -= sizeof shuf - 1;
    if (len == 3 && !strncmp(s, "lz4", 3)) {
        *mode = RFS_Z_LZ4;
    } else if (len == 4 && !strncmp(s, "zstd", 4)) {
        *mode = RFS_Z_ZSTD;
    } else if (len > 5 && !strncmp(s, "zstd:", 5)) {
        char digits[8];
        if (len - 5 >= sizeof digits)
            return rfs_fail(RFS_E_INVAL, "compression '%s': zstd level must be 1..%d", s,
                            RFS_ZSTD_LEVEL_MAX);
        memcpy(digits, s + 5, len - 5);
        digits[len - 5] = '\0';
        char *end;
        long l = strtol(digits, &end, 10);
        if (end == digits || *end || l < 1 || l > RFS_ZSTD_LEVEL_MAX)
            return rfs_fail(RFS_E_INVAL, "compression '%s': zstd level must be 1..%d", s,
                            RFS_ZSTD_LEVEL_MAX);
        *mode = RFS_Z_ZSTD;
        *level = (int)l;
    } else {
        return rfs_fail(RFS_E_INVAL,
                        "compression '%s': use none, lz4, zstd[:LEVEL] (either "
                        "optionally followed by +shuffle) or auto",
                        s);
    }
    if (shuffle)
        *mode = *mode == RFS_Z_LZ4 ? RFS_Z_LZ4_SHUF : RFS_Z_ZSTD_SHUF;
    return RFS_OK;
}

int rfs_zmode_valid(const char *s)
{
    unsigned mode;
    int level;
    if (rfs_zmode_parse(s, &mode, &level) == RFS_OK)
        return 1;
    rfs_clear_error();
    return 0;
}

void rfs_zmode_name(unsigned mode, int level, char *buf, size_t cap)
{
    if (mode == RFS_Z_NONE || mode == RFS_Z_AUTO) {
        snprintf(buf, cap, "%s", mode == RFS_Z_NONE ? "none" : "auto");
        return;
    }
    const char *sh = mode == RFS_Z_LZ4_SHUF || mode == RFS_Z_ZSTD_SHUF ? "+shuffle" : "";
    if ((mode == RFS_Z_ZSTD || mode == RFS_Z_ZSTD_SHUF) && level != RFS_ZSTD_LEVEL_DEFAULT)
        snprintf(buf, cap, "zstd:%d%s", level, sh);
    else
        snprintf(buf, cap, "%s%s", mode == RFS_Z_LZ4 || mode == RFS_Z_LZ4_SHUF ? "lz4" : "zstd",
                 sh);
}

rfs_zstate *rfs_zstate_new(unsigned mode, int level)
{
    rfs_zstate *z = calloc(1, sizeof *z);
    if (!z)
        return NULL;
    z->mode = mode;
    z->level = level;
    z->interval = INTERVAL_MIN;
    pthread_mutex_init(&z->mu, NULL);
    return z;
}

void rfs_zstate_free(rfs_zstate *z)
{
    if (!z)
        return;
    pthread_mutex_destroy(&z->mu);
    free(z);
}

int rfs_zstate_wants(rfs_zstate *z, size_t n)
{
    if (!z || z->mode == RFS_Z_NONE)
        return 0;
    if (z->mode != RFS_Z_AUTO)
        return 1;
    if (n < MIN_PACK_AUTO)
        return 0;
    pthread_mutex_lock(&z->mu);
    uint64_t due = z->choice ? RESAMPLE_ON : z->interval;
    int wants = z->choice || z->st.packed + z->st.raw == 0 || z->since_sample >= due;
    pthread_mutex_unlock(&z->mu);
    return wants;
}

void rfs_zstate_skip(rfs_zstate *z, size_t n)
{
    if (!z)
        return;
    pthread_mutex_lock(&z->mu);
    z->since_sample += n;
    z->st.raw++;
    pthread_mutex_unlock(&z->mu);
}

void rfs_zstate_stats(rfs_zstate *z, rfs_zstats *out)
{
    memset(out, 0, sizeof *out);
    if (!z)
        return;
    pthread_mutex_lock(&z->mu);
    *out = z->st;
    out->choice = z->choice;
    pthread_mutex_unlock(&z->mu);
}

/* ---- estimates ---- */

static void blend(est *e, double ratio, double cspeed, double dspeed)
{
    if (!e->known) {
        e->known = 1;
        e->ratio = ratio;
        e->cspeed = cspeed;
        e->dspeed = dspeed > 0 ? dspeed : 0;
        return;
    }
    e->ratio += EWMA * (ratio - e->ratio);
    e->cspeed += EWMA * (cspeed - e->cspeed);
    if (dspeed > 0)
        e->dspeed = e->dspeed > 0 ? e->dspeed + EWMA * (dspeed - e->dspeed) : dspeed;
}

/* Compresses and decompresses the first SAMPLE bytes with codec: ratio and both speeds. */
static void sample(unsigned codec, int level, const uint8_t *src, size_t n, est *out)
{
    size_t len = n < SAMPLE ? n : SAMPLE;
    size_t cap = rfs_codec_bound(codec, len);
    uint8_t *tmp = malloc(cap + len);
    memset(out, 0, sizeof *out);
    if (!tmp)
        return;
    int64_t t0 = rfs_now_ns();
    size_t c = rfs_codec_compress(codec, level, tmp, cap, src, len);
    int64_t t1 = rfs_now_ns();
    double dspeed = 0;
    if (c && rfs_codec_decompress(codec, tmp + cap, len, tmp, c) == RFS_OK)
        dspeed = (double)len / ((double)(rfs_now_ns() - t1 + 1) / 1e9);
    free(tmp);
    out->known = 1;
    out->ratio = c ? (double)len / (double)c : 1.0;
    out->cspeed = (double)len / ((double)(t1 - t0 + 1) / 1e9);
    out->dspeed = dspeed;
}

/* Raw bytes per second that codec k's pipeline carries over a link (or a connection's share of
 * it) of B bytes/s: its slowest stage. Each stream compresses its next frame while the ones
 * before it are on the wire and rfsd decompresses one while it receives the next, so the
 * stages overlap and SEMPLAR's sum T_comp + T_comp_xmit + T_decomp becomes their maximum. */
static double pipeline_rate(const est *e, double B)
{
    double r = e->cspeed;
    if (e->ratio * B < r)
        r = e->ratio * B;
    if (e->dspeed > 0 && e->dspeed < r)
        r = e->dspeed;
    return r;
}

/* A codec worth considering: the receiver takes it, it was measured, it shrinks the data. */
static int usable(const est *e, unsigned offered, unsigned k)
{
    return k && (offered & (1u << k)) && e[k].known && e[k].ratio > 1.0;
}

/* A change of choice (a codec instead of raw, or another codec) must carry this much more than
 * the current one, so measurement noise does not flip the choice from frame to frame (a flip
 * between codecs of different ratios costs the better one's bytes); a codec that no longer
 * beats raw is dropped at once. */
#define SWITCH_GAIN 1.1

unsigned rfs_zauto_pick(const rfs_zest e[RFS_CODEC_LAST + 1], unsigned offered, unsigned current,
                        double B)
{
    if (B <= 0)
        return 0;
    unsigned cur = usable(e, offered, current) ? current : 0;
    double cur_rate = cur ? pipeline_rate(&e[cur], B) : B;
    if (cur && cur_rate <= B) {
        cur = 0;
        cur_rate = B;
    }
    unsigned pick = cur;
    double best = cur_rate;
    for (unsigned k = RFS_CODEC_LZ4; k <= RFS_CODEC_LAST; k++) {
        if (k == cur || !usable(e, offered, k))
            continue;
        double r = pipeline_rate(&e[k], B);
        if (r > best) {
            best = r;
            pick = k;
        }
    }
    return pick != cur && best < cur_rate * SWITCH_GAIN ? cur : pick;
}

static int compress_into(unsigned codec, int level, const void *src, size_t n, rfs_packed *out)
{
    size_t cap = rfs_codec_bound(codec, n);
    uint8_t *dst = cap ? rfs_tbuf(RFS_TBUF_PACKED, cap) : NULL;
    if (!dst)
        return 0;
    size_t c = rfs_codec_compress(codec, level, dst, cap, src, n);
    if (!c)
        return 0;
    out->codec = codec;
    out->data = dst;
    out->len = (uint32_t)c;
    return 1;
}

/* Statistics of one frame sent (packed or raw); z->mu held. */
static void count_frame(rfs_zstate *z, int packed, size_t n, const rfs_packed *out)
{
    if (packed) {
        z->st.packed++;
        z->st.raw_bytes += n;
        z->st.wire_bytes += out->len;
    } else {
        z->st.raw++;
    }
}

void rfs_zstate_pack(rfs_zstate *z, unsigned offered, double B, const void *src, size_t n,
                     rfs_packed *out)
{
    out->codec = 0;
    out->data = src;
    out->len = (uint32_t)n;
    if (!z || z->mode == RFS_Z_NONE || n < (z->mode == RFS_Z_AUTO ? MIN_PACK_AUTO : MIN_PACK))
        return;
    if (z->mode != RFS_Z_AUTO) {
        unsigned codec = z->mode;
        if (!(offered & (1u << codec)) && codec == RFS_CODEC_LZ4_SHUF)
            codec = RFS_CODEC_LZ4;
        else if (!(offered & (1u << codec)) && codec == RFS_CODEC_ZSTD_SHUF)
            codec = RFS_CODEC_ZSTD;
        int ok = (offered & (1u << codec)) && compress_into(codec, z->level, src, n, out);
        pthread_mutex_lock(&z->mu);
        count_frame(z, ok, n, out);
        pthread_mutex_unlock(&z->mu);
        return;
    }
    int zlevel = z->level;

    /* sample when due (outside the lock: it takes a millisecond or so) */
    pthread_mutex_lock(&z->mu);
    unsigned choice = z->choice;
    uint64_t due = choice ? RESAMPLE_ON : z->interval;
    int take = z->st.packed + z->st.raw == 0 || z->since_sample >= due;
    if (take)
        z->since_sample = 0;
    z->since_sample += n;
    pthread_mutex_unlock(&z->mu);
    est fresh[RFS_CODEC_LAST + 1];
    memset(fresh, 0, sizeof fresh);
    if (take)
        for (unsigned k = RFS_CODEC_LZ4; k <= RFS_CODEC_LAST; k++)
            if ((offered & (1u << k)) && k != choice)
                sample(k, zlevel, src, n, &fresh[k]);

    pthread_mutex_lock(&z->mu);
    for (unsigned k = RFS_CODEC_LZ4; k <= RFS_CODEC_LAST; k++)
        if (fresh[k].known)
            blend(&z->e[k], fresh[k].ratio, fresh[k].cspeed, fresh[k].dspeed);
    unsigned pick = rfs_zauto_pick(z->e, offered, z->choice, B);
    if (take && !pick && !z->choice)
        z->interval = z->interval * 2 > INTERVAL_MAX ? INTERVAL_MAX : z->interval * 2;
    if (pick && !z->choice)
        z->interval = INTERVAL_MIN;
    z->choice = pick;
    z->st.link_bps = B;
    pthread_mutex_unlock(&z->mu);

    int ok = 0;
    int64_t t0 = rfs_now_ns();
    if (pick)
        ok = compress_into(pick, zlevel, src, n, out);
    double secs = (double)(rfs_now_ns() - t0 + 1) / 1e9;
    pthread_mutex_lock(&z->mu);
    if (pick) {
        /* the frame itself is the best sample of this codec (decompression speed kept) */
        double ratio = ok ? (double)n / (double)out->len : 1.0;
        blend(&z->e[pick], ratio, (double)n / secs, 0);
    }
    count_frame(z, ok, n, out);
    pthread_mutex_unlock(&z->mu);
}
