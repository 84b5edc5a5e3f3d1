/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A NetCDF-4 (HDF5-based) parallel application: nc_create_par(NC_NETCDF4 | NC_MPIIO), every rank
 * writes its own rows:
 *
 *   dims  time (unlimited), y = 24, x = 20, level = 5, station = 7, namelen = 10
 *   temp(time, y, x)   float,  chunks 1 x 5 x 7, collective   (NT steps written, then more
 *                                                               appended after reopening)
 *   pressure(y, x)     double, contiguous,       independent
 *   flags(y, x)        ubyte,  chunks 6 x 6,     independent
 *   levels(level)      int,                      independent  (uneven blocks, some empty)
 *   step_id(time)      int64,                    collective   (rank 0 writes, others 0 rows)
 *   names(station, namelen) char,                collective
 *   global and per-variable attributes (text, scalars, arrays)
 *
 * then closes; reopens with nc_open_par(NC_WRITE): appends time steps to temp and step_id,
 * overwrites some of pressure, adds attributes (nc_redef/nc_enddef); closes; reopens with
 * nc_open_par(NC_NOWRITE) and checks every value, dimension and attribute on every rank, then
 * each rank's rows of temp once more with collective access.
 *
 * Usage: netcdf4_par FILE
 * Prints "netcdf4_par: ok ..." on rank 0 and exits 0 when every rank found everything as
 * expected; a NetCDF error prints the call and the file and stops the job; wrong values are
 * printed per rank and the exit status is 1.
 */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NT = 6, NT_MORE = 3, NY = 24, NX = 20, NLEV = 5, NST = 7, NAMELEN = 10 };

static int rank, nprocs;
static const char *path;
static long nbad;

