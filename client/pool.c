/* Connection pool: files (and path calls) to the same server with the same token share
 * connections. A file asking for k streams gets k distinct connections, reusing live ones
 * first. Connections are reference counted and closed when the last user lets go; a dead
 * connection is never handed out again (its users keep it until they close).
 *
 * A shared connection keeps the options of whoever opened it (frame size, socket buffers). */
#include "client/client.h"

#include "common/err.h"

#include <stdio.h>
#include <string.h>

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static rfs_conn *pool_head;

static int same_key(const rfs_conn *c, const rfs_name *n, const rfs_copts *o)
{
    return c->port == n->port && strcmp(c->host, n->host) == 0 && c->has_token == o->has_token &&
           (!o->has_token || strcmp(c->token, o->token) == 0);
}

int rfs_pool_get(const rfs_name *n, const rfs_copts *o, int count, rfs_conn **out,
                 const char *label)
{
    int got = 0;
    pthread_mutex_lock(&pool_lock);
    for (rfs_conn *c = pool_head; c && got < count; c = c->pool_next) {
        if (same_key(c, n, o) && !rfs_conn_is_dead(c)) {
            c->refs++;
            out[got++] = c;
        }
    }
    pthread_mutex_unlock(&pool_lock);

    /* Connect outside the lock: a slow server must not stall files on other servers. */
    while (got < count) {
        rfs_conn *c;
        int rc = rfs_conn_open(n->host, n->port, o, &c);
        if (rc) {
            char cause[1024];
            snprintf(cause, sizeof cause, "%s", rfs_last_error());
            while (got > 0)
                rfs_pool_put(out[--got]);
            return rfs_fail(rc, "%s: %s", label, cause);
        }
        pthread_mutex_lock(&pool_lock);
        rfs_conn **tail = &pool_head;
        while (*tail)
            tail = &(*tail)->pool_next;
        c->pool_next = NULL;
        *tail = c;
        pthread_mutex_unlock(&pool_lock);
        out[got++] = c;
    }
    return RFS_OK;
}

void rfs_pool_put(rfs_conn *c)
{
    if (!c)
        return;
    int last = 0;
    pthread_mutex_lock(&pool_lock);
    if (--c->refs == 0) {
        last = 1;
        for (rfs_conn **pp = &pool_head; *pp; pp = &(*pp)->pool_next) {
            if (*pp == c) {
                *pp = c->pool_next;
                break;
            }
        }
    }
    pthread_mutex_unlock(&pool_lock);
    if (last)
        rfs_conn_free(c);
}
