# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A minimal D-Bus wire client for the integration tests: SASL EXTERNAL, marshalling of every
# type, fd passing, and a log of EVERY incoming message in arrival order. It exists so that the
# tests see exactly what the bus sends (order, flags, headers) with no client library in between
# reordering or filtering, and so that the malformed-input tests can send bytes no library would.
# Little-endian only on the sending side (the bus must accept both; the reader handles both).

import array
import os
import select
import socket
import struct
import time

BUS = 'org.freedesktop.DBus'
BUS_PATH = '/org/freedesktop/DBus'

METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL = 1, 2, 3, 4
TYPE_NAMES = {1: 'call', 2: 'return', 3: 'error', 4: 'signal'}
NO_REPLY_EXPECTED = 1

F_PATH, F_INTERFACE, F_MEMBER, F_ERROR_NAME, F_REPLY_SERIAL = 1, 2, 3, 4, 5
F_DESTINATION, F_SENDER, F_SIGNATURE, F_UNIX_FDS = 6, 7, 8, 9
FIELD_SIGS = {1: 'o', 2: 's', 3: 's', 4: 's', 5: 'u', 6: 's', 7: 's', 8: 'g', 9: 'u'}

_FIXED = {'y': ('B', 1), 'n': ('h', 2), 'q': ('H', 2), 'i': ('i', 4), 'u': ('I', 4),
          'x': ('q', 8), 't': ('Q', 8), 'd': ('d', 8), 'h': ('I', 4)}


def _align(n, a):
    return (n + a - 1) // a * a


def alignment(sig):
    c = sig[0]
    if c in _FIXED:
        return _FIXED[c][1]
    if c in 'bsoa':
        return 4
    if c in '({':
        return 8
    return 1  # g, v


def split_sig(sig):
    """Split a signature into its complete types."""
    out = []
    i = 0
    while i < len(sig):
        j = _complete_end(sig, i)
        out.append(sig[i:j])
        i = j
    return out


def _complete_end(sig, i):
    c = sig[i]
    if c == 'a':
        return _complete_end(sig, i + 1)
    if c in '({':
        close = ')' if c == '(' else '}'
        depth = 0
        for j in range(i, len(sig)):
            if sig[j] in '({':
                depth += 1
            elif sig[j] in ')}':
                depth -= 1
                if depth == 0:
                    assert sig[j] == close
                    return j + 1
        raise ValueError('unbalanced signature ' + sig)
    return i + 1


class Writer:
    def __init__(self, start=0):
        self.b = bytearray()
        self.start = start

    def pad(self, a):
        n = _align(self.start + len(self.b), a) - self.start - len(self.b)
        self.b += b'\0' * n

    def put(self, sig, v):
        c = sig[0]
        if c in _FIXED:
            fmt, size = _FIXED[c]
            self.pad(size)
            self.b += struct.pack('<' + fmt, v)
        elif c == 'b':
            self.pad(4)
            self.b += struct.pack('<I', v if isinstance(v, int) and not isinstance(v, bool)
                                  else (1 if v else 0))
        elif c in 'so':
            e = v.encode() if isinstance(v, str) else bytes(v)
            self.pad(4)
            self.b += struct.pack('<I', len(e)) + e + b'\0'
        elif c == 'g':
            e = v.encode() if isinstance(v, str) else bytes(v)
            self.b += bytes([len(e)]) + e + b'\0'
        elif c == 'v':
            vsig, val = v
            self.put('g', vsig)
            self.put(vsig, val)
        elif c == 'a':
            self.pad(4)
            lenpos = len(self.b)
            self.b += b'\0\0\0\0'
            elem = sig[1:]
            self.pad(alignment(elem))
            begin = len(self.b)
            if elem == 'y' and isinstance(v, (bytes, bytearray)):
                self.b += v
                struct.pack_into('<I', self.b, lenpos, len(v))
                return
            items = v.items() if isinstance(v, dict) else v
            for x in items:
                self.put(elem, x)
            struct.pack_into('<I', self.b, lenpos, len(self.b) - begin)
        elif c in '({':
            self.pad(8)
            for s, x in zip(split_sig(sig[1:-1]), v):
                self.put(s, x)
        else:
            raise ValueError('bad signature ' + sig)

    def put_all(self, sig, values):
        for s, x in zip(split_sig(sig), values):
            self.put(s, x)


