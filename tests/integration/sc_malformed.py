# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Bad input over a raw socket: one case per validation rule of the wire format and of
# SASL (the offender is disconnected or gets dbus-daemon's error, a bystander keeps being
# served), then robustness (cut messages, callers that leave, large messages, many clients).

import os
import re
import socket
import struct
import threading
import time

import rawbus
from harness import EchoService, GoneWatcher, scenario
from rawbus import BUS, BUS_PATH, Conn, Disconnected, Message


CUR_SELF = [None]  # the offender's unique name, for messages it sends to itself


def call_bytes(member='GetNameOwner', sig='s', body=(BUS,), fields=None, dest=BUS,
               path=BUS_PATH, iface=BUS, mtype=rawbus.METHOD_CALL, serial=77,
               body_bytes=None, flags=0):
    if dest == '{SELF}':
        dest = CUR_SELF[0]
    if fields is not None:
        fields = [(c, t, CUR_SELF[0] if v == '{SELF}' else v) for c, t, v in fields]
    m = Message(mtype, path=path, interface=iface, member=member, destination=dest,
                signature=sig, body=list(body), flags=flags)
    return bytearray(m.to_bytes(serial, fields=fields, body_bytes=body_bytes))


def std_fields(path=BUS_PATH, iface=BUS, member='GetNameOwner', dest=BUS, sig='s', extra=()):
    f = []
    if path is not None:
        f.append((1, 'o', path))
    if iface is not None:
        f.append((2, 's', iface))
    if member is not None:
        f.append((3, 's', member))
    if dest is not None:
        f.append((6, 's', dest))
    if sig is not None:
        f.append((8, 'g', sig))
    return f + list(extra)


def bad_body(sig, raw):
    return call_bytes(member='Echo', sig=sig, dest='{SELF}', path='/o', iface='com.example.X',
                      body_bytes=raw)


def self_call(member='Echo', path='/o'):
    """A valid call to the offender itself (a boundary that must be accepted)."""
    return call_bytes(member=member, sig='', body=(), dest='{SELF}', path=path,
                      iface='com.example.X')


def s_bytes(b):
    return struct.pack('<I', len(b)) + b + b'\0'


def nested(depth):
    return 'a' * depth + 'y'


