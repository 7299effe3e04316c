/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ENOMEM survival of policy-xml (HACKING.md, Allocation failure): malloc/calloc/realloc are interposed in
 * this binary; each round makes the Nth allocation fail, for N = 0, 1, ... until a load
 * completes without hitting the failure. Every failing round must return exactly -ENOMEM
 * (never a crash, a half-built tree, or a wrong CONFIG_E_INVALID), or 0 with the very same
 * dump when libc absorbed the failure itself (vasprintf keeps its larger buffer when the
 * final shrinking malloc fails), and free everything: free() is interposed too, and the
 * number of live blocks allocated during a round must be back to 0 when the round ends.
 * Under AddressSanitizer or valgrind the interposition cannot work (they own malloc), so the
 * test skips itself there.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "policy-xml/config.h"
#include "policy-xml/loader.h"
#include <glib.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#endif

#ifndef HAVE_ASAN
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static long fail_at = -1;               /* -1: never fail */
static long n_allocs;
static bool failed;
static bool counting;                   /* inside a round */
static long n_live;                     /* blocks allocated minus freed inside the round */

static bool should_fail(void) {
        if (fail_at < 0)
                return false;
        if (n_allocs++ != fail_at)
                return false;
        failed = true;
        return true;
}

void *malloc(size_t n) {
        void *p;

        if (should_fail()) {
                errno = ENOMEM;
                return NULL;
        }
        p = __libc_malloc(n);
        if (p && counting)
                ++n_live;
        return p;
}

void *calloc(size_t n, size_t m) {
        void *p;

        if (should_fail()) {
                errno = ENOMEM;
                return NULL;
        }
        p = __libc_calloc(n, m);
        if (p && counting)
                ++n_live;
        return p;
}

void *realloc(void *p, size_t n) {
        void *q;

        if (should_fail()) {
                errno = ENOMEM;
                return NULL;
        }
        q = __libc_realloc(p, n);
        if (!p && q && counting)
                ++n_live;
        return q;
}

void free(void *p) {
        if (p && counting)
                --n_live;
        __libc_free(p);
}

/* Whether our malloc() is the one in use (valgrind replaces it behind our back). */
static bool interposed(void) {
        void *(*volatile m)(size_t) = malloc;
        void *p;

        fail_at = 0;
        n_allocs = 0;
        p = m(1);
        fail_at = -1;
        free(p);
        return p == NULL;
}
#endif

static void oom_loop(const char *path) {
#ifdef HAVE_ASAN
        g_test_skip("malloc interposition does not work under AddressSanitizer");
#else
        ConfigLoadOptions o = { 0 };
        g_autofree char *baseline = NULL;
        long rounds = 0;
        Config *base = NULL;

        if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
                g_test_skip("not installed");
                return;
        }
        if (!interposed()) {
                g_test_skip("malloc is not ours here (valgrind?)");
                return;
        }
        g_assert_cmpint(config_load_file(path, &o, &base), ==, 0);
        g_assert_cmpint(config_dump(base, CONFIG_DUMP_LOCATIONS, &baseline), ==, 0);
        config_free(base);
        for (long i = 0;; ++i) {
                Config *c = NULL;
                char *text = NULL;
                int r;

                failed = false;
                n_allocs = 0;
                n_live = 0;
                counting = true;
                fail_at = i;
                r = config_load_file(path, &o, &c);
                if (r == 0)
                        r = config_dump(c, CONFIG_DUMP_LOCATIONS, &text);
                fail_at = -1;
                if (r == 0)
                        g_assert_cmpstr(text, ==, baseline);
                free(text);
                config_free(c);
                counting = false;
                g_assert_cmpint(n_live, ==, 0);
                if (!failed) {
                        g_assert_cmpint(r, ==, 0);
                        break;
                }
                if (r != 0)
                        g_assert_cmpint(r, ==, -ENOMEM);
                ++rounds;
        }
        g_test_message("%ld failing rounds", rounds);
        g_assert_cmpint(rounds, >, 20);
#endif
}

static void test_oom_includes(void) {
        oom_loop(TEST_DATA_DIR "/valid-config/includes.conf");
}

static void test_oom_every_attribute(void) {
        oom_loop(TEST_DATA_DIR "/valid-config/every-attribute.conf");
}

static void test_oom_debian_system(void) {
        oom_loop("/usr/share/dbus-1/system.conf");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/policy-xml/loader-oom/includes", test_oom_includes);
        g_test_add_func("/policy-xml/loader-oom/every-attribute", test_oom_every_attribute);
        g_test_add_func("/policy-xml/loader-oom/debian-system", test_oom_debian_system);
        return g_test_run();
}
