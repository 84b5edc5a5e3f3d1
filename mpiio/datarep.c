/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Data representations: the names set_view accepts, the user representations registered with
 * MPI_Register_datarep (recorded here, still forwarded to the MPI library so its own files know
 * them too), and the conversion of memory data to and from a representation's byte stream.
 *
 * "native" and "internal" need no conversion (the standard lets "internal" be native). Every
 * other representation is converted on the client, in the application thread: "external32"
 * with MPI_Pack_external/MPI_Unpack_external, user ones with their conversion functions.
 * A representation may give a type another size in the file than in memory (MPICH's external32
 * MPI_LONG is 4 bytes; a user extent function may say anything): set_view then lays the etype
 * and filetype out with the file's sizes (file_layout), accesses count file bytes (the stream
 * of converted data) and statuses report the memory bytes of the items moved. Representations
 * without conversion functions copy bytes as they are, so they keep the same-size rule. */
#include "mpiio/mpiio_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct mp_datarep {
    char name[MPI_MAX_DATAREP_STRING];
    int external32;
    MPI_Datarep_conversion_function *read_fn, *write_fn;
#if MP_HAVE_FILE_C
    MPI_Datarep_conversion_function_c *read_c, *write_c; /* MPI_Register_datarep_c's */
#endif
    MPI_Datarep_extent_function *extent_fn;
    void *extra;
    mp_datarep *next;
};

static mp_datarep external32 = {.name = "external32", .external32 = 1};
/* Registered representations live until the process ends, as in MPI (there is no way to
 * unregister one), so views and requests may point at them without references. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static mp_datarep *registered;

static mp_datarep *find_registered(const char *name)
{
    pthread_mutex_lock(&reg_mu);
    mp_datarep *d = registered;
    while (d && strcmp(d->name, name))
        d = d->next;
    pthread_mutex_unlock(&reg_mu);
    return d;
}

const char *mp_datarep_name(const mp_datarep *rep)
{
    return rep ? rep->name : "native";
}

int mp_datarep_find(const char *name, const mp_datarep **rep)
{
    *rep = NULL;
    if (!name)
        return mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP, "rfs: no data representation given");
    if (!strcmp(name, "native") || !strcmp(name, "internal"))
        return MPI_SUCCESS;
    if (!strcmp(name, "external32")) {
        *rep = &external32;
        return MPI_SUCCESS;
    }
    if ((*rep = find_registered(name)))
        return MPI_SUCCESS;
    return mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP,
                         "rfs: unknown data representation \"%s\" "
                         "(native, internal, external32 or one registered with "
                         "MPI_Register_datarep)",
                         name);
}

/* Size of one predefined type in the representation. */
static int file_size(const mp_datarep *rep, MPI_Datatype t, MPI_Aint *sz)
{
    if (rep->external32) {
        /* Measured by packing one element: Open MPI 4.1's MPI_Pack_external_size says 8 for
         * MPI_LONG while MPI_Pack_external writes 4 (the standard's size), and the bytes
         * written are what the file holds. */
        unsigned char zero[64] = {0}, out[64];
        MPI_Aint pos = 0, msz = 0;
        int rc = PMPI_Pack_external_size("external32", 1, t, &msz);
        if (rc != MPI_SUCCESS || msz > (MPI_Aint)sizeof out)
            return rc != MPI_SUCCESS ? rc : MPI_ERR_TYPE;
        MPI_Count ms = 0;
        PMPI_Type_size_x(t, &ms);
        if (ms <= 0 || ms > (MPI_Count)sizeof zero)
            return MPI_ERR_TYPE;
        rc = PMPI_Pack_external("external32", zero, 1, t, out, sizeof out, &pos);
        *sz = pos;
        return rc;
    }
    return rep->extent_fn(t, sz, rep->extra);
}

