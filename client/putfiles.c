/* Whole small files in one request each (WRITE_FILE), many in flight on one connection: a
 * directory of thousands of small files is bound by the link's rate and the server's disk,
 * not by round trips (an open, write, sync, rename and close per file, one after another,
 * cost seven round trips each). */
#include "client/client.h"

#include "common/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In flight at once: enough to cover a long link's round trip with small files, bounded in
 * bytes so the server's per-connection budget (64 MiB) is not the one refusing work. */
#define WF_WINDOW 64
#define WF_WINDOW_BYTES ((size_t)32 << 20)
/* Room in a frame for the fixed fields and a path of the longest length. */
#define WF_OVERHEAD (RFS_HDR_SIZE + 10 + 4096)

size_t rfs_write_file_max(const char *name, const rfs_options *opts)
{
    (void)name;
    (void)opts;
    /* What every server accepts: the default frame (a client may negotiate more). */
    return RFS_FRAME_DEFAULT - WF_OVERHEAD;
}

typedef struct slot {
    rfs_call call;
    rfs_req req;
    size_t item;
    int busy;
} slot;

static void finish(rfs_conn *c, slot *s, rfs_write_item *items, const char *server,
                   int *first_rc, char *first_msg, size_t msg_cap)
{
    char label[RFS_CLIENT_LABEL_MAX + 8];
    snprintf(label, sizeof label, "rfs:%s:%s", server, items[s->item].path);
    int rc = rfs_call_result(c, &s->call, rfs_conn_wait(c, &s->call), label);
    items[s->item].result = rc;
    if (rc && !*first_rc) {
        *first_rc = rc;
        snprintf(first_msg, msg_cap, "%s", rfs_last_error());
    }
    rfs_call_destroy(&s->call);
    s->busy = 0;
}

int rfs_write_files(const char *server_name, rfs_write_item *items, size_t n, unsigned flags,
                    const rfs_options *opts)
{
    if (!server_name || (n && !items))
        return rfs_fail(RFS_E_INVAL, "rfs_write_files: NULL argument");
    if (flags & ~(RFS_WRITE_EXCL | RFS_WRITE_SYNC))
        return rfs_fail(RFS_E_INVAL, "rfs_write_files: unknown flags 0x%x", flags);
    rfs_name name;
    int rc = rfs_parse_name(server_name, &name);
    if (rc)
        return rc;
    char label[RFS_CLIENT_LABEL_MAX], server[300];
    rfs_name_label(&name, label, sizeof label);
    snprintf(server, sizeof server, strchr(name.host, ':') ? "[%s]:%u" : "%s:%u", name.host,
             (unsigned)name.port);
    rfs_copts o;
    if ((rc = rfs_copts_resolve(opts, label, &o)))
        return rc;
    rfs_conn *c;
    rc = rfs_pool_get_retry(&name, &o, 1, &c, label);
    if (rc) {
        explicit_bzero(o.token, sizeof o.token);
        return rc;
    }
    size_t max = rfs_conn_max_frame(c) > WF_OVERHEAD ? rfs_conn_max_frame(c) - WF_OVERHEAD : 0;
    uint32_t wf = (flags & RFS_WRITE_EXCL ? RFS_WF_EXCL : 0) | (flags & RFS_WRITE_SYNC ? RFS_WF_SYNC : 0);
    slot *slots = calloc(WF_WINDOW, sizeof *slots);
    if (!slots) {
        rfs_pool_put(c);
        explicit_bzero(o.token, sizeof o.token);
        return rfs_fail(RFS_E_NOMEM, "rfs_write_files: out of memory");
    }
    int first_rc = 0;
    char first_msg[1024] = "";
    size_t inflight_bytes = 0, next = 0, oldest = 0, active = 0;
    for (size_t i = 0; i < n; i++)
        items[i].result = RFS_E_IO;  /* until its reply says otherwise */
    while (next < n || active) {
        /* Start while the window has room (a free slot, and bytes for this item). */
        while (next < n && active < WF_WINDOW &&
               (active == 0 || inflight_bytes + items[next].len <= WF_WINDOW_BYTES)) {
            rfs_write_item *it = &items[next];
            size_t plen = it->path ? strlen(it->path) : 0;
            if (!it->path || it->path[0] != '/' || plen > 4095 || it->len > max ||
                (it->len && !it->data)) {
                it->result = rfs_fail(it->len > max ? RFS_E_TOOBIG : RFS_E_INVAL,
                                      "rfs:%s:%s: %s", server, it->path ? it->path : "(null)",
                                      it->len > max ? "too big for one request: write it with "
                                      "rfs_open" : "needs an absolute path and its data");
                if (!first_rc) {
                    first_rc = it->result;
                    snprintf(first_msg, sizeof first_msg, "%s", rfs_last_error());
                }
                next++;
                continue;
            }
            slot *s = &slots[(oldest + active) % WF_WINDOW];
            memset(&s->req, 0, sizeof s->req);
            s->req.op = RFS_OP_WRITE_FILE;
            s->req.u.write_file.path = (rfs_wpath){it->path, (uint16_t)plen};
            s->req.u.write_file.flags = wf;
            s->req.u.write_file.mode = it->mode & 07777;
            s->req.data = it->data;
            s->req.data_len = (uint32_t)it->len;
            rfs_call_init(&s->call);
            s->item = next;
            rc = rfs_conn_start(c, &s->call, &s->req, NULL, o.io_timeout_ms);
            if (rc) {
                it->result = rc;
                if (!first_rc) {
                    first_rc = rc;
                    snprintf(first_msg, sizeof first_msg, "rfs:%s:%s: %s", server, it->path,
                             rfs_last_error());
                }
                rfs_call_destroy(&s->call);
                next++;
                if (rfs_conn_is_dead(c))
                    break;
                continue;
            }
            s->busy = 1;
            inflight_bytes += it->len;
            active++;
            next++;
        }
        if (!active)
            break;
        /* Replies come in order of completion, not of sending; waiting for the oldest keeps
         * the window simple and costs nothing when the server answers in order. */
        slot *s = &slots[oldest];
        inflight_bytes -= items[s->item].len;
        finish(c, s, items, server, &first_rc, first_msg, sizeof first_msg);
        oldest = (oldest + 1) % WF_WINDOW;
        active--;
        if (rfs_conn_is_dead(c) && next < n) {
            /* The rest were never sent: each says so. */
            for (; next < n; next++)
                items[next].result = RFS_E_CONN;
            if (!first_rc) {
                first_rc = RFS_E_CONN;
                snprintf(first_msg, sizeof first_msg, "%s: connection lost", label);
            }
        }
    }
    for (; next < n; next++)  /* left unsent when the connection died */
        items[next].result = RFS_E_CONN;
    free(slots);
    rfs_pool_put(c);
    explicit_bzero(o.token, sizeof o.token);
    return first_rc ? rfs_fail(first_rc, "%s", first_msg) : RFS_OK;
}

int rfs_write_file(const char *name, const void *data, size_t len, unsigned mode,
                   unsigned flags, const rfs_options *opts)
{
    rfs_name n;
    int rc = name ? rfs_parse_name(name, &n) : rfs_fail(RFS_E_INVAL, "NULL rfs name");
    if (rc)
        return rc;
    rfs_write_item it = {.path = n.path, .data = data, .len = len, .mode = mode};
    return rfs_write_files(name, &it, 1, flags, opts);
}
