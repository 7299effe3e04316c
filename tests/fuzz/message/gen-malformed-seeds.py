#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# Writes seeds that break rules the GDBus-made seeds cannot (GDBus refuses to encode them):
# reserved Local path/interface, a bad error name, variants nested too deeply, an unknown
# header field. Run by hand: /usr/bin/python3 gen-malformed-seeds.py corpus
import struct
import sys


class Msg:
    def __init__(self, be, mtype, serial=1):
        self.e = '>' if be else '<'
        self.b = bytearray(b'B' if be else b'l') + bytes([mtype, 0, 1])
        self.b += struct.pack(self.e + 'III', 0, serial, 0)
        self.body_start = None

    def pad(self, a):
        while len(self.b) % a:
            self.b.append(0)

    def u32(self, v):
        self.pad(4)
        self.b += struct.pack(self.e + 'I', v)

    def s(self, v):
        v = v.encode() if isinstance(v, str) else v
        self.u32(len(v))
        self.b += v + b'\0'

    def g(self, v):
        self.b += bytes([len(v)]) + v.encode() + b'\0'

    def field(self, code, sig):
        self.pad(8)
        self.b.append(code)
        self.g(sig)

    def fields_end(self):
        struct.pack_into(self.e + 'I', self.b, 12, len(self.b) - 16)
        self.pad(8)
        self.body_start = len(self.b)

    def done(self):
        if self.body_start is None:
            self.fields_end()
        struct.pack_into(self.e + 'I', self.b, 4, len(self.b) - self.body_start)
        return bytes(self.b)


def call(be, path='/p', member='M', sig=None):
    m = Msg(be, 1)
    m.field(1, 'o'); m.s(path)
    m.field(3, 's'); m.s(member)
    if sig is not None:
        m.field(8, 'g'); m.g(sig)
    return m


seeds = {}
for be in (False, True):
    tag = 'be' if be else 'le'
    seeds['local-path-' + tag] = call(be, path='/org/freedesktop/DBus/Local').done()
    m = call(be)
    m.field(2, 's'); m.s('org.freedesktop.DBus.Local')
    seeds['local-interface-' + tag] = m.done()
    m = Msg(be, 3)
    m.field(4, 's'); m.s('NoDots')
    m.field(5, 'u'); m.u32(1)
    seeds['bad-error-name-' + tag] = m.done()
    m = call(be, sig='v')
    m.fields_end()
    for _ in range(70):
        m.g('v')
    m.g('y'); m.b.append(1)
    seeds['deep-variants-' + tag] = m.done()
    m = call(be, sig='a' * 33 + 'y')
    seeds['deep-arrays-' + tag] = m.done()
    m = call(be)
    m.field(77, 'a{sv}'); m.u32(0); m.pad(8)
    seeds['unknown-field-' + tag] = m.done()

for name, data in seeds.items():
    with open(f'{sys.argv[1]}/{name}', 'wb') as f:
        f.write(data)
