#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Real services from Debian packages, activated through the bus and used by their own clients,
# on kdbusd installed in place of dbus-daemon and on dbus-daemon itself; the transcripts are
# compared. Each run is a private mount namespace (unshare -m) where the bus under test is
# bind-mounted over /usr/bin/dbus-daemon and /run/dbus is a fresh tmpfs; the buses run with the
# machine's own configuration (`--system`: /usr/share/dbus-1/system.conf with its system.d
# policies and <servicehelper>; `--session`: session.conf), so each service is started by name
# from its own .service file, exactly as on an installed system without systemd:
#
#   system    (through the setuid launch helper, as <user>messagebus</user>)
#             rtkit-daemon  (rtkitctl; ResetKnown refused to uid 65534 by its own policy, before
#                            activation, and allowed to root), polkitd (pkaction, pkcheck),
#             accounts-daemon (FindUserByName, a property, CreateUser refused through polkit,
#                            its name refused to uid 65534), upowerd (upower; ObjectManager
#                            refused by the default policy), udisksd (udisksctl; loop-setup
#                            refused through polkit), colord (colormgr; refused as upowerd),
#                            packagekitd (pkcon), login1 (Exec=/bin/false: the helper's error);
#                            then the names on the bus and their owners' users
#   session   dconf-service (gsettings writes, reads back), gnome-keyring-daemon (Secret
#             Service), gvfsd and gvfsd-metadata (gio: metadata, trash://), tumblerd,
#             xdg-permission-store, xdg-desktop-portal (ProxyResolver), at-spi2's bus launcher
#             (the accessibility bus and its registry); then the names on the bus
#
# The system scenario runs three times: dbus-daemon (the reference), kdbusd running the
# installed dbus-daemon-launch-helper (kdbusd dropped in, nothing else changed), and kdbusd
# with our kdbus-launch-helper bind-mounted over it (a kdbus-compat install). Every process a
# run starts is re-parented to its runner (a subreaper) and killed at its end; the services'
# state directories under /var/lib are private copies. Needs root; TAP output.
#
# usage: services.py KDBUSD KDBUS_LAUNCH_HELPER [DBUS_DAEMON]

import grp
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402
from sysutil import rawbus  # noqa: E402

HERE = os.path.abspath(__file__)
DAEMON = '/usr/bin/dbus-daemon'
LAUNCH_HELPER = '/usr/lib/dbus-1.0/dbus-daemon-launch-helper'
SYSTEM_SOCKET = '/run/dbus/system_bus_socket'
NOBODY = 65534
# what the services keep between runs: each run gets a copy, the machine's stays as it was
STATE_DIRS = ['/var/lib/AccountsService', '/var/lib/colord', '/var/lib/PackageKit',
              '/var/lib/upower', '/var/lib/udisks2', '/var/cache/PackageKit']

# scenario -> (the programs it runs: skipped without them, the packages that have them)
NEEDS = {
    'system': ['/usr/libexec/rtkit-daemon', 'rtkitctl', '/usr/lib/polkit-1/polkitd', 'pkaction',
               '/usr/libexec/accounts-daemon', '/usr/libexec/upowerd', 'upower',
               '/usr/libexec/udisks2/udisksd', 'udisksctl', '/usr/libexec/colord', 'colormgr',
               '/usr/libexec/packagekitd', 'pkcon', 'gdbus', 'setpriv', LAUNCH_HELPER],
    'session': ['/usr/libexec/dconf-service', 'gsettings', '/usr/bin/gnome-keyring-daemon',
                '/usr/libexec/gvfsd', '/usr/libexec/gvfsd-metadata', 'gio',
                '/usr/lib/x86_64-linux-gnu/tumbler-1/tumblerd',
                '/usr/libexec/xdg-permission-store', '/usr/libexec/xdg-desktop-portal',
                '/usr/libexec/at-spi-bus-launcher', 'gdbus'],
}


