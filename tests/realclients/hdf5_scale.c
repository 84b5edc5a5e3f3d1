/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A parallel HDF5 application in C at a realistic scale (the C twin of h5py_scale.py):
 *
 *   1. create (H5Pset_fapl_mpio): NDATASETS chunked 20 x 30 datasets in nested groups
 *      /step_SS/field_FF (double, int and float in turn; chunks of 6 x 7, so every rank's block
 *      of rows cuts through chunks and HDF5 builds noncontiguous file views), every other one
 *      written with a collective transfer (H5Pset_dxpl_mpio H5FD_MPIO_COLLECTIVE), the others
 *      with an independent one, each rank its own rows; attributes on the file, the groups and
 *      the datasets (scalars, strings, arrays); a compound dataset in /meta/deeper/deepest; a
 *      resizable dataset (H5S_UNLIMITED rows) extended 100 times with a write after each; close.
 *   2. reopen read-write: a new group with datasets, new and changed attributes, some datasets
 *      overwritten, the resizable one extended once more; close.
 *   3. reopen read-only: every value, type, shape, chunk shape and attribute checked on every
 *      rank, then each rank's own rows of some datasets read again collectively.
 *
 * Usage: hdf5_scale FILE [NDATASETS [collmeta|nofill]]   (default 1000)
 * collmeta: H5Pset_all_coll_metadata_ops and H5Pset_coll_metadata_write, as large codes set
 * them: metadata is read by rank 0 and broadcast, and the metadata cache is flushed with one
 * collective write of all ranks through a derived file view.
 * nofill: H5Pset_fill_time(H5D_FILL_TIME_NEVER) on every dataset: HDF5 does not write fill
 * values into chunks it allocates (docs/mpiio.md: what that has to do with rfs_abt).
 * Prints "hdf5_scale: ok ..." on rank 0 and exits 0 when every rank found everything as
 * expected; an HDF5 error prints the call, the file and the phase and aborts the job; wrong
 * values are printed per rank and the exit status is 1.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    FIELDS_PER_STEP = 20,
    NR = 20,
    NC = 30,
    CR = 6,
    CC = 7,
    EXT_ROWS = 4,
    EXT_COLS = 8,
    EXTENSIONS = 100,
    NRECORDS = 57,
    APPENDED = 12,
    AR = 15,
    AC = 9,
    MOD_STEP = 3,
    MOD_END = 40,
};

typedef struct {
    long long id;
    double x;
    char name[12];
    unsigned char flags[3];
} record;

static int rank, nprocs;
static const char *path, *phase = "create";
static int coll_metadata; /* "collmeta": metadata reads and writes collective too */
static int no_fill;       /* "nofill": H5D_FILL_TIME_NEVER, chunks are not filled when allocated */
static long nbad;

/* Every HDF5 call returns a negative value on failure (hid_t, herr_t, htri_t, hssize_t all fit
 * in int64_t): the call, the file and the phase are printed and the job stops. */