static const char *type_name(MPI_Datatype t, char *buf)
{
    int len = 0;
    buf[0] = 0;
    if (PMPI_Type_get_name(t, buf, &len) != MPI_SUCCESS || !buf[0])
        strcpy(buf, "(unnamed)");
    return buf;
}

/* A datatype's constructor arguments (MPI_Type_get_contents), with the derived children it
 * returns released by contents_free. */
typedef struct {
    int ni, na, nd, comb;
    int *ints;
    MPI_Aint *addrs;
    MPI_Datatype *types;
} contents;

static int is_named(MPI_Datatype t)
{
    int ni, na, nd, comb;
    return PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
           comb == MPI_COMBINER_NAMED;
}

static void contents_free(contents *c)
{
    for (int i = 0; c->types && i < c->nd; i++)
        if (c->types[i] != MPI_DATATYPE_NULL && !is_named(c->types[i]))
            PMPI_Type_free(&c->types[i]);
    free(c->ints);
    free(c->addrs);
    free(c->types);
    memset(c, 0, sizeof *c);
}

static int contents_get(MPI_Datatype t, contents *c)
{
    memset(c, 0, sizeof *c);
    if (PMPI_Type_get_envelope(t, &c->ni, &c->na, &c->nd, &c->comb) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    if (c->comb == MPI_COMBINER_NAMED)
        return MPI_SUCCESS;
    c->ints = malloc(sizeof *c->ints * (size_t)(c->ni ? c->ni : 1));
    c->addrs = malloc(sizeof *c->addrs * (size_t)(c->na ? c->na : 1));
    c->types = calloc((size_t)(c->nd ? c->nd : 1), sizeof *c->types);
    if (!c->ints || !c->addrs || !c->types) {
        int nd = c->nd;
        c->nd = 0;
        contents_free(c);
        c->nd = nd;
        return MPI_ERR_NO_MEM;
    }
    if (PMPI_Type_get_contents(t, c->ni, c->na, c->nd, c->ints, c->addrs, c->types) !=
        MPI_SUCCESS) {
        c->nd = 0; /* nothing was handed out to free */
        contents_free(c);
        return MPI_ERR_TYPE;
    }
    return MPI_SUCCESS;
}

/* Whether every predefined member of a derived type lies in the data in typemap order as
 * `copies` copies of its single child (all constructors but STRUCT and the leaves). */
static int single_child(const contents *c)
{
    return c->comb != MPI_COMBINER_STRUCT && c->comb != MPI_COMBINER_NAMED && c->nd == 1;
}

/* The number of copies of its single child a type holds. */
static MPI_Count child_copies(MPI_Datatype t, MPI_Datatype child)
{
    MPI_Count ts = 0, cs = 0;
    PMPI_Type_size_x(t, &ts);
    PMPI_Type_size_x(child, &cs);
    return cs > 0 ? ts / cs : 0;
}

#define MAX_DEPTH 32

/* Bytes of one t in the representation (the sum of its predefined members' sizes there);
 * *bad names the first type that could not be sized. */
static int stream_size(const mp_datarep *rep, MPI_Datatype t, int depth, MPI_Count *fs,
                       MPI_Datatype *bad)
{
    *fs = 0;
    contents c;
    if (depth > MAX_DEPTH || contents_get(t, &c) != MPI_SUCCESS) {
        *bad = t;
        return MPI_ERR_TYPE;
    }
    int rc = MPI_SUCCESS;
    if (c.comb == MPI_COMBINER_NAMED || c.nd == 0) {
        /* Predefined, or a parameterized Fortran type (F90_REAL...): one item. */
        MPI_Count ms = 0;
        PMPI_Type_size_x(t, &ms);
        MPI_Aint sz = 0;
        if (ms > 0 && (rc = file_size(rep, t, &sz)) != MPI_SUCCESS)
            *bad = t;
        *fs = ms > 0 ? sz : 0;
    } else if (c.comb == MPI_COMBINER_STRUCT) {
        for (int i = 0; rc == MPI_SUCCESS && i < c.ints[0]; i++) {
            MPI_Count one;
            rc = stream_size(rep, c.types[i], depth + 1, &one, bad);
            *fs += one * c.ints[1 + i];
        }
    } else if (single_child(&c)) {
        MPI_Count one;
        rc = stream_size(rep, c.types[0], depth + 1, &one, bad);
        *fs = one * child_copies(t, c.types[0]);
    } else {
        *bad = t;
        rc = MPI_ERR_TYPE;
    }
    contents_free(&c);
    return rc;
}

/* The type laid out as it is in the file: each predefined member replaced by a block of its
 * size in the representation, counts and element strides kept (they scale with the member),
 * byte displacements kept as given (MPI leaves computing those with
 * MPI_File_get_type_extent to the program). *out is t itself when nothing changes size,
 * else a new uncommitted type. */
static int file_layout(const mp_datarep *rep, MPI_Datatype t, int depth, MPI_Datatype *out)
{
    *out = t;
    contents c;
    if (depth > MAX_DEPTH || contents_get(t, &c) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    int rc = MPI_SUCCESS;
    if (c.comb == MPI_COMBINER_NAMED || c.nd == 0) {
        MPI_Count ms = 0, fs = 0;
        MPI_Datatype bad;
        PMPI_Type_size_x(t, &ms);
        rc = stream_size(rep, t, depth, &fs, &bad);
        if (rc == MPI_SUCCESS && fs != ms)
            rc = PMPI_Type_contiguous((int)fs, MPI_BYTE, out);
        contents_free(&c);
        return rc;
    }
    MPI_Datatype kids[c.nd > 0 ? c.nd : 1];
    int changed = 0;
    for (int i = 0; i < c.nd; i++)
        kids[i] = c.types[i];
    for (int i = 0; rc == MPI_SUCCESS && i < c.nd; i++) {
        rc = file_layout(rep, c.types[i], depth + 1, &kids[i]);
        changed |= kids[i] != c.types[i];
    }
    const int *n = c.ints;
    const MPI_Aint *a = c.addrs;
    MPI_Datatype k = kids[0];
    if (rc == MPI_SUCCESS && changed) {
        switch (c.comb) {
        case MPI_COMBINER_DUP: rc = PMPI_Type_contiguous(1, k, out); break;
        case MPI_COMBINER_CONTIGUOUS: rc = PMPI_Type_contiguous(n[0], k, out); break;
        case MPI_COMBINER_VECTOR: rc = PMPI_Type_vector(n[0], n[1], n[2], k, out); break;
        case MPI_COMBINER_HVECTOR: rc = PMPI_Type_create_hvector(n[0], n[1], a[0], k, out); break;
        case MPI_COMBINER_INDEXED: rc = PMPI_Type_indexed(n[0], n + 1, n + 1 + n[0], k, out); break;
        case MPI_COMBINER_HINDEXED: rc = PMPI_Type_create_hindexed(n[0], n + 1, a, k, out); break;
        case MPI_COMBINER_INDEXED_BLOCK:
            rc = PMPI_Type_create_indexed_block(n[0], n[1], n + 2, k, out);
            break;
        case MPI_COMBINER_HINDEXED_BLOCK:
            rc = PMPI_Type_create_hindexed_block(n[0], n[1], a, k, out);
            break;
        case MPI_COMBINER_STRUCT: rc = PMPI_Type_create_struct(n[0], n + 1, a, kids, out); break;
        case MPI_COMBINER_SUBARRAY: {
            int nd = n[0];
            rc = PMPI_Type_create_subarray(nd, n + 1, n + 1 + nd, n + 1 + 2 * nd, n[1 + 3 * nd], k,
                                           out);
            break;
        }
        case MPI_COMBINER_DARRAY: {
            int nd = n[2];
            rc = PMPI_Type_create_darray(n[0], n[1], nd, n + 3, n + 3 + nd, n + 3 + 2 * nd,
                                         n + 3 + 3 * nd, n[3 + 4 * nd], k, out);
            break;
        }
        case MPI_COMBINER_RESIZED: rc = PMPI_Type_create_resized(k, a[0], a[1], out); break;
        default: rc = MPI_ERR_TYPE; break; /* deprecated Fortran-integer constructors */
        }
    }
    for (int i = 0; i < c.nd; i++)
        if (kids[i] != c.types[i])
            PMPI_Type_free(&kids[i]);
    contents_free(&c);
    if (rc != MPI_SUCCESS)
        *out = t;
    return rc;
}

/* Whether a user representation has both conversion functions (else bytes are copied). */
static int converts(const mp_datarep *rep)
{
#if MP_HAVE_FILE_C
    if (rep->read_c && rep->write_c)
        return 1;
#endif
    return rep->read_fn && rep->write_fn;
}

int mp_datarep_check(const mp_datarep *rep, MPI_Datatype type, const char *fname)
{
    if (!rep || type == MPI_DATATYPE_NULL)
        return MPI_SUCCESS;
    MPI_Count fs = 0, ms = 0;
    MPI_Datatype bad = MPI_DATATYPE_NULL;
    char tn[MPI_MAX_OBJECT_NAME + 16];
    if (stream_size(rep, type, 0, &fs, &bad) != MPI_SUCCESS)
        return mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP,
                             "rfs: %s: data representation \"%s\" "
                             "cannot size type %s",
                             fname, rep->name, type_name(bad, tn));
    PMPI_Type_size_x(type, &ms);
    /* Without conversion functions the bytes are copied as they are: only same sizes fit. */
    if (fs != ms && !rep->external32 && !converts(rep))
        return mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP,
                             "rfs: %s: type %s has %lld bytes in data representation \"%s\" and "
                             "%lld in memory, and the representation has no conversion functions",
                             fname, type_name(type, tn), (long long)fs, rep->name, (long long)ms);
    return MPI_SUCCESS;
}

