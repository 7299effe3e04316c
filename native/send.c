/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SEND of a native peer. The datagram holds the kdbus_cmd_send, the kdbus_msg at
 * cmd->msg_address (an offset into the datagram, not a pointer) and the bytes the
 * PAYLOAD_VEC items point at (offsets again; offset 0 with a size means that many zero
 * bytes, as a NULL address meant padding in kdbus). If the parts, in item order, form
 * exactly one dbus1 message, every peer can receive it. Without PAYLOAD_MEMFD it is
 * validated like any message from a legacy peer. With sealed PAYLOAD_MEMFDs (kdbus: passed
 * on, never copied) the bus reads none of their bytes here: the dbus1 header lies whole in
 * the vec parts before the first memfd (the bus routes and checks policy on the header), is
 * validated, and the message keeps duplicates of the memfds (bridge/msg.h); its body is
 * validated when a receiver first needs the bytes (bridge_msg_materialize()). The header
 * must agree with the kdbus fields (see native/conn.h). Then the bus stamps SENDER and
 * routes it through the core. Any other payload is carried opaque, as kdbus carried every
 * payload, to native receivers only (send_new_opaque_msg()).
 *
 * fds: the FDS item and PAYLOAD_MEMFD carry indices into the fds of the datagram; the
 * message keeps duplicates of the FDS ones (at most KDBUS_MSG_MAX_FDS).
 */
#include <assert.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bridge/activator.h"
#include "bridge/bloom.h"
#include "bridge/bus.h"
#include "bridge/conn.h"
#include "bridge/msg.h"
#include "bridge/reply.h"
#include "kdbus/kdbus.h"
#include "native/command.h"
#include "native/conn.h"
#include "native/items.h"
#include "native/meta.h"
#include "native/send.h"
#include "util/error.h"
#include "wire/message.h"
#include "wire/names.h"
#include "wire/protocol.h"

/* The seals a PAYLOAD_MEMFD must carry (kdbus's mask): nobody can change it after the send,
 * nor seal it further; seals cannot be removed, so nothing is checked again later. */
#define NATIVE_MEMFD_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)
#define NATIVE_MAX_PARTS 64u

typedef struct SendParts {
        const uint8_t *ptr[NATIVE_MAX_PARTS];   /* NULL: zero bytes (or a memfd part) */
        uint64_t len[NATIVE_MAX_PARTS];
        int memfd[NATIVE_MAX_PARTS];            /* borrowed from the datagram; -1: a vec */
        uint64_t start[NATIVE_MAX_PARTS];       /* memfd: where the part starts */
        unsigned n;
        unsigned n_memfds;                      /* PAYLOAD_MEMFD items (KDBUS_MSG_MAX_MEMFD_ITEMS) */
        bool with_memfd;                        /* a memfd part of at least one byte */
        unsigned first_memfd;                   /* with_memfd: the index of the first one */
        uint64_t total;
        int msg_fds[KDBUS_MSG_MAX_FDS];         /* duplicates, owned until taken */
        unsigned n_msg_fds;
        const char *dst_name;
        const struct kdbus_bloom_filter *bloom; /* BLOOM_FILTER, the bus's size; NULL */
} SendParts;

/*
 * May @fd go as payload? kdbus_get_fd() refused its own handles and every unix socket
 * (EOPNOTSUPP) and let O_PATH fds pass: an fd queued in a pool is out of the kernel's unix
 * garbage collector's sight, so a socket that held its own connection (or two that held
 * each other's) would never go. The same holds for kdbusd's queues, where a connection to
 * this bus is a unix socket too.
 */
static bool fd_is_refused(int fd) {
        int domain = 0, fl = fcntl(fd, F_GETFL);
        socklen_t dlen = sizeof(domain);
        struct stat st;

        if (fl < 0 || (fl & O_PATH))
                return false;
        if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
                return false;
        return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 && domain == AF_UNIX;
}

/* The bytes of @p's memfd parts. */
static uint64_t send_memfd_bytes(const SendParts *p) {
        uint64_t n = 0;
        unsigned i;

        for (i = 0; i < p->n; ++i)
                if (p->memfd[i] >= 0)
                        n += p->len[i];
        return n;
}

/* The counts only: the arrays (1.8 KiB) are written before they are read, up to n and
 * n_msg_fds, so they are not zeroed per SEND. */
static void send_parts_init(SendParts *p) {
        p->n = 0;
        p->n_memfds = 0;
        p->with_memfd = false;
        p->first_memfd = 0;
        p->total = 0;
        p->n_msg_fds = 0;
        p->dst_name = NULL;
        p->bloom = NULL;
}

static void send_parts_clear(SendParts *p) {
        unsigned i;

        for (i = 0; i < p->n_msg_fds; ++i)
                (void) close(p->msg_fds[i]);
        p->n = 0;
        p->n_msg_fds = 0;
}

static int parts_add(SendParts *p, const uint8_t *ptr, uint64_t len, int memfd, uint64_t start) {
        if (p->n >= NATIVE_MAX_PARTS)
                return -E2BIG;
        if (len > KDBUS_WIRE_MAX_DATAGRAM * 16ull || p->total + len > WIRE_MAX_MESSAGE_SIZE)
                return -EMSGSIZE;
        if (memfd >= 0 && len > 0 && !p->with_memfd) {
                p->with_memfd = true;
                p->first_memfd = p->n;
        }
        p->ptr[p->n] = ptr;
        p->len[p->n] = len;
        p->memfd[p->n] = memfd;
        p->start[p->n] = start;
        if (memfd >= 0)
                ++p->n_memfds;
        ++p->n;
        p->total += len;
        return 0;
}

