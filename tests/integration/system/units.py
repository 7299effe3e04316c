#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The systemd units: `meson install --destdir` puts kdbus.service and kdbus.socket into the
# system and user unit directories (from systemd.pc); their ExecStart names the installed
# kdbusd; `systemd-analyze verify` accepts them (ExecStart pointed at the installed binary in
# the destdir, since verify checks that it exists). Then, as root, the system unit's own
# command line runs under systemd-socket-activate on a temp socket as systemd would run it:
# READY=1, a client is served, the unit's ExecReload (busctl, aimed at the temp socket with
# DBUS_SYSTEM_BUS_ADDRESS) gets RELOADING=1 ... READY=1, SIGTERM gets STOPPING=1. TAP output.
#
# Usage: units.py BUILD_DIR PREFIX BINDIR SYSTEM_UNIT_DIR USER_UNIT_DIR

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402


def parse_unit(path):
    keys = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(('#', '[')) and '=' in line:
                k, v = line.split('=', 1)
                keys.setdefault(k, []).append(v)
    return keys


def verify(t, what, units, user, dest, kdbusd):
    d = tempfile.mkdtemp(prefix='kdbus-units-verify-')
    try:
        paths = []
        for u in units:
            with open(u) as f:
                text = f.read().replace(kdbusd, dest + kdbusd)
            p = os.path.join(d, os.path.basename(u))
            with open(p, 'w') as f:
                f.write(text)
            paths.append(p)
        env = dict(os.environ, SYSTEMD_LOG_LEVEL='warning')
        if user:
            env.setdefault('XDG_RUNTIME_DIR', d)
        r = subprocess.run(['systemd-analyze'] + (['--user'] if user else []) + ['verify'] +
                           paths, capture_output=True, text=True, timeout=60, env=env)
        out = (r.stdout + r.stderr).strip()
        t.ok(r.returncode == 0 and not out, 'systemd-analyze verify: %s' % what,
             'exit %d: %s' % (r.returncode, out))
    finally:
        shutil.rmtree(d)


def run_system_unit(t, service, dest, kdbusd):
    d = tempfile.mkdtemp(prefix='kdbus-units-run-')
    ns = sysutil.NotifySocket(d + '/notify')
    # as systemd's own notify socket: reachable by the bus after it became <user>
    os.chmod(d, 0o755)
    os.chmod(ns.path, 0o777)
    argv = shlex.split(service['ExecStart'][0])
    argv[0] = dest + argv[0]
    p = subprocess.Popen(['systemd-socket-activate', '-E', 'NOTIFY_SOCKET=' + ns.path,
                          '-l', d + '/system_bus_socket'] + argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        sysutil.wait_for(lambda: os.path.exists(d + '/system_bus_socket'))
        served = sysutil.serves(d + '/system_bus_socket')
        m = ns.recv(10)
        t.ok(served and m is not None and m[1] == 'READY=1',
             "the system unit's ExecStart under socket activation: READY=1, a client served",
             'served %s, notification %r' % (served, m))
        uid = None
        with open('/proc/%d/status' % p.pid) as f:
            for line in f:
                if line.startswith('Uid:'):
                    uid = int(line.split()[1])
        t.ok(uid is not None and uid != 0, 'it runs as system.conf\'s <user>, not root',
             'uid %s' % uid)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS='unix:path=%s/system_bus_socket' % d)
        r = subprocess.run(shlex.split(service['ExecReload'][0]), capture_output=True,
                           text=True, timeout=30, env=env)
        got = [ns.recv(5), ns.recv(5)]
        texts = [g[1].split('\n')[0] if g else None for g in got]
        t.ok(r.returncode == 0 and texts == ['RELOADING=1', 'READY=1'],
             "the unit's ExecReload reloads: RELOADING=1 then READY=1",
             'exit %d %s, notifications %r' % (r.returncode, r.stderr.strip(), texts))
        p.send_signal(signal.SIGTERM)
        m = ns.recv(10)
        p.wait(10)
        t.ok(m is not None and m[1] == 'STOPPING=1' and p.returncode == 0,
             'SIGTERM: STOPPING=1 and exit 0', 'notification %r, exit %s' % (m, p.returncode))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        err = p.stderr.read().decode(errors='replace')
        if t.failed:
            t.diag(err)
        ns.close()
        shutil.rmtree(d)


def main():
    build, prefix, bindir, sysdir, userdir = sys.argv[1:6]
    t = sysutil.Tap()
    kdbusd = os.path.join(prefix, bindir, 'kdbusd')
    dest = tempfile.mkdtemp(prefix='kdbus-units-dest-')
    try:
        r = subprocess.run(['meson', 'install', '-C', build, '--destdir', dest, '--no-rebuild',
                            '--quiet', '--tags', 'systemd,runtime'], capture_output=True,
                           text=True, timeout=120)
        t.ok(r.returncode == 0, 'meson install --destdir', r.stdout + r.stderr)
        units = {}
        for kind, ud in (('system', sysdir), ('user', userdir)):
            for u in ('kdbus.service', 'kdbus.socket'):
                path = dest + os.path.join(ud, u)
                units[kind, u] = path
                t.ok(os.path.isfile(path), '%s unit %s installed in %s' % (kind, u, ud))
        if t.failed:
            return t.done()
        t.ok(os.access(dest + kdbusd, os.X_OK), 'kdbusd installed as %s' % kdbusd)
        for kind in ('system', 'user'):
            svc = parse_unit(units[kind, 'kdbus.service'])
            sock = parse_unit(units[kind, 'kdbus.socket'])
            argv = shlex.split(svc.get('ExecStart', [''])[0])
            want_sock = '/run/dbus/system_bus_socket' if kind == 'system' else '%t/bus'
            t.ok(svc.get('Type') == ['notify'] and argv[:1] == [kdbusd] and
                 '--address=systemd:' in argv and '--nofork' in argv and
                 ('--system' if kind == 'system' else '--session') in argv and
                 'ExecReload' in svc and sock.get('ListenStream') == [want_sock],
                 '%s units: Type=notify, ExecStart=%s --%s --address=systemd: --nofork, '
                 'ExecReload, ListenStream=%s' % (kind, kdbusd, 'system' if kind == 'system'
                                                  else 'session', want_sock),
                 'service %r socket %r' % (svc, sock))
        if shutil.which('systemd-analyze'):
            verify(t, 'the system units', [units['system', 'kdbus.service'],
                                           units['system', 'kdbus.socket']], False, dest, kdbusd)
            verify(t, 'the user units', [units['user', 'kdbus.service'],
                                         units['user', 'kdbus.socket']], True, dest, kdbusd)
        else:
            t.skip('systemd-analyze verify', 'systemd-analyze is not installed')
        if os.getuid() != 0:
            t.skip("the system unit's command line", 'needs root (system.conf drops to <user>)')
        elif not os.path.exists('/usr/share/dbus-1/system.conf'):
            t.skip("the system unit's command line", 'no /usr/share/dbus-1/system.conf')
        else:
            run_system_unit(t, parse_unit(units['system', 'kdbus.service']), dest, kdbusd)
    finally:
        shutil.rmtree(dest)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
