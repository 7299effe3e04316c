# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Unix fd passing (a memfd through the bus in calls, replies and signals, to peers with
# and without fd negotiation) and the credentials the bus reports for a peer.

import hashlib
import os

import rawbus
from harness import exception, recv_peer, scenario
from rawbus import BUS, BUS_PATH, Message


@scenario
def sc_fd_passing(ctx):
    a = ctx.conn('A', fds=True)
    b = ctx.conn('B', fds=True)
    n = ctx.conn('N')  # no NEGOTIATE_UNIX_FD
    fd = os.memfd_create('kdbus-itest')
    os.write(fd, b'through the bus')
    try:
        s = a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.F',
                           member='Take', destination=b.unique, signature='hsh',
                           body=[0, 'two fds', 1]), fds=[fd, fd])
        m = recv_peer(b)
        ctx.log('B got', m.describe(), 'fds=%d' % len(m.fds))
        for i in m.body[0], m.body[2]:
            ctx.log('  read:', os.pread(m.fds[i], 100, 0))
        ctx.log('  same file:', os.fstat(m.fds[0]).st_ino == os.fstat(fd).st_ino)
        for f in m.fds:
            os.close(f)
        # reply with an fd back
        r = Message(rawbus.METHOD_RETURN, reply_serial=m.serial, destination=a.unique,
                    signature='h', body=[0])
        b.send(r, fds=[fd])
        got = recv_peer(a)
        ctx.log('A got', got.describe({s: 'Take'}), 'fds=%d' % len(got.fds))
        for f in got.fds:
            os.close(f)
        # to a peer that did not negotiate fds
        rr = a.call(n.unique, '/o', 'com.example.F', 'Take', 'h', [0], fds=[fd], timeout=5)
        ctx.log('to non-fd peer ->', rr.describe())
        n.sync()  # anything routed to it before is now in its log
        ctx.log('non-fd peer got', [x for x in n.take_log() if 'NameAcquired' not in x])
        # fds to the driver
        rr = a.call(BUS, BUS_PATH, BUS, 'GetId', 'h', [0], fds=[fd])
        ctx.log('fd to driver ->', rr.error_name or 'ok')
        # fd in a signal (broadcast)
        b.bus('AddMatch', 's', ["member='FdSig'"])
        a.send(Message(rawbus.SIGNAL, path='/o', interface='com.example.F', member='FdSig',
                       signature='h', body=[0]), fds=[fd])
        m = recv_peer(b)
        ctx.log('broadcast fd ->', m.describe() if m else None, 'fds=%d' % len(m.fds if m else []))
        ctx.log(ctx.victim_ok(b))
    finally:
        os.close(fd)


def _big_line(m):
    """@m described with its byte array as its length and hash (1 MiB would not read)."""
    if m is None:
        return None
    body, m.body = m.body, ['%d bytes sha256 %s' % (len(x), hashlib.sha256(x).hexdigest()[:16])
                            if isinstance(x, bytes) else x for x in m.body]
    line = m.describe()
    m.body = body
    return line