/* A PAYLOAD_MEMFD item: checked as kdbus does, nothing read. Return: 0 or -errno. */
static int part_memfd(SendParts *p, const struct kdbus_memfd *mf, const int *fds,
                      unsigned n_fds) {
        int fd, seals;
        struct stat st;

        if ((unsigned)mf->fd >= n_fds)
                return -EBADF;                  /* kdbus: fget() found no file */
        if (mf->__pad)
                return -EINVAL;
        fd = fds[mf->fd];
        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0)
                return -EMEDIUMTYPE;            /* not a memfd */
        if ((seals & NATIVE_MEMFD_SEALS) != NATIVE_MEMFD_SEALS)
                return -ETXTBSY;                /* kdbus: a memfd that is not sealed */
        if (fstat(fd, &st) < 0)
                return -errno;
        if (mf->start > (uint64_t)st.st_size || mf->size > (uint64_t)st.st_size - mf->start)
                return -EFAULT;                 /* kdbus_get_memfd(): a range past the end */
        return parts_add(p, NULL, mf->size, fd, mf->start);
}

/* Walk the message's items (send_items_verify() and send_examine() passed them) into @p:
 * the files they name are looked at here. Return: 0 or -errno for the peer. */
static int send_collect(SendParts *p, const uint8_t *buf, size_t size,
                        const struct kdbus_msg *km, const int *fds, unsigned n_fds) {
        const struct kdbus_item *item;
        unsigned i, n;
        int r;

        KDBUS_ITEMS_FOREACH(item, km->items, km->size - sizeof(*km)) {
                uint64_t payload = item->size - KDBUS_ITEM_HEADER_SIZE;

                switch (item->type) {
                case KDBUS_ITEM_PAYLOAD_VEC:
                        if (item->vec.offset == 0) {
                                r = parts_add(p, NULL, item->vec.size, -1, 0);
                        } else {
                                if (item->vec.offset > size || item->vec.size > size - item->vec.offset)
                                        return -EFAULT;
                                r = parts_add(p, buf + item->vec.offset, item->vec.size, -1, 0);
                        }
                        if (r)
                                return r;
                        break;
                case KDBUS_ITEM_PAYLOAD_MEMFD:
                        r = part_memfd(p, &item->memfd, fds, n_fds);
                        if (r)
                                return r;
                        break;
                case KDBUS_ITEM_FDS:
                        n = payload / sizeof(int);
                        for (i = 0; i < n; ++i) {
                                if (item->fds[i] < 0 || (unsigned)item->fds[i] >= n_fds)
                                        return -EBADF;
                                if (fd_is_refused(fds[item->fds[i]]))
                                        return -EOPNOTSUPP;
                                p->msg_fds[i] = fcntl(fds[item->fds[i]], F_DUPFD_CLOEXEC, 3);
                                if (p->msg_fds[i] < 0)
                                        return -errno;
                                p->n_msg_fds = i + 1;
                        }
                        break;
                case KDBUS_ITEM_DST_NAME:
                        p->dst_name = item->str;
                        break;
                case KDBUS_ITEM_BLOOM_FILTER:
                        /* the bus adds its own entries to it */
                        p->bloom = &item->bloom_filter;
                        break;
                default:
                        return -EINVAL;         /* send_items_verify() let no other in */
                }
        }
        return 0;
}

/* Does @item's payload hold one string, its NUL the last byte (kdbus_str_valid())? */
static bool item_str_is_valid(const struct kdbus_item *item) {
        size_t payload = item->size - KDBUS_ITEM_HEADER_SIZE;

        return payload > 0 && memchr(item->str, '\0', payload) == item->str + payload - 1;
}

/*
 * The message's items as kdbus parsed them before looking at the message itself
 * (kdbus_args_verify() with the item types kdbus_cmd_send() allows, and
 * kdbus_item_validate()): in bounds, of a type a message may carry, each well formed,
 * and FDS, BLOOM_FILTER and DST_NAME at most once. *ret_only_vecs: all are PAYLOAD_VECs
 * (send_examine() has no item to look at). Return: 0, -EINVAL, or -EBADF (a
 * PAYLOAD_MEMFD with a negative fd).
 */
