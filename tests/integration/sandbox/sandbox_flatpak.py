# SPDX-License-Identifier: LGPL-2.1-or-later
"""flatpak's command lines through kdbus-proxy (sandbox.py runs this): the session bus and
the accessibility bus in one kdbus-proxy process, as flatpak-run-dbus.c starts
xdg-dbus-proxy, and the app in a bwrap sandbox that sees only the two sockets."""
import os
import select
import shutil
import subprocess

import dbus

HERE = os.path.dirname(os.path.abspath(__file__))
PY = '/usr/bin/python3'
APP = 'org.example.App'

# flatpak_context_add_bus_filters() and flatpak_run_add_session_dbus_args()
SESSION = ['--filter', '--own=%s.*' % APP, '--own=org.mpris.MediaPlayer2.%s.*' % APP,
           '--talk=org.freedesktop.portal.*', '--call=org.freedesktop.portal.*=*',
           '--broadcast=org.freedesktop.portal.*=@/org/freedesktop/portal/*']
# flatpak_run_add_a11y_dbus_args()
R = 'org.a11y.atspi.Registry'
A11Y = ['--filter', '--sloppy-names',
        '--broadcast=%s=org.a11y.atspi.Registry.EventListenerRegistered@/org/a11y/atspi/registry' % R,
        '--broadcast=%s=org.a11y.atspi.Registry.EventListenerDeregistered@/org/a11y/atspi/registry' % R,
        '--call=%s=org.a11y.atspi.Socket.Embed@/org/a11y/atspi/accessible/root' % R,
        '--call=%s=org.a11y.atspi.Socket.Unembed@/org/a11y/atspi/accessible/root' % R,
        '--call=%s=org.a11y.atspi.Registry.GetRegisteredEvents@/org/a11y/atspi/registry' % R,
        '--call=%s=org.a11y.atspi.DeviceEventController.GetKeystrokeListeners@/org/a11y/atspi/registry/deviceeventcontroller' % R,
        '--call=%s=org.a11y.atspi.DeviceEventController.GetDeviceEventListeners@/org/a11y/atspi/registry/deviceeventcontroller' % R,
        '--call=%s=org.a11y.atspi.DeviceEventController.NotifyListenersSync@/org/a11y/atspi/registry/deviceeventcontroller' % R,
        '--call=%s=org.a11y.atspi.DeviceEventController.NotifyListenersAsync@/org/a11y/atspi/registry/deviceeventcontroller' % R,
        '--call=%s.Sandboxed.*=org.a11y.atspi.Socket.Embedded' % APP]

EXPECTED = [
    'sees at-spi-bus bus',
    'own 1',
    'own mpris 1',
    'own other org.freedesktop.DBus.Error.AccessDenied',
    'names org.example.App org.freedesktop.DBus org.freedesktop.portal.Test '
    'org.mpris.MediaPlayer2.org.example.App',
    'portal pong',
    'broadcasts /elsewhere /org/freedesktop/portal/desktop',
    'hidden org.freedesktop.DBus.Error.ServiceUnknown',
    'a11y allowed pong',
    'a11y denied org.freedesktop.DBus.Error.AccessDenied',
    'a11y sloppy uniques True',
    'a11y hidden owner org.freedesktop.DBus.Error.NameHasNoOwner',
    'ready',
]


def bwrap_argv(session_path, a11y_path):
    """A sandbox with /usr, /proc, /dev, an empty /tmp, and the two sockets where flatpak
    puts them (read-only binds, as flatpak binds them)."""
    argv = ['bwrap', '--ro-bind', '/usr', '/usr', '--proc', '/proc', '--dev', '/dev',
            '--tmpfs', '/tmp', '--dir', '/run/flatpak', '--dir', '/app']
    for link in ('bin', 'lib', 'lib64', 'sbin'):
        if os.path.islink('/' + link):
            argv += ['--symlink', os.readlink('/' + link), '/' + link]
    argv += ['--ro-bind', session_path, '/run/flatpak/bus',
             '--ro-bind', a11y_path, '/run/flatpak/at-spi-bus',
             '--ro-bind', os.path.join(HERE, 'flatpak-client.py'), '/app/client.py',
             '--clearenv', '--setenv', 'PATH', '/usr/bin',
             '--setenv', 'DBUS_SESSION_BUS_ADDRESS', 'unix:path=/run/flatpak/bus',
             '--setenv', 'AT_SPI_BUS_ADDRESS', 'unix:path=/run/flatpak/at-spi-bus',
             '--', PY, '/app/client.py', APP]
    return argv


