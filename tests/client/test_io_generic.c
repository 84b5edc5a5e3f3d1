/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The generic rfs_io ops (client/io_generic.c) under a layer that writes only the mandatory
 * ops, an in-memory file: list I/O, gathered writes, preallocation and the rest work (or say
 * they cannot) through the defaults, and a delete goes down a list of layers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io_slots.h"
#include "rfs/rfs_io.h"

typedef struct mem_io {
    rfs_io io;
    char data[256];
    uint64_t size;
    int preads, pwrites;
} mem_io;

static mem_io *M(rfs_io *io)
{
    return (mem_io *)io;
}

static int m_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    mem_io *m = M(io);
    m->preads++;
    size_t n = off >= m->size ? 0 : (m->size - off < len ? (size_t)(m->size - off) : len);
    memcpy(buf, m->data + off, n);
    *done = n;
    return RFS_OK;
}

static int m_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    mem_io *m = M(io);
    m->pwrites++;
    if (off + len > sizeof m->data) {
        *done = 0;
        return RFS_E_NOSPC;
    }
    memcpy(m->data + off, buf, len);
    if (off + len > m->size)
        m->size = off + len;
    *done = len;
    return RFS_OK;
}

static int m_sync(rfs_io *io)
{
    (void)io;
    return RFS_OK;
}
static int m_get_size(rfs_io *io, uint64_t *size)
{
    *size = M(io)->size;
    return RFS_OK;
}
static int m_set_size(rfs_io *io, uint64_t size)
{
    M(io)->size = size;
    return RFS_OK;
}
static int m_close(rfs_io *io)
{
    (void)io;
    return RFS_OK;
}

static const rfs_io_ops mem_ops = {
    .pread = m_pread,
    .pwrite = m_pwrite,
    .preadv = rfs_io_gen_preadv,
    .pwritev = rfs_io_gen_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = m_sync,
    .flush = rfs_io_gen_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = m_get_size,
    .set_size = m_set_size,
    .preallocate = rfs_io_gen_preallocate,
    .counter = rfs_io_gen_counter,
    .lock = rfs_io_gen_lock,
    .unlock = rfs_io_gen_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = m_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

static void mem_init(mem_io *m)
{
    memset(m, 0, sizeof *m);
    m->io.ops = &mem_ops;
    strcpy(m->io.server, "mem:0");
    strcpy(m->io.path, "/m");
}

static void test_list_io_through_pread_pwrite(void **state)
{
    mem_io m;
    mem_init(&m);
    rfs_io *io = &m.io;
    rfs_extent ext[3] = {{10, 3}, {0, 2}, {40, 4}};
    size_t done = 0;
    assert_int_equal(io->ops->pwritev(io, ext, 3, "abcXYwxyz", &done), RFS_OK);
    assert_int_equal(done, 9);
    assert_int_equal(m.pwrites, 3);
    assert_memory_equal(m.data + 10, "abc", 3);
    assert_memory_equal(m.data, "XY", 2);
    assert_memory_equal(m.data + 40, "wxyz", 4);
    assert_int_equal(m.size, 44);

    char back[9];
    assert_int_equal(io->ops->preadv(io, ext, 3, back, &done), RFS_OK);
    assert_int_equal(done, 9);
    assert_memory_equal(back, "abcXYwxyz", 9);

    /* A run cut by the end of the file ends the read there, as list reads do. */
    rfs_extent past[3] = {{0, 2}, {42, 10}, {10, 3}};
    memset(back, 0, sizeof back);
    m.preads = 0;
    assert_int_equal(io->ops->preadv(io, past, 3, back, &done), RFS_OK);
    assert_int_equal(done, 4);
    assert_int_equal(m.preads, 2);
    assert_memory_equal(back, "XYyz", 4);

    /* A failing run stops the list; *done counts what went before it. */
    rfs_extent over[2] = {{0, 1}, {250, 10}};
    assert_int_equal(io->ops->pwritev(io, over, 2, "Qqqqqqqqqqq", &done), RFS_E_NOSPC);
    assert_int_equal(done, 1);
    assert_int_equal(m.data[0], 'Q');
}

static void test_gathered_write_is_packed(void **state)
{
    mem_io m;
    mem_init(&m);
    rfs_io *io = &m.io;
    rfs_extent ext[2] = {{5, 4}, {20, 3}};
    struct iovec mem[3] = {{"ab", 2}, {"cde", 3}, {"fg", 2}};
    size_t done = 0;
    assert_int_equal(io->ops->pwritev_gather(io, ext, 2, mem, 3, &done), RFS_OK);
    assert_int_equal(done, 7);
    assert_memory_equal(m.data + 5, "abcd", 4);
    assert_memory_equal(m.data + 20, "efg", 3);
    /* memory and extents must add up */
    assert_int_equal(io->ops->pwritev_gather(io, ext, 2, mem, 2, &done), RFS_E_INVAL);
    assert_int_equal(done, 0);
    assert_non_null(strstr(rfs_last_error(), "5 bytes of memory for 7 bytes of extents"));
}

static void test_preallocate_grows_never_shrinks(void **state)
{
    mem_io m;
    mem_init(&m);
    rfs_io *io = &m.io;
    assert_int_equal(io->ops->preallocate(io, 100), RFS_OK);
    assert_int_equal(m.size, 100);
    assert_int_equal(io->ops->preallocate(io, 30), RFS_OK);
    assert_int_equal(m.size, 100);
}

/* Writes are answered when they return: flush has nothing to wait for, every mark is met. */
static void test_window_ops_say_answered(void **state)
{
    mem_io m;
    mem_init(&m);
    rfs_io *io = &m.io;
    assert_int_equal(io->ops->flush(io, 1), RFS_OK);
    uint64_t mark = io->ops->write_mark(io);
    assert_int_equal(io->ops->mark_answered(io, mark), 1);
    assert_int_equal(io->features & RFS_IO_F_MARKS, 0);
}

static void test_what_the_layer_cannot_do_is_unsupported(void **state)
{
    mem_io m;
    mem_init(&m);
    rfs_io *io = &m.io;
    int64_t old = 7;
    assert_int_equal(io->ops->counter(io, 1, 0, 1, &old), RFS_E_UNSUPPORTED);
    assert_string_equal(rfs_last_error(), "/m: no shared counters");
    assert_int_equal(old, 7);
    assert_int_equal(io->ops->lock(io, 0, 10, RFS_LOCK_EXCL, 0), RFS_E_UNSUPPORTED);
    assert_string_equal(rfs_last_error(), "/m: no byte-range locks");
    assert_int_equal(io->ops->unlock(io, 0, 10), RFS_E_UNSUPPORTED);
    char enc[4] = {0};
    size_t done = 9;
    assert_int_equal(io->ops->set_view(io, 0, 0, enc, sizeof enc), RFS_E_UNSUPPORTED);
    assert_int_equal(io->ops->view_read(io, 0, 0, enc, 4, &done), RFS_E_UNSUPPORTED);
    assert_int_equal(done, 0);
    assert_int_equal(io->ops->view_write(io, 0, 0, enc, 4, &done), RFS_E_UNSUPPORTED);
    rfs_io_version v;
    assert_int_equal(io->ops->version(io, &v), RFS_E_UNSUPPORTED);
    assert_string_equal(rfs_last_error(), "/m: no file versions");
    assert_int_equal(m.preads + m.pwrites, 0);
}

/* ---- delete through a list of layers ---- */

static char seen[2][64];
static int nseen;

static int bottom_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *opts)
{
    (void)opts;
    assert_null(below[0]);
    snprintf(seen[nseen++ % 2], sizeof seen[0], "bottom %s", name);
    return RFS_E_NOENT;
}

