/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The classic pcap file format (libpcap savefile, version 2.4, microsecond timestamps) with
 * link-layer type LINKTYPE_DBUS (231): each packet is one complete D-Bus message, from its
 * endianness byte to the end of its body, with no link header and no SASL bytes. Wireshark
 * and tshark dissect these as D-Bus. Headers are written in host byte order, which the magic
 * number announces to the reader.
 */
#include <errno.h>
#include <string.h>
#include "tools/kdbusctl.h"
#include "wire/protocol.h"

/**
 * ctl_pcap_write_header() - the 24-byte file header
 * Return: 0 or negative errno.
 */
int ctl_pcap_write_header(FILE *f) {
        struct {
                uint32_t magic;
                uint16_t version_major;
                uint16_t version_minor;
                int32_t thiszone;
                uint32_t sigfigs;
                uint32_t snaplen;
                uint32_t network;
        } h = {
                .magic = 0xa1b2c3d4u,
                .version_major = 2,
                .version_minor = 4,
                .snaplen = WIRE_MAX_MESSAGE_SIZE,
                .network = CTL_PCAP_LINKTYPE_DBUS,
        };

        _Static_assert(sizeof(h) == 24, "pcap file header is 24 bytes");
        if (fwrite(&h, sizeof(h), 1, f) != 1 || fflush(f) != 0)
                return errno ? -errno : -EIO;
        return 0;
}

/**
 * ctl_pcap_write_record() - one message, stamped @usec (CLOCK_REALTIME, microseconds)
 * Flushed at once, so a capture that is killed is still readable up to its last message.
 * Return: 0 or negative errno.
 */
int ctl_pcap_write_record(FILE *f, const void *data, size_t size, uint64_t usec) {
        struct {
                uint32_t ts_sec;
                uint32_t ts_usec;
                uint32_t incl_len;
                uint32_t orig_len;
        } h = {
                .ts_sec = (uint32_t)(usec / 1000000u),
                .ts_usec = (uint32_t)(usec % 1000000u),
                .incl_len = (uint32_t)size,
                .orig_len = (uint32_t)size,
        };

        if (size > WIRE_MAX_MESSAGE_SIZE)
                return -EMSGSIZE;
        errno = 0;
        if (fwrite(&h, sizeof(h), 1, f) != 1 || (size && fwrite(data, size, 1, f) != 1) ||
            fflush(f) != 0)
                return errno ? -errno : -EIO;
        return 0;
}
