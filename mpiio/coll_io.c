/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* An aggregator's I/O phase of one two-phase round: the pieces the ranks sent are sorted and
 * merged into one list I/O. Holes are never read and written back: that read-modify-write
 * would cross the network, so list I/O replaces ROMIO's data sieving here. */
#include "mpiio/coll_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int cmp_piece(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Merges sorted pieces into extents (ext, room for np); returns how many, and in *used the
 * bytes of buf they take. Writes: the data are packed in extent order (overlapping pieces are
 * both sent, in rank order, as independent writes would). Reads: the union of the requested
 * ranges, each piece's data pointing into buf where it will land. */
static size_t merge_pieces(const tp *t, piece *pcs, size_t np, rfs_extent *ext, char *buf,
                           int64_t *used_out)
{
    size_t ne = 0;
    int64_t used = 0, bstart = 0;
    for (size_t i = 0; i < np; i++) {
        int64_t s = pcs[i].off, e = s + pcs[i].len;
        if (t->is_write) {
            memcpy(buf + used, pcs[i].data, (size_t)pcs[i].len);
            used += pcs[i].len;
            if (ne && (int64_t)(ext[ne - 1].offset + ext[ne - 1].length) == s)
                ext[ne - 1].length += (uint64_t)pcs[i].len;
            else
                ext[ne++] = (rfs_extent){(uint64_t)s, (uint64_t)pcs[i].len};
            continue;
        }
        if (ne) {
            int64_t ps = (int64_t)ext[ne - 1].offset, pe = ps + (int64_t)ext[ne - 1].length;
            if (s <= pe) {
                if (e > pe) {
                    ext[ne - 1].length += (uint64_t)(e - pe);
                    used += e - pe;
                }
                pcs[i].data = buf + bstart + (s - ps);
                continue;
            }
        }
        bstart = used;
        ext[ne++] = (rfs_extent){(uint64_t)s, (uint64_t)(e - s)};
        pcs[i].data = buf + used;
        used += e - s;
    }
    *used_out = used;
    return ne;
}

/* A read that came back short ended at the end of file inside this window: notes the file
 * offset of the first missing byte and zeroes what was not read. */
static void note_eof(tp *t, const rfs_extent *ext, size_t ne, char *buf, size_t done, int64_t used)
{
    int64_t left = (int64_t)done;
    for (size_t i = 0; i < ne; i++) {
        if (left < (int64_t)ext[i].length) {
            int64_t eof = (int64_t)ext[i].offset + left;
            if (eof < t->eof)
                t->eof = eof;
            break;
        }
        left -= (int64_t)ext[i].length;
    }
    memset(buf + done, 0, (size_t)(used - (int64_t)done));
}

/* ext (room for np) and buf (room for every piece's bytes) were allocated by the caller
 * before the round's agreement. With a write pipe, the pipe takes ext and buf (*handed_off). */
int mp_coll_aggregate_io(tp *t, piece *pcs, size_t np, rfs_extent *ext, char *buf, int *handed_off)
{
    mp_file *f = t->f;
    *handed_off = 0;
    qsort(pcs, np, sizeof *pcs, cmp_piece);
    int64_t used = 0;
    size_t ne = merge_pieces(t, pcs, np, ext, buf, &used);
    if (t->is_write && t->pipe) {
        *handed_off = 1;
        /* A failed write is reported, with its cause, by mp_wpipe_finish; a write the pipe
         * could not even queue only here. */
        int rc = mp_wpipe_submit(t->pipe, ext, ne, buf, t->mem.iobuf_cap);
        if (rc == RFS_E_NOMEM)
            return mp_error_code(MPI_ERR_NO_MEM,
                                 "rfs: %s: out of memory queueing a collective "
                                 "round's write",
                                 f->name);
        return MPI_SUCCESS;
    }
    size_t done = 0;
    int rc = mp_listio(f, t->is_write, ext, ne, buf, &done);
    if (rc != RFS_OK)
        return mp_io_error(f, rc, t->is_write ? "collective write" : "collective read",
                           rfs_last_error());
    if (!t->is_write && (int64_t)done < used)
        note_eof(t, ext, ne, buf, done, used);
    return MPI_SUCCESS;
}
