/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A kdbus ioctl as one request datagram to kdbusd (docs/native.md, Transport; see
 * preload/preload.h). The program's memory is read and written through
 * process_vm_readv/_writev on ourselves: an address the kernel could not have used gives
 * EFAULT, as copy_from_user() did, instead of a crash in the library.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "kdbus/kdbus.h"
#include "preload/preload.h"

/* kdbus's limits (ipc/kdbus/limits.h of its final tree) the library checks before it
 * reads: a command or message struct over KDBUS_CMD_MAX_SIZE is EMSGSIZE, PAYLOAD_VEC
 * bytes over KDBUS_MSG_MAX_PAYLOAD_VEC_SIZE are EMSGSIZE */
#define PRELOAD_CMD_MAX_SIZE (32u * 1024u)
#define PRELOAD_MSG_MAX_VEC_SIZE (2u * 1024u * 1024u)
/* the kernel's limit for fds in one SCM_RIGHTS message (SCM_MAX_FD): kdbus's final code
 * answered E2BIG for more in one message */
#define PRELOAD_MAX_FDS 253u
/* Our pid for process_vm_readv/_writev, cached (getpid() is a system call each time);
 * forgotten in a fork child (preload_pid_forget(), from pthread_atfork). */
static pid_t self_pid;

void preload_pid_forget(void) {
        __atomic_store_n(&self_pid, 0, __ATOMIC_RELAXED);
}

static pid_t preload_self(void) {
        pid_t pid = __atomic_load_n(&self_pid, __ATOMIC_RELAXED);

        if (pid == 0) {
                pid = getpid();
                __atomic_store_n(&self_pid, pid, __ATOMIC_RELAXED);
        }
        return pid;
}

/* The calling thread's stack [lo, hi) (pthread_getattr_np() once per thread; 0, 0: unknown,
 * e.g. a thread made by a bare clone()). */
static __thread uintptr_t stack_lo, stack_hi;
static __thread bool stack_known;

/*
 * Is [@p, @p + @n) certainly readable and writable without asking the kernel? Yes when it
 * lies between the current frame and the top of this thread's stack: that is one mapping,
 * in use right now. Commands are mostly built on the caller's stack, so most copies need
 * no system call; anything else (the heap, a signal stack, a coroutine's) goes through
 * process_vm_readv/_writev, which say EFAULT instead of crashing.
 */
static bool preload_mem_on_stack(const void *p, size_t n) {
        volatile char here = 0;
        uintptr_t a = (uintptr_t)p, sp = (uintptr_t)&here;

        if (!stack_known) {
                pthread_attr_t attr;
                void *addr;
                size_t size;

                stack_known = true;
                if (pthread_getattr_np(pthread_self(), &attr) == 0) {
                        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
                                stack_lo = (uintptr_t)addr;
                                stack_hi = stack_lo + size;
                        }
                        (void) pthread_attr_destroy(&attr);
                }
        }
        return sp >= stack_lo && sp < stack_hi && a >= sp && a < stack_hi &&
               n <= stack_hi - a;
}

int preload_mem_read(void *dst, const void *src, size_t n) {
        struct iovec local = { dst, n }, remote = { (void *)src, n };
        ssize_t r;

        if (n == 0)
                return 0;
        if (preload_mem_on_stack(src, n)) {
                memcpy(dst, src, n);
                return 0;
        }
        r = process_vm_readv(preload_self(), &local, 1, &remote, 1, 0);
        if (r < 0 && errno != EFAULT) {
                /* process_vm_readv refused (seccomp, no CONFIG_CROSS_MEMORY_ATTACH): read
                 * directly, a bad address then crashes as it would without us */
                memcpy(dst, src, n);
                return 0;
        }
        return r == (ssize_t)n ? 0 : -EFAULT;
}

int preload_mem_write(void *dst, const void *src, size_t n) {
        struct iovec local = { (void *)src, n }, remote = { dst, n };
        ssize_t r;

        if (n == 0)
                return 0;
        if (preload_mem_on_stack(dst, n)) {
                memcpy(dst, src, n);
                return 0;
        }
        r = process_vm_writev(preload_self(), &local, 1, &remote, 1, 0);
        if (r < 0 && errno != EFAULT) {
                memcpy(dst, src, n);
                return 0;
        }
        return r == (ssize_t)n ? 0 : -EFAULT;
}

/* PAYLOAD_VECs of one SEND the datagram takes straight from the program's memory (with
 * their padding: two iovecs each); a message with more is copied */
#define PRELOAD_DIRECT_VECS 32u

/* A growing request: the fixed parts, then (ext) the PAYLOAD_VEC bytes, which sendmsg()
 * reads from the program's memory itself: EFAULT for an address it cannot read, as
 * kdbus's copy of the vector, and no copy of ours. */
typedef struct Buf {
        uint8_t *p;
        size_t size, cap;
        struct iovec ext[2 * PRELOAD_DIRECT_VECS];
        unsigned n_ext;
        size_t ext_size;
} Buf;

static const uint8_t preload_zeros[8];

static int buf_reserve(Buf *b, size_t n) {
        size_t cap;
        uint8_t *p;

        if (b->size + n <= b->cap)
                return 0;
        cap = b->cap ? b->cap : 4096;
        while (cap < b->size + n)
                cap *= 2;
        p = realloc(b->p, cap);
        if (!p)
                return -ENOMEM;
        b->p = p;
        b->cap = cap;
        return 0;
}

/* Append @n bytes of the program's memory at @src (NULL: zeros), 8-aligned. Return: the
 * offset, or -errno. */
static int64_t buf_append(Buf *b, const void *src, size_t n, bool user) {
        size_t off = b->size, padded = (n + 7) & ~(size_t)7;
        int r;

        r = buf_reserve(b, padded);
        if (r < 0)
                return r;
        memset(b->p + off, 0, padded);
        if (src && user)
                r = preload_mem_read(b->p + off, src, n);
        else if (src)
                memcpy(b->p + off, src, n);
        if (r < 0)
                return r;
        b->size += padded;
        return (int64_t)off;
}

/* An fd of the program for the datagram: its index. Return: index, or -E2BIG. */
static int fds_add(int *fds, unsigned *n, int fd) {
        if (*n >= PRELOAD_MAX_FDS)
                return -E2BIG;
        fds[*n] = fd;
        return (int)(*n)++;
}

