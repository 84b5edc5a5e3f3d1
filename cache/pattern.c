/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "cache/pattern.h"

#include "cache/cache.h"

void cx_pattern_note(cx_pattern *p, uint64_t off, uint64_t len)
{
    if (len == 0)
        return;
    if (!p->have) {
        *p = (cx_pattern){.have = 1, .last_off = off, .last_len = len};
        return;
    }
    /* Reading the same bytes again is served by the cache; it says nothing about what comes
     * next, so it neither breaks nor extends the pattern. */
    if (off == p->last_off && len == p->last_len)
        return;
    if (off == p->last_off + p->last_len) {
        p->streak = p->kind == CX_PAT_SEQ ? p->streak + 1 : 1;
        p->kind = CX_PAT_SEQ;
    } else if (off > p->last_off + p->last_len && len == p->last_len) {
        uint64_t step = off - p->last_off;
        p->streak = p->kind == CX_PAT_STRIDED && p->stride == step ? p->streak + 1 : 1;
        p->kind = CX_PAT_STRIDED;
        p->stride = step;
    } else {
        p->kind = CX_PAT_NONE;
        p->streak = 0;
    }
    p->last_off = off;
    p->last_len = len;
}

int cx_pattern_decide(const cx_pattern *p, int mode)
{
    if (mode == RFS_PREFETCH_DISABLE || !p->have)
        return CX_PAT_NONE;
    if (mode == RFS_PREFETCH_ENABLE)
        return p->kind != CX_PAT_NONE ? p->kind : CX_PAT_SEQ;
    return p->streak >= CX_PAT_CONFIRM ? p->kind : CX_PAT_NONE;
}
