/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The queue between `rfs cp -r`'s walk of a tree and one fed whole-file batch
 * (rfs_write_files_fed, rfs_read_files_fed): the walk reads (put) or sizes (get) small files
 * and queues them while the batch's connections send earlier ones, so one set of
 * connections carries the whole tree without a pause between batches, and fetched files are
 * installed as they arrive. The bytes queued or in flight are bounded (tree_feed_room). */
#ifndef RFS_CLI_TREE_FEED_H
#define RFS_CLI_TREE_FEED_H

#include <pthread.h>
#include <stddef.h>

#include "client/client.h"

typedef struct feed_entry {
    rfs_write_item w; /* put */
    rfs_read_item r;  /* get */
    char *src, *dst;  /* the names as the command sees them */
    int status;       /* get: CLI_EXIT_* of installing it */
    struct feed_entry *next;
} feed_entry;

typedef struct tree_feed tree_feed;
/* Called on a batch thread for every fetched file that arrived (get): makes it the local
 * file e->dst; returns a CLI_EXIT_* status. */
typedef int (*tree_feed_install)(void *ctx, feed_entry *e);

/* A feed to server (an rfs name of it): writes with flags (RFS_WRITE_*), or reads whose
 * arrivals go to install. Started by the first tree_feed_push. */
tree_feed *tree_feed_new(int reading, const char *server, const rfs_options *o, unsigned flags,
                         tree_feed_install install, void *install_ctx);
const char *tree_feed_server(const tree_feed *f);
/* Waits until bytes more may be queued (always at once when nothing is). */
void tree_feed_room(tree_feed *f, size_t bytes);
/* Queues e (its w or r filled in) and hands it to the batch; 0, or -1 if no thread could start
 * (e is then the caller's). */
int tree_feed_push(tree_feed *f, feed_entry *e);
/* Ends the feed: waits for every queued item. Returns the entries that did not arrive as a
 * list (the caller reports them or retries them another way, then frees them with
 * feed_entry_free), and *status the worst install status. Frees f. */
feed_entry *tree_feed_finish(tree_feed *f, int *status);
void feed_entry_free(feed_entry *e);

#endif
