/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proxy/file-stamp.c: what counts as a change since a file or directory was read (absent
 * and back, replaced, grown, an entry added), and a stamp taken within the timestamp
 * granularity of the last change is never trusted.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "proxy/file-stamp.h"
#include <glib.h>

/* A stamp of @path as if read @later_sec seconds after now (0: read now). */
static void stamp_at(FileStamp *s, const char *path, int later_sec) {
        struct timespec taken = file_stamp_now();
        struct stat st;

        taken.tv_sec += later_sec;
        file_stamp_set(s, stat(path, &st) == 0 ? &st : NULL, taken);
}

static void write_file(const char *path, const char *text) {
        g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

static void test_file(void) {
        g_autofree char *dir = g_dir_make_tmp("file-stamp-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "a.service", NULL);
        g_autofree char *other = g_build_filename(dir, "b.service", NULL);
        FileStamp s;

        /* absent, then still absent / there */
        stamp_at(&s, path, 0);
        g_assert_false(s.present);
        g_assert_false(file_stamp_changed(&s, path));
        write_file(path, "one");
        g_assert_true(file_stamp_changed(&s, path));

        /* read just now: the times cannot show a change in the same tick */
        stamp_at(&s, path, 0);
        g_assert_true(file_stamp_changed(&s, path));
        /* read long after its last change: unchanged until it changes */
        stamp_at(&s, path, FILE_STAMP_RACY_SEC + 10);
        g_assert_false(file_stamp_changed(&s, path));
        write_file(path, "one more");
        g_assert_true(file_stamp_changed(&s, path));

        /* replaced by another file of the same size */
        stamp_at(&s, path, FILE_STAMP_RACY_SEC + 10);
        write_file(other, "one more");
        g_assert_cmpint(rename(other, path), ==, 0);
        g_assert_true(file_stamp_changed(&s, path));

        /* gone */
        stamp_at(&s, path, FILE_STAMP_RACY_SEC + 10);
        g_assert_cmpint(unlink(path), ==, 0);
        g_assert_true(file_stamp_changed(&s, path));
        g_assert_cmpint(rmdir(dir), ==, 0);
}

static void test_directory(void) {
        g_autofree char *dir = g_dir_make_tmp("file-stamp-XXXXXX", NULL);
        g_autofree char *sub = g_build_filename(dir, "services", NULL);
        g_autofree char *path = g_build_filename(sub, "a.service", NULL);
        const struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
        FileStamp s;

        /* made after it was read */
        stamp_at(&s, sub, FILE_STAMP_RACY_SEC + 10);
        g_assert_cmpint(mkdir(sub, 0700), ==, 0);
        g_assert_true(file_stamp_changed(&s, sub));

        /* an entry added (the old mtime makes the new one differ whatever the clock's tick) */
        g_assert_cmpint(utimensat(AT_FDCWD, sub, old, 0), ==, 0);
        stamp_at(&s, sub, FILE_STAMP_RACY_SEC + 10);
        g_assert_false(file_stamp_changed(&s, sub));
        write_file(path, "x");
        g_assert_true(file_stamp_changed(&s, sub));

        g_assert_cmpint(unlink(path), ==, 0);
        g_assert_cmpint(rmdir(sub), ==, 0);
        g_assert_cmpint(rmdir(dir), ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/proxy/file-stamp/file", test_file);
        g_test_add_func("/proxy/file-stamp/directory", test_directory);
        return g_test_run();
}
