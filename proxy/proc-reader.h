/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The bus's /proc reader (proxy/proc-reader.c): bus_set_proc_reader(bus, &proxy_proc_reader). */
#include "bridge/meta.h"

extern const BridgeProcReader proxy_proc_reader;