MALFORMED = [
    ('endianness', lambda: (lambda b: (b.__setitem__(0, ord('x')), b)[1])(call_bytes())),
    ('big-endian-ok', None),
    ('version', lambda: (lambda b: (b.__setitem__(3, 2), b)[1])(call_bytes())),
    ('type-0', lambda: (lambda b: (b.__setitem__(1, 0), b)[1])(call_bytes())),
    ('type-unknown-5', lambda: (lambda b: (b.__setitem__(1, 5), b)[1])(call_bytes())),
    ('serial-0', lambda: call_bytes(serial=0)),
    ('body-length-short', lambda: (lambda b: (struct.pack_into('<I', b, 4, 4), b)[1])(
        call_bytes())),
    ('body-length-long', lambda: (lambda b: (struct.pack_into('<I', b, 4, 200), b)[1])(
        call_bytes())),
    ('body-length-huge', lambda: (lambda b: (struct.pack_into('<I', b, 4, 1 << 28), b)[1])(
        call_bytes())),
    ('utf8-invalid', lambda: bad_body('s', s_bytes(b'\xff\xfe'))),
    ('utf8-overlong', lambda: bad_body('s', s_bytes(b'\xc0\xaf'))),
    ('utf8-surrogate', lambda: bad_body('s', s_bytes(b'\xed\xa0\x80'))),
    ('string-nul-inside', lambda: bad_body('s', s_bytes(b'a\0b'))),
    ('string-no-terminator', lambda: bad_body('s', struct.pack('<I', 3) + b'abcd')),
    ('boolean-2', lambda: bad_body('b', struct.pack('<I', 2))),
    ('padding-nonzero', lambda: bad_body('ys', b'\x01\x01\x00\x00' + s_bytes(b'ok'))),
    ('header-padding-nonzero', 'header-padding'),
    ('signature-incomplete', lambda: bad_body('a', b'\0\0\0\0')),
    ('signature-bad-char', lambda: bad_body('z', b'')),
    ('signature-unbalanced', lambda: bad_body('(i', b'\0' * 4)),
    ('signature-empty-struct', lambda: bad_body('()', b'')),
    ('signature-dict-outside-array', lambda: bad_body('{is}', b'')),
    ('body-without-signature', lambda: call_bytes(fields=std_fields(sig=None),
                                                  body_bytes=s_bytes(b'x'))),
    ('body-trailing-bytes', lambda: bad_body('y', b'\x01\x02')),
    ('missing-member', lambda: call_bytes(fields=std_fields(member=None))),
    ('missing-path', lambda: call_bytes(fields=std_fields(path=None))),
    ('signal-missing-interface', lambda: call_bytes(mtype=rawbus.SIGNAL, fields=std_fields(
        iface=None, dest=None, path='/o', member='Sig'), body=('x',))),
    ('error-missing-name', lambda: call_bytes(mtype=rawbus.ERROR, fields=[(5, 'u', 1),
                                                                          (6, 's', '{SELF}')],
                                              body_bytes=b'', sig='')),
    ('return-missing-reply-serial', lambda: call_bytes(mtype=rawbus.METHOD_RETURN,
                                                       fields=[(6, 's', '{SELF}')],
                                                       body_bytes=b'', sig='')),
    ('field-wrong-type', lambda: call_bytes(fields=std_fields(member=None) +
                                            [(3, 'u', 5)])),
    ('field-unknown-code', lambda: call_bytes(fields=std_fields() + [(99, 's', 'x')])),
    ('field-duplicate', lambda: call_bytes(fields=std_fields() + [(3, 's', 'GetId')])),
    ('member-invalid', lambda: call_bytes(fields=std_fields(member='1abc'))),
    ('member-with-dot', lambda: call_bytes(fields=std_fields(member='a.b'))),
    ('interface-invalid', lambda: call_bytes(fields=std_fields(iface='noDots'))),
    ('interface-double-dot', lambda: call_bytes(fields=std_fields(iface='a..b'))),
    ('path-invalid', lambda: call_bytes(fields=std_fields(path='//x'))),
    ('path-trailing-slash', lambda: call_bytes(fields=std_fields(path='/x/'))),
    ('destination-invalid', lambda: call_bytes(fields=std_fields(dest='a..b'))),
    ('destination-unique-invalid', lambda: call_bytes(fields=std_fields(dest=':'))),
    ('error-name-invalid', lambda: call_bytes(mtype=rawbus.ERROR, fields=[
        (4, 's', 'nodots'), (5, 'u', 1), (6, 's', '{SELF}')], body_bytes=b'', sig='')),
    ('nesting-arrays-33', lambda: bad_body(nested(33), b'\0\0\0\0')),
    ('nesting-arrays-32-ok', lambda: bad_body(nested(32), b'\0\0\0\0')),
    ('nesting-structs-33', lambda: bad_body('(' * 33 + 'y' + ')' * 33, b'\0')),
    ('nesting-variants-65', 'variants'),
    ('array-too-large', lambda: bad_body('ay', struct.pack('<I', (1 << 26) + 1))),
    ('array-length-beyond-body', lambda: bad_body('ay', struct.pack('<I', 100) + b'\0' * 4)),
    ('array-dict-bad-padding', lambda: bad_body('a{yy}', struct.pack('<I', 2) + b'\1\0\0\0'
                                                + b'\1\2')),
    ('fd-index-out-of-range', 'fd-index'),
    ('fd-count-without-fds', lambda: call_bytes(fields=std_fields(
        extra=[(9, 'u', 1)]))),
    ('local-path', lambda: call_bytes(mtype=rawbus.SIGNAL, fields=std_fields(
        path='/org/freedesktop/DBus/Local', iface='com.example.X', member='Disconnected',
        dest=None), body=('x',))),
    ('local-interface', lambda: call_bytes(mtype=rawbus.SIGNAL, fields=std_fields(
        path='/o', iface='org.freedesktop.DBus.Local', member='Disconnected', dest=None),
        body=('x',))),
    # limits of names (255) and their boundaries
    ('member-too-long', lambda: call_bytes(fields=std_fields(member='m' * 256))),
    ('member-255-ok', lambda: self_call(member='m' * 255)),
    ('interface-too-long', lambda: call_bytes(fields=std_fields(iface='com.' + 'x' * 252))),
    ('interface-element-digit', lambda: call_bytes(fields=std_fields(iface='com.1x'))),
    ('destination-too-long', lambda: call_bytes(fields=std_fields(dest='com.' + 'x' * 252))),
    ('destination-element-digit', lambda: call_bytes(fields=std_fields(dest='com.1x'))),
    ('error-name-too-long', lambda: call_bytes(mtype=rawbus.ERROR, fields=[
        (4, 's', 'com.' + 'x' * 252), (5, 'u', 1), (6, 's', '{SELF}')], body_bytes=b'', sig='')),
    ('path-long-ok', lambda: self_call(path='/' + 'p' * 300)),
    ('signature-255-ok', lambda: bad_body('y' * 255, b'\1' * 255)),
    # required header fields per message type
    ('signal-missing-member', lambda: call_bytes(mtype=rawbus.SIGNAL, fields=std_fields(
        iface='com.example.X', dest=None, path='/o', member=None), body=('x',))),
    ('signal-missing-path', lambda: call_bytes(mtype=rawbus.SIGNAL, fields=std_fields(
        iface='com.example.X', dest=None, path=None, member='Sig'), body=('x',))),
    ('error-missing-reply-serial', lambda: call_bytes(mtype=rawbus.ERROR, fields=[
        (4, 's', 'com.example.Err'), (6, 's', '{SELF}')], body_bytes=b'', sig='')),
    ('reply-serial-0', lambda: call_bytes(mtype=rawbus.METHOD_RETURN, fields=[
        (5, 'u', 0), (6, 's', '{SELF}')], body_bytes=b'', sig='')),
    ('sender-field-spoofed', lambda: call_bytes(member='Echo', sig='', body=(), dest='{SELF}',
                                                path='/o', iface='com.example.X', fields=[
        (1, 'o', '/o'), (2, 's', 'com.example.X'), (3, 's', 'Echo'), (6, 's', '{SELF}'),
        (7, 's', ':1.9999')])),
    ('header-fields-huge', lambda: (lambda b: (struct.pack_into('<I', b, 12, 1 << 27), b)[1])(
        call_bytes())),
    # the body against its signature, per type
    ('object-path-invalid-in-body', lambda: bad_body('o', s_bytes(b'//x'))),
    ('signature-invalid-in-body', lambda: bad_body('g', b'\1z\0')),
    ('signature-in-body-no-nul', lambda: bad_body('g', b'\1yy')),
    ('variant-two-types', lambda: bad_body('v', b'\2yy\0\1\2')),
    ('variant-empty-signature', lambda: bad_body('v', b'\0\0')),
    ('array-length-not-multiple', lambda: bad_body('ai', struct.pack('<I', 3) + b'\0' * 4)),
    ('boolean-in-array-2', lambda: bad_body('ab', struct.pack('<II', 4, 2))),
    ('signature-dict-key-not-basic', lambda: bad_body('a{vy}', b'\0' * 8)),
    ('signature-dict-three-types', lambda: bad_body('a{yyy}', b'\0' * 8)),
    ('utf8-beyond-10ffff', lambda: bad_body('s', s_bytes(b'\xf4\x90\x80\x80'))),
    ('utf8-noncharacter-ok', lambda: bad_body('s', s_bytes(b'\xef\xbf\xbe'))),
    ('double-nan-ok', lambda: bad_body('d', b'\xff' * 8)),
    ('nesting-mixed-64-ok', lambda: bad_body('a(' * 32 + 'y' + ')' * 32, b'\0' * 8)),
    ('message-before-hello', 'before-hello'),
    ('second-hello', 'second-hello'),
    ('sasl-line-oversized', 'sasl-long'),
    ('sasl-bad-command', 'sasl-bad'),
    ('sasl-data-before-auth', 'sasl-data'),
    ('sasl-auth-wrong-uid', 'sasl-uid'),
    ('sasl-no-nul-byte', 'sasl-nonul'),
]