static int send_items_verify(const struct kdbus_msg *km, bool *ret_only_vecs) {
        const struct kdbus_item *item;
        bool have_fds = false, have_bloom = false, have_name = false, only_vecs = true;
        bool *once;
        int r;

        r = native_items_check(km->items, km->size - sizeof(*km));
        if (r)
                return r;
        KDBUS_ITEMS_FOREACH(item, km->items, km->size - sizeof(*km)) {
                uint64_t payload = item->size - KDBUS_ITEM_HEADER_SIZE;

                once = NULL;
                only_vecs = only_vecs && item->type == KDBUS_ITEM_PAYLOAD_VEC;
                switch (item->type) {
                case KDBUS_ITEM_PAYLOAD_VEC:
                        if (payload != sizeof(struct kdbus_vec) || item->vec.size == 0)
                                return -EINVAL;
                        break;
                case KDBUS_ITEM_PAYLOAD_MEMFD:
                        if (payload != sizeof(struct kdbus_memfd) || item->memfd.size == 0)
                                return -EINVAL;
                        if (item->memfd.fd < 0)
                                return -EBADF;
                        break;
                case KDBUS_ITEM_FDS:
                        if (payload % sizeof(int))
                                return -EINVAL;
                        once = &have_fds;
                        break;
                case KDBUS_ITEM_BLOOM_FILTER:
                        /* at least the generation; the filter's size is examined later */
                        if (payload < sizeof(struct kdbus_bloom_filter))
                                return -EINVAL;
                        once = &have_bloom;
                        break;
                case KDBUS_ITEM_DST_NAME:
                        if (!item_str_is_valid(item))
                                return -EINVAL;
                        once = &have_name;
                        break;
                default:
                        return -EINVAL;
                }
                /* kdbus: a single-use item given twice is EINVAL (not EEXIST) */
                if (once) {
                        if (*once)
                                return -EINVAL;
                        *once = true;
                }
        }
        *ret_only_vecs = only_vecs;
        return 0;
}

/*
 * Is a DST_NAME item (send_items_verify() passed it: the string fills the payload) a
 * well-known name? The sender's last valid dbus1 DESTINATION (@memo) is a valid bus name:
 * if it is no unique name, it is one (the memo spares a dotted-name walk per SEND).
 */
static _noinline_ bool dst_name_is_valid(const struct kdbus_item *item,
                                         const WireFieldMemo *memo) {
        size_t n = item->size - KDBUS_ITEM_HEADER_SIZE - 1;

        if (item->str[0] != ':' && wire_field_memo_has_destination(memo, item->str, n))
                return true;
        return wire_well_known_name_is_valid(item->str, n);
}

/*
 * kdbus_msg_examine(): the message's flags and fields against each other, then what
 * its items may be for this kind of message, in kdbus's order (@only_vecs: there is no
 * item it looks at). timeout_ns and cookie_reply are one field (a union), so a broadcast
 * with either is ENOTUNIQ. Return: 0 or -errno.
 */
static int send_examine(const struct kdbus_cmd_send *cmd, const struct kdbus_msg *km,
                        const BloomParams *bp, bool only_vecs, const WireFieldMemo *memo) {
        bool broadcast = km->dst_id == KDBUS_DST_ID_BROADCAST;
        bool signal = km->flags & KDBUS_MSG_SIGNAL;
        const struct kdbus_item *item;
        bool have_fds = false, have_bloom = false, have_name = false;
        unsigned n_memfds = 0;

        if (km->payload_type == KDBUS_PAYLOAD_KERNEL)
                return -EINVAL;                 /* the bus's own messages only */
        if (broadcast) {
                if (!signal)
                        return -EBADMSG;
                if (km->timeout_ns)
                        return -ENOTUNIQ;
        }
        if (km->flags & KDBUS_MSG_EXPECT_REPLY) {
                if (!km->timeout_ns)
                        return -EINVAL;         /* a call must have a deadline */
                if (signal)
                        return -ENOTUNIQ;
        } else {
                if (cmd->flags & KDBUS_SEND_SYNC_REPLY)
                        return -EINVAL;
                if (signal && km->cookie_reply)
                        return -EINVAL;         /* a reply cannot be a signal */
        }

        KDBUS_ITEMS_FOREACH(item, km->items, only_vecs ? 0 : km->size - sizeof(*km)) {
                uint64_t payload = item->size - KDBUS_ITEM_HEADER_SIZE;

                switch (item->type) {
                case KDBUS_ITEM_PAYLOAD_MEMFD:
                        if (n_memfds++ >= KDBUS_MSG_MAX_MEMFD_ITEMS)
                                return -E2BIG;
                        break;
                case KDBUS_ITEM_FDS:
                        if (payload / sizeof(int) > KDBUS_MSG_MAX_FDS)
                                return -EMFILE;
                        have_fds = true;
                        break;
                case KDBUS_ITEM_BLOOM_FILTER:
                        /* the filter's size, past the generation */
                        payload -= sizeof(struct kdbus_bloom_filter);
                        if (payload % 8)
                                return -EFAULT;
                        if (payload != bp->size)
                                return -EDOM;
                        have_bloom = true;
                        break;
                case KDBUS_ITEM_DST_NAME:
                        if (!dst_name_is_valid(item, memo))
                                return -EINVAL;
                        if (broadcast)
                                return -EBADMSG;
                        have_name = true;
                        break;
                default:
                        break;
                }
        }
        /* kdbus: a bloom filter only on a signal (one is optional here: the bus computes
         * the filter of every broadcast from its header and arguments) */
        if (have_bloom && !signal)
                return -EBADMSG;
        if (km->dst_id == KDBUS_DST_ID_NAME && !have_name)
                return -EDESTADDRREQ;
        if (broadcast && have_fds)
                return -ENOTUNIQ;               /* fds go to one receiver only */
        return 0;
}

