/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#ifndef RFSD_LIST_TREE_H
#define RFSD_LIST_TREE_H

#include "conn.h"
#include "proto/proto.h"

/* LIST_TREE: the reply's data, in *buf (the caller frees it after the reply is sent). */
int rfsd_list_tree(rfsd_conn *c, const rfs_req *q, rfs_rep *rep, uint8_t **buf);

#endif
