/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File stamps (see file-stamp.h). */
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "proxy/file-stamp.h"

struct timespec file_stamp_now(void) {
        struct timespec ts = { 0, 0 };

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return ts;
}

void file_stamp_set(FileStamp *s, const struct stat *st, struct timespec taken) {
        memset(s, 0, sizeof(*s));
        s->taken = taken;
        if (!st)
                return;
        s->present = true;
        s->dev = st->st_dev;
        s->ino = st->st_ino;
        s->size = st->st_size;
        s->mtime = st->st_mtim;
        s->ctime = st->st_ctim;
}

void file_stamp_take(FileStamp *s, const char *path) {
        struct timespec taken = file_stamp_now();
        struct stat st;

        file_stamp_set(s, stat(path, &st) == 0 ? &st : NULL, taken);
}

static bool ts_equal(struct timespec a, struct timespec b) {
        return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool file_stamp_changed(const FileStamp *s, const char *path) {
        struct stat st;

        if (stat(path, &st) != 0)
                return s->present;
        if (!s->present || st.st_dev != s->dev || st.st_ino != s->ino ||
            st.st_size != s->size || !ts_equal(st.st_mtim, s->mtime) ||
            !ts_equal(st.st_ctim, s->ctime))
                return true;
        /* changed in the same timestamp tick as it was read: the times cannot tell */
        return s->ctime.tv_sec >= s->taken.tv_sec - FILE_STAMP_RACY_SEC;
}
