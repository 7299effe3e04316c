#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# kdbusd and RLIMIT_NOFILE (proxy/fd-limit.h):
#  - started with soft limit 64 and hard limit 4096, it runs with 4096 (dbus-daemon 1.14 does
#    so only as the system bus);
#  - started with 64:64, it serves one fd per peer (no pidfd held: well over 32 peers), and
#    the peer beyond what it can serve gets its Hello answered
#    org.freedesktop.DBus.Error.LimitsExceeded naming RLIMIT_NOFILE, then the end of the
#    stream -- never a silent wait; the connected peers keep working (calls, unicast
#    between peers); a burst of connections beyond the reserve gets answers or the end of
#    the stream within seconds; once peers leave, new ones are served again.
# dbus-daemon under the same 64:64 limit is run for comparison (its outcome is printed).
# TAP output.
#
# Usage: fd-limit.py KDBUSD [DBUS_DAEMON]

import os
import resource
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402
from sysutil import rawbus  # noqa: E402

BUS = 'org.freedesktop.DBus'
LIMITS_EXCEEDED = 'org.freedesktop.DBus.Error.LimitsExceeded'


def start(binary, d, soft, hard):
    conf = sysutil.write_conf(d, 'unix:path=%s/s' % d,
                              '  <limit name="max_incomplete_connections">1000</limit>\n')

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    p = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--nopidfile'],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(d, 'stderr'), 'wb'), preexec_fn=limit)
    if not sysutil.wait_for(lambda: sysutil.serves(d + '/s'), 15):
        p.kill()
        p.wait()
        raise RuntimeError('%s does not serve' % binary)
    return p


def stop(p):
    p.terminate()
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def open_files_limit(pid):
    with open('/proc/%d/limits' % pid) as f:
        for line in f:
            if line.startswith('Max open files'):
                return [int(x) for x in line.split()[3:5]]
    return None


def hello(path):
    """('ok', conn) or ('error NAME: text', conn) or ('eof'|'timeout', None)."""
    try:
        c = rawbus.Conn('unix:path=' + path, hello=False)
        r = c.call(BUS, '/org/freedesktop/DBus', BUS, 'Hello', timeout=10)
    except rawbus.Disconnected:
        return 'eof', None
    except (TimeoutError, socket.timeout):
        return 'timeout', None
    except RuntimeError as e:   # SASL refused
        return 'sasl %s' % e, None
    if r is None:
        return 'timeout', None
    if r.type == rawbus.ERROR:
        return 'error %s: %s' % (r.error_name, r.body[0] if r.body else ''), c
    c.unique = r.body[0]
    return 'ok', c


def fill(path, most=200):
    """Connect peers until one is refused: (connected peers, the refusal)."""
    peers = []
    while len(peers) < most:
        what, c = hello(path)
        if what != 'ok':
            if c:
                try:
                    c.recv(timeout=5)
                    what += ' (then more)'
                except rawbus.Disconnected:
                    what += ' (then the end of the stream)'
                c.sock.close()
            return peers, what
        peers.append(c)
    return peers, 'none up to %d' % most


def peers_work(peers):
    """Every peer answers GetId; the first sends a signal to the last, which gets it."""
    for c in peers:
        r = c.call(BUS, '/org/freedesktop/DBus', BUS, 'GetId', timeout=10)
        if r is None or r.type != rawbus.METHOD_RETURN:
            return False
    a, b = peers[0], peers[-1]
    a.emit('/t', 'com.example.T', 'Hi', dest=b.unique)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        m = b.recv(timeout=1)
        if m and m.type == rawbus.SIGNAL and m.f(rawbus.F_MEMBER) == 'Hi':
            return True
    return False


def burst(path, n):
    """@n sockets connect at once (no SASL yet); then each authenticates and says Hello.
    Returns the outcomes: each is an answer or the end of the stream, none a timeout."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(path)
        except OSError as e:
            socks.append(('connect %s' % e.strerror, None))
            continue
        socks.append((None, s))
    out = []
    for what, s in socks:
        if s is None:
            out.append(what)
            continue
        try:
            uid = str(os.getuid()).encode().hex().encode()
            s.sendall(b'\0AUTH EXTERNAL ' + uid + b'\r\nBEGIN\r\n')
        except OSError:
            out.append('eof')
            s.close()
            continue
        r, _, _ = select.select([s], [], [], 10)
        if not r:
            out.append('timeout')
        else:
            try:
                d = s.recv(4096)
            except OSError:
                d = b''
            out.append('answer' if d else 'eof')
        s.close()
    return out


def run_limit(binary, d, tap, ours):
    p = start(binary, d, 64, 64)
    name = os.path.basename(binary)
    try:
        peers, refusal = fill(d + '/s')
        tap.diag('%s with RLIMIT_NOFILE 64: %d peers, then %s' % (name, len(peers), refusal))
        if not ours:
            for c in peers:
                c.sock.close()
            return
        tap.ok(len(peers) > 40, 'one fd per peer: more than 40 peers under a limit of 64',
               '%d' % len(peers))
        tap.ok(refusal.startswith('error ' + LIMITS_EXCEEDED) and 'RLIMIT_NOFILE 64' in refusal
               and refusal.endswith('(then the end of the stream)'),
               'the next peer: Hello answered LimitsExceeded naming the limit, then closed',
               refusal)
        tap.ok(peers_work(peers), 'the connected peers keep working')
        out = burst(d + '/s', 40)
        tap.diag('a burst of 40 at the limit: %s' % ', '.join(
            '%d %s' % (out.count(k), k) for k in sorted(set(out))))
        tap.ok('timeout' not in out, 'a burst beyond the reserve: answers or closes, no hang',
               repr(out))
        with open(os.path.join(d, 'stderr')) as f:
            err = f.read()
        tap.ok('RLIMIT_NOFILE 64' in err, 'the refusal is logged with the limit', err[-2000:])
        for c in peers[:5]:
            c.sock.close()
        sysutil.wait_for(lambda: hello(d + '/s')[0] == 'ok', 10)
        what, c = hello(d + '/s')
        tap.ok(what == 'ok', 'peers gone: a new peer is served again', what)
        if c:
            c.sock.close()
        tap.ok(peers_work(peers[5:]), 'and the others still work')
        for c in peers[5:]:
            c.sock.close()
    finally:
        stop(p)


def main():
    tap = sysutil.Tap()
    kdbusd = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    for binary in [kdbusd] + ([ref] if ref else []):
        d = tempfile.mkdtemp(prefix='kdbus-fdlimit-')
        try:
            p = start(binary, d, 64, 4096)
            lim = open_files_limit(p.pid)
            stop(p)
            if binary == kdbusd:
                tap.ok(lim == [4096, 4096], 'kdbusd raises its soft fd limit to the hard one',
                       repr(lim))
            else:   # dbus-daemon 1.14 does it for the system bus (root) only
                tap.diag('%s started with 64:4096 runs with %r' % (binary, lim))
        finally:
            shutil.rmtree(d, ignore_errors=True)
        d = tempfile.mkdtemp(prefix='kdbus-fdlimit-')
        try:
            run_limit(binary, d, tap, binary == kdbusd)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
