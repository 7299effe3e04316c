#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Interop of native (kdbus ABI) and legacy (dbus1) peers on one kdbusd (issue #4, point 6),
# with real clients: native-peer (libkdbus, native-peer.c), legacy-peer.py (dbus-python),
# dbus-send, gdbus and busctl. Each scenario gets a fresh kdbusd with --native beside its
# legacy socket; the peers are driven line by line and their answers and events checked.
#
# usage: interop.py KDBUSD NATIVE_PEER [SCENARIO...]     (TAP on stdout)
#
# No sleeps: what must come is waited for (bounded); what must not come is checked with a
# fence: the same sender sends something that must come after it, the receiver waits for
# that, and then the unwanted message must not be among what it got (one sender's messages
# are routed in order; delivery into a native pool is done when the routing is).

import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from harness import PYTHON, REF_SESSION_CONF, LineReader, clean_env, popen, run  # noqa: E402

KDBUSD = NATIVE_PEER = None
LEGACY_PEER = os.path.join(HERE, 'legacy-peer.py')
NOBODY = 65534

# the reference session configuration, open to every uid (the policy scenario adds rules)
OPEN_CONF = REF_SESSION_CONF.replace('<policy context="default">',
                                     '<policy context="default">\n    <allow user="*"/>')


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


class NBus:
    """kdbusd with a legacy and a native socket in a temp dir."""

    def __init__(self, conf=OPEN_CONF):
        self.dir = tempfile.mkdtemp(prefix='kdbus-interop-')
        os.chmod(self.dir, 0o755)       # peers running as nobody connect too
        self.legacy = os.path.join(self.dir, 'legacy')
        self.native = os.path.join(self.dir, 'native')
        self.address = 'unix:path=' + self.legacy
        conf_path = os.path.join(self.dir, 'bus.conf')
        with open(conf_path, 'w') as f:
            f.write(conf)
        self.stderr_path = os.path.join(self.dir, 'stderr')
        with open(self.stderr_path, 'wb') as err:
            self.proc = popen([KDBUSD, '--config-file=' + conf_path, '--nofork', '--print-address',
                               '--address=' + self.address, '--native=unix:path=' + self.native],
                              stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
        r, _, _ = select.select([self.proc.stdout], [], [], 15)
        if not r or not self.proc.stdout.readline():
            raise Fail('kdbusd did not start: ' + self.stderr())
        deadline = time.monotonic() + 10
        while not os.path.exists(self.native):
            check(time.monotonic() < deadline, 'no native socket')
            time.sleep(0.01)
        self.peers = []

    def stderr(self):
        with open(self.stderr_path, errors='replace') as f:
            return f.read()

    def stop(self):
        """SIGTERM; the problems found (exit status, sanitizer reports)."""
        problems = []
        for p in self.peers:
            p.close()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc.returncode != 0:
            problems.append('kdbusd exit status %s' % self.proc.returncode)
        err = self.stderr()
        for pat in ('AddressSanitizer', 'LeakSanitizer', 'runtime error'):
            if pat in err:
                problems.append('sanitizer report in kdbusd stderr:\n' + err[-4000:])
                break
        self.proc.stdout.close()
        subprocess.run(['rm', '-rf', self.dir])
        return problems


class Peer:
    """A line-driven peer process (native-peer or legacy-peer.py)."""

    def __init__(self, bus, argv, what):
        self.what = what
        self.p = popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, bufsize=0)
        self.r = LineReader(self.p.stdout)
        self.n_answers = 0
        bus.peers.append(self)
        check(self.r.wait(lambda lines: any(x.startswith('ready ') for x in lines), 20),
              '%s did not start: %s' % (what, self.r.lines))
        # a native peer says ":1.<id>" (kdbus), a legacy one its Hello name: the same
        # string, as a bus with a native front end numbers every peer kdbus's way
        self.unique = [x for x in self.r.lines if x.startswith('ready ')][0].split()[1]
        self.id = int(self.unique.split('.')[1])

    def cmd(self, line, timeout=20):
        """Send one command; return its answer (the text after "= ")."""
        self.p.stdin.write((line + '\n').encode())
        want = self.n_answers + 1
        ok = self.r.wait(lambda lines: sum(x.startswith('= ') for x in lines) >= want, timeout)
        check(ok, '%s: no answer to %r; output %s' % (self.what, line, self.r.lines[-10:]))
        self.n_answers = want
        return [x for x in self.r.lines if x.startswith('= ')][want - 1][2:]

    def expect(self, line, want):
        got = self.cmd(line)
        check(got == want, '%s: %r answered %r, want %r' % (self.what, line, got, want))

    def events(self):
        return [x for x in self.r.lines if not x.startswith('= ') and not x.startswith('ready ')]

    def wait_event(self, text, timeout=10):
        """Wait for an event line containing @text; return all events so far."""
        ok = self.r.wait(lambda lines: any(text in x for x in lines if not x.startswith('= ')),
                         timeout)
        check(ok, '%s: no event %r; events %s' % (self.what, text, self.events()[-10:]))
        return self.events()

    def close(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except OSError:
                pass
        self.p.wait()


def native(bus, uid=None):
    return Peer(bus, [NATIVE_PEER, bus.native] + (['--uid', str(uid)] if uid else []),
                'native-peer')


def legacy(bus, uid=None):
    return Peer(bus, [PYTHON, LEGACY_PEER, bus.address] + (['--uid', str(uid)] if uid else []),
                'legacy-peer')


def matching(events, prefix):
    return [x for x in events if x.startswith(prefix)]


SCENARIOS = []


def scenario(fn):
    SCENARIOS.append((fn.__name__.replace('sc_', '').replace('_', '-'), fn))
    return fn


# ---------------------------------------------------------------------------------------

@scenario
def sc_native_service_legacy_tools(bus):
    """A native service answers dbus-send, gdbus and busctl; the caller is the legacy
    client (its unique name as SENDER)."""
    svc = native(bus)
    svc.expect('acquire org.example.Native', 'ok 60')
    svc.expect('echo on', 'ok')
    rc, out, err = run(['dbus-send', '--bus=' + bus.address, '--print-reply',
                        '--dest=org.example.Native', '/org/example', 'org.example.Test.Echo',
                        'string:from-dbus-send'])
    check(rc == 0 and 'string "native:from-dbus-send"' in out, 'dbus-send: %s %s' % (out, err))
    rc, out, err = run(['gdbus', 'call', '--address', bus.address, '--dest',
                        'org.example.Native', '--object-path', '/org/example', '--method',
                        'org.example.Test.Echo', 'from-gdbus'])
    check(rc == 0 and out.strip() == "('native:from-gdbus',)", 'gdbus: %s %s' % (out, err))
    rc, out, err = run(['busctl', '--address=' + bus.address, 'call', 'org.example.Native',
                        '/org/example', 'org.example.Test', 'Echo', 's', 'from-busctl'])
    check(rc == 0 and out.strip() == 's "native:from-busctl"', 'busctl: %s %s' % (out, err))
    # (gdbus introspects first: the service answers that too, with a string)
    served = [x for x in matching(svc.wait_event('from-busctl'), 'served ') if ' Echo ' in x]
    check(len(served) == 3, 'served %s' % served)
    for x, arg in zip(served, ('from-dbus-send', 'from-gdbus', 'from-busctl')):
        parts = x.split()
        check(parts[1].startswith(':1.') and parts[1] != svc.unique and parts[2] == 'Echo'
              and parts[3] == arg, 'served line %r' % x)


@scenario
def sc_legacy_service_native_caller(bus):
    """A dbus-python service answers a native SYNC_REPLY call by name; its errors reach
    the native caller as dbus1 errors."""
    svc = legacy(bus)
    svc.expect('serve org.example.Legacy', 'ok')
    n = native(bus)
    n.expect('call org.example.Legacy Echo from-native', 'return legacy:from-native')
    got = n.cmd('call org.example.Legacy Nope x')
    check(got.startswith('error org.freedesktop.DBus.Error.UnknownMethod'), got)
    # by unique name too
    n.expect('call %s Echo by-id' % svc.unique, 'return legacy:by-id')
    n.expect('call org.example.Missing Echo x', 'err ESRCH')


@scenario
def sc_broadcast_native_to_legacy(bus):
    """Native broadcasts reach legacy match rules with exact semantics: arg0/arg1,
    arg0namespace, sender; the fence (a signal every rule matches) comes after."""
    src = native(bus)
    other = native(bus)
    la = legacy(bus)
    lb = legacy(bus)
    lc = legacy(bus)
    fence = "type='signal',interface='org.example.Test',member='Fence'"
    la.expect("match type='signal',interface='org.example.Test',member='Changed',"
              "arg0='yes',arg1='b'", 'ok')
    lb.expect("match type='signal',member='Changed',arg0namespace='org.example'", 'ok')
    lc.expect("match type='signal',member='Changed',sender='%s'" % src.unique, 'ok')
    for lp in (la, lb, lc):
        lp.expect('match ' + fence, 'ok')
    other.expect('signal Changed yes b', 'ok')
    for args in ('yes a', 'yes b', 'no b', 'yesx b', 'org.example.Foo b', 'org.examplefoo b',
                 'org.example b'):
        src.expect('signal Changed ' + args, 'ok')
    src.expect('signal Fence', 'ok')
    want = {
        la: ['Changed yes|b'],
        lb: ['Changed org.example.Foo|b', 'Changed org.example|b'],
        lc: ['Changed ' + a.replace(' ', '|') for a in
             ('yes a', 'yes b', 'no b', 'yesx b', 'org.example.Foo b', 'org.examplefoo b',
              'org.example b')],
    }
    # la matched other's signal too (no sender key): it came before src's
    want[la] = ['Changed yes|b', 'Changed yes|b']
    for lp, w in want.items():
        ev = lp.wait_event('org.example.Test.Fence')
        got = [x.split(' ', 2)[2].replace('org.example.Test.', '').strip() for x in
               matching(ev, 'signal :')]
        check(got == w + ['Fence'], 'legacy %s got %s, want %s' % (lp.unique, got, w))
        senders = {x.split()[1] for x in matching(ev, 'signal :')}
        if lp is lc:
            check(senders == {src.unique}, 'sender rule: %s' % senders)


@scenario
def sc_broadcast_legacy_to_native(bus):
    """Legacy broadcasts reach native match entries: by bloom mask (member, arg0), by
    sender id, by sender well-known name; an entry without rules gets everything."""
    la = legacy(bus)
    lb = legacy(bus)
    n_bloom = native(bus)
    n_id = native(bus)
    n_name = native(bus)
    n_all = native(bus)
    n_bloom.expect('match-bloom 1 member=Changed arg0=yes', 'ok')
    n_bloom.expect('match-bloom 2 member=Fence', 'ok')
    n_id.expect('match-id 1 %d' % la.id, 'ok')
    n_name.expect('match-name 1 org.example.LegacySource', 'ok')
    n_all.expect('match-all 1', 'ok')
    la.expect('request org.example.LegacySource', 'ok 1')
    lb.expect('emit Changed yes', 'ok')         # routed before la's, by the round trip
    la.expect('emit Changed no', 'ok')
    la.expect('emit Changed yes', 'ok')
    la.expect('emit Other yes', 'ok')
    la.expect('emit Fence', 'ok')
    want = {
        n_bloom: [(lb, 'Changed yes'), (la, 'Changed yes'), (la, 'Fence')],
        n_id: [(la, 'Changed no'), (la, 'Changed yes'), (la, 'Other yes'), (la, 'Fence')],
        n_name: [(la, 'Changed no'), (la, 'Changed yes'), (la, 'Other yes'), (la, 'Fence')],
        n_all: [(lb, 'Changed yes'), (la, 'Changed no'), (la, 'Changed yes'),
                (la, 'Other yes'), (la, 'Fence')],
    }
    for n, w in want.items():
        ev = n.wait_event('org.example.Test.Fence')
        got = [x.replace('org.example.Test.', '') for x in matching(ev, 'signal ')]
        w = ['signal %s %s' % (p.unique, s) for p, s in w]
        check(got == w, 'native %s got %s, want %s' % (n.unique, got, w))


@scenario
def sc_bloom_false_positive(bus):
    """Bloom is only a prefilter: a legacy signal whose arguments set every bloom bit of
    arg0='yes' without arg0 being 'yes' passes a native bloom mask (kdbus semantics: the
    native receiver filters) but not a legacy rule arg0='yes' (the exact check)."""
    finder = native(bus)
    fp = finder.cmd('bloom-fp arg0 yes 40')
    check(fp.startswith('fp '), fp)
    strings = fp.split()[1:]
    sender = legacy(bus)
    rule = legacy(bus)
    n = native(bus)
    rule.expect("match type='signal',interface='org.example.Test',member='Changed',"
                "arg0='yes'", 'ok')
    n.expect('match-bloom 1 member=Changed arg0=yes', 'ok')
    sender.expect('emit Changed no ' + ' '.join(strings), 'ok')
    sender.expect('emit Changed yes', 'ok')
    ev = n.wait_event(' yes')
    got = [x.split()[3] for x in matching(ev, 'signal ')]
    check(got == ['no', 'yes'], 'native bloom entry got arg0s %s (the false positive first)'
          % got)
    ev = rule.wait_event('org.example.Test.Changed yes')
    got = [x.split(' ', 2)[2] for x in matching(ev, 'signal :')]
    check(got == ['org.example.Test.Changed yes'], 'legacy rule got %s' % got)


@scenario
def sc_one_name_registry(bus):
    """One name registry: native NAME_ACQUIRE shows in legacy NameOwnerChanged and
    ListNames; legacy RequestName shows as NAME_ADD / NAME_CHANGE / NAME_REMOVE to a native
    watcher; queues span both kinds of peers."""
    watch = native(bus)
    for i, t in enumerate(('name-add', 'name-remove', 'name-change'), 1):
        watch.expect('match-notify %d %s' % (i, t), 'ok')
    lw = legacy(bus)
    lw.expect("match type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',"
              "arg0namespace='org.example'", 'ok')
    n = native(bus)
    lp = legacy(bus)
    # native acquires
    n.expect('acquire org.example.FromNative', 'ok 60')
    lw.wait_event('org.example.FromNative||' + n.unique)
    lw.expect('listnames', 'names org.example.FromNative')
    watch.wait_event('notify NAME_ADD org.example.FromNative 0 %d' % n.id)
    # legacy requests
    lp.expect('request org.example.FromLegacy', 'ok 1')
    watch.wait_event('notify NAME_ADD org.example.FromLegacy 0 %d' % lp.id)
    lw.expect('listnames', 'names org.example.FromLegacy org.example.FromNative')
    # a queue across both: legacy owner, native waiter, handover
    lp.expect('request org.example.Shared', 'ok 1')
    n.expect('acquire org.example.Shared queue', 'ok 4c')
    lp.expect('release org.example.Shared', 'ok 1')
    watch.wait_event('notify NAME_CHANGE org.example.Shared %d %d' % (lp.id, n.id))
    lw.wait_event('org.example.Shared|%s|%s' % (lp.unique, n.unique))
    # releases
    n.expect('release org.example.FromNative', 'ok')
    lw.wait_event('org.example.FromNative|%s|' % n.unique)
    watch.wait_event('notify NAME_REMOVE org.example.FromNative %d 0' % n.id)
    lp.expect('release org.example.FromLegacy', 'ok 1')
    watch.wait_event('notify NAME_REMOVE org.example.FromLegacy %d 0' % lp.id)
    lw.expect('listnames', 'names org.example.Shared')
    lw.wait_event('org.example.FromLegacy|%s|' % lp.unique)
    # the legacy view's order: every NameOwnerChanged, as the names changed
    noc = [x.split(' ', 3)[3] for x in matching(lw.events(), 'signal org.freedesktop.DBus ')
           if 'NameOwnerChanged' in x]
    want = ['org.example.FromNative||' + n.unique,
            'org.example.FromLegacy||' + lp.unique,
            'org.example.Shared||' + lp.unique,
            'org.example.Shared|%s|%s' % (lp.unique, n.unique),
            'org.example.FromNative|%s|' % n.unique,
            'org.example.FromLegacy|%s|' % lp.unique]
    check(noc == want, 'NameOwnerChanged %s, want %s' % (noc, want))


# default deny: sends to the driver, to org.example.Activated and replies only
ACTIVATOR_CONF = '''<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="org.freedesktop.DBus"/>
    <allow send_destination="org.example.Activated"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>'''


@scenario
def sc_activator_legacy_view(bus):
    """Native activators under a default-deny XML policy, seen by legacy clients: each one
    coming and going is an ActivatableServicesChanged, their names are in
    ListActivatableNames, never in NameOwnerChanged (the service appears with old owner "",
    as on dbus-daemon); a dbus-send call to the allowed name waits at the activator (the
    send rules are checked against the name) and is answered by the native service that
    takes the name; one to a denied name gets AccessDenied at once."""
    lw = legacy(bus)
    lw.expect("match type='signal',sender='org.freedesktop.DBus'", 'ok')

    def changed():
        return len([x for x in lw.events() if 'ActivatableServicesChanged' in x])

    act = Peer(bus, [NATIVE_PEER, bus.native, '--activator', 'org.example.Activated'],
               'activator')
    closed = Peer(bus, [NATIVE_PEER, bus.native, '--activator', 'org.example.Closed'],
                  'activator')
    check(lw.r.wait(lambda lines: changed() >= 2, 10), 'events %s' % lw.events())
    rc, out, err = run(['dbus-send', '--bus=' + bus.address, '--print-reply',
                        '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                        'org.freedesktop.DBus.ListActivatableNames'])
    check(rc == 0 and '"org.example.Activated"' in out and '"org.example.Closed"' in out,
          'ListActivatableNames: %s %s' % (out, err))
    rc, out, err = run(['dbus-send', '--bus=' + bus.address, '--print-reply',
                        '--dest=org.example.Closed', '/org/example', 'org.example.Test.Echo',
                        'string:x'])
    check(rc != 0 and 'AccessDenied' in err, 'denied name: %d %s %s' % (rc, out, err))
    closed.expect('peek', 'err EAGAIN')
    call = popen(['dbus-send', '--bus=' + bus.address, '--print-reply',
                  '--dest=org.example.Activated', '/org/example', 'org.example.Test.Echo',
                  'string:from-dbus-send'], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while act.cmd('peek') != 'msg Echo from-dbus-send':
        check(time.monotonic() < deadline, 'the call did not wait at the activator')
        time.sleep(0.02)
    svc = native(bus)
    svc.expect('echo on', 'ok')
    svc.expect('acquire org.example.Activated', 'ok 60')
    out, err = call.communicate(timeout=20)
    check(call.returncode == 0 and b'string "native:from-dbus-send"' in out,
          'dbus-send: %s %s' % (out, err))
    act.expect('peek', 'err EAGAIN')
    svc.expect('release org.example.Activated', 'ok')
    lw.wait_event('org.example.Activated|%s|' % svc.unique)
    act.close()
    check(lw.r.wait(lambda lines: changed() >= 3, 10), 'events %s' % lw.events())
    noc = [x.split(' ', 3)[3] for x in matching(lw.events(), 'signal org.freedesktop.DBus ')
           if 'NameOwnerChanged' in x and 'org.example.' in x]
    want = ['org.example.Activated||' + svc.unique, 'org.example.Activated|%s|' % svc.unique]
    check(noc == want, 'NameOwnerChanged %s, want %s' % (noc, want))


POLICY_CONF = OPEN_CONF.replace('</busconfig>', '''  <policy user="nobody">
    <deny send_destination="org.example.Guarded"/>
    <deny own="org.example.Forbidden"/>
  </policy>
</busconfig>''')


@scenario
def sc_xml_policy_native_senders(bus):
    """The XML policy applies to native senders: a <deny send_destination> for uid nobody
    gives the native sender EPERM (kdbus's errno for a policy refusal, docs/native.md) and
    the legacy one AccessDenied; a <deny own> refuses NAME_ACQUIRE with EPERM; root's
    peers are not concerned."""
    svc = native(bus)
    svc.expect('acquire org.example.Guarded', 'ok 60')
    svc.expect('echo on', 'ok')
    n_nobody = native(bus, uid=NOBODY)
    l_nobody = legacy(bus, uid=NOBODY)
    n_root = native(bus)
    got = l_nobody.cmd('call org.example.Guarded Echo x')
    check(got == 'error org.freedesktop.DBus.Error.AccessDenied', got)
    n_nobody.expect('call org.example.Guarded Echo x', 'err EPERM')
    n_root.expect('call org.example.Guarded Echo x', 'return native:x')
    # own
    n_nobody.expect('acquire org.example.Forbidden', 'err EPERM')
    got = l_nobody.cmd('request org.example.Forbidden')
    check(got == 'error org.freedesktop.DBus.Error.AccessDenied', got)
    n_root.expect('acquire org.example.Forbidden', 'ok 60')
    # nobody's peers may talk to others
    n_nobody.expect('call %s Echo y' % svc.unique, 'err EPERM')   # the owner of Guarded
    other = native(bus)
    other.expect('echo on', 'ok')
    n_nobody.expect('call %s Echo y' % other.unique, 'return native:y')


@scenario
def sc_xml_policy_native_reload(bus):
    """A reloaded policy applies to native peers already connected: ReloadConfig after
    the file gained a <deny send_destination> for nobody turns the native call's answer
    into EPERM, and back."""
    svc = native(bus)
    svc.expect('acquire org.example.Guarded', 'ok 60')
    svc.expect('echo on', 'ok')
    n_nobody = native(bus, uid=NOBODY)
    n_nobody.expect('call org.example.Guarded Echo a', 'return native:a')

    def reload(conf):
        with open(os.path.join(bus.dir, 'bus.conf'), 'w') as f:
            f.write(conf)
        rc, out, err = run(['dbus-send', '--bus=' + bus.address, '--print-reply',
                            '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                            'org.freedesktop.DBus.ReloadConfig'])
        check(rc == 0, 'ReloadConfig: %s %s' % (out, err))

    reload(POLICY_CONF)
    n_nobody.expect('call org.example.Guarded Echo b', 'err EPERM')
    reload(OPEN_CONF)
    n_nobody.expect('call org.example.Guarded Echo c', 'return native:c')


CONNECT_CONF = OPEN_CONF.replace('</busconfig>', '''  <policy context="mandatory">
    <deny user="daemon"/>
  </policy>
</busconfig>''')


@scenario
def sc_xml_policy_native_connect(bus):
    """The policy's connect rules cover native peers: a refused user's HELLO fails EPERM
    and is never announced (and a legacy client of that user is refused too); others
    connect."""
    daemon_uid = 1
    watch = native(bus)
    watch.expect('match-notify 1 id-add', 'ok')
    p = popen([NATIVE_PEER, bus.native, '--uid', str(daemon_uid)], stdin=subprocess.DEVNULL,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=20)
    check(p.returncode == 1 and b'HELLO failed: Operation not permitted' in err,
          'native peer of a refused user: rc %s, %s %s' % (p.returncode, out, err))
    rc, out, err = run(['setpriv', '--reuid=%d' % daemon_uid, '--regid=%d' % daemon_uid,
                        '--clear-groups', 'dbus-send', '--bus=' + bus.address, '--print-reply',
                        '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                        'org.freedesktop.DBus.GetId'])
    check(rc != 0, 'legacy client of a refused user: %s %s' % (out, err))
    n = native(bus, uid=NOBODY)
    n.expect('acquire org.example.Allowed', 'ok 60')
    # the refused peers were never announced: the first ID_ADD is the admitted one's
    ev = watch.wait_event('notify ID_ADD %d' % n.id)
    added = matching(ev, 'notify ID_ADD')
    check(added == ['notify ID_ADD %d' % n.id], 'ID_ADD seen: %s' % added)


BROADCAST_CONF = OPEN_CONF.replace('</busconfig>', '''  <policy context="default">
    <deny send_type="signal" send_interface="org.example.Test" send_member="Denied"/>
  </policy>
</busconfig>''')


@scenario
def sc_xml_policy_native_broadcast(bus):
    """A broadcast the policy denies never fails its native sender (kdbus; dbus-daemon
    answers nobody either); the receiver does not get it, and a monitor sees the signal
    and then the AccessDenied error dbus-daemon makes of the denied copy, from the bus to
    the native sender (bridge_policy_check_copy())."""
    import rawbus
    src = native(bus)
    lp = legacy(bus)
    lp.expect("match type='signal',interface='org.example.Test'", 'ok')
    mon = rawbus.Conn(bus.address, name='monitor')
    mon.call(rawbus.BUS, rawbus.BUS_PATH, 'org.freedesktop.DBus.Monitoring', 'BecomeMonitor',
             'asu', [[], 0])
    src.expect('signal Denied x', 'ok')
    src.expect('signal Fence', 'ok')
    got = matching(lp.wait_event('org.example.Test.Fence'), 'signal :')
    check(len(got) == 1 and 'Fence' in got[0], 'the receiver got %s' % got)
    seen = []
    while True:
        m = mon.recv(timeout=2.0)
        if m is None:
            break
        if m.sender == src.unique or m.destination == src.unique:
            seen.append(m)
        if m.member == 'Fence':
            break
    mon.close()
    kinds = [(m.type, m.member or m.error_name, m.sender, m.destination) for m in seen]
    want = [(rawbus.SIGNAL, 'Denied', src.unique, None),
            (rawbus.ERROR, 'org.freedesktop.DBus.Error.AccessDenied', rawbus.BUS, src.unique),
            (rawbus.SIGNAL, 'Fence', src.unique, None)]
    check(kinds == want, 'the monitor saw %s, want %s' % (kinds, want))
    check(seen[1].reply_serial == seen[0].serial, 'the error answers the signal')
    check(seen[1].body[0].startswith('Rejected send message, ') and
          'destination="org.freedesktop.DBus"' in seen[1].body[0], seen[1].body[0])


@scenario
def sc_unique_names_agree(bus):
    """One numbering for every peer on a bus with native peers: a legacy peer's Hello name
    is the name native peers see as its SENDER and in CONN_INFO, GetNameOwner answers the
    same string on both sides, and a unique name passed inside a message body names the same
    connection whoever reads it (GetConnectionUnixProcessID, CONN_INFO)."""
    first = legacy(bus)                 # the bus's first connection
    n = native(bus)
    svc = legacy(bus)
    check(first.unique == ':1.1', 'the first connection is %s, want :1.1 (kdbus numbering, '
          'as native peers form it from id 1)' % first.unique)
    check(n.unique == ':1.2' and svc.unique == ':1.3', 'names %s %s' % (n.unique, svc.unique))
    check(n.cmd('acquire org.example.N').startswith('ok '), 'the native peer owns its name')
    n.expect('echo on', 'ok')
    svc.expect('serve org.example.L', 'ok')
    # GetNameOwner (legacy) and CONN_INFO (native) agree, for either kind of owner
    svc.expect('owner org.example.N', 'owner ' + n.unique)
    first.expect('owner org.example.L', 'owner ' + svc.unique)
    n.expect('info org.example.L', 'info %s %d' % (svc.unique, svc.p.pid))
    # a legacy peer's Hello name, used by a native peer, is that peer (CONN_INFO by id)
    for p in (first, svc):
        n.expect('info ' + p.unique, 'info %s %d' % (p.unique, p.p.pid))
    # legacy -> native: the native peer reads the caller's SENDER as the name the caller
    # passed in the body (its own Hello name)
    svc.expect('call org.example.N Echo ' + svc.unique, 'return native:' + svc.unique)
    served = matching(n.wait_event('Echo ' + svc.unique), 'served ')
    check(served == ['served %s Echo %s' % (svc.unique, svc.unique)], 'served %s' % served)
    # native -> legacy: a native peer's name passed in a body, as a service would store its
    # caller's name and pass it on: the driver, asked by any legacy peer, names the native
    # peer's process
    n.expect('call org.example.L Echo ' + n.unique, 'return legacy:' + n.unique)
    for p in (svc, first):
        p.expect('pid ' + n.unique, 'pid %d' % n.p.pid)
    first.expect('pid ' + svc.unique, 'pid %d' % svc.p.pid)
    n.expect('info ' + n.unique, 'info %s %d' % (n.unique, n.p.pid))


SCENARIO_CONF = {'activator-legacy-view': ACTIVATOR_CONF,
                 'xml-policy-native-senders': POLICY_CONF,
                 'xml-policy-native-connect': CONNECT_CONF,
                 'xml-policy-native-broadcast': BROADCAST_CONF}


def main(argv):
    global KDBUSD, NATIVE_PEER
    KDBUSD, NATIVE_PEER = argv[0], argv[1]
    sel = [s for s in SCENARIOS if not argv[2:] or s[0] in argv[2:]]
    print('1..%d' % len(sel))
    failed = 0
    for i, (name, fn) in enumerate(sel, 1):
        t0 = time.monotonic()
        notes = []
        bus = None
        try:
            bus = NBus(SCENARIO_CONF.get(name, OPEN_CONF))
            fn(bus)
        except Exception:  # noqa: BLE001 - a failed check or a crash fails the scenario
            notes.append(traceback.format_exc())
        finally:
            if bus:
                notes += bus.stop()
        failed += bool(notes)
        print('%s %d - %s (%.1fs)' % ('not ok' if notes else 'ok', i, name,
                                      time.monotonic() - t0))
        for n in notes:
            for line in str(n).splitlines():
                print('# ' + line)
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == '__main__':
    os.environ.update(clean_env())
    sys.exit(main(sys.argv[1:]))
