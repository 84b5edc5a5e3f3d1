/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Behaviour the standard leaves open but programs rely on, printed as facts so that
 * tests/e2e/test_mpiio_parity.py can compare the MPI library's own MPI-IO (a local file) with
 * rfs (an rfs: file): reads past end of file (buffer beyond the count untouched, status),
 * error classes of invalid views, the error handler on MPI_FILE_NULL for open failures,
 * overlapping filetypes on read-only files. "FACT" lines must match the reference; "NOTE"
 * lines are recorded only (behaviour where ROMIO and rfs are known to differ). Rank 0 prints;
 * the checks here are only those every correct implementation passes. */
#include "t_common.h"

static const char *cls_name(int rc)
{
    static const struct {
        int cls;
        const char *name;
    } t[] = {
        {MPI_SUCCESS, "SUCCESS"},
        {MPI_ERR_TYPE, "ERR_TYPE"},
        {MPI_ERR_ARG, "ERR_ARG"},
        {MPI_ERR_IO, "ERR_IO"},
        {MPI_ERR_ACCESS, "ERR_ACCESS"},
        {MPI_ERR_NO_SUCH_FILE, "ERR_NO_SUCH_FILE"},
        {MPI_ERR_AMODE, "ERR_AMODE"},
        {MPI_ERR_READ_ONLY, "ERR_READ_ONLY"},
        {MPI_ERR_COUNT, "ERR_COUNT"},
        {MPI_ERR_UNSUPPORTED_DATAREP, "ERR_UNSUPPORTED_DATAREP"},
        {MPI_ERR_UNSUPPORTED_OPERATION, "ERR_UNSUPPORTED_OPERATION"},
        {MPI_ERR_NOT_SAME, "ERR_NOT_SAME"},
        {MPI_ERR_OTHER, "ERR_OTHER"},
        {MPI_ERR_INTERN, "ERR_INTERN"},
        {MPI_ERR_FILE, "ERR_FILE"},
    };
    int c = t_class(rc);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].cls == c)
            return t[i].name;
    static char other[32];
    snprintf(other, sizeof other, "class_%d", c);
    return other;
}

static void hex(char *out, const unsigned char *p, int n)
{
    for (int i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = 0;
}

/* The status of a read as "count(int) count(byte) elements(int)". */
static const char *counts(MPI_Status *st)
{
    static char s[96];
    int ci, cb, ei;
    MPI_Get_count(st, MPI_INT, &ci);
    MPI_Get_count(st, MPI_BYTE, &cb);
    MPI_Get_elements(st, MPI_INT, &ei);
    snprintf(s, sizeof s, "count_int=%d count_byte=%d elements_int=%d", ci, cb, ei);
    return s;
}

static void write_pattern(const char *name, int len)
{
    MPI_File fh;
    MPI_Status st;
    unsigned char b[256];
    for (int i = 0; i < len; i++)
        b[i] = t_pat(i, 0);
    MPI_File_delete(name, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    if (t_rank == 0)
        MPI_OK(MPI_File_write_at(fh, 0, b, len, MPI_BYTE, &st));
    MPI_OK(MPI_File_close(&fh));
}

/* (a) Reads that stop at end of file: what the buffer and the status hold afterwards. */
static void past_eof(const char *name)
{
    write_pattern(name, 10);
    MPI_File fh;
    MPI_Status st;
    unsigned char buf[64];
    char h[200];
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));

    memset(buf, 0xEE, sizeof buf);
    MPI_OK(MPI_File_read_at(fh, 0, buf, 16, MPI_INT, &st));
    hex(h, buf, 64);
    FACT("eof.read_at %s buf=%s", counts(&st), h);
    for (int i = 10; i < 64; i++)
        CHECK(buf[i] == 0xEE, "byte %d past the data was overwritten: %02x", i, buf[i]);

    memset(buf, 0xEE, sizeof buf);
    MPI_OK(MPI_File_read_at(fh, 20, buf, 4, MPI_INT, &st));
    hex(h, buf, 16);
    FACT("eof.read_at_beyond %s buf=%s", counts(&st), h);

    MPI_Offset pos = -1;
    memset(buf, 0xEE, sizeof buf);
    MPI_OK(MPI_File_seek(fh, 4, MPI_SEEK_SET));
    MPI_OK(MPI_File_read(fh, buf, 4, MPI_INT, &st));
    MPI_OK(MPI_File_get_position(fh, &pos));
    hex(h, buf, 16);
    FACT("eof.read %s position=%lld buf=%s", counts(&st), (long long)pos, h);

    /* An int etype: the pointer is in etypes, 10 bytes hold 2.5 of them. */
    MPI_OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    memset(buf, 0xEE, sizeof buf);
    MPI_OK(MPI_File_read(fh, buf, 8, MPI_INT, &st));
    MPI_OK(MPI_File_get_position(fh, &pos));
    hex(h, buf, 32);
    FACT("eof.read_int_etype %s position=%lld buf=%s", counts(&st), (long long)pos, h);

    memset(buf, 0xEE, sizeof buf);
    MPI_Request rq;
    MPI_OK(MPI_File_iread_at(fh, 1, buf, 4, MPI_INT, &rq));
    MPI_OK(MPI_Wait(&rq, &st));
    hex(h, buf, 16);
    FACT("eof.iread_at %s buf=%s", counts(&st), h);

    /* Collective: ROMIO is known to report the requested count (docs/mpiio.md). */
    memset(buf, 0xEE, sizeof buf);
    MPI_OK(MPI_File_read_at_all(fh, 0, buf, 8, MPI_INT, &st));
    hex(h, buf, 32);
    NOTE("eof.read_at_all %s buf=%s", counts(&st), h);
    MPI_OK(MPI_File_close(&fh));
}

