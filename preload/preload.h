/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * libkdbus-preload.so: programs written against the kdbus kernel interface (open() of a
 * kdbusfs node, ioctl(), mmap() of the pool, poll()) run unchanged against kdbusd's
 * kdbusfs view (kdbusd --kdbusfs=DIR, proxy/kdbusfs.h), through LD_PRELOAD.
 *
 * The nodes are kdbusd's SOCK_SEQPACKET sockets. open() of one connects to it and returns
 * the socket's fd: that fd number is the program's kdbus handle (dup()s of it are the same
 * handle, as dup()s of a kdbusfs file were). ioctl() on it becomes one request datagram
 * (docs/native.md, Transport): the command struct, and for SEND the message and the
 * PAYLOAD_VEC bytes read from the program's memory, addresses turned into offsets, fds
 * into SCM_RIGHTS indices; the reply is written back. Memory the kernel could not have
 * read or written is EFAULT (read and written with process_vm_readv/_writev, which fail
 * instead of crashing). mmap() maps the pool memfd kdbusd passed with HELLO (read-only:
 * EPERM for PROT_WRITE, as kdbus; the memfd's seals refuse a later mprotect() too).
 * poll()/ppoll()/select()/pselect()/epoll_ctl() see a connection as kdbus's poll did:
 * POLLOUT always, POLLIN while messages wait (a level-triggered eventfd, below),
 * POLLERR|POLLHUP for a handle that is no connection, after BYEBYE, or when the bus is
 * gone.
 *
 * Level-triggered readiness: kdbusd writes the connection's wakeup eventfd when its queue
 * becomes non-empty. The library sends RECV as a KDBUS_WIRE_BATCH (HELLO asks for
 * KDBUS_HELLO_WIRE_BATCH, hidden from the program), whose reply says whether the queue is
 * empty after it: the eventfd is read (cleared) before each RECV and written again after
 * it unless the queue is empty, so it is readable exactly while messages wait, and an
 * arrival after the RECV writes it anew (no wakeup lost).
 *
 * Request channels (preload/preload-chan.c): a handle's socket is its first channel; a
 * thread that finds every channel of the connection busy (another thread waits in
 * SYNC_REPLY, say) connects another socket to the node and attaches it to the connection
 * (KDBUS_WIRE_ATTACH), so requests of several threads are in the bus at once, each
 * answered on its own socket. A forked child never uses the socket it shares with its
 * parent for requests: it attaches channels of its own.
 *
 * Held RECV (preload-chan.c): where a program would wait for a message (poll() with
 * POLLIN on a connection, or right after a SEND that is not SYNC_REPLY), the library arms
 * a RECV that kdbusd holds until a message comes, so the message arrives with the wakeup;
 * the library keeps it (the prefetch) for the program's next RECV. See
 * docs/kdbus-preload.md for the design and what differs.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include "kdbus/kdbus.h"

enum {
        PRELOAD_HANDLE_NONE,            /* opened, no setup ioctl yet */
        PRELOAD_HANDLE_CONNECTED,       /* HELLO */
        PRELOAD_HANDLE_OWNER,           /* BUS_MAKE or ENDPOINT_MAKE */
};

/* FREEs the library answers itself and sends later, per handle (at most what one
 * KDBUS_WIRE_BATCH carries) */
#define PRELOAD_HELD_MAX 64u
/* request channels per handle: its own socket and those attached to its connection */
#define PRELOAD_CHAN_MAX 8u
/* bus-owned fds in a reply: a received message's FDS item and memfds, HELLO's two */
#define PRELOAD_MAX_REPLY_FDS (KDBUS_MSG_MAX_FDS + KDBUS_MSG_MAX_MEMFD_ITEMS + 2u)
/* the largest reply: a batch reply and a command's fixed part */
#define PRELOAD_REPLY_MAX 1024u

/* One reply datagram as read. */
typedef struct PreloadReply {
        int64_t error;
        uint8_t *data;                  /* the command's struct (after a batch reply) */
        size_t size;
        struct kdbus_wire_batch_reply batch;
        int fds[PRELOAD_MAX_REPLY_FDS];
        unsigned n_fds;
        /* KDBUS_WIRE_RETURN_JOINED: a second RECV answer ended the datagram (every fd is
         * its: @fds is empty then) */
        bool joined;
        int64_t j_error;
        struct kdbus_wire_batch_reply j_batch;
        uint64_t j_return_flags;        /* its struct kdbus_cmd_recv's answer fields */
        uint64_t j_dropped_msgs;
        struct kdbus_msg_info j_msg;
        int j_fds[PRELOAD_MAX_REPLY_FDS];
        unsigned j_n_fds;
        uint64_t buf[PRELOAD_REPLY_MAX / 8];
} PreloadReply;

typedef struct PreloadChan {
        int sock;                       /* chan[0]: -1 (the program's fd is the socket);
                                         * the others: the attached socket */
        pthread_mutex_t lock;           /* one request at a time on it */
} PreloadChan;

/* A held RECV's answer the library keeps for the program's next RECV. */
typedef struct PreloadPrefetch {
        bool valid;
        bool published;                 /* its fds' numbers are in the slice (a PEEK) */
        int error;                      /* 0, or -EAGAIN with a dropped count */
        /* kdbus_cmd_recv's answer fields as the bus wrote them */
        uint64_t return_flags;
        uint64_t dropped_msgs;
        struct kdbus_msg_info msg;
        int fds[PRELOAD_MAX_REPLY_FDS];
        unsigned n_fds;
} PreloadPrefetch;

typedef struct PreloadHandle {
        unsigned refs;                  /* fd numbers pointing at it */
        int sock;                       /* the fd number open() returned (may be closed
                                         * while dup()s of it live on) */
        pthread_mutex_t lock;           /* the handle's state below (short; a channel's
                                         * lock is taken before it, never after) */
        pthread_mutex_t recv_lock;      /* a RECV that goes to kdbusd, a hold being armed
                                         * (their answers fill the prefetch: one at a
                                         * time, so that messages keep their order); taken
                                         * after a channel's lock, before @lock */
        PreloadChan chan[PRELOAD_CHAN_MAX];
        unsigned n_chans;               /* chan[0] and those attached */
        bool chan0_foreign;             /* a fork child: the handle's socket is the
                                         * parent's too, no requests on it */
        struct sockaddr_un addr;        /* the node, for attaching (sun_path[0] 0: none) */
        uint64_t id;                    /* the connection's, after HELLO */
        uint64_t hello_flags;           /* the program's HELLO flags */
        int armed;                      /* the channel a held RECV waits on, or -1 */
        bool recv_flags_seen;           /* the program used RECV flags: never armed */
        bool chan0_lock_seen;           /* visited (the fork child's walk of the table) */
        bool polled;                    /* our poll() waited on it: a SEND may arm */
        bool epolled;                   /* added to an epoll set: never armed */
        bool last_send;                 /* the last request was a SEND */
        bool armed_empty;               /* the SEND that armed it said nothing waited, and
                                         * no request came since: a RECV needs no look */
        PreloadPrefetch pre;
        int type;                       /* PRELOAD_HANDLE_* */
        bool control;                   /* opened as DIR/control */
        bool byebye;                    /* BYEBYE succeeded: POLLHUP */
        bool shared;                    /* the process forked since it was opened: another
                                         * process may hold it too */
        int pool_fd;                    /* after HELLO: the pool memfd, else -1 */
        uint64_t pool_size;
        int wake_fd;                    /* after HELLO: kdbusd's wakeup eventfd, else -1 */
        bool wake_known;                /* the library wrote it and has not read it since:
                                         * it is readable (kdbusd only adds to it) */
        /* Slices RECV and SYNC_REPLY handed out: a FREE of one is answered by the library
         * (its answer is known) and sent with the handle's next request, in a
         * KDBUS_WIRE_BATCH; before any request on another handle and before poll() waits
         * (preload_flush_freed()). Not on a handle shared with another process. */
        uint64_t held[PRELOAD_HELD_MAX];
        uint64_t held_size[PRELOAD_HELD_MAX];   /* their msg_size */
        unsigned n_held;
        uint64_t freed[PRELOAD_HELD_MAX];       /* those FREEs, not sent yet */
        uint64_t freed_bytes;                   /* their slices' sizes */
        unsigned n_freed;
        bool listed;                    /* in the list preload_flush_freed() goes through */
        /* kdbusd's free ring (KDBUS_WIRE_FREE_RING), mapped after HELLO, or NULL: a FREE
         * the library answers is written there and done by kdbusd before it next looks
         * at the pool, as kdbus had done it when FREE returned (held/freed above only
         * when the ring is full) */
        struct kdbus_wire_free_ring *ring;
} PreloadHandle;

/* real libc functions (preload-io.c resolves them with dlsym(RTLD_NEXT)) */
extern int (*preload_real_close)(int fd);
/* Room for one datagram with kdbus's largest SEND on request socket @fd (SO_SNDBUF). */
void preload_sock_sndbuf(int fd);

/* preload-chan.c: the request channels and the held RECV */

/* Send @iov as one datagram with @fds. Return: 0 or -errno. */
int preload_wire_send(int sock, struct iovec *iov, unsigned n_iov, const int *fds,
                      unsigned n_fds);
/* Read one reply datagram (@batch: it starts with a batch reply; @flags for recvmsg).
 * Return: 0, -EAGAIN (MSG_DONTWAIT, none yet), or -errno. */
int preload_wire_recv(int sock, bool batch, int flags, PreloadReply *rep);
void preload_reply_close_fds(PreloadReply *rep);
/* A channel of @h for one request, locked; *@ret_sock its socket (@fd: the program's).
 * Return: its index. */
unsigned preload_chan_take(PreloadHandle *h, int fd, int *ret_sock);
void preload_chan_release(PreloadHandle *h, unsigned ci);
/* One request on the locked channel @ci: a held RECV's answer waiting on it is read first
 * (into the prefetch). Return: 0 or -errno. */
int preload_chan_call(PreloadHandle *h, unsigned ci, int sock, struct iovec *iov,
                      unsigned n_iov, const int *fds, unsigned n_fds, bool batch,
                      PreloadReply *rep);
/* The held RECV's answer on the locked, armed channel @ci into @h->pre (@dontwait: only
 * if it came; @notify: write the eventfd for a poller). Return: 0, -EAGAIN, -errno. */
int preload_held_read(PreloadHandle *h, unsigned ci, int sock, bool dontwait, bool notify);
/* Arm a held RECV on a free channel of @h (@fd: the program's) unless one is armed.
 * Return: the socket its answer comes on, or -1 (none: wait on the eventfd). */
int preload_chan_arm(PreloadHandle *h, int fd);
/* May @h have held RECVs (a connection of this process whose program uses plain RECV)? */
bool preload_can_arm(const PreloadHandle *h);
/* A poller saw the armed socket @sock of @h readable: take the answer if nobody else
 * is at it. */
void preload_held_poll(PreloadHandle *h, int sock);
/* End a held RECV armed on @h (@fd: the program's): its answer is kept, the eventfd
 * written if it brought something. */
void preload_disarm(PreloadHandle *h, int fd);
/* The RECV answer joined to @rep (KDBUS_WIRE_RETURN_JOINED) into @h->pre, as a held
 * RECV's. Return: the wakeup eventfd is to be written (it kept one, or more wait). */
bool preload_joined_keep(PreloadHandle *h, PreloadReply *rep);
/* Make @h's wakeup eventfd readable (something waits or is kept), unless it surely is:
 * the library wrote it and read it not since (not on a handle another process may read). */
void preload_wake_set(PreloadHandle *h);
/* Clear @h's wakeup eventfd. Return: read()'s, -1 with errno EAGAIN if it was not set. */
ssize_t preload_wake_clear(PreloadHandle *h);
/* Drop the prefetch (the handle goes, a fork child's copy). */
void preload_prefetch_drop(PreloadHandle *h);
/* Close the attached channels (the handle goes; in a fork child, they are the parent's). */
void preload_chans_close(PreloadHandle *h);

/* The handle behind @fd, or NULL (not a kdbus node). Takes no reference. */
PreloadHandle *preload_handle_get(int fd);
/* The kdbus ioctl @cmd on @h through the program's @fd (@arg: the program's pointer).
 * Return: 0 or -errno. */
int preload_ioctl(PreloadHandle *h, int fd, unsigned long cmd, void *arg);
/* The last fd of @h in a process that never shared it is being closed: end the handle in
 * kdbusd now (KDBUS_WIRE_CLOSE), as kdbus's release did before close() returned. */
void preload_handle_close(PreloadHandle *h, int fd);
/* Read / write the program's memory, EFAULT where the kernel would have said so. */
int preload_mem_read(void *dst, const void *src, size_t n);
int preload_mem_write(void *dst, const void *src, size_t n);
/* A fork child: its pid is not the parent's (process_vm_readv on ourselves). */
void preload_pid_forget(void);
/* Send the FREEs the library answered but did not send yet, of every handle but @except
 * whose lock is free (@try_only: give up if another thread is at it), as kdbus had done
 * them when FREE returned: before a request on another handle, before a wait. */
void preload_flush_freed(PreloadHandle *except, bool try_only, bool waiting);
/* @h goes (its last fd was closed): out of the list preload_flush_freed() goes through. */
void preload_handle_forget(PreloadHandle *h);
/* A fork child: the parent sends the FREEs it answered; none of ours is listed. */
void preload_freed_forget_all(void);
