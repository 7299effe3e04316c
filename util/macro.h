/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Small language helpers used everywhere: scope-bound cleanup, ownership transfer,
 * alignment and array sizing. Everything here is header-only and allocation-free.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((__cleanup__(f)))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))
#define _public_ __attribute__((__visibility__("default")))
#define _printf_(a, b) __attribute__((__format__(printf, a, b)))
#define _packed_ __attribute__((__packed__))
#define _unused_ __attribute__((__unused__))
#define _noinline_ __attribute__((__noinline__))
#define _warn_unused_result_ __attribute__((__warn_unused_result__))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define ALIGN_TO(l, a) (((l) + (a) - 1) & ~((__typeof__(l))(a) - 1))
#define ALIGN8(l) ALIGN_TO((l), 8)

/* GLib (tests) defines the same MIN/MAX; whichever comes first wins, both are equivalent. */
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

#define container_of(ptr, type, member) \
        ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/*
 * DEFINE_CLEANUP(Foo *, foo_free) defines foo_freep(Foo **) for _cleanup_(foo_freep).
 * The destructor must accept NULL.
 */
#define DEFINE_CLEANUP(type, func)                      \
        static inline void func##p(type *p) {           \
                if (*p)                                 \
                        func(*p);                       \
        }                                               \
        struct __useless_struct_to_allow_trailing_semicolon__

static inline void freep(void *p) {
        free(*(void **)p);
}

/* Takes the pointer out of *p, leaving NULL, so a _cleanup_ on the source does nothing. */
static inline void *steal_ptr_impl(void *p) {
        void **pp = p, *v = *pp;

        *pp = NULL;
        return v;
}
#define steal_ptr(p) ((__typeof__(*(p)))steal_ptr_impl(p))

static inline int steal_fd(int *fd) {
        int v = *fd;

        *fd = -1;
        return v;
}

/* Closes fd if valid and returns -1, so that `fd = fd_close(fd);` works. errno is preserved. */
static inline int fd_close(int fd) {
        if (fd >= 0) {
                int saved = errno;

                (void) close(fd);
                errno = saved;
        }
        return -1;
}

static inline void fd_closep(int *fd) {
        *fd = fd_close(*fd);
}