/* How many PAYLOAD_VEC items with an address the message @m (@size bytes) has. */
static size_t preload_msg_vecs(const uint8_t *m, uint64_t size) {
        size_t pos = offsetof(struct kdbus_msg, items), n = 0;

        while (pos + KDBUS_ITEM_HEADER_SIZE <= size) {
                const struct kdbus_item *item = (const void *)(m + pos);

                if (item->size < KDBUS_ITEM_HEADER_SIZE || item->size > size - pos)
                        break;
                if (item->type == KDBUS_ITEM_PAYLOAD_VEC &&
                    item->size >= KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec) &&
                    item->vec.address)
                        n++;
                pos += (item->size + 7) & ~(uint64_t)7;
        }
        return n;
}

/*
 * The message of a SEND, read from the program's memory at @address, appended to @b
 * with its PAYLOAD_VEC bytes behind it (their addresses become offsets from @cmd_off,
 * the command's start), its FDS and PAYLOAD_MEMFD fds moved to @fds (their values become
 * indices). Return: the message's offset from the command, or -errno.
 */
static int64_t preload_send_msg(Buf *b, size_t cmd_off, uint64_t address, int *fds,
                                unsigned *n_fds) {
        uint64_t msize, vec_total = 0;
        struct kdbus_item *item;
        size_t msg_off, pos;
        bool direct;
        int64_t r;

        if (address & 7)
                return -EFAULT;
        r = preload_mem_read(&msize, (const void *)(uintptr_t)address, sizeof(msize));
        if (r < 0)
                return r;
        if (msize < sizeof(struct kdbus_msg))
                return -EINVAL;
        if (msize > PRELOAD_CMD_MAX_SIZE)
                return -EMSGSIZE;
        r = buf_append(b, (const void *)(uintptr_t)address, msize, true);
        if (r < 0)
                return r;
        msg_off = (size_t)r;
        direct = preload_msg_vecs(b->p + msg_off, msize) <= PRELOAD_DIRECT_VECS;
        /* walk the items as they are; malformed ones go to the bus unchanged, it refuses
         * them as kdbus did */
        pos = offsetof(struct kdbus_msg, items);
        while (pos + KDBUS_ITEM_HEADER_SIZE <= msize) {
                uint64_t isize;

                item = (struct kdbus_item *)(void *)(b->p + msg_off + pos);
                isize = item->size;
                if (isize < KDBUS_ITEM_HEADER_SIZE || isize > msize - pos)
                        break;
                switch (item->type) {
                case KDBUS_ITEM_PAYLOAD_VEC: {
                        uint64_t addr, sz;

                        if (isize < KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_vec))
                                break;
                        addr = item->vec.address;
                        sz = item->vec.size;
                        if (!addr)
                                break;          /* zeros, as the bus reads offset 0 */
                        vec_total += sz;
                        if (vec_total > PRELOAD_MSG_MAX_VEC_SIZE)
                                return -EMSGSIZE;
                        if (direct) {
                                size_t pad = (size_t)(-sz & 7);

                                item->vec.address = b->size + b->ext_size - cmd_off;
                                if (sz)
                                        b->ext[b->n_ext++] = (struct iovec){
                                                (void *)(uintptr_t)addr, (size_t)sz };
                                if (pad)
                                        b->ext[b->n_ext++] = (struct iovec){
                                                (void *)preload_zeros, pad };
                                b->ext_size += (size_t)sz + pad;
                                break;
                        }
                        r = buf_append(b, (const void *)(uintptr_t)addr, sz, true);
                        if (r < 0)
                                return r;
                        /* buf_append may have moved the buffer */
                        item = (struct kdbus_item *)(void *)(b->p + msg_off + pos);
                        item->vec.address = (uint64_t)r - cmd_off;
                        break;
                }
                case KDBUS_ITEM_PAYLOAD_MEMFD:
                        if (isize < KDBUS_ITEM_HEADER_SIZE + sizeof(struct kdbus_memfd) ||
                            item->memfd.fd < 0)
                                break;
                        r = fds_add(fds, n_fds, item->memfd.fd);
                        if (r < 0)
                                return r;
                        item->memfd.fd = (int)r;
                        break;
                case KDBUS_ITEM_FDS:
                        for (size_t i = 0; i < (isize - KDBUS_ITEM_HEADER_SIZE) / sizeof(int); i++) {
                                if (item->fds[i] < 0)
                                        continue;
                                r = fds_add(fds, n_fds, item->fds[i]);
                                if (r < 0)
                                        return r;
                                item->fds[i] = (int)r;
                        }
                        break;
                default:
                        break;
                }
                pos += (isize + 7) & ~(uint64_t)7;
        }
        return (int64_t)(msg_off - cmd_off);
}

/* The CANCEL_FD item of a SEND command: its fd to the datagram. */
static int preload_send_items(Buf *b, size_t cmd_off, uint64_t size, int *fds,
                              unsigned *n_fds) {
        size_t pos = offsetof(struct kdbus_cmd_send, items);

        while (pos + KDBUS_ITEM_HEADER_SIZE <= size) {
                struct kdbus_item *item = (void *)(b->p + cmd_off + pos);
                int r;

                if (item->size < KDBUS_ITEM_HEADER_SIZE || item->size > size - pos)
                        break;
                if (item->type == KDBUS_ITEM_CANCEL_FD &&
                    item->size >= KDBUS_ITEM_HEADER_SIZE + sizeof(int) && item->fds[0] >= 0) {
                        r = fds_add(fds, n_fds, item->fds[0]);
                        if (r < 0)
                                return r;
                        item->fds[0] = r;
                }
                pos += (item->size + 7) & ~(uint64_t)7;
        }
        return 0;
}

static int preload_fds_publish(PreloadHandle *h, unsigned ci, int fd, uint64_t offset,
                               const int *fds, unsigned n);

static bool preload_command_known(unsigned long cmd) {
        switch (cmd) {
        case KDBUS_CMD_BUS_MAKE:
        case KDBUS_CMD_ENDPOINT_MAKE:
        case KDBUS_CMD_ENDPOINT_UPDATE:
        case KDBUS_CMD_HELLO:
        case KDBUS_CMD_UPDATE:
        case KDBUS_CMD_BYEBYE:
        case KDBUS_CMD_FREE:
        case KDBUS_CMD_CONN_INFO:
        case KDBUS_CMD_BUS_CREATOR_INFO:
        case KDBUS_CMD_LIST:
        case KDBUS_CMD_SEND:
        case KDBUS_CMD_RECV:
        case KDBUS_CMD_NAME_ACQUIRE:
        case KDBUS_CMD_NAME_RELEASE:
        case KDBUS_CMD_MATCH_ADD:
        case KDBUS_CMD_MATCH_REMOVE:
                return true;
        default:
                return false;
        }
}