int mp_datarep_file_type(const mp_datarep *rep, MPI_Datatype type, MPI_Datatype *out)
{
    *out = type;
    if (!rep || type == MPI_DATATYPE_NULL)
        return MPI_SUCCESS;
    int rc = file_layout(rep, type, 0, out);
    if (rc == MPI_SUCCESS && *out != type && (rc = PMPI_Type_commit(out)) != MPI_SUCCESS) {
        PMPI_Type_free(out);
        *out = type;
    }
    return rc;
}

int mp_type_bytes(const mp_datarep *rep, MPI_Datatype type, MPI_Count count, int64_t *bytes)
{
    if (count < 0)
        return MPI_ERR_COUNT;
    if (type == MPI_DATATYPE_NULL)
        return MPI_ERR_TYPE;
    MPI_Count sz = 0;
    MPI_Datatype bad;
    if (rep ? stream_size(rep, type, 0, &sz, &bad) != MPI_SUCCESS
            : PMPI_Type_size_x(type, &sz) != MPI_SUCCESS || sz < 0)
        return MPI_ERR_TYPE;
    if (sz && count > INT64_MAX / sz)
        return MPI_ERR_COUNT;
    *bytes = (int64_t)(sz * count);
    return MPI_SUCCESS;
}

int mp_datarep_resizes(const mp_datarep *rep, MPI_Datatype type)
{
    MPI_Count fs = 0, ms = 0;
    MPI_Datatype bad;
    return rep && stream_size(rep, type, 0, &fs, &bad) == MPI_SUCCESS &&
           PMPI_Type_size_x(type, &ms) == MPI_SUCCESS && fs != ms;
}

