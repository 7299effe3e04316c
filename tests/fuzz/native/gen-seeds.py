#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the seed corpus of the native fuzz target (fuzz-native.c): record lists
(u8 op, u8 arg, u16 len, bytes) for the usual paths: calls by id and by name with and
without reply, SYNC_REPLY, broadcasts, names moving, B's messages to A received with PEEK,
DROP and priorities, and each command with a struct of its size and a few items."""
import os
import struct
import sys

KDBUS_ITEM_NAME = 0x8
KDBUS_ITEM_ID = 0x9  # not used by all commands
KDBUS_ITEM_BLOOM_MASK = 0x10
KDBUS_ITEM_ATTACH_FLAGS_SEND = 0x3
KDBUS_ITEM_ID_ADD = 0x8003


def rec(op, arg, data=b''):
    return struct.pack('<BBH', op, arg, len(data)) + data


def item(itype, payload):
    size = 16 + len(payload)
    pad = (8 - size % 8) % 8
    return struct.pack('<QQ', size, itype) + payload + b'\0' * pad


# indices into fuzz-native.c's commands[]
SEND, RECV, FREE, ACQ, REL, LIST, INFO, CREATOR, UPDATE, MADD, MREM, BYEBYE = range(12)

seeds = {
    'empty': b'',
    'call-id-reply': rec(2, 8, b'abcd') + rec(3, 0) + rec(4, 0),
    'call-name-reply': rec(2, 8 | 1, b'xy') + rec(3, 0) + rec(4, 0),
    'call-sync': rec(2, 8 | 16, b'sync') + rec(4, 0),
    'call-no-reply': rec(2, 0, b'') + rec(3, 0),
    'broadcast': rec(2, 2, b'bb') + rec(3, 0) + rec(4, 0),
    'signal-unicast': rec(2, 4, b's') + rec(3, 0),
    'names': rec(5, 0) + rec(5, 2 | 4) + rec(2, 1 | 32, b'n') + rec(5, 8) + rec(3, 0),
    'b-to-a-recv': rec(6, 0, b'abc') + rec(6, 1, b'd') + rec(4, 1) + rec(4, 4) + rec(4, 0),
    'b-to-a-drop': rec(6, 0, b'abc') + rec(4, 2) + rec(4, 0),
    'privileged': rec(1, LIST, struct.pack('<QQQQQ', 40, 1 | 2 | 4 | 8, 0, 0, 0)),
    'list': rec(1, LIST, struct.pack('<QQQQQ', 40, 1 | 2 | 4 | 8, 0, 0, 0)) + rec(0, 0),
    'conn-info-id': rec(1, INFO, struct.pack('<QQQQQQQ', 56, 0, 0, 1, 0xffffffff, 0, 0)),
    'conn-info-name': rec(1, INFO, struct.pack('<QQQQQQQ', 56, 0, 0, 0, 0xffffffff, 0, 0)
                          + item(KDBUS_ITEM_NAME, b'org.fuzz.B\0')),
    'creator-info': rec(1, CREATOR, struct.pack('<QQQQQQQ', 56, 0, 0, 0, 0xffff, 0, 0)),
    'update': rec(1, UPDATE, struct.pack('<QQQ', 0, 0, 0)
                  + item(KDBUS_ITEM_ATTACH_FLAGS_SEND, struct.pack('<Q', 0xff))),
    'match-add': rec(1, MADD, struct.pack('<QQQQ', 0, 0, 0, 7)
                     + item(KDBUS_ITEM_BLOOM_MASK, b'\xff' * 64)) + rec(2, 2, b'm') + rec(4, 0),
    'match-notify': rec(1, MADD, struct.pack('<QQQQ', 0, 0, 0, 8)
                        + item(KDBUS_ITEM_ID_ADD, struct.pack('<QQ', 0xffffffffffffffff, 0)))
                    + rec(5, 1) + rec(4, 0),
    'match-remove': rec(1, MREM, struct.pack('<QQQQ', 32, 0, 0, 7)),
    'acquire': rec(1, ACQ, struct.pack('<QQQ', 0, 4, 0) + item(KDBUS_ITEM_NAME, b'org.fuzz.X\0'))
               + rec(1, REL, struct.pack('<QQQ', 0, 0, 0) + item(KDBUS_ITEM_NAME, b'org.fuzz.X\0')),
    'recv-free': rec(6, 0, b'q') + rec(1, RECV, struct.pack('<QQQQQQQQ', 64, 0, 0, 0, 0, 0, 0, 0))
                 + rec(1, FREE, struct.pack('<QQQ', 24, 0, 0)),
    'byebye': rec(1, BYEBYE, struct.pack('<QQQ', 24, 0, 0)) + rec(2, 8, b'late'),
    'garbage': rec(0, SEND, os.urandom(0) + b'\x08\0\0\0\0\0\0\0' + b'\xff' * 40),
}

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus')
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
print(f'{len(seeds)} seeds in {out}')