/* Handles with FREEs answered but not sent (preload_flush_freed()); a handle stays listed
 * until a flush finds it has none. */
#define PRELOAD_FREEING_MAX 16u
static PreloadHandle *freeing[PRELOAD_FREEING_MAX];
static unsigned n_freeing;
static pthread_mutex_t freeing_lock = PTHREAD_MUTEX_INITIALIZER;
/* this thread is sending FREEs of preload_flush_freed() */
static __thread bool in_flush;

/* @offset was handed out (RECV, SYNC_REPLY): its FREE may be answered here. */
static void preload_held_add(PreloadHandle *h, uint64_t offset, uint64_t size) {
        if (h->n_held < PRELOAD_HELD_MAX && !h->shared) {
                h->held_size[h->n_held] = size;
                h->held[h->n_held++] = offset;
        }
}

/* A FREE of @offset goes to the bus: it is no longer ours to answer. */
static void preload_held_drop(PreloadHandle *h, uint64_t offset) {
        for (unsigned i = 0; i < h->n_held; i++)
                if (h->held[i] == offset) {
                        h->held_size[i] = h->held_size[h->n_held - 1];
                        h->held[i] = h->held[--h->n_held];
                        return;
                }
}

/* Into kdbusd's free ring, if it has room (@h's lock held, @i: the offset's index in
 * held[]). Return: written. */
static bool preload_free_ring(PreloadHandle *h, unsigned i) {
        struct kdbus_wire_free_ring *ring = h->ring;
        uint64_t tail, head;

        if (!ring)
                return false;
        tail = __atomic_load_n(&ring->tail, __ATOMIC_RELAXED);
        head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
        if (tail - head >= KDBUS_WIRE_FREE_RING_SIZE)
                return false;
        __atomic_store_n(&ring->offsets[tail % KDBUS_WIRE_FREE_RING_SIZE], h->held[i],
                         __ATOMIC_RELAXED);
        __atomic_store_n(&ring->tail, tail + 1, __ATOMIC_RELEASE);
        h->held_size[i] = h->held_size[h->n_held - 1];
        h->held[i] = h->held[--h->n_held];
        return true;
}

/* FREE of @offset: if it was handed out to us, answer 0 (kdbus's answer: the slice is the
 * peer's) and write it into kdbusd's free ring, or else send it later. Takes the handle's
 * lock (not held by the caller). Return: answered. */
static bool preload_free_later(PreloadHandle *h, uint64_t offset) {
        bool found = false, listed;
        unsigned i;

        (void) pthread_mutex_lock(&h->lock);
        for (i = 0; i < h->n_held && h->held[i] != offset; i++)
                ;
        if (i < h->n_held && preload_free_ring(h, i)) {
                (void) pthread_mutex_unlock(&h->lock);
                return true;
        }
        found = i < h->n_held && h->n_freed < PRELOAD_HELD_MAX;
        (void) pthread_mutex_unlock(&h->lock);
        if (!found)
                return false;
        /* the list first (its lock is taken before a handle's, by preload_flush_freed()) */
        (void) pthread_mutex_lock(&freeing_lock);
        if (!h->listed && n_freeing < PRELOAD_FREEING_MAX) {
                freeing[n_freeing] = h;
                __atomic_store_n(&n_freeing, n_freeing + 1, __ATOMIC_RELEASE);
                h->listed = true;
        }
        listed = h->listed;
        (void) pthread_mutex_unlock(&freeing_lock);
        if (!listed)
                return false;
        (void) pthread_mutex_lock(&h->lock);
        for (i = 0; i < h->n_held && h->held[i] != offset; i++)
                ;
        found = i < h->n_held && h->n_freed < PRELOAD_HELD_MAX;
        if (found) {
                h->freed_bytes += h->held_size[i];
                h->held_size[i] = h->held_size[h->n_held - 1];
                h->held[i] = h->held[--h->n_held];
                h->freed[h->n_freed++] = offset;
        }
        (void) pthread_mutex_unlock(&h->lock);
        return found;
}

static void freeing_remove_locked(unsigned i) {
        freeing[i]->listed = false;
        freeing[i] = freeing[n_freeing - 1];
        __atomic_store_n(&n_freeing, n_freeing - 1, __ATOMIC_RELEASE);
}

static int preload_ioctl_locked(PreloadHandle *h, unsigned ci, int fd, unsigned long command,
                                void *arg);

/* FREEs held back up to this many, of slices adding up to at most 1/64 of the pool, may
 * wait in a poll() whose handle has a held RECV (they go with the next request): too
 * little to keep a message out of the pool or another user under its quota; more are
 * sent before waiting */
#define PRELOAD_FREED_WAIT_MAX (PRELOAD_HELD_MAX / 2)
#define PRELOAD_FREED_WAIT_SHARE 64u

void preload_flush_freed(PreloadHandle *except, bool try_only, bool waiting) {
        unsigned i = 0;

        if (!__atomic_load_n(&n_freeing, __ATOMIC_ACQUIRE))
                return;
        if (try_only ? pthread_mutex_trylock(&freeing_lock) != 0 :
                       pthread_mutex_lock(&freeing_lock) != 0)
                return;
        in_flush = true;
        while (i < n_freeing) {
                PreloadHandle *h = freeing[i];
                unsigned ci = h->chan0_foreign ? 1 : 0;
                struct kdbus_cmd_free f = { .size = sizeof(f) };
                bool send;

                /* the handle's own channel (a fork child's first), if free */
                if (h == except || ci >= __atomic_load_n(&h->n_chans, __ATOMIC_ACQUIRE) ||
                    pthread_mutex_trylock(&h->chan[ci].lock) != 0) {
                        i++;
                        continue;
                }
                (void) pthread_mutex_lock(&h->lock);
                /* a wait on a handle with a held RECV: a few may stay (no pool pressure) */
                send = h->n_freed && preload_handle_get(h->sock) == h &&
                       !(waiting && preload_can_arm(h) && h->n_freed < PRELOAD_FREED_WAIT_MAX &&
                         h->freed_bytes <= h->pool_size / PRELOAD_FREED_WAIT_SHARE);
                /* the last FREE as the command, the others in its batch */
                if (send)
                        f.offset = h->freed[--h->n_freed];
                (void) pthread_mutex_unlock(&h->lock);
                if (send)
                        (void) preload_ioctl_locked(h, ci, ci ? h->chan[ci].sock : h->sock,
                                                    KDBUS_CMD_FREE, &f);
                if (__atomic_load_n(&h->n_freed, __ATOMIC_RELAXED) == 0)
                        freeing_remove_locked(i);
                else
                        i++;
                (void) pthread_mutex_unlock(&h->chan[ci].lock);
        }
        in_flush = false;
        (void) pthread_mutex_unlock(&freeing_lock);
}

