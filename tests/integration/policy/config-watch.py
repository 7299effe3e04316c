#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Policy files dropped into an <includedir> take effect without SIGHUP or ReloadConfig: the
# bus watches the directories of its <includedir>s (inotify) and reloads its whole
# configuration when a file there is closed after writing, moved in, or deleted, as
# dbus-daemon 1.14 does. Each step changes the directory and then asks, for up to 10 s,
# whether RequestName of a name the files deny gives AccessDenied; a file being written is
# not read before it is closed. Run on kdbusd and dbus-daemon; the transcripts are compared.
# TAP output.
#
# Usage: config-watch.py KDBUSD [DBUS_DAEMON]

import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402
from harness import tap_same  # noqa: E402
from rawbus import Conn  # noqa: E402

CONF = '''<busconfig>
  <listen>unix:path=%s</listen>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
  <includedir>conf.d</includedir>
  <includedir>not-there.d</includedir>
</busconfig>
'''

DENY = '''<busconfig>
  <policy context="mandatory"><deny own="%s"/></policy>
</busconfig>
'''

W, X = 'org.example.Watched', 'org.example.Other'


def start(binary, d):
    sock = os.path.join(d, 'bus')
    conf = os.path.join(d, 'bus.conf')
    os.mkdir(os.path.join(d, 'conf.d'))
    with open(conf, 'w') as f:
        f.write(CONF % sock)
    err = open(os.path.join(d, 'stderr'), 'w')
    p = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--print-address'],
                         stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    r, _, _ = select.select([p.stdout], [], [], 15)
    addr = p.stdout.readline().decode().strip() if r else ''
    if not addr:
        p.kill()
        raise RuntimeError('%s did not start' % binary)
    return p, addr


def owns(c, name):
    """RequestName @name (released again): 'owned', or the error name and text."""
    r = c.bus('RequestName', 'su', [name, 0])
    if r.type == rawbus.ERROR:
        return '%s: %s' % (r.error_name, re.sub(r':1\.[0-9]+', ':1.N', r.body[0]))
    c.bus('ReleaseName', 's', [name])
    return 'owned'


def until(c, want, timeout=10.0):
    """Ask until every name in @want gives what it maps to (True: refused, False: owned);
    return what the names give then, and whether that came within @timeout."""
    deadline = time.monotonic() + timeout
    while True:
        got = {n: owns(c, n) for n in want}
        if all((got[n] != 'owned') == v for n, v in want.items()):
            return got, True
        if time.monotonic() > deadline:
            return got, False
        time.sleep(0.05)


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def scenario(binary):
    d = tempfile.mkdtemp(prefix='kdbus-config-watch-')
    out = []
    p = None
    try:
        p, addr = start(binary, d)
        confd = os.path.join(d, 'conf.d')
        c = Conn(addr)
        out.append('at start: %s' % owns(c, W))
        # a file moved in (written elsewhere in the directory first, as packages do)
        write(os.path.join(confd, '.deny.tmp'), DENY % W)
        os.rename(os.path.join(confd, '.deny.tmp'), os.path.join(confd, 'deny.conf'))
        got, ok = until(c, {W: True})
        out.append('a file moved in: %s, within 10 s: %s' % (got[W], ok))
        # the same file rewritten in place (closed after writing)
        write(os.path.join(confd, 'deny.conf'), DENY % X)
        got, ok = until(c, {W: False, X: True})
        out.append('rewritten: %s / %s, within 10 s: %s' % (got[W], got[X], ok))
        # deleted
        os.unlink(os.path.join(confd, 'deny.conf'))
        got, ok = until(c, {X: False})
        out.append('deleted: %s, within 10 s: %s' % (got[X], ok))
        # written slowly: nothing happens while it is open (half of it is no valid file;
        # a bus that read it now would ignore it with a warning, then never see the rest)
        f = open(os.path.join(confd, 'slow.conf'), 'w')
        text = DENY % W
        f.write(text[:len(text) // 2])
        f.flush()
        time.sleep(0.5)
        out.append('while written: %s' % owns(c, W))
        f.write(text[len(text) // 2:])
        f.close()
        got, ok = until(c, {W: True})
        out.append('once closed: %s, within 10 s: %s' % (got[W], ok))
        # a file that is not *.conf changes nothing (the reload happens, reads the same)
        write(os.path.join(confd, 'notes.txt'), DENY % X)
        time.sleep(0.3)
        out.append('a *.txt file: %s' % owns(c, X))
        c.close()
    except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
        out.append('stopped by %s: %s' % (type(e).__name__, e))
    finally:
        if p:
            p.terminate()
            try:
                out.append('exit status after SIGTERM: %s' % p.wait(20))
            except subprocess.TimeoutExpired:
                p.kill()
                out.append('still running 20 s after SIGTERM')
        try:
            with open(os.path.join(d, 'stderr')) as f:
                err = f.read()
        except OSError:
            err = ''
        shutil.rmtree(d, ignore_errors=True)
    return out, err


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    print('TAP version 13', flush=True)
    o, err = scenario(ours)
    n = 1
    ok = all('within 10 s: True' in x for x in o if 'within' in x) and \
        not any(x.startswith('stopped by') for x in o) and 'Sanitizer' not in err
    print('%sok 1 - kdbusd: every change took effect without SIGHUP' % ('' if ok else 'not '))
    for x in o:
        print('# ' + x)
    failed = not ok
    if ref:
        r, _ = scenario(ref)
        n += 1
        failed |= not tap_same(n, 'kdbusd: the same as dbus-daemon', r, o)
    print('1..%d' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
