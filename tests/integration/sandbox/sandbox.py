#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Sandboxed apps (issue #15): kdbus-proxy in front of kdbusd, against xdg-dbus-proxy in
front of dbus-daemon with the same command line, passed as flatpak passes it (--args=FD
with NUL-separated arguments, --fd=FD sync pipe).

  escape      a client on the filtered socket tries every way to learn of or reach the
              hidden and SEE-only peers (escape-client.py): (a) kdbus-proxy's endpoint on
              kdbusd, checked line by line; (b) kdbus-proxy in front of dbus-daemon and of
              dbus-broker, which must answer the same but where only the bus behind it can
              (PROXY_DIFFERENCES, BROKER_DIFFERENCES); (c) xdg-dbus-proxy in front of
              dbus-daemon, every line where it differs a named difference (XDG_DIFFERENCES,
              with the reason)
  live        nothing sticky (live-client.py: a released name's owner, a name acquired
              later, a caller that left, the app's own pid) on (a) and (b), (c) compared
              (LIVE_XDG_DIFFERENCES); --log in front of kdbusd and dbus-daemon
  flatpak     flatpak's real session and a11y command lines in one kdbus-proxy process
              (two kdbusd buses; then two dbus-daemons, kdbus-proxy filtering), a client
              in a bwrap sandbox that sees only the socket:
              owns $APPID, calls a portal, gets its broadcasts; the service sees the app's
              own pid; the sync fd closing ends the endpoint and disconnects the app
  unprivileged  kdbus-proxy as an unprivileged user makes its endpoint

  update      kdbusctl endpoint list / update on a running kdbus-proxy endpoint

Usage: sandbox.py KDBUSD KDBUS_PROXY KDBUSCTL [TEST...]  (TAP output)
"""
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

import dbus

import sandbox_flatpak

HERE = os.path.dirname(os.path.abspath(__file__))
PY = '/usr/bin/python3'

CONF = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <servicedir>%s</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
'''

# The escape suite's command line: a portal reachable by rules only (no --talk), so that the
# --call and --broadcast rules are what decides; a name to own; a SEE-only name.
ESCAPE_RULES = ['--filter', '--own=org.example.App.*', '--see=org.example.Seen',
                '--see=org.example.SeenActivatable',
                '--call=org.freedesktop.portal.*=*',
                '--broadcast=org.freedesktop.portal.*=@/org/freedesktop/portal/*']

# What the sandboxed client gets through kdbusd's endpoint: nothing of the hidden peer, the
# SEE-only peer visible and unreachable, the portal by its rules.
KDBUSD_EXPECTED = '''\
ListNames: org.example.Seen org.freedesktop.DBus org.freedesktop.portal.Test
ListNames uniques: other own seen
ListActivatableNames: org.example.SeenActivatable
NameHasOwner org.example.Hidden: ok False
GetNameOwner org.example.Hidden: org.freedesktop.DBus.Error.NameHasNoOwner
GetConnectionUnixUser org.example.Hidden: org.freedesktop.DBus.Error.NameHasNoOwner
GetConnectionUnixProcessID org.example.Hidden: org.freedesktop.DBus.Error.NameHasNoOwner
GetConnectionCredentials org.example.Hidden: org.freedesktop.DBus.Error.NameHasNoOwner
GetConnectionUnixProcessFD org.example.Hidden: org.freedesktop.DBus.Error.UnknownMethod
GetConnectionSELinuxSecurityContext org.example.Hidden: org.freedesktop.DBus.Error.NameHasNoOwner
GetAdtAuditSessionData org.example.Hidden: org.freedesktop.DBus.Error.NameHasNoOwner
ListQueuedOwners org.example.Hidden: org.freedesktop.DBus.Error.NameHasNoOwner
ReleaseName org.example.Hidden: ok 2
NameHasOwner hidden-unique: ok False
GetNameOwner hidden-unique: org.freedesktop.DBus.Error.NameHasNoOwner
GetConnectionUnixUser hidden-unique: org.freedesktop.DBus.Error.NameHasNoOwner
GetConnectionUnixProcessID hidden-unique: org.freedesktop.DBus.Error.NameHasNoOwner
GetConnectionCredentials hidden-unique: org.freedesktop.DBus.Error.NameHasNoOwner
GetConnectionUnixProcessFD hidden-unique: org.freedesktop.DBus.Error.UnknownMethod
GetConnectionSELinuxSecurityContext hidden-unique: org.freedesktop.DBus.Error.NameHasNoOwner
GetAdtAuditSessionData hidden-unique: org.freedesktop.DBus.Error.NameHasNoOwner
ListQueuedOwners hidden-unique: org.freedesktop.DBus.Error.NameHasNoOwner
ReleaseName hidden-unique: org.freedesktop.DBus.Error.InvalidArgs
NameHasOwner org.example.Seen: ok True
GetNameOwner org.example.Seen: ok :seen
GetConnectionUnixUser org.example.Seen: ok 0
GetConnectionUnixProcessID org.example.Seen: ok <pid>
GetConnectionCredentials org.example.Seen: ok 4
GetConnectionUnixProcessFD org.example.Seen: org.freedesktop.DBus.Error.UnknownMethod
GetConnectionSELinuxSecurityContext org.example.Seen: SELINUX
GetAdtAuditSessionData org.example.Seen: org.freedesktop.DBus.Error.AdtAuditDataUnknown
ListQueuedOwners org.example.Seen: ok 1
ReleaseName org.example.Seen: ok 3
RequestName org.example.Hidden: org.freedesktop.DBus.Error.AccessDenied
Debug.Stats.GetStats: org.freedesktop.DBus.Error.AccessDenied
Debug.Stats.GetAllMatchRules: org.freedesktop.DBus.Error.AccessDenied
Debug.Stats.GetConnectionStats hidden: org.freedesktop.DBus.Error.AccessDenied
Debug.Stats.GetConnectionStats self: org.freedesktop.DBus.Error.AccessDenied
Peer.Ping bus: ok
Peer.GetMachineId bus: MACHINEID
Properties.Get Features: ok 2
ReloadConfig: org.freedesktop.DBus.Error.AccessDenied
UpdateActivationEnvironment: org.freedesktop.DBus.Error.AccessDenied
BecomeMonitor: org.freedesktop.DBus.Error.AccessDenied
StartServiceByName hidden-activatable: org.freedesktop.DBus.Error.ServiceUnknown
auto-start hidden-activatable: org.freedesktop.DBus.Error.ServiceUnknown
StartServiceByName org.example.Seen: org.freedesktop.DBus.Error.AccessDenied
StartServiceByName seen-activatable: org.freedesktop.DBus.Error.AccessDenied
auto-start seen-activatable: org.freedesktop.DBus.Error.AccessDenied
AddMatch eavesdrop: org.freedesktop.DBus.Error.AccessDenied
AddMatch all: ok
call org.example.Hidden: org.freedesktop.DBus.Error.ServiceUnknown
call hidden-unique: org.freedesktop.DBus.Error.ServiceUnknown
call org.example.Seen: org.freedesktop.DBus.Error.AccessDenied
call seen-unique: org.freedesktop.DBus.Error.AccessDenied
call org.freedesktop.portal.Test: ok pong
call portal with fd: ok pong
call hidden with fd: org.freedesktop.DBus.Error.ServiceUnknown
portal Emit: ok pong
portal Trigger: ok pong
received: Changed@/org/freedesktop/portal/desktop
'''

# Where xdg-dbus-proxy 0.1.4 in front of dbus-daemon answers otherwise, and why. A line of
# kdbusd's transcript not listed here must be the same there.
XDG_DIFFERENCES = {
    'ListNames uniques': 'xdg-dbus-proxy lists every unique name dbus-daemon has (it filters '
                         'only well-known names out of ListNames)',
    'ReleaseName org.example.Hidden': 'xdg-dbus-proxy needs OWN for ReleaseName '
                                      '(AccessDenied or, hidden, NameHasNoOwner); kdbusd '
                                      'answers NON_EXISTENT (2) as for a name nobody has',
    'ReleaseName org.example.Seen': 'the same: xdg-dbus-proxy AccessDenied for a name it '
                                    'only sees, kdbusd NOT_OWNER (3)',
    'ReleaseName hidden-unique': 'xdg-dbus-proxy hides the unique name (NameHasNoOwner); '
                                 'dbus-daemon and kdbusd refuse releasing a unique name '
                                 '(InvalidArgs) before any lookup',
    'ListQueuedOwners org.example.Seen': 'xdg-dbus-proxy needs OWN for ListQueuedOwners',
    'NameHasOwner hidden-unique': 'xdg-dbus-proxy hides it too, but answers from its '
                                  'sticky unique-name table',
    'GetConnectionUnixProcessFD *': 'neither kdbusd nor dbus-daemon 1.14 has it '
                                    '(UnknownMethod, before any lookup); xdg-dbus-proxy 0.1.4 '
                                    'denies a method it does not know (AccessDenied)',
    'GetConnectionCredentials org.example.Seen': 'kdbusd adds ProcessFD (a pidfd), '
                                                 'dbus-daemon 1.14 does not',
    '* org.example.Hidden': 'xdg-dbus-proxy answers a driver query about a hidden name '
                            'with ServiceUnknown (its one answer for hidden); kdbusd with '
                            'dbus-daemon\'s own answer for a name nobody owns '
                            '(NameHasNoOwner): both say it does not exist',
    '* hidden-unique': 'the same for the hidden peer\'s unique name',
    'RequestName org.example.Hidden': 'kdbusd refuses every name the endpoint does not let '
                                      'it own with AccessDenied, existing or not; '
                                      'xdg-dbus-proxy hides the name (ServiceUnknown)',
    'GetConnectionSELinuxSecurityContext org.example.Seen': 'the buses answer from their '
                                                            'own LSM support',
    'GetAdtAuditSessionData org.example.Seen': 'the buses answer from their own audit support',
    'Peer.Ping bus': 'xdg-dbus-proxy denies every interface of the bus but '
                     'org.freedesktop.DBus and Introspectable; kdbusd answers Peer (nothing '
                     'about other peers)',
    'Peer.GetMachineId bus': 'the same',
    'Properties.Get Features': 'the same for Properties (the bus\'s own features)',
    'call hidden-unique': 'both hide it: xdg-dbus-proxy answers NameHasNoOwner for a unique '
                          'name, kdbusd what dbus-daemon answers for a unique name nobody '
                          'has (ServiceUnknown)',
    'call hidden with fd': 'the same',
}


# Where kdbus-proxy in front of dbus-daemon (b) answers otherwise than kdbusd's endpoint
# (a), and why: only what the bus behind the proxy answers for itself.
PROXY_DIFFERENCES = {
    'GetConnectionCredentials org.example.Seen': 'kdbusd adds ProcessFD (a pidfd), '
                                                 'dbus-daemon 1.14 does not',
    'GetConnectionUnixProcessFD org.example.Hidden': 'kdbus-proxy checks the name before the '
                                                     'bus sees the call (a bus that has the '
                                                     'method must not hand out a hidden '
                                                     'peer\'s pidfd): NameHasNoOwner; kdbusd '
                                                     'has no such method (UnknownMethod)',
    'GetConnectionUnixProcessFD hidden-unique': 'the same for the hidden peer\'s unique name',
}


def difference(key):
    """The recorded reason for @key (exact, or a "PREFIX *" / "* SUFFIX" pattern)."""
    if key in XDG_DIFFERENCES:
        return XDG_DIFFERENCES[key]
    for k, v in XDG_DIFFERENCES.items():
        if (k.endswith(' *') and key.startswith(k[:-1])) or \
           (k.startswith('* ') and key.endswith(k[1:])):
            return v
    return None


# Nothing sticky (live-client.py), on (a) kdbusd's endpoint and (b) kdbus-proxy in front of
# dbus-daemon alike.
LIVE_EXPECTED = '''\
svc unique while owning: ok 1
call svc unique while owning: ok pong
svc unique after release: ok 0
call svc unique after release: org.freedesktop.DBus.Error.ServiceUnknown
call svc name after release: org.freedesktop.DBus.Error.ServiceUnknown
new owner visible: ok 1
call new owner: ok pong
peer before calling: ok 0
app got the call: True
peer while connected: ok 1
peer uid while connected: ok %d
peer got the app's unicast signal: True
app saw the peer leave: True
peer after leaving: ok 0
own pid: ok
own pid in credentials: ok
leaks of hidden uniques in NameOwnerChanged: -
''' % os.getuid()

# (c) xdg-dbus-proxy 0.1.4 in front of dbus-daemon, where it differs, and why.
LIVE_XDG_DIFFERENCES = {
    'svc unique after release': 'xdg-dbus-proxy keeps a unique name visible once it saw it '
                                'own a visible name (sticky)',
    'call svc unique after release': 'the same: the released owner is still reachable',
    'peer got the app\'s unicast signal': 'xdg-dbus-proxy lets the app answer a peer that '
                                          'called it, not signal it; kdbusd\'s endpoints '
                                          '(and kdbus-proxy) let a signal go back to a caller '
                                          'while it is connected',
    'own pid': 'xdg-dbus-proxy does not touch the answer: the bus gives the proxy\'s pid',
    'own pid in credentials': 'the same',
}


def tap(ok, name, diag=''):
    tap.n += 1
    print('%s %d %s' % ('ok' if ok else 'not ok', tap.n, name), flush=True)
    for line in diag.splitlines():
        print('# ' + line, flush=True)
    if not ok:
        tap.failed += 1


tap.n = 0
tap.failed = 0


class Bus:
    """kdbusd (with a native socket) or dbus-daemon, in its own directory."""

    def __init__(self, binary, tmp, tag, extra=()):
        self.dir = os.path.join(tmp, tag)
        os.makedirs(os.path.join(self.dir, 'native'))
        os.makedirs(os.path.join(self.dir, 'services'))
        os.chmod(self.dir, 0o755)
        self.kdbusd = not binary.endswith('dbus-daemon')
        # services the sandbox must not start: one hidden, one it may only see
        self.markers = []
        for tag in ('Hidden', 'Seen'):
            marker = os.path.join(self.dir, 'activated-' + tag)
            with open(os.path.join(self.dir, 'services', tag + '.service'), 'w') as f:
                f.write('[D-BUS Service]\nName=org.example.%sActivatable\n'
                        'Exec=/bin/sh -c "touch %s"\n' % (tag, marker))
            self.markers.append(marker)
        conf = os.path.join(self.dir, 'bus.conf')
        with open(conf, 'w') as f:
            f.write(CONF % os.path.join(self.dir, 'services'))
        self.sock = os.path.join(self.dir, 'bus')
        argv = [binary, '--config-file=' + conf, '--nofork', '--print-address',
                '--address=unix:path=' + self.sock]
        if self.kdbusd:
            argv.append('--native=unix:path=' + os.path.join(self.dir, 'native', 'bus'))
            argv.extend(extra)
        self.err = open(os.path.join(self.dir, 'stderr'), 'wb')
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err,
                                     stdin=subprocess.DEVNULL)
        r, _, _ = select.select([self.proc.stdout], [], [], 20)
        if not r or not self.proc.stdout.readline():
            raise RuntimeError('%s did not start' % binary)
        self.address = 'unix:path=' + self.sock
        # what a session running kdbusd would put in DBUS_SESSION_BUS_ADDRESS
        self.session_address = ('kernel:path=%s;%s' % (os.path.join(self.dir, 'native', 'bus'),
                                                        self.address)
                                if self.kdbusd else self.address)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.err.close()


class Proxy:
    """kdbus-proxy or xdg-dbus-proxy, started as flatpak starts it: every argument (--fd
    among them) NUL-separated in a sealed memfd given as --args=FD, sync pipe on --fd."""

    def __init__(self, binary, groups, user=None):
        args = []
        self.sync_r, self.sync_w = os.pipe()
        args.append('--fd=%d' % self.sync_w)
        for address, path, opts in groups:
            args += [address, path] + opts
        data = b'\0'.join(a.encode() for a in args) + b'\0'
        mfd = os.memfd_create('args', os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.write(mfd, data)
        os.lseek(mfd, 0, os.SEEK_SET)
        argv = [binary, '--args=%d' % mfd]
        if user:
            argv = ['setpriv', '--reuid=%d' % user, '--regid=%d' % user, '--clear-groups'] + argv
        self.err = tempfile.TemporaryFile()
        self.out = tempfile.TemporaryFile()     # --log's lines
        self.proc = subprocess.Popen(argv, pass_fds=(self.sync_w, mfd), stderr=self.err,
                                     stdout=self.out, stdin=subprocess.DEVNULL)
        os.close(mfd)
        os.close(self.sync_w)
        r, _, _ = select.select([self.sync_r], [], [], 20)
        self.ready = bool(r) and os.read(self.sync_r, 1) == b'x'

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode(errors='replace')

    def stdout(self):
        self.out.seek(0)
        return self.out.read().decode(errors='replace')

    def stop(self):
        """flatpak's way: close our end of the sync pipe; the proxy must exit."""
        if self.sync_r >= 0:
            os.close(self.sync_r)
            self.sync_r = -1
        try:
            status = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = None
        # an ASan/UBSan build's reports (a leak makes the exit status 23)
        err = self.stderr()
        if 'Sanitizer' in err or 'runtime error' in err:
            Proxy.sanitizer_reports.append(err)
        return status

    sanitizer_reports = []


class BrokerBus:
    """dbus-broker run by bench/broker-controller.py (no systemd): session.conf's policy,
    no service files, no activation."""

    def __init__(self, tmp, tag):
        self.dir = os.path.join(tmp, tag)
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o755)
        self.kdbusd = False
        self.markers = []
        self.sock = os.path.join(self.dir, 'bus')
        self.err = open(os.path.join(self.dir, 'stderr'), 'wb')
        self.proc = subprocess.Popen([PY, os.path.join(HERE, '..', '..', '..', 'bench',
                                                       'broker-controller.py'),
                                      '--listen', self.sock],
                                     stdout=subprocess.PIPE, stderr=self.err,
                                     stdin=subprocess.DEVNULL)
        r, _, _ = select.select([self.proc.stdout], [], [], 20)
        if not r or not self.proc.stdout.readline():
            raise RuntimeError('dbus-broker did not start')
        self.address = self.session_address = 'unix:path=' + self.sock

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.err.close()