int64_t mp_datarep_memory_bytes(const mp_datarep *rep, MPI_Datatype type, int64_t fbytes)
{
    MPI_Count fs = 0, ms = 0;
    MPI_Datatype bad;
    if (!rep || fbytes <= 0 || stream_size(rep, type, 0, &fs, &bad) != MPI_SUCCESS ||
        PMPI_Type_size_x(type, &ms) != MPI_SUCCESS || fs == ms || fs <= 0)
        return fbytes;
    return (fbytes / fs) * ms; /* a cut element is not converted (pack.c) */
}

int mp_datarep_extent(const mp_datarep *rep, MPI_Datatype type, MPI_Aint *extent)
{
    MPI_Aint lb;
    int rc = PMPI_Type_get_extent(type, &lb, extent);
    if (rc != MPI_SUCCESS || !rep)
        return rc;
    if (is_named(type))
        return file_size(rep, type, extent);
    MPI_Datatype ft;
    rc = mp_datarep_file_type(rep, type, &ft);
    if (rc != MPI_SUCCESS)
        return mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP,
                             "rfs: get_type_extent: data "
                             "representation \"%s\" cannot lay out this type",
                             rep->name);
    if (ft != type) {
        rc = PMPI_Type_get_extent(ft, &lb, extent);
        PMPI_Type_free(&ft);
    }
    return rc;
}

