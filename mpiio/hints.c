/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Hints: MPI_Info keys (ROMIO's collective-buffering keys and our rfs_* keys) and, for programs
 * that cannot pass an info object, RFS_HINTS="key=value;key=value". Precedence: defaults, then
 * RFS_HINTS, then the info given to open/set_view/set_info. Unknown keys and bad values are
 * ignored, as MPI requires. Every key is documented in docs/hints.md. */
#include "common/capability.h"
#include "common/zauto.h"
#include "mpiio/mpiio_internal.h"

#include "abt/abt.h"
#include "cache/cache.h"
#include "ccache/ccache.h"
#include "transport/ucx.h"
#include "wbehind/wbehind.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mp_hints_default(mp_hints *h)
{
    memset(h, 0, sizeof *h);
    h->cb_buffer_size = 16 * 1024 * 1024;
    h->cb_nodes = 0;
    h->cb_write = MP_AUTO;
    h->cb_read = MP_AUTO;
    h->view_mode = MP_VIEW_AUTO;
    h->io_threads = 2;
    h->nb_native = MP_AUTO;
    h->streams = RFS_STREAMS_AUTO; /* docs/tuning.md "Streams" */
    h->connect_timeout_ms = 10000;
    h->io_timeout_ms = 120000;
    h->max_extents = 16384;
    h->cb_pipeline = 0; /* automatic: see pipeline_depth in coll.c */
    h->lock_wait_ms = 30000;
    h->write_window = 8 << 20; /* docs/hints.md says what it relaxes, docs/mpiio.md why it is on */
    h->file_perm = 0644;
    h->ucx_inline_max = -1; /* the process's ($RFS_UCX_INLINE_MAX or the default) */
    h->abt = MP_DISABLE;    /* opt-in: docs/abt.md "Default" says why */
    h->abt_buffer_size = RFS_ABT_DEFAULT_BUFFER;
    h->abt_threads = RFS_ABT_DEFAULT_THREADS;
    h->abt_bg_staging = MP_ENABLE;
    h->abt_wait_timeout_ms = RFS_ABT_DEFAULT_WAIT_TIMEOUT_MS;
    h->defer_open = MP_DISABLE;
    h->defer_close = MP_DISABLE;
    h->lazy_barrier = MP_ENABLE;
    h->cache_read = MP_AUTO; /* docs/hints.md "Read cache and prefetch" says why */
    h->prefetch = RFS_PREFETCH_AUTO;
    h->prefetch_threads = RFS_CACHE_DEFAULT_THREADS;
    h->write_behind = MP_DISABLE; /* opt-in: docs/hints.md "Write-behind" says why */
    h->wb_page_size = (int64_t)RFS_WB_DEFAULT_PAGE;
    h->wb_buffer_size = (int64_t)RFS_WB_DEFAULT_BUFFER;
    h->wb_max_memory = (int64_t)RFS_WB_DEFAULT_MEMORY;
    h->ccache = MP_DISABLE; /* opt-in: docs/hints.md "Collaborative cache" says why */
    h->cc_page_size = (int64_t)RFS_CC_DEFAULT_PAGE;
    h->cc_max_memory = (int64_t)RFS_CC_DEFAULT_MEMORY;
}

static int parse_long(const char *v, long min, long max, int base, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, base);
    if (errno || end == v || *end || x < min || x > max)
        return 0;
    *out = x;
    return 1;
}

static int parse_onoff(const char *v, int *out)
{
    if (!strcmp(v, "enable") || !strcmp(v, "true") || !strcmp(v, "1"))
        *out = MP_ENABLE;
    else if (!strcmp(v, "disable") || !strcmp(v, "false") || !strcmp(v, "0"))
        *out = MP_DISABLE;
    else
        return 0;
    return 1;
}

