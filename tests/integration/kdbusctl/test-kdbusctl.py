#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# kdbusctl against real buses. Each scenario (argv[1]) starts kdbusd AND dbus-daemon (the
# reference) with the same hermetic configuration, the same test peers (service.py), runs
# kdbusctl on both, checks each output against what the peers know (unique names, pids,
# uids, queues, echoed values) and then compares the two buses' outputs after replacing
# unique names and pids by their roles. Output: TAP.
#
# Environment: KDBUSCTL (the binary), KDBUS_TEST_BUS (kdbusd), KDBUS_TEST_REF (dbus-daemon;
# unset or equal to KDBUS_TEST_BUS: kdbusd only), TSHARK (for monitor-pcap), BUSCTL.
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KDBUSCTL = os.environ.get('KDBUSCTL', 'kdbusctl')
NAME = 'com.example.KdbusctlTest'
PY = '/usr/bin/python3'

CONF = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
'''

results = []


def check(ok, what, detail=''):
    results.append((bool(ok), what, detail))
    return ok


class Bus:
    def __init__(self, binary):
        self.binary = binary
        self.kind = os.path.basename(binary)
        self.dir = tempfile.mkdtemp(prefix='kdbusctl-test-')
        self.sock = os.path.join(self.dir, 'bus')
        conf = os.path.join(self.dir, 'bus.conf')
        with open(conf, 'w') as f:
            f.write(CONF % self.sock)
        self.err = open(os.path.join(self.dir, 'stderr'), 'w+b')
        self.proc = subprocess.Popen([binary, '--config-file=' + conf, '--nofork',
                                      '--print-address'], stdout=subprocess.PIPE,
                                     stderr=self.err, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        r, _, _ = select.select([self.proc.stdout], [], [], 15)
        self.address = self.proc.stdout.readline().decode().strip() if r else ''
        if not self.address:
            self.stop()
            raise RuntimeError('%s did not print its address: %s' % (binary, self.stderr()))
        self.peers = []

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode(errors='replace')

    def peer(self, *extra):
        p = subprocess.Popen([PY, os.path.join(HERE, 'service.py'), self.address, NAME]
                             + list(extra), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        r, _, _ = select.select([p.stdout], [], [], 15)
        line = p.stdout.readline().decode().split() if r else []
        if len(line) != 2 or line[0] != 'READY':
            p.kill()
            raise RuntimeError('service.py on %s did not start' % self.kind)
        self.peers.append(p)
        return line[1], p.pid

    def stop(self):
        for p in self.peers:
            p.kill()
            p.wait()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.err.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def ctl(bus, *args, timeout=30, address=None):
    p = subprocess.run([KDBUSCTL, '--address=' + (address or bus.address)] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')


class Roles:
    """Replaces unique names and pids by role names so two buses' outputs compare."""

    def __init__(self):
        self.map = []

    def add(self, value, role):
        self.map.append((str(value), role))

    def apply(self, text):
        for value, role in sorted(self.map, key=lambda m: -len(m[0])):
            text = re.sub(r'(?<![\w.:])' + re.escape(value) + r'(?![\w.])', role, text)
        return text


def parse_list(out):
    rows = {}
    lines = out.splitlines()
    if not lines or not lines[0].startswith('NAME'):
        return None
    for line in lines[1:]:
        f = line.split()
        if len(f) == 5:
            rows[f[0]] = {'owner': f[1], 'pid': f[2], 'comm': f[3], 'uid': f[4]}
    return rows


# ---- scenarios: each takes a started bus and returns text to compare across buses ----

def sc_list(bus):
    owner, pid = bus.peer()
    queued, qpid = bus.peer('--queue')
    rc, out, err = ctl(bus, 'list')
    tag = '[%s] list' % bus.kind
    check(rc == 0, tag + ': exit 0', err)
    rows = parse_list(out)
    if not check(rows is not None, tag + ': has a header', out):
        return ''
    row = rows.get(NAME)
    if check(row is not None, tag + ': lists ' + NAME, out):
        check(row['owner'] == owner, tag + ': owner is the primary owner ' + owner, out)
        check(row['pid'] == str(pid), tag + ': pid of the owner', out)
        check(row['comm'] == 'python3', tag + ': comm of the owner', out)
        check(row['uid'] == str(os.getuid()), tag + ': uid of the owner', out)
    for u, p in ((owner, pid), (queued, qpid)):
        r = rows.get(u)
        check(r is not None and r['owner'] == u and r['pid'] == str(p),
              tag + ': lists unique name ' + u, out)
    d = rows.get('org.freedesktop.DBus')
    check(d is not None and d['pid'] == str(bus.proc.pid),
          tag + ': the driver row carries the bus pid', out)
    check(sorted(rows) == sorted(rows), tag + ': sorted', out)
    rc, q, err = ctl(bus, '--quiet', 'list')
    # each run lists itself (another pid): compare without kdbusctl's own row
    def others(lines):
        return [line for line in lines if ' kdbusctl ' not in line]
    check(rc == 0 and others(q.splitlines()) == others(out.splitlines()[1:]),
          tag + ': --quiet drops the header', q)
    roles = Roles()
    roles.add(owner, ':OWNER')
    roles.add(queued, ':QUEUED')
    roles.add(pid, 'PID_OWNER')
    roles.add(qpid, 'PID_QUEUED')
    roles.add(bus.proc.pid, 'PID_BUS')
    # keep only the rows both buses must agree on: the peers' and the well-known names
    keep = [line for line in out.splitlines()[1:]
            if not line.startswith(':') or line.split()[0] in (owner, queued)]
    return '\n'.join(re.sub(r'\s+', ' ', roles.apply(line)).replace('kdbusd', 'BUS')
                     .replace('dbus-daemon', 'BUS') for line in keep)


def sc_status(bus):
    owner, pid = bus.peer()
    queued, qpid = bus.peer('--queue')
    tag = '[%s] status' % bus.kind
    rc, out, err = ctl(bus, 'status')
    check(rc == 0, tag + ': exit 0', err)
    check('Address: ' + bus.address in out, tag + ': names the address', out)
    check(re.search(r'^Id: [0-9a-f]{32}$', out, re.M), tag + ': bus id', out)
    # the peers are the two services and kdbusctl itself
    check(re.search(r'^Peers: 3$', out, re.M), tag + ': 3 peers', out)
    check(re.search(r'^Well-known names: 2$', out, re.M), tag + ': 2 well-known names', out)
    check(re.search(r'^  %s: %s %s$' % (re.escape(NAME), owner, queued), out, re.M),
          tag + ': owner queue, primary first', out)
    stats = re.search(r'^Stats:\n((?:  .*\n)*)', out, re.M)
    check(stats and re.search(r'^  ActiveConnections: u 3$', stats.group(1), re.M),
          tag + ': Debug.Stats.GetStats with ActiveConnections', out)
    bus_keys = sorted(re.findall(r'^  (\w+):', stats.group(1), re.M)) if stats else []

    rc, nout, err = ctl(bus, 'status', NAME)
    check(rc == 0, tag + ' NAME: exit 0', err)
    check('Owner: %s\n' % owner in nout and 'PID: %d\n' % pid in nout and
          'UID: %d\n' % os.getuid() in nout and 'Process: python3\n' in nout,
          tag + ' NAME: owner, pid, uid, process', nout)
    check('Queue %s: %s %s\n' % (NAME, owner, queued) in nout, tag + ' NAME: queue', nout)
    check('  ProcessID: u %d\n' % pid in nout and '  UnixUserID: u %d\n' % os.getuid() in nout,
          tag + ' NAME: credentials', nout)
    cstats = re.search(r'^Stats:\n((?:  .*\n)*)', nout, re.M)
    check(cstats and '  UniqueName: s "%s"\n' % owner in cstats.group(1),
          tag + ' NAME: Debug.Stats.GetConnectionStats of the owner', nout)
    conn_keys = sorted(re.findall(r'^  (\w+):', cstats.group(1), re.M)) if cstats else []

    rc, _, err = ctl(bus, 'status', 'com.example.Nobody')
    check(rc == 1 and 'com.example.Nobody' in err and bus.address in err,
          tag + ' of an unowned name: exit 1, names the name and the bus', err)
    rc, _, err = ctl(bus, 'status', 'not a name')
    check(rc == 2 and 'not a valid bus name' in err, tag + ' of an invalid name: exit 2', err)
    # credentials: a{sv} order is free, compare as a set
    cred = sorted(re.findall(r'^  (\w+): ', nout.split('Credentials:')[1].split('Stats')[0],
                             re.M))
    return 'stats keys: %s\nconnection stats keys: %s\ncredential keys: %s\n' % (
        ' '.join(bus_keys), ' '.join(conn_keys), ' '.join(cred))


CALLS = [
    ('s', ['hello world']),
    ('ybnqiuxtd', ['255', 'true', '-7', '65535', '-2147483648', '4294967295', '-1',
                   '18446744073709551615', '2.5']),
    ('as', ['3', 'a', 'b', 'c']),
    ('a{sv}', ['2', 'Name', 's', 'x', 'Size', 'u', '3']),
    ('(so)av', ['str', '/com/example', '2', 'i', '1', 'as', '1', 'z']),
    ('aay', ['2', '2', '1', '2', '0']),
    ('g', ['a{sv}']),
]


def sc_call(bus):
    owner, _ = bus.peer()
    tag = '[%s] call' % bus.kind
    busctl = os.environ.get('BUSCTL') or shutil.which('busctl')
    transcript = []
    for sig, args in CALLS:
        rc, out, err = ctl(bus, 'call', NAME, '/com/example/Obj', 'com.example.Test.Echo',
                           sig, *args)
        check(rc == 0, '%s %s: exit 0' % (tag, sig), err)
        # the reply printed in argument syntax parses back to the same message
        rc2, out2, err2 = ctl(bus, 'call', NAME, '/com/example/Obj', 'com.example.Test.Echo',
                              *split_printed(out))
        check(rc2 == 0 and out2 == out, '%s %s: the printed reply is valid input' % (tag, sig),
              out + out2 + err2)
        if busctl:
            p = subprocess.run([busctl, '--address=' + bus.address, 'call', '--', NAME,
                                '/com/example/Obj', 'com.example.Test', 'Echo', sig] + args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
            check(p.returncode == 0 and p.stdout.decode() == out,
                  '%s %s: same output as busctl call' % (tag, sig),
                  'busctl: %r\nkdbusctl: %r' % (p.stdout.decode(), out))
        transcript.append(out)
    rc, out, err = ctl(bus, 'call', NAME, '/com/example/Obj', 'com.example.Test.Echo')
    check(rc == 0 and out == '', tag + ' without arguments: empty reply, no output', out + err)
    rc, out, err = ctl(bus, 'call', 'org.freedesktop.DBus', '/org/freedesktop/DBus',
                       'org.freedesktop.DBus.GetNameOwner', 's', NAME)
    check(rc == 0 and out == 's "%s"\n' % owner, tag + ' of the driver: GetNameOwner', out + err)
    rc, out, err = ctl(bus, 'call', NAME, '/com/example/Obj', 'com.example.Test.Fail')
    check(rc == 1 and out == '' and 'com.example.Error.Failed: it failed as asked' in err and
          bus.address in err and NAME in err, tag + ' answered with an error: exit 1, error text',
          err)
    transcript.append('Fail: ' + err.split(': ', 2)[-1])
    rc, out, err = ctl(bus, 'call', 'com.example.Missing', '/', 'com.example.Test.Echo')
    check(rc == 1 and 'org.freedesktop.DBus.Error.ServiceUnknown' in err,
          tag + ' to a missing name: ServiceUnknown, exit 1', err)
    transcript.append('Missing: ' + err.split(': ')[-2] if ': ' in err else err)
    # command-line errors are found before connecting: exit 2 even with a dead address
    dead = 'unix:path=' + os.path.join(bus.dir, 'nothing-here')
    for args, text in (
            (['call', NAME, '/o', 'com.example.Test.Echo', 'u', 'x'], 'argument 1'),
            (['call', NAME, '/o', 'com.example.Test.Echo', 'a{'], 'signature'),
            (['call', NAME, '/o', 'com.example.Test.Echo', 's'], 'missing'),
            (['call', NAME, '/o', 'com.example.Test.Echo', 's', 'a', 'b'], 'argument 2'),
            (['call', NAME, 'no-path', 'com.example.Test.Echo'], 'object path'),
            (['call', NAME, '/o', 'NoDot'], 'INTERFACE.MEMBER'),
            (['call', 'bad name', '/o', 'a.b.C'], 'bus name'),
            (['call', NAME, '/o'], 'expected'),
            (['frobnicate'], 'unknown command'),
    ):
        rc, out, err = ctl(bus, *args, address=dead)
        check(rc == 2 and text in err, '%s usage error %r: exit 2, says %r' % (tag, args, text),
              err)
    rc, out, err = ctl(bus, 'list', address=dead)
    check(rc == 3 and dead in err, tag + ' to a dead address: exit 3, names the address', err)
    rc, out, err = ctl(bus, '--timeout=300', 'call', NAME, '/o', 'com.example.Test.Echo',
                       address=bus.address)
    check(rc == 0, tag + ' with --timeout', err)
    return '\n'.join(transcript)


def split_printed(out):
    """'as 2 "a" "b"' -> ['as', '2', 'a', 'b'] (the strings in the tests have no escapes)."""
    return [t[1:-1] if t.startswith('"') else t
            for t in re.findall(r'"[^"]*"|\S+', out.strip())]


def start_monitor(bus, *args):
    p = subprocess.Popen([KDBUSCTL, '--address=' + bus.address, 'monitor'] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    r, _, _ = select.select([p.stderr], [], [], 15)
    line = p.stderr.readline().decode() if r else ''
    if not line.startswith('Monitoring '):
        p.kill()
        out, err = p.communicate()
        raise RuntimeError('monitor on %s did not start: %s%s' % (bus.kind, line, err.decode()))
    return p


def traffic(bus):
    for args in (['com.example.Test.Echo', 's', 'hello'], ['com.example.Test.Emit'],
                 ['com.example.Test.Fail']):
        ctl(bus, 'call', NAME, '/com/example/Obj', *args)


def sc_monitor_text(bus):
    owner, _ = bus.peer()
    tag = '[%s] monitor' % bus.kind
    m = start_monitor(bus, '--count=4', "interface='com.example.Test'")
    traffic(bus)
    try:
        out, err = m.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        m.kill()
        out, err = m.communicate()
        check(False, tag + ': 4 messages within 20 s', out.decode() + err.decode())
    out = out.decode()
    check(m.returncode == 0, tag + ': exit 0 after --count', err.decode())
    lines = [line for line in out.splitlines() if not line.startswith('  ')]
    summary = [re.sub(r' time=\S+| sender=\S+| serial=\d+', '', line) for line in lines]
    want = ['method_call -> destination=%s path=/com/example/Obj interface=com.example.Test '
            'member=Echo' % NAME,
            'method_call -> destination=%s path=/com/example/Obj interface=com.example.Test '
            'member=Emit' % NAME,
            'signal -> destination=(none) path=/com/example/Obj interface=com.example.Test '
            'member=Ping',
            'method_call -> destination=%s path=/com/example/Obj interface=com.example.Test '
            'member=Fail' % NAME]
    check(summary == want, tag + ': the matched messages, in order', out)
    check('\n  s "hello"\n' in out and '\n  s "pong"\n' in out, tag + ': bodies printed', out)
    check(' sender=%s ' % owner in out, tag + ': the signal carries the sender', out)
    rc, out, err = ctl(bus, 'monitor', "type='bogus'", timeout=20)
    check(rc == 1 and 'BecomeMonitor failed: org.freedesktop.DBus.Error.MatchRuleInvalid' in err
          and bus.address in err, tag + ' with an invalid match rule: exit 1, the bus\'s error',
          err)
    rc, out, err = ctl(bus, 'monitor', '--count=0', timeout=20)
    check(rc == 2 and '--count' in err, tag + ' --count=0: usage error', err)
    summary.append(err.split(': ', 1)[-1] if rc == 2 else '')
    return '\n'.join(summary)


def sc_monitor_pcap(bus):
    tag = '[%s] monitor --pcap' % bus.kind
    bus.peer()
    tshark = os.environ.get('TSHARK') or shutil.which('tshark')
    path = os.path.join(bus.dir, 'capture.pcap')
    m = start_monitor(bus, '--pcap=' + path)
    rc, out, err = ctl(bus, 'call', '--expect-reply=no', '--auto-start=no', NAME,
                       '/com/example/Obj', 'com.example.Test.Echo', 's', 'noreply')
    check(rc == 0 and out == '', tag + ': call --expect-reply=no returns at once, silent', err)
    traffic(bus)
    # the monitor's copy arrives asynchronously: wait for the last message of the traffic
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with open(path, 'rb') as f:
            if b'com.example.Error.Failed' in f.read():
                break
        time.sleep(0.05)
    m.send_signal(signal.SIGTERM)
    out, err = m.communicate(timeout=15)
    check(m.returncode == 0, tag + ': exit 0 on SIGTERM', err.decode())
    with open(path, 'rb') as f:
        data = f.read()
    check(data[:4] == b'\xd4\xc3\xb2\xa1' and data[20:24] == b'\xe7\x00\x00\x00',
          tag + ': pcap header with LINKTYPE_DBUS (231)', repr(data[:24]))
    if not check(tshark, tag + ': tshark installed (tools/dev/deps.sh)'):
        return ''
    p = subprocess.run([tshark, '-r', path, '-T', 'fields', '-E', 'separator=|',
                        '-e', 'frame.protocols', '-e', 'dbus.message_type', '-e', 'dbus.path',
                        '-e', 'dbus.interface', '-e', 'dbus.member', '-e', 'dbus.error_name',
                        '-e', 'dbus.type.string'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    rows = p.stdout.decode().splitlines()
    check(p.returncode == 0 and rows, tag + ': tshark -r reads the file', p.stderr.decode())
    check(all(r.split('|')[0].endswith('dbus') for r in rows),
          tag + ': every record dissected as D-Bus', '\n'.join(rows))
    ours = [r.split('|', 1)[1] for r in rows]
    want = ['1|/com/example/Obj|com.example.Test|Echo||hello', '2|||||hello',
            '1|/com/example/Obj|com.example.Test|Emit||',
            '4|/com/example/Obj|com.example.Test|Ping||pong',
            '3||||com.example.Error.Failed|it failed as asked']
    where = [ours.index(w) if w in ours else -1 for w in want]
    check(-1 not in where and where == sorted(where),
          tag + ': tshark shows the calls, reply, signal and error in order',
          '\n'.join(rows))
    check(not any('NameLost' in r and 'org.freedesktop.DBus' in r for r in rows[:1]),
          tag + ': the monitor\'s own NameLost is not captured', '\n'.join(rows))
    p = subprocess.run([tshark, '-r', path, '-Y', 'dbus.type.string == "noreply"', '-T',
                        'fields', '-e', 'dbus.flags.no_reply_expected',
                        '-e', 'dbus.flags.no_auto_start', '-e', 'dbus.message_type'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    flags = p.stdout.decode().split()
    check(flags[:3] in (['True', 'True', '1'], ['1', '1', '1']),
          tag + ': --expect-reply=no --auto-start=no set both header flags (tshark)',
          p.stdout.decode() + p.stderr.decode())
    p = subprocess.run([tshark, '-r', path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    summary = p.stdout.decode()
    check('D-Bus' in summary and 'Echo()' in summary and 'Ping()' in summary,
          tag + ': tshark summary names D-Bus and the members', summary)
    return '\n'.join(w for w in want if w in ours)


SCENARIOS = {
    'list': sc_list,
    'status': sc_status,
    'call': sc_call,
    'monitor-text': sc_monitor_text,
    'monitor-pcap': sc_monitor_pcap,
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        print('usage: test-kdbusctl.py {%s}' % ','.join(SCENARIOS), file=sys.stderr)
        return 2
    scenario = SCENARIOS[sys.argv[1]]
    buses = [os.environ['KDBUS_TEST_BUS']]
    ref = os.environ.get('KDBUS_TEST_REF')
    if ref and ref != buses[0]:
        buses.append(ref)
    transcripts = []
    for binary in buses:
        bus = Bus(binary)
        try:
            transcripts.append((bus.kind, scenario(bus)))
        except Exception as e:          # a crash of the scenario is a failed test
            check(False, '[%s] %s ran to the end' % (bus.kind, sys.argv[1]), repr(e))
        finally:
            bus.stop()
    if len(transcripts) == 2:
        (ka, ta), (kb, tb) = transcripts
        check(ta == tb, '%s and %s agree on %s' % (ka, kb, sys.argv[1]),
              '--- %s\n%s\n--- %s\n%s' % (ka, ta, kb, tb))
    print('1..%d' % len(results))
    for i, (ok, what, detail) in enumerate(results, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
        if not ok and detail:
            for line in str(detail).splitlines():
                print('# ' + line)
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == '__main__':
    sys.exit(main())
