/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Host safety (issue #21 item 4). A client is trusted with the export's data, not with the
 * server's host: a set-uid file created by a root rfsd would be a root shell for any local user
 * who can reach the export, so the bits are dropped unless the site asks for them. */
#include "guard.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/err.h"

uint32_t rfsd_guard_mode(const rfsd_config *cfg, uint32_t mode, int is_dir)
{
    if (cfg->allow_setid)
        return mode;
    mode &= ~(uint32_t)(S_ISUID | S_ISGID);
    if (!is_dir)
        mode &= ~(uint32_t)S_ISVTX; /* meaningless on files, and some systems honour it */
    return mode;
}

int rfsd_guard_grow(const rfsd_config *cfg, int fd, const char *shown, uint64_t new_size)
{
    if (cfg->reserve_bytes == 0)
        return RFS_OK;
    struct stat st;
    struct statvfs vs;
    if (fstat(fd, &st) || fstatvfs(fd, &vs))
        return rfs_fail(rfs_err_from_errno(errno), "%s: %s", shown, strerror(errno));
    uint64_t have = (uint64_t)st.st_size;
    if (new_size <= have)
        return RFS_OK;
    uint64_t grow = new_size - have, avail = (uint64_t)vs.f_bavail * vs.f_frsize;
    if (grow > avail || avail - grow < cfg->reserve_bytes)
        return rfs_fail(RFS_E_DQUOT,
                        "%s: growing to %llu bytes would leave less than the "
                        "export's reserve of %llu bytes free (--reserve-bytes; %llu free now)",
                        shown, (unsigned long long)new_size, (unsigned long long)cfg->reserve_bytes,
                        (unsigned long long)avail);
    return RFS_OK;
}
