#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# sd_notify: the test plays systemd with a datagram socket on NOTIFY_SOCKET (SO_PASSCRED, so
# each message carries its sender's pid) and checks the exact messages and their order:
# READY=1 once the bus serves (a client connecting right after it is answered), RELOADING=1
# with MONOTONIC_USEC (what systemd wants for Type=notify-reload) then READY=1 around SIGHUP,
# around ReloadConfig and around a reload that fails, STOPPING=1 on SIGTERM; every message from
# the bus's own pid (NotifyAccess=main), also when it forked (<fork/>: the pid in the pid file).
# A service the bus activates does not see NOTIFY_SOCKET.
# The same scenario runs on dbus-daemon: the sequence of messages must be the same (dbus-daemon
# sends no MONOTONIC_USEC). TAP output.
#
# Usage: notify.py KDBUSD [DBUS_DAEMON]

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402
from sysutil import rawbus  # noqa: E402


def mono_usec():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


class Run:
    """One bus under a fake systemd; events are what the test saw, in order."""

    def __init__(self, binary, fork):
        self.d = tempfile.mkdtemp(prefix='kdbus-notify-')
        self.sock = self.d + '/bus'
        self.ns = sysutil.NotifySocket(self.d + '/notify')
        self.conf = sysutil.write_conf(self.d, 'unix:path=' + self.sock,
                                       '<fork/><pidfile>%s/pid</pidfile>\n' % self.d
                                       if fork else '')
        env = dict(os.environ, NOTIFY_SOCKET=self.ns.path)
        self.proc = subprocess.Popen([binary, '--config-file=' + self.conf, '--nosyslog'] +
                                     ([] if fork else ['--nofork']), env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.pid = None if fork else self.proc.pid
        self.events = []
        self.usec_ok = []       # MONOTONIC_USEC within the reload's window

    def read_pidfile(self, wait):
        """The forked bus's pid, once its pid file holds a whole line (a bus may create the
        file before it writes it: seen with dbus-daemon, an empty read), waiting up to @wait s."""
        deadline = time.monotonic() + wait
        while self.pid is None:
            try:
                with open(self.d + '/pid') as f:
                    text = f.read()
                if text.endswith('\n'):
                    self.pid = int(text)
                    break
            except FileNotFoundError:
                pass
            if time.monotonic() >= deadline:
                break
            time.sleep(0.02)

    def notification(self, t0=None, timeout=10.0):
        m = self.ns.recv(timeout)
        if m is None:
            self.events.append('(no notification)' if timeout >= 1 else '(nothing more)')
            return None
        pid, text = m
        self.read_pidfile(wait=0)
        lines = []
        for line in text.split('\n'):
            if line.startswith('MONOTONIC_USEC='):
                v = int(line.split('=', 1)[1])
                self.usec_ok.append(t0 is not None and t0 <= v <= mono_usec())
                continue
            lines.append(line)
        self.events.append('%s from %s' % ('\\n'.join(lines),
                                           'the bus' if pid == self.pid else 'pid %s' % pid))
        return text

    def reload_call(self):
        c = rawbus.Conn('unix:path=' + self.sock)
        t0 = mono_usec()
        r = c.bus('ReloadConfig')
        c.close()
        return t0, r

    def scenario(self):
        self.notification()
        # the bus must already serve when it says READY=1: no retry here
        try:
            sysutil.get_id(self.sock)
            self.events.append('serves after READY=1')
        except Exception as e:  # noqa: BLE001
            self.events.append('does not serve after READY=1: %s' % e)
        self.read_pidfile(wait=5)
        t0 = mono_usec()
        os.kill(self.pid, signal.SIGHUP)
        self.notification(t0)
        self.notification()
        t0, r = self.reload_call()
        self.events.append('ReloadConfig: %s' % ('ok' if r.type == rawbus.METHOD_RETURN
                                                  else r.error_name))
        self.notification(t0)
        self.notification()
        with open(self.conf, 'w') as f:
            f.write('<busconfig><nonsense/>')
        t0, r = self.reload_call()
        self.events.append('broken ReloadConfig: %s' % ('ok' if r.type == rawbus.METHOD_RETURN
                                                         else 'an error'))
        self.notification(t0)
        self.notification()
        self.events.append('serves after the failed reload: %s' % sysutil.serves(self.sock))
        self.notification(timeout=0.3)
        os.kill(self.pid, signal.SIGTERM)
        self.notification()
        self.events.append('exited: %s' % sysutil.wait_gone(self.pid))
        self.notification(timeout=0.3)

    def close(self):
        for pid in (self.pid, self.proc.pid):
            if pid and not sysutil.wait_gone(pid, 0):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)
        self.err = self.proc.stderr.read().decode('utf-8', 'replace')
        self.ns.close()
        subprocess.run(['rm', '-rf', self.d])


