/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Allocation-failure injection for unit tests linked with
 * -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc: the statically linked code's
 * allocations go through the wrappers below, which fail exactly the n-th one after
 * oom_arm(n). Include it from one file per test executable (it defines the wrappers).
 */
#include <stdbool.h>
#include <stddef.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

static int oom_countdown = -1;          /* -1: off; 0: fail the next allocation */
static bool oom_hit;                    /* the armed failure happened */
static unsigned long n_allocs;          /* every malloc/calloc/realloc */

static bool oom_fail(void) {
        ++n_allocs;
        if (oom_countdown < 0)
                return false;
        if (oom_countdown-- == 0) {
                oom_hit = true;
                oom_countdown = -1;     /* one failure per run */
                return true;
        }
        return false;
}

void *__wrap_malloc(size_t size) {
        return oom_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size) {
        return oom_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size) {
        return oom_fail() ? NULL : __real_realloc(p, size);
}

/* Fail the @n-th allocation from now (0: the next one). */
static inline void oom_arm(int n) {
        oom_hit = false;
        oom_countdown = n;
}

static inline void oom_disarm(void) {
        oom_countdown = -1;
}