class Transcript:
    """Lines 'SERVICE: what: result', normalized so that two buses can be compared: unique
    names, pids, the temp dir and bus guids are replaced by placeholders."""

    def __init__(self, d):
        self.d = d
        self.lines = []

    def norm(self, text):
        text = str(text).replace(self.d, 'DIR')
        text = re.sub(r':1\.[0-9]+', ':1.N', text)
        text = re.sub(r'\bpid=[0-9]+', 'pid=P', text)
        text = re.sub(r'guid=[0-9a-f]{32}', 'guid=G', text)
        text = re.sub(r'/session/s[0-9]+', '/session/sN', text)
        text = re.sub(r'mountpoint_[0-9]+', 'mountpoint_P', text)
        return text.strip()

    def add(self, service, what, result):
        self.lines.append(self.norm('%s: %s: %s' % (service, what, result)))


def env_for(user):
    e = dict(os.environ, LC_ALL='C.UTF-8', LANG='C.UTF-8')
    for k in ('DBUS_SYSTEM_BUS_ADDRESS', 'DBUS_STARTER_ADDRESS', 'DBUS_STARTER_BUS_TYPE',
              'DISPLAY', 'WAYLAND_DISPLAY'):
        e.pop(k, None)
    if user == NOBODY:
        e['HOME'] = '/nonexistent'
    return e


def run(t, service, argv, user=None, what=None, filt=None, env=None, timeout=60):
    """Run @argv (as uid/gid @user when given), record its exit status and output."""
    cmd = list(argv)
    if user is not None:
        cmd = ['setpriv', '--reuid=%d' % user, '--regid=%d' % user, '--clear-groups'] + cmd
    try:
        r = subprocess.run(cmd, env=env or env_for(user), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=timeout)
        out = (r.stdout + r.stderr).strip()
        # GLib's warnings carry a pid and a time; what they say is not compared
        out = '\n'.join(x for x in out.splitlines()
                        if not re.match(r'^(\(.*:[0-9]+\)|\*\*) ', x) and x.strip())
        if filt:
            out = filt(out)
        result = 'exit %d: %s' % (r.returncode, out)
    except subprocess.TimeoutExpired:
        result = 'timed out after %d s' % timeout
    if not what:
        if argv[0] == 'gdbus' and '-m' in argv:     # the method and its arguments
            i = argv.index('-m')
            what = ' '.join([argv[i + 1].rsplit('.', 1)[1]] + argv[i + 2:])
        else:
            what = ' '.join(argv[:4])
        what += ' as uid %d' % user if user else ''
    t.add(service, what, result)
    return result


def gcall(dest, path, method, *args, bus='--system'):
    return ['gdbus', 'call', bus, '--timeout', '50', '-d', dest, '-o', path, '-m', method] + \
        list(args)


def gprop(dest, path, iface, prop, bus='--system'):
    return gcall(dest, path, 'org.freedesktop.DBus.Properties.Get', iface, prop, bus=bus)


REQUEST_NAME = r'''
import dbus, sys
try:
    print(dbus.SystemBus().request_name(sys.argv[1]))
except dbus.exceptions.DBusException as e:
    print(e.get_dbus_name(), e.get_dbus_message())
'''


def names_and_owners(t, service, address):
    """The well-known names on the bus and the user each owner runs as."""
    c = rawbus.Conn(address)
    try:
        names = sorted(n for n in c.bus('ListNames').body[0] if not n.startswith(':'))
        for n in names:
            r = c.bus('GetConnectionUnixUser', 's', [n])
            uid = r.body[0] if not r.error_name else r.error_name
            try:
                uid = pwd.getpwuid(uid).pw_name
            except (KeyError, TypeError):
                pass
            t.add(service, 'owner of ' + n, uid)
        r = c.bus('ListActivatableNames')
        t.add(service, 'activatable', ' '.join(sorted(r.body[0])))
    finally:
        c.close()


def has_owner(address, name):
    c = rawbus.Conn(address)
    try:
        return bool(c.bus('NameHasOwner', 's', [name]).body[0])
    finally:
        c.close()