/* (b) The error class of set_view with an invalid view. */
static void bad_views(const char *name)
{
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Datatype three, uncommitted, nonmono, overlap, negdisp, ovl_contig, rint;
    MPI_Type_contiguous(3, MPI_BYTE, &three);
    MPI_Type_commit(&three);
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);
    int bl[2] = {4, 4};
    MPI_Aint d_nonmono[2] = {8, 0}, d_overlap[2] = {0, 2}, d_neg[2] = {-4, 4};
    MPI_Type_create_hindexed(2, bl, d_nonmono, MPI_BYTE, &nonmono);
    MPI_Type_commit(&nonmono);
    MPI_Type_create_hindexed(2, bl, d_overlap, MPI_BYTE, &overlap);
    MPI_Type_commit(&overlap);
    MPI_Type_create_hindexed(2, bl, d_neg, MPI_BYTE, &negdisp);
    MPI_Type_commit(&negdisp);
    MPI_Type_create_resized(MPI_INT, 0, 2, &rint);
    MPI_Type_contiguous(2, rint, &ovl_contig);
    MPI_Type_commit(&ovl_contig);

    FACT("view.not_multiple %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_INT, three, "native", MPI_INFO_NULL)));
    FACT("view.negative_disp %s",
         cls_name(MPI_File_set_view(fh, -8, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL)));
    FACT("view.null_etype %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_DATATYPE_NULL, MPI_BYTE, "native", MPI_INFO_NULL)));
    FACT("view.null_filetype %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_DATATYPE_NULL, "native", MPI_INFO_NULL)));
    FACT("view.bad_datarep %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "no-such-rep", MPI_INFO_NULL)));
    FACT("view.uncommitted %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_INT, uncommitted, "native", MPI_INFO_NULL)));
    NOTE("view.rdwr_nonmonotonic %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_BYTE, nonmono, "native", MPI_INFO_NULL)));
    NOTE("view.rdwr_overlap %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_BYTE, overlap, "native", MPI_INFO_NULL)));
    NOTE("view.rdwr_overlap_contig %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_INT, ovl_contig, "native", MPI_INFO_NULL)));
    NOTE("view.negative_type_disp %s",
         cls_name(MPI_File_set_view(fh, 0, MPI_BYTE, negdisp, "native", MPI_INFO_NULL)));
    /* After all that, a valid view still works. */
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_OK(MPI_File_close(&fh));
    MPI_Type_free(&three);
    MPI_Type_free(&uncommitted);
    MPI_Type_free(&nonmono);
    MPI_Type_free(&overlap);
    MPI_Type_free(&negdisp);
    MPI_Type_free(&rint);
    MPI_Type_free(&ovl_contig);
}

static int eh_calls, eh_class, eh_null;

static void on_error(MPI_File *fh, int *code, ...)
{
    eh_calls++;
    eh_null = *fh == MPI_FILE_NULL;
    MPI_Error_class(*code, &eh_class);
}

/* (c) Open failures go to the handler on MPI_FILE_NULL; open returns the error code. */
static void null_handler(const char *name)
{
    char missing[4200];
    snprintf(missing, sizeof missing, "%s.missing", name);
    MPI_File fh = MPI_FILE_NULL;
    MPI_Errhandler cur, eh;
    MPI_OK(MPI_File_get_errhandler(MPI_FILE_NULL, &cur));
    FACT("errh.default_is_return %d", cur == MPI_ERRORS_RETURN);
    int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    FACT("errh.default_open %s fh_null=%d", cls_name(rc), fh == MPI_FILE_NULL);

    MPI_OK(MPI_File_create_errhandler(on_error, &eh));
    MPI_OK(MPI_File_set_errhandler(MPI_FILE_NULL, eh));
    MPI_OK(MPI_File_get_errhandler(MPI_FILE_NULL, &cur));
    FACT("errh.get_returns_set %d", cur == eh);
    rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    FACT("errh.user_open %s calls=%d class=%s on_file_null=%d", cls_name(rc), eh_calls,
         cls_name(eh_class), eh_null);
    CHECK(eh_calls == 1, "the handler on MPI_FILE_NULL was called %d times", eh_calls);
    rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL,
                       &fh);
    FACT("errh.user_amode %s calls=%d class=%s", cls_name(rc), eh_calls, cls_name(eh_class));
    /* A file opened now inherits the handler. */
    eh_calls = 0;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_OK(MPI_File_get_errhandler(fh, &cur));
    FACT("errh.inherited %d", cur == eh);
    char b[4] = {0};
    rc = MPI_File_write_at(fh, 0, b, 4, MPI_BYTE, MPI_STATUS_IGNORE);
    FACT("errh.inherited_call %s calls=%d class=%s on_file_null=%d", cls_name(rc), eh_calls,
         cls_name(eh_class), eh_null);
    MPI_OK(MPI_File_close(&fh));
    MPI_OK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    MPI_Errhandler_free(&eh);
}

/* (d) Overlapping filetypes are fine for reading; decreasing displacements are not (ROMIO
 * refuses them, and then reads through whatever view it was left with: notes only). */
static void overlapping(const char *name, int rfs_only)
{
    write_pattern(name, 64);
    MPI_File fh;
    MPI_Status st;
    unsigned char buf[64];
    char h[200];
    int bl[2] = {4, 4};
    MPI_Aint d_overlap[2] = {0, 2}, d_nonmono[2] = {8, 0};
    MPI_Datatype t1, t2, ovl, nonmono, rint, ovl_contig;
    MPI_Type_create_hindexed(2, bl, d_overlap, MPI_BYTE, &t1);
    MPI_Type_create_resized(t1, 0, 8, &ovl);
    MPI_Type_commit(&ovl);
    MPI_Type_create_hindexed(2, bl, d_nonmono, MPI_BYTE, &t2);
    MPI_Type_create_resized(t2, 0, 16, &nonmono);
    MPI_Type_commit(&nonmono);
    MPI_Type_create_resized(MPI_INT, 0, 2, &rint);
    MPI_Type_contiguous(3, rint, &ovl_contig);
    MPI_Type_commit(&ovl_contig);
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));

    int rc = MPI_File_set_view(fh, 0, MPI_BYTE, ovl, "native", MPI_INFO_NULL);
    FACT("ovl.hindexed set_view=%s", cls_name(rc));
    memset(buf, 0xEE, sizeof buf);
    rc = MPI_File_read_at(fh, 0, buf, 24, MPI_BYTE, &st);
    hex(h, buf, 32);
    FACT("ovl.hindexed read=%s %s buf=%s", cls_name(rc), rc ? "" : counts(&st), h);
    memset(buf, 0xEE, sizeof buf);
    rc = MPI_File_read_at(fh, 60, buf, 24, MPI_BYTE, &st); /* stops at end of file */
    hex(h, buf, 32);
    NOTE("ovl.hindexed_eof read=%s %s buf=%s", cls_name(rc), rc ? "" : counts(&st), h);

    /* Both refuse it. ROMIO keeps part of the refused view and reads through it out of
     * bounds of its own buffer (AddressSanitizer), so nothing is read after a refusal. */
    int view_ok =
        (rc = MPI_File_set_view(fh, 4, MPI_BYTE, nonmono, "native", MPI_INFO_NULL)) == MPI_SUCCESS;
    FACT("ovl.nonmonotonic set_view=%s", cls_name(rc));
    if (view_ok) {
        memset(buf, 0xEE, sizeof buf);
        rc = MPI_File_read_at(fh, 2, buf, 20, MPI_BYTE, &st);
        hex(h, buf, 32);
        NOTE("ovl.nonmonotonic read=%s %s buf=%s", cls_name(rc), rc ? "" : counts(&st), h);
    }

    rc = MPI_File_set_view(fh, 0, MPI_INT, ovl_contig, "native", MPI_INFO_NULL);
    FACT("ovl.contig set_view=%s", cls_name(rc));
    memset(buf, 0xEE, sizeof buf);
    rc = MPI_File_read_at(fh, 0, buf, 6, MPI_INT, &st);
    hex(h, buf, 32);
    FACT("ovl.contig read=%s %s buf=%s", cls_name(rc), rc ? "" : counts(&st), h);

    /* Collective reads through the overlapping view: every rank its own tile (Open MPI's
     * romio321 refuses the view, so no check here beyond the comparison). */
    rc = MPI_File_set_view(fh, 0, MPI_BYTE, ovl, "native", MPI_INFO_NULL);
    memset(buf, 0xEE, sizeof buf);
    rc = MPI_File_read_at_all(fh, 8 * t_rank, buf, 8, MPI_BYTE, &st);
    hex(h, buf, 16);
    FACT("ovl.read_all read=%s buf=%s", cls_name(rc), h);
    /* A run inside the previous one: the access's last run does not end it. */
    int bl_nest[2] = {8, 2};
    MPI_Aint d_nest[2] = {0, 2};
    MPI_Datatype t3, nest;
    MPI_Type_create_hindexed(2, bl_nest, d_nest, MPI_BYTE, &t3);
    MPI_Type_create_resized(t3, 0, 6, &nest);
    MPI_Type_commit(&nest);
    rc = MPI_File_set_view(fh, 0, MPI_BYTE, nest, "native", MPI_INFO_NULL);
    FACT("ovl.nested set_view=%s", cls_name(rc));
    memset(buf, 0xEE, sizeof buf);
    rc = MPI_File_read_at(fh, 10, buf, 20, MPI_BYTE, &st);
    hex(h, buf, 24);
    FACT("ovl.nested_read read=%s buf=%s", cls_name(rc), h);
    if (rfs_only) {
        /* MPICH's ROMIO aborts in this collective read (ADIOI_Calc_aggregator), so it is no
         * reference: the bytes are checked against the filetype's map instead. */
        memset(buf, 0xEE, sizeof buf);
        int k0 = t_size - 1 - t_rank;
        rc = MPI_File_read_at_all(fh, 10 * k0, buf, 20, MPI_BYTE, &st);
        unsigned char want[20];
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 10; i++)
                want[10 * k + i] = t_pat(6 * (k0 + k) + (i < 8 ? i : i - 6), 0);
        CHECK(rc == MPI_SUCCESS && !memcmp(buf, want, 20) && buf[20] == 0xEE,
              "collective read through a nested overlapping filetype: %s", t_errstr(rc));
    }
    MPI_Type_free(&t3);
    MPI_Type_free(&nest);

    MPI_OK(MPI_File_close(&fh));
    MPI_Type_free(&t1);
    MPI_Type_free(&t2);
    MPI_Type_free(&ovl);
    MPI_Type_free(&nonmono);
    MPI_Type_free(&rint);
    MPI_Type_free(&ovl_contig);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *name = argv[1];
    past_eof(name);
    bad_views(name);
    null_handler(name);
    /* --rfs-only: checks the MPI library's own MPI-IO cannot run (see overlapping()). */
    overlapping(name, argc > 2 && !strcmp(argv[2], "--rfs-only"));
    return t_finish();
}