/* Predefined data items in count elements of type: user conversions count in those, over
 * the type tiled contiguously (MPI-4 sec. 14.5.3). */
static int items_in(MPI_Datatype type, MPI_Count count, MPI_Count *n)
{
    MPI_Status st;
    MPI_Count sz = 0;
    memset(&st, 0, sizeof st);
    PMPI_Type_size_x(type, &sz);
    PMPI_Status_set_elements_x(&st, MPI_BYTE, count * sz);
    if (PMPI_Get_elements_x(&st, type, n) != MPI_SUCCESS || *n < 0)
        return MPI_ERR_COUNT;
    return MPI_SUCCESS;
}

/* Runs the user's conversion (to_file: write_fn) over count elements. */
static int user_convert(const mp_datarep *rep, int to_file, void *user, MPI_Count count,
                        MPI_Datatype type, void *filebuf)
{
    MPI_Count n = 0;
    int rc = items_in(type, count, &n);
    if (rc != MPI_SUCCESS)
        return rc;
#if MP_HAVE_FILE_C
    if (rep->read_c && rep->write_c)
        return (to_file ? rep->write_c : rep->read_c)(user, type, n, filebuf, 0, rep->extra);
#endif
    if (n > INT_MAX)
        return MPI_ERR_COUNT;
    return (to_file ? rep->write_fn : rep->read_fn)(user, type, (int)n, filebuf, 0, rep->extra);
}

int mp_datarep_to_file(const mp_datarep *rep, const void *user, MPI_Count count, MPI_Datatype type,
                       void *out, int64_t len)
{
    if (count > INT_MAX)
        return MPI_ERR_COUNT;
    if (rep->external32) {
        MPI_Aint pos = 0;
        return PMPI_Pack_external("external32", user, (int)count, type, out, (MPI_Aint)len, &pos);
    }
    if (!converts(rep)) { /* MPI_CONVERSION_FN_NULL: the bytes as they are in memory */
        int pos = 0;
        return len > INT_MAX
                   ? MPI_ERR_COUNT
                   : PMPI_Pack(user, (int)count, type, out, (int)len, &pos, MPI_COMM_SELF);
    }
    return user_convert(rep, 1, (void *)user, count, type, out);
}

int mp_datarep_from_file(const mp_datarep *rep, const void *in, int64_t len, void *user,
                         MPI_Count count, MPI_Datatype type)
{
    if (count > INT_MAX)
        return MPI_ERR_COUNT;
    if (rep->external32) {
        MPI_Aint pos = 0;
        return PMPI_Unpack_external("external32", in, (MPI_Aint)len, &pos, user, (int)count, type);
    }
    if (!converts(rep)) {
        int pos = 0;
        return len > INT_MAX
                   ? MPI_ERR_COUNT
                   : PMPI_Unpack(in, (int)len, &pos, user, (int)count, type, MPI_COMM_SELF);
    }
    return user_convert(rep, 0, user, count, type, (void *)in);
}

