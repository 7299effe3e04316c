/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Metadata capture through the bus's /proc reader (bridge/meta.h). The reading itself is
 * proxy/'s (proxy/proc-reader.c): the core does no I/O.
 */
#include <stdlib.h>
#include "bridge/meta.h"

/**
 * bridge_meta_read() - a process's metadata through a bus's reader
 * @proc:       the reader (Bus.proc; NULL: nothing is captured)
 * @pid:        its pid in the bus's namespace
 * @pidfd:      a pidfd of the same process (the check that @pid was not reused)
 * @what:       the KDBUS_ATTACH_* items to read
 * @ret:        the items, or NULL: none captured
 *
 * Return: 0 or -ENOMEM.
 */
int bridge_meta_read(const BridgeProcReader *proc, pid_t pid, int pidfd, uint64_t what,
                     BridgeMeta **ret) {
        *ret = NULL;
        if (!proc || !proc->read_meta || pid <= 0 || pidfd < 0)
                return 0;
        return proc->read_meta(pid, pidfd, what, ret);
}

/* Frees @m (NULL allowed). */
void bridge_meta_free(BridgeMeta *m) {
        if (!m)
                return;
        free(m->comm);
        free(m->exe);
        free(m->cmdline);
        free(m->cgroup);
        free(m->groups);
        free(m);
}