void preload_handle_forget(PreloadHandle *h) {
        if (!h->listed)
                return;
        (void) pthread_mutex_lock(&freeing_lock);
        for (unsigned i = 0; i < n_freeing; i++)
                if (freeing[i] == h) {
                        freeing_remove_locked(i);
                        break;
                }
        (void) pthread_mutex_unlock(&freeing_lock);
}

void preload_freed_forget_all(void) {
        (void) pthread_mutex_init(&freeing_lock, NULL);
        for (unsigned i = 0; i < n_freeing; i++) {
                freeing[i]->listed = false;
                freeing[i]->n_freed = 0;
        }
        n_freeing = 0;
}

/* kdbus's own HELLO flags: anything else is EINVAL (our extensions are the library's) */
#define PRELOAD_HELLO_FLAGS (KDBUS_HELLO_ACCEPT_FD | KDBUS_HELLO_ACTIVATOR | \
                             KDBUS_HELLO_POLICY_HOLDER | KDBUS_HELLO_MONITOR | \
                             KDBUS_FLAG_NEGOTIATE)

/* this thread is in the RECV preload_recv_kept() sends past what the library keeps */
static __thread bool in_kept_recv;

/* One request of ours (@size bytes at @m, no fds) on the locked channel @ci whose answer
 * is an errno alone. Return: 0 or -errno. */
static int preload_wire_call(PreloadHandle *h, unsigned ci, int fd, void *m, size_t size) {
        struct iovec iov = { m, size };
        PreloadReply *rep = malloc(sizeof(*rep));
        int r;

        if (!rep)
                return -ENOMEM;
        r = preload_chan_call(h, ci, fd, &iov, 1, NULL, 0, false, rep);
        if (r == 0)
                r = (int)rep->error;
        preload_reply_close_fds(rep);
        free(rep);
        return r;
}

/* KDBUS_WIRE_DROP of the kept message at @offset on the locked channel @ci. Return: 0 or
 * -errno (ENOTTY: an older kdbusd). */
static int preload_wire_drop(PreloadHandle *h, unsigned ci, int fd, uint64_t offset) {
        struct {
                struct kdbus_wire_request req;
                struct kdbus_wire_drop d;
        } m = { { KDBUS_WIRE_DROP, sizeof(struct kdbus_wire_drop) }, { offset } };

        return preload_wire_call(h, ci, fd, &m, sizeof(m));
}

/*
 * A priority RECV while a message is kept: kdbus picked the highest priority (the lowest
 * value) of the whole queue, the kept message (the oldest) winning ties. kdbusd is asked
 * for one strictly above the kept message's priority (read from the pool) with the
 * program's flags; if none is there, the kept one is the answer. @rc: the program's struct
 * (the answer goes there). Return: 1 (the kept one is the answer: *@dropped, *@flags to
 * add to it), 0 or -errno (kdbusd's answer, written to @arg).
 */
static int preload_recv_prio(PreloadHandle *h, unsigned ci, int fd, struct kdbus_cmd_recv *rc,
                             void *arg, int64_t kept_prio, uint64_t *dropped, uint64_t *flags) {
        struct kdbus_cmd_recv tmp = *rc;
        int r;

        if (kept_prio == INT64_MIN)
                return 1;
        tmp.priority = kept_prio - 1;
        in_kept_recv = true;
        r = preload_ioctl_locked(h, ci, fd, KDBUS_CMD_RECV, &tmp);
        in_kept_recv = false;
        /* that RECV cleared the eventfd; the kept message still waits (an epoll user) */
        preload_wake_set(h);
        if (r == -EAGAIN) {
                *dropped = tmp.dropped_msgs;
                *flags = tmp.return_flags;
                return 1;
        }
        rc->return_flags = tmp.return_flags;
        rc->dropped_msgs = tmp.dropped_msgs;
        rc->msg = tmp.msg;
        {
                int q = preload_mem_write(arg, rc, sizeof(*rc));

                return q < 0 && r == 0 ? q : r;
        }
}

/*
 * A RECV while the library keeps only a count of lost messages (a held RECV answered with
 * it when nothing was queued): kdbus reported the count with whatever RECV finds now (a
 * message that came since, or EAGAIN), and any RECV took it, PEEK too. @count: taken from
 * the prefetch; @rc: the program's struct (the answer goes there and to @arg). Return: 0
 * or -errno, RECV's answer.
 */
static int preload_recv_count(PreloadHandle *h, unsigned ci, int fd, struct kdbus_cmd_recv *rc,
                              void *arg, uint64_t count) {
        struct kdbus_cmd_recv tmp = *rc;
        int r, q;

        in_kept_recv = true;
        r = preload_ioctl_locked(h, ci, fd, KDBUS_CMD_RECV, &tmp);
        in_kept_recv = false;
        if (r != 0 && r != -EAGAIN) {
                /* refused before it looked at the queue: the count stays for the next */
                (void) pthread_mutex_lock(&h->lock);
                if (!h->pre.valid) {
                        h->pre.valid = true;
                        h->pre.error = -EAGAIN;
                        h->pre.dropped_msgs = count;
                }
                (void) pthread_mutex_unlock(&h->lock);
                return r;
        }
        rc->msg = tmp.msg;
        rc->return_flags = tmp.return_flags | KDBUS_RECV_RETURN_DROPPED_MSGS;
        rc->dropped_msgs = tmp.dropped_msgs + count;
        q = preload_mem_write(arg, rc, sizeof(*rc));
        return q < 0 && r == 0 ? q : r;
}

/*
 * RECV answered from what the held RECV brought (@h->pre, or an answer waiting on the armed
 * channel, read now). @ci/@fd: the request's channel (locked); @rc: the program's struct
 * (copied), @arg: where it lives. Return: 1 not answered here (nothing armed, nothing
 * kept), else 0 or -errno as RECV's answer.
 */
