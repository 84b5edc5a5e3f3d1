/* The staging journal: an append-only local file of write records (file name, extents, data).
 * Staged data lives here until it reaches the server; each record has a state byte flipped to
 * "done" once delivered, so `rfs recover` can replay exactly what was not delivered if the
 * process dies. A live journal is held with an exclusive flock, so recovery never touches a
 * journal its owner is still using. Records are host byte order: journals are replayed on the
 * machine that wrote them. */
#ifndef RFS_ABT_JOURNAL_H
#define RFS_ABT_JOURNAL_H

#include <pthread.h>
#include <stdint.h>

#include "rfs/rfs.h"

#define RFS_JOURNAL_SUFFIX ".rfsj"
#define RFS_JOURNAL_MAX_NAME 8192u
#define RFS_JOURNAL_MAX_EXT (1u << 20)

typedef struct rfs_journal {
    int fd;
    char path[4200];
    pthread_mutex_t mu;
    uint64_t end;        /* append offset */
    uint64_t pending;    /* records not yet marked done */
} rfs_journal;

/* Creates a new journal file in dir (created if missing) and locks it. */
int rfs_journal_open(const char *dir, rfs_journal **out);
/* Appends one pending record; returns where its data starts (for rfs_journal_read) and
 * where the record starts (for rfs_journal_mark_done). */
int rfs_journal_append(rfs_journal *j, uint64_t seq, const char *name, const rfs_extent *ext,
                       uint32_t n_ext, const void *data, uint64_t len, int sync,
                       uint64_t *rec_off, uint64_t *data_off);
int rfs_journal_read(rfs_journal *j, uint64_t data_off, void *buf, uint64_t len);
int rfs_journal_mark_done(rfs_journal *j, uint64_t rec_off);
/* Truncates the journal when no record is pending (keeps staging disk use bounded). */
void rfs_journal_trim(rfs_journal *j);
/* Closes; removes the file when nothing in it is pending. Returns 1 if the file was kept. */
int rfs_journal_close(rfs_journal *j);

typedef struct rfs_journal_rec {
    uint64_t rec_off, seq, len;
    int done;
    const char *name;
    const rfs_extent *ext;
    uint32_t n_ext;
    const void *data;
} rfs_journal_rec;
/* Calls fn for each intact record of the journal open on fd, in file order. A torn or corrupt
 * tail (a crash mid-append) ends the scan; *torn says so. fn returning non-zero stops the
 * scan and is returned. */
typedef int (*rfs_journal_rec_fn)(void *ctx, const rfs_journal_rec *r);
int rfs_journal_scan(int fd, rfs_journal_rec_fn fn, void *ctx, int *torn);
/* Parses the one record at rec_off (as found by a scan) and calls fn with it. */
int rfs_journal_read_at(int fd, uint64_t rec_off, rfs_journal_rec_fn fn, void *ctx);
/* Marks a record done in a journal opened for recovery. */
int rfs_journal_mark_done_fd(int fd, uint64_t rec_off);

#endif
