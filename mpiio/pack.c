/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Memory side of a data access: the bytes of (buf, count, datatype) in type-map order. Dense
 * in-order types are used in place; any other type is packed (writes) or read into a buffer and
 * unpacked (reads) with PMPI_Pack/PMPI_Unpack. Only the file side ever crosses the network. */
#include "mpiio/mpiio_internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "dtype/dtype.h"
#include "dtype/encode_mpi.h"

/* The packing buffer of the last access, kept for the next one. A buffer malloc'd and freed per
 * call comes back from the kernel page-faulting each time (glibc unmaps large blocks): on this
 * project's test VM the pack copy then ran at about 1 GB/s instead of 9, and was most of a
 * 1-rank snapshot's write time with active buffering (docs/abt.md). One slot suffices for the
 * usual one access at a time per process; buffers above SPARE_MAX are not kept, so at most
 * that much memory stays held between accesses. */
#define SPARE_MAX ((size_t)64 << 20)
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static void *spare;
static size_t spare_cap;

static void *tmp_alloc(size_t len, size_t *cap)
{
    pthread_mutex_lock(&spare_mu);
    if (spare && spare_cap >= len) {
        void *p = spare;
        *cap = spare_cap;
        spare = NULL;
        spare_cap = 0;
        pthread_mutex_unlock(&spare_mu);
        return p;
    }
    pthread_mutex_unlock(&spare_mu);
    *cap = len;
    return malloc(len ? len : 1);
}

static void tmp_release(void *p, size_t cap)
{
    if (!p)
        return;
    if (cap <= SPARE_MAX) {
        pthread_mutex_lock(&spare_mu);
        if (!spare || spare_cap < cap) {
            void *old = spare;
            spare = p;
            spare_cap = cap;
            pthread_mutex_unlock(&spare_mu);
            free(old);
            return;
        }
        pthread_mutex_unlock(&spare_mu);
    }
    free(p);
}

static int is_named(MPI_Datatype t)
{
    int ni, na, nd, comb;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    return comb == MPI_COMBINER_NAMED;
}

/* 1 if the type's bytes, in type-map order, are laid out in memory in that same order with no
 * gaps (so its data start at buf + true_lb). Conservative: unknown shapes answer 0. */
static int dense_in_order(MPI_Datatype t, int depth)
{
    int ni, na, nd, comb;
    if (depth > 16 || PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED)
        return 1;
    if (comb != MPI_COMBINER_DUP && comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_RESIZED)
        return 0;
    if (ni > 4 || na > 4 || nd != 1)
        return 0;
    int ints[4];
    MPI_Aint addrs[4];
    MPI_Datatype child;
    if (PMPI_Type_get_contents(t, ni, na, nd, ints, addrs, &child) != MPI_SUCCESS)
        return 0;
    int ok = dense_in_order(child, depth + 1);
    if (ok && comb == MPI_COMBINER_CONTIGUOUS && ints[0] > 1) {
        MPI_Count sz, lb, ext;
        ok = PMPI_Type_size_x(child, &sz) == MPI_SUCCESS &&
             PMPI_Type_get_extent_x(child, &lb, &ext) == MPI_SUCCESS && sz == ext;
    }
    if (!is_named(child))
        PMPI_Type_free(&child);
    return ok;
}

/* If (buf,count,type) is one dense run in type-map order, returns its start, else NULL. */
static char *dense_start(const void *buf, MPI_Count count, MPI_Datatype type, int64_t bytes)
{
    MPI_Count lb, ext, tlb, text, sz;
    if (PMPI_Type_size_x(type, &sz) != MPI_SUCCESS ||
        PMPI_Type_get_extent_x(type, &lb, &ext) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(type, &tlb, &text) != MPI_SUCCESS)
        return NULL;
    if (sz != text || (count > 1 && ext != sz) || !dense_in_order(type, 0))
        return NULL;
    (void)bytes;
    return (char *)buf + tlb;
}

