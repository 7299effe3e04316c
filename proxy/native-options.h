/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbusd's options for native peers' metadata (--native-attach-rule=,
 * --native-attach-required=), the bus's bloom geometry (--native-bloom=: Bus.bloom) and
 * the fact about /proc the kdbus attach rule needs (Bus.attach_rule, attach_flags_req,
 * proc_public; native/meta.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include "bridge/bloom.h"

typedef struct Bus Bus;

/* "SIZE,N_HASH" within kdbus's bounds -> Bus.bloom. Return: 0 or -EINVAL (on stderr). */
int native_option_bloom(const char *value, BloomParams *ret);

/* "opt-in" or "kdbus" -> BUS_ATTACH_*. Return: 0 or -EINVAL (message on stderr). */
int native_option_attach_rule(const char *value, unsigned *ret);
/*
 * A comma-separated list of metadata names (timestamp, creds, pids, auxgroups, names,
 * tid-comm, pid-comm, exe, cmdline, cgroup, caps, seclabel, audit, conn-description), or
 * "none". Return: 0 (*ret the KDBUS_ATTACH_* bits) or -EINVAL (message on stderr).
 */
int native_option_attach_flags(const char *value, uint64_t *ret);
/* "anyone" (false) or "privileged" (true) -> Bus.endpoints_privileged_only of kdbusd's own
 * bus. Return: 0 or -EINVAL (message on stderr). */
int native_option_endpoint_makers(const char *value, bool *ret);
/* Bus.proc_public from the mount options of the /proc kdbusd sees (no hidepid). */
void native_options_probe_proc(Bus *bus);
/* Put the options on @bus (@bloom NULL: the default geometry) and probe /proc. */
void native_options_apply(Bus *bus, unsigned attach_rule, uint64_t attach_flags_req,
                          const BloomParams *bloom, bool endpoints_privileged_only);