# Cases where both buses wait for bytes that never come, so the probe is never answered:
# a shorter bound for that wait (a bus that answers does so at once).
WAITS = {'body-length-long': 0.5}


def observe(conn, timeout=2.0):
    """After the attack: send a GetId, read until its reply, an error or EOF. A failed send
    and EOF are the same outcome (which one the client sees first is a race)."""
    out = []
    try:
        conn.send(Message(rawbus.METHOD_CALL, path=BUS_PATH, interface=BUS, member='GetId',
                          destination=BUS), label='probe')
    except OSError:
        pass
    deadline = time.monotonic() + timeout
    try:
        while True:
            m = conn.recv(deadline - time.monotonic())
            if m is None:
                out.append('no-response')
                break
            out.append(m.describe(conn.labels))
            if m.reply_serial is not None and conn.labels.get(m.reply_serial) == 'probe':
                break
    except (Disconnected, OSError):
        out.append('DISCONNECTED')
    if conn.unique:
        out = [x.replace(conn.unique, 'OFFENDER') for x in out]
    return out


def sasl_attack(ctx, kind):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(rawbus.socket_path(ctx.bus.address))
    uid = str(os.getuid()).encode().hex().encode()
    if kind == 'sasl-long':
        s.sendall(b'\0AUTH EXTERNAL ' + b'3' * 20000 + b'\r\n')
    elif kind == 'sasl-bad':
        s.sendall(b'\0FOO bar\r\n')
    elif kind == 'sasl-data':
        s.sendall(b'\0DATA 00\r\n')
    elif kind == 'sasl-uid':
        s.sendall(b'\0AUTH EXTERNAL ' + str(os.getuid() + 1).encode().hex().encode() + b'\r\n')
    elif kind == 'sasl-nonul':
        s.sendall(b'AUTH EXTERNAL ' + uid + b'\r\n')
    got = b''
    try:
        while True:
            d = s.recv(4096)
            if not d:
                got += b'<EOF>'
                break
            got += d
            if got.endswith(b'\r\n'):
                break
    except socket.timeout:
        got += b'<no response>'
    except OSError as e:
        got += ('<%s>' % type(e).__name__).encode()
    # is the connection still usable for a normal login afterwards?
    try:
        s.sendall(b'AUTH EXTERNAL ' + uid + b'\r\n')
        d = s.recv(4096)
        after = d.decode('ascii', 'replace').split(' ')[0].strip() if d else '<EOF>'
    except OSError as e:
        after = '<%s>' % type(e).__name__
    s.close()
    txt = got.decode('ascii', 'replace').strip()
    # RST or FIN depends on whether the bus had unread input when it closed: same outcome
    txt = txt.replace('<ConnectionResetError>', '<EOF>')
    # the text after ERROR is free-form; compare the command word only
    txt = re.sub(r'^(ERROR)\b.*', r'\1', txt)
    return ['sasl reply: %s; then AUTH -> %s' % (txt, after)]


