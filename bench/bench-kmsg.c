/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bench/bench-kmsg.h"
#include "wire/endian.h"
#include "wire/message.h"
#include "wire/writer.h"

uint8_t *bench_kmsg_call(const char *destination, size_t n, bool inline_body, size_t *ret_size,
                         size_t *ret_body_offset) {
        WireMsgSpec spec = { .type = WIRE_MSG_METHOD_CALL, .serial = 1, .path = "/org/kdbus/Bench",
                             .interface = "org.kdbus.Bench", .member = "Ping",
                             .destination = destination };
        uint8_t *data = NULL, y = 0;
        WireWriter w;
        WireHeader h;
        size_t i, size;

        wire_writer_init(&w);
        (void) wire_writer_open(&w, 'a', "y");
        for (i = 0; i < (inline_body ? n : 1); ++i)
                (void) wire_writer_append_basic(&w, 'y', &y);
        (void) wire_writer_close(&w);
        if (wire_message_build(&spec, &w, &data, &size) ||
            wire_message_parse(data, size, 0, 0, &h)) {
                wire_writer_deinit(&w);
                free(data);
                return NULL;
        }
        wire_writer_deinit(&w);
        if (!inline_body) {
                wire_store32(data + 4, h.big_endian, (uint32_t) (4 + n));  /* body elsewhere */
                size = h.body_offset;
        }
        *ret_size = size;
        *ret_body_offset = h.body_offset;
        return data;
}

int bench_kmsg_memfd(size_t n) {
        uint8_t *map;
        uint32_t len = (uint32_t) n;
        int fd = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING), r;

        if (fd < 0)
                return -errno;
        if (ftruncate(fd, (off_t) (4 + n)) < 0)
                goto fail;
        map = mmap(NULL, 4 + n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                goto fail;
        memcpy(map, &len, 4);           /* little-endian, as bench_kmsg_call() writes */
        memset(map + 4, 0x5a, n);
        (void) munmap(map, 4 + n);
        /* kdbus takes only a memfd nobody can change any more */
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                goto fail;
        return fd;
fail:
        r = -errno;
        (void) close(fd);
        return r;
}