static void ncfail(const char *call, int err, int line)
{
    fprintf(stderr, "netcdf4_par: rank %d: %s: %s failed: %s (line %d)\n", rank, path, call,
            nc_strerror(err), line);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define N(call)                            \
    do {                                   \
        int err_ = (call);                 \
        if (err_ != NC_NOERR)              \
            ncfail(#call, err_, __LINE__); \
    } while (0)

__attribute__((format(printf, 1, 2))) static void bad(const char *fmt, ...)
{
    if (nbad++ < 20) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "netcdf4_par: rank %d: %s: ", rank, path);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static void block(int n, int p, size_t *start, size_t *count)
{
    int base = n / nprocs, extra = n % nprocs;
    *start = (size_t)(p * base + (p < extra ? p : extra));
    *count = (size_t)(base + (p < extra ? 1 : 0));
}

static float temp_value(int t, int y, int x)
{
    return (float)(t * 1000 + y * 31 + x) * 0.5f;
}
static double pressure_value(int y, int x, int modified)
{
    return modified && y % 3 == 0 ? -1.0 - y - x * 0.01 : 1013.25 + y * 0.5 + x * 0.001;
}
static unsigned char flag_value(int y, int x)
{
    return (unsigned char)((y * NX + x) % 253);
}
static int level_value(int l)
{
    return 100 * (l + 1) - 7;
}
static long long step_value(int t)
{
    return 1000000000000LL + t * 3600;
}
static void station_name(int s, char *out)
{
    memset(out, 0, NAMELEN);
    snprintf(out, NAMELEN, "st-%c%03d", 'A' + s, s * 17);
}

typedef struct {
    int ncid, time, y, x, level, station, namelen;
    int temp, pressure, flags, levels, step_id, names;
} ids;

static void lookup(ids *v)
{
    N(nc_inq_varid(v->ncid, "temp", &v->temp));
    N(nc_inq_varid(v->ncid, "pressure", &v->pressure));
    N(nc_inq_varid(v->ncid, "flags", &v->flags));
    N(nc_inq_varid(v->ncid, "levels", &v->levels));
    N(nc_inq_varid(v->ncid, "step_id", &v->step_id));
    N(nc_inq_varid(v->ncid, "names", &v->names));
}

/* Writes temp steps [t0, t1) and their step_id, collectively. */
static void write_steps(const ids *v, int t0, int t1)
{
    size_t y0, ny;
    block(NY, rank, &y0, &ny);
    float *buf = malloc(sizeof(float) * NY * NX);
    if (!buf)
        ncfail("malloc", NC_ENOMEM, __LINE__);
    for (int t = t0; t < t1; t++) {
        for (size_t y = 0; y < ny; y++)
            for (int x = 0; x < NX; x++)
                buf[y * NX + x] = temp_value(t, (int)(y0 + y), x);
        size_t start[3] = {(size_t)t, y0, 0}, count[3] = {1, ny, NX};
        N(nc_put_vara_float(v->ncid, v->temp, start, count, buf));
    }
    free(buf);
    long long ids_[NT + NT_MORE];
    for (int t = t0; t < t1; t++)
        ids_[t - t0] = step_value(t);
    size_t start = (size_t)t0, count = rank == 0 ? (size_t)(t1 - t0) : 0;
    N(nc_put_vara_longlong(v->ncid, v->step_id, &start, &count, ids_));
}

static void write_pressure(const ids *v, int modified)
{
    size_t y0, ny;
    block(NY, rank, &y0, &ny);
    double buf[NY * NX];
    for (size_t y = 0; y < ny; y++)
        for (int x = 0; x < NX; x++)
            buf[y * NX + x] = pressure_value((int)(y0 + y), x, modified);
    size_t start[2] = {y0, 0}, count[2] = {ny, NX};
    if (ny)
        N(nc_put_vara_double(v->ncid, v->pressure, start, count, buf));
}

static void create_file(void)
{
    ids v;
    N(nc_create_par(path, NC_NETCDF4 | NC_MPIIO | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL,
                    &v.ncid));
    N(nc_def_dim(v.ncid, "time", NC_UNLIMITED, &v.time));
    N(nc_def_dim(v.ncid, "y", NY, &v.y));
    N(nc_def_dim(v.ncid, "x", NX, &v.x));
    N(nc_def_dim(v.ncid, "level", NLEV, &v.level));
    N(nc_def_dim(v.ncid, "station", NST, &v.station));
    N(nc_def_dim(v.ncid, "namelen", NAMELEN, &v.namelen));
    int d3[3] = {v.time, v.y, v.x}, d2[2] = {v.y, v.x}, dn[2] = {v.station, v.namelen};
    N(nc_def_var(v.ncid, "temp", NC_FLOAT, 3, d3, &v.temp));
    size_t tchunk[3] = {1, 5, 7};
    N(nc_def_var_chunking(v.ncid, v.temp, NC_CHUNKED, tchunk));
    N(nc_def_var(v.ncid, "pressure", NC_DOUBLE, 2, d2, &v.pressure));
    N(nc_def_var_chunking(v.ncid, v.pressure, NC_CONTIGUOUS, NULL));
    N(nc_def_var(v.ncid, "flags", NC_UBYTE, 2, d2, &v.flags));
    size_t fchunk[2] = {6, 6};
    N(nc_def_var_chunking(v.ncid, v.flags, NC_CHUNKED, fchunk));
    N(nc_def_var(v.ncid, "levels", NC_INT, 1, &v.level, &v.levels));
    N(nc_def_var(v.ncid, "step_id", NC_INT64, 1, &v.time, &v.step_id));
    N(nc_def_var(v.ncid, "names", NC_CHAR, 2, dn, &v.names));

    const char *title = "rfs netcdf4 parallel test";
    N(nc_put_att_text(v.ncid, NC_GLOBAL, "title", strlen(title), title));
    int version = 3;
    N(nc_put_att_int(v.ncid, NC_GLOBAL, "version", NC_INT, 1, &version));
    N(nc_put_att_text(v.ncid, v.temp, "units", 1, "K"));
    float range[2] = {0.0f, 1e6f};
    N(nc_put_att_float(v.ncid, v.temp, "valid_range", NC_FLOAT, 2, range));
    N(nc_put_att_text(v.ncid, v.pressure, "units", 3, "hPa"));
    double scale = 0.01;
    N(nc_put_att_double(v.ncid, v.pressure, "scale_factor", NC_DOUBLE, 1, &scale));
    unsigned char fill = 255;
    N(nc_put_att_ubyte(v.ncid, v.flags, "missing", NC_UBYTE, 1, &fill));
    N(nc_enddef(v.ncid));

    N(nc_var_par_access(v.ncid, v.temp, NC_COLLECTIVE));
    N(nc_var_par_access(v.ncid, v.step_id, NC_COLLECTIVE));
    N(nc_var_par_access(v.ncid, v.names, NC_COLLECTIVE));
    N(nc_var_par_access(v.ncid, v.pressure, NC_INDEPENDENT));
    N(nc_var_par_access(v.ncid, v.flags, NC_INDEPENDENT));
    N(nc_var_par_access(v.ncid, v.levels, NC_INDEPENDENT));

    write_steps(&v, 0, NT);
    write_pressure(&v, 0);

    size_t y0, ny;
    block(NY, rank, &y0, &ny);
    unsigned char fl[NY * NX];
    for (size_t y = 0; y < ny; y++)
        for (int x = 0; x < NX; x++)
            fl[y * NX + x] = flag_value((int)(y0 + y), x);
    size_t fstart[2] = {y0, 0}, fcount[2] = {ny, NX};
    if (ny)
        N(nc_put_vara_uchar(v.ncid, v.flags, fstart, fcount, fl));

    size_t l0, nl;
    block(NLEV, rank, &l0, &nl);
    int lv[NLEV];
    for (size_t l = 0; l < nl; l++)
        lv[l] = level_value((int)(l0 + l));
    if (nl)
        N(nc_put_vara_int(v.ncid, v.levels, &l0, &nl, lv));

    size_t s0, ns;
    block(NST, rank, &s0, &ns);
    char names[NST * NAMELEN];
    for (size_t s = 0; s < ns; s++)
        station_name((int)(s0 + s), names + s * NAMELEN);
    size_t nstart[2] = {s0, 0}, ncount[2] = {ns, NAMELEN};
    N(nc_put_vara_text(v.ncid, v.names, nstart, ncount, names));
    N(nc_close(v.ncid));
}

static void append_file(void)
{
    ids v;
    N(nc_open_par(path, NC_WRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &v.ncid));
    lookup(&v);
    N(nc_redef(v.ncid));
    const char *history = "appended 3 steps";
    N(nc_put_att_text(v.ncid, NC_GLOBAL, "history", strlen(history), history));
    int version = 4;
    N(nc_put_att_int(v.ncid, NC_GLOBAL, "version", NC_INT, 1, &version));
    N(nc_enddef(v.ncid));
    N(nc_var_par_access(v.ncid, v.temp, NC_COLLECTIVE));
    N(nc_var_par_access(v.ncid, v.step_id, NC_COLLECTIVE));
    N(nc_var_par_access(v.ncid, v.pressure, NC_INDEPENDENT));
    write_steps(&v, NT, NT + NT_MORE);
    write_pressure(&v, 1);
    N(nc_close(v.ncid));
}

static void check_text_att(int ncid, int varid, const char *name, const char *want)
{
    size_t len = 0;
    char got[128];
    N(nc_inq_attlen(ncid, varid, name, &len));
    if (len != strlen(want) || len >= sizeof got) {
        bad("attribute %s has %zu characters, expected %zu", name, len, strlen(want));
        return;
    }
    N(nc_get_att_text(ncid, varid, name, got));
    if (memcmp(got, want, len) != 0)
        bad("attribute %s = \"%.*s\", expected \"%s\"", name, (int)len, got, want);
}

static void verify_file(void)
{
    ids v;
    N(nc_open_par(path, NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &v.ncid));
    lookup(&v);
    int format = 0;
    N(nc_inq_format(v.ncid, &format));
    if (format != NC_FORMAT_NETCDF4)
        bad("format %d, expected NC_FORMAT_NETCDF4 (%d)", format, NC_FORMAT_NETCDF4);
    size_t ntime = 0;
    int unlimdim = -1, tdim = -1;
    N(nc_inq_dimid(v.ncid, "time", &tdim));
    N(nc_inq_unlimdim(v.ncid, &unlimdim));
    N(nc_inq_dimlen(v.ncid, tdim, &ntime));
    if (unlimdim != tdim || ntime != NT + NT_MORE)
        bad("time has %zu steps (unlimited dim %d, time %d), expected %d", ntime, unlimdim, tdim,
            NT + NT_MORE);
    check_text_att(v.ncid, NC_GLOBAL, "title", "rfs netcdf4 parallel test");
    check_text_att(v.ncid, NC_GLOBAL, "history", "appended 3 steps");
    check_text_att(v.ncid, v.temp, "units", "K");
    check_text_att(v.ncid, v.pressure, "units", "hPa");
    int version = 0;
    N(nc_get_att_int(v.ncid, NC_GLOBAL, "version", &version));
    if (version != 4)
        bad("version %d, expected 4", version);
    float range[2];
    N(nc_get_att_float(v.ncid, v.temp, "valid_range", range));
    if (range[0] != 0.0f || range[1] != 1e6f)
        bad("valid_range %g %g", range[0], range[1]);
    double scale = 0;
    N(nc_get_att_double(v.ncid, v.pressure, "scale_factor", &scale));
    if (scale != 0.01)
        bad("scale_factor %g", scale);
    unsigned char missing = 0;
    N(nc_get_att_uchar(v.ncid, v.flags, "missing", &missing));
    if (missing != 255)
        bad("flags:missing %u", missing);
    size_t chunks[3] = {0, 0, 0};
    int storage = -1;
    N(nc_inq_var_chunking(v.ncid, v.temp, &storage, chunks));
    if (storage != NC_CHUNKED || chunks[0] != 1 || chunks[1] != 5 || chunks[2] != 7)
        bad("temp storage %d chunks %zu %zu %zu", storage, chunks[0], chunks[1], chunks[2]);

    /* Everything, independently, on every rank. */
    static float temp[(NT + NT_MORE) * NY * NX];
    N(nc_get_var_float(v.ncid, v.temp, temp));
    for (int t = 0; t < NT + NT_MORE; t++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                if (temp[(t * NY + y) * NX + x] != temp_value(t, y, x)) {
                    bad("temp[%d][%d][%d] = %g, expected %g", t, y, x, temp[(t * NY + y) * NX + x],
                        temp_value(t, y, x));
                    t = NT + NT_MORE, y = NY;
                    break;
                }
    static double pr[NY * NX];
    N(nc_get_var_double(v.ncid, v.pressure, pr));
    static unsigned char fl[NY * NX];
    N(nc_get_var_uchar(v.ncid, v.flags, fl));
    for (int y = 0; y < NY; y++)
        for (int x = 0; x < NX; x++) {
            if (pr[y * NX + x] != pressure_value(y, x, 1))
                bad("pressure[%d][%d] = %g, expected %g", y, x, pr[y * NX + x],
                    pressure_value(y, x, 1));
            if (fl[y * NX + x] != flag_value(y, x))
                bad("flags[%d][%d] = %u, expected %u", y, x, fl[y * NX + x], flag_value(y, x));
        }
    int lv[NLEV];
    N(nc_get_var_int(v.ncid, v.levels, lv));
    for (int l = 0; l < NLEV; l++)
        if (lv[l] != level_value(l))
            bad("levels[%d] = %d, expected %d", l, lv[l], level_value(l));
    long long sid[NT + NT_MORE];
    N(nc_get_var_longlong(v.ncid, v.step_id, sid));
    for (int t = 0; t < NT + NT_MORE; t++)
        if (sid[t] != step_value(t))
            bad("step_id[%d] = %lld, expected %lld", t, sid[t], step_value(t));
    char names[NST * NAMELEN], want[NAMELEN];
    N(nc_get_var_text(v.ncid, v.names, names));
    for (int s = 0; s < NST; s++) {
        station_name(s, want);
        if (memcmp(names + s * NAMELEN, want, NAMELEN) != 0)
            bad("names[%d] = \"%.*s\", expected \"%s\"", s, NAMELEN, names + s * NAMELEN, want);
    }

    /* Each rank's rows of temp again, collectively. */
    N(nc_var_par_access(v.ncid, v.temp, NC_COLLECTIVE));
    size_t y0, ny;
    block(NY, rank, &y0, &ny);
    size_t start[3] = {0, y0, 0}, count[3] = {NT + NT_MORE, ny, NX};
    memset(temp, 0, sizeof temp);
    N(nc_get_vara_float(v.ncid, v.temp, start, count, temp));
    for (size_t t = 0; t < NT + NT_MORE; t++)
        for (size_t y = 0; y < ny; y++)
            for (int x = 0; x < NX; x++)
                if (temp[(t * ny + y) * NX + x] != temp_value((int)t, (int)(y0 + y), x)) {
                    bad("collective read of temp[%zu][%zu][%d] differs", t, y0 + y, x);
                    t = NT + NT_MORE, y = ny;
                    break;
                }
    N(nc_close(v.ncid));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 2) {
        if (rank == 0)
            fprintf(stderr, "usage: netcdf4_par FILE\n");
        MPI_Finalize();
        return 2;
    }
    path = argv[1];
    create_file();
    append_file();
    verify_file();
    long total = 0;
    MPI_Allreduce(&nbad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) {
        printf("netcdf4_par: ok %s on %d ranks: 6 variables, %d time steps (%d appended), "
               "netcdf %s\n",
               path, nprocs, NT + NT_MORE, NT_MORE, nc_inq_libvers());
        fflush(stdout);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
