#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# --system: the bus as /usr/share/dbus-1/system.conf says (fork, pid file /run/dbus/pid,
# <user>messagebus, the socket /run/dbus/system_bus_socket, system.d), started in a private
# mount namespace whose /run/dbus is a temp dir of the test, so the machine's system bus is not
# touched: the printed address is the default system bus socket, it serves, the pid file names
# the bus, the bus runs as system.conf's user. Same transcript as dbus-daemon. Needs root and
# unshare(1), else skipped. TAP output.
#
# Usage: system-bus.py KDBUSD [DBUS_DAEMON]

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402

SYSTEM_CONF = '/usr/share/dbus-1/system.conf'
NS_SCRIPT = 'set -e; mount --bind "$1" /run/dbus; shift; exec "$@"'


def scenario(binary, lines):
    d = tempfile.mkdtemp(prefix='kdbus-systembus-')
    os.chmod(d, 0o755)
    pid = -1
    try:
        r = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', NS_SCRIPT,
                            'sh', d, binary, '--system', '--print-address'],
                           capture_output=True, text=True, timeout=30)
        lines.append('exit %d, printed %s' % (r.returncode, re.sub(
            r'guid=[0-9a-f]{32}', 'guid=G', r.stdout.strip())))
        pid = int(open(d + '/pid').read())
        lines.append('the socket serves: %s' % sysutil.serves(d + '/system_bus_socket'))
        with open('/proc/%d/status' % pid) as f:
            uid = [x.split()[1] for x in f if x.startswith('Uid:')][0]
        lines.append('runs as: %s' % __import__('pwd').getpwuid(int(uid)).pw_name)
        os.kill(pid, signal.SIGTERM)
        lines.append('gone after SIGTERM: %s' % sysutil.wait_gone(pid))
        pid = -1
    finally:
        if pid > 0 and not sysutil.wait_gone(pid, 0):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(d, ignore_errors=True)


def transcript(binary):
    lines = []
    try:
        scenario(binary, lines)
    except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
        lines.append('stopped by %s: %s' % (type(e).__name__, e))
    return lines


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    t = sysutil.Tap()
    if os.getuid() != 0 or not shutil.which('unshare') or not os.path.exists(SYSTEM_CONF):
        t.skip('--system', 'needs root, unshare and ' + SYSTEM_CONF)
        return t.done()
    user = re.search(r'<user>([^<]*)</user>', open(SYSTEM_CONF).read())
    o = transcript(ours)
    expect = ['exit 0, printed unix:path=/run/dbus/system_bus_socket,guid=G',
              'the socket serves: True', 'runs as: %s' % (user.group(1) if user else 'root'),
              'gone after SIGTERM: True']
    if not t.ok(o == expect, 'kdbusd --system: /run/dbus/system_bus_socket, pid file, <user>'):
        t.diag('\n'.join(o))
    if ref:
        r = transcript(ref)
        if not t.ok(r == o, 'the same as dbus-daemon --system'):
            t.diag('dbus-daemon:\n' + '\n'.join(r))
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