static int preload_recv_kept(PreloadHandle *h, unsigned ci, int fd, struct kdbus_cmd_recv *rc,
                             void *arg) {
        PreloadPrefetch *pre = &h->pre, k;
        int armed = __atomic_load_n(&h->armed, __ATOMIC_RELAXED), r;
        bool peek = rc->flags & KDBUS_RECV_PEEK, drop = rc->flags & KDBUS_RECV_DROP;
        bool prio = rc->flags & KDBUS_RECV_USE_PRIORITY, dropped_in_bus = false;
        uint64_t offset, more_dropped = 0, more_flags = 0;

        /* kdbusd's own answers: DROP with USE_PRIORITY is EINVAL; the RECV a priority RECV
         * sends (preload_recv_prio()) looks at kdbusd's queue only */
        if ((drop && prio) || in_kept_recv)
                return 1;
        if (!pre->valid && armed >= 0) {
                /* a held RECV waits: whatever came is on its socket; the eventfd is not
                 * written for it (kdbusd answers the hold instead). Right after the SEND
                 * that armed it, whose answer said nothing waited, nothing can be there
                 * that RECV must see (what came since came after this RECV, as far as
                 * the program can tell): EAGAIN without a look */
                if (__atomic_exchange_n(&h->armed_empty, false, __ATOMIC_RELAXED))
                        r = -EAGAIN;
                else if (armed == (int)ci)
                        r = preload_held_read(h, ci, fd, true, false);
                else if (pthread_mutex_trylock(&h->chan[armed].lock) == 0) {
                        r = __atomic_load_n(&h->armed, __ATOMIC_RELAXED) != armed ? 0 :
                            preload_held_read(h, (unsigned)armed, h->chan[armed].sock, true,
                                              false);
                        (void) pthread_mutex_unlock(&h->chan[armed].lock);
                } else
                        r = -EAGAIN;    /* its holder reads the answer */
                if (r < 0 && r != -EAGAIN)
                        return r;
                if (!pre->valid && __atomic_load_n(&h->armed, __ATOMIC_RELAXED) >= 0) {
                        /* nothing came: kdbus's RECV says EAGAIN, no count */
                        rc->return_flags = 0;
                        rc->dropped_msgs = 0;
                        memset(&rc->msg, 0, sizeof(rc->msg));
                        rc->msg.offset = h->pool_size;
                        r = preload_mem_write(arg, rc, sizeof(*rc));
                        return r < 0 ? r : -EAGAIN;
                }
        }
        if (pre->valid && pre->error != 0) {
                uint64_t count = 0;
                bool taken = false;

                (void) pthread_mutex_lock(&h->lock);
                if (pre->valid && pre->error != 0) {
                        count = pre->dropped_msgs;
                        pre->valid = false;
                        taken = true;
                }
                (void) pthread_mutex_unlock(&h->lock);
                if (taken)
                        return preload_recv_count(h, ci, fd, rc, arg, count);
        }
        if (prio && pre->valid && pre->error == 0) {
                int64_t kept_prio;

                if (pread(h->pool_fd, &kept_prio, sizeof(kept_prio), (off_t)pre->msg.offset +
                          (off_t)offsetof(struct kdbus_msg, priority)) != sizeof(kept_prio))
                        return -EIO;
                /* below the threshold: only kdbusd's queue may have one at or above it */
                if (kept_prio > rc->priority)
                        return 1;
                r = preload_recv_prio(h, ci, fd, rc, arg, kept_prio, &more_dropped, &more_flags);
                if (r != 1)
                        return r;
        }
        /* taken under the lock: another thread's RECV may be at it too */
        (void) pthread_mutex_lock(&h->lock);
        if (!pre->valid) {
                (void) pthread_mutex_unlock(&h->lock);
                return 1;
        }
        k = *pre;
        if (!peek) {
                pre->valid = false;
                pre->n_fds = 0;         /* k's now */
        }
        (void) pthread_mutex_unlock(&h->lock);
        /* the kept answer, with the program's own flags and threshold (a priority RECV
         * gets the oldest message, which the hold took) */
        rc->return_flags = k.return_flags | (more_flags & KDBUS_RECV_RETURN_DROPPED_MSGS);
        rc->dropped_msgs = k.dropped_msgs + more_dropped;
        rc->msg = k.msg;
        r = k.error;
        offset = k.msg.offset;
        if (r == 0 && drop) {
                /* gone unread: its fds closed; kdbusd frees its slice and tells the caller
                 * of a call (KDBUS_WIRE_DROP), as kdbus's DROP did before it returned */
                for (unsigned j = 0; j < k.n_fds && !k.published; j++)
                        (void) preload_real_close(k.fds[j]);
                memset(&rc->msg, 0, sizeof(rc->msg));
                rc->msg.offset = h->pool_size;
                dropped_in_bus = preload_wire_drop(h, ci, fd, offset) == 0;
        }
        if (r == 0 && !drop && k.n_fds && !k.published) {
                int q = preload_fds_publish(h, ci, fd, offset, k.fds, k.n_fds);

                if (q < 0) {
                        for (unsigned j = 0; j < k.n_fds && !peek; j++)
                                (void) preload_real_close(k.fds[j]);
                        return q;
                }
                if (peek) {
                        (void) pthread_mutex_lock(&h->lock);
                        if (pre->valid && pre->msg.offset == offset)
                                pre->published = true;
                        (void) pthread_mutex_unlock(&h->lock);
                }
        }
        if (!peek && r == 0 && !dropped_in_bus) {
                (void) pthread_mutex_lock(&h->lock);
                if (!drop)
                        preload_held_add(h, offset, k.msg.msg_size);
                else if (h->n_freed < PRELOAD_HELD_MAX)
                        h->freed[h->n_freed++] = offset;
                (void) pthread_mutex_unlock(&h->lock);
        }
        {
                int q = preload_mem_write(arg, rc, sizeof(*rc));

                return q < 0 ? q : r;
        }
}

/* After HELLO: map kdbusd's free ring (KDBUS_WIRE_FREE_RING) on the locked channel @ci;
 * without it (an older kdbusd) FREEs are held back and sent as before. */