class Bystander:
    """A client that has traffic in flight while the offender attacks: a feeder sends it
    broadcast signals (through a match rule) and unicast calls before and after the attack.
    check() says whether the bystander is still served AND got every one of them, in order."""

    N = 6

    def __init__(self, ctx):
        self.victim = ctx.conn('bystander')
        self.feeder = ctx.conn('feeder')
        self.victim.bus('AddMatch', 's', ["type='signal',interface='com.example.Feed'"],
                        quiet=True)
        self.seq = self.base = 0
        self.victim.log = []

    def feed(self):
        for i in range(self.N):
            if i % 2:
                self.feeder.emit('/feed', 'com.example.Feed', 'Seq', 'u', [self.seq])
            else:
                self.feeder.send(Message(rawbus.METHOD_CALL, path='/feed',
                                         interface='com.example.Feed', member='Seq',
                                         destination=self.victim.unique, signature='u',
                                         body=[self.seq], flags=rawbus.NO_REPLY_EXPECTED))
            self.seq += 1

    def check(self):
        try:
            self.feeder.sync()  # the bus has routed all the feeder sent
            r = self.victim.bus('GetNameOwner', 's', [BUS], quiet=True, timeout=5)
        except (Disconnected, TimeoutError, OSError) as e:
            return 'bystander FAILED %s' % type(e).__name__
        got = [m.body[0] for m in self.victim.log if m.member == 'Seq']
        self.victim.log = []
        served = 'served' if r.type == rawbus.METHOD_RETURN else 'error ' + r.error_name
        want = list(range(self.base, self.seq))
        self.base = self.seq
        lost = 'nothing lost' if got == want else 'got %s of %s' % (got, want)
        return 'bystander %s, %s' % (served, lost)