def run(binary, fork):
    r = Run(binary, fork)
    try:
        r.scenario()
    except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
        r.events.append('stopped by %s: %s' % (type(e).__name__, e))
    finally:
        r.close()
    return r


def activated_env(binary):
    """Whether a service the bus activates sees NOTIFY_SOCKET (it must not: it would speak to
    systemd in the bus's name)."""
    d = tempfile.mkdtemp(prefix='kdbus-notify-env-')
    ns = sysutil.NotifySocket(d + '/notify')
    os.makedirs(d + '/services')
    with open(d + '/services/t.service', 'w') as f:
        f.write('[D-BUS Service]\nName=org.kdbus.test.Env\nExec=/bin/sh -c "env > %s/env; '
                'mv %s/env %s/env.done"\n' % (d, d, d))
    conf = sysutil.write_conf(d, 'unix:path=%s/bus' % d,
                              '<servicedir>%s/services</servicedir>\n' % d)
    p = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--nosyslog'],
                         env=dict(os.environ, NOTIFY_SOCKET=ns.path),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        ns.recv(10)
        c = rawbus.Conn('unix:path=%s/bus' % d)
        # the service exits without taking its name: only its environment matters here
        c.send(rawbus.Message(rawbus.METHOD_CALL, path=rawbus.BUS_PATH, interface=rawbus.BUS,
                              member='StartServiceByName', destination=rawbus.BUS,
                              signature='su', body=('org.kdbus.test.Env', 0)))
        ran = sysutil.wait_for(lambda: os.path.exists(d + '/env.done'), 5)
        c.close()
        if not ran:
            return 'the service did not run'
        with open(d + '/env.done') as f:
            return 'NOTIFY_SOCKET seen' if 'NOTIFY_SOCKET=' in f.read() else 'not seen'
    except Exception as e:  # noqa: BLE001
        return 'stopped by %s: %s' % (type(e).__name__, e)
    finally:
        p.terminate()
        p.wait(10)
        ns.close()
        subprocess.run(['rm', '-rf', d])


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    t = sysutil.Tap()
    for fork in (False, True):
        mode = '<fork/> + pid file' if fork else '--nofork'
        o = run(ours, fork)
        expect = ['READY=1 from the bus', 'serves after READY=1',
                  'RELOADING=1 from the bus', 'READY=1 from the bus', 'ReloadConfig: ok',
                  'RELOADING=1 from the bus', 'READY=1 from the bus',
                  'broken ReloadConfig: an error',
                  'RELOADING=1 from the bus', 'READY=1 from the bus',
                  'serves after the failed reload: True', '(nothing more)',
                  'STOPPING=1 from the bus', 'exited: True', '(nothing more)']
        if not t.ok(o.events == expect, '%s: kdbusd sends READY=1, RELOADING=1 ... READY=1 '
                    'around SIGHUP, ReloadConfig and a failed reload, STOPPING=1' % mode):
            t.diag('got:\n' + '\n'.join(o.events) + '\nstderr:\n' + o.err)
        t.ok(len(o.usec_ok) == 3 and all(o.usec_ok),
             '%s: every RELOADING=1 carries MONOTONIC_USEC taken during the reload' % mode,
             repr(o.usec_ok))
        if ref:
            r = run(ref, fork)
            if not t.ok(r.events == o.events, '%s: the same sequence as dbus-daemon' % mode):
                t.diag('dbus-daemon:\n' + '\n'.join(r.events))
    e = activated_env(ours)
    t.ok(e == 'not seen', 'an activated service does not inherit NOTIFY_SOCKET', e)
    if ref:
        t.ok(activated_env(ref) == e, 'nor with dbus-daemon')
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