/* The header against the kdbus fields. Return: 0 or -errno. */
static int send_check_header(NativeConn *nc, const struct kdbus_msg *km, const WireHeader *h,
                             const SendParts *p) {
        bool expect = h->type == WIRE_MSG_METHOD_CALL && !(h->flags & WIRE_FLAG_NO_REPLY_EXPECTED);
        bool reply = h->type == WIRE_MSG_METHOD_RETURN || h->type == WIRE_MSG_ERROR;
        BridgeConn *owner;

        if (km->cookie != h->serial || !!(km->flags & KDBUS_MSG_EXPECT_REPLY) != expect ||
            !!(km->flags & KDBUS_MSG_SIGNAL) != (h->type == WIRE_MSG_SIGNAL))
                return -EINVAL;
        if (reply && km->cookie_reply != h->reply_serial)
                return -EINVAL;
        if (h->n_fds != p->n_msg_fds)
                return -EINVAL;

        if (km->dst_id == KDBUS_DST_ID_BROADCAST) {
                if (expect || p->n_msg_fds)
                        return -ENOTUNIQ;
                if (h->destination || h->type != WIRE_MSG_SIGNAL || p->dst_name)
                        return -EINVAL;
                return 0;
        }
        if (!h->destination)
                return -EINVAL;
        if (km->dst_id == KDBUS_DST_ID_NAME) {
                if (!p->dst_name)
                        return -EDESTADDRREQ;
                return strcmp(p->dst_name, h->destination) ? -EINVAL : 0;
        }
        if (p->dst_name && strcmp(p->dst_name, h->destination))
                return -EINVAL;
        /* the unique name of dst_id exactly (parsing is the inverse of formatting; dst_id
         * is no 0 here, the parser's "no unique name") */
        if (h->destination[0] == ':')
                return bus_parse_unique_name(nc->conn->bus, h->destination) == km->dst_id ?
                       0 : -EINVAL;
        owner = bus_find_conn_by_name(nc->conn->bus, h->destination);
        if (owner && owner->id != km->dst_id)
                return -EREMCHG;
        return 0;
}

/*
 * The items of the kdbus_cmd_send: at most one CANCEL_FD (one int: an index into the
 * datagram's fds, as for FDS). kdbus wants a pollable file; regular files and directories
 * are always "readable" to poll(2) here, so they are refused as kdbus refuses files
 * without a poll method. Return: 0 (*ret_fd: the fd, borrowed, or -1) or -errno.
 */
static int send_cancel_fd(const struct kdbus_cmd_send *cmd, const int *fds, unsigned n_fds,
                          int *ret_fd) {
        const struct kdbus_item *item;
        struct stat st;

        *ret_fd = -1;
        KDBUS_ITEMS_FOREACH(item, cmd->items, cmd->size - sizeof(*cmd)) {
                if (*ret_fd >= 0 ||
                    item->size != KDBUS_ITEM_HEADER_SIZE + sizeof(int))
                        return -EINVAL;
                if (item->fds[0] < 0 || (unsigned)item->fds[0] >= n_fds)
                        return -EBADF;
                *ret_fd = fds[item->fds[0]];
                if (fstat(*ret_fd, &st) < 0)
                        return -errno;
                if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
                        return -EINVAL;
        }
        return 0;
}

/*
 * The first @end parts as one buffer: *ret points at the single vec part in the datagram,
 * or into a new buffer *ret_joined (freed by the caller). Return: 0 or -ENOMEM.
 */
static int parts_join(const SendParts *p, unsigned end, const uint8_t **ret, size_t *ret_size,
                      uint8_t **ret_joined) {
        uint64_t at = 0;
        unsigned i;

        for (i = 0; i < end; ++i)
                at += p->len[i];
        *ret_size = at;
        if (end == 1 && p->ptr[0]) {
                *ret = p->ptr[0];
                return 0;
        }
        *ret_joined = malloc(at ? at : 1);
        if (!*ret_joined)
                return -ENOMEM;
        at = 0;
        for (i = 0; i < end; ++i) {
                if (p->ptr[i])
                        memcpy(*ret_joined + at, p->ptr[i], p->len[i]);
                else
                        memset(*ret_joined + at, 0, p->len[i]);
                at += p->len[i];
        }
        *ret = *ret_joined;
        return 0;
}

/*
 * The message of a SEND with memfds: @head (the parts before the first memfd, parsed into
 * @hdr) stamped, then the parts from the first memfd on: each memfd duplicated (the
 * message holds it, not a copy of its bytes), runs of vec parts coalesced into inline
 * parts whose bytes go to one tail buffer. Return: 0, -ENOMEM, -errno, WIRE_E_TOO_LARGE.
 */