def run(kdbusd, kdbus_proxy, tmp, tap, Bus, Proxy, start_actors, proxied=False):
    """@kdbusd: the bus binary (a kdbusd, or dbus-daemon with @proxied: kdbus-proxy is then
    the filtering proxy in front of it)."""
    what = 'flatpak (kdbus-proxy in front of dbus-daemon)' if proxied else 'flatpak'
    if not shutil.which('bwrap'):
        tap(True, what + ': # SKIP bwrap missing (tools/dev/deps.sh installs bubblewrap)')
        return
    session = Bus(kdbusd, tmp, 'flatpak-session' + ('-proxied' if proxied else ''))
    a11y = Bus(kdbusd, tmp, 'flatpak-a11y' + ('-proxied' if proxied else ''))
    procs = []
    proxy = client = None
    try:
        p, _, _, _ = start_actors(session.address)
        procs.append(p)
        p, _, _, _ = start_actors(a11y.address, R)
        procs.append(p)
        runtime = os.path.join(tmp, 'flatpak-runtime' + ('-proxied' if proxied else ''),
                               '.dbus-proxy')
        os.makedirs(runtime)
        spath = os.path.join(runtime, 'session-bus-proxy-AbC123')
        apath = os.path.join(runtime, 'a11y-bus-proxy-XyZ789')
        for path in (spath, apath):
            open(path, 'w').close()     # create_proxy_socket(): g_mkstemp() then close
        proxy = Proxy(kdbus_proxy, [(session.session_address, spath, SESSION),
                                    (a11y.session_address, apath, A11Y)])
        tap(proxy.ready, what + ': kdbus-proxy wrote its sync byte for both buses',
            proxy.stderr())
        if not proxy.ready:
            return
        # unbuffered: select() must see every line that is not read yet
        client = subprocess.Popen(bwrap_argv(spath, apath), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        lines = []
        while not lines or lines[-1] != 'ready':
            r, _, _ = select.select([client.stdout], [], [], 60)
            line = client.stdout.readline().decode().rstrip('\n') if r else ''
            if not line:
                break
            lines.append(line)
        unique = [l for l in lines if l.startswith('unique ')]
        rest = [l for l in lines if not l.startswith('unique ')]
        tap(rest == EXPECTED, what + ': the app in bwrap owns its names, calls and hears the '
            'portal, sees nothing hidden; a11y by its rules, unique names sloppy',
            '\n'.join('got: ' + l for l in rest) +
            ('' if rest == EXPECTED or client.poll() is None else
             '\n' + client.stderr.read(65536).decode()))
        # the identity a service sees: the app's own pid and uid, no proxy in between
        if unique:
            _, name, pid = unique[0].split()
            bus = dbus.bus.BusConnection(session.address)
            seen_pid = bus.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus',
                                         'org.freedesktop.DBus', 'GetConnectionUnixProcessID',
                                         's', (name,))
            creds = bus.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus',
                                      'org.freedesktop.DBus', 'GetConnectionCredentials',
                                      's', (name,))
            bus.close()
            if proxied:
                # a proxy process cannot pass the app's pid on: the bus knows its own peer
                tap(int(seen_pid) == proxy.proc.pid and
                    int(creds['UnixUserID']) == os.getuid(),
                    what + ': services see the proxy\'s pid and the app\'s uid',
                    'proxy %d, bus says %s; %r' % (proxy.proc.pid, seen_pid, dict(creds)))
            else:
                tap(int(seen_pid) == int(pid) and int(creds['UnixUserID']) == os.getuid() and
                    'ProcessFD' in creds,
                    what + ': services see the app\'s own pid, uid and pidfd',
                    'pid in sandbox %s, bus says %s; %r' % (pid, seen_pid, dict(creds)))
        else:
            tap(False, what + ': services see the app\'s own pid', 'no unique line')
        # flatpak closes the sync pipe when the app's sandbox ends: kdbus-proxy exits, the
        # endpoints go, the app's connections with them
        status = proxy.stop()
        tap(status == 0 and not os.path.exists(spath),
            what + ': closing the sync fd ends kdbus-proxy (status 0) and its sockets',
            'status %r, socket left: %s\n%s' % (status, os.path.exists(spath), proxy.stderr()))
        client.stdin.write(b'go\n')
        client.stdin.flush()
        r, _, _ = select.select([client.stdout], [], [], 30)
        after = client.stdout.readline().decode().strip() if r else ''
        tap(after.startswith('after org.freedesktop.DBus.Error.'),
            what + ': the app\'s connection is closed with the endpoint', after)
    finally:
        if client:
            client.kill()
            client.wait()
        if proxy:
            proxy.stop()
        for p in procs:
            p.kill()
            p.wait()
        session.stop()
        a11y.stop()


