/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* See tree_feed.h. */
#include "cli/tree_feed.h"

#include "cli/cli.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Bytes read ahead or in flight at most: what two 128 MiB batches held before the feed. */
#define FEED_CAP ((size_t)256 << 20)

struct tree_feed {
    int reading;
    char server[4400];
    rfs_options o;
    unsigned flags;
    tree_feed_install install;
    void *install_ctx;
    rfs_files_feed feed;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* an item queued, the feed closed, or room made */
    feed_entry *head, *tail;
    size_t held; /* bytes of the items queued and not yet done */
    int closed;
    feed_entry *failed; /* done, but not arrived */
    int status;
};

static size_t entry_bytes(const tree_feed *f, const feed_entry *e)
{
    return f->reading ? e->r.cap : e->w.len;
}

static feed_entry *entry_of(const tree_feed *f, void *item)
{
    return (feed_entry *)((char *)item -
                          (f->reading ? offsetof(feed_entry, r) : offsetof(feed_entry, w)));
}

static int feed_next(void *ctx, int wait, void **item)
{
    tree_feed *f = ctx;
    pthread_mutex_lock(&f->mu);
    while (wait && !f->head && !f->closed)
        pthread_cond_wait(&f->cv, &f->mu);
    feed_entry *e = f->head;
    if (e) {
        f->head = e->next;
        if (!f->head)
            f->tail = NULL;
        e->next = NULL;
    }
    int got = e ? 1 : f->closed ? -1 : 0;
    pthread_mutex_unlock(&f->mu);
    if (e)
        *item = f->reading ? (void *)&e->r : (void *)&e->w;
    return got;
}

void feed_entry_free(feed_entry *e)
{
    free((void *)e->w.data);
    free((void *)e->w.path);
    free(e->r.data);
    free((void *)e->r.path);
    free(e->src);
    free(e->dst);
    free(e);
}

static void feed_done(void *ctx, void *item)
{
    tree_feed *f = ctx;
    feed_entry *e = entry_of(f, item);
    size_t bytes = entry_bytes(f, e);
    int arrived = f->reading ? e->r.result == RFS_OK : e->w.result == RFS_OK;
    int status = CLI_EXIT_OK;
    if (arrived && f->reading)
        status = f->install(f->install_ctx, e);
    pthread_mutex_lock(&f->mu);
    if (status > f->status)
        f->status = status;
    if (!arrived) {
        e->next = f->failed;
        f->failed = e;
    }
    f->held -= bytes;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (arrived)
        feed_entry_free(e);
}

static void *feed_main(void *arg)
{
    tree_feed *f = arg;
    if (f->reading)
        rfs_read_files_fed(f->server, &f->feed, &f->o);
    else
        rfs_write_files_fed(f->server, &f->feed, f->flags, &f->o);
    return NULL;
}

tree_feed *tree_feed_new(int reading, const char *server, const rfs_options *o, unsigned flags,
                         tree_feed_install install, void *install_ctx)
{
    tree_feed *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->reading = reading;
    snprintf(f->server, sizeof f->server, "%s", server);
    f->o = *o;
    f->flags = flags;
    f->install = install;
    f->install_ctx = install_ctx;
    f->feed = (rfs_files_feed){.next = feed_next, .done = feed_done, .ctx = f};
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    return f;
}

const char *tree_feed_server(const tree_feed *f)
{
    return f->server;
}

void tree_feed_room(tree_feed *f, size_t bytes)
{
    pthread_mutex_lock(&f->mu);
    while (f->held && f->held + bytes > FEED_CAP)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

int tree_feed_push(tree_feed *f, feed_entry *e)
{
    if (!f->started) {
        if (pthread_create(&f->th, NULL, feed_main, f) != 0)
            return -1;
        f->started = 1;
    }
    e->next = NULL;
    pthread_mutex_lock(&f->mu);
    if (f->tail)
        f->tail->next = e;
    else
        f->head = e;
    f->tail = e;
    f->held += entry_bytes(f, e);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return 0;
}

feed_entry *tree_feed_finish(tree_feed *f, int *status)
{
    pthread_mutex_lock(&f->mu);
    f->closed = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (f->started)
        pthread_join(f->th, NULL);
    feed_entry *failed = NULL; /* in the order they finished */
    while (f->failed) {
        feed_entry *e = f->failed;
        f->failed = e->next;
        e->next = failed;
        failed = e;
    }
    *status = f->status;
    explicit_bzero(&f->o, sizeof f->o);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return failed;
}