def private_state(d):
    """A copy of each service state directory, bind-mounted over it (this namespace only)."""
    for p in STATE_DIRS:
        if os.path.isdir(p):
            copy = os.path.join(d, 'state', p.strip('/').replace('/', '_'))
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            subprocess.run(['cp', '-a', p, copy], check=True)
            subprocess.run(['mount', '--bind', copy, p], check=True)


def sc_system(t):
    d = t.d
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'mode=755', 'tmpfs', '/run/dbus'], check=True)
    private_state(d)
    log = open(os.path.join(d, 'system-bus.log'), 'w')
    bus = subprocess.Popen([DAEMON, '--system', '--nofork'], stdin=subprocess.DEVNULL,
                           stdout=log, stderr=log, env=env_for(None))
    if not sysutil.wait_for(lambda: sysutil.serves(SYSTEM_SOCKET), 20):
        t.add('bus', 'serves', 'no')
        return
    addr = 'unix:path=' + SYSTEM_SOCKET
    rtkit = 'org.freedesktop.RealtimeKit1'
    # rtkit: its policy refuses ResetKnown to everyone but root, checked before activation
    run(t, 'rtkit', ['rtkitctl', '--reset-known'], user=NOBODY)
    t.add('rtkit', 'activated by the refused call', has_owner(addr, rtkit))
    run(t, 'rtkit', ['rtkitctl', '--reset-known'])
    run(t, 'rtkit', gprop(rtkit, '/org/freedesktop/RealtimeKit1', rtkit, 'MaxRealtimePriority'),
        user=NOBODY, what='MaxRealtimePriority as uid 65534')
    # polkit: its own tools; a check for another user's process is refused to uid 65534
    run(t, 'polkit', ['pkaction', '--action-id', 'org.freedesktop.policykit.exec'], user=NOBODY)
    run(t, 'polkit', ['pkcheck', '--action-id', 'org.freedesktop.accounts.user-administration',
                      '--process', str(os.getpid())], user=NOBODY)
    # accountsservice: lookups by anyone; creating a user needs polkit's yes (it asks polkitd
    # about the caller's bus name: the bus's credentials of the caller); its name is root's
    acc = 'org.freedesktop.Accounts'
    run(t, 'accounts', gcall(acc, '/org/freedesktop/Accounts', acc + '.FindUserByName', 'root'),
        user=NOBODY, what='FindUserByName root as uid 65534')
    run(t, 'accounts', gprop(acc, '/org/freedesktop/Accounts/User0', acc + '.User', 'UserName'),
        user=NOBODY, what='User0.UserName as uid 65534')
    run(t, 'accounts', gcall(acc, '/org/freedesktop/Accounts', acc + '.CreateUser', 'kdbusx',
                             'kdbusx', '0'), user=NOBODY, what='CreateUser as uid 65534')
    run(t, 'accounts', [sys.executable, '-c', REQUEST_NAME, acc], user=NOBODY,
        what='RequestName %s as uid 65534' % acc)
    # upower: its client; an interface its policy does not open is refused
    up = 'org.freedesktop.UPower'
    run(t, 'upower', ['upower', '--version'], user=NOBODY)
    run(t, 'upower', ['upower', '--enumerate'], user=NOBODY)
    run(t, 'upower', gcall(up, '/org/freedesktop/UPower',
                           'org.freedesktop.DBus.ObjectManager.GetManagedObjects'),
        user=NOBODY, what='GetManagedObjects as uid 65534')
    # udisks2: its client; a loop device for uid 65534 needs polkit's yes
    ud = 'org.freedesktop.UDisks2'
    run(t, 'udisks', ['udisksctl', 'status'])
    run(t, 'udisks', gprop(ud, '/org/freedesktop/UDisks2/Manager', ud + '.Manager', 'Version'),
        user=NOBODY, what='Manager.Version as uid 65534')
    img = os.path.join(d, 'loop.img')
    with open(img, 'wb') as f:
        f.truncate(1 << 20)
    os.chmod(img, 0o666)
    run(t, 'udisks', ['udisksctl', 'loop-setup', '--no-user-interaction', '-f', img],
        user=NOBODY)
    # colord: its client, as root and as uid 65534; ObjectManager is not opened by its policy
    cd = 'org.freedesktop.ColorManager'
    run(t, 'colord', ['colormgr', 'get-sensors'], user=NOBODY)
    no_dates = lambda s: '\n'.join(  # noqa: E731
        x for x in s.splitlines() if not x.startswith(('Created:', 'Modified:')))
    run(t, 'colord', ['colormgr', 'create-device', 'kdbus-test', 'temp', 'display'],
        filt=no_dates)
    run(t, 'colord', ['colormgr', 'get-devices'], user=NOBODY, filt=no_dates)
    run(t, 'colord', gcall(cd, '/org/freedesktop/ColorManager',
                           'org.freedesktop.DBus.ObjectManager.GetManagedObjects'),
        user=NOBODY, what='GetManagedObjects as uid 65534')
    # PackageKit: its client (reads only)
    run(t, 'packagekit', ['pkcon', 'backend-details'], user=NOBODY)
    # systemd's services: Exec=/bin/false, the helper runs it and reports it
    run(t, 'login1', gcall('org.freedesktop.DBus', '/org/freedesktop/DBus',
                           'org.freedesktop.DBus.StartServiceByName', 'org.freedesktop.login1',
                           '0'), user=NOBODY, what='StartServiceByName login1 as uid 65534')
    names_and_owners(t, 'bus', addr)
    stop_bus(t, bus)