/* Sizes accept a K, M or G suffix (binary units). */
static int parse_size(const char *v, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    int64_t mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1LL << 10;
    else if (*end == 'm' || *end == 'M')
        mul = 1LL << 20;
    else if (*end == 'g' || *end == 'G')
        mul = 1LL << 30;
    if (mul != 1)
        end++;
    if (errno || end == v || *end || x < 0 || x > max / mul || x * mul < min)
        return 0;
    *out = x * mul;
    return 1;
}

static int parse_tristate(const char *v, int *out)
{
    if (!strcmp(v, "enable"))
        *out = MP_ENABLE;
    else if (!strcmp(v, "disable"))
        *out = MP_DISABLE;
    else if (!strcmp(v, "automatic"))
        *out = MP_AUTO;
    else
        return 0;
    return 1;
}

int mp_hint_set(mp_hints *h, const char *key, const char *v)
{
    long x;
    if (!strcmp(key, "cb_buffer_size")) {
        if (!parse_long(v, 4096, 1L << 30, 10, &x))
            return 0;
        h->cb_buffer_size = x;
    } else if (!strcmp(key, "cb_nodes")) {
        if (!parse_long(v, 1, INT_MAX, 10, &x))
            return 0;
        h->cb_nodes = (int)x;
    } else if (!strcmp(key, "romio_cb_write")) {
        return parse_tristate(v, &h->cb_write);
    } else if (!strcmp(key, "romio_cb_read")) {
        return parse_tristate(v, &h->cb_read);
    } else if (!strcmp(key, "rfs_view")) {
        if (!strcmp(v, "auto"))
            h->view_mode = MP_VIEW_AUTO;
        else if (!strcmp(v, "server"))
            h->view_mode = MP_VIEW_SERVER;
        else if (!strcmp(v, "client"))
            h->view_mode = MP_VIEW_CLIENT;
        else
            return 0;
    } else if (!strcmp(key, "rfs_io_threads")) {
        if (!parse_long(v, 1, 64, 10, &x))
            return 0;
        h->io_threads = (int)x;
    } else if (!strcmp(key, "rfs_nb_native")) {
        if (!strcmp(v, "auto"))
            h->nb_native = MP_AUTO;
        else
            return parse_tristate(v, &h->nb_native);
    } else if (!strcmp(key, "rfs_tls")) {
        if (!strcmp(v, "require") || !strcmp(v, "enable"))
            h->tls = 1;
        else if (!strcmp(v, "auto"))
            h->tls = 0;
        else
            return 0;
    } else if (!strcmp(key, "rfs_capability")) {
        /* a capability instead of the token (docs/security.md); never shown by get_info */
        if (!rfs_cap_looks_like(v) || strlen(v) >= sizeof h->capability)
            return 0;
        snprintf(h->capability, sizeof h->capability, "%s", v);
    } else if (!strcmp(key, "rfs_transport")) {
        if (strcmp(v, "tcp") && strcmp(v, "ucx"))
            return 0;
        snprintf(h->transport, sizeof h->transport, "%s", v);
    } else if (!strcmp(key, "rfs_ucx_inline_max")) {
        int64_t b;
        if (!parse_size(v, 0, (int64_t)RFS_UCX_INLINE_NEVER, &b))
            return 0;
        h->ucx_inline_max = b;
    } else if (!strcmp(key, "rfs_streams")) {
        if (!strcmp(v, "auto")) {
            h->streams = RFS_STREAMS_AUTO;
            h->streams_auto_max = 0;
            return 1;
        }
        if (!strncmp(v, "auto:", 5)) {
            if (!parse_long(v + 5, 1, 16, 10, &x))
                return 0;
            h->streams = RFS_STREAMS_AUTO;
            h->streams_auto_max = (int)x;
            return 1;
        }
        if (!parse_long(v, 1, 64, 10, &x))
            return 0;
        h->streams = (int)x;
    } else if (!strcmp(key, "rfs_connect_timeout_ms")) {
        if (!parse_long(v, 1, INT_MAX, 10, &x))
            return 0;
        h->connect_timeout_ms = (int)x;
    } else if (!strcmp(key, "rfs_io_timeout_ms")) {
        if (!parse_long(v, 1, INT_MAX, 10, &x))
            return 0;
        h->io_timeout_ms = (int)x;
    } else if (!strcmp(key, "rfs_retry_timeout")) {
        if (!parse_long(v, 0, 86400, 10, &x))
            return 0;
        h->retry_timeout_ms = x ? (int)x * 1000 : -1;
    } else if (!strcmp(key, "rfs_servers")) {
        if (strlen(v) >= sizeof h->servers)
            return 0;
        snprintf(h->servers, sizeof h->servers, "%s", v);
    } else if (!strcmp(key, "rfs_stripe_size")) {
        return parse_size(v, 1, (int64_t)1 << 30, &h->stripe_size);
    } else if (!strcmp(key, "rfs_stripe_count")) {
        if (!parse_long(v, 1, 256, 10, &x))
            return 0;
        h->stripe_count = (int)x;
    } else if (!strcmp(key, "rfs_replicas")) {
        if (!parse_long(v, 1, 16, 10, &x))
            return 0;
        h->replicas = (int)x;
    } else if (!strcmp(key, "rfs_depot_order")) {
        if (strcmp(v, "rotate") && strcmp(v, "fixed"))
            return 0;
        h->depot_fixed = !strcmp(v, "fixed");
    } else if (!strcmp(key, "rfs_manifest_mode")) {
        if (strcmp(v, "direct") && strcmp(v, "buffered") && strcmp(v, "log"))
            return 0;
        h->manifest_buffered = !strcmp(v, "buffered") ? 1 : !strcmp(v, "log") ? 2 : 0;
    } else if (!strcmp(key, "rfs_manifest_read")) {
        if (strcmp(v, "direct") && strcmp(v, "sieve"))
            return 0;
        h->manifest_sieve = !strcmp(v, "sieve");
    } else if (!strcmp(key, "rfs_manifest_buffer")) {
        return parse_size(v, 1, (int64_t)1 << 30, &h->manifest_buffer);
    } else if (!strcmp(key, "rfs_write_window")) {
        return parse_size(v, 0, (int64_t)1 << 30, &h->write_window);
    } else if (!strcmp(key, "rfs_max_extents")) {
        if (!parse_long(v, 1, 65536, 10, &x))
            return 0;
        h->max_extents = (int)x;
    } else if (!strcmp(key, "rfs_cb_pipeline")) {
        if (!strcmp(v, "automatic")) {
            h->cb_pipeline = 0;
            return 1;
        }
        if (!parse_long(v, 1, 4, 10, &x))
            return 0;
        h->cb_pipeline = (int)x;
    } else if (!strcmp(key, "rfs_lock_wait_ms")) {
        if (!parse_long(v, 0, 30000, 10, &x))
            return 0;
        h->lock_wait_ms = (int)x;
    } else if (!strcmp(key, "rfs_file_perm")) {
        if (!parse_long(v, 0, 07777, 8, &x))
            return 0;
        h->file_perm = (unsigned)x;
    } else if (!strcmp(key, "rfs_abt")) {
        return parse_onoff(v, &h->abt);
    } else if (!strcmp(key, "rfs_abt_buffer_size")) {
        return parse_size(v, 4096, 1LL << 30, &h->abt_buffer_size);
    } else if (!strcmp(key, "rfs_abt_max_memory")) {
        return parse_size(v, 0, INT64_MAX, &h->abt_max_memory);
    } else if (!strcmp(key, "rfs_abt_threads")) {
        if (!parse_long(v, 1, 16, 10, &x))
            return 0;
        h->abt_threads = (int)x;
    } else if (!strcmp(key, "rfs_abt_bg_staging")) {
        return parse_onoff(v, &h->abt_bg_staging);
    } else if (!strcmp(key, "rfs_abt_interval_ms")) {
        return parse_size(v, 0, INT64_MAX, &h->abt_interval_ms);
    } else if (!strcmp(key, "rfs_abt_output")) {
        return parse_size(v, 0, INT64_MAX, &h->abt_output);
    } else if (!strcmp(key, "rfs_abt_sync_staging")) {
        int on;
        if (!parse_onoff(v, &on))
            return 0;
        h->abt_sync_staging = on == MP_ENABLE;
    } else if (!strcmp(key, "rfs_abt_wait_timeout_ms")) {
        if (!parse_long(v, 0, 24L * 3600 * 1000, 10, &x))
            return 0;
        h->abt_wait_timeout_ms = x;
    } else if (!strcmp(key, "rfs_compress")) {
        if (!rfs_zmode_valid(v))
            return 0;
        snprintf(h->compress, sizeof h->compress, "%s", v);
    } else if (!strcmp(key, "rfs_staging_dir")) {
        if (!*v || strlen(v) >= sizeof h->staging_dir)
            return 0;
        snprintf(h->staging_dir, sizeof h->staging_dir, "%s", v);
    } else if (!strcmp(key, "rfs_defer_open")) {
        return parse_onoff(v, &h->defer_open);
    } else if (!strcmp(key, "rfs_defer_close")) {
        return parse_onoff(v, &h->defer_close);
    } else if (!strcmp(key, "rfs_lazy_barrier")) {
        return parse_onoff(v, &h->lazy_barrier);
    } else if (!strcmp(key, "rfs_cache_read")) {
        if (!strcmp(v, "auto") || !strcmp(v, "automatic"))
            h->cache_read = MP_AUTO;
        else
            return parse_onoff(v, &h->cache_read);
    } else if (!strcmp(key, "rfs_cache_size")) {
        return parse_size(v, (int64_t)RFS_CACHE_MIN_MEM, INT64_MAX, &h->cache_size);
    } else if (!strcmp(key, "rfs_prefetch")) {
        int x2;
        if (!strcmp(v, "auto") || !strcmp(v, "automatic"))
            h->prefetch = RFS_PREFETCH_AUTO;
        else if (parse_onoff(v, &x2))
            h->prefetch = x2 == MP_ENABLE ? RFS_PREFETCH_ENABLE : RFS_PREFETCH_DISABLE;
        else
            return 0;
    } else if (!strcmp(key, "rfs_prefetch_max")) {
        return parse_size(v, 64 * 1024, INT64_MAX, &h->prefetch_max);
    } else if (!strcmp(key, "rfs_write_behind")) {
        if (!strcmp(v, "auto"))
            h->write_behind = MP_AUTO;
        else
            return parse_tristate(v, &h->write_behind);
    } else if (!strcmp(key, "rfs_wb_page_size")) {
        return parse_size(v, (int64_t)RFS_WB_MIN_UNIT, 1LL << 30, &h->wb_page_size);
    } else if (!strcmp(key, "rfs_wb_buffer_size")) {
        return parse_size(v, (int64_t)RFS_WB_MIN_UNIT, 64LL << 20, &h->wb_buffer_size);
    } else if (!strcmp(key, "rfs_cache")) {
        if (!strcmp(v, "auto"))
            h->ccache = MP_AUTO;
        else
            return parse_tristate(v, &h->ccache);
    } else if (!strcmp(key, "rfs_cache_page_size")) {
        return parse_size(v, (int64_t)RFS_CC_MIN_PAGE, (int64_t)RFS_CC_MAX_PAGE, &h->cc_page_size);
    } else if (!strcmp(key, "rfs_cache_max_memory")) {
        return parse_size(v, (int64_t)RFS_CC_MIN_PAGE, INT64_MAX, &h->cc_max_memory);
    } else if (!strcmp(key, "rfs_wb_max_memory")) {
        return parse_size(v, (int64_t)RFS_WB_MIN_UNIT, INT64_MAX, &h->wb_max_memory);
    } else if (!strcmp(key, "rfs_prefetch_threads")) {
        if (!parse_long(v, 1, RFS_CACHE_MAX_THREADS, 10, &x))
            return 0;
        h->prefetch_threads = (int)x;
    } else {
        return 0;
    }
    return 1;
}

