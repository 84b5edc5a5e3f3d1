/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A PnetCDF client as a real application would use it: every rank writes its block of one 3-D
 * variable with ncmpi_put_vara_all (block decomposition from MPI_Dims_create), syncs, reads its
 * block back with ncmpi_get_vara_all through the same open file and checks every value.
 * A second mode reopens an existing file with ncmpi_open and checks it the same way.
 *
 * Usage: pnetcdf_write3d write FILE [NZ NY NX]   create, write, sync, read back, verify, close
 *        pnetcdf_write3d read  FILE [NZ NY NX]   ncmpi_open an existing file, read, verify
 * Prints "pnetcdf_write3d: ok ..." on rank 0 and exits 0 when every value matches; any PnetCDF
 * error or mismatch is printed (naming the call and the file) and the exit status is 1.
 *
 * The two modes are separate because PnetCDF's ncmpi_open (1.12) first probes the file format
 * with a POSIX open()+read() on rank 0, outside MPI-IO, of the name with its "prefix:" cut off
 * (librfs-mpiio's read-only POSIX shim serves it); the write mode exercises only MPI-IO.
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NDIMS = 3 };

typedef struct {
    int rank, nprocs;
    const char *path;
    MPI_Offset global[NDIMS], start[NDIMS], count[NDIMS];
} layout;

static int failed(const layout *l, const char *what, int err)
{
    fprintf(stderr, "pnetcdf_write3d: rank %d: %s(%s): %s\n", l->rank, what, l->path,
            ncmpi_strerror(err));
    return 1;
}