def run_unprivileged(kdbusd, kdbus_proxy, tmp, tap, Bus, Proxy):
    """Any user may make endpoints (16 at a time on one bus); kdbus-proxy as nobody."""
    nobody = 65534
    bus = Bus(kdbusd, tmp, 'unprivileged')
    d = os.path.join(tmp, 'nobody')
    os.makedirs(d)
    os.chmod(d, 0o777)
    proxies = []
    try:
        groups = [(bus.session_address, os.path.join(d, 'p%d' % i), ['--filter'])
                  for i in range(16)]
        proxy = Proxy(kdbus_proxy, groups, user=nobody)
        proxies.append(proxy)
        ok = proxy.ready
        if ok:
            b = dbus.bus.BusConnection('unix:path=' + groups[15][1])
            names = [str(n) for n in b.list_names()]
            b.close()
            ok = names == ['org.freedesktop.DBus', names[-1]] and names[-1].startswith(':')
        tap(ok, 'unprivileged: kdbus-proxy as uid %d makes 16 endpoints, each filters'
            % nobody, proxy.stderr())
        extra = Proxy(kdbus_proxy, [(bus.session_address, os.path.join(d, 'p16'),
                                     ['--filter'])], user=nobody)
        proxies.append(extra)
        err = extra.stderr() if extra.proc.wait(20) is not None else ''
        tap(not extra.ready and extra.proc.returncode == 1 and 'as many endpoints' in err,
            'unprivileged: the 17th endpoint of one user is refused (EMFILE)', err)
    finally:
        for p in proxies:
            p.stop()
        bus.stop()
    # kdbus's rule on request: only the bus's owner (root here) and CAP_IPC_OWNER
    bus = Bus(kdbusd, tmp, 'owner-only', ['--native-endpoint-makers=privileged'])
    proxies = []
    try:
        group = [(bus.session_address, os.path.join(d, 'owner-only'), ['--filter'])]
        refused = Proxy(kdbus_proxy, group, user=nobody)
        proxies.append(refused)
        err = refused.stderr() if refused.proc.wait(20) is not None else ''
        tap(not refused.ready and refused.proc.returncode == 1 and
            'Operation not permitted' in err and 'CAP_IPC_OWNER' in err,
            'unprivileged: --native-endpoint-makers=privileged refuses uid %d (EPERM)' % nobody,
            err)
        root = Proxy(kdbus_proxy, [(bus.session_address, os.path.join(tmp, 'owner-only-root'),
                                    ['--filter'])])
        proxies.append(root)
        tap(root.ready, 'unprivileged: the bus owner still makes one there', root.stderr())
    finally:
        for p in proxies:
            p.stop()
        bus.stop()


def run_update(kdbusd, kdbus_proxy, kdbusctl, tmp, tap, Bus, Proxy):
    """kdbusctl endpoint list / update on a kdbus-proxy endpoint while its app is connected:
    the new rules apply to the next message, nothing granted before stays."""
    bus = Bus(kdbusd, tmp, 'update')
    native = os.path.join(bus.dir, 'native', 'bus')
    path = os.path.join(bus.dir, 'app')
    proxy = Proxy(kdbus_proxy, [(bus.session_address, path,
                                 ['--filter', '--own=org.example.App.*',
                                  '--call=org.freedesktop.portal.*=*'])])
    try:
        app = dbus.bus.BusConnection('unix:path=' + path)
        listing = subprocess.run([kdbusctl, 'endpoint', 'list', '--native=' + native],
                                 capture_output=True, timeout=30).stdout.decode()
        lines = listing.splitlines()
        name = lines[0].split()[0] if lines else ''
        tap(proxy.ready and len(lines) == 3 and lines[0].endswith('connections=1 xdg') and
            lines[1:] == ['  own org.example.App.*', '  call org.freedesktop.portal.*=*'],
            'update: kdbusctl endpoint list shows the endpoint, its connection and rules',
            listing)
        first = int(app.request_name('org.example.App'))
        res = subprocess.run([kdbusctl, 'endpoint', 'update', '--native=' + native, '--xdg',
                              '--own=org.example.Other.*', name], capture_output=True,
                             timeout=30)
        try:
            again = str(int(app.request_name('org.example.App.Second')))
        except dbus.DBusException as e:
            again = e.get_dbus_name()
        other = int(app.request_name('org.example.Other'))
        # kdbus's per-user entries from the command line: the app's uid may own one more
        res2 = subprocess.run([kdbusctl, 'endpoint', 'update', '--native=' + native, '--xdg',
                               '--user=%d:own:org.example.Mine.*' % os.getuid(),
                               '--group=4242:own:org.example.Theirs', name],
                              capture_output=True, timeout=30)
        mine = int(app.request_name('org.example.Mine.X'))
        try:
            theirs = str(int(app.request_name('org.example.Theirs')))
        except dbus.DBusException as e:
            theirs = e.get_dbus_name()
        # the name it owns stays owned (a policy judges new requests), but it is its own
        tap(first == 1 and res.returncode == 0 and
            again == 'org.freedesktop.DBus.Error.AccessDenied' and other == 1,
            'update: kdbusctl endpoint update applies to the running app at once',
            'first %r, update %r %s, again %r, other %r' % (first, res.returncode,
                                                              res.stderr.decode(), again, other))
        tap(res2.returncode == 0 and mine == 1 and
            theirs == 'org.freedesktop.DBus.Error.AccessDenied',
            'update: per-user and per-group entries from the command line',
            'update %r %s, mine %r, theirs %r' % (res2.returncode, res2.stderr.decode(), mine,
                                                  theirs))
        app.close()
    finally:
        proxy.stop()
        bus.stop()
