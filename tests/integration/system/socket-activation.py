#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Socket activation: the bus started by `systemd-socket-activate -l PATH` (systemd's own tool:
# it listens, and at the first connection execs the bus with LISTEN_FDS) as kdbus.service runs
# it (--address=systemd: --nofork --nopidfile): the connection that triggered the start is
# served, then dbus-send and a second raw client; two passed sockets are both served; READY=1
# reaches NOTIFY_SOCKET from the activated pid; the printed address names the passed socket.
# Same transcript on dbus-daemon. Then kdbusd alone: without --address, the passed socket
# wins over the configuration's <listen> (dbus-daemon binds the <listen> and leaves the
# passed socket unserved, see the note in the output), and a passed datagram socket is
# refused with an error that names it. TAP output.
#
# Usage: socket-activation.py KDBUSD [DBUS_DAEMON]

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402

SSA = shutil.which('systemd-socket-activate') or '/usr/bin/systemd-socket-activate'


def activate(d, argv, sockets=('act',), extra=()):
    ns = sysutil.NotifySocket(d + '/notify')
    cmd = [SSA, '-E', 'NOTIFY_SOCKET=' + ns.path] + list(extra)
    for s in sockets:
        cmd += ['-l', os.path.join(d, s)]
    p = subprocess.Popen(cmd + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    # systemd-socket-activate listens before it forks nothing: wait for its socket
    sysutil.wait_for(lambda: all(os.path.exists(os.path.join(d, s)) for s in sockets), 10)
    return p, ns


def stop(p, ns):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    ns.close()
    return out.decode(errors='replace'), err.decode(errors='replace')


def norm(text, d):
    return re.sub(r'guid=[0-9a-f]{32}', 'guid=G', text.strip().replace(d, 'DIR'))


def transcript(binary):
    lines = []
    try:
        scenario(binary, lines)
    except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
        lines.append('stopped by %s: %s' % (type(e).__name__, e))
    return lines


def scenario(binary, lines):
    d = tempfile.mkdtemp(prefix='kdbus-sockact-')
    try:
        # dbus-daemon wants a <listen> even when --address replaces it
        conf = sysutil.write_conf(d, 'unix:path=%s/unused' % d)
        p, ns = activate(d, [binary, '--config-file=' + conf, '--address=systemd:', '--nofork',
                             '--nopidfile', '--print-address'])
        try:
            bus_id = sysutil.get_id(d + '/act')      # this connection starts the bus
            lines.append('first connection answered: %s' % bool(re.match('^[0-9a-f]{32}$',
                                                                        bus_id)))
            m = ns.recv(10)
            lines.append('notification: %s' % (None if m is None else '%s from %s' % (
                m[1], 'the activated bus' if m[0] == p.pid else 'pid %s' % m[0])))
            r = subprocess.run(['dbus-send', '--bus=unix:path=' + d + '/act', '--print-reply',
                                '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                                'org.freedesktop.DBus.GetId'], capture_output=True, text=True,
                               timeout=20)
            lines.append('dbus-send: exit %d, same id: %s' % (r.returncode, bus_id in r.stdout))
            lines.append('second client: same id: %s' % (sysutil.get_id(d + '/act') == bus_id))
        finally:
            out, err = stop(p, ns)
        lines.append('printed address: %s' % norm(out, d))
        lines.append('bus exited: %s' % (p.returncode is not None))
        lines.append('the replaced <listen> bound: %s' % os.path.exists(d + '/unused'))

        p, ns = activate(d, [binary, '--config-file=' + conf, '--address=systemd:', '--nofork',
                             '--nopidfile'], sockets=('one', 'two'))
        try:
            a = sysutil.get_id(d + '/one')
            lines.append('two passed sockets: both serve one bus: %s' % (
                sysutil.get_id(d + '/two') == a))
        finally:
            stop(p, ns)
    finally:
        subprocess.run(['rm', '-rf', d])


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    t = sysutil.Tap()
    o = transcript(ours)
    expect = ['first connection answered: True', 'notification: READY=1 from the activated bus',
              'dbus-send: exit 0, same id: True', 'second client: same id: True',
              'printed address: unix:path=DIR/act,guid=G', 'bus exited: True',
              'the replaced <listen> bound: False',
              'two passed sockets: both serve one bus: True']
    if not t.ok(o == expect, 'kdbusd under systemd-socket-activate serves the passed sockets'):
        t.diag('\n'.join(o))
    if ref:
        r = transcript(ref)
        if not t.ok(r == o, 'the same as dbus-daemon under systemd-socket-activate'):
            t.diag('dbus-daemon:\n' + '\n'.join(r))

    d = tempfile.mkdtemp(prefix='kdbus-sockact-')
    try:
        conf = sysutil.write_conf(d, 'unix:path=%s/other' % d)
        p, ns = activate(d, [ours, '--config-file=' + conf, '--nofork', '--nopidfile'])
        try:
            ok = sysutil.serves(d + '/act')
            t.ok(ok and not os.path.exists(d + '/other'),
                 'without --address: the passed socket is served, the <listen> is not bound')
            t.diag('dbus-daemon here binds the <listen> and leaves the passed socket unserved '
                   '(it takes LISTEN_FDS only for a systemd: address)')
        finally:
            stop(p, ns)
        p, ns = activate(d, [ours, '--config-file=' + conf, '--nofork', '--nopidfile',
                             '--address=systemd:'], sockets=('dgram',), extra=['--datagram'])
        # a datagram socket: systemd-socket-activate execs on the first datagram
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(b'x', d + '/dgram')
        s.close()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            pass
        out, err = stop(p, ns)
        t.ok(p.returncode not in (0, None) and 'not a listening unix stream socket' in err,
             'a passed datagram socket: kdbusd refuses to start and says which fd',
             'exit %s, stderr %r' % (p.returncode, err))
    finally:
        subprocess.run(['rm', '-rf', d])
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
