#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The process settings of a configuration file, on dbus-daemon and kdbusd: <fork/> (the
# parent exits once the bus listens; --nofork overrides), <pidfile> (the forked bus's pid;
# removed at exit; an existing one stops a second start; --nopidfile skips it), several
# <listen>s (all served; --address replaces them), <user> of the running user, <syslog/>.
# The outcomes must be the same. TAP output.
#
# Usage: startup.py KDBUSD [DBUS_DAEMON]

import os
import pwd
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402


def conf(d, extra=''):
    path = os.path.join(d, 'bus.conf')
    with open(path, 'w') as f:
        f.write('<busconfig>\n  <type>session</type>\n  <fork/>\n  <pidfile>%s/pid</pidfile>\n'
                '  <listen>unix:path=%s/a</listen>\n  <listen>unix:path=%s/b</listen>\n'
                '  <user>%s</user>\n  <auth>EXTERNAL</auth>\n'
                '  <policy context="default"><allow send_destination="*"/>'
                '<allow own="*"/><allow receive_sender="*"/></policy>\n%s</busconfig>\n'
                % (d, d, d, pwd.getpwuid(os.getuid()).pw_name, extra))
    return path


def serves(path):
    try:
        c = rawbus.Conn('unix:path=' + path)
        r = c.bus('GetId')
        c.close()
        return 'serves' if r.type == rawbus.METHOD_RETURN else 'error'
    except (OSError, RuntimeError, TimeoutError, rawbus.Disconnected):
        return 'does not serve'


def norm(text, d):
    """The printed address with the temp dir and the guids replaced."""
    return re.sub(r'guid=[0-9a-f]{32}', 'guid=G', text.strip().replace(d, 'DIR'))


def wait_gone(pid, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def transcript(binary):
    lines = []
    d = tempfile.mkdtemp(prefix='kdbus-startup-')
    pid = None
    try:
        path = conf(d)
        # <fork/>: the parent prints the address and exits 0; the bus runs on
        p = subprocess.run([binary, '--config-file=' + path, '--print-address'],
                           capture_output=True, text=True, timeout=20)
        lines.append('fork: parent exit %d, printed %s' % (p.returncode, norm(p.stdout, d)))
        pid = int(open(os.path.join(d, 'pid')).read().strip())
        lines.append('pidfile: a live pid other than the parent: %s' % (
            os.path.exists('/proc/%d' % pid)))
        lines.append('first listen %s, second listen %s' % (serves(d + '/a'),
                                                            serves(d + '/b')))
        # a second start over the pid file is refused
        q = subprocess.run([binary, '--config-file=' + path, '--nofork',
                            '--address=unix:path=%s/c' % d], capture_output=True, text=True,
                           timeout=20)
        lines.append('second start with the pid file present: exit %s' % (
            'nonzero' if q.returncode else '0'))
        os.kill(pid, signal.SIGTERM)
        lines.append('bus gone after SIGTERM: %s' % wait_gone(pid))
        lines.append('pid file removed at exit: %s' % (not os.path.exists(d + '/pid')))
        # --nofork --nopidfile --address: foreground, no pid file, only the given address
        r = subprocess.Popen([binary, '--config-file=' + path, '--nofork', '--nopidfile',
                              '--print-address', '--address=unix:path=%s/c' % d],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             start_new_session=True)
        addr = r.stdout.readline()
        lines.append('--nofork --address: printed %s' % norm(addr, d))
        lines.append('--address: c %s, a %s' % (serves(d + '/c'), serves(d + '/a')))
        lines.append('--nopidfile: pid file written: %s' % os.path.exists(d + '/pid'))
        r.send_signal(signal.SIGTERM)
        r.wait(10)
        # no <listen> and no --address
        with open(path, 'w') as f:
            f.write('<busconfig><policy context="default"><allow own="*"/></policy>'
                    '</busconfig>')
        q = subprocess.run([binary, '--config-file=' + path, '--nofork'], capture_output=True,
                           text=True, timeout=20)
        lines.append('no <listen>: exit %s' % ('nonzero' if q.returncode else '0'))
        # who may connect is bus-global: <allow user=> in a <policy user=> (or group) stops
        # the start; kdbusd's message names file:line before dbus-daemon's text
        for policy, rule in (('user="root"', 'allow user="nobody"'),
                             ('group="root"', 'deny group="root"'),
                             ('user="root"', 'deny user="*"'),
                             ('at_console="true"', 'allow user="nobody"')):
            with open(path, 'w') as f:
                f.write('<busconfig><listen>unix:path=%s/e</listen>\n<policy %s>\n<%s/>'
                        '</policy></busconfig>' % (d, policy, rule))
            q = subprocess.Popen([binary, '--config-file=' + path, '--nofork'],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            try:
                _, err = q.communicate(timeout=3)
                m = re.search(r'Failed to start message bus: (?:\S+\.conf:3: )?(.*)', err)
                lines.append('<%s> in <policy %s>: exit %s: %s' % (
                    rule, policy, 'nonzero' if q.returncode else '0',
                    m.group(1) if m else err.strip()))
            except subprocess.TimeoutExpired:
                q.send_signal(signal.SIGTERM)
                q.communicate(timeout=10)
                lines.append('<%s> in <policy %s>: starts' % (rule, policy))
    finally:
        if pid and not wait_gone(pid, 0):      # a forked bus left by a failed step
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        subprocess.run(['rm', '-rf', d])
    return lines


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else 'dbus-daemon'
    print('TAP version 13')
    print('1..1')
    try:
        a, b = transcript(ref), transcript(ours)
    except Exception as e:  # noqa: BLE001
        print('not ok 1 - startup settings # %s: %s' % (type(e).__name__, e))
        return 1
    for x in a:
        print('# ref: ' + x)
    if a == b:
        print('ok 1 - <fork/>, <pidfile>, <listen>, --nofork, --nopidfile, --address: same')
        return 0
    for x in b:
        print('# ours: ' + x)
    print('not ok 1 - startup settings differ')
    return 1


if __name__ == '__main__':
    sys.exit(main())