static int pack_into(const void *inbuf, MPI_Count count, MPI_Datatype type, void *out,
                     int64_t outlen)
{
#if MP_HAVE_PACK_C
    MPI_Count pos = 0;
    return PMPI_Pack_c(inbuf, count, type, out, outlen, &pos, MPI_COMM_SELF);
#else
    if (outlen > INT_MAX || count > INT_MAX)
        return MPI_ERR_COUNT;
    int pos = 0;
    return PMPI_Pack(inbuf, (int)count, type, out, (int)outlen, &pos, MPI_COMM_SELF);
#endif
}

static int unpack_from(const void *in, int64_t inlen, void *outbuf, MPI_Count count,
                       MPI_Datatype type)
{
#if MP_HAVE_PACK_C
    MPI_Count pos = 0;
    return PMPI_Unpack_c(in, inlen, &pos, outbuf, count, type, MPI_COMM_SELF);
#else
    if (inlen > INT_MAX || count > INT_MAX)
        return MPI_ERR_COUNT;
    int pos = 0;
    return PMPI_Unpack(in, (int)inlen, &pos, outbuf, (int)count, type, MPI_COMM_SELF);
#endif
}

static int prepare(mp_buf *b, const void *buf, MPI_Count count, MPI_Datatype type,
                   const mp_datarep *rep)
{
    memset(b, 0, sizeof *b);
    int rc = mp_datarep_check(rep, type, "this access");
    if (rc == MPI_SUCCESS)
        rc = mp_type_bytes(rep, type, count, &b->len);
    if (rc == MPI_SUCCESS)
        rc = mp_type_bytes(rep, type, 1, &b->type_size);
    if (rc != MPI_SUCCESS)
        return rc;
    b->rep = rep;
    b->user = (void *)buf;
    b->count = count;
    b->type = type;
    if (b->len == 0) {
        b->data = NULL;
        return MPI_SUCCESS;
    }
    /* Data in another representation is always converted through a buffer of ours. */
    b->data = rep ? NULL : dense_start(buf, count, type, b->len);
    return MPI_SUCCESS;
}

int mp_buf_for_write_lazy(mp_buf *b, const void *buf, MPI_Count count, MPI_Datatype type,
                          const mp_datarep *rep)
{
    return prepare(b, buf, count, type, rep);
}

/* Memory -> the byte stream of the file (packed, and converted when the view asks for it). */
static int to_stream(const mp_buf *b, const void *user, MPI_Count count, void *out, int64_t len)
{
    return b->rep ? mp_datarep_to_file(b->rep, user, count, b->type, out, len)
                  : pack_into(user, count, b->type, out, len);
}

static int from_stream(const mp_buf *b, const void *in, int64_t len, void *user, MPI_Count count)
{
    return b->rep ? mp_datarep_from_file(b->rep, in, len, user, count, b->type)
                  : unpack_from(in, len, user, count, b->type);
}

int mp_buf_pack(mp_buf *b)
{
    if (b->len == 0 || b->data)
        return MPI_SUCCESS;
    b->tmp = tmp_alloc((size_t)b->len, &b->tmp_cap);
    if (!b->tmp)
        return MPI_ERR_NO_MEM;
    int rc = to_stream(b, b->user, b->count, b->tmp, b->len);
    if (rc != MPI_SUCCESS) {
        mp_buf_free(b);
        return rc;
    }
    b->data = b->tmp;
    return MPI_SUCCESS;
}

int mp_buf_for_write(mp_buf *b, const void *buf, MPI_Count count, MPI_Datatype type,
                     const mp_datarep *rep)
{
    int rc = prepare(b, buf, count, type, rep);
    return rc != MPI_SUCCESS ? rc : mp_buf_pack(b);
}