static int upper_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *opts)
{
    snprintf(seen[nseen++ % 2], sizeof seen[0], "upper %s", name);
    return rfs_io_remove(below, name, opts);
}

static void test_remove_goes_down_the_layers(void **state)
{
    /* Only the name op matters to a delete; the other slots are the mem layer's. */
    rfs_io_ops upper = mem_ops, middle = mem_ops, bottom = mem_ops;
    upper.remove = upper_remove;
    bottom.remove = bottom_remove;
    const rfs_io_ops *layers[] = {&upper, &middle, &bottom, NULL};
    nseen = 0;
    assert_int_equal(rfs_io_remove(layers, "rfs:h:1:/f", NULL), RFS_E_NOENT);
    assert_int_equal(nseen, 2);
    assert_string_equal(seen[0], "upper rfs:h:1:/f");
    assert_string_equal(seen[1], "bottom rfs:h:1:/f");
    /* no layer left that deletes */
    const rfs_io_ops *none[] = {&middle, NULL};
    assert_int_equal(rfs_io_remove(none, "rfs:h:1:/f", NULL), RFS_E_UNSUPPORTED);
}

static void test_every_client_table_names_every_slot(void **state)
{
    assert_io_slots_named(&mem_ops);
    assert_io_slots_named(rfs_io_remote_ops());
    /* A deferred open contacts nobody until used: its table can be looked at freely. */
    rfs_io *d = NULL;
    rfs_options o = {.retry_timeout_ms = -1, .connect_timeout_ms = 2000};
    assert_int_equal(rfs_io_open_deferred("rfs:127.0.0.1:1:/x", RFS_O_RDONLY, 0, &o, &d), RFS_OK);
    assert_io_slots_named(d->ops);
    assert_int_equal(d->features & RFS_IO_F_MARKS, 0);
    assert_true(d->features & RFS_IO_F_VIEWS);
    assert_int_not_equal(d->ops->close(d), RFS_OK); /* port 1: nobody there to open it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_io_through_pread_pwrite),
        cmocka_unit_test(test_gathered_write_is_packed),
        cmocka_unit_test(test_preallocate_grows_never_shrinks),
        cmocka_unit_test(test_window_ops_say_answered),
        cmocka_unit_test(test_what_the_layer_cannot_do_is_unsupported),
        cmocka_unit_test(test_remove_goes_down_the_layers),
        cmocka_unit_test(test_every_client_table_names_every_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
