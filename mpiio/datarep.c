/* Data representations: the names set_view accepts, the user representations registered with
 * MPI_Register_datarep (recorded here, still forwarded to the MPI library so its own files know
 * them too), and the conversion of memory data to and from a representation's byte stream.
 *
 * "native" and "internal" need no conversion (the standard lets "internal" be native). Every
 * other representation is converted on the client, in the application thread: "external32"
 * with MPI_Pack_external/MPI_Unpack_external, user ones with their conversion functions.
 * The rest of the layer keeps counting in native bytes, so a representation is accepted only
 * for types whose predefined members have the same size in the file as in memory (all of
 * external32's on LP64 Linux except the ones the check names); others are refused with
 * MPI_ERR_UNSUPPORTED_DATAREP naming the type. */
#include "mpiio/mpiio_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct mp_datarep {
    char name[MPI_MAX_DATAREP_STRING];
    int external32;
    MPI_Datarep_conversion_function *read_fn, *write_fn;
    MPI_Datarep_extent_function *extent_fn;
    void *extra;
    mp_datarep *next;
};

static mp_datarep external32 = { .name = "external32", .external32 = 1 };
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
    return mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP, "rfs: unknown data representation \"%s\" "
                         "(native, internal, external32 or one registered with "
                         "MPI_Register_datarep)", name);
}