static int64_t h5check(int64_t r, const char *call, int line)
{
    if (r < 0) {
        fprintf(stderr, "hdf5_scale: rank %d: %s: %s: %s failed (line %d)\n", rank, path, phase,
                call, line);
        H5Eprint2(H5E_DEFAULT, stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return r;
}
#define H(call) h5check((int64_t)(call), #call, __LINE__)

__attribute__((format(printf, 2, 3))) static void bad(const char *obj, const char *fmt, ...)
{
    if (nbad++ < 20) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "hdf5_scale: rank %d: %s: %s: ", rank, path, obj);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static void block(int n, int p, int *start, int *stop)
{
    int base = n / nprocs, extra = n % nprocs;
    *start = p * base + (p < extra ? p : extra);
    *stop = *start + base + (p < extra ? 1 : 0);
}

static void name_of(int i, char *buf, size_t len)
{
    snprintf(buf, len, "step_%02d/field_%02d", i / FIELDS_PER_STEP, i % FIELDS_PER_STEP);
}

static hid_t type_of(int i)
{
    static const hid_t *types[] = {&H5T_NATIVE_DOUBLE_g, &H5T_NATIVE_INT_g, &H5T_NATIVE_FLOAT_g};
    return *types[i % 3];
}

static hid_t file_type_of(int i)
{
    static const hid_t *types[] = {&H5T_IEEE_F64LE_g, &H5T_STD_I32LE_g, &H5T_IEEE_F32LE_g};
    return *types[i % 3];
}

static int is_modified(int i, int ndatasets)
{
    return i < MOD_END && i < ndatasets && i % MOD_STEP == 0;
}

/* values(i) as doubles; converted to the dataset's memory type by fill(). */
static double value(int i, int r, int c, int modified)
{
    double v = (double)i * 1000 + r * 37 + c;
    return modified ? -v - 7 : v;
}

static void fill(int i, int modified, void *buf)
{
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NC; c++) {
            double v = value(i, r, c, modified);
            switch (i % 3) {
            case 0: ((double *)buf)[r * NC + c] = v; break;
            case 1: ((int *)buf)[r * NC + c] = (int)v; break;
            default: ((float *)buf)[r * NC + c] = (float)v; break;
            }
        }
}

static double ext_value(int r, int c)
{
    return r * 10 + c * 0.5;
}
static double app_value(int j, int r, int c)
{
    return r * AC + c + j * 0.5;
}

static void make_record(int k, record *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->id = (long long)k * 11 - 3;
    rec->x = k * 0.125;
    snprintf(rec->name, sizeof rec->name, "rec%04d", k);
    for (int j = 0; j < 3; j++)
        rec->flags[j] = (unsigned char)((k * 3 + j) % 251);
}

static hid_t record_type(void)
{
    hsize_t three = 3;
    hid_t t = H(H5Tcreate(H5T_COMPOUND, sizeof(record)));
    hid_t s = H(H5Tcopy(H5T_C_S1));
    H(H5Tset_size(s, 12));
    hid_t a = H(H5Tarray_create2(H5T_NATIVE_UCHAR, 1, &three));
    H(H5Tinsert(t, "id", HOFFSET(record, id), H5T_NATIVE_LLONG));
    H(H5Tinsert(t, "x", HOFFSET(record, x), H5T_NATIVE_DOUBLE));
    H(H5Tinsert(t, "name", HOFFSET(record, name), s));
    H(H5Tinsert(t, "flags", HOFFSET(record, flags), a));
    H(H5Tclose(s));
    H(H5Tclose(a));
    return t;
}

/* ------------------------------------------------------------------ attributes */

static void attr_write(hid_t obj, const char *name, hid_t type, int rank_, const hsize_t *dims,
                       const void *data)
{
    if (H(H5Aexists(obj, name)) > 0)
        H(H5Adelete(obj, name));
    hid_t sp = rank_ ? H(H5Screate_simple(rank_, dims, NULL)) : H(H5Screate(H5S_SCALAR));
    hid_t a = H(H5Acreate2(obj, name, type, sp, H5P_DEFAULT, H5P_DEFAULT));
    H(H5Awrite(a, type, data));
    H(H5Aclose(a));
    H(H5Sclose(sp));
}

static void attr_int(hid_t obj, const char *name, int v)
{
    attr_write(obj, name, H5T_NATIVE_INT, 0, NULL, &v);
}

static void attr_doubles(hid_t obj, const char *name, const double *v, hsize_t n)
{
    attr_write(obj, name, H5T_NATIVE_DOUBLE, 1, &n, v);
}

static void attr_string(hid_t obj, const char *name, const char *s)
{
    hid_t t = H(H5Tcopy(H5T_C_S1));
    H(H5Tset_size(t, strlen(s)));
    attr_write(obj, name, t, 0, NULL, s);
    H(H5Tclose(t));
}

static void check_attr_int(hid_t obj, const char *oname, const char *name, int want)
{
    int got = 0;
    hid_t a = H(H5Aopen(obj, name, H5P_DEFAULT));
    H(H5Aread(a, H5T_NATIVE_INT, &got));
    H(H5Aclose(a));
    if (got != want)
        bad(oname, "attribute = %d, expected %d", got, want);
}

static void check_attr_doubles(hid_t obj, const char *oname, const char *name, const double *want,
                               int n)
{
    double got[8] = {0};
    hid_t a = H(H5Aopen(obj, name, H5P_DEFAULT));
    hid_t sp = H(H5Aget_space(a));
    hssize_t npoints = H(H5Sget_simple_extent_npoints(sp));
    if (npoints != n) {
        bad(oname, "array attribute has %ld elements, expected %d", (long)npoints, n);
    } else {
        H(H5Aread(a, H5T_NATIVE_DOUBLE, got));
        for (int k = 0; k < n; k++)
            if (got[k] != want[k])
                bad(oname, "array attribute element %d is %g, expected %g", k, got[k], want[k]);
    }
    H(H5Sclose(sp));
    H(H5Aclose(a));
}

static void check_attr_string(hid_t obj, const char *oname, const char *name, const char *want)
{
    char got[64] = {0};
    hid_t a = H(H5Aopen(obj, name, H5P_DEFAULT));
    hid_t t = H(H5Aget_type(a));
    size_t len = H5Tget_size(t);
    if (len != strlen(want) || len >= sizeof got) {
        bad(oname, "string attribute of %ld bytes, expected %ld", (long)len, (long)strlen(want));
    } else {
        H(H5Aread(a, t, got));
        if (memcmp(got, want, len) != 0)
            bad(oname, "string attribute differs (%ld bytes, expected %ld)", (long)len,
                (long)strlen(want));
    }
    H(H5Tclose(t));
    H(H5Aclose(a));
}

/* ------------------------------------------------------------------ data */

/* Writes rows [r0, r1) of a 2-D dataset from the full array buf (ncols wide). */
static void write_rows(hid_t d, hid_t memtype, hsize_t r0, hsize_t r1, hsize_t ncols,
                       const void *buf, size_t elsize, int collective)
{
    hid_t dx = H(H5Pcreate(H5P_DATASET_XFER));
    H(H5Pset_dxpl_mpio(dx, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT));
    hid_t fs = H(H5Dget_space(d));
    hsize_t start[2] = {r0, 0}, count[2] = {r1 - r0, ncols};
    hid_t ms = H(H5Screate_simple(2, count, NULL));
    if (r1 > r0) {
        H(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    } else {
        H(H5Sselect_none(fs));
        H(H5Sselect_none(ms));
    }
    H(H5Dwrite(d, memtype, ms, fs, dx, (const char *)buf + r0 * ncols * elsize));
    H(H5Sclose(ms));
    H(H5Sclose(fs));
    H(H5Pclose(dx));
}

static hid_t create_chunked(hid_t loc, const char *name, hid_t ftype, hsize_t nr, hsize_t nc,
                            hsize_t cr, hsize_t cc, hsize_t maxr)
{
    hsize_t dims[2] = {nr, nc}, maxdims[2] = {maxr, nc}, chunk[2] = {cr, cc};
    hid_t sp = H(H5Screate_simple(2, dims, maxdims));
    hid_t dc = H(H5Pcreate(H5P_DATASET_CREATE));
    H(H5Pset_chunk(dc, 2, chunk));
    if (no_fill)
        H(H5Pset_fill_time(dc, H5D_FILL_TIME_NEVER));
    hid_t d = H(H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, dc, H5P_DEFAULT));
    H(H5Pclose(dc));
    H(H5Sclose(sp));
    return d;
}

static hid_t fapl(void)
{
    hid_t p = H(H5Pcreate(H5P_FILE_ACCESS));
    H(H5Pset_fapl_mpio(p, MPI_COMM_WORLD, MPI_INFO_NULL));
    if (coll_metadata) {
        H(H5Pset_all_coll_metadata_ops(p, 1));
        H(H5Pset_coll_metadata_write(p, 1));
    }
    return p;
}

static const char *units_of(int i, int modified)
{
    return modified ? "modified" : (i % 2 ? "m/s" : "K");
}

static void create_file(int ndatasets)
{
    static double full[NR * NC];
    hid_t p = fapl();
    hid_t f = H(H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, p));
    H(H5Pclose(p));
    attr_string(f, "title", "rfs hdf5 scale test");
    attr_int(f, "ndatasets", ndatasets);
    int r0, r1;
    block(NR, rank, &r0, &r1);
    hid_t g = -1;
    for (int i = 0; i < ndatasets; i++) {
        char name[64];
        if (i % FIELDS_PER_STEP == 0) {
            if (g >= 0)
                H(H5Gclose(g));
            int s = i / FIELDS_PER_STEP;
            char gname[32], label[32];
            snprintf(gname, sizeof gname, "step_%02d", s);
            snprintf(label, sizeof label, "step %d", s);
            g = H(H5Gcreate2(f, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
            double time[5];
            for (int k = 0; k < 5; k++)
                time[k] = s + k * 0.25;
            attr_int(g, "step", s);
            attr_string(g, "label", label);
            attr_doubles(g, "time", time, 5);
        }
        snprintf(name, sizeof name, "field_%02d", i % FIELDS_PER_STEP);
        hid_t d = create_chunked(g, name, file_type_of(i), NR, NC, CR, CC, NR);
        double range[2] = {i, i + 1.5};
        attr_int(d, "index", i);
        attr_string(d, "units", units_of(i, 0));
        attr_doubles(d, "range", range, 2);
        fill(i, 0, full);
        write_rows(d, type_of(i), r0, r1, NC, full, H5Tget_size(type_of(i)), i % 2 == 0);
        H(H5Dclose(d));
    }
    if (g >= 0)
        H(H5Gclose(g));

    hid_t lc = H(H5Pcreate(H5P_LINK_CREATE));
    H(H5Pset_create_intermediate_group(lc, 1));
    hid_t m = H(H5Gcreate2(f, "meta/deeper/deepest", lc, H5P_DEFAULT, H5P_DEFAULT));
    H(H5Pclose(lc));
    attr_string(m, "comment", "three levels down");
    hid_t rt = record_type();
    hsize_t n = NRECORDS, chunk = 10;
    hid_t sp = H(H5Screate_simple(1, &n, NULL));
    hid_t dc = H(H5Pcreate(H5P_DATASET_CREATE));
    H(H5Pset_chunk(dc, 1, &chunk));
    if (no_fill)
        H(H5Pset_fill_time(dc, H5D_FILL_TIME_NEVER));
    hid_t d = H(H5Dcreate2(m, "records", rt, sp, H5P_DEFAULT, dc, H5P_DEFAULT));
    static record recs[NRECORDS];
    for (int k = 0; k < NRECORDS; k++)
        make_record(k, &recs[k]);
    int k0, k1;
    block(NRECORDS, rank, &k0, &k1);
    hsize_t start = (hsize_t)k0, count = (hsize_t)(k1 - k0);
    hid_t ms = H(H5Screate_simple(1, &count, NULL));
    H(H5Sselect_hyperslab(sp, H5S_SELECT_SET, &start, NULL, &count, NULL));
    hid_t dx = H(H5Pcreate(H5P_DATASET_XFER));
    H(H5Pset_dxpl_mpio(dx, H5FD_MPIO_COLLECTIVE));
    H(H5Dwrite(d, rt, ms, sp, dx, &recs[k0]));
    H(H5Pclose(dx));
    H(H5Sclose(ms));
    H(H5Dclose(d));
    H(H5Pclose(dc));
    H(H5Sclose(sp));
    H(H5Tclose(rt));
    H(H5Gclose(m));

    static double ext[EXT_ROWS * (EXTENSIONS + 1) * EXT_COLS];
    for (int r = 0; r < EXT_ROWS * (EXTENSIONS + 1); r++)
        for (int c = 0; c < EXT_COLS; c++)
            ext[r * EXT_COLS + c] = ext_value(r, c);
    hid_t e = create_chunked(f, "extendable", H5T_IEEE_F64LE, 0, EXT_COLS, EXT_ROWS, EXT_COLS,
                             H5S_UNLIMITED);
    int e0, e1;
    block(EXT_ROWS, rank, &e0, &e1);
    for (int k = 0; k < EXTENSIONS; k++) {
        hsize_t dims[2] = {(hsize_t)(k + 1) * EXT_ROWS, EXT_COLS};
        H(H5Dset_extent(e, dims));
        write_rows(e, H5T_NATIVE_DOUBLE, k * EXT_ROWS + e0, k * EXT_ROWS + e1, EXT_COLS, ext,
                   sizeof(double), k % 2 == 0);
    }
    H(H5Dclose(e));
    H(H5Fclose(f));
}

static void append_file(int ndatasets)
{
    static double full[NR * NC];
    hid_t p = fapl();
    hid_t f = H(H5Fopen(path, H5F_ACC_RDWR, p));
    H(H5Pclose(p));
    attr_string(f, "title", "rfs hdf5 scale test (appended)");
    int r0, r1;
    block(NR, rank, &r0, &r1);
    hid_t g = H(H5Gcreate2(f, "appended", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    static double app[AR * AC];
    int a0, a1;
    block(AR, rank, &a0, &a1);
    for (int j = 0; j < APPENDED; j++) {
        char name[32];
        snprintf(name, sizeof name, "extra_%02d", j);
        for (int r = 0; r < AR; r++)
            for (int c = 0; c < AC; c++)
                app[r * AC + c] = app_value(j, r, c);
        hid_t d = create_chunked(g, name, H5T_IEEE_F64LE, AR, AC, 4, 4, AR);
        attr_int(d, "j", j);
        write_rows(d, H5T_NATIVE_DOUBLE, a0, a1, AC, app, sizeof(double), j % 2 == 1);
        H(H5Dclose(d));
    }
    H(H5Gclose(g));
    for (int i = 0, n = 0; i < ndatasets; i++) {
        if (!is_modified(i, ndatasets))
            continue;
        char name[64];
        name_of(i, name, sizeof name);
        hid_t d = H(H5Dopen2(f, name, H5P_DEFAULT));
        fill(i, 1, full);
        write_rows(d, type_of(i), r0, r1, NC, full, H5Tget_size(type_of(i)), n++ % 2 == 0);
        attr_int(d, "modified", 1);
        attr_string(d, "units", units_of(i, 1));
        H(H5Dclose(d));
    }
    static double ext[EXT_ROWS * (EXTENSIONS + 1) * EXT_COLS];
    for (int r = 0; r < EXT_ROWS * (EXTENSIONS + 1); r++)
        for (int c = 0; c < EXT_COLS; c++)
            ext[r * EXT_COLS + c] = ext_value(r, c);
    hid_t e = H(H5Dopen2(f, "extendable", H5P_DEFAULT));
    hsize_t dims[2] = {(hsize_t)(EXTENSIONS + 1) * EXT_ROWS, EXT_COLS};
    H(H5Dset_extent(e, dims));
    int e0, e1;
    block(EXT_ROWS, rank, &e0, &e1);
    write_rows(e, H5T_NATIVE_DOUBLE, EXTENSIONS * EXT_ROWS + e0, EXTENSIONS * EXT_ROWS + e1,
               EXT_COLS, ext, sizeof(double), 1);
    H(H5Dclose(e));
    H(H5Fclose(f));
}

/* Reads the whole 2-D dataset as doubles and compares it with want (nr x nc); checks the
 * chunk shape too. */
static void check_2d(hid_t d, const char *oname, hsize_t nr, hsize_t nc, hsize_t cr, hsize_t cc,
                     const double *want, hid_t want_ftype)
{
    hid_t sp = H(H5Dget_space(d));
    hsize_t dims[2] = {0, 0};
    if (H(H5Sget_simple_extent_ndims(sp)) != 2) {
        bad(oname, "rank %d, expected 2", H5Sget_simple_extent_ndims(sp));
        H(H5Sclose(sp));
        return;
    }
    H(H5Sget_simple_extent_dims(sp, dims, NULL));
    H(H5Sclose(sp));
    hid_t dc = H(H5Dget_create_plist(d));
    hsize_t chunk[2] = {0, 0};
    H(H5Pget_chunk(dc, 2, chunk));
    H(H5Pclose(dc));
    hid_t ft = H(H5Dget_type(d));
    if (H(H5Tequal(ft, want_ftype)) <= 0)
        bad(oname, "file type differs");
    H(H5Tclose(ft));
    if (dims[0] != nr || dims[1] != nc || chunk[0] != cr || chunk[1] != cc) {
        bad(oname, "shape/chunks differ (rows %ld, chunk rows %ld)", (long)dims[0], (long)chunk[0]);
        return;
    }
    double *got = malloc(nr * nc * sizeof *got);
    if (!got) {
        fprintf(stderr, "hdf5_scale: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    H(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, got));
    long wrong = 0, first = -1;
    for (hsize_t k = 0; k < nr * nc; k++)
        if (got[k] != want[k] && wrong++ == 0)
            first = (long)k;
    if (wrong)
        bad(oname, "%ld values differ, the first at element %ld", wrong, first);
    free(got);
}

static void verify_file(int ndatasets)
{
    static double want[NR * NC];
    static double ext[EXT_ROWS * (EXTENSIONS + 1) * EXT_COLS];
    hid_t p = fapl();
    hid_t f = H(H5Fopen(path, H5F_ACC_RDONLY, p));
    H(H5Pclose(p));
    check_attr_string(f, "/", "title", "rfs hdf5 scale test (appended)");
    check_attr_int(f, "/", "ndatasets", ndatasets);
    for (int s = 0; s * FIELDS_PER_STEP < ndatasets; s++) {
        char gname[32], label[32];
        snprintf(gname, sizeof gname, "step_%02d", s);
        snprintf(label, sizeof label, "step %d", s);
        hid_t g = H(H5Gopen2(f, gname, H5P_DEFAULT));
        double time[5];
        for (int k = 0; k < 5; k++)
            time[k] = s + k * 0.25;
        check_attr_int(g, gname, "step", s);
        check_attr_string(g, gname, "label", label);
        check_attr_doubles(g, gname, "time", time, 5);
        H(H5Gclose(g));
    }
    for (int i = 0; i < ndatasets; i++) {
        char name[64];
        name_of(i, name, sizeof name);
        int mod = is_modified(i, ndatasets);
        hid_t d = H(H5Dopen2(f, name, H5P_DEFAULT));
        for (int r = 0; r < NR; r++)
            for (int c = 0; c < NC; c++)
                want[r * NC + c] =
                    i % 3 == 2 ? (double)(float)value(i, r, c, mod) : value(i, r, c, mod);
        check_2d(d, name, NR, NC, CR, CC, want, file_type_of(i));
        double range[2] = {i, i + 1.5};
        check_attr_int(d, name, "index", i);
        check_attr_string(d, name, "units", units_of(i, mod));
        check_attr_doubles(d, name, "range", range, 2);
        if ((H(H5Aexists(d, "modified")) > 0) != mod)
            bad(name, "attribute modified present: %d, expected %d", H5Aexists(d, "modified") > 0,
                mod);
        H(H5Dclose(d));
    }
    hid_t m = H(H5Gopen2(f, "meta/deeper/deepest", H5P_DEFAULT));
    check_attr_string(m, "meta/deeper/deepest", "comment", "three levels down");
    hid_t d = H(H5Dopen2(m, "records", H5P_DEFAULT));
    hid_t rt = record_type();
    static record got[NRECORDS];
    memset(got, 0, sizeof got);
    H(H5Dread(d, rt, H5S_ALL, H5S_ALL, H5P_DEFAULT, got));
    for (int k = 0; k < NRECORDS; k++) {
        record w;
        make_record(k, &w);
        if (got[k].id != w.id || got[k].x != w.x || memcmp(got[k].name, w.name, 12) != 0 ||
            memcmp(got[k].flags, w.flags, 3) != 0)
            bad("records", "record %d differs (of %d)", k, NRECORDS);
    }
    H(H5Tclose(rt));
    H(H5Dclose(d));
    H(H5Gclose(m));

    for (int r = 0; r < EXT_ROWS * (EXTENSIONS + 1); r++)
        for (int c = 0; c < EXT_COLS; c++)
            ext[r * EXT_COLS + c] = ext_value(r, c);
    hid_t e = H(H5Dopen2(f, "extendable", H5P_DEFAULT));
    check_2d(e, "extendable", EXT_ROWS * (EXTENSIONS + 1), EXT_COLS, EXT_ROWS, EXT_COLS, ext,
             H5T_IEEE_F64LE);
    hid_t sp = H(H5Dget_space(e));
    hsize_t maxdims[2];
    H(H5Sget_simple_extent_dims(sp, NULL, maxdims));
    if (maxdims[0] != H5S_UNLIMITED || maxdims[1] != EXT_COLS)
        bad("extendable", "maxdims %ld x %ld", (long)maxdims[0], (long)maxdims[1]);
    H(H5Sclose(sp));
    H(H5Dclose(e));

    static double app[AR * AC];
    for (int j = 0; j < APPENDED; j++) {
        char name[32];
        snprintf(name, sizeof name, "appended/extra_%02d", j);
        for (int r = 0; r < AR; r++)
            for (int c = 0; c < AC; c++)
                app[r * AC + c] = app_value(j, r, c);
        hid_t a = H(H5Dopen2(f, name, H5P_DEFAULT));
        check_2d(a, name, AR, AC, 4, 4, app, H5T_IEEE_F64LE);
        check_attr_int(a, name, "j", j);
        H(H5Dclose(a));
    }

    /* Each rank's own rows once more, with a collective transfer. */
    int r0, r1;
    block(NR, rank, &r0, &r1);
    hid_t dx = H(H5Pcreate(H5P_DATASET_XFER));
    H(H5Pset_dxpl_mpio(dx, H5FD_MPIO_COLLECTIVE));
    for (int i = 0; i < ndatasets; i += 7) {
        char name[64];
        name_of(i, name, sizeof name);
        hid_t ds = H(H5Dopen2(f, name, H5P_DEFAULT));
        hid_t fs = H(H5Dget_space(ds));
        hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)(r1 - r0), NC};
        H(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
        hid_t ms = H(H5Screate_simple(2, count, NULL));
        H(H5Dread(ds, H5T_NATIVE_DOUBLE, ms, fs, dx, want));
        int mod = is_modified(i, ndatasets);
        for (int r = r0; r < r1; r++)
            for (int c = 0; c < NC; c++) {
                double w = i % 3 == 2 ? (double)(float)value(i, r, c, mod) : value(i, r, c, mod);
                if (want[(r - r0) * NC + c] != w) {
                    bad(name, "collective read of row %d col %d differs", r, c);
                    r = r1;
                    break;
                }
            }
        H(H5Sclose(ms));
        H(H5Sclose(fs));
        H(H5Dclose(ds));
    }
    H(H5Pclose(dx));
    H(H5Fclose(f));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2 || argc > 4 ||
        (argc == 4 && strcmp(argv[3], "collmeta") != 0 && strcmp(argv[3], "nofill") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: hdf5_scale FILE [NDATASETS [collmeta|nofill]]\n");
        MPI_Finalize();
        return 2;
    }
    path = argv[1];
    int ndatasets = argc >= 3 ? atoi(argv[2]) : 1000;
    coll_metadata = argc == 4 && strcmp(argv[3], "collmeta") == 0;
    no_fill = argc == 4 && strcmp(argv[3], "nofill") == 0;
    if (ndatasets < 1 || ndatasets > 100 * FIELDS_PER_STEP) {
        if (rank == 0)
            fprintf(stderr, "hdf5_scale: NDATASETS must be 1..%d\n", 100 * FIELDS_PER_STEP);
        MPI_Finalize();
        return 2;
    }
    /* Errors are reported by H() with the call and the file; HDF5's own stack printing too. */
    create_file(ndatasets);
    phase = "append";
    append_file(ndatasets);
    phase = "verify";
    verify_file(ndatasets);
    long total = 0;
    MPI_Allreduce(&nbad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) {
        unsigned maj, min, rel;
        H5get_libversion(&maj, &min, &rel);
        printf("hdf5_scale: ok %s on %d ranks: %d chunked datasets in %d groups, %d extensions, "
               "%d appended%s (hdf5 %u.%u.%u)\n",
               path, nprocs, ndatasets, (ndatasets + FIELDS_PER_STEP - 1) / FIELDS_PER_STEP,
               EXTENSIONS + 1, APPENDED,
               coll_metadata ? ", collective metadata"
               : no_fill     ? ", no fill"
                             : "",
               maj, min, rel);
        fflush(stdout);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