@scenario
def sc_large_byte_arrays(ctx):
    """1 MiB `ay` bodies between two peers, which kdbusd splices through a pipe
    (proxy/client-splice.h): a call, its reply, one with an fd, and a sender that hangs up
    half way through its array (the receiver gets nothing of it, and goes on)."""
    a = ctx.conn('A', fds=True)
    b = ctx.conn('B', fds=True)
    big = bytes((i * 31 + (i >> 11)) & 0xff for i in range(1 << 20))
    s = a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.L',
                       member='Take', destination=b.unique, signature='ay', body=[big]))
    m = recv_peer(b, timeout=20)
    ctx.log('B got', _big_line(m))
    b.send(Message(rawbus.METHOD_RETURN, reply_serial=m.serial, destination=a.unique,
                   signature='ay', body=[big[::-1]]))
    r = recv_peer(a, timeout=20)
    ctx.log('A got', _big_line(r), 'reply to the call:', r.reply_serial == s)
    fd = os.memfd_create('kdbus-itest')
    os.write(fd, b'beside a large array')
    try:
        # the fd with the first bytes (one sendmsg() may not take 1 MiB), the rest after
        data = Message(rawbus.METHOD_CALL, path='/o', interface='com.example.L',
                       member='TakeFd', destination=b.unique, signature='ay', unix_fds=1,
                       body=[big[1:]]).to_bytes(a.next_serial())
        a.send_raw(data[:4096], fds=[fd])
        a.send_raw(data[4096:])
    finally:
        os.close(fd)
    m = recv_peer(b, timeout=20)
    ctx.log('B got', _big_line(m), 'fds=%d' % len(m.fds))
    for f in m.fds:
        ctx.log('  read:', os.pread(f, 100, 0))
        os.close(f)
    # half a message, then the sender goes
    b.log = []      # (the arrays above, not to be described)
    a.log = []
    q = ctx.conn('Q')
    data = Message(rawbus.METHOD_CALL, path='/o', interface='com.example.L', member='Half',
                   destination=b.unique, signature='ay', body=[big]).to_bytes(q.next_serial())
    q.send_raw(data[:len(data) // 2])
    q.close()
    ctx.log(ctx.victim_ok(b))
    b.sync()
    ctx.log('B got after the half message', b.take_log())


exception('credentials', 'ProcessFD', r'^ProcessFD ',
          'kdbusd returns ProcessFD (a pidfd) to callers that accept fds; dbus-daemon 1.14 '
          'has no ProcessFD (docs/differences.md#processfd)',
          expect=r'^ProcessFD h pidfd of real-pid$')


@scenario
def sc_credentials(ctx):
    a = ctx.conn('A')
    b = ctx.conn('B')
    a.bus('RequestName', 'su', ['com.example.Cred', 0], quiet=True)
    r = b.bus('GetConnectionCredentials', 's', [a.unique])
    creds = r.body[0] if r.type == rawbus.METHOD_RETURN else {}
    ctx.log('GetConnectionCredentials ->', r.error_name or 'ok')
    # the order the keys came in: busctl --json and other dumps show it as is
    ctx.log('key order', list(creds))
    for k in sorted(creds):
        sig, v = creds[k]
        if k == 'UnixUserID':
            v = 'real-uid' if v == os.getuid() else v
        elif k == 'ProcessID':
            v = 'real-pid' if v == os.getpid() else v
        elif k == 'UnixGroupIDs':
            v = 'real-groups' if set(v) == set(os.getgroups()) | {os.getgid()} else v
        elif k == 'ProcessFD':
            v = 'pidfd'
        ctx.log(k, sig, v)
    for name in (a.unique, 'com.example.Cred', BUS):
        for m in ('GetConnectionUnixUser', 'GetConnectionUnixProcessID'):
            r = b.bus(m, 's', [name])
            v = r.error_name or r.body
            if r.body == [os.getpid()] and name != BUS:
                v = 'real-pid'
            elif r.body == [os.getuid()] and m == 'GetConnectionUnixUser':
                v = 'real-uid'
            ctx.log(m, name, v)
    for name in ('com.example.Nobody', ':1.9999', 'bad..name'):
        for m in ('GetConnectionUnixUser', 'GetConnectionUnixProcessID',
                  'GetConnectionCredentials', 'GetAdtAuditSessionData',
                  'GetConnectionSELinuxSecurityContext'):
            r = b.bus(m, 's', [name])
            ctx.log(m, name, r.error_name or 'ok')
    r = b.bus('GetConnectionCredentials', 's', [BUS])
    ctx.log('bus credentials keys', list(r.body[0]) if r.body else r.error_name)
    # a caller that accepts fds may get a ProcessFD: a pidfd of the peer's process
    f = ctx.conn('F', fds=True)
    r = f.bus('GetConnectionCredentials', 's', [a.unique])
    creds = r.body[0] if r.type == rawbus.METHOD_RETURN else {}
    ctx.log('with fds: keys', [k for k in creds if k != 'ProcessFD'])
    if 'ProcessFD' in creds:
        sig, idx = creds['ProcessFD']
        ctx.log('ProcessFD', sig, 'pidfd of %s' % pidfd_pid(r.fds[idx]))
    for fd in r.fds:
        os.close(fd)


def pidfd_pid(fd):
    """'real-pid' if @fd is a pidfd of this process, else what it is."""
    try:
        with open('/proc/self/fdinfo/%d' % fd) as fi:
            pid = [x.split()[1] for x in fi if x.startswith('Pid:')]
    except OSError as e:
        return 'unreadable (%s)' % e
    if not pid:
        return 'not a pidfd'
    return 'real-pid' if pid[0] == str(os.getpid()) else 'pid %s' % pid[0]


