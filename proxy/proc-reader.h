/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The bus's /proc reader (proxy/proc-reader.c): bus_set_proc_reader(bus, &proxy_proc_reader). */
#include <stdbool.h>
#include <sys/types.h>
#include "bridge/meta.h"

extern const BridgeProcReader proxy_proc_reader;

/* Had @pid (its pidfd @pidfd, -1: none, then false) CAP_IPC_OWNER effective in kdbusd's
 * user namespace (kdbus's privilege, BridgeCreds.cap_ipc_owner)? */
bool proxy_proc_cap_ipc_owner(pid_t pid, int pidfd);