def stop_bus(t, bus):
    """SIGTERM: how the bus ends (a sanitizer's report would make its status differ)."""
    bus.terminate()
    try:
        t.add('bus', 'exit status after SIGTERM', bus.wait(20))
    except subprocess.TimeoutExpired:
        t.add('bus', 'exit status after SIGTERM', 'still running after 20 s')


def portal_interfaces(s):
    return ' '.join(sorted(set(re.findall(r'interface name="([^"]+)"', s))))


def sc_session(t):
    d = t.d
    home = os.path.join(d, 'home')
    rundir = os.path.join(d, 'run')
    os.makedirs(home)
    os.makedirs(rundir, mode=0o700)
    env = env_for(None)
    env.update(HOME=home, XDG_RUNTIME_DIR=rundir, XDG_CONFIG_HOME=home + '/.config',
               XDG_DATA_HOME=home + '/.local/share', XDG_CACHE_HOME=home + '/.cache',
               GSETTINGS_BACKEND='dconf', NO_AT_BRIDGE='1')
    for k in ('DBUS_SESSION_BUS_ADDRESS', 'XDG_DATA_DIRS', 'XDG_CONFIG_DIRS'):
        env.pop(k, None)
    log = open(os.path.join(d, 'session-bus.log'), 'w')
    bus = subprocess.Popen([DAEMON, '--session', '--nofork', '--print-address'],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                           env=env, text=True)
    addr = bus.stdout.readline().strip()
    t.add('bus', 'address', re.sub(r'=/tmp/dbus-[A-Za-z0-9]+', '=/tmp/dbus-X', addr))
    env['DBUS_SESSION_BUS_ADDRESS'] = addr

    def srun(service, argv, **kw):
        return run(t, service, argv, env=env, **kw)

    def scall(dest, path, method, *args):
        return gcall(dest, path, method, *args, bus='--session')

    srun('dconf', ['gsettings', 'set', 'org.gnome.desktop.interface', 'clock-format', '12h'])
    srun('dconf', ['gsettings', 'get', 'org.gnome.desktop.interface', 'clock-format'])
    t.add('dconf', 'database written', os.path.exists(home + '/.config/dconf/user'))
    sec = 'org.freedesktop.secrets'
    srun('keyring', scall(sec, '/org/freedesktop/secrets',
                          'org.freedesktop.Secret.Service.OpenSession', 'plain', "<''>"))
    srun('keyring', scall(sec, '/org/freedesktop/secrets',
                          'org.freedesktop.Secret.Service.ReadAlias', 'default'))
    srun('keyring', scall(sec, '/org/freedesktop/secrets',
                          'org.freedesktop.Secret.Service.SearchItems', '{}'))
    f = os.path.join(home, 'file.txt')
    with open(f, 'w') as fp:
        fp.write('kdbus\n')
    srun('gvfs', ['gio', 'set', f, 'metadata::kdbus-test', 'written'])
    srun('gvfs', ['gio', 'info', '-a', 'metadata::kdbus-test', f],
         filt=lambda s: '\n'.join(x for x in s.splitlines() if 'metadata::' in x))
    srun('gvfs', ['gio', 'list', 'trash:///'], filt=lambda s: '\n'.join(
        x for x in s.splitlines() if 'peer-to-peer' not in x))
    th = 'org.freedesktop.thumbnails.Thumbnailer1'
    srun('tumbler', scall(th, '/org/freedesktop/thumbnails/Thumbnailer1', th + '.GetSchedulers'))
    srun('tumbler', scall(th, '/org/freedesktop/thumbnails/Thumbnailer1', th + '.GetSupported'),
         filt=lambda s: '%d URI schemes, %d MIME types' % tuple(
             len(set(re.findall(r"'([^']*)'", x))) for x in s.split('], [')))
    ps = 'org.freedesktop.impl.portal.PermissionStore'
    srun('permission-store', scall(ps, '/org/freedesktop/impl/portal/PermissionStore',
                                   ps + '.SetPermission', 'kdbus', 'true', 'res', 'app',
                                   "['yes']"))
    srun('permission-store', scall(ps, '/org/freedesktop/impl/portal/PermissionStore',
                                   ps + '.Lookup', 'kdbus', 'res'))
    pd = 'org.freedesktop.portal.Desktop'
    srun('portal', ['gdbus', 'introspect', '--session', '-d', pd, '-o',
                    '/org/freedesktop/portal/desktop', '-x'], filt=portal_interfaces)
    srun('portal', scall(pd, '/org/freedesktop/portal/desktop',
                         'org.freedesktop.portal.ProxyResolver.Lookup', 'http://example.org/'))
    r = srun('at-spi', scall('org.a11y.Bus', '/org/a11y/bus', 'org.a11y.Bus.GetAddress'))
    m = re.search(r"'(unix:[^']*)'", r)
    if m:
        a11y = re.sub(r',?guid=[0-9a-f]+', '', m.group(1))
        srun('at-spi', ['gdbus', 'call', '-a', a11y, '--timeout', '50', '-d',
                        'org.a11y.atspi.Registry', '-o', '/org/a11y/atspi/registry', '-m',
                        'org.freedesktop.DBus.Peer.Ping'], what='Ping the registry')
    names_and_owners(t, 'bus', addr)
    stop_bus(t, bus)