#define CHECK(l, call)                       \
    do {                                     \
        int err_ = (call);                   \
        if (err_ != NC_NOERR)                \
            return failed((l), #call, err_); \
    } while (0)

/* A value that differs at every index and depends on all three coordinates. */
static double value_at(const layout *l, MPI_Offset z, MPI_Offset y, MPI_Offset x)
{
    return (double)((z * l->global[1] + y) * l->global[2] + x) * 0.5 + 1.0;
}

static MPI_Offset block_elems(const layout *l)
{
    return l->count[0] * l->count[1] * l->count[2];
}

static void decompose(layout *l)
{
    int dims[NDIMS] = {0, 0, 0};
    MPI_Dims_create(l->nprocs, NDIMS, dims);
    int rest = l->rank;
    for (int d = NDIMS - 1; d >= 0; d--) {
        int coord = rest % dims[d];
        rest /= dims[d];
        MPI_Offset base = l->global[d] / dims[d], extra = l->global[d] % dims[d];
        l->count[d] = base + (coord < extra ? 1 : 0);
        l->start[d] = coord * base + (coord < extra ? coord : extra);
    }
}

/* Returns 0 when the header and every value of this rank's block in the open file ncid are as
 * written. Collective. */
static int verify_open_file(const layout *l, int ncid)
{
    int varid, ndims;
    CHECK(l, ncmpi_inq_varid(ncid, "temperature", &varid));
    CHECK(l, ncmpi_inq_varndims(ncid, varid, &ndims));
    int dimids[NDIMS];
    CHECK(l, ncmpi_inq_vardimid(ncid, varid, dimids));
    if (ndims != NDIMS) {
        fprintf(stderr, "pnetcdf_write3d: %s: variable has %d dimensions, expected 3\n", l->path,
                ndims);
        return 1;
    }
    for (int d = 0; d < NDIMS; d++) {
        MPI_Offset len = 0;
        CHECK(l, ncmpi_inq_dimlen(ncid, dimids[d], &len));
        if (len != l->global[d]) {
            fprintf(stderr, "pnetcdf_write3d: %s: dimension %d is %lld, expected %lld\n", l->path,
                    d, (long long)len, (long long)l->global[d]);
            return 1;
        }
    }
    double *buf = malloc((size_t)block_elems(l) * sizeof(double));
    if (buf == NULL)
        return failed(l, "malloc", NC_ENOMEM);
    memset(buf, 0xff, (size_t)block_elems(l) * sizeof(double));
    int err = ncmpi_get_vara_double_all(ncid, varid, l->start, l->count, buf);
    if (err != NC_NOERR) {
        free(buf);
        return failed(l, "ncmpi_get_vara_double_all", err);
    }
    long long bad = 0;
    size_t n = 0;
    for (MPI_Offset z = 0; z < l->count[0]; z++)
        for (MPI_Offset y = 0; y < l->count[1]; y++)
            for (MPI_Offset x = 0; x < l->count[2]; x++, n++) {
                double want = value_at(l, l->start[0] + z, l->start[1] + y, l->start[2] + x);
                if (buf[n] != want && bad++ == 0)
                    fprintf(stderr,
                            "pnetcdf_write3d: rank %d: %s: [%lld][%lld][%lld] is %g, expected %g\n",
                            l->rank, l->path, (long long)(l->start[0] + z),
                            (long long)(l->start[1] + y), (long long)(l->start[2] + x), buf[n],
                            want);
            }
    free(buf);
    return bad != 0;
}

static int write_and_verify(const layout *l)
{
    static const char *names[NDIMS] = {"z", "y", "x"};
    int ncid, varid, dimids[NDIMS];
    CHECK(l,
          ncmpi_create(MPI_COMM_WORLD, l->path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    for (int d = 0; d < NDIMS; d++)
        CHECK(l, ncmpi_def_dim(ncid, names[d], l->global[d], &dimids[d]));
    CHECK(l, ncmpi_def_var(ncid, "temperature", NC_DOUBLE, NDIMS, dimids, &varid));
    static const char units[] = "kelvin";
    CHECK(l, ncmpi_put_att_text(ncid, varid, "units", strlen(units), units));
    static const char title[] = "rfs real-client test";
    CHECK(l, ncmpi_put_att_text(ncid, NC_GLOBAL, "title", strlen(title), title));
    CHECK(l, ncmpi_enddef(ncid));

    double *buf = malloc((size_t)block_elems(l) * sizeof(double));
    if (buf == NULL)
        return failed(l, "malloc", NC_ENOMEM);
    size_t n = 0;
    for (MPI_Offset z = 0; z < l->count[0]; z++)
        for (MPI_Offset y = 0; y < l->count[1]; y++)
            for (MPI_Offset x = 0; x < l->count[2]; x++)
                buf[n++] = value_at(l, l->start[0] + z, l->start[1] + y, l->start[2] + x);
    int err = ncmpi_put_vara_double_all(ncid, varid, l->start, l->count, buf);
    free(buf);
    if (err != NC_NOERR)
        return failed(l, "ncmpi_put_vara_double_all", err);
    /* sync is collective (MPI_File_sync + barrier): what every rank wrote is now readable. */
    CHECK(l, ncmpi_sync(ncid));
    int rc = verify_open_file(l, ncid);
    CHECK(l, ncmpi_close(ncid));
    return rc;
}

static int reopen_and_verify(const layout *l)
{
    int ncid;
    CHECK(l, ncmpi_open(MPI_COMM_WORLD, l->path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    int rc = verify_open_file(l, ncid);
    CHECK(l, ncmpi_close(ncid));
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    layout l;
    memset(&l, 0, sizeof l);
    MPI_Comm_rank(MPI_COMM_WORLD, &l.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &l.nprocs);
    int writing = argc > 1 && strcmp(argv[1], "write") == 0;
    int reading = argc > 1 && strcmp(argv[1], "read") == 0;
    if ((argc != 3 && argc != 6) || !(writing || reading)) {
        if (l.rank == 0)
            fprintf(stderr, "usage: %s write|read FILE [NZ NY NX]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    l.path = argv[2];
    MPI_Offset defaults[NDIMS] = {20, 24, 36};
    for (int d = 0; d < NDIMS; d++)
        l.global[d] = argc == 6 ? atoll(argv[3 + d]) : defaults[d];
    decompose(&l);

    int rc = writing ? write_and_verify(&l) : reopen_and_verify(&l);
    int any = 0;
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (l.rank == 0 && any == 0)
        printf("pnetcdf_write3d: ok %s %lld x %lld x %lld doubles on %d ranks\n", l.path,
               (long long)l.global[0], (long long)l.global[1], (long long)l.global[2], l.nprocs);
    MPI_Finalize();
    return any;
}