def malformed_case(ctx, name, make):
    victim = Bystander(ctx)
    victim.feed()
    if make is None:
        off = ctx.conn('offender')
        off.sync()
        off.log = []
        m = Message(rawbus.METHOD_CALL, path=BUS_PATH, interface=BUS, member='GetNameOwner',
                    destination=BUS, signature='s', body=[BUS])
        w = rawbus.Writer()
        w.b += struct.pack('>cBBBII', b'B', 1, 0, 1, 4 + 20 + 1, 5)
        # big-endian header fields by hand
        fields = [(1, 'o', BUS_PATH), (2, 's', BUS), (3, 's', 'GetNameOwner'), (6, 's', BUS),
                  (8, 'g', 's')]
        fb = bytearray()
        for code, sig, v in fields:
            fb += b'\0' * ((-len(fb)) % 8)
            fb += bytes([code, 1]) + sig.encode() + b'\0'
            if sig == 'g':
                fb += bytes([len(v)]) + v.encode() + b'\0'
            else:
                fb += b'\0' * ((-(16 + len(fb))) % 4)
                fb += struct.pack('>I', len(v)) + v.encode() + b'\0'
        body = struct.pack('>I', len(BUS)) + BUS.encode() + b'\0'
        hdr = struct.pack('>cBBBIII', b'B', 1, 0, 1, len(body), 5, len(fb)) + bytes(fb)
        hdr += b'\0' * ((-len(hdr)) % 8)
        off.send_raw(hdr + body)
        off.labels[5] = 'big-endian GetNameOwner'
        res = observe(off)
    elif isinstance(make, str) and make.startswith('sasl'):
        res = sasl_attack(ctx, make)
    elif make == 'before-hello':
        off = ctx.conn('offender', hello=False)
        res = observe(off)
        if res[-1] != 'DISCONNECTED':  # still connected: may it register now?
            try:
                r = off.call(BUS, BUS_PATH, BUS, 'Hello', timeout=5)
                res.append('then Hello -> ' + r.describe(off.labels))
            except (Disconnected, OSError, TimeoutError) as e:
                res.append('then Hello -> %s' % type(e).__name__)
    elif make == 'second-hello':
        off = ctx.conn('offender')
        off.sync()
        off.log = []
        r = off.bus('Hello')
        res = [r.describe(off.labels).replace(off.unique, 'OFFENDER')] + observe(off)
    else:
        fds = []
        off = ctx.conn('offender', fds=(make == 'fd-index'))
        off.sync()
        off.log = []
        CUR_SELF[0] = off.unique
        if make == 'fd-index':
            m = rawbus.parse_message(bytes(call_bytes(member='Echo', sig='h', body=[3],
                                                      dest=off.unique, path='/o',
                                                      iface='com.example.X')))[0]
            m.fields[rawbus.F_UNIX_FDS] = 1
            data = m.to_bytes(77)
            fds = [os.open('/dev/null', os.O_RDONLY)]
        elif make == 'variants':
            # 65 nested variants of a byte: each level is (g "v") then the inner value
            raw = b''
            for _ in range(64):
                raw += b'\x01v\0'
            raw += b'\x01y\0\x07'
            data = bad_body('v', raw)
        elif make == 'header-padding':
            data = call_bytes()
            flen = struct.unpack_from('<I', data, 12)[0]
            end = 16 + flen
            if end % 8:
                data[end] = 1
            else:
                data = None
        else:
            data = make()
        if data is None:
            res = ['n/a']
        else:
            data = bytes(data)
            try:
                off.send_raw(data, fds)
            except OSError as e:
                res = ['send failed ' + type(e).__name__]
            else:
                res = observe(off, WAITS.get(name, 2.0))
            for f in fds:
                os.close(f)
    victim.feed()
    for line in res:
        ctx.log(name + ':', line)
    ctx.log(name + ':', victim.check())