SCENARIOS = {'system': sc_system, 'session': sc_session}


def inner(name, d):
    def scenario():
        t = Transcript(d)
        try:
            SCENARIOS[name](t)
        except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
            t.lines.append('stopped by %s: %s' % (type(e).__name__, t.norm(e)))
        return t.lines
    print(json.dumps(sysutil.run_as_init(scenario)))
    return 0


NS_SCRIPT = ('mount --bind "$1" %s && if [ -n "$2" ]; then mount --bind "$2" %s; fi && '
             'shift 2 && exec "$@"' % (DAEMON, LAUNCH_HELPER))


def install_helper(src, d):
    """Our launch helper installed as dbus-daemon's is: setuid root, run by messagebus."""
    dst = os.path.join(d, 'kdbus-launch-helper')
    shutil.copy(src, dst)
    os.chown(dst, 0, grp.getgrnam('messagebus').gr_gid)
    os.chmod(dst, 0o4750)
    return dst


def run_variant(bus, helper_src, name):
    d = tempfile.mkdtemp(prefix='kdbus-services-')
    os.chmod(d, 0o755)
    try:
        helper = install_helper(helper_src, d) if helper_src else ''
        r = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', NS_SCRIPT,
                            'sh', bus, helper, sys.executable, HERE, '--inner', name, d],
                           capture_output=True, text=True, timeout=300)
        try:
            return json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return ['no transcript: exit %d, %s' % (r.returncode, r.stderr.strip()[-500:])]
    finally:
        shutil.rmtree(d, ignore_errors=True)


