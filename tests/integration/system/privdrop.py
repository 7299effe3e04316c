#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# <user>: as root, with a user the test creates (and removes), the bus binds its socket and
# writes its pid file as root and then runs as that user: uid, gid (real, effective, saved,
# fs) and no supplementary groups in /proc; the socket serves the user (root is refused now:
# without <allow user=...> only the bus's own uid may connect); the pid
# file names the bus; ReloadConfig still works; SIGTERM ends it (what happens to the pid file
# in a root-owned directory is compared, not assumed), and the next start replaces the socket
# the dropped bus could not remove. Also: an unknown user, and a bus started
# as the user that is configured to become root. Same transcript as dbus-daemon. Skipped when
# not root or without useradd. TAP output.
#
# Usage: privdrop.py KDBUSD [DBUS_DAEMON]

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402


def ids(pid):
    out = {}
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            k, _, v = line.partition(':')
            if k in ('Uid', 'Gid', 'Groups'):
                out[k] = v.split()
    return out


def as_user(user, argv, **kw):
    return subprocess.run(['setpriv', '--reuid', user, '--regid', user, '--clear-groups'] +
                          argv, capture_output=True, text=True, timeout=30, **kw)


def scenario(binary, user, lines):
    pw = pwd.getpwnam(user)
    d = tempfile.mkdtemp(prefix='kdbus-privdrop-')
    os.chmod(d, 0o755)
    pid = -1
    try:
        conf = sysutil.write_conf(d, 'unix:path=%s/s' % d, '<user>%s</user>\n<fork/>\n'
                                  '<pidfile>%s/pid</pidfile>\n' % (user, d))
        r = subprocess.run([binary, '--config-file=' + conf, '--print-pid', '--nosyslog'],
                           capture_output=True, text=True, timeout=20)
        pid = int(open(d + '/pid').read())
        lines.append('start: exit %d, printed pid is the pid file\'s: %s' % (
            r.returncode, r.stdout.strip() == str(pid)))
        # once it serves, it must have dropped (dbus-daemon's parent exits before its child
        # drops, so only serving says the drop is done)
        u = as_user(user, ['dbus-send', '--bus=unix:path=%s/s' % d, '--print-reply',
                           '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                           'org.freedesktop.DBus.GetId'])
        i = ids(pid)
        lines.append('uids all the user: %s, gids all its group: %s, groups: %s' % (
            i['Uid'] == [str(pw.pw_uid)] * 4, i['Gid'] == [str(pw.pw_gid)] * 4,
            i.get('Groups') or 'none'))
        lines.append('serves root: %s' % sysutil.serves(d + '/s'))
        lines.append('serves the user: exit %d' % u.returncode)
        u = as_user(user, ['dbus-send', '--bus=unix:path=%s/s' % d, '--print-reply',
                           '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                           'org.freedesktop.DBus.ReloadConfig'])
        lines.append('ReloadConfig (by the user) after the drop: exit %d' % u.returncode)
        os.kill(pid, signal.SIGTERM)
        lines.append('gone after SIGTERM: %s' % sysutil.wait_gone(pid))
        pid = -1
        lines.append('pid file left in the root-owned directory: %s' % os.path.exists(d + '/pid'))
        lines.append('socket left: %s' % os.path.exists(d + '/s'))
        # the next start replaces the dead socket
        p = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--nopidfile',
                              '--nosyslog'], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            ok = sysutil.wait_for(lambda: as_user(user, [
                'dbus-send', '--bus=unix:path=%s/s' % d, '--print-reply',
                '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                'org.freedesktop.DBus.GetId']).returncode == 0 or p.poll() is not None)
            lines.append('restart over the left socket serves: %s' % (ok and p.poll() is None))
        finally:
            p.terminate()
            p.wait(10)

        bad = sysutil.write_conf(d, 'unix:path=%s/t' % d, '<user>kdbus-no-such-user</user>\n',
                                 name='bad.conf')
        r = subprocess.run([binary, '--config-file=' + bad, '--nofork', '--nosyslog'],
                           capture_output=True, text=True, timeout=20)
        lines.append('unknown user: exit %s' % ('nonzero' if r.returncode else '0'))
        root = sysutil.write_conf(d, 'unix:path=%s/u' % d, '<user>root</user>\n',
                                  name='root.conf')
        os.chmod(root, 0o644)
        r = as_user(user, [binary, '--config-file=' + root, '--nofork', '--nosyslog'],
                    cwd='/')
        lines.append('started as the user, <user>root</user>: exit %s' % (
            'nonzero' if r.returncode else '0'))
    finally:
        if pid > 0 and not sysutil.wait_gone(pid, 0):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(d, ignore_errors=True)


def transcript(binary, user):
    lines = []
    try:
        scenario(binary, user, lines)
    except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
        lines.append('stopped by %s: %s' % (type(e).__name__, e))
    return lines


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    t = sysutil.Tap()
    if os.getuid() != 0 or not shutil.which('useradd') or not shutil.which('setpriv'):
        t.skip('<user> privilege drop', 'needs root, useradd and setpriv')
        return t.done()
    user = 'kdbus-t%d' % os.getpid()
    subprocess.run(['useradd', '--system', '--no-create-home', '--user-group', '--shell',
                    '/usr/sbin/nologin', user], check=True, capture_output=True)
    try:
        o = transcript(ours, user)
        expect = ["start: exit 0, printed pid is the pid file's: True",
                  'uids all the user: True, gids all its group: True, groups: none',
                  'serves root: False', 'serves the user: exit 0',
                  'ReloadConfig (by the user) after the drop: exit 0', 'gone after SIGTERM: True']
        if not t.ok(o[:6] == expect, 'kdbusd binds and writes its pid file as root, then '
                    'serves as <user> (uid, gid, no groups)'):
            t.diag('\n'.join(o))
        t.ok(o[7:9] == ['socket left: True', 'restart over the left socket serves: True'],
             'the socket a dropped bus could not remove is replaced at the next start',
             ' | '.join(o[7:9]))
        t.ok(o[9:] == ['unknown user: exit nonzero',
                       'started as the user, <user>root</user>: exit nonzero'],
             'an unknown <user>, and a <user> it cannot become: it refuses to start',
             ' | '.join(o[9:]))
        if ref:
            r = transcript(ref, user)
            if not t.ok(r == o, 'the same as dbus-daemon'):
                t.diag('dbus-daemon:\n' + '\n'.join(r))
                t.diag('kdbusd:\n' + '\n'.join(o))
    finally:
        subprocess.run(['userdel', user], capture_output=True)
        subprocess.run(['groupdel', user], capture_output=True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