static void preload_ring_map(PreloadHandle *h, unsigned ci, int fd) {
        struct kdbus_wire_request req = { .command = KDBUS_WIRE_FREE_RING, .size = 0 };
        struct iovec iov = { &req, sizeof(req) };
        PreloadReply *rep = malloc(sizeof(*rep));
        void *map;

        if (!rep)
                return;
        if (preload_chan_call(h, ci, fd, &iov, 1, NULL, 0, false, rep) == 0 &&
            rep->error == 0 && rep->n_fds == 1) {
                map = mmap(NULL, KDBUS_WIRE_FREE_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                           rep->fds[0], 0);
                if (map != MAP_FAILED)
                        h->ring = map;
        }
        preload_reply_close_fds(rep);
        free(rep);
}

static int preload_ioctl_locked(PreloadHandle *h, unsigned ci, int fd, unsigned long command,
                                void *arg) {
        int fds[PRELOAD_MAX_FDS];
        unsigned n_fds = 0;
        struct kdbus_wire_request req, breq;
        struct kdbus_wire_batch batch = { 0 };
        struct iovec iov[5 + 2 * PRELOAD_DIRECT_VECS];
        unsigned n_iov = 0;
        Buf b = { .n_ext = 0 };
        PreloadReply *rep = NULL;
        uint64_t size, user_flags = 0, user_msg = 0, freed[PRELOAD_HELD_MAX];
        unsigned n_freed = 0;
        bool use_batch = false, local, arm = false, was_send, join = false, recv_locked = false,
             notify = false;
        int64_t off;
        int r;

        /* kdbus_copy_from_user(): a struct must be 8-aligned (EFAULT) */
        if ((uintptr_t)arg & 7)
                return -EFAULT;
        /* the FREEs other handles answered were done before this, in kdbus */
        if (!in_flush)
                preload_flush_freed(h, false, false);
        r = preload_mem_read(&size, arg, sizeof(size));
        if (r < 0)
                return r;
        if (size < sizeof(struct kdbus_cmd))
                return -EINVAL;
        if (size > PRELOAD_CMD_MAX_SIZE)
                return -EMSGSIZE;
        was_send = __atomic_exchange_n(&h->last_send, command == KDBUS_CMD_SEND,
                                       __ATOMIC_RELAXED);
        /* (a FREE the library answers changes nothing kdbusd sees: below) */
        if (command != KDBUS_CMD_RECV && command != KDBUS_CMD_FREE)
                __atomic_store_n(&h->armed_empty, false, __ATOMIC_RELAXED);
        off = buf_append(&b, arg, size, true);
        if (off < 0) {
                r = (int)off;
                goto out;
        }
        if (command == KDBUS_CMD_HELLO && size >= sizeof(struct kdbus_cmd_hello)) {
                struct kdbus_cmd_hello *hello = (void *)b.p;

                user_flags = hello->flags;
                if (user_flags & ~(uint64_t)PRELOAD_HELLO_FLAGS) {
                        r = -EINVAL;
                        goto out;
                }
                hello->flags |= KDBUS_HELLO_WIRE_BATCH;
        }
        if (command == KDBUS_CMD_SEND && size >= sizeof(struct kdbus_cmd_send)) {
                user_msg = ((struct kdbus_cmd_send *)(void *)b.p)->msg_address;
                r = preload_send_items(&b, 0, size, fds, &n_fds);
                if (r < 0)
                        goto out;
                off = preload_send_msg(&b, 0, user_msg, fds, &n_fds);
                if (off < 0) {
                        r = (int)off;
                        goto out;
                }
                ((struct kdbus_cmd_send *)(void *)b.p)->msg_address = (uint64_t)off;
                /* a SEND after something else: the program waits for an answer next, so
                 * the wait rides along (a held RECV armed with it); not in a run of SENDs */
                arm = !was_send && preload_can_arm(h) && h->polled && !h->pre.valid &&
                      __atomic_load_n(&h->armed, __ATOMIC_RELAXED) < 0 &&
                      !(((struct kdbus_cmd_send *)(void *)b.p)->flags & KDBUS_SEND_SYNC_REPLY);
                /* its answer fills the prefetch: not while another thread's RECV is at
                 * kdbusd; if one waits already, it joins the SEND's answer */
                if (arm && pthread_mutex_trylock(&h->recv_lock) == 0) {
                        recv_locked = true;
                        /* a poller may have armed one meanwhile */
                        join = !h->pre.valid && __atomic_load_n(&h->armed, __ATOMIC_RELAXED) < 0;
                }
                arm = join;
        }
        local = h->type == PRELOAD_HANDLE_CONNECTED && !h->shared &&
                !__atomic_load_n(&h->byebye, __ATOMIC_RELAXED);
        if (command == KDBUS_CMD_FREE && size >= sizeof(struct kdbus_cmd_free)) {
                struct kdbus_cmd_free *f = (void *)b.p;

                /* the slice of a message the held RECV took, PEEKed: still queued for
                 * the program (kdbus's FREE after PEEK leaves the message) */
                if (local && h->pre.valid && h->pre.error == 0 &&
                    f->offset == h->pre.msg.offset) {
                        f->return_flags = 0;
                        r = preload_mem_write(arg, f, sizeof(*f));
                        goto out;
                }
                if (local && size == sizeof(*f) && f->flags == 0 &&
                    preload_free_later(h, f->offset)) {
                        /* kdbus's answer to a FREE of a slice it handed out */
                        f->return_flags = 0;
                        r = preload_mem_write(arg, f, sizeof(*f));
                        goto out;
                }
                (void) pthread_mutex_lock(&h->lock);
                preload_held_drop(h, f->offset);
                (void) pthread_mutex_unlock(&h->lock);
                /* a FREE kdbusd does may make room for a message waiting for it */
                __atomic_store_n(&h->armed_empty, false, __ATOMIC_RELAXED);
        }
        /* a message the held RECV took is still queued for the program */
        if (command == KDBUS_CMD_BYEBYE && h->pre.valid && h->pre.error == 0) {
                r = -EBUSY;
                goto out;
        }
        if (command == KDBUS_CMD_RECV && h->type == PRELOAD_HANDLE_CONNECTED &&
            size >= sizeof(struct kdbus_cmd_recv)) {
                struct kdbus_cmd_recv *rc = (void *)b.p;
                ssize_t n;

                if (rc->flags)
                        __atomic_store_n(&h->recv_flags_seen, true, __ATOMIC_RELAXED);
                /* one RECV at kdbusd at a time: the prefetch it may fill comes before
                 * what another thread's RECV would get (the one preload_recv_kept()
                 * sends holds it already) */
                if (!h->shared && !in_kept_recv) {
                        (void) pthread_mutex_lock(&h->recv_lock);
                        recv_locked = true;
                }
                if (size == sizeof(*rc) && !__atomic_load_n(&h->byebye, __ATOMIC_RELAXED)) {
                        r = preload_recv_kept(h, ci, fd, rc, arg);
                        if (r != 1)
                                goto out;
                }
                /* the eventfd is cleared before each RECV, written again after it unless
                 * the queue is empty (below); kdbusd writes it when a message is queued
                 * or lost (a dropped count to report) */
                n = preload_wake_clear(h);
                /* it was not readable: kdbus's RECV says EAGAIN, no count; with FREEs to
                 * send the RECV goes anyway, carrying them */
                if (n < 0 && errno == EAGAIN && local && h->n_freed == 0 &&
                    size == sizeof(*rc) && rc->flags == 0) {
                        rc->return_flags = 0;
                        rc->dropped_msgs = 0;
                        memset(&rc->msg, 0, sizeof(rc->msg));
                        rc->msg.offset = h->pool_size;  /* kdbus's "no slice" */
                        r = preload_mem_write(arg, rc, sizeof(*rc));
                        r = r < 0 ? r : -EAGAIN;
                        goto out;
                }
                /* the message after it, if one waits, comes in the same answer: the
                 * program's next RECV needs no request (one taken ahead, as a held RECV
                 * does) */
                join = recv_locked && local && size == sizeof(*rc) && rc->flags == 0 &&
                       preload_can_arm(h) && !h->pre.valid &&
                       __atomic_load_n(&h->armed, __ATOMIC_RELAXED) < 0;
        }
        /* RECV in a batch: its reply says whether the queue is empty after it, which
         * keeps the wakeup eventfd level-triggered (preload/preload.h); any command in
         * one when FREEs wait to be sent (done first, as they were before it) */
        rep = malloc(sizeof(*rep));
        if (!rep) {
                r = -ENOMEM;
                goto out;
        }
        if (h->type == PRELOAD_HANDLE_CONNECTED) {
                (void) pthread_mutex_lock(&h->lock);
                n_freed = h->n_freed;
                memcpy(freed, h->freed, n_freed * sizeof(uint64_t));
                h->n_freed = 0;
                h->freed_bytes = 0;
                (void) pthread_mutex_unlock(&h->lock);
        }
again:
        n_iov = 0;
        use_batch = h->type == PRELOAD_HANDLE_CONNECTED &&
                    (command == KDBUS_CMD_RECV || n_freed || arm || join);
        req.command = command;
        req.size = b.size + b.ext_size;
        if (use_batch) {
                batch.n_free = n_freed;
                batch.flags = (arm ? KDBUS_WIRE_BATCH_ARM_RECV : 0) |
                              (join ? KDBUS_WIRE_BATCH_RECV_JOIN : 0);
                breq.command = KDBUS_WIRE_BATCH;
                breq.size = sizeof(batch) + n_freed * sizeof(uint64_t) + sizeof(req) +
                            req.size;
                iov[n_iov++] = (struct iovec){ &breq, sizeof(breq) };
                iov[n_iov++] = (struct iovec){ &batch, sizeof(batch) };
                iov[n_iov++] = (struct iovec){ freed, n_freed * sizeof(uint64_t) };
        }
        iov[n_iov++] = (struct iovec){ &req, sizeof(req) };
        iov[n_iov++] = (struct iovec){ b.p, b.size };
        memcpy(iov + n_iov, b.ext, b.n_ext * sizeof(*b.ext));
        n_iov += b.n_ext;
        r = preload_chan_call(h, ci, fd, iov, n_iov, fds, n_fds, use_batch, rep);
        if (r < 0)
                goto out;
        /* the held RECV's answer came with it (it had something at once) */
        if (rep->joined)
                notify = preload_joined_keep(h, rep);
        else if (use_batch && arm && rep->batch.free_error == 0) {
                __atomic_store_n(&h->armed, (int)ci, __ATOMIC_RELAXED);
                __atomic_store_n(&h->armed_empty,
                                 (rep->batch.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY) != 0,
                                 __ATOMIC_RELAXED);
        }
        if (use_batch && n_freed) {
                uint64_t done = rep->batch.n_freed;

                if (rep->batch.free_error == 0 || done >= n_freed)
                        n_freed = 0;
                else if (rep->batch.free_error == -ECONNRESET)
                        n_freed = 0;            /* the command says it too */
                else {
                        /* a FREE the library answered failed (the bus is not kdbus?): it
                         * goes, the others and the command are sent again */
                        n_freed -= (unsigned)done + 1;
                        memmove(freed, freed + done + 1, n_freed * sizeof(uint64_t));
                        preload_reply_close_fds(rep);
                        goto again;
                }
        }
        if (notify || (command == KDBUS_CMD_RECV && use_batch &&
                       !(rep->batch.return_flags & KDBUS_WIRE_RETURN_RECV_EMPTY)))
                preload_wake_set(h);
        r = (int)rep->error;
        if (rep->error == -ECONNRESET && h->type == PRELOAD_HANDLE_CONNECTED)
                __atomic_store_n(&h->byebye, true, __ATOMIC_RELAXED);

        /* the struct as the bus updated it, with the program's own values where the
         * transport changed them */
        if (command == KDBUS_CMD_HELLO && rep->size >= sizeof(struct kdbus_cmd_hello)) {
                struct kdbus_cmd_hello *hello = (void *)rep->data;

                if (user_flags & KDBUS_FLAG_NEGOTIATE)
                        hello->flags &= PRELOAD_HELLO_FLAGS;
                else
                        hello->flags = user_flags;
        }
        if (command == KDBUS_CMD_SEND && rep->size >= sizeof(struct kdbus_cmd_send))
                ((struct kdbus_cmd_send *)(void *)rep->data)->msg_address = user_msg;
        if (rep->size) {
                int q = preload_mem_write(arg, rep->data, rep->size < size ? rep->size : size);

                if (q < 0 && r == 0)
                        r = q;
        }
        if (r == 0 && command == KDBUS_CMD_HELLO && rep->n_fds == 2 &&
            !(user_flags & KDBUS_FLAG_NEGOTIATE)) {
                h->pool_fd = rep->fds[0];
                h->wake_fd = rep->fds[1];
                h->pool_size = ((struct kdbus_cmd_hello *)(void *)b.p)->pool_size;
                h->id = ((struct kdbus_cmd_hello *)(void *)rep->data)->id;
                h->hello_flags = user_flags;
                h->type = PRELOAD_HANDLE_CONNECTED;
                rep->n_fds = 0;
                preload_ring_map(h, ci, fd);
        } else if (r == 0 && (command == KDBUS_CMD_BUS_MAKE ||
                              command == KDBUS_CMD_ENDPOINT_MAKE) &&
                   !(((struct kdbus_cmd *)(void *)b.p)->flags & KDBUS_FLAG_NEGOTIATE))
                h->type = PRELOAD_HANDLE_OWNER;
        else if (r == 0 && command == KDBUS_CMD_BYEBYE) {
                __atomic_store_n(&h->byebye, true, __ATOMIC_RELAXED);
                (void) pthread_mutex_lock(&h->lock);
                if (h->pre.valid)
                        preload_prefetch_drop(h);
                (void) pthread_mutex_unlock(&h->lock);
        }
        if (r == 0 && command == KDBUS_CMD_RECV && rep->size >= sizeof(struct kdbus_cmd_recv) &&
            !(((struct kdbus_cmd_recv *)(void *)b.p)->flags & (KDBUS_RECV_PEEK | KDBUS_RECV_DROP))) {
                (void) pthread_mutex_lock(&h->lock);
                preload_held_add(h, ((struct kdbus_cmd_recv *)(void *)rep->data)->msg.offset,
                                 ((struct kdbus_cmd_recv *)(void *)rep->data)->msg.msg_size);
                (void) pthread_mutex_unlock(&h->lock);
        }
        if (r == 0 && command == KDBUS_CMD_SEND && rep->size >= sizeof(struct kdbus_cmd_send) &&
            (((struct kdbus_cmd_send *)(void *)b.p)->flags & KDBUS_SEND_SYNC_REPLY)) {
                (void) pthread_mutex_lock(&h->lock);
                preload_held_add(h, ((struct kdbus_cmd_send *)(void *)rep->data)->reply.offset,
                                 ((struct kdbus_cmd_send *)(void *)rep->data)->reply.msg_size);
                (void) pthread_mutex_unlock(&h->lock);
        }
        if (r == 0 && rep->n_fds && (command == KDBUS_CMD_RECV || command == KDBUS_CMD_SEND)) {
                uint64_t offset = command == KDBUS_CMD_RECV ?
                        ((struct kdbus_cmd_recv *)(void *)rep->data)->msg.offset :
                        ((struct kdbus_cmd_send *)(void *)rep->data)->reply.offset;

                if (preload_fds_publish(h, ci, fd, offset, rep->fds, rep->n_fds) == 0)
                        rep->n_fds = 0;         /* the program's now */
        }
out:
        if (recv_locked)
                (void) pthread_mutex_unlock(&h->recv_lock);
        /* FREEs taken for a request that did not go: back for the next one */
        if (n_freed && (!rep || r < 0)) {
                (void) pthread_mutex_lock(&h->lock);
                for (unsigned i = 0; i < n_freed && h->n_freed < PRELOAD_HELD_MAX; i++)
                        h->freed[h->n_freed++] = freed[i];
                (void) pthread_mutex_unlock(&h->lock);
        }
        if (rep)
                preload_reply_close_fds(rep);
        free(rep);
        free(b.p);
        return r;
}

