/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd --config FILE (config_file.c). */
#ifndef RFSD_CONFIG_FILE_H
#define RFSD_CONFIG_FILE_H

/* If argv names --config FILE, *out_argv is a new argument vector: argv[0], the file's
 * options, then the rest of argv (the command line wins); otherwise argv itself. The new
 * vector lives until the process ends. 0, or -1 after a message on stderr. */
int rfsd_config_expand(int argc, char **argv, int *out_argc, char ***out_argv);

/* Frees a vector made by rfsd_config_expand (nothing when it is argv itself). */
void rfsd_config_free(int argc, char **v, char **argv);

#endif