/* Size of one predefined type in the representation. */
static int file_size(const mp_datarep *rep, MPI_Datatype t, MPI_Aint *sz)
{
    if (rep->external32)
        return PMPI_Pack_external_size("external32", 1, t, sz);
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

/* The first predefined type inside t whose size differs in the representation, or
 * MPI_DATATYPE_NULL when all agree; *bad_rc gets an error of the representation's functions. */
static MPI_Datatype first_mismatch(const mp_datarep *rep, MPI_Datatype t, int depth, int *bad_rc,
                                   MPI_Aint *fsz, int *msz)
{
    int ni, na, nd, comb;
    if (depth > 32 || PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return t;
    if (comb == MPI_COMBINER_NAMED) {
        PMPI_Type_size(t, msz);
        if (*msz == 0)
            return MPI_DATATYPE_NULL;  /* MPI_LB/MPI_UB markers hold no data */
        int rc = file_size(rep, t, fsz);
        if (rc != MPI_SUCCESS) {
            *bad_rc = rc;
            return t;
        }
        return *fsz == *msz ? MPI_DATATYPE_NULL : t;
    }
    int *ints = malloc(sizeof *ints * (size_t)(ni ? ni : 1));
    MPI_Aint *addrs = malloc(sizeof *addrs * (size_t)(na ? na : 1));
    MPI_Datatype *types = malloc(sizeof *types * (size_t)(nd ? nd : 1));
    MPI_Datatype bad = t;
    if (ints && addrs && types &&
        PMPI_Type_get_contents(t, ni, na, nd, ints, addrs, types) == MPI_SUCCESS) {
        bad = MPI_DATATYPE_NULL;
        for (int i = 0; i < nd; i++) {
            if (bad == MPI_DATATYPE_NULL)
                bad = first_mismatch(rep, types[i], depth + 1, bad_rc, fsz, msz);
            int cni, cna, cnd, ccomb;
            PMPI_Type_get_envelope(types[i], &cni, &cna, &cnd, &ccomb);
            if (ccomb != MPI_COMBINER_NAMED && types[i] != bad)
                PMPI_Type_free(&types[i]);
        }
    }
    free(ints);
    free(addrs);
    free(types);
    return bad;
}

int mp_datarep_check(const mp_datarep *rep, MPI_Datatype type, const char *fname)
{
    if (!rep || type == MPI_DATATYPE_NULL)
        return MPI_SUCCESS;
    int bad_rc = MPI_SUCCESS, msz = 0;
    MPI_Aint fsz = 0;
    MPI_Datatype bad = first_mismatch(rep, type, 0, &bad_rc, &fsz, &msz);
    if (bad == MPI_DATATYPE_NULL)
        return MPI_SUCCESS;
    char tn[MPI_MAX_OBJECT_NAME + 16];
    type_name(bad, tn);
    /* first_mismatch keeps a derived child it stopped at alive for the name; free it now. */
    int ni, na, nd, comb;
    if (bad != type && PMPI_Type_get_envelope(bad, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
        comb != MPI_COMBINER_NAMED)
        PMPI_Type_free(&bad);
    if (bad_rc != MPI_SUCCESS)
        return mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP, "rfs: %s: data representation \"%s\" "
                             "cannot size type %s", fname, rep->name, tn);
    return mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP,
                         "rfs: %s: type %s has %lld bytes in data representation \"%s\" and %d "
                         "in memory; rfs supports only representations that keep the size of "
                         "every type used", fname, tn, (long long)fsz, rep->name, msz);
}

int mp_datarep_extent(const mp_datarep *rep, MPI_Datatype type, MPI_Aint *extent)
{
    MPI_Aint lb;
    int rc = PMPI_Type_get_extent(type, &lb, extent);
    if (rc != MPI_SUCCESS || !rep)
        return rc;
    int ni, na, nd, comb;
    PMPI_Type_get_envelope(type, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED)
        return file_size(rep, type, extent);
    /* A derived type of same-sized members lies in the file as in memory. */
    return mp_datarep_check(rep, type, "get_type_extent");
}

/* Predefined data items in `bytes` bytes of whole elements of type (user conversions count
 * in those). */
static int items_in(MPI_Datatype type, int64_t bytes, int *n)
{
    MPI_Status st;
    MPI_Count c = 0;
    memset(&st, 0, sizeof st);
    PMPI_Status_set_elements_x(&st, MPI_BYTE, (MPI_Count)bytes);
    if (PMPI_Get_elements_x(&st, type, &c) != MPI_SUCCESS || c < 0 || c > INT_MAX)
        return MPI_ERR_COUNT;
    *n = (int)c;
    return MPI_SUCCESS;
}

int mp_datarep_to_file(const mp_datarep *rep, const void *user, MPI_Count count,
                       MPI_Datatype type, void *out, int64_t len)
{
    if (count > INT_MAX)
        return MPI_ERR_COUNT;
    if (rep->external32) {
        MPI_Aint pos = 0;
        return PMPI_Pack_external("external32", user, (int)count, type, out, (MPI_Aint)len, &pos);
    }
    if (!rep->write_fn) {  /* MPI_CONVERSION_FN_NULL: the bytes as they are in memory */
        int pos = 0;
        return len > INT_MAX ? MPI_ERR_COUNT
                             : PMPI_Pack(user, (int)count, type, out, (int)len, &pos, MPI_COMM_SELF);
    }
    int n;
    int rc = items_in(type, len, &n);
    return rc != MPI_SUCCESS ? rc : rep->write_fn((void *)user, type, n, out, 0, rep->extra);
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
    if (!rep->read_fn) {
        int pos = 0;
        return len > INT_MAX ? MPI_ERR_COUNT
                             : PMPI_Unpack(in, (int)len, &pos, user, (int)count, type, MPI_COMM_SELF);
    }
    int n;
    int rc = items_in(type, len, &n);
    return rc != MPI_SUCCESS ? rc : rep->read_fn(user, type, n, (void *)in, 0, rep->extra);
}

int MPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_fn,
                         MPI_Datarep_conversion_function *write_fn,
                         MPI_Datarep_extent_function *extent_fn, void *extra)
{
    /* Forwarded so the MPI library's own files know the name too. The arguments are checked
     * here; a name the library already knows stands as its refusal, any other refusal means
     * the library cannot convert (MPICH 4.0: MPI_ERR_CONVERSION for conversion functions;
     * Open MPI 4.1: MPI_ERR_CONVERSION, or MPI_ERR_OTHER for MPI_CONVERSION_FN_NULL), which
     * rfs files still can, so it is not passed on. */
    if (!datarep || !extent_fn || strlen(datarep) >= MPI_MAX_DATAREP_STRING)
        return mp_raise_null(mp_error_code(MPI_ERR_ARG, "rfs: MPI_Register_datarep: no name, "
                                           "a name too long, or no extent function"));
    if (!strcmp(datarep, "native") || !strcmp(datarep, "internal") ||
        !strcmp(datarep, "external32") || find_registered(datarep))
        return mp_raise_null(mp_error_code(MPI_ERR_DUP_DATAREP, "rfs: MPI_Register_datarep: "
                                           "\"%s\" is already defined", datarep));
    int rc = MP_REAL(PMPI_Register_datarep)(datarep, read_fn, write_fn, extent_fn, extra);
    int cls = rc;
    if (rc != MPI_SUCCESS)
        PMPI_Error_class(rc, &cls);
    if (rc != MPI_SUCCESS && cls == MPI_ERR_DUP_DATAREP)
        return rc;
    mp_datarep *d = calloc(1, sizeof *d);
    if (!d)
        return mp_error_code(MPI_ERR_NO_MEM, "rfs: out of memory registering \"%s\"", datarep);
    strcpy(d->name, datarep);
    d->read_fn = read_fn;
    d->write_fn = write_fn;
    d->extent_fn = extent_fn;
    d->extra = extra;
    pthread_mutex_lock(&reg_mu);
    d->next = registered;
    registered = d;
    pthread_mutex_unlock(&reg_mu);
    return MPI_SUCCESS;
}
MP_ALIAS(MPI_Register_datarep, (const char *datarep, MPI_Datarep_conversion_function *read_fn,
                                MPI_Datarep_conversion_function *write_fn,
                                MPI_Datarep_extent_function *extent_fn, void *extra))