static int send_new_parts_msg(NativeConn *nc, const SendParts *p, const uint8_t *head,
                              size_t head_size, const WireHeader *hdr, BridgeMsg **ret) {
        BridgeMsgPart *parts;
        uint8_t *tail = NULL;
        uint64_t tail_size = 0, at = 0;
        unsigned i, n = 0;

        for (i = p->first_memfd; i < p->n; ++i)
                if (p->memfd[i] < 0)
                        tail_size += p->len[i];
        parts = calloc(p->n - p->first_memfd, sizeof(*parts));
        if (tail_size)
                tail = malloc(tail_size);
        if (!parts || (tail_size && !tail)) {
                free(parts);
                free(tail);
                return -ENOMEM;
        }
        for (i = p->first_memfd; i < p->n; ++i) {
                if (p->len[i] == 0)
                        continue;
                if (p->memfd[i] >= 0) {
                        int fd = fcntl(p->memfd[i], F_DUPFD_CLOEXEC, 3);

                        if (fd < 0) {
                                int r = -errno;

                                while (n--)
                                        if (parts[n].memfd >= 0)
                                                (void) close(parts[n].memfd);
                                free(parts);
                                free(tail);
                                return r;
                        }
                        parts[n++] = (BridgeMsgPart){ .memfd = fd, .offset = p->start[i],
                                                      .size = p->len[i] };
                        continue;
                }
                if (p->ptr[i])
                        memcpy(tail + at, p->ptr[i], p->len[i]);
                else
                        memset(tail + at, 0, p->len[i]);
                if (n > 0 && parts[n - 1].memfd < 0)
                        parts[n - 1].size += p->len[i];
                else
                        parts[n++] = (BridgeMsgPart){ .memfd = -1, .offset = at, .size = p->len[i] };
                at += p->len[i];
        }
        return bridge_msg_new_stamped_parts(nc->conn->bus->msg_cache, head, head_size, hdr,
                                            nc->conn->unique_name, nc->conn->id, parts, n,
                                            tail, ret);
}

/* The payload bytes kdbus_staging_import() made of a PAYLOAD_VEC or PAYLOAD_MEMFD item:
 * a vec's data; for a NULL vec (padding) and a memfd, their size's remainder modulo 8 in
 * zero bytes (so that what follows stays aligned as in the sender's layout). */
static uint64_t opaque_item_bytes(const struct kdbus_item *item) {
        if (item->type == KDBUS_ITEM_PAYLOAD_VEC)
                return item->vec.offset ? item->vec.size : item->vec.size % 8;
        if (item->type == KDBUS_ITEM_PAYLOAD_MEMFD)
                return item->memfd.size % 8;
        return 0;
}

/*
 * The destination of an opaque message (what routes it): the DST_NAME, or dst_id's unique
 * name, or none for a broadcast, into @buf. kdbus_pin_dst(): with a name and an id, the name's
 * owner must be that id (EREMCHG). Return: 0 (*ret: the destination or NULL) or -errno.
 */
static int opaque_destination(NativeConn *nc, const struct kdbus_msg *km, const SendParts *p,
                              char *buf, size_t size, const char **ret) {
        BridgeConn *owner;

        *ret = NULL;
        if (km->dst_id == KDBUS_DST_ID_BROADCAST)
                return 0;
        if (!p->dst_name) {
                if (size < BRIDGE_UNIQUE_NAME_MAX)
                        return -EINVAL;
                bus_format_unique_name(nc->conn->bus, km->dst_id, buf);
                *ret = buf;
                return 0;
        }
        owner = bus_find_conn_by_name(nc->conn->bus, p->dst_name);
        if (!owner)
                owner = bus_find_activator(nc->conn->bus, p->dst_name);
        if (owner && km->dst_id != KDBUS_DST_ID_NAME && owner->id != km->dst_id)
                return -EREMCHG;
        *ret = p->dst_name;
        return 0;
}

/*
 * A SEND whose payload is no dbus1 message (another payload_type, or bytes that do not
 * parse as one): kdbus carried it opaque, and so does the bus, for native receivers only
 * (bridge_msg_new_opaque()). The message keeps what kdbus's staging kept: the sender's
 * kdbus_msg and items, PAYLOAD_VEC items turned into PAYLOAD_OFF ones whose offsets count
 * from the payload's start (~0 for a NULL vec), the fds of FDS and PAYLOAD_MEMFD items as
 * -1 (the memfds themselves go into the message's parts, the FDS ones are the caller's),
 * then, 8-aligned, the payload bytes (opaque_item_bytes()). native/conn.c writes that into
 * a receiver's pool with the metadata items after the items. The dbus1 header the core
 * routes by is made from the kdbus fields: a SIGNAL is a signal, a message with
 * cookie_reply (and no EXPECT_REPLY) a method return, anything else a method call (with
 * NO_REPLY_EXPECTED unless EXPECT_REPLY); serials are the low 32 bits of the cookies.
 * Return: 0, -errno for the peer (EBADMSG: a bloom filter on a message that is no signal
 * or none on a signal; EREMCHG; EMSGSIZE), or -ENOMEM.
 */
