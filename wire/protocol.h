/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Constants of the D-Bus wire protocol (D-Bus specification, "Message Protocol"), and the
 * limits the specification sets. Nothing here allocates or depends on anything.
 */

enum {
        WIRE_ENDIAN_LITTLE = 'l',
        WIRE_ENDIAN_BIG = 'B',
        WIRE_PROTOCOL_VERSION = 1,
};

typedef enum WireMsgType {
        WIRE_MSG_INVALID = 0,
        WIRE_MSG_METHOD_CALL = 1,
        WIRE_MSG_METHOD_RETURN = 2,
        WIRE_MSG_ERROR = 3,
        WIRE_MSG_SIGNAL = 4,
        _WIRE_MSG_N,
} WireMsgType;

enum {
        WIRE_FLAG_NO_REPLY_EXPECTED = 1u << 0,
        WIRE_FLAG_NO_AUTO_START = 1u << 1,
        WIRE_FLAG_ALLOW_INTERACTIVE_AUTHORIZATION = 1u << 2,
};

typedef enum WireField {
        WIRE_FIELD_INVALID = 0,
        WIRE_FIELD_PATH = 1,
        WIRE_FIELD_INTERFACE = 2,
        WIRE_FIELD_MEMBER = 3,
        WIRE_FIELD_ERROR_NAME = 4,
        WIRE_FIELD_REPLY_SERIAL = 5,
        WIRE_FIELD_DESTINATION = 6,
        WIRE_FIELD_SENDER = 7,
        WIRE_FIELD_SIGNATURE = 8,
        WIRE_FIELD_UNIX_FDS = 9,
        _WIRE_FIELD_N,
} WireField;

/* Limits from the specification. */
#define WIRE_MAX_MESSAGE_SIZE (128u * 1024 * 1024)     /* 2^27 */
#define WIRE_MAX_ARRAY_SIZE (64u * 1024 * 1024)        /* 2^26 */
#define WIRE_MAX_SIGNATURE_LEN 255u
#define WIRE_MAX_NAME_LEN 255u
#define WIRE_MAX_ARRAY_DEPTH 32u
#define WIRE_MAX_STRUCT_DEPTH 32u
#define WIRE_MAX_TOTAL_DEPTH 64u
#define WIRE_MAX_UNIX_FDS 253u   /* what the kernel passes in one SCM_RIGHTS; dbus-daemon's cap */
#define WIRE_FIXED_HEADER_SIZE 16u

/* Well-known names of the bus driver. */
#define WIRE_DRIVER_NAME "org.freedesktop.DBus"
#define WIRE_DRIVER_PATH "/org/freedesktop/DBus"
#define WIRE_DRIVER_INTERFACE "org.freedesktop.DBus"
#define WIRE_LOCAL_PATH "/org/freedesktop/DBus/Local"
#define WIRE_LOCAL_INTERFACE "org.freedesktop.DBus.Local"
