/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Congestion control and TCP state of one socket (tcp_cc.c); private to the transport. */
#ifndef RFS_TRANSPORT_TCP_CC_H
#define RFS_TRANSPORT_TCP_CC_H

#include "transport/transport.h"

int rfs_tcp_describe_fd(int fd, rfs_tcp_state *out);

#endif
