/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Asserts that an rfs_io op table names every slot (include/rfs/rfs_io.h: none is NULL).
 * Include after cmocka.h. */
#ifndef RFS_TEST_IO_SLOTS_H
#define RFS_TEST_IO_SLOTS_H

#include "rfs/rfs_io.h"

static inline void assert_io_slots_named(const rfs_io_ops *o)
{
#define SLOT(s) assert_non_null((void *)(uintptr_t)o->s)
    SLOT(pread);
    SLOT(pwrite);
    SLOT(preadv);
    SLOT(pwritev);
    SLOT(pwritev_gather);
    SLOT(sync);
    SLOT(flush);
    SLOT(write_mark);
    SLOT(mark_answered);
    SLOT(get_size);
    SLOT(set_size);
    SLOT(preallocate);
    SLOT(counter);
    SLOT(lock);
    SLOT(unlock);
    SLOT(set_view);
    SLOT(view_read);
    SLOT(view_write);
    SLOT(close);
    SLOT(version);
    SLOT(remove);
    SLOT(start);
    SLOT(end);
    SLOT(coll_join);
    SLOT(coll_listio);
#undef SLOT
    /* A slot added to rfs_io_ops must be added above too. */
    _Static_assert(sizeof(rfs_io_ops) == 25 * sizeof(void (*)(void)), "a slot is not checked");
}

#endif