void mp_hints_apply_env(mp_hints *h)
{
    const char *env = getenv("RFS_HINTS");
    if (!env || !*env)
        return;
    char *copy = strdup(env);
    if (!copy)
        return;
    char *save = NULL;
    for (char *item = strtok_r(copy, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(item, '=');
        if (!eq)
            continue;
        *eq = '\0';
        mp_hint_set(h, item, eq + 1);
    }
    free(copy);
}

void mp_hints_apply_info(mp_hints *h, MPI_Info info)
{
    if (info == MPI_INFO_NULL)
        return;
    int nkeys = 0;
    if (MPI_Info_get_nkeys(info, &nkeys) != MPI_SUCCESS)
        return;
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[1025];
        int flag = 0;
        if (MPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS)
            continue;
        if (MPI_Info_get(info, key, (int)sizeof val - 1, val, &flag) != MPI_SUCCESS || !flag)
            continue;
        mp_hint_set(h, key, val);
    }
}

static const char *tristate_name(int t)
{
    return t == MP_ENABLE ? "enable" : t == MP_DISABLE ? "disable" : "automatic";
}

int mp_hints_to_info(const mp_hints *h, MPI_Info *out)
{
    MPI_Info info;
    int rc = MPI_Info_create(&info);
    if (rc != MPI_SUCCESS)
        return rc;
    char v[64];
#define SETI(key, val)                                   \
    do {                                                 \
        snprintf(v, sizeof v, "%lld", (long long)(val)); \
        MPI_Info_set(info, key, v);                      \
    } while (0)
    SETI("cb_buffer_size", h->cb_buffer_size);
    SETI("cb_nodes", h->cb_nodes);
    MPI_Info_set(info, "romio_cb_write", tristate_name(h->cb_write));
    MPI_Info_set(info, "romio_cb_read", tristate_name(h->cb_read));
    MPI_Info_set(info, "rfs_view",
                 h->view_mode == MP_VIEW_SERVER   ? "server"
                 : h->view_mode == MP_VIEW_CLIENT ? "client"
                                                  : "auto");
    SETI("rfs_io_threads", h->io_threads);
    if (h->streams == RFS_STREAMS_AUTO && h->streams_auto_max > 0) {
        char v[16];
        snprintf(v, sizeof v, "auto:%d", h->streams_auto_max);
        MPI_Info_set(info, "rfs_streams", v);
    } else if (h->streams == RFS_STREAMS_AUTO)
        MPI_Info_set(info, "rfs_streams", "auto");
    else
        SETI("rfs_streams", h->streams);
    MPI_Info_set(info, "rfs_tls", h->tls ? "require" : "auto");
    if (h->transport[0])
        MPI_Info_set(info, "rfs_transport", h->transport);
    SETI("rfs_ucx_inline_max",
         h->ucx_inline_max >= 0 ? (size_t)h->ucx_inline_max : rfs_ucx_inline_max());
    SETI("rfs_connect_timeout_ms", h->connect_timeout_ms);
    SETI("rfs_io_timeout_ms", h->io_timeout_ms);
    SETI("rfs_retry_timeout", h->retry_timeout_ms < 0 ? 0
                              : h->retry_timeout_ms   ? h->retry_timeout_ms / 1000
                                                      : RFS_DEFAULT_RETRY_S);
    SETI("rfs_max_extents", h->max_extents);
    if (h->cb_pipeline)
        SETI("rfs_cb_pipeline", h->cb_pipeline);
    else
        MPI_Info_set(info, "rfs_cb_pipeline", "automatic");
    SETI("rfs_lock_wait_ms", h->lock_wait_ms);
    SETI("rfs_write_window", h->write_window);
    if (h->servers[0])
        MPI_Info_set(info, "rfs_servers", h->servers);
    if (h->stripe_size)
        SETI("rfs_stripe_size", h->stripe_size);
    if (h->stripe_count)
        SETI("rfs_stripe_count", h->stripe_count);
    if (h->replicas)
        SETI("rfs_replicas", h->replicas);
    MPI_Info_set(info, "rfs_depot_order", h->depot_fixed ? "fixed" : "rotate");
    MPI_Info_set(info, "rfs_manifest_mode",
                 h->manifest_buffered == 2   ? "log"
                 : h->manifest_buffered == 1 ? "buffered"
                                             : "direct");
    MPI_Info_set(info, "rfs_manifest_read", h->manifest_sieve ? "sieve" : "direct");
    if (h->manifest_buffer)
        SETI("rfs_manifest_buffer", h->manifest_buffer);
    snprintf(v, sizeof v, "0%o", h->file_perm);
    MPI_Info_set(info, "rfs_file_perm", v);
    const char *zenv = getenv("RFS_COMPRESS");
    MPI_Info_set(info, "rfs_compress",
                 h->compress[0]                  ? h->compress
                 : zenv && rfs_zmode_valid(zenv) ? zenv
                                                 : "auto");
    MPI_Info_set(info, "rfs_abt", h->abt == MP_ENABLE ? "enable" : "disable");
    if (h->abt == MP_ENABLE) {
        SETI("rfs_abt_buffer_size", h->abt_buffer_size);
        SETI("rfs_abt_max_memory", h->abt_max_memory);
        SETI("rfs_abt_threads", h->abt_threads);
        MPI_Info_set(info, "rfs_abt_bg_staging",
                     h->abt_bg_staging == MP_ENABLE ? "enable" : "disable");
        SETI("rfs_abt_interval_ms", h->abt_interval_ms);
        SETI("rfs_abt_output", h->abt_output);
        MPI_Info_set(info, "rfs_abt_sync_staging", h->abt_sync_staging ? "enable" : "disable");
        SETI("rfs_abt_wait_timeout_ms", h->abt_wait_timeout_ms);
        if (h->staging_dir[0])
            MPI_Info_set(info, "rfs_staging_dir", h->staging_dir);
    }
    MPI_Info_set(info, "rfs_defer_open", h->defer_open == MP_ENABLE ? "enable" : "disable");
    MPI_Info_set(info, "rfs_defer_close", h->defer_close == MP_ENABLE ? "enable" : "disable");
    MPI_Info_set(info, "rfs_lazy_barrier", h->lazy_barrier == MP_ENABLE ? "enable" : "disable");
    MPI_Info_set(info, "rfs_cache_read",
                 h->cache_read == MP_ENABLE    ? "enable"
                 : h->cache_read == MP_DISABLE ? "disable"
                                               : "auto");
    SETI("rfs_cache_size", h->cache_size);
    MPI_Info_set(info, "rfs_prefetch",
                 h->prefetch == RFS_PREFETCH_ENABLE    ? "enable"
                 : h->prefetch == RFS_PREFETCH_DISABLE ? "disable"
                                                       : "auto");
    SETI("rfs_prefetch_max", h->prefetch_max);
    SETI("rfs_prefetch_threads", h->prefetch_threads);
    MPI_Info_set(info, "rfs_nb_native",
                 h->nb_native == MP_AUTO     ? "auto"
                 : h->nb_native == MP_ENABLE ? "enable"
                                             : "disable");
    MPI_Info_set(info, "rfs_write_behind",
                 h->write_behind == MP_AUTO     ? "auto"
                 : h->write_behind == MP_ENABLE ? "enable"
                                                : "disable");
    SETI("rfs_wb_page_size", h->wb_page_size);
    SETI("rfs_wb_buffer_size", h->wb_buffer_size);
    SETI("rfs_wb_max_memory", h->wb_max_memory);
    MPI_Info_set(info, "rfs_cache",
                 h->ccache == MP_AUTO     ? "auto"
                 : h->ccache == MP_ENABLE ? "enable"
                                          : "disable");
    SETI("rfs_cache_page_size", h->cc_page_size);
    SETI("rfs_cache_max_memory", h->cc_max_memory);
#undef SETI
    *out = info;
    return MPI_SUCCESS;
}