/* Checks a registration's arguments; MPI_SUCCESS or the error to raise. */
static int registrable(const char *datarep, MPI_Datarep_extent_function *extent_fn,
                       const char *fname)
{
    if (!datarep || !extent_fn || strlen(datarep) >= MPI_MAX_DATAREP_STRING)
        return mp_error_code(MPI_ERR_ARG,
                             "rfs: %s: no name, a name too long, or no extent "
                             "function",
                             fname);
    if (!strcmp(datarep, "native") || !strcmp(datarep, "internal") ||
        !strcmp(datarep, "external32") || find_registered(datarep))
        return mp_error_code(MPI_ERR_DUP_DATAREP, "rfs: %s: \"%s\" is already defined", fname,
                             datarep);
    return MPI_SUCCESS;
}

/* The MPI library's answer to the forwarded registration: only "already defined" stands (any
 * other refusal means the library cannot convert, which rfs files still can). */
static int library_refused(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        PMPI_Error_class(rc, &cls);
    return rc != MPI_SUCCESS && cls == MPI_ERR_DUP_DATAREP;
}

static int add_registered(mp_datarep *d, const char *datarep)
{
    if (!d)
        return mp_error_code(MPI_ERR_NO_MEM, "rfs: out of memory registering \"%s\"", datarep);
    strcpy(d->name, datarep);
    pthread_mutex_lock(&reg_mu);
    d->next = registered;
    registered = d;
    pthread_mutex_unlock(&reg_mu);
    return MPI_SUCCESS;
}

int MPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_fn,
                         MPI_Datarep_conversion_function *write_fn,
                         MPI_Datarep_extent_function *extent_fn, void *extra)
{
    /* Forwarded so the MPI library's own files know the name too (MPICH 4.0 refuses conversion
     * functions with MPI_ERR_CONVERSION; Open MPI 4.1 too, or MPI_ERR_OTHER for
     * MPI_CONVERSION_FN_NULL). */
    int rc = registrable(datarep, extent_fn, "MPI_Register_datarep");
    if (rc != MPI_SUCCESS)
        return mp_raise_null(rc);
    rc = MP_REAL(PMPI_Register_datarep)(datarep, read_fn, write_fn, extent_fn, extra);
    if (library_refused(rc))
        return rc;
    mp_datarep *d = calloc(1, sizeof *d);
    if (d) {
        d->read_fn = read_fn;
        d->write_fn = write_fn;
        d->extent_fn = extent_fn;
        d->extra = extra;
    }
    return add_registered(d, datarep);
}
MP_ALIAS(MPI_Register_datarep, (const char *datarep, MPI_Datarep_conversion_function *read_fn,
                                MPI_Datarep_conversion_function *write_fn,
                                MPI_Datarep_extent_function *extent_fn, void *extra))

#if MP_HAVE_FILE_C
/* The large-count form (MPI-4): conversion functions take an MPI_Count. */
int MPI_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_c,
                           MPI_Datarep_conversion_function_c *write_c,
                           MPI_Datarep_extent_function *extent_fn, void *extra)
{
    int rc = registrable(datarep, extent_fn, "MPI_Register_datarep_c");
    if (rc != MPI_SUCCESS)
        return mp_raise_null(rc);
    rc = MP_REAL(PMPI_Register_datarep_c)(datarep, read_c, write_c, extent_fn, extra);
    if (library_refused(rc))
        return rc;
    mp_datarep *d = calloc(1, sizeof *d);
    if (d) {
        d->read_c = read_c;
        d->write_c = write_c;
        d->extent_fn = extent_fn;
        d->extra = extra;
    }
    return add_registered(d, datarep);
}
MP_ALIAS(MPI_Register_datarep_c, (const char *datarep, MPI_Datarep_conversion_function_c *read_c,
                                  MPI_Datarep_conversion_function_c *write_c,
                                  MPI_Datarep_extent_function *extent_fn, void *extra))
#endif