class Reader:
    def __init__(self, data, little=True, start=0):
        self.d = data
        self.p = 0
        self.e = '<' if little else '>'
        self.start = start

    def pad(self, a):
        self.p = _align(self.start + self.p, a) - self.start

    def get(self, sig):
        c = sig[0]
        if c in _FIXED:
            fmt, size = _FIXED[c]
            self.pad(size)
            v = struct.unpack_from(self.e + fmt, self.d, self.p)[0]
            self.p += size
            return v
        if c == 'b':
            return bool(self.get('u'))
        if c in 'so':
            n = self.get('u')
            v = bytes(self.d[self.p:self.p + n]).decode('utf-8', 'replace')
            self.p += n + 1
            return v
        if c == 'g':
            n = self.d[self.p]
            v = bytes(self.d[self.p + 1:self.p + 1 + n]).decode()
            self.p += n + 2
            return v
        if c == 'v':
            vs = self.get('g')
            return (vs, self.get(vs))
        if c == 'a':
            n = self.get('u')
            elem = sig[1:]
            self.pad(alignment(elem))
            end = self.p + n
            if elem == 'y':
                self.p = end
                return bytes(self.d[end - n:end])
            out = []
            while self.p < end:
                out.append(self.get(elem))
            if elem[0] == '{':
                return dict(out)
            return out
        if c in '({':
            self.pad(8)
            return tuple(self.get(s) for s in split_sig(sig[1:-1]))
        raise ValueError('bad signature ' + sig)


class Message:
    def __init__(self, mtype, path=None, interface=None, member=None, error_name=None,
                 reply_serial=None, destination=None, sender=None, signature='', body=(),
                 flags=0, unix_fds=0, serial=0):
        self.type = mtype
        self.flags = flags
        self.serial = serial
        self.fields = {}
        for code, v in ((F_PATH, path), (F_INTERFACE, interface), (F_MEMBER, member),
                        (F_ERROR_NAME, error_name), (F_REPLY_SERIAL, reply_serial),
                        (F_DESTINATION, destination), (F_SENDER, sender)):
            if v is not None:
                self.fields[code] = v
        if signature:
            self.fields[F_SIGNATURE] = signature
        if unix_fds:
            self.fields[F_UNIX_FDS] = unix_fds
        self.body = list(body)
        self.fds = []

    def f(self, code):
        return self.fields.get(code)

    path = property(lambda s: s.f(F_PATH))
    interface = property(lambda s: s.f(F_INTERFACE))
    member = property(lambda s: s.f(F_MEMBER))
    error_name = property(lambda s: s.f(F_ERROR_NAME))
    reply_serial = property(lambda s: s.f(F_REPLY_SERIAL))
    destination = property(lambda s: s.f(F_DESTINATION))
    sender = property(lambda s: s.f(F_SENDER))
    signature = property(lambda s: s.f(F_SIGNATURE) or '')

    def to_bytes(self, serial, fields=None, body_bytes=None):
        """Marshal; @fields (list of (code, sig, value)) and @body_bytes override, so tests
        can build messages the normal path would refuse."""
        if body_bytes is None:
            bw = Writer()
            bw.put_all(self.signature, self.body)
            body_bytes = bytes(bw.b)
        if fields is None:
            fields = [(c, FIELD_SIGS[c], v) for c, v in sorted(self.fields.items())]
        w = Writer()
        w.b += struct.pack('<cBBBII', b'l', self.type, self.flags, 1, len(body_bytes), serial)
        w.put('a(yv)', [(c, (s, v)) for c, s, v in fields])
        w.pad(8)
        return bytes(w.b) + body_bytes

    def describe(self, labels=None):
        """One line, deterministic, no serials (the caller maps reply serials to labels)."""
        t = TYPE_NAMES.get(self.type, str(self.type))
        parts = [t]
        if self.sender is not None:
            parts.append('from=' + self.sender)
        if self.destination is not None:
            parts.append('to=' + self.destination)
        if self.path is not None:
            parts.append('path=' + self.path)
        if self.interface is not None or self.member is not None:
            parts.append('%s.%s' % (self.interface, self.member))
        if self.error_name is not None:
            parts.append('error=' + self.error_name)
        if self.reply_serial is not None:
            lab = labels.get(self.reply_serial) if labels else None
            parts.append('reply-to=' + (lab if lab else 'serial'))
        if self.flags:
            parts.append('flags=%d' % self.flags)
        if self.type == ERROR and self.body and isinstance(self.body[0], str):
            parts.append('(%s)' % self.signature)
        else:
            parts.append('(%s) %r' % (self.signature, self.body))
        return ' '.join(parts)


