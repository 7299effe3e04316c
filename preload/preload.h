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
 * Threads: one request at a time per handle (a mutex); forked children have their own
 * copy of the table and share the socket. See docs/kdbus-preload.md for what differs.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum {
        PRELOAD_HANDLE_NONE,            /* opened, no setup ioctl yet */
        PRELOAD_HANDLE_CONNECTED,       /* HELLO */
        PRELOAD_HANDLE_OWNER,           /* BUS_MAKE or ENDPOINT_MAKE */
};

/* FREEs the library answers itself and sends later, per handle (at most what one
 * KDBUS_WIRE_BATCH carries) */
#define PRELOAD_HELD_MAX 64u

typedef struct PreloadHandle {
        unsigned refs;                  /* fd numbers pointing at it */
        int sock;                       /* the fd number open() returned (may be closed
                                         * while dup()s of it live on) */
        pthread_mutex_t lock;           /* one request at a time */
        int type;                       /* PRELOAD_HANDLE_* */
        bool control;                   /* opened as DIR/control */
        bool byebye;                    /* BYEBYE succeeded: POLLHUP */
        bool shared;                    /* the process forked since it was opened: another
                                         * process may hold it too */
        int pool_fd;                    /* after HELLO: the pool memfd, else -1 */
        uint64_t pool_size;
        int wake_fd;                    /* after HELLO: kdbusd's wakeup eventfd, else -1 */
        /* Slices RECV and SYNC_REPLY handed out: a FREE of one is answered by the library
         * (its answer is known) and sent with the handle's next request, in a
         * KDBUS_WIRE_BATCH; before any request on another handle and before poll() waits
         * (preload_flush_freed()). Not on a handle shared with another process. */
        uint64_t held[PRELOAD_HELD_MAX];
        unsigned n_held;
        uint64_t freed[PRELOAD_HELD_MAX];       /* those FREEs, not sent yet */
        unsigned n_freed;
        bool listed;                    /* in the list preload_flush_freed() goes through */
} PreloadHandle;

/* real libc functions (preload-io.c resolves them with dlsym(RTLD_NEXT)) */
extern int (*preload_real_close)(int fd);

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
void preload_flush_freed(PreloadHandle *except, bool try_only);
/* @h goes (its last fd was closed): out of the list preload_flush_freed() goes through. */
void preload_handle_forget(PreloadHandle *h);
/* A fork child: the parent sends the FREEs it answered; none of ours is listed. */
void preload_freed_forget_all(void);