@scenario
def sc_malformed(ctx):
    for name, make in MALFORMED:
        malformed_case(ctx, name, make)
    ctx.log(ctx.victim_ok(ctx.conn('last')))


# ---- robustness -------------------------------------------------------------------------

@scenario
def sc_robustness(ctx):
    victim = ctx.conn('victim')
    svc = EchoService(ctx, 'com.example.Echo')
    full = call_bytes(member='Echo', sig='s', body=('x' * 5000,), dest='com.example.Echo',
                      path='/o', iface='com.example.Echo')
    by = Bystander(ctx)  # traffic in flight around each peer that leaves mid-way
    for cut in (1, 8, 16, 40, len(full) - 1):
        by.feed()
        off = ctx.conn('off')
        off.send_raw(bytes(full[:cut]))
        off.close()
        by.feed()
        ctx.log('cut at %d:' % cut, by.check())
    # mid-SASL
    for data in (b'\0AUTH EXT', b'\0AUTH EXTERNAL 30\r\nBEG', b''):
        by.feed()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(rawbus.socket_path(ctx.bus.address))
        s.sendall(data)
        s.close()
        by.feed()
        ctx.log('sasl cut %r:' % data, by.check())
    # a caller that leaves before the reply: the service's reply goes nowhere, bus fine
    by.feed()
    off = ctx.conn('off')
    off.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.Echo',
                     member='Echo', destination='com.example.Echo', signature='s', body=['x']))
    off.close()
    by.feed()
    ctx.log('caller gone:', by.check())
    # a large message both ways (8 MiB string, 4 MiB byte array)
    big = 'x' * (8 << 20)
    r = victim.call('com.example.Echo', '/o', 'com.example.Echo', 'Echo', 'say',
                    [big, b'\x01' * (4 << 20)], timeout=30, quiet=True)
    ctx.log('large echo:', r.type == rawbus.METHOD_RETURN and r.body[0] == big and
            len(r.body[1]) == 4 << 20)
    # many clients at once
    n = 150
    results = [None] * n
    barrier = threading.Barrier(n)

    def one(i):
        try:
            barrier.wait(10)
            c = Conn(ctx.bus.address, name='many%d' % i)
            r = c.bus('GetNameOwner', 's', [BUS], quiet=True)
            results[i] = (c, c.unique, r.type)
        except Exception as e:  # noqa: BLE001 - recorded into the transcript
            results[i] = (None, None, repr(e))

    ths = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(30)
    ok = [r for r in results if r and r[0] is not None and r[2] == rawbus.METHOD_RETURN]
    ctx.log('many clients: %d/%d served, %d distinct unique names' % (
        len(ok), n, len({r[1] for r in ok})))
    errs = sorted({str(r[2]) for r in results if not r or r[0] is None})
    ctx.log('many clients errors:', errs)
    ln = victim.bus('ListNames', quiet=True)
    ctx.log('ListNames counts them:', sum(1 for r in ok if r[1] in ln.body[0]) == len(ok))
    w = GoneWatcher(ctx)
    for r in ok:
        r[0].close()
    gone = {r[1] for r in ok}
    ctx.log('after closing, %d of them not announced gone' % len(w.wait(gone)))
    ln = victim.bus('ListNames', quiet=True)
    ctx.log('%d of them still listed; ListNames has %d names' % (
        len(gone & set(ln.body[0])), len(ln.body[0])))
    ctx.log(ctx.victim_ok(victim))
    svc.stop()


