/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Option defaults and token lookup. */
#include "client/client.h"
#include "common/capability.h"

#include "common/err.h"
#include "common/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int set_token(rfs_copts *o, const char *tok, const char *label, const char *from)
{
    size_t len = strlen(tok);
    if (len >= sizeof o->token)
        return rfs_fail(RFS_E_INVAL, "%s: token from %s longer than %zu bytes", label, from,
                        sizeof o->token - 1);
    memcpy(o->token, tok, len + 1);
    o->has_token = 1;
    /* a capability given where a token goes (rfs_options.token, $RFS_TOKEN) is one too */
    o->is_cap = rfs_cap_looks_like(tok);
    return RFS_OK;
}

/* $RFS_TCP_CONGESTION: a congestion control for every connection this process makes (see
 * transport/tcp_cc.c for why). One the kernel refuses is reported once and the system's default
 * is used: a tuning knob must not stop a job from writing its data. */
static void resolve_congestion(rfs_copts *o)
{
    static atomic_int warned;
    const char *cc = getenv("RFS_TCP_CONGESTION");
    if (!cc || !cc[0])
        return;
    if (rfs_tcp_check_congestion(cc) != RFS_OK) {
        if (!atomic_exchange(&warned, 1))
            RFS_LOGW("$RFS_TCP_CONGESTION: %s; using the system's default", rfs_last_error());
        rfs_clear_error();
        return;
    }
    snprintf(o->congestion, sizeof o->congestion, "%s", cc);
}

/* The caller's value, else $RFS_RETRY_TIMEOUT_MS, else the default; negative: off. */
static int retry_timeout(int asked)
{
    if (asked < 0)
        return 0;
    if (asked > 0)
        return asked;
    const char *e = getenv("RFS_RETRY_TIMEOUT_MS");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 86400000)
            return (int)v;
    }
    return RFS_DEFAULT_RETRY_TIMEOUT_MS;
}

/* The caller's value, else $RFS_IO_TIMEOUT_MS, else 120 s. The CLI has no option for it, and
 * a bounded failure on a silent link (rfs put across a long cut) needs a bound below the cut. */
static int io_timeout(int asked)
{
    if (asked > 0)
        return asked;
    const char *e = getenv("RFS_IO_TIMEOUT_MS");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 100 && v <= 86400000)
            return (int)v;
    }
    return 120000;
}

/* TLS: rfs_options.tls or $RFS_TLS (1, yes, on, require), and how the server is verified:
 * $RFS_TLS_PIN (its certificate's SHA-256), else $RFS_TLS_CA (a PEM file) or the system's CAs.
 * A misspelt $RFS_TLS is an error, not plaintext: the user asked for protection. */
static int resolve_tls(const rfs_options *opts, const char *label, rfs_copts *o)
{
    o->tls = opts->tls > 0;
    const char *e = getenv("RFS_TLS");
    if (e && *e) {
        if (!strcmp(e, "1") || !strcasecmp(e, "yes") || !strcasecmp(e, "on") ||
            !strcasecmp(e, "require"))
            o->tls = 1;
        else if (strcmp(e, "0") && strcasecmp(e, "no") && strcasecmp(e, "off"))
            return rfs_fail(RFS_E_INVAL,
                            "%s: $RFS_TLS='%.40s': expected 1 or require (TLS), "
                            "or 0 (as the name says)",
                            label, e);
    }
    const char *ca = getenv("RFS_TLS_CA"), *pin = getenv("RFS_TLS_PIN");
    if (ca && strlen(ca) >= sizeof o->tls_ca)
        return rfs_fail(RFS_E_INVAL, "%s: $RFS_TLS_CA: path too long", label);
    if (pin && strlen(pin) >= sizeof o->tls_pin)
        return rfs_fail(RFS_E_INVAL, "%s: $RFS_TLS_PIN: too long for a SHA-256 fingerprint", label);
    snprintf(o->tls_ca, sizeof o->tls_ca, "%s", ca ? ca : "");
    snprintf(o->tls_pin, sizeof o->tls_pin, "%s", pin ? pin : "");
    return RFS_OK;
}

/* The transport besides the name's (rfs+ucx:): $RFS_TRANSPORT ("tcp" or "ucx"). Not in
 * rfs_options, whose size is part of the ABI. A misspelling is an error rather than a silent
 * TCP connection. */
static int resolve_transport(const char *label, rfs_copts *o)
{
    const char *t = getenv("RFS_TRANSPORT");
    if (!t || !*t || !strcmp(t, "tcp"))
        return RFS_OK;
    if (strcmp(t, "ucx"))
        return rfs_fail(RFS_E_INVAL, "%s: $RFS_TRANSPORT='%.40s': expected tcp or ucx", label, t);
    o->ucx = 1;
    return RFS_OK;
}