int mp_buf_runs(const mp_buf *b, size_t max, struct iovec **iov, size_t *n)
{
    *iov = NULL;
    *n = 0;
    if (b->rep)
        return MPI_ERR_TYPE; /* the memory bytes are not the file's: convert, then write */
    uint8_t *enc = NULL;
    size_t enc_len = 0;
    if (rfs_dt_encode_mpi(b->type, &enc, &enc_len) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    rfs_flat *fl = NULL;
    int rc = rfs_flat_from_encoding(enc, enc_len, &fl);
    free(enc);
    if (rc != RFS_OK)
        return MPI_ERR_TYPE;
    int code = MPI_SUCCESS;
    uint64_t want = (uint64_t)fl->n * (uint64_t)b->count;
    if (fl->n == 0 || b->count <= 0 || want / (uint64_t)b->count != fl->n || want > max) {
        code = MPI_ERR_TYPE;
    } else if (!(*iov = malloc((size_t)want * sizeof **iov))) {
        code = MPI_ERR_NO_MEM;
    } else {
        /* Element e of the buffer starts e extents after buf; adjacent runs are merged.
         * Integer arithmetic: buf may be MPI_BOTTOM with absolute displacements. */
        size_t k = 0;
        int64_t total = 0;
        for (MPI_Count e = 0; e < b->count; e++) {
            uintptr_t base = (uintptr_t)b->user + (uintptr_t)((int64_t)e * fl->extent);
            for (size_t r = 0; r < fl->n; r++) {
                char *p = (char *)(base + (uintptr_t)fl->off[r]);
                size_t len = (size_t)fl->len[r];
                total += fl->len[r];
                if (k && (char *)(*iov)[k - 1].iov_base + (*iov)[k - 1].iov_len == p)
                    (*iov)[k - 1].iov_len += len;
                else
                    (*iov)[k++] = (struct iovec){p, len};
            }
        }
        *n = k;
        if (total != b->len) { /* the decoder's view of the type differs from MPI's */
            free(*iov);
            *iov = NULL;
            *n = 0;
            code = MPI_ERR_TYPE;
        }
    }
    rfs_flat_free(fl);
    return code;
}

int mp_buf_for_read(mp_buf *b, void *buf, MPI_Count count, MPI_Datatype type, const mp_datarep *rep)
{
    int rc = prepare(b, buf, count, type, rep);
    if (rc != MPI_SUCCESS || b->len == 0 || b->data)
        return rc;
    b->tmp = tmp_alloc((size_t)b->len, &b->tmp_cap);
    if (!b->tmp)
        return MPI_ERR_NO_MEM;
    b->data = b->tmp;
    return MPI_SUCCESS;
}

int mp_buf_finish_read(mp_buf *b, int64_t got)
{
    if (!b->tmp || got <= 0)
        return MPI_SUCCESS;
    MPI_Count full = got / b->type_size;
    int64_t part = got % b->type_size;
    int rc = MPI_SUCCESS;
    if (full > 0)
        rc = from_stream(b, b->tmp, full * b->type_size, b->user, full);
    /* A cut element of a representation that changes sizes stays untouched: its items cannot
     * be converted apart (the status counts whole elements only, datarep.c). */
    if (rc == MPI_SUCCESS && part > 0 && !mp_datarep_resizes(b->rep, b->type)) {
        /* A read that stopped at end of file inside an element: pack that element's current
         * memory, overlay the bytes read, unpack it back, so bytes not read stay untouched. */
        MPI_Count lb, ext;
        PMPI_Type_get_extent_x(b->type, &lb, &ext);
        char *elem_mem = (char *)b->user + full * ext;
        char *elem = malloc((size_t)b->type_size);
        if (!elem)
            return MPI_ERR_NO_MEM;
        rc = to_stream(b, elem_mem, 1, elem, b->type_size);
        if (rc == MPI_SUCCESS) {
            memcpy(elem, (char *)b->tmp + full * b->type_size, (size_t)part);
            rc = from_stream(b, elem, b->type_size, elem_mem, 1);
        }
        free(elem);
    }
    return rc;
}

void mp_buf_free(mp_buf *b)
{
    tmp_release(b->tmp, b->tmp_cap);
    b->tmp = NULL;
    b->tmp_cap = 0;
    b->data = NULL;
}
