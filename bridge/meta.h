/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Metadata capture: what the bus reads of a peer's process beyond its socket credentials
 * (comm, exe, cmdline, cgroup, capabilities, audit ids, groups), and the interface it reads
 * them through. The core does no I/O: proxy/ provides the reader (proxy/proc-reader.c,
 * /proc), installed per bus with bus_set_proc_reader(); a bus without one captures nothing
 * and its peers' items are missing, as for a process that went.
 *
 * A capture is kept only if the peer's pidfd still names a live process after the read
 * (the pid was not reused meanwhile); the reader checks that. Which items to read is said
 * with kdbus's KDBUS_ATTACH_* bits (include/kdbus/kdbus.h), the vocabulary of the native
 * front end that asks for them (native/meta.c writes them as kdbus items).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct BridgeNs BridgeNs;

/* What the bus read from /proc of a process (at HELLO, per message, at BUS_MAKE). */
typedef struct BridgeMeta {
        char *comm;                     /* PID_COMM (and TID_COMM: the tid is not known) */
        char *exe;
        char *cmdline;                  /* NUL-separated arguments */
        size_t cmdline_len;
        char *cgroup;
        bool have_caps;
        uint64_t caps[4];               /* inheritable, permitted, effective, bounding */
        bool have_audit;
        uint32_t loginuid;
        uint32_t sessionid;
        /* for CAPS across user namespaces (kdbus_meta_export_caps): the user namespace
         * the capabilities hold in, and the euid that may own a namespace below it */
        uint64_t userns_ino;            /* 0: not known */
        bool have_euid;
        uint32_t euid;
        /* PIDS: the parent's pid (field 4 of /proc/<pid>/stat, the bus's pid namespace) */
        bool have_ppid;
        uint32_t ppid;
        /* AUXGROUPS read per message (the Groups: line of /proc/<pid>/status) */
        bool have_groups;
        uint32_t *groups;
        unsigned n_groups;
} BridgeMeta;

/* How the bus reads a process's metadata and namespaces (proxy/proc-reader.c). */
typedef struct BridgeProcReader {
        /* The items of @pid (the KDBUS_ATTACH_* in @what), kept only if @pidfd still names
         * a live process afterwards. 0 (*ret NULL if nothing could be captured) or
         * -ENOMEM. */
        int (*read_meta)(pid_t pid, int pidfd, uint64_t what, BridgeMeta **ret);
        /* @pid's namespaces where they differ from the bus's (bridge/ns.h); *ret NULL: the
         * bus's. The caller checks @pid's pidfd afterwards. 0 or -ENOMEM. */
        int (*read_ns)(pid_t pid, BridgeNs **ret);
        /* The inode of the bus's own user namespace (0 if unknown). */
        uint64_t (*bus_userns)(void);
        /* The bits of every capability the kernel knows (0..cap_last_cap). */
        uint64_t (*cap_all)(void);
} BridgeProcReader;

/* @proc's read_meta() (@proc: a bus's reader, Bus.proc). Return: 0 (*ret NULL: nothing
 * captured, or no reader) or -ENOMEM. */
int bridge_meta_read(const BridgeProcReader *proc, pid_t pid, int pidfd, uint64_t what,
                     BridgeMeta **ret);
/* Frees @m (NULL allowed). */
void bridge_meta_free(BridgeMeta *m);