def parse_message(data):
    """Return (Message, total_length) or None if @data holds less than one message."""
    if len(data) < 16:
        return None
    little = data[0:1] == b'l'
    e = '<' if little else '>'
    mtype, flags, _ver, blen, serial, flen = struct.unpack_from(e + 'BBBIII', data, 1)
    hlen = _align(16 + flen, 8)
    total = hlen + blen
    if len(data) < total:
        return None
    r = Reader(data[:hlen], little)
    r.p = 12
    fields = r.get('a(yv)')
    m = Message(mtype, flags=flags, serial=serial)
    for code, (_s, v) in fields:
        m.fields[code] = v
    br = Reader(data[hlen:total], little)
    m.body = [br.get(s) for s in split_sig(m.signature)]
    return m, total


class Disconnected(Exception):
    pass


def socket_path(address):
    """First unix: address of a D-Bus address list -> connect() argument."""
    for a in address.split(';'):
        if not a.startswith('unix:'):
            continue
        kv = dict(x.split('=', 1) for x in a[5:].split(',') if '=' in x)
        if 'path' in kv:
            return kv['path']
        if 'abstract' in kv:
            return '\0' + kv['abstract']
    raise ValueError('no unix address in ' + address)


class Conn:
    """One raw connection. Every received message is appended to self.log (a list of
    Message) unless it is the reply to a call made with quiet=True."""

    def __init__(self, address, hello=True, fds=False, auth=True, name='conn'):
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(socket_path(address))
        self.buf = bytearray()
        self.rbuf = memoryview(bytearray(256 << 10))
        self.fdq = []
        self.log = []
        self.labels = {}
        self.quiet = set()
        self.serial = 0
        self.unique = None
        self.closed = False
        self.guid = None
        if auth:
            self.authenticate(fds)
        if hello:
            self.unique = self.call(BUS, BUS_PATH, BUS, 'Hello', quiet=True).body[0]

    # SASL -----------------------------------------------------------------------------
    def sasl_line(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        while b'\r\n' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError('no SASL reply')
            r, _, _ = select.select([self.sock], [], [], left)
            if r:
                d = self.sock.recv(4096)
                if not d:
                    raise Disconnected()
                self.buf += d
        line, rest = bytes(self.buf).split(b'\r\n', 1)
        self.buf = bytearray(rest)
        return line.decode('ascii', 'replace')

    def authenticate(self, fds=False):
        uid = str(os.getuid()).encode().hex().encode()
        self.sock.sendall(b'\0AUTH EXTERNAL ' + uid + b'\r\n')
        line = self.sasl_line()
        if not line.startswith('OK '):
            raise RuntimeError('SASL: ' + line)
        self.guid = line[3:]
        if fds:
            self.sock.sendall(b'NEGOTIATE_UNIX_FD\r\n')
            line = self.sasl_line()
            if line != 'AGREE_UNIX_FD':
                raise RuntimeError('SASL fd: ' + line)
        self.sock.sendall(b'BEGIN\r\n')

    # I/O -----------------------------------------------------------------------------
    def next_serial(self):
        self.serial += 1
        return self.serial

    def send_raw(self, data, fds=()):
        if fds:
            self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                        array.array('i', fds))])
        else:
            self.sock.sendall(data)

    def send(self, msg, fds=(), label=None, quiet=False):
        s = self.next_serial()
        if label:
            self.labels[s] = label
        if quiet:
            self.quiet.add(s)
        if fds:
            msg.fields[F_UNIX_FDS] = len(fds)
        self.send_raw(msg.to_bytes(s), fds)
        return s

    def _fill(self, timeout):
        r, _, _ = select.select([self.sock], [], [], max(timeout, 0))
        if not r:
            return False
        try:
            # into one buffer per connection: a fresh 1 MiB object per read costs a memset
            # per read under the MALLOC_PERTURB_ that meson test sets (8x slower scenarios)
            n, anc, _flags, _a = self.sock.recvmsg_into([self.rbuf], socket.CMSG_SPACE(64 * 4))
            d = self.rbuf[:n]
        except ConnectionResetError:
            d, anc = b'', []
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array('i')
                a.frombytes(cdata[:len(cdata) - len(cdata) % 4])
                self.fdq.extend(a)
        if not d:
            self.closed = True
            raise Disconnected()
        self.buf += d
        return True

    def _need(self):
        """Bytes needed for the first message in the buffer (16 if unknown yet)."""
        if len(self.buf) < 16:
            return 16
        e = '<' if self.buf[0:1] == b'l' else '>'
        blen, _serial, flen = struct.unpack_from(e + 'III', self.buf, 4)
        return _align(16 + flen, 8) + blen

    def recv(self, timeout=5.0):
        """Next message (logged), or None on timeout; raises Disconnected on EOF."""
        deadline = time.monotonic() + timeout
        while True:
            p = parse_message(self.buf) if len(self.buf) >= self._need() else None
            if p:
                m, n = p
                del self.buf[:n]
                nfd = m.f(F_UNIX_FDS) or 0
                m.fds, self.fdq = self.fdq[:nfd], self.fdq[nfd:]
                if not (m.reply_serial in self.quiet and m.type in (METHOD_RETURN, ERROR)):
                    self.log.append(m)
                return m
            if self.closed:
                raise Disconnected()
            if not self._fill(deadline - time.monotonic()):
                return None

    def call(self, dest, path, iface, member, sig='', args=(), fds=(), flags=0,
             timeout=10.0, quiet=False, label=None):
        m = Message(METHOD_CALL, path=path, interface=iface, member=member, destination=dest,
                    signature=sig, body=args, flags=flags)
        s = self.send(m, fds, label=label or member, quiet=quiet)
        deadline = time.monotonic() + timeout
        while True:
            r = self.recv(deadline - time.monotonic())
            if r is None:
                raise TimeoutError('%s: no reply to %s' % (self.name, member))
            if r.type in (METHOD_RETURN, ERROR) and r.reply_serial == s:
                return r

    def bus(self, member, sig='', args=(), quiet=False, **kw):
        return self.call(BUS, BUS_PATH, BUS, member, sig, args, quiet=quiet, **kw)

    def sync(self):
        """Round trip to the driver: everything the bus queued for us before is now logged."""
        self.bus('GetId', quiet=True)

    def emit(self, path, iface, member, sig='', args=(), dest=None):
        m = Message(SIGNAL, path=path, interface=iface, member=member, destination=dest,
                    signature=sig, body=args)
        return self.send(m)

    def reply(self, call, sig='', args=()):
        m = Message(METHOD_RETURN, reply_serial=call.serial, destination=call.sender,
                    signature=sig, body=args, flags=NO_REPLY_EXPECTED)
        return self.send(m)

    def error(self, call, name, text):
        m = Message(ERROR, reply_serial=call.serial, destination=call.sender, error_name=name,
                    signature='s', body=[text], flags=NO_REPLY_EXPECTED)
        return self.send(m)

    def take_log(self):
        out = [m.describe(self.labels) for m in self.log]
        self.log = []
        return out

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
        for fd in self.fdq:
            os.close(fd)
        self.fdq = []