def start_actors(address, portal_name=None):
    p = subprocess.Popen([PY, os.path.join(HERE, 'actors.py'), address] +
                         ([portal_name] if portal_name else []),
                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    r, _, _ = select.select([p.stdout], [], [], 20)
    line = p.stdout.readline().decode().split() if r else []
    if not line or line[0] != 'ready':
        p.kill()
        raise RuntimeError('actors did not start')
    return p, line[1], line[2], line[3]


def actor_log(address, name):
    bus = dbus.bus.BusConnection(address)
    try:
        return [str(x) for x in bus.call_blocking(name, '/', 'org.test.Actor', 'Log', '', ())]
    finally:
        bus.close()


def normalize(text, seen_unique):
    out = []
    for line in text.splitlines():
        k, _, v = line.partition(': ')
        v = v.replace(seen_unique, ':seen')
        if k.startswith('GetConnectionUnixProcessID') and v.startswith('ok '):
            v = 'ok <pid>'
        if k.startswith('GetConnectionUnixProcessFD') and v.startswith('ok'):
            v = 'ok fd'
        if k == 'GetConnectionSELinuxSecurityContext org.example.Seen':
            v = 'SELINUX'       # the buses' own LSM support decides
        if k == 'Peer.GetMachineId bus' and v.startswith('ok'):
            v = 'MACHINEID'
        out.append('%s: %s' % (k, v))
    return out


def run_escape(bus_bin, proxy_bin, tmp, tag):
    bus = BrokerBus(tmp, tag) if bus_bin == 'dbus-broker' else Bus(bus_bin, tmp, tag)
    actors = proxy = None
    try:
        actors, hidden, seen, _ = start_actors(bus.address)
        path = os.path.join(bus.dir, 'proxy-XXXXXX')
        open(path, 'w').close()         # flatpak reserves the name with mkstemp()
        proxy = Proxy(proxy_bin, [(bus.session_address, path, ESCAPE_RULES)])
        if not proxy.ready:
            raise RuntimeError('proxy not ready: ' + proxy.stderr())
        res = subprocess.run([PY, os.path.join(HERE, 'escape-client.py'), 'unix:path=' + path,
                              hidden, seen], capture_output=True, timeout=120)
        lines = normalize(res.stdout.decode(), seen)
        logs = {n: actor_log(bus.address, n) for n in
                ('org.example.Hidden', 'org.example.Seen')}
        return lines, logs, [m for m in bus.markers if os.path.exists(m)], res.stderr.decode()
    finally:
        if proxy:
            proxy.stop()
        if actors:
            actors.kill()
            actors.wait()
        bus.stop()


def test_escape(kdbusd, kdbus_proxy, tmp):
    lines, logs, activated, err = run_escape(kdbusd, kdbus_proxy, tmp, 'escape-kdbusd')
    expected = KDBUSD_EXPECTED.splitlines()
    diff = [('-' + e, '+' + g) for e, g in zip(expected, lines) if e != g]
    tap(lines == expected, 'escape: kdbus-proxy on kdbusd, every probe as expected',
        '\n'.join('%s\n%s' % d for d in diff) +
        ('' if len(lines) == len(expected) else '\nlines: %d, expected %d\n%s'
         % (len(lines), len(expected), err)))
    # the hidden and SEE-only peers got nothing: no call, no-reply call, unicast signal,
    # unasked reply, fd; only the sandbox's own broadcast (they listen to every signal)
    # (they also hear the portal's two broadcasts, and the hidden one the portal's call)
    tap(logs['org.example.Hidden'] == ['signal Hello', 'signal Changed', 'signal Changed',
                                       'call Secret'] and
        logs['org.example.Seen'] == ['signal Hello', 'signal Changed', 'signal Changed'],
        'escape: hidden and SEE-only peers received nothing from the sandbox but its broadcast',
        repr(logs))
    tap(not activated, 'escape: no hidden or SEE-only service was activated', repr(activated))
    return lines


# Where kdbus-proxy in front of dbus-broker answers otherwise than kdbusd's endpoint, beyond
# PROXY_DIFFERENCES: what dbus-broker answers for itself.
BROKER_DIFFERENCES = {
    'ListActivatableNames': 'this dbus-broker (bench/broker-controller.py) has no service '
                            'files',
    'GetConnectionCredentials org.example.Seen': 'dbus-broker, as dbus-daemon 1.14, sends '
                                                 'no ProcessFD',
    'Properties.Get Features': 'dbus-broker lists no Features of its own (kdbusd and '
                               'dbus-daemon 1.14: two)',
}


def test_escape_proxy(kdbusd_lines, kdbus_proxy, tmp, bus_name):
    """(b): kdbus-proxy as the filtering proxy in front of @bus_name (dbus-daemon or
    dbus-broker): the same answers as kdbusd's endpoint except where only the bus behind it
    can answer (PROXY_DIFFERENCES, BROKER_DIFFERENCES), nothing reaches the hidden and
    SEE-only peers, nothing is started."""
    binary = shutil.which(bus_name)
    what = 'escape: kdbus-proxy in front of ' + bus_name
    if not binary:
        tap(True, '%s # SKIP no %s' % (what, bus_name))
        return
    lines, logs, activated, err = run_escape(bus_name if bus_name == 'dbus-broker' else binary,
                                             kdbus_proxy, tmp, 'escape-proxy-' + bus_name)
    known = dict(PROXY_DIFFERENCES, **(BROKER_DIFFERENCES if bus_name == 'dbus-broker' else {}))
    ours = dict(l.split(': ', 1) for l in kdbusd_lines)
    theirs = dict(l.split(': ', 1) for l in lines)
    unexplained = ['%s: kdbusd "%s", kdbus-proxy "%s"' % (k, ours.get(k), theirs.get(k))
                   for k in sorted(set(ours) | set(theirs))
                   if ours.get(k) != theirs.get(k) and k not in known]
    tap(not unexplained and len(lines) == len(kdbusd_lines),
        what + ' answers as kdbusd\'s endpoint',
        '\n'.join(unexplained) + ('\n' + err if unexplained else ''))
    for k in sorted(set(ours) | set(theirs)):
        if ours.get(k) != theirs.get(k):
            print('# recorded difference (%s) %s: kdbusd "%s", kdbus-proxy "%s" (%s)'
                  % (bus_name, k, ours.get(k), theirs.get(k), known.get(k)), flush=True)
    tap(logs['org.example.Hidden'] == ['signal Hello', 'signal Changed', 'signal Changed',
                                       'call Secret'] and
        logs['org.example.Seen'] == ['signal Hello', 'signal Changed', 'signal Changed'],
        what + ': hidden and SEE-only peers received nothing but the broadcast', repr(logs))
    tap(not activated, what + ' started nothing', repr(activated))


def run_live(bus_bin, proxy_bin, tmp, tag):
    bus = BrokerBus(tmp, tag) if bus_bin == 'dbus-broker' else Bus(bus_bin, tmp, tag)
    proxy = None
    try:
        path = os.path.join(bus.dir, 'proxy-live')
        proxy = Proxy(proxy_bin, [(bus.session_address, path,
                                   ['--filter', '--talk=org.example.Svc'])])
        if not proxy.ready:
            raise RuntimeError('proxy not ready: ' + proxy.stderr())
        res = subprocess.run([PY, os.path.join(HERE, 'live-client.py'), bus.address,
                              'unix:path=' + path], capture_output=True, timeout=120)
        return res.stdout.decode().splitlines(), res.stderr.decode() + proxy.stderr()
    finally:
        if proxy:
            proxy.stop()
        bus.stop()


def test_live(kdbusd, kdbus_proxy, tmp):
    """Nothing is sticky: a released name's owner, a caller that left, a name acquired
    later; the app's own pid. (a) and (b) answer LIVE_EXPECTED; (c) differs where
    recorded."""
    expected = LIVE_EXPECTED.splitlines()
    lines, err = run_live(kdbusd, kdbus_proxy, tmp, 'live-kdbusd')
    tap(lines == expected, 'live: kdbus-proxy on kdbusd, nothing sticky',
        '\n'.join('got: ' + l for l in lines) + '\n' + err if lines != expected else '')
    daemon = shutil.which('dbus-daemon')
    if not daemon:
        tap(True, 'live: kdbus-proxy in front of dbus-daemon # SKIP no dbus-daemon')
        return
    lines, err = run_live(daemon, kdbus_proxy, tmp, 'live-proxy')
    tap(lines == expected, 'live: kdbus-proxy in front of dbus-daemon, nothing sticky',
        '\n'.join('got: ' + l for l in lines) + '\n' + err if lines != expected else '')
    if shutil.which('dbus-broker'):
        lines, err = run_live('dbus-broker', kdbus_proxy, tmp, 'live-broker')
        tap(lines == expected, 'live: kdbus-proxy in front of dbus-broker, nothing sticky',
            '\n'.join('got: ' + l for l in lines) + '\n' + err if lines != expected else '')
    xdg = shutil.which('xdg-dbus-proxy')
    if not xdg:
        tap(True, 'live: xdg-dbus-proxy comparison # SKIP no xdg-dbus-proxy')
        return
    lines, err = run_live(daemon, xdg, tmp, 'live-xdg')
    ours = dict(l.split(': ', 1) for l in expected)
    theirs = dict(l.split(': ', 1) for l in lines if ': ' in l)
    unexplained = ['%s: ours "%s", xdg-dbus-proxy "%s"' % (k, ours.get(k), theirs.get(k))
                   for k in sorted(set(ours) | set(theirs))
                   if ours.get(k) != theirs.get(k) and k not in LIVE_XDG_DIFFERENCES]
    tap(not unexplained, 'live: xdg-dbus-proxy differs only where recorded',
        '\n'.join(unexplained) + ('\n' + err if unexplained else ''))
    for k in sorted(set(ours) | set(theirs)):
        if ours.get(k) != theirs.get(k):
            print('# recorded difference %s: ours "%s", xdg-dbus-proxy "%s" (%s)'
                  % (k, ours.get(k), theirs.get(k), LIVE_XDG_DIFFERENCES.get(k)), flush=True)


def test_clients(bus_bin, kdbus_proxy, tmp, tag):
    """Three client libraries through the filtered socket: libdbus (dbus-send), GDBus (gdbus)
    and sd-bus (busctl, which sends its whole SASL exchange and Hello at once): each lists
    the visible names only."""
    bus = Bus(bus_bin, tmp, tag)
    actors = proxy = None
    want = 'org.example.Seen org.freedesktop.DBus org.freedesktop.portal.Test'
    try:
        actors, _, _, _ = start_actors(bus.address)
        path = os.path.join(bus.dir, 'proxy-clients')
        open_path = os.path.join(bus.dir, 'proxy-unfiltered')
        # a second socket of the same process without --filter: nothing is restricted
        proxy = Proxy(kdbus_proxy, [(bus.session_address, path, ESCAPE_RULES),
                                    (bus.session_address, open_path, [])])
        if not proxy.ready:
            raise RuntimeError('proxy not ready: ' + proxy.stderr())
        addr = 'unix:path=' + path
        call = ['org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                'ListNames']
        got = {}
        for name, argv in (
                ('dbus-send', ['dbus-send', '--bus=' + addr, '--print-reply',
                               '--dest=' + call[0], call[1], call[2] + '.' + call[3]]),
                ('gdbus', ['gdbus', 'call', '-a', addr, '-d', call[0], '-o', call[1], '-m',
                           call[2] + '.' + call[3]]),
                ('busctl', ['busctl', '--address=' + addr, 'call'] + call)):
            if not shutil.which(argv[0]):
                continue
            res = subprocess.run(argv, capture_output=True, timeout=30)
            text = res.stdout.decode()
            got[name] = ' '.join(sorted(set(
                w.strip('"\'(),[]') for w in text.split()
                if w.strip('"\'(),[]').startswith('org.')))) or res.stderr.decode()
        bad = {k: v for k, v in got.items() if v != want}
        tap(len(got) == 3 and not bad, 'clients: dbus-send, gdbus and busctl through kdbus-proxy '
            'in front of %s see the visible names only'
            % ('kdbusd' if bus.kdbusd else 'dbus-daemon'), repr(got))
        b = dbus.bus.BusConnection('unix:path=' + open_path)
        names = sorted(str(n) for n in b.list_names() if not n.startswith(':'))
        b.close()
        tap(names == ['org.example.Hidden', 'org.example.Seen', 'org.freedesktop.DBus',
                      'org.freedesktop.portal.Test'],
            'clients: without --filter (the same kdbus-proxy process) everything is visible',
            repr(names))
    finally:
        if proxy:
            proxy.stop()
        if actors:
            actors.kill()
            actors.wait()
        bus.stop()


def test_log(bus_bin, kdbus_proxy, tmp, tag):
    """--log prints each message and what became of it (xdg-dbus-proxy's --log, with the
    reason); in front of a kdbusd it makes kdbus-proxy the filtering proxy (kdbusd's
    endpoint has no process in the path that could print)."""
    bus = Bus(bus_bin, tmp, tag)
    actors = proxy = None
    try:
        actors, hidden, seen, _ = start_actors(bus.address)
        path = os.path.join(bus.dir, 'proxy-log')
        proxy = Proxy(kdbus_proxy, [(bus.session_address, path, ESCAPE_RULES + ['--log'])])
        if not proxy.ready:
            raise RuntimeError('proxy not ready: ' + proxy.stderr())
        app = dbus.bus.BusConnection('unix:path=' + path)
        app.list_names()
        for dest, member in (('org.freedesktop.portal.Test', 'Ping'),
                             ('org.example.Seen', 'Ping'), ('org.example.Hidden', 'Ping'),
                             ('org.freedesktop.DBus', 'GetStats')):
            try:
                app.call_blocking(dest, '/x', 'org.freedesktop.DBus.Debug.Stats'
                                  if member == 'GetStats' else 'org.test.X', member, '', ())
            except dbus.DBusException:
                pass
        # a name no rule covers changes owner: the proxy does not even hear of it (its
        # matches are per name of the rules, as xdg-dbus-proxy's)
        other = dbus.bus.BusConnection(bus.address)
        other.request_name('org.example.Unrelated')
        other.close()
        app.get_unique_name()
        app.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                          'GetId', '', ())
        app.close()
        time.sleep(0.2)
        log = proxy.stdout()
        want = ['org.freedesktop.DBus call org.freedesktop.DBus.ListNames at /org/freedesktop/'
                'DBus: allowed',
                '-> org.freedesktop.portal.Test call org.test.X.Ping at /x: allowed',
                '-> org.example.Seen call org.test.X.Ping at /x: DENIED',
                '-> org.example.Hidden call org.test.X.Ping at /x: HIDDEN',
                'call org.freedesktop.DBus.Debug.Stats.GetStats at /x: DENIED',
                '<- org.freedesktop.DBus return',
                ': filtered']
        missing = [w for w in want if w not in log]
        if 'org.example.Unrelated' in log:
            missing.append('nothing about org.example.Unrelated')
        tap(not missing, 'log: kdbus-proxy --log in front of %s prints what it allowed and '
            'denied' % ('kdbusd' if bus.kdbusd else 'dbus-daemon'),
            'missing: %r\n%s%s' % (missing, log, proxy.stderr()) if missing else '')
    finally:
        if proxy:
            proxy.stop()
        if actors:
            actors.kill()
            actors.wait()
        bus.stop()


def test_escape_xdg(kdbusd_lines, tmp):
    xdg = shutil.which('xdg-dbus-proxy')
    daemon = shutil.which('dbus-daemon')
    if not xdg or not daemon:
        tap(True, 'escape: xdg-dbus-proxy comparison # SKIP xdg-dbus-proxy or dbus-daemon '
                  'missing')
        return
    lines, logs, activated, err = run_escape(daemon, xdg, tmp, 'escape-xdg')
    ours = dict(l.split(': ', 1) for l in kdbusd_lines)
    theirs = dict(l.split(': ', 1) for l in lines)
    unexplained = ['%s: kdbusd "%s", xdg-dbus-proxy "%s"' % (k, ours.get(k), theirs.get(k))
                   for k in sorted(set(ours) | set(theirs))
                   if ours.get(k) != theirs.get(k) and not difference(k)]
    tap(not unexplained, 'escape: xdg-dbus-proxy on dbus-daemon differs only where recorded',
        '\n'.join(unexplained) + ('\n' + err if unexplained else ''))
    for k in sorted(set(ours) | set(theirs)):
        if ours.get(k) != theirs.get(k):
            print('# recorded difference %s: kdbusd "%s", xdg-dbus-proxy "%s" (%s)'
                  % (k, ours.get(k), theirs.get(k), difference(k)), flush=True)
    tap(not activated, 'escape: xdg-dbus-proxy activated no hidden or SEE-only service either',
        repr(activated))


def main():
    kdbusd, kdbus_proxy, kdbusctl = sys.argv[1:4]
    which = sys.argv[4:]
    tmp = tempfile.mkdtemp(prefix='kdbus-sandbox-')
    os.chmod(tmp, 0o755)
    try:
        if not which or 'escape' in which:
            lines = test_escape(kdbusd, kdbus_proxy, tmp)
            test_escape_proxy(lines, kdbus_proxy, tmp, 'dbus-daemon')
            test_escape_proxy(lines, kdbus_proxy, tmp, 'dbus-broker')
            test_escape_xdg(lines, tmp)
        if not which or 'live' in which:
            test_live(kdbusd, kdbus_proxy, tmp)
            test_log(kdbusd, kdbus_proxy, tmp, 'log-kdbusd')
            test_clients(kdbusd, kdbus_proxy, tmp, 'clients-kdbusd')
            if shutil.which('dbus-daemon'):
                test_clients(shutil.which('dbus-daemon'), kdbus_proxy, tmp, 'clients-daemon')
            if shutil.which('dbus-daemon'):
                test_log(shutil.which('dbus-daemon'), kdbus_proxy, tmp, 'log-daemon')
        if not which or 'flatpak' in which:
            sandbox_flatpak.run(kdbusd, kdbus_proxy, tmp, tap, Bus, Proxy, start_actors)
            if shutil.which('dbus-daemon'):
                sandbox_flatpak.run(shutil.which('dbus-daemon'), kdbus_proxy, tmp, tap, Bus,
                                    Proxy, start_actors, proxied=True)
        if not which or 'unprivileged' in which:
            sandbox_flatpak.run_unprivileged(kdbusd, kdbus_proxy, tmp, tap, Bus, Proxy)
        if not which or 'update' in which:
            sandbox_flatpak.run_update(kdbusd, kdbus_proxy, kdbusctl, tmp, tap, Bus, Proxy)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap(not Proxy.sanitizer_reports, 'no sanitizer report from any proxy process',
        '\n'.join(Proxy.sanitizer_reports))
    print('1..%d' % tap.n)
    return 1 if tap.failed else 0


if __name__ == '__main__':
    sys.exit(main())