# Differences docs/activation.md lists, as (variant, name, the line on dbus-daemon, the line
# on kdbusd): both lines leave the comparison, each must be there as given.
EXCEPTIONS = [
    # a service that exits with a status of its own after our helper exec'd it: kdbusd knows
    # it was the service (the helper said "exec"), dbus-daemon reads the status as a helper code
    ('kdbusd with kdbus-launch-helper', 'service exit status',
     'login1: StartServiceByName login1 as uid 65534: exit 1: Error: GDBus.Error:'
     'org.freedesktop.DBus.Error.Spawn.ChildExited: Launch helper exited with unknown '
     'return code 1',
     'login1: StartServiceByName login1 as uid 65534: exit 1: Error: GDBus.Error:'
     'org.freedesktop.DBus.Error.Spawn.ChildExited: Process org.freedesktop.login1 exited '
     'with status 1'),
]


def apply_exceptions(t, variant, ref, ours):
    for v, name, a, b in EXCEPTIONS:
        if v != variant:
            continue
        t.ok(a in ref and b in ours, '%s: exception "%s" as documented' % (variant, name))
        ref = [x if x != a else 'exception ' + name for x in ref]
        ours = [x if x != b else 'exception ' + name for x in ours]
    return ref, ours


def by_service(lines):
    out = {}
    for x in lines:
        out.setdefault(x.split(':', 1)[0], []).append(x)
    return out


def compare(t, what, ref, ours):
    """One TAP point per service: its lines equal on both buses."""
    r, o = by_service(ref), by_service(ours)
    for service in list(dict.fromkeys(list(r) + list(o))):
        a, b = r.get(service, []), o.get(service, [])
        if not t.ok(a == b, '%s: %s: the same as dbus-daemon' % (what, service)):
            for i in range(max(len(a), len(b))):
                x = a[i] if i < len(a) else '(none)'
                y = b[i] if i < len(b) else '(none)'
                if x != y:
                    t.diag('dbus-daemon: %s\nkdbusd:      %s' % (x, y))


def main():
    if sys.argv[1] == '--inner':
        return inner(sys.argv[2], sys.argv[3])
    ours, our_helper = sys.argv[1], sys.argv[2]
    ref = sys.argv[3] if len(sys.argv) > 3 else None
    only = os.environ.get('KDBUS_TEST_SCENARIOS', '').split()
    t = sysutil.Tap()
    for name, needs in NEEDS.items():
        if only and name not in only:
            continue
        missing = [x for x in needs if not shutil.which(x) and not os.path.exists(x)]
        if os.getuid() != 0 or not shutil.which('unshare'):
            t.skip(name, 'needs root and unshare (a mount namespace)')
            continue
        if missing:
            t.skip(name, 'not installed: %s (tools/dev/deps.sh)' % ', '.join(missing))
            continue
        variants = [('kdbusd', ours, None)]
        if name == 'system':
            variants.append(('kdbusd with kdbus-launch-helper', ours, our_helper))
        base = run_variant(ref, None, name) if ref else None
        if base and os.environ.get('KDBUS_TEST_VERBOSE'):
            t.diag('dbus-daemon:\n' + '\n'.join(base))
        for what, bus, helper in variants:
            o = run_variant(bus, helper, name)
            if os.environ.get('KDBUS_TEST_VERBOSE'):
                t.diag(what + ':\n' + '\n'.join(o))
            if base is None:
                t.ok(not any(x.startswith(('stopped by', 'no transcript')) for x in o),
                     '%s on %s' % (name, what), ' | '.join(o))
            else:
                compare(t, '%s on %s' % (name, what), *apply_exceptions(t, what, base, o))
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