static int send_new_opaque_msg(NativeConn *nc, const struct kdbus_msg *km, const uint8_t *buf,
                               size_t size, const SendParts *p, BridgeMsg **ret) {
        char unique[sizeof(nc->conn->unique_name)];
        const struct kdbus_item *item;
        struct kdbus_item *out;
        BridgeMsgPart *parts = NULL;
        uint64_t payload = 0, at = 0, head;
        struct kdbus_msg *okm;
        WireHeader hdr = { .type = WIRE_MSG_METHOD_CALL };
        BridgeMsg *m;
        unsigned n = 0;
        int r;

        /* kdbus_msg_examine(): a bloom filter iff a signal (the bus computes no filter for
         * bytes it cannot read) */
        if (!(km->flags & KDBUS_MSG_SIGNAL) != !p->bloom)
                return -EBADMSG;
        r = opaque_destination(nc, km, p, unique, sizeof(unique), &hdr.destination);
        if (r)
                return r;
        if (km->flags & KDBUS_MSG_SIGNAL)
                hdr.type = WIRE_MSG_SIGNAL;
        else if (!(km->flags & KDBUS_MSG_EXPECT_REPLY) && km->cookie_reply) {
                hdr.type = WIRE_MSG_METHOD_RETURN;
                hdr.reply_serial = (uint32_t)km->cookie_reply;
        } else if (!(km->flags & KDBUS_MSG_EXPECT_REPLY))
                hdr.flags |= WIRE_FLAG_NO_REPLY_EXPECTED;
        if (km->flags & KDBUS_MSG_NO_AUTO_START)
                hdr.flags |= WIRE_FLAG_NO_AUTO_START;
        hdr.serial = (uint32_t)km->cookie;
        hdr.n_fds = p->n_msg_fds;

        KDBUS_ITEMS_FOREACH(item, km->items, km->size - sizeof(*km))
                payload += opaque_item_bytes(item);
        head = ALIGN8(km->size);
        if (head + payload > nc->conn->bus->limits.max_message_size)
                return -EMSGSIZE;
        if (p->n_memfds) {
                parts = calloc(p->n_memfds, sizeof(*parts));
                if (!parts)
                        return -ENOMEM;
                for (unsigned i = 0; i < p->n; ++i) {
                        int fd;

                        if (p->memfd[i] < 0)
                                continue;
                        fd = fcntl(p->memfd[i], F_DUPFD_CLOEXEC, 3);
                        if (fd < 0) {
                                r = -errno;
                                while (n--)
                                        (void) close(parts[n].memfd);
                                free(parts);
                                return r;
                        }
                        parts[n++] = (BridgeMsgPart){ .memfd = fd, .offset = p->start[i],
                                                      .size = p->len[i] };
                }
        }
        r = bridge_msg_new_opaque(nc->conn->bus->msg_cache, &hdr, nc->conn->unique_name,
                                  nc->conn->id, head + payload, parts, n, &m);
        if (r)
                return r;

        /* zeroed: only the gap before the payload and the zero bytes of NULL vecs and
         * memfds (a cached buffer holds an earlier message's bytes); the rest is copied,
         * not cleared first (a 128 KiB payload was written twice) */
        okm = (struct kdbus_msg *)m->opaque;
        memcpy(okm, km, km->size);
        memset(m->opaque + km->size, 0, head - km->size);
        okm->src_id = nc->conn->id;
        out = okm->items;
        KDBUS_ITEMS_FOREACH(item, km->items, km->size - sizeof(*km)) {
                uint64_t bytes = opaque_item_bytes(item);

                switch (item->type) {
                case KDBUS_ITEM_PAYLOAD_VEC:
                        out->type = KDBUS_ITEM_PAYLOAD_OFF;
                        if (item->vec.offset) {
                                /* in the datagram: send_collect() checked the range */
                                memcpy(m->opaque + head + at, buf + item->vec.offset, bytes);
                                out->vec.offset = at;
                        } else {
                                memset(m->opaque + head + at, 0, bytes);
                                out->vec.offset = UINT64_MAX;
                        }
                        break;
                case KDBUS_ITEM_PAYLOAD_MEMFD:
                        memset(m->opaque + head + at, 0, bytes);
                        out->memfd.fd = -1;
                        break;
                case KDBUS_ITEM_FDS:
                        memset(out->fds, 0xff, item->size - KDBUS_ITEM_HEADER_SIZE);
                        break;
                default:
                        break;
                }
                at += bytes;
                out = KDBUS_ITEM_NEXT(out);
        }
        assert(at == payload);
        *ret = m;
        return 0;
}

/**
 * native_conn_send() - SEND
 * @nc:         the sender
 * @buf:        the datagram's command part (kdbus_cmd_send first)
 * @size:       its size
 * @io:         the fds that came with it (borrowed)
 * @fds:        the datagram's fds (borrowed)
 * @n_fds:      their number
 *
 * Return: 0, 1 (SYNC_REPLY: the reply comes through sync_done), or a negative errno for
 * the peer, in kdbus's order (see the checks below): EINVAL (malformed; an item a message
 * cannot carry, malformed (a PAYLOAD_VEC / PAYLOAD_MEMFD of size 0, an FDS payload not a
 * multiple of 4, a BLOOM_FILTER under 8 bytes), or FDS / BLOOM_FILTER / DST_NAME twice;
 * a DST_NAME that is no well-known name; payload type KERNEL; EXPECT_REPLY with
 * timeout_ns 0; SYNC_REPLY without EXPECT_REPLY; a SIGNAL with cookie_reply; the header
 * and the kdbus fields disagree), EBADMSG (a broadcast that is no SIGNAL or has a
 * DST_NAME, a BLOOM_FILTER on a message that is no SIGNAL, an opaque signal without
 * one, a unicast to a legacy receiver of an opaque payload or an invalid memfd body),
 * ENOTUNIQ (a broadcast with timeout_ns / cookie_reply
 * or fds, a SIGNAL with EXPECT_REPLY), EFAULT (an offset outside the datagram, a memfd
 * range past its end), EFAULT / EDOM (a bloom filter not of 8-byte words / not the bus's
 * size), EOPNOTSUPP (an FDS fd is a unix socket, as kdbus refused them), ETXTBSY (a memfd not sealed
 * F_SEAL_SHRINK|GROW|WRITE|SEAL), EMEDIUMTYPE (not a memfd), E2BIG (more than 16 memfds),
 * EMSGSIZE (the inline bytes exceed max_message_size, or the whole message with its memfds
 * does and a legacy receiver would need its bytes), EMFILE (more than 16 fds),
 * EDESTADDRREQ, EREMCHG, ESRCH, ENXIO, EADDRNOTAVAIL (NO_AUTO_START to a name only an
 * activator holds), ENOBUFS, ECOMM, EBADSLT, EMLINK, ENOMEM; ETIMEDOUT (SYNC_REPLY whose
 * timeout_ns passed), EBADF (a CANCEL_FD or memfd index outside the datagram's fds, a
 * negative memfd fd).
 */
