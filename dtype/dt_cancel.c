/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The process-wide cancellation flag that long datatype work polls (rfs_dt_set_cancel). A
 * server points it at its shutdown flag so that SIGTERM is never held up by a flatten. */
#include "dt_internal.h"

static _Atomic(const atomic_int *) cancel_flag;

void rfs_dt_set_cancel(const atomic_int *flag)
{
    atomic_store(&cancel_flag, flag);
}

int dt_cancelled(void)
{
    const atomic_int *f = atomic_load_explicit(&cancel_flag, memory_order_relaxed);
    return f && atomic_load_explicit(f, memory_order_relaxed) != 0;
}