/* $RFS_LOG_LEVEL (error, warn, info, debug) for programs that have no other way to set it:
 * decisions such as rfs_streams=auto's are logged at info. Read once. */
static void log_level_from_env(void)
{
    static atomic_int done;
    if (atomic_exchange(&done, 1))
        return;
    const char *e = getenv("RFS_LOG_LEVEL");
    int lvl = e && *e ? rfs_log_parse_level(e) : -1;
    if (lvl >= 0)
        rfs_log_set_level(lvl);
}

int rfs_copts_resolve(const rfs_options *opts, const char *label, rfs_copts *o)
{
    log_level_from_env();
    int rc;
    rfs_options none;
    memset(&none, 0, sizeof none);
    if (!opts)
        opts = &none;
    memset(o, 0, sizeof *o);
    if (!(o->rt = rfs_runtime_default()))
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory for the client runtime", label);
    int auto_cap = opts->streams == RFS_STREAMS_AUTO ? RFS_AUTO_MAX_STREAMS
                   : opts->streams < 0               ? -1 - opts->streams
                                                     : 0;
    if (opts->streams < 0 && (auto_cap < 1 || auto_cap > RFS_CLIENT_MAX_STREAMS))
        return rfs_fail(RFS_E_INVAL,
                        "%s: rfs_options.streams %d is neither a count, "
                        "RFS_STREAMS_AUTO nor RFS_STREAMS_AUTO_MAX(1..%d)",
                        label, opts->streams, RFS_CLIENT_MAX_STREAMS);
    if (opts->connect_timeout_ms < 0 || opts->io_timeout_ms < 0 || opts->window < 0 ||
        opts->sndbuf < 0 || opts->rcvbuf < 0)
        return rfs_fail(RFS_E_INVAL, "%s: negative value in rfs_options", label);
    o->connect_timeout_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : 10000;
    o->io_timeout_ms = io_timeout(opts->io_timeout_ms);
    o->streams_auto = auto_cap > 0;
    o->streams = o->streams_auto
                     ? auto_cap
                     : clamp(opts->streams ? opts->streams : 1, 1, RFS_CLIENT_MAX_STREAMS);
    o->window = clamp(opts->window ? opts->window : 8, 1, RFS_CLIENT_MAX_WINDOW);
    o->write_window = opts->write_window;
    o->retry_timeout_ms = retry_timeout(opts->retry_timeout_ms);
    o->sndbuf = opts->sndbuf;
    o->rcvbuf = opts->rcvbuf;
    uint32_t mf = opts->max_frame ? opts->max_frame : RFS_FRAME_DEFAULT;
    if (mf < RFS_FRAME_MIN)
        mf = RFS_FRAME_MIN;
    if (mf > RFS_FRAME_HARD_MAX)
        mf = RFS_FRAME_HARD_MAX;
    o->max_frame = mf;
    resolve_congestion(o);
    const char *sums = getenv("RFS_CHECKSUM");
    o->no_sums = sums && (!strcmp(sums, "off") || !strcmp(sums, "0"));
    const char *vers = getenv("RFS_FILE_VERSIONS");
    o->no_vers = vers && (!strcmp(vers, "off") || !strcmp(vers, "0"));
    const char *z = opts->compress ? opts->compress : getenv("RFS_COMPRESS");
    if (rfs_zmode_parse(z, &o->zmode, &o->zlevel)) {
        rfs_status why;
        rfs_status_save(&why, RFS_E_INVAL);
        return rfs_fail(why.rc, "%s: %s%s", label, why.msg,
                        opts->compress ? "" : " ($RFS_COMPRESS)");
    }
    if ((rc = resolve_tls(opts, label, o)) || (rc = resolve_transport(label, o)))
        return rc;

    /* An explicit token wins; an empty string means "none" so callers can clear it. */
    if (opts->token)
        return opts->token[0] ? set_token(o, opts->token, label, "rfs_options.token") : RFS_OK;
    const char *env = getenv("RFS_CAP"); /* a capability, which wins over a token */
    if (env && env[0])
        return set_token(o, env, label, "$RFS_CAP");
    env = getenv("RFS_TOKEN");
    if (env && env[0])
        return set_token(o, env, label, "$RFS_TOKEN");
    const char *file = getenv("RFS_TOKEN_FILE");
    if (file && file[0]) {
        int rc = rfs_auth_read_token_file(file, o->token, sizeof o->token);
        if (rc)
            return rfs_fail_cause(rc, "%s: $RFS_TOKEN_FILE", label);
        o->has_token = 1;
    }
    return RFS_OK;
}
