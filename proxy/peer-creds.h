/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A connected peer's credentials, read from its socket at connect (SO_PEERCRED,
 * SO_PEERGROUPS, SO_PEERSEC, SO_PEERPIDFD): what both front ends capture, as kdbus and
 * dbus-daemon took the opener's credentials once.
 */
#include <stdbool.h>
#include <sys/types.h>
#include "bridge/creds.h"

int peer_creds_read(int fd, BridgeCreds *ret);
int peer_creds_read_groups(int fd, BridgeCreds *creds);
int peer_creds_read_seclabel(int fd, char **ret);
bool peer_creds_cap_ipc_owner(int fd, pid_t pid);
void peer_creds_deinit(BridgeCreds *creds);