int native_conn_send(NativeConn *nc, void *buf, size_t size, NativeCommandIo *io) {
        struct kdbus_cmd_send *cmd = buf;
        const struct kdbus_msg *km;
        _cleanup_(bridge_msg_unrefp) BridgeMsg *m = NULL;
        BridgeReply *answered = NULL;
        SendParts p;
        uint8_t *joined = NULL;
        const uint8_t *payload;
        const WireHeader *h;
        WireHeader hdr;
        bool opaque, only_vecs;
        size_t frame, head_size;
        uint64_t deadline_usec = 0;
        int cancel_fd = -1, cancel_dup = -1;
        int r;

        send_parts_init(&p);
        r = send_cancel_fd(cmd, io->fds, io->n_fds, &cancel_fd);
        if (r)
                return r;
        memset(&cmd->reply, 0, sizeof(cmd->reply));
        cmd->return_flags = 0;
        if (cmd->msg_address % 8 || cmd->msg_address < cmd->size ||
            cmd->msg_address > size || size - cmd->msg_address < sizeof(*km))
                return -EFAULT;
        km = (const void *)((uint8_t *)buf + cmd->msg_address);
        /* kdbus's order: the message's size, flags and items (kdbus_args_parse()), its
         * src_id, then kdbus_msg_examine(), then the files its items name
         * (kdbus_staging_import()); our checks of the dbus1 header come after all of it */
        if (km->size < sizeof(*km) || km->size > size - cmd->msg_address)
                return -EINVAL;
        if (km->flags & ~(uint64_t)(KDBUS_MSG_EXPECT_REPLY | KDBUS_MSG_NO_AUTO_START |
                                    KDBUS_MSG_SIGNAL))
                return -EINVAL;
        r = send_items_verify(km, &only_vecs);
        if (r)
                return r;
        if (km->src_id != 0 && km->src_id != nc->conn->id)
                return -EINVAL;
        r = send_examine(cmd, km, &nc->conn->bus->bloom, only_vecs, &nc->field_memo);
        if (r)
                return r;
        /* timeout_ns (a union with cookie_reply) is the call's absolute CLOCK_MONOTONIC
         * deadline (never 0, see send_examine()); UINT64_MAX is none of its own
         * (libkdbus's LIBKDBUS_DEADLINE_NEVER) */
        if ((km->flags & KDBUS_MSG_EXPECT_REPLY) && km->timeout_ns != UINT64_MAX)
                deadline_usec = km->timeout_ns / 1000 + (km->timeout_ns % 1000 != 0);

        r = send_collect(&p, buf, size, km, io->fds, io->n_fds);
        if (r)
                goto out;
        /* one dbus1 message goes to every peer; anything else is carried opaque, as kdbus
         * carried every payload, to native peers only */
        opaque = km->payload_type != KDBUS_PAYLOAD_DBUS;
        if (!opaque) {
                /* the inline bytes: everything, or the vec parts before the first memfd */
                r = parts_join(&p, p.with_memfd ? p.first_memfd : p.n, &payload, &head_size,
                               &joined);
                if (r)
                        goto out;
                opaque = head_size < 16 || wire_message_frame(payload, head_size, &frame) ||
                         frame != p.total ||
                         wire_message_parse_memo(payload, head_size, p.n_msg_fds,
                                                 p.with_memfd ? WIRE_PARSE_HEADER_ONLY : 0,
                                                 &nc->field_memo, &hdr);
        }
        if (opaque) {
                r = send_new_opaque_msg(nc, km, buf, size, &p, &m);
                if (r)
                        goto out;
        } else {
                r = send_check_header(nc, km, &hdr, &p);
                if (r)
                        goto out;
                /* max_message_size bounds what the bus holds in its memory: the inline
                 * bytes, always (as for a legacy sender's message); memfd bytes only where
                 * the bus must read them (below) */
                if (p.total - send_memfd_bytes(&p) > nc->conn->bus->limits.max_message_size) {
                        r = -EMSGSIZE;
                        goto out;
                }
                if (p.with_memfd)
                        r = send_new_parts_msg(nc, &p, payload, head_size, &hdr, &m);
                else
                        r = bridge_msg_new_stamped_cached(nc->conn->bus->msg_cache, payload,
                                                          &hdr, nc->conn->unique_name,
                                                          nc->conn->id, &m);
                if (r) {
                        r = r == WIRE_E_TOO_LARGE ? -EMSGSIZE : r < 0 ? r : -EIO;
                        goto out;
                }
                /* kdbus let memfds be as large as they were (KDBUS_MSG_MAX_PAYLOAD_VEC_SIZE
                 * bounds the vecs only): a native receiver maps the sender's file, the bus
                 * holds an fd. A legacy receiver needs the bytes in the bus: over
                 * max_message_size they are never read (unicast: EMSGSIZE; broadcasts,
                 * monitors: legacy ones skip it) */
                if (p.with_memfd && p.total > nc->conn->bus->limits.max_message_size)
                        bridge_msg_refuse_bytes(m, WIRE_E_TOO_LARGE);
        }
        h = &m->hdr;
        m->priority = km->priority;
        m->reply_deadline_usec = deadline_usec;
        if (p.bloom) {
                r = bridge_msg_set_sender_bloom(m, &nc->conn->bus->bloom, p.bloom->data,
                                                p.bloom->generation);
                if (r)
                        goto out;
                /* kdbus matched the sender's filter alone; the bus adds the entries of a
                 * dbus1 header and arguments, which an opaque payload has not */
                if (opaque)
                        m->has_bloom = true;
        }
        if (nc->hello_flags & KDBUS_HELLO_CAPTURE_PER_MESSAGE) {
                r = native_meta_capture_msg(nc, m);     /* the sender as it is now */
                if (r)
                        goto out;
        }
        if (p.n_msg_fds) {
                int *mfds = malloc(p.n_msg_fds * sizeof(int));

                if (!mfds) {
                        r = -ENOMEM;
                        goto out;
                }
                memcpy(mfds, p.msg_fds, p.n_msg_fds * sizeof(int));
                bridge_msg_take_fds(m, mfds, p.n_msg_fds);
                p.n_msg_fds = 0;
        }

        /* kdbus: a name held by an activator alone is no destination for NO_AUTO_START */
        if (h->destination &&
            ((km->flags & KDBUS_MSG_NO_AUTO_START) || (h->flags & WIRE_FLAG_NO_AUTO_START)) &&
            h->destination[0] != ':' && !bus_find_conn_by_name(nc->conn->bus, h->destination) &&
            bus_find_activator(nc->conn->bus, h->destination)) {
                r = -EADDRNOTAVAIL;
                goto out;
        }
        /* kdbus: a reply passes only through the reply slot its call opened, whatever a
         * dbus1 policy would let through for legacy peers */
        if (h->type == WIRE_MSG_METHOD_RETURN || h->type == WIRE_MSG_ERROR) {
                /* a unique destination is dst_id's name (send_check_header(), or made
                 * from it for an opaque payload): no need to parse it */
                BridgeConn *dst = h->destination[0] == ':' ?
                                  bus_find_conn(nc->conn->bus, km->dst_id) :
                                  bus_find_conn_by_name(nc->conn->bus, h->destination);

                if (dst) {
                        answered = bus_find_reply(nc->conn->bus, dst, nc->conn, h->reply_serial);
                        if (!answered) {
                                r = -EBADSLT;
                                goto out;
                        }
                }
        }
        /* kdbusd's transport holds a further SYNC_REPLY back while NATIVE_MAX_SYNC wait
         * (proxy/native-chan.c); a caller of native_conn_command() that does not hears
         * EMLINK, kdbus's errno for too many calls waiting */
        if ((cmd->flags & KDBUS_SEND_SYNC_REPLY) && nc->n_sync >= NATIVE_MAX_SYNC) {
                r = -EMLINK;
                goto out;
        }
        /* kdbus: a synchronous call whose deadline passed fails before it is sent */
        if ((cmd->flags & KDBUS_SEND_SYNC_REPLY) && deadline_usec &&
            deadline_usec <= nc->conn->bus->now_usec) {
                r = -ETIMEDOUT;
                goto out;
        }
        /* the bus keeps the cancel fd while the call waits: take it before sending */
        if ((cmd->flags & KDBUS_SEND_SYNC_REPLY) && cancel_fd >= 0) {
                cancel_dup = fcntl(cancel_fd, F_DUPFD_CLOEXEC, 3);
                if (cancel_dup < 0) {
                        r = -errno;
                        goto out;
                }
        }
        /* the slot found above: nothing ran since that could end it */
        r = bridge_conn_send_answer(nc->conn, m, answered);
        /* the core answers a legacy peer on a custom endpoint as if a hidden name did not
         * exist; kdbus fails SEND to an existing one with EPERM (no TALK) */
        if ((r == BRIDGE_E_NAME_UNKNOWN || r == BRIDGE_E_PEER_UNKNOWN) && nc->conn->endpoint &&
            bus_find_conn_by_name(nc->conn->bus, h->destination))
                r = BRIDGE_E_ACCESS_DENIED;
        r = native_errno_from_bridge(r);
        if (r == 0 && (cmd->flags & KDBUS_SEND_SYNC_REPLY)) {
                nc->sync[nc->n_sync++] = (NativeSync){ .cookie = km->cookie,
                                                       .cancel_fd = cancel_dup };
                cancel_dup = -1;
                r = 1;
        }
out:
        fd_close(cancel_dup);
        free(joined);
        send_parts_clear(&p);
        return r;
}
