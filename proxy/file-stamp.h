/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Has a file or directory changed since we read it? dbus-daemon looks at its service
 * directories again whenever a name it does not know is asked for, and at a known name's
 * file before starting it, so a .service file counts at once even where no inotify watch
 * sees it (a directory made after the bus started, $XDG_RUNTIME_DIR/dbus-1/services) or
 * before the watch's event is handled. kdbusd does the same, but reads again only what
 * may have changed: a stamp is the file's identity and times when it was read, and a
 * stat() tells whether it is still the same.
 *
 * A change within the filesystem's timestamp granularity of the reading leaves the times
 * as they were, so a stamp whose ctime is that close to when it was taken is never
 * trusted (the same rule as git's "racily clean" index entries): that file is read again
 * at each look until a reading comes FILE_STAMP_RACY_SEC after its last change.
 */
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

#define FILE_STAMP_RACY_SEC 2   /* the coarsest timestamps in use (FAT: 2 s, ext3: 1 s) */

typedef struct FileStamp {
        bool present;
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        struct timespec ctime;
        struct timespec taken;  /* CLOCK_REALTIME before the stat, as file times are */
} FileStamp;

/* The time to put in FileStamp.taken: take it before the stat and before reading. */
struct timespec file_stamp_now(void);
/* A stamp from @st (NULL: the file is absent) taken at @taken. */
void file_stamp_set(FileStamp *s, const struct stat *st, struct timespec taken);
/* Stamp @path now (absent if stat() fails). */
void file_stamp_take(FileStamp *s, const char *path);
/* Can @path differ from what was read when @s was taken? */
bool file_stamp_changed(const FileStamp *s, const char *path);
