/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The MPI_Wait/Test family, MPI_Request_free, MPI_Request_get_status and MPI_Cancel (and their
 * PMPI_ names). Generalized requests have no progress hook in standard MPI, so before handing
 * an array to the MPI library we complete (MPI_Grequest_complete, from this thread) every rfs
 * request whose I/O is done. Blocking forms never block inside MPI on an rfs request whose I/O
 * is still running: Wait/Waitall first wait for that I/O; Waitany/Waitsome poll (Test* plus a
 * short wait for the I/O threads) while rfs I/O is pending. Arrays may mix rfs and other
 * requests. Failed rfs operations are reported here through the file's error handler. Every
 * call here also completes the freed (MPI_Request_free'd) rfs requests whose I/O is done. */
#include "mpiio/nonblock.h"

#include <stdlib.h>

typedef struct outcome {
    int code;
    mp_file *f;
} outcome;

static int report(const outcome *o)
{
    if (o->code == MPI_SUCCESS)
        return MPI_SUCCESS;
    /* The file may be gone (closed after the request finished): then just the code. */
    if (mp_file_of((MPI_File)o->f))
        return mp_raise(o->f, o->code);
    return o->code;
}

/* Outcomes of the rfs requests of reqs[] that are complete now (others: success). Returns NULL
 * (meaning "no rfs request here") when none is ours. */
static outcome *outcomes(int n, MPI_Request reqs[])
{
    outcome *o = NULL;
    for (int i = 0; i < n; i++) {
        mp_req *r = mp_req_find(reqs[i]);
        if (!r)
            continue;
        if (!o) {
            o = calloc((size_t)n, sizeof *o);
            if (!o)
                return NULL;
        }
        if (mp_req_progress(r)) {
            o[i].code = r->code;
            o[i].f = r->f;
        }
    }
    return o;
}

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    mp_nb_reap();
    mp_req *r = mp_req_find(*req);
    if (!r)
        return MP_REAL(PMPI_Wait)(req, st);
    mp_req_finish(r);
    outcome o = {r->code, r->f};
    int rc = MP_REAL(PMPI_Wait)(req, st);
    if (rc == MPI_SUCCESS && o.code != MPI_SUCCESS) {
        if (st != MPI_STATUS_IGNORE)
            st->MPI_ERROR = o.code;
        rc = report(&o);
    }
    return rc;
}
MP_ALIAS(MPI_Wait, (MPI_Request * req, MPI_Status *st))

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    mp_nb_reap();
    mp_req *r = mp_req_find(*req);
    if (!r)
        return MP_REAL(PMPI_Test)(req, flag, st);
    outcome o = {MPI_SUCCESS, NULL};
    if (mp_req_progress(r))
        o = (outcome){r->code, r->f};
    int rc = MP_REAL(PMPI_Test)(req, flag, st);
    if (rc == MPI_SUCCESS && *flag && o.code != MPI_SUCCESS) {
        if (st != MPI_STATUS_IGNORE)
            st->MPI_ERROR = o.code;
        rc = report(&o);
    }
    return rc;
}
MP_ALIAS(MPI_Test, (MPI_Request * req, int *flag, MPI_Status *st))

/* After an all/some call: put our errors into the statuses. idx: which entries completed (NULL:
 * all n). Returns the call's new return code. */
static int merge_errors(int rc, int n, const int *idx, const outcome *o, MPI_Status sts[])
{
    int any = 0, first = MPI_SUCCESS;
    for (int k = 0; k < n; k++) {
        int i = idx ? idx[k] : k;
        if (o[i].code != MPI_SUCCESS) {
            any = 1;
            if (first == MPI_SUCCESS)
                first = o[i].code;
            report(&o[i]);
        }
    }
    if (!any || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
        return rc;
    if (sts == MPI_STATUSES_IGNORE)
        return first;
    for (int k = 0; k < n; k++) {
        int i = idx ? idx[k] : k;
        MPI_Status *s = &sts[idx ? k : i];
        if (o[i].code != MPI_SUCCESS)
            s->MPI_ERROR = o[i].code;
        else if (rc == MPI_SUCCESS)
            s->MPI_ERROR = MPI_SUCCESS;
    }
    return MPI_ERR_IN_STATUS;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    mp_nb_reap();
    int mine = 0;
    for (int i = 0; i < n; i++) {
        mp_req *r = mp_req_find(reqs[i]);
        if (r) {
            mp_req_finish(r);
            mine = 1;
        }
    }
    if (!mine)
        return MP_REAL(PMPI_Waitall)(n, reqs, sts);
    outcome *o = outcomes(n, reqs);
    int rc = MP_REAL(PMPI_Waitall)(n, reqs, sts);
    if (o)
        rc = merge_errors(rc, n, NULL, o, sts);
    free(o);
    return rc;
}
MP_ALIAS(MPI_Waitall, (int n, MPI_Request reqs[], MPI_Status sts[]))

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    mp_nb_reap();
    outcome *o = outcomes(n, reqs);
    int rc = MP_REAL(PMPI_Testall)(n, reqs, flag, sts);
    if (o && *flag)
        rc = merge_errors(rc, n, NULL, o, sts);
    free(o);
    return rc;
}
MP_ALIAS(MPI_Testall, (int n, MPI_Request reqs[], int *flag, MPI_Status sts[]))

int MPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag, MPI_Status *st)
{
    mp_nb_reap();
    outcome *o = outcomes(n, reqs);
    int rc = MP_REAL(PMPI_Testany)(n, reqs, idx, flag, st);
    if (o && rc == MPI_SUCCESS && *flag && *idx != MPI_UNDEFINED && o[*idx].code != MPI_SUCCESS) {
        if (st != MPI_STATUS_IGNORE)
            st->MPI_ERROR = o[*idx].code;
        rc = report(&o[*idx]);
    }
    free(o);
    return rc;
}
MP_ALIAS(MPI_Testany, (int n, MPI_Request reqs[], int *idx, int *flag, MPI_Status *st))

int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *st)
{
    mp_nb_reap();
    for (;;) {
        /* Complete what is done; while rfs I/O is still running, MPI must not block on it. */
        int pending = mp_reqs_progress(n, reqs);
        if (!pending) {
            outcome *o = outcomes(n, reqs);
            int rc = MP_REAL(PMPI_Waitany)(n, reqs, idx, st);
            if (o && rc == MPI_SUCCESS && *idx != MPI_UNDEFINED && o[*idx].code != MPI_SUCCESS) {
                if (st != MPI_STATUS_IGNORE)
                    st->MPI_ERROR = o[*idx].code;
                rc = report(&o[*idx]);
            }
            free(o);
            return rc;
        }
        int flag = 0;
        int rc = MPI_Testany(n, reqs, idx, &flag, st);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        mp_req_wait_any_event();
    }
}
MP_ALIAS(MPI_Waitany, (int n, MPI_Request reqs[], int *idx, MPI_Status *st))

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[])
{
    mp_nb_reap();
    outcome *o = outcomes(n, reqs);
    int rc = MP_REAL(PMPI_Testsome)(n, reqs, outcount, idx, sts);
    if (o && *outcount != MPI_UNDEFINED && *outcount > 0)
        rc = merge_errors(rc, *outcount, idx, o, sts);
    free(o);
    return rc;
}
MP_ALIAS(MPI_Testsome, (int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[]))

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[])
{
    mp_nb_reap();
    for (;;) {
        int pending = mp_reqs_progress(n, reqs);
        if (!pending) {
            outcome *o = outcomes(n, reqs);
            int rc = MP_REAL(PMPI_Waitsome)(n, reqs, outcount, idx, sts);
            if (o && *outcount != MPI_UNDEFINED && *outcount > 0)
                rc = merge_errors(rc, *outcount, idx, o, sts);
            free(o);
            return rc;
        }
        int rc = MPI_Testsome(n, reqs, outcount, idx, sts);
        if (rc != MPI_SUCCESS || *outcount == MPI_UNDEFINED || *outcount > 0)
            return rc;
        mp_req_wait_any_event();
    }
}
MP_ALIAS(MPI_Waitsome, (int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[]))

int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *st)
{
    mp_nb_reap();
    mp_req *r = mp_req_find(req);
    if (r)
        mp_req_progress(r);
    return MP_REAL(PMPI_Request_get_status)(req, flag, st);
}
MP_ALIAS(MPI_Request_get_status, (MPI_Request req, int *flag, MPI_Status *st))

int MPI_Request_free(MPI_Request *req)
{
    /* Returns at once: MPI frees a generalized request when it is both freed and completed
     * (whichever comes last), so the I/O goes on in the background and the request is completed
     * by a later reap (any Wait/Test, a new nonblocking operation, close or sync of the file). */
    mp_nb_reap();
    mp_req *r = mp_req_find(*req);
    if (r)
        mp_req_detach(r); /* completes it now if its I/O is done; never blocks */
    return MP_REAL(PMPI_Request_free)(req);
}
MP_ALIAS(MPI_Request_free, (MPI_Request * req))

int MPI_Cancel(MPI_Request *req)
{
    /* rfs I/O cannot be taken back once sent: cancel_fn leaves it to complete normally. */
    mp_req *r = mp_req_find(*req);
    if (r)
        mp_req_progress(r);
    return MP_REAL(PMPI_Cancel)(req);
}
MP_ALIAS(MPI_Cancel, (MPI_Request * req))
