/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Leveled logging to stderr, used by rfsd and (at warn level) by the client libraries. */
#ifndef RFS_COMMON_LOG_H
#define RFS_COMMON_LOG_H

enum rfs_log_level { RFS_LOG_ERROR = 0, RFS_LOG_WARN, RFS_LOG_INFO, RFS_LOG_DEBUG };

void rfs_log_set_level(int level);
int rfs_log_level(void);
/* Parses "error", "warn", "info", "debug"; returns -1 if unknown. */
int rfs_log_parse_level(const char *s);
void rfs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define RFS_LOGE(...) rfs_log(RFS_LOG_ERROR, __VA_ARGS__)
#define RFS_LOGW(...) rfs_log(RFS_LOG_WARN, __VA_ARGS__)
#define RFS_LOGI(...) rfs_log(RFS_LOG_INFO, __VA_ARGS__)
#define RFS_LOGD(...)                            \
    do {                                         \
        if (rfs_log_level() >= RFS_LOG_DEBUG)    \
            rfs_log(RFS_LOG_DEBUG, __VA_ARGS__); \
    } while (0)

#endif