/**
 * preload_ioctl() - one kdbus ioctl
 * @h:          the handle
 * @fd:         the program's fd of it (the socket; dup()s of it are the same)
 * @command:    the ioctl request
 * @arg:        the program's argument
 *
 * On a free request channel of the handle (preload/preload-chan.c).
 *
 * Return: 0 or -errno, as the kdbus ioctl would have failed.
 */
int preload_ioctl(PreloadHandle *h, int fd, unsigned long command, void *arg) {
        unsigned ci;
        int sock, r;

        if (!preload_command_known(command))
                return -ENOTTY;
        ci = preload_chan_take(h, fd, &sock);
        r = preload_ioctl_locked(h, ci, sock, command, arg);
        preload_chan_release(h, ci);
        return r;
}

/*
 * The received message's fds are the program's now: their numbers go into the slice (the
 * bus writes them, KDBUS_WIRE_FDS) before RECV returns, where kdbus had written them.
 * Return: 0 or -errno (the fds are then closed by the caller).
 */
static int preload_fds_publish(PreloadHandle *h, unsigned ci, int fd, uint64_t offset,
                               const int *fds, unsigned n) {
        /* built in a byte buffer: kdbus_wire_fds ends in a flexible array */
        uint64_t buf[(sizeof(struct kdbus_wire_request) + sizeof(struct kdbus_wire_fds) +
                      PRELOAD_MAX_REPLY_FDS * sizeof(int32_t)) / 8 + 1];
        struct kdbus_wire_request *req = (void *)buf;
        struct kdbus_wire_fds *wf = (void *)(req + 1);

        if (n > PRELOAD_MAX_REPLY_FDS)
                return -EINVAL;
        req->command = KDBUS_WIRE_FDS;
        req->size = sizeof(*wf) + n * sizeof(int32_t);
        wf->offset = offset;
        wf->n_fds = n;
        memcpy(wf->fds, fds, n * sizeof(int32_t));
        return preload_wire_call(h, ci, fd, buf, sizeof(*req) + req->size);
}

