/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The keyring file (see keyring.h). It is read again for every challenge and answer: other
 * processes of the user (libdbus clients and servers) add cookies to it, and a connection's
 * answer must find the cookie its challenge named.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "proxy/keyring.h"
#include "proxy/log.h"
#include "util/hex.h"
#include "util/macro.h"

#define KEYRING_NEW_KEY_SEC (5 * 60)            /* offer a cookie this long after creation */
#define KEYRING_EXPIRE_SEC (KEYRING_NEW_KEY_SEC + 2 * 60)       /* then drop it */
#define KEYRING_TIME_TRAVEL_SEC (5 * 60)        /* a creation time this far ahead is bogus */
#define KEYRING_MAX_KEYS 256u
#define KEYRING_COOKIE_BYTES 24u
#define KEYRING_LOCK_TRIES 32
#define KEYRING_LOCK_WAIT_USEC (250 * 1000)

typedef struct Key {
        uint32_t id;
        long long created;
        char cookie[SASL_COOKIE_MAX + 1];
} Key;

static int keyring_random(void *userdata, void *buf, size_t n) {
        size_t done = 0;
        ssize_t k;

        while (done < n) {
                k = getrandom((char *)buf + done, n - done, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                done += (size_t)k;
        }
        return 0;
}

/* The directory must be the user's and not open to others (a symlink is not followed). */
static int keyring_dir_check(const Keyring *k) {
        struct stat st;

        if (lstat(k->dir, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || st.st_uid != k->uid || (st.st_mode & 077)) {
                proxy_log(LOG_WARNING, "%s: DBUS_COOKIE_SHA1 keyring directory must be a "
                          "directory of uid %u with mode 0700 (chmod 700 it), ignoring",
                          k->dir, (unsigned)k->uid);
                return -EPERM;
        }
        return 0;
}

/* The valid keys of the file at time @now into @keys (at most KEYRING_MAX_KEYS). */
static int keyring_load(const Keyring *k, long long now, Key *keys, size_t *ret_n) {
        char line[64 + SASL_COOKIE_MAX];
        size_t n = 0;
        FILE *f;
        int fd;

        *ret_n = 0;
        fd = open(k->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        f = fdopen(fd, "r");
        if (!f) {
                (void) close(fd);
                return -errno;
        }
        while (n < KEYRING_MAX_KEYS && fgets(line, sizeof(line), f)) {
                unsigned long long id;
                long long created;
                char cookie[sizeof(line)];
                uint8_t raw[SASL_COOKIE_MAX];
                size_t len;

                if (sscanf(line, "%llu %lld %s", &id, &created, cookie) != 3 || id == 0 ||
                    id > INT32_MAX)
                        continue;
                len = strlen(cookie);
                if (len == 0 || len > SASL_COOKIE_MAX || len % 2 ||
                    hex_decode(cookie, len, raw) < 0)
                        continue;
                if (created > now + KEYRING_TIME_TRAVEL_SEC || now - created > KEYRING_EXPIRE_SEC)
                        continue;
                keys[n].id = (uint32_t)id;
                keys[n].created = created;
                memcpy(keys[n].cookie, cookie, len + 1);
                ++n;
        }
        (void) fclose(f);
        *ret_n = n;
        return 0;
}

static const Key *keyring_recent(const Key *keys, size_t n, long long now) {
        for (size_t i = n; i-- > 0;)
                if (now - keys[i].created < KEYRING_NEW_KEY_SEC)
                        return &keys[i];
        return NULL;
}

static int keyring_lock(const Keyring *k, char *lock, size_t size) {
        int fd, i;

        (void) snprintf(lock, size, "%s.lock", k->file);
        for (i = 0; i <= KEYRING_LOCK_TRIES; ++i) {
                if (i == KEYRING_LOCK_TRIES) {
                        /* libdbus's rule: a lock held this long was left behind */
                        proxy_log(LOG_WARNING, "%s: removing a stale keyring lock", lock);
                        (void) unlink(lock);
                }
                fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd >= 0) {
                        (void) close(fd);
                        return 0;
                }
                if (errno != EEXIST)
                        return -errno;
                if (i < KEYRING_LOCK_TRIES)
                        (void) usleep(KEYRING_LOCK_WAIT_USEC);
        }
        return -EBUSY;
}

/* Write @keys to the file: a temporary file beside it, renamed over it. */
static int keyring_store(const Keyring *k, const Key *keys, size_t n) {
        char tmp[PATH_MAX];
        FILE *f;
        int fd, r = 0;

        if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", k->file) >= sizeof(tmp))
                return -ENAMETOOLONG;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                (void) close(fd);
                (void) unlink(tmp);
                return r;
        }
        for (size_t i = 0; i < n; ++i)
                fprintf(f, "%u %lld %s\n", (unsigned)keys[i].id, keys[i].created, keys[i].cookie);
        if (fflush(f) != 0 || fsync(fileno(f)) < 0)
                r = -errno;
        if (fclose(f) != 0 && !r)
                r = -errno;
        if (!r && rename(tmp, k->file) < 0)
                r = -errno;
        if (r)
                (void) unlink(tmp);
        return r;
}

/* Under the lock: read the file again, add a new cookie, drop the old ones, write it. */
static int keyring_add(const Keyring *k, long long now, Key *ret) {
        Key keys[KEYRING_MAX_KEYS];
        const Key *recent;
        uint8_t raw[KEYRING_COOKIE_BYTES];
        char lock[PATH_MAX + 8];
        size_t n, i;
        uint32_t id;
        int r;

        if (mkdir(k->dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        r = keyring_dir_check(k);
        if (r < 0)
                return r;
        r = keyring_lock(k, lock, sizeof(lock));
        if (r < 0)
                return r;
        r = keyring_load(k, now, keys, &n);
        if (r < 0)
                goto out;
        recent = keyring_recent(keys, n, now);
        if (recent) {                   /* somebody else added one meanwhile */
                *ret = *recent;
                goto out;
        }
        do {
                r = keyring_random(NULL, &id, sizeof(id));
                if (r < 0)
                        goto out;
                id &= INT32_MAX;
                for (i = 0; i < n && keys[i].id != id; ++i)
                        ;
        } while (id == 0 || i < n);
        r = keyring_random(NULL, raw, sizeof(raw));
        if (r < 0)
                goto out;
        if (n == KEYRING_MAX_KEYS) {    /* the oldest gives way */
                memmove(keys, keys + 1, (n - 1) * sizeof(keys[0]));
                --n;
        }
        keys[n] = (Key){ .id = id, .created = now };
        hex_encode(raw, sizeof(raw), keys[n].cookie);
        ++n;
        r = keyring_store(k, keys, n);
        if (r >= 0)
                *ret = keys[n - 1];
out:
        (void) unlink(lock);
        return r;
}

static int keyring_best(void *userdata, uint32_t *ret_id, char ret_cookie[SASL_COOKIE_MAX + 1]) {
        const Keyring *k = userdata;
        Key keys[KEYRING_MAX_KEYS], key;
        long long now = (long long)time(NULL);
        const Key *recent = NULL;
        size_t n;
        int r;

        if (!k->ready)
                return -ENOENT;
        if (keyring_dir_check(k) == 0 && keyring_load(k, now, keys, &n) == 0)
                recent = keyring_recent(keys, n, now);
        if (recent) {
                key = *recent;
        } else {
                r = keyring_add(k, now, &key);
                if (r < 0) {
                        proxy_log(LOG_WARNING, "%s: cannot add a DBUS_COOKIE_SHA1 cookie: %s",
                                  k->file, strerror(-r));
                        return r;
                }
        }
        *ret_id = key.id;
        memcpy(ret_cookie, key.cookie, strlen(key.cookie) + 1);
        return 0;
}

static int keyring_find(void *userdata, uint32_t id, char ret_cookie[SASL_COOKIE_MAX + 1]) {
        const Keyring *k = userdata;
        Key keys[KEYRING_MAX_KEYS];
        size_t n, i;
        int r;

        if (!k->ready)
                return -ENOENT;
        r = keyring_dir_check(k);
        if (r < 0)
                return r;
        r = keyring_load(k, (long long)time(NULL), keys, &n);
        if (r < 0)
                return r;
        for (i = 0; i < n; ++i) {
                if (keys[i].id == id) {
                        memcpy(ret_cookie, keys[i].cookie, strlen(keys[i].cookie) + 1);
                        return 0;
                }
        }
        return -ENOENT;
}

/**
 * keyring_init() - the effective user's keyring
 * @k:          the keyring (filled)
 * @ret_ops:    SASL's ops on it
 *
 * Return: 0, or -ENOENT (no passwd entry or home directory: cookies always fail).
 */
int keyring_init(Keyring *k, SaslCookieOps *ret_ops) {
        struct passwd pw, *res = NULL;
        char buf[4096];

        *k = (Keyring){ .uid = geteuid() };
        *ret_ops = (SaslCookieOps){
                .best = keyring_best,
                .find = keyring_find,
                .random = keyring_random,
                .uid = k->uid,
                .userdata = k,
        };
        if (getpwuid_r(k->uid, &pw, buf, sizeof(buf), &res) != 0 || !res || !res->pw_dir ||
            res->pw_dir[0] != '/')
                return -ENOENT;
        if ((size_t)snprintf(k->user, sizeof(k->user), "%s", res->pw_name) >= sizeof(k->user) ||
            (size_t)snprintf(k->dir, sizeof(k->dir), "%s/.dbus-keyrings", res->pw_dir) >=
                    sizeof(k->dir) ||
            (size_t)snprintf(k->file, sizeof(k->file), "%s/%s", k->dir, SASL_COOKIE_CONTEXT) >=
                    sizeof(k->file))
                return -ENAMETOOLONG;
        ret_ops->user_name = k->user;
        k->ready = true;
        return 0;
}