/**
 * preload_handle_close() - end a handle before its last fd goes
 * @h:          the handle
 * @fd:         its last fd in this process
 *
 * kdbus released a handle when its file's last reference went, inside close(): the
 * connection's ID_REMOVE, the bus's end, were done when close() returned. Through a socket
 * kdbusd sees the end only when it reads it; so the library asks for it and waits. Not for
 * a handle another process may hold (after fork()), nor while another thread of ours is in
 * a request on it (close() must not wait for a SYNC_REPLY): then the end is kdbusd's
 * reading the socket's close, a moment later. The attached channels are closed first
 * (they end nothing).
 */
void preload_handle_close(PreloadHandle *h, int fd) {
        struct kdbus_wire_request req = { .command = KDBUS_WIRE_CLOSE, .size = 0 };
        struct iovec iov = { &req, sizeof(req) };
        PreloadReply *rep;

        if (h->shared || h->chan0_foreign || pthread_mutex_trylock(&h->chan[0].lock) != 0)
                return;
        rep = malloc(sizeof(*rep));
        if (rep) {
                if (preload_chan_call(h, 0, fd, &iov, 1, NULL, 0, false, rep) == 0)
                        preload_reply_close_fds(rep);
                free(rep);
        }
        (void) pthread_mutex_unlock(&h->chan[0].lock);
}
