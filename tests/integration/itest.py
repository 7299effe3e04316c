#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Integration tests: every scenario runs against a freshly started bus in a temp dir and
# produces a transcript (a list of lines: what each client saw, in order). In the main mode
# (KDBUS_TEST_BUS = path to kdbusd, KDBUS_TEST_REF = reference, default dbus-daemon) every
# scenario runs against BOTH buses and the normalized transcripts must be equal; the reference
# is the specification. With KDBUS_TEST_BUS=dbus-daemon (or unset and no kdbusd) the scenarios
# run once against dbus-daemon, which checks the harness itself.
#
# Normalization: unique names (:1.42) are renamed by order of first appearance over the whole
# transcript, GUIDs and the pids/uids of this process and its children are replaced by
# placeholders. Serials never enter a transcript (replies are labelled with the call's member).
#
# Deliberate differences are EXCEPTIONS below: a regex per scenario; lines matching it are
# dropped from both transcripts before the comparison. Each one is documented in
# docs/differences.md. Keep them rare.
#
# Output is TAP. Processes are started in their own session and killed in `finally`/atexit.
# Usage: itest.py [-l] [scenario-name-substring ...]

import atexit
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rawbus  # noqa: E402
from rawbus import BUS, BUS_PATH, Conn, Disconnected, Message  # noqa: E402

PYTHON = '/usr/bin/python3'
LIVE = set()

# scenario name -> [(regex, reason)]; see docs/differences.md
EXCEPTIONS = {
    'credentials': [(r'^ProcessFD ', 'kdbusd returns ProcessFD (a pidfd); dbus-daemon 1.14 '
                     'does not (docs/differences.md#processfd)')],
}


def _kill_all():
    for p in list(LIVE):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass


atexit.register(_kill_all)


def clean_env():
    env = dict(os.environ)
    for k in ('DBUS_SESSION_BUS_ADDRESS', 'DBUS_STARTER_ADDRESS', 'DBUS_STARTER_BUS_TYPE',
              'DBUS_SYSTEM_BUS_ADDRESS'):
        env.pop(k, None)
    env['DBUS_SYSTEM_BUS_ADDRESS'] = 'unix:path=/nonexistent/kdbus-itest'
    env['LC_ALL'] = 'C'
    env.setdefault('ASAN_OPTIONS', 'detect_leaks=1')
    return env


def popen(argv, **kw):
    kw.setdefault('env', clean_env())
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    LIVE.add(p)
    return p


def run(argv, timeout=20, input=None):
    """Run a client tool; returns (rc, stdout, stderr) as text."""
    p = popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += b'\n<TIMEOUT>'
    finally:
        LIVE.discard(p)
    return p.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


REF_SESSION_CONF = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
  <limit name="max_incoming_bytes">1000000000</limit>
  <limit name="max_incoming_unix_fds">250000000</limit>
  <limit name="max_outgoing_bytes">1000000000</limit>
  <limit name="max_outgoing_unix_fds">250000000</limit>
  <limit name="max_message_size">1000000000</limit>
  <limit name="service_start_timeout">120000</limit>
  <limit name="auth_timeout">240000</limit>
  <limit name="pending_fd_timeout">150000</limit>
  <limit name="max_completed_connections">100000</limit>
  <limit name="max_incomplete_connections">10000</limit>
  <limit name="max_connections_per_user">100000</limit>
  <limit name="max_pending_service_starts">10000</limit>
  <limit name="max_names_per_connection">50000</limit>
  <limit name="max_match_rules_per_connection">50000</limit>
  <limit name="max_replies_per_connection">50000</limit>
</busconfig>
'''


class Bus:
    """A bus process in its own temp dir. kind: 'dbus-daemon' or a path to kdbusd."""

    def __init__(self, binary):
        self.binary = binary
        self.is_ref = os.path.basename(binary) in ('dbus-daemon', 'dbus-broker')
        self.dir = tempfile.mkdtemp(prefix='kdbus-itest-')
        self.sock = os.path.join(self.dir, 'bus')
        self.stderr_path = os.path.join(self.dir, 'stderr')
        self.pids = []
        mode = ['--session']
        if os.path.basename(binary) == 'dbus-daemon':
            # the machine's session.conf minus its service directories and includes: the
            # reference must not depend on what is installed (activatable names)
            conf = os.path.join(self.dir, 'session.conf')
            with open(conf, 'w') as f:
                f.write(REF_SESSION_CONF)
            mode = ['--config-file=' + conf]
        with open(self.stderr_path, 'wb') as err:
            self.proc = popen([binary] + mode + ['--nofork', '--print-address',
                               '--address=unix:path=' + self.sock],
                              stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
        r, _, _ = select.select([self.proc.stdout], [], [], 15)
        line = self.proc.stdout.readline().decode().strip() if r else ''
        if not line:
            self.stop()
            raise RuntimeError('%s did not print its address; stderr: %s'
                               % (binary, self.stderr()))
        self.address = line
        self.pids.append(self.proc.pid)

    def stderr(self):
        try:
            with open(self.stderr_path, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def stop(self):
        """SIGTERM; returns a list of problems (exit status, sanitizer reports)."""
        problems = []
        if self.proc.poll() is not None:
            problems.append('bus exited early with status %s' % self.proc.returncode)
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                problems.append('bus did not exit within 20 s of SIGTERM')
            if not self.is_ref and self.proc.returncode != 0:
                problems.append('bus exit status %s after SIGTERM' % self.proc.returncode)
        try:  # anything the bus left behind in its session (it was started with setsid)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        LIVE.discard(self.proc)
        self.proc.stdout.close()
        if not self.is_ref:
            err = self.stderr()
            for pat in ('AddressSanitizer', 'LeakSanitizer', 'runtime error',
                        'ThreadSanitizer', 'MemorySanitizer'):
                if pat in err:
                    problems.append('sanitizer report in bus stderr (%s):\n%s'
                                    % (pat, err[-4000:]))
                    break
        subprocess.run(['rm', '-rf', self.dir])
        return problems

    def conn(self, **kw):
        return Conn(self.address, **kw)


# ---------------------------------------------------------------------------------------
# normalization

UNIQUE_RE = re.compile(r':\d+\.\d+')
GUID_RE = re.compile(r'\b[0-9a-f]{32}\b')


def normalize(lines, numbers=()):
    """@numbers: {str(number): placeholder} replaced as whole words (pids, uids)."""
    seen = {}

    def uniq(m):
        return seen.setdefault(m.group(0), ':U%d' % len(seen))

    out = []
    for line in lines:
        line = UNIQUE_RE.sub(uniq, line)
        line = GUID_RE.sub('<GUID>', line)
        for num, ph in numbers:
            line = re.sub(r'(?<![\w.])%s(?![\w.])' % re.escape(num), ph, line)
        out.append(line)
    return out


# ---------------------------------------------------------------------------------------
# scenario helpers

class Ctx:
    """What a scenario gets: the bus, a transcript and the numbers to normalize."""

    def __init__(self, bus):
        self.bus = bus
        self.lines = []
        self.conns = []
        self.numbers = [(str(os.getpid()), '<PID>')]
        self.children = []

    def log(self, *parts):
        self.lines += ' '.join(str(p) for p in parts).split('\n')

    def conn(self, name='c', **kw):
        c = self.bus.conn(name=name, **kw)
        self.conns.append(c)
        return c

    def victim_ok(self, victim):
        """The other, already-connected client keeps being served (round trip)."""
        try:
            r = victim.bus('GetNameOwner', 's', [BUS], quiet=True, timeout=5)
            return 'victim-ok' if r.type == rawbus.METHOD_RETURN else 'victim-error'
        except (Disconnected, TimeoutError, OSError) as e:
            return 'victim-FAILED %s' % type(e).__name__

    def cleanup(self):
        for c in self.conns:
            c.close()
        for p in self.children:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
            LIVE.discard(p)


def tool_out(rc, out, err):
    lines = ['rc=%d' % rc]
    lines += ['out: ' + x for x in out.splitlines()]
    lines += ['err: ' + x for x in err.splitlines()]
    return lines


class EchoService(threading.Thread):
    """A raw service on its own connection: Echo returns its args, Fail returns a custom
    error, Exit closes the connection without replying, Sleep never replies."""

    def __init__(self, ctx, name=None):
        super().__init__(daemon=True)
        self.c = ctx.conn('svc')
        if name:
            r = self.c.bus('RequestName', 'su', [name, 4], quiet=True)
            assert r.body == [1], r.describe()
        self.stop_flag = False
        self.start()

    def run(self):
        c = self.c
        try:
            while not self.stop_flag:
                m = c.recv(0.2)
                if m is None or m.type != rawbus.METHOD_CALL:
                    continue
                if m.member == 'Echo':
                    c.reply(m, m.signature, m.body)
                elif m.member == 'Fail':
                    c.error(m, 'com.example.Error.Custom', 'custom failure')
                elif m.member == 'Exit':
                    c.close()
                    return
                elif m.member == 'Sleep':
                    pass
                else:
                    c.error(m, 'org.freedesktop.DBus.Error.UnknownMethod', 'no such method')
        except (Disconnected, OSError, ValueError):
            pass

    def stop(self):
        self.stop_flag = True
        self.join(2)


# ---------------------------------------------------------------------------------------
# scenarios: each takes a Ctx and fills ctx.lines

SCENARIOS = []


def scenario(fn):
    SCENARIOS.append((fn.__name__.replace('sc_', '').replace('_', '-'), fn))
    return fn


def dbus_send(ctx, *args, timeout=20):
    return tool_out(*run(['dbus-send', '--bus=' + ctx.bus.address, '--print-reply'] +
                         list(args), timeout=timeout))


def strip_header_line(lines):
    # "method return time=... sender=... -> destination=... serial=N reply_serial=M"
    out = []
    for x in lines:
        x = re.sub(r' time=[\d.]+', '', x)
        x = re.sub(r' (reply_)?serial=\d+', '', x)
        out.append(x)
    return out


@scenario
def sc_dbus_send(ctx):
    svc = EchoService(ctx, 'com.example.Echo')
    # ListNames: the set of well-known names and the number of unique names
    rc, out, err = run(['dbus-send', '--bus=' + ctx.bus.address, '--print-reply',
                        '--dest=' + BUS, BUS_PATH, BUS + '.ListNames'])
    names = re.findall(r'string "([^"]*)"', out)
    ctx.log('ListNames rc=%d well-known=%s uniques=%d' % (
        rc, sorted(n for n in names if not n.startswith(':')),
        len([n for n in names if n.startswith(':')])))
    rc, out, err = run(['dbus-send', '--bus=' + ctx.bus.address, '--print-reply=literal',
                        '--dest=' + BUS, BUS_PATH, BUS + '.GetId'])
    ctx.log('GetId rc=%d format-ok=%s' % (rc, bool(re.fullmatch(r'\s*[0-9a-f]{32}\s*', out))))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=' + BUS, BUS_PATH,
                                             BUS + '.GetNameOwner', 'string:com.example.Nobody'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=' + BUS, BUS_PATH,
                                             BUS + '.GetNameOwner', 'string:com.example.Echo'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/obj',
                                             'com.example.Echo.Echo', 'string:hello',
                                             'int32:42', 'array:string:a,b'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/obj',
                                             'com.example.Echo.Fail'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Missing', '/obj',
                                             'com.example.Echo.Echo'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/obj',
                                             'com.example.Echo.Exit'))
    svc.stop()
    # the callee exited, so its name is gone
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/obj',
                                             'com.example.Echo.Echo'))
    # a signal and --type=method_call without reply
    ctx.lines += tool_out(*run(['dbus-send', '--bus=' + ctx.bus.address, '--type=signal',
                                '/obj', 'com.example.Sig.Hello', 'string:x']))


@scenario
def sc_gdbus(ctx):
    EchoService(ctx, 'com.example.Echo')
    a = ['gdbus', 'call', '--address', ctx.bus.address]
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    BUS + '.GetNameOwner', BUS]))
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    BUS + '.NameHasOwner', 'com.example.Echo']))
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    BUS + '.GetNameOwner', 'com.example.Nobody']))
    ctx.lines += tool_out(*run(a + ['--dest', 'com.example.Echo', '--object-path', '/o',
                                    '--method', 'com.example.Echo.Echo', 'hi', '7']))
    ctx.lines += tool_out(*run(a + ['--dest', 'com.example.Echo', '--object-path', '/o',
                                    '--method', 'com.example.Echo.Fail']))
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    BUS + '.NoSuchMethod']))
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    'org.freedesktop.DBus.Properties.GetAll', BUS]))
    ctx.lines += tool_out(*run(['gdbus', 'introspect', '--address', ctx.bus.address,
                                '--dest', BUS, '--object-path', BUS_PATH]))
    ctx.lines += tool_out(*run(['gdbus', 'introspect', '--address', ctx.bus.address,
                                '--dest', BUS, '--object-path', '/']))


def busctl_norm(lines):
    out = []
    for x in lines:
        x = re.sub(r'\s+', ' ', x)
        # busctl list: PID and process name of the bus itself differ by construction
        x = re.sub(r'^(out: org\.freedesktop\.DBus) \d+ \S+', r'\1 <BUSPID> <BUSPROC>', x)
        x = re.sub(r'^(out: :U\d+) \d+ ', r'\1 <PID> ', x)
        out.append(x)
    return out


@scenario
def sc_busctl(ctx):
    EchoService(ctx, 'com.example.Echo')
    a = ['busctl', '--address=' + ctx.bus.address, '--no-pager']
    ctx.lines += tool_out(*run(a + ['list', '--no-legend']))
    ctx.lines += tool_out(*run(a + ['call', BUS, BUS_PATH, BUS, 'GetNameOwner', 's', BUS]))
    ctx.lines += tool_out(*run(a + ['call', BUS, BUS_PATH, BUS, 'ListActivatableNames']))
    ctx.lines += tool_out(*run(a + ['call', BUS, BUS_PATH, BUS, 'GetNameOwner', 's',
                                    'com.example.Nobody']))
    ctx.lines += tool_out(*run(a + ['call', 'com.example.Echo', '/o', 'com.example.Echo',
                                    'Echo', 'sas', 'x', '2', 'a', 'b']))
    ctx.lines += tool_out(*run(a + ['introspect', BUS, BUS_PATH]))
    ctx.lines += tool_out(*run(a + ['get-property', BUS, BUS_PATH, BUS, 'Features']))
    ctx.lines += tool_out(*run(a + ['get-property', BUS, BUS_PATH, BUS, 'Interfaces']))
    # credentials of a peer as busctl shows them (from the bus, then /proc of that pid)
    ctx.numbers.append((str(os.getppid()), '<PPID>'))
    ctx.lines += tool_out(*run(a + ['status', 'com.example.Echo']))


def sc_busctl_post(lines):
    return busctl_norm(lines)


@scenario
def sc_dbus_python(ctx):
    p = popen([PYTHON, os.path.join(HERE, 'py-service.py'), ctx.bus.address],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.children.append(p)
    r, _, _ = select.select([p.stdout], [], [], 15)
    ready = p.stdout.readline().decode().strip() if r else ''
    ctx.log('service:', ready)
    rc, out, err = run([PYTHON, os.path.join(HERE, 'py-client.py'), ctx.bus.address], timeout=30)
    ctx.lines += tool_out(rc, out, err)
    ctx.numbers.append((str(p.pid), '<SVCPID>'))


@scenario
def sc_libdbus_client(ctx):
    exe = os.environ.get('KDBUS_TEST_LIBDBUS_CLIENT', os.path.join(HERE, 'client-libdbus'))
    if not os.path.exists(exe):
        ctx.log('SKIP: no client-libdbus')
        return
    svc = EchoService(ctx, 'com.example.Echo')
    other = ctx.conn('other')
    other.bus('RequestName', 'su', ['com.example.Shared', 0], quiet=True)
    p = popen([exe, ctx.bus.address,
               'match', "type='signal',sender='org.freedesktop.DBus'",
               'request', 'com.example.Shared', '0',
               'request', 'com.example.Lib', '4',
               'request', 'com.example.Lib', '0',
               'call', 'com.example.Echo', '/o', 'com.example.Echo', 'Echo', 'hello',
               'call', 'com.example.Echo', '/o', 'com.example.Echo', 'Fail', '',
               'call', 'com.example.Nobody', '/o', 'com.example.Echo', 'Echo', 'x',
               'call', BUS, BUS_PATH, BUS, 'GetConnectionUnixUser', 'com.example.Lib',
               'release', 'com.example.Lib',
               'release', 'com.example.Lib',
               'wait-ready',
               'release', 'com.example.Shared'],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE, bufsize=0)
    ctx.children.append(p)
    # hand the shared name over while the libdbus client waits in the queue
    r, _, _ = select.select([p.stdout], [], [], 15)
    first = []
    while r:
        line = p.stdout.readline().decode()
        if not line:
            break
        first.append(line.rstrip('\n'))
        if line.startswith('ready'):
            break
        r, _, _ = select.select([p.stdout], [], [], 15)
    other.bus('ReleaseName', 's', ['com.example.Shared'], quiet=True)
    p.stdin.write(b'go\n')
    p.stdin.flush()
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    ctx.lines += first + tool_out(p.returncode, out.decode(), err.decode())
    svc.stop()


def monitor_norm(lines):
    out = []
    for x in lines:
        x = re.sub(r' time=[\d.]+', '', x)
        x = re.sub(r' (reply_)?serial=\d+', '', x)
        out.append(x)
    return out


class LineReader:
    """Lines of a child's stdout (opened with bufsize=0), read with a deadline."""

    def __init__(self, f):
        self.f = f
        self.buf = b''
        self.lines = []

    def until(self, needle, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            if any(needle in x for x in self.lines):
                return True
            r, _, _ = select.select([self.f], [], [], max(0, deadline - time.monotonic()))
            if not r:
                return False
            d = os.read(self.f.fileno(), 65536)
            if not d:
                return False
            self.buf += d
            *done, self.buf = self.buf.split(b'\n')
            self.lines += [x.decode('utf-8', 'replace') for x in done]


@scenario
def sc_dbus_monitor(ctx):
    """dbus-monitor (BecomeMonitor, or eavesdropping match rules where that is missing)
    sees a call, its reply, an error and a signal, in order."""
    EchoService(ctx, 'com.example.Echo')
    p = popen(['dbus-monitor', '--address', ctx.bus.address,
               "interface='com.example.Echo'", "sender='com.example.Echo'",
               "destination='com.example.Echo'"],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    ctx.children.append(p)
    out = LineReader(p.stdout)
    c = ctx.conn('client')
    # wait until the monitor is attached: it prints one of our probes
    for _ in range(100):
        c.emit('/o', 'com.example.Echo', 'Probe')
        if out.until('member=Probe', 0.1):
            break
    c.emit('/o', 'com.example.Echo', 'ProbeEnd')
    ok = out.until('member=ProbeEnd')
    ctx.log('monitor attached:', ok)
    out.lines = []
    c.call('com.example.Echo', '/o', 'com.example.Echo', 'Echo', 's', ['hi'])
    c.call('com.example.Echo', '/o', 'com.example.Echo', 'Fail')
    c.emit('/o', 'com.example.Echo', 'Sig', 's', ['sig'])
    c.emit('/o', 'com.example.Echo', 'End')
    ctx.log('monitor saw the end:', out.until('member=End'))
    ctx.lines += monitor_norm(out.lines)


def canonical_xml(text):
    """Introspection XML without its formatting: what a client's parser sees."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        return 'XML-ERROR %s' % e
    out = []

    def walk(el, depth):
        out.append('%s%s%s' % ('  ' * depth, el.tag, sorted(el.attrib.items())))
        for ch in el:
            walk(ch, depth + 1)
    walk(root, 0)
    return '\n'.join(out)


@scenario
def sc_driver_and_replies(ctx):
    """Driver methods with good and bad arguments, and the reply rules: only the callee
    may reply, once, and only to a call that expects a reply."""
    a = ctx.conn('A')
    b = ctx.conn('B')
    a.sync()
    b.sync()
    a.take_log()
    b.take_log()

    def drv(member, sig='', args=(), iface=BUS, path=BUS_PATH, dest=BUS, flags=0):
        r = a.call(dest, path, iface, member, sig, args, quiet=True, flags=flags)
        v = r.error_name or r.body
        if member in ('GetId', 'GetMachineId') and r.type == rawbus.METHOD_RETURN:
            v = 'format-ok' if re.fullmatch(r'[0-9a-f]{32}', r.body[0]) else r.body
        if member == 'GetConnectionStats' and r.type == rawbus.METHOD_RETURN:
            v = 'keys %s' % sorted(r.body[0])  # the counters vary from run to run
        if member == 'Introspect' and r.type == rawbus.METHOD_RETURN:
            v = canonical_xml(r.body[0])
        ctx.log('%s.%s(%s %r) -> %s' % (iface, member, sig, list(args), v))

    drv('GetId')
    drv('GetId', 's', ['extra'])
    drv('NoSuchMethod')
    drv('RequestName', 's', ['com.example.x'])
    drv('RequestName', 'us', [0, 'com.example.x'])
    drv('GetNameOwner', 's', [BUS])
    drv('NameHasOwner', 's', [BUS])
    drv('NameHasOwner', 's', [a.unique])
    drv('NameHasOwner', 's', ['not a name'])
    drv('StartServiceByName', 'su', ['com.example.Nobody', 0])
    drv('StartServiceByName', 'su', [BUS, 0])
    drv('ListActivatableNames')
    drv('Ping', iface='org.freedesktop.DBus.Peer')
    drv('GetMachineId', iface='org.freedesktop.DBus.Peer')
    drv('Get', 'ss', [BUS, 'Features'], iface='org.freedesktop.DBus.Properties')
    drv('Get', 'ss', [BUS, 'Nope'], iface='org.freedesktop.DBus.Properties')
    drv('Get', 'ss', ['com.example.Nope', 'Nope'], iface='org.freedesktop.DBus.Properties')
    drv('Set', 'ssv', [BUS, 'Features', ('as', [])], iface='org.freedesktop.DBus.Properties')
    drv('GetAll', 's', ['com.example.Nope'], iface='org.freedesktop.DBus.Properties')
    drv('Introspect', iface='org.freedesktop.DBus.Introspectable', path='/com/example')
    drv('GetId', path='/other')
    drv('GetId', iface=None)
    drv('Hello', iface=None)
    drv('NoSuchMethod', iface='com.example.Nope')
    drv('ReloadConfig')
    drv('GetConnectionStats', 's', [a.unique], iface='org.freedesktop.DBus.Debug.Stats')
    drv('BecomeMonitor', 'asu', [[], 1], iface='org.freedesktop.DBus.Monitoring')
    a.send(Message(rawbus.METHOD_CALL, path=BUS_PATH, interface=BUS, member='GetId',
                   destination=BUS, flags=rawbus.NO_REPLY_EXPECTED))
    a.sync()
    ctx.log('GetId with NO_REPLY_EXPECTED ->', a.take_log())
    # routing to names nobody owns
    for dest, flags in ((':1.9999', 0), (':1.9999', rawbus.NO_REPLY_EXPECTED),
                        ('com.example.Nobody', rawbus.NO_REPLY_EXPECTED)):
        a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.X', member='Y',
                       destination=dest, flags=flags), label='Y')
        a.sync()
        ctx.log('call to %s flags=%d ->' % (dest, flags), a.take_log())
    for dest in (':1.9999', 'com.example.Nobody'):
        a.emit('/o', 'com.example.X', 'Sig', dest=dest)
        a.sync()
        ctx.log('unicast signal to %s ->' % dest, a.take_log())
    # auto-start flag off (flag 2) to a missing name
    r = a.call('com.example.Nobody', '/o', 'com.example.X', 'Y', flags=2, quiet=True)
    ctx.log('NO_AUTO_START to missing name ->', r.error_name)
    # replies: unrequested, duplicate, from a third party, to a NO_REPLY_EXPECTED call
    c = ctx.conn('C')
    c.sync()
    c.take_log()
    s1 = a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.X', member='Q',
                        destination=b.unique), label='Q')
    call = recv_peer(b)
    ctx.log('B got', call.describe())
    b.reply(call, 's', ['first'])
    b.reply(call, 's', ['second'])
    m = Message(rawbus.METHOD_RETURN, reply_serial=call.serial, destination=a.unique,
                signature='s', body=['third party'])
    c.send(m)
    m = Message(rawbus.METHOD_RETURN, reply_serial=4242, destination=a.unique,
                signature='s', body=['never asked'])
    b.send(m)
    a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.X', member='NR',
                   destination=b.unique, flags=rawbus.NO_REPLY_EXPECTED), label='NR')
    nr = recv_peer(b)
    ctx.log('B got', nr.describe())
    b.reply(nr, 's', ['to no-reply'])
    m = Message(rawbus.ERROR, reply_serial=call.serial, destination=a.unique,
                error_name='com.example.Late', signature='s', body=['late error'])
    b.send(m)
    for x in (a, b, c):
        x.sync()
    ctx.log('A got (sorted: B and C race)', sorted(a.take_log()))
    ctx.log('B got', b.take_log())
    ctx.log('C got', c.take_log())
    _ = s1


# ---- match rules ----------------------------------------------------------------------

MATCH_RULES = [
    "type='signal'",
    "type='method_call'",
    "type='error'",
    "sender='{E}'",
    "sender='com.example.Emitter'",
    "sender='{E2}'",
    "sender='com.example.Nobody'",
    "interface='com.example.I1'",
    "member='M2'",
    "path='/a/b'",
    "path='/a'",
    "path_namespace='/a'",
    "path_namespace='/'",
    "destination='{R}'",
    "destination='{T}'",
    "arg0='foo'",
    "arg0='fo'",
    "arg1='/a/b/'",
    "arg1path='/a/'",
    "arg1path='/a/b/c'",
    "arg1path='/a'",
    "arg0path='/a/b'",
    "arg0path='/a/'",
    "arg0namespace='com.example.foo'",
    "arg0namespace='com.example'",
    "arg0namespace='com.exam'",
    "arg2='z'",
    "type='signal',interface='com.example.I1',member='M2'",
    "type='signal',sender='{E}',path_namespace='/a',arg0='foo'",
    "eavesdrop='true',destination='{T}'",
    "",
]

BAD_RULES = [
    "type='bogus'", "foo='bar'", "arg64='x'", "arg63='x'", "path='not a path'",
    "path_namespace='/a/'", "interface='noDots'", "member='1x'", "sender='a..b'",
    "type='signal',type='signal'", "type='signal'=", "type=signal", "type='signal",
    "path='/a',path_namespace='/a'", "arg0namespace='com..x'", "destination=':x'",
    "eavesdrop='maybe'", "arg0namespace='foo'", "member=''", "x" * 2000,
]


def emit_set(e, e2, r, t):
    """The fixed set of signals each rule is tested against, then a unicast barrier."""
    e.emit('/a/b', 'com.example.I1', 'M1', 'ss', ['foo', '/a/b/'])
    e.emit('/a/c', 'com.example.I2', 'M2', 's', ['bar'])
    e.emit('/x', 'com.example.I1', 'M2', 'ss', ['com.example.foo.bar', '/a/b/c/d'])
    e.emit('/a', 'com.example.I2', 'M3', 'os', ['/a/b', '/a'])
    e.emit('/a/b/c', 'com.example.I1', 'M4', 'sss', ['com.example.foo', 'x', 'z'])
    e.emit('/a/b', 'com.example.I1', 'ToT', 's', ['foo'], dest=t.unique)
    e.emit('/a/b', 'com.example.I1', 'ToR', 's', ['foo'], dest=r.unique)
    e2.emit('/a/b', 'com.example.I1', 'M1', 'ss', ['foo', '/a/b/'])
    e2.emit('/a/b', 'com.example.I1', 'Barrier', '', [], dest=r.unique)
    e.emit('/a/b', 'com.example.I1', 'Barrier', '', [], dest=r.unique)


def drain_until_barriers(r, n=2, timeout=5):
    got = []
    barriers = 0
    while barriers < n:
        m = r.recv(timeout)
        if m is None:
            got.append('TIMEOUT')
            break
        if m.member == 'Barrier':
            barriers += 1
            continue
        got.append(m)
    r.log = []
    return got


def tags(got, names):
    """Received signals as tags, in arrival order per sender (the interleaving of two
    senders' messages is not defined)."""
    t = [sig_tag(m, names) for m in got]
    return ' '.join(sorted(t, key=lambda x: x.split(':')[0]))


def sig_tag(m, names):
    if isinstance(m, str):
        return m
    return '%s:%s%s' % (names.get(m.sender, m.sender), m.member, m.path)


@scenario
def sc_match_rules(ctx):
    e = ctx.conn('E')
    e.bus('RequestName', 'su', ['com.example.Emitter', 4], quiet=True)
    e2 = ctx.conn('E2')
    r = ctx.conn('R')
    t = ctx.conn('T')
    names = {e.unique: 'E', e2.unique: 'E2'}
    for rule in MATCH_RULES:
        rr = rule.format(E=e.unique, E2=e2.unique, R=r.unique, T=t.unique)
        a = r.bus('AddMatch', 's', [rr])
        if a.type == rawbus.ERROR:
            ctx.log('rule %r AddMatch -> %s' % (rule, a.error_name))
            continue
        emit_set(e, e2, r, t)
        got = drain_until_barriers(r)
        ctx.log('rule %r -> %s' % (rule, tags(got, names)))
        rm = r.bus('RemoveMatch', 's', [rr])
        ctx.log('  RemoveMatch ->', rm.error_name or 'ok')
        t.log = []
    # after all removals nothing but the unicast arrives
    emit_set(e, e2, r, t)
    ctx.log('no rules ->', tags(drain_until_barriers(r), names))
    # the same rule twice needs two RemoveMatch; the third says MatchRuleNotFound
    for _ in range(2):
        r.bus('AddMatch', 's', ["member='M2'"])
    emit_set(e, e2, r, t)
    ctx.log('twice ->', tags(drain_until_barriers(r), names))
    for _ in range(3):
        rm = r.bus('RemoveMatch', 's', ["member='M2'"])
        ctx.log('  RemoveMatch ->', rm.error_name or 'ok')
    emit_set(e, e2, r, t)
    ctx.log('removed ->', tags(drain_until_barriers(r), names))
    # a rule equal after parsing but spelt differently is removed by RemoveMatch
    r.bus('AddMatch', 's', ["member='M2',type='signal'"])
    rm = r.bus('RemoveMatch', 's', ["type='signal', member='M2'"])
    ctx.log('reordered RemoveMatch ->', rm.error_name or 'ok')
    for rule in BAD_RULES:
        a = r.bus('AddMatch', 's', [rule])
        ctx.log('bad rule %r -> %s' % (rule[:60], a.error_name or 'accepted'))
        if a.type != rawbus.ERROR:
            r.bus('RemoveMatch', 's', [rule])
        rm = r.bus('RemoveMatch', 's', [rule])
        ctx.log('  RemoveMatch ->', rm.error_name or 'ok')
    ctx.log(ctx.victim_ok(t))


# ---- name ownership -------------------------------------------------------------------

NAME = 'com.example.Queued'


def ownership_step(ctx, conns, label, fn):
    res = fn()
    for c in conns:
        c.sync()
    ctx.log('==', label, '->', res)
    for c in conns:
        for x in c.take_log():
            ctx.log('  %s got %s' % (c.name, x))


@scenario
def sc_name_ownership(ctx):
    a, b, c = ctx.conn('A'), ctx.conn('B'), ctx.conn('C')
    conns = [a, b, c]
    for x in conns:
        x.bus('AddMatch', 's', ["type='signal',sender='org.freedesktop.DBus',"
                                "member='NameOwnerChanged',arg0='%s'" % NAME], quiet=True)

    def req(conn, flags, name=NAME):
        def f():
            r = conn.bus('RequestName', 'su', [name, flags], label='RequestName')
            return '%s RequestName(%s,%d) = %s' % (conn.name, name, flags,
                                                   r.error_name or r.body)
        return f

    def rel(conn, name=NAME):
        def f():
            r = conn.bus('ReleaseName', 's', [name], label='ReleaseName')
            return '%s ReleaseName(%s) = %s' % (conn.name, name, r.error_name or r.body)
        return f

    def queued(name=NAME):
        def f():
            r = a.bus('ListQueuedOwners', 's', [name], quiet=True)
            o = a.bus('GetNameOwner', 's', [name], quiet=True)
            return 'queue=%s owner=%s' % (r.error_name or r.body, o.error_name or o.body)
        return f

    # every flag combination of the owner and of a contender, then of a third in the queue
    for fa in range(8):
        for fb in range(8):
            ownership_step(ctx, conns, 'A %d / B %d' % (fa, fb), req(a, fa))
            ownership_step(ctx, conns, '', req(b, fb))
            ownership_step(ctx, conns, '', req(c, fb ^ 2))
            ownership_step(ctx, conns, '', queued())
            ownership_step(ctx, conns, '', req(a, fa))
            ownership_step(ctx, conns, '', queued())
            for x in (a, b, c):
                ownership_step(ctx, conns, '', rel(x))
            ownership_step(ctx, conns, '', queued())
    # release codes and the queue handing over
    for step in (req(a, 0), req(b, 0), req(c, 4), req(c, 0), queued(), rel(c), rel(c),
                 rel(a, 'com.example.Never'), rel(a, ':1.9999'), queued(), rel(a), queued(),
                 rel(b), queued(), req(a, 8), req(a, 0xffffffff), rel(a), req(a, 1),
                 req(b, 2), req(c, 3), queued()):
        ownership_step(ctx, conns, '', step)
    # names that cannot be owned
    for n in (':1.1', 'org.freedesktop.DBus', 'nodots', 'a..b', '', 'x' * 256, '1a.b',
              'com.example.' + 'é'):
        ownership_step(ctx, conns, '', req(a, 0, n))
        ownership_step(ctx, conns, '', rel(a, n))
    ownership_step(ctx, conns, '', queued('nodots'))
    ownership_step(ctx, conns, '', queued('com.example.Never'))
    # the owner disconnects: the queue moves on, everyone sees it
    gone = b.unique
    b.close()
    deadline = time.monotonic() + 10
    while (a.bus('NameHasOwner', 's', [gone], quiet=True).body == [True] and
           time.monotonic() < deadline):
        time.sleep(0.02)
    c.sync()
    a.sync()
    ctx.log('== B disconnected')
    for x in (a, c):
        for line in x.take_log():
            ctx.log('  %s got %s' % (x.name, line))
    ownership_step(ctx, [a, c], '', queued())


# ---- fds and credentials ----------------------------------------------------------------

def recv_peer(c, timeout=5):
    """Next message not sent by the driver (skips NameAcquired after Hello)."""
    while True:
        m = c.recv(timeout)
        if m is None or m.sender != BUS:
            return m


@scenario
def sc_fd_passing(ctx):
    a = ctx.conn('A', fds=True)
    b = ctx.conn('B', fds=True)
    n = ctx.conn('N')  # no NEGOTIATE_UNIX_FD
    fd = os.memfd_create('kdbus-itest')
    os.write(fd, b'through the bus')
    try:
        s = a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.F',
                           member='Take', destination=b.unique, signature='hsh',
                           body=[0, 'two fds', 1]), fds=[fd, fd])
        m = recv_peer(b)
        ctx.log('B got', m.describe(), 'fds=%d' % len(m.fds))
        for i in m.body[0], m.body[2]:
            ctx.log('  read:', os.pread(m.fds[i], 100, 0))
        ctx.log('  same file:', os.fstat(m.fds[0]).st_ino == os.fstat(fd).st_ino)
        for f in m.fds:
            os.close(f)
        # reply with an fd back
        r = Message(rawbus.METHOD_RETURN, reply_serial=m.serial, destination=a.unique,
                    signature='h', body=[0])
        b.send(r, fds=[fd])
        got = recv_peer(a)
        ctx.log('A got', got.describe({s: 'Take'}), 'fds=%d' % len(got.fds))
        for f in got.fds:
            os.close(f)
        # to a peer that did not negotiate fds
        rr = a.call(n.unique, '/o', 'com.example.F', 'Take', 'h', [0], fds=[fd], timeout=5)
        ctx.log('to non-fd peer ->', rr.describe())
        m = recv_peer(n, 0.3)
        ctx.log('non-fd peer got', m.describe() if m else None)
        # fds to the driver
        rr = a.call(BUS, BUS_PATH, BUS, 'GetId', 'h', [0], fds=[fd])
        ctx.log('fd to driver ->', rr.error_name or 'ok')
        # fd in a signal (broadcast)
        b.bus('AddMatch', 's', ["member='FdSig'"])
        a.send(Message(rawbus.SIGNAL, path='/o', interface='com.example.F', member='FdSig',
                       signature='h', body=[0]), fds=[fd])
        m = recv_peer(b)
        ctx.log('broadcast fd ->', m.describe() if m else None, 'fds=%d' % len(m.fds if m else []))
        ctx.log(ctx.victim_ok(b))
    finally:
        os.close(fd)


@scenario
def sc_credentials(ctx):
    a = ctx.conn('A')
    b = ctx.conn('B')
    a.bus('RequestName', 'su', ['com.example.Cred', 0], quiet=True)
    r = b.bus('GetConnectionCredentials', 's', [a.unique])
    creds = r.body[0] if r.type == rawbus.METHOD_RETURN else {}
    ctx.log('GetConnectionCredentials ->', r.error_name or 'ok')
    for k in sorted(creds):
        sig, v = creds[k]
        if k == 'UnixUserID':
            v = 'real-uid' if v == os.getuid() else v
        elif k == 'ProcessID':
            v = 'real-pid' if v == os.getpid() else v
        elif k == 'UnixGroupIDs':
            v = 'real-groups' if set(v) == set(os.getgroups()) | {os.getgid()} else v
        elif k == 'ProcessFD':
            v = 'pidfd'
        ctx.log(k, sig, v)
    for name in (a.unique, 'com.example.Cred', BUS):
        for m in ('GetConnectionUnixUser', 'GetConnectionUnixProcessID'):
            r = b.bus(m, 's', [name])
            v = r.error_name or r.body
            if r.body == [os.getpid()] and name != BUS:
                v = 'real-pid'
            elif r.body == [os.getuid()] and m == 'GetConnectionUnixUser':
                v = 'real-uid'
            ctx.log(m, name, v)
    for name in ('com.example.Nobody', ':1.9999', 'bad..name'):
        for m in ('GetConnectionUnixUser', 'GetConnectionUnixProcessID',
                  'GetConnectionCredentials', 'GetAdtAuditSessionData',
                  'GetConnectionSELinuxSecurityContext'):
            r = b.bus(m, 's', [name])
            ctx.log(m, name, r.error_name or 'ok')
    r = b.bus('GetConnectionCredentials', 's', [BUS])
    ctx.log('bus credentials keys', sorted(r.body[0]) if r.body else r.error_name)


# ---- malformed input --------------------------------------------------------------------

CUR_SELF = [None]  # the offender's unique name, for messages it sends to itself


def call_bytes(member='GetNameOwner', sig='s', body=(BUS,), fields=None, dest=BUS,
               path=BUS_PATH, iface=BUS, mtype=rawbus.METHOD_CALL, serial=77,
               body_bytes=None, flags=0):
    if dest == '{SELF}':
        dest = CUR_SELF[0]
    if fields is not None:
        fields = [(c, t, CUR_SELF[0] if v == '{SELF}' else v) for c, t, v in fields]
    m = Message(mtype, path=path, interface=iface, member=member, destination=dest,
                signature=sig, body=list(body), flags=flags)
    return bytearray(m.to_bytes(serial, fields=fields, body_bytes=body_bytes))


def std_fields(path=BUS_PATH, iface=BUS, member='GetNameOwner', dest=BUS, sig='s', extra=()):
    f = []
    if path is not None:
        f.append((1, 'o', path))
    if iface is not None:
        f.append((2, 's', iface))
    if member is not None:
        f.append((3, 's', member))
    if dest is not None:
        f.append((6, 's', dest))
    if sig is not None:
        f.append((8, 'g', sig))
    return f + list(extra)


def bad_body(sig, raw):
    return call_bytes(member='Echo', sig=sig, dest='{SELF}', path='/o', iface='com.example.X',
                      body_bytes=raw)


def s_bytes(b):
    return struct.pack('<I', len(b)) + b + b'\0'


def nested(depth):
    return 'a' * depth + 'y'


MALFORMED = [
    ('endianness', lambda: (lambda b: (b.__setitem__(0, ord('x')), b)[1])(call_bytes())),
    ('big-endian-ok', None),
    ('version', lambda: (lambda b: (b.__setitem__(3, 2), b)[1])(call_bytes())),
    ('type-0', lambda: (lambda b: (b.__setitem__(1, 0), b)[1])(call_bytes())),
    ('type-unknown-5', lambda: (lambda b: (b.__setitem__(1, 5), b)[1])(call_bytes())),
    ('serial-0', lambda: call_bytes(serial=0)),
    ('body-length-short', lambda: (lambda b: (struct.pack_into('<I', b, 4, 4), b)[1])(
        call_bytes())),
    ('body-length-long', lambda: (lambda b: (struct.pack_into('<I', b, 4, 200), b)[1])(
        call_bytes())),
    ('body-length-huge', lambda: (lambda b: (struct.pack_into('<I', b, 4, 1 << 28), b)[1])(
        call_bytes())),
    ('utf8-invalid', lambda: bad_body('s', s_bytes(b'\xff\xfe'))),
    ('utf8-overlong', lambda: bad_body('s', s_bytes(b'\xc0\xaf'))),
    ('utf8-surrogate', lambda: bad_body('s', s_bytes(b'\xed\xa0\x80'))),
    ('string-nul-inside', lambda: bad_body('s', s_bytes(b'a\0b'))),
    ('string-no-terminator', lambda: bad_body('s', struct.pack('<I', 3) + b'abcd')),
    ('boolean-2', lambda: bad_body('b', struct.pack('<I', 2))),
    ('padding-nonzero', lambda: bad_body('ys', b'\x01\x01\x00\x00' + s_bytes(b'ok'))),
    ('header-padding-nonzero', 'header-padding'),
    ('signature-incomplete', lambda: bad_body('a', b'\0\0\0\0')),
    ('signature-bad-char', lambda: bad_body('z', b'')),
    ('signature-unbalanced', lambda: bad_body('(i', b'\0' * 4)),
    ('signature-empty-struct', lambda: bad_body('()', b'')),
    ('signature-dict-outside-array', lambda: bad_body('{is}', b'')),
    ('body-without-signature', lambda: call_bytes(fields=std_fields(sig=None),
                                                  body_bytes=s_bytes(b'x'))),
    ('body-trailing-bytes', lambda: bad_body('y', b'\x01\x02')),
    ('missing-member', lambda: call_bytes(fields=std_fields(member=None))),
    ('missing-path', lambda: call_bytes(fields=std_fields(path=None))),
    ('signal-missing-interface', lambda: call_bytes(mtype=rawbus.SIGNAL, fields=std_fields(
        iface=None, dest=None, path='/o', member='Sig'), body=('x',))),
    ('error-missing-name', lambda: call_bytes(mtype=rawbus.ERROR, fields=[(5, 'u', 1),
                                                                          (6, 's', '{SELF}')],
                                              body_bytes=b'', sig='')),
    ('return-missing-reply-serial', lambda: call_bytes(mtype=rawbus.METHOD_RETURN,
                                                       fields=[(6, 's', '{SELF}')],
                                                       body_bytes=b'', sig='')),
    ('field-wrong-type', lambda: call_bytes(fields=std_fields(member=None) +
                                            [(3, 'u', 5)])),
    ('field-unknown-code', lambda: call_bytes(fields=std_fields() + [(99, 's', 'x')])),
    ('field-duplicate', lambda: call_bytes(fields=std_fields() + [(3, 's', 'GetId')])),
    ('member-invalid', lambda: call_bytes(fields=std_fields(member='1abc'))),
    ('member-with-dot', lambda: call_bytes(fields=std_fields(member='a.b'))),
    ('interface-invalid', lambda: call_bytes(fields=std_fields(iface='noDots'))),
    ('interface-double-dot', lambda: call_bytes(fields=std_fields(iface='a..b'))),
    ('path-invalid', lambda: call_bytes(fields=std_fields(path='//x'))),
    ('path-trailing-slash', lambda: call_bytes(fields=std_fields(path='/x/'))),
    ('destination-invalid', lambda: call_bytes(fields=std_fields(dest='a..b'))),
    ('destination-unique-invalid', lambda: call_bytes(fields=std_fields(dest=':'))),
    ('error-name-invalid', lambda: call_bytes(mtype=rawbus.ERROR, fields=[
        (4, 's', 'nodots'), (5, 'u', 1), (6, 's', '{SELF}')], body_bytes=b'', sig='')),
    ('nesting-arrays-33', lambda: bad_body(nested(33), b'\0\0\0\0')),
    ('nesting-arrays-32-ok', lambda: bad_body(nested(32), b'\0\0\0\0')),
    ('nesting-structs-33', lambda: bad_body('(' * 33 + 'y' + ')' * 33, b'\0')),
    ('nesting-variants-65', 'variants'),
    ('array-too-large', lambda: bad_body('ay', struct.pack('<I', (1 << 26) + 1))),
    ('array-length-beyond-body', lambda: bad_body('ay', struct.pack('<I', 100) + b'\0' * 4)),
    ('array-dict-bad-padding', lambda: bad_body('a{yy}', struct.pack('<I', 2) + b'\1\0\0\0'
                                                + b'\1\2')),
    ('fd-index-out-of-range', 'fd-index'),
    ('fd-count-without-fds', lambda: call_bytes(fields=std_fields(
        extra=[(9, 'u', 1)]))),
    ('local-path', lambda: call_bytes(mtype=rawbus.SIGNAL, fields=std_fields(
        path='/org/freedesktop/DBus/Local', iface='com.example.X', member='Disconnected',
        dest=None), body=('x',))),
    ('local-interface', lambda: call_bytes(mtype=rawbus.SIGNAL, fields=std_fields(
        path='/o', iface='org.freedesktop.DBus.Local', member='Disconnected', dest=None),
        body=('x',))),
    ('message-before-hello', 'before-hello'),
    ('second-hello', 'second-hello'),
    ('sasl-line-oversized', 'sasl-long'),
    ('sasl-bad-command', 'sasl-bad'),
    ('sasl-data-before-auth', 'sasl-data'),
    ('sasl-auth-wrong-uid', 'sasl-uid'),
    ('sasl-no-nul-byte', 'sasl-nonul'),
]


def observe(conn, timeout=2.0, linger=0.0):
    """After the attack: send a GetId, read until its reply, an error or EOF. A failed send
    and EOF are the same outcome (which one the client sees first is a race)."""
    out = []
    try:
        conn.send(Message(rawbus.METHOD_CALL, path=BUS_PATH, interface=BUS, member='GetId',
                          destination=BUS), label='probe')
    except OSError:
        pass
    deadline = time.monotonic() + timeout
    try:
        while True:
            m = conn.recv(deadline - time.monotonic())
            if m is None:
                out.append('no-response')
                break
            out.append(m.describe(conn.labels))
            if m.reply_serial is not None and conn.labels.get(m.reply_serial) == 'probe':
                if linger and conn.recv(linger) is None:
                    out.append('still connected')
                break
    except (Disconnected, OSError):
        out.append('DISCONNECTED')
    if conn.unique:
        out = [x.replace(conn.unique, 'OFFENDER') for x in out]
    return out


def sasl_attack(ctx, kind):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(rawbus.socket_path(ctx.bus.address))
    uid = str(os.getuid()).encode().hex().encode()
    if kind == 'sasl-long':
        s.sendall(b'\0AUTH EXTERNAL ' + b'3' * 20000 + b'\r\n')
    elif kind == 'sasl-bad':
        s.sendall(b'\0FOO bar\r\n')
    elif kind == 'sasl-data':
        s.sendall(b'\0DATA 00\r\n')
    elif kind == 'sasl-uid':
        s.sendall(b'\0AUTH EXTERNAL ' + str(os.getuid() + 1).encode().hex().encode() + b'\r\n')
    elif kind == 'sasl-nonul':
        s.sendall(b'AUTH EXTERNAL ' + uid + b'\r\n')
    got = b''
    try:
        while True:
            d = s.recv(4096)
            if not d:
                got += b'<EOF>'
                break
            got += d
            if got.endswith(b'\r\n'):
                break
    except socket.timeout:
        got += b'<no response>'
    except OSError as e:
        got += ('<%s>' % type(e).__name__).encode()
    # is the connection still usable for a normal login afterwards?
    try:
        s.sendall(b'AUTH EXTERNAL ' + uid + b'\r\n')
        d = s.recv(4096)
        after = d.decode('ascii', 'replace').split(' ')[0].strip() if d else '<EOF>'
    except OSError as e:
        after = '<%s>' % type(e).__name__
    s.close()
    txt = got.decode('ascii', 'replace').strip()
    # RST or FIN depends on whether the bus had unread input when it closed: same outcome
    txt = txt.replace('<ConnectionResetError>', '<EOF>')
    # the text after ERROR is free-form; compare the command word only
    txt = re.sub(r'^(ERROR)\b.*', r'\1', txt)
    return ['sasl reply: %s; then AUTH -> %s' % (txt, after)]


def malformed_case(ctx, name, make):
    victim = ctx.conn('victim')
    if make is None:
        off = ctx.conn('offender')
        off.sync()
        off.log = []
        m = Message(rawbus.METHOD_CALL, path=BUS_PATH, interface=BUS, member='GetNameOwner',
                    destination=BUS, signature='s', body=[BUS])
        w = rawbus.Writer()
        w.b += struct.pack('>cBBBII', b'B', 1, 0, 1, 4 + 20 + 1, 5)
        # big-endian header fields by hand
        fields = [(1, 'o', BUS_PATH), (2, 's', BUS), (3, 's', 'GetNameOwner'), (6, 's', BUS),
                  (8, 'g', 's')]
        fb = bytearray()
        for code, sig, v in fields:
            fb += b'\0' * ((-len(fb)) % 8)
            fb += bytes([code, 1]) + sig.encode() + b'\0'
            if sig == 'g':
                fb += bytes([len(v)]) + v.encode() + b'\0'
            else:
                fb += b'\0' * ((-(16 + len(fb))) % 4)
                fb += struct.pack('>I', len(v)) + v.encode() + b'\0'
        body = struct.pack('>I', len(BUS)) + BUS.encode() + b'\0'
        hdr = struct.pack('>cBBBIII', b'B', 1, 0, 1, len(body), 5, len(fb)) + bytes(fb)
        hdr += b'\0' * ((-len(hdr)) % 8)
        off.send_raw(hdr + body)
        off.labels[5] = 'big-endian GetNameOwner'
        res = observe(off)
    elif isinstance(make, str) and make.startswith('sasl'):
        res = sasl_attack(ctx, make)
    elif make == 'before-hello':
        off = ctx.conn('offender', hello=False)
        res = observe(off, linger=1.0)
    elif make == 'second-hello':
        off = ctx.conn('offender')
        off.sync()
        off.log = []
        r = off.bus('Hello')
        res = [r.describe(off.labels).replace(off.unique, 'OFFENDER')] + observe(off)
    else:
        fds = []
        off = ctx.conn('offender', fds=(make == 'fd-index'))
        off.sync()
        off.log = []
        CUR_SELF[0] = off.unique
        if make == 'fd-index':
            m = rawbus.parse_message(bytes(call_bytes(member='Echo', sig='h', body=[3],
                                                      dest=off.unique, path='/o',
                                                      iface='com.example.X')))[0]
            m.fields[rawbus.F_UNIX_FDS] = 1
            data = m.to_bytes(77)
            fds = [os.open('/dev/null', os.O_RDONLY)]
        elif make == 'variants':
            # 65 nested variants of a byte: each level is (g "v") then the inner value
            raw = b''
            for _ in range(64):
                raw += b'\x01v\0'
            raw += b'\x01y\0\x07'
            data = bad_body('v', raw)
        elif make == 'header-padding':
            data = call_bytes()
            flen = struct.unpack_from('<I', data, 12)[0]
            end = 16 + flen
            if end % 8:
                data[end] = 1
            else:
                data = None
        else:
            data = make()
        if data is None:
            res = ['n/a']
        else:
            data = bytes(data)
            try:
                off.send_raw(data, fds)
            except OSError as e:
                res = ['send failed ' + type(e).__name__]
            else:
                res = observe(off)
            for f in fds:
                os.close(f)
    for line in res:
        ctx.log(name + ':', line)
    ctx.log(name + ':', ctx.victim_ok(victim))


@scenario
def sc_malformed(ctx):
    for name, make in MALFORMED:
        malformed_case(ctx, name, make)
    ctx.log(ctx.victim_ok(ctx.conn('last')))


# ---- robustness -------------------------------------------------------------------------

@scenario
def sc_robustness(ctx):
    victim = ctx.conn('victim')
    svc = EchoService(ctx, 'com.example.Echo')
    full = call_bytes(member='Echo', sig='s', body=('x' * 5000,), dest='com.example.Echo',
                      path='/o', iface='com.example.Echo')
    for cut in (1, 8, 16, 40, len(full) - 1):
        off = ctx.conn('off')
        off.send_raw(bytes(full[:cut]))
        off.close()
        ctx.log('cut at %d:' % cut, ctx.victim_ok(victim))
    # mid-SASL
    for data in (b'\0AUTH EXT', b'\0AUTH EXTERNAL 30\r\nBEG', b''):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(rawbus.socket_path(ctx.bus.address))
        s.sendall(data)
        s.close()
        ctx.log('sasl cut %r:' % data, ctx.victim_ok(victim))
    # a caller that leaves before the reply: the service's reply goes nowhere, bus fine
    off = ctx.conn('off')
    off.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.Echo',
                     member='Echo', destination='com.example.Echo', signature='s', body=['x']))
    off.close()
    ctx.log('caller gone:', ctx.victim_ok(victim))
    # a large message both ways (8 MiB string, 4 MiB byte array)
    big = 'x' * (8 << 20)
    r = victim.call('com.example.Echo', '/o', 'com.example.Echo', 'Echo', 'say',
                    [big, b'\x01' * (4 << 20)], timeout=30, quiet=True)
    ctx.log('large echo:', r.type == rawbus.METHOD_RETURN and r.body[0] == big and
            len(r.body[1]) == 4 << 20)
    # many clients at once
    n = 150
    results = [None] * n
    barrier = threading.Barrier(n)

    def one(i):
        try:
            barrier.wait(10)
            c = Conn(ctx.bus.address, name='many%d' % i)
            r = c.bus('GetNameOwner', 's', [BUS], quiet=True)
            results[i] = (c, c.unique, r.type)
        except Exception as e:  # noqa: BLE001 - recorded into the transcript
            results[i] = (None, None, repr(e))

    ths = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(30)
    ok = [r for r in results if r and r[0] is not None and r[2] == rawbus.METHOD_RETURN]
    ctx.log('many clients: %d/%d served, %d distinct unique names' % (
        len(ok), n, len({r[1] for r in ok})))
    errs = sorted({str(r[2]) for r in results if not r or r[0] is None})
    ctx.log('many clients errors:', errs)
    ln = victim.bus('ListNames', quiet=True)
    ctx.log('ListNames counts them:', sum(1 for r in ok if r[1] in ln.body[0]) == len(ok))
    for r in ok:
        r[0].close()
    gone = {r[1] for r in ok}
    deadline = time.monotonic() + 10
    while True:
        ln = victim.bus('ListNames', quiet=True)
        left = gone & set(ln.body[0])
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    ctx.log('after closing, %d of them still listed; ListNames has %d names' % (
        len(left), len(ln.body[0])))
    ctx.log(ctx.victim_ok(victim))
    svc.stop()


# ---------------------------------------------------------------------------------------
# runner

def run_scenario(fn, binary):
    bus = Bus(binary)
    ctx = Ctx(bus)
    ctx.numbers.append((str(bus.proc.pid), '<BUSPID>'))
    problems = []
    try:
        fn(ctx)
    except Exception:  # noqa: BLE001 - a crash of the scenario is a transcript line
        ctx.log('EXCEPTION', traceback.format_exc().strip().splitlines()[-1])
        problems.append(traceback.format_exc())
    finally:
        ctx.cleanup()
        problems += bus.stop()
    lines = normalize(ctx.lines, ctx.numbers)
    post = globals().get('sc_' + fn.__name__[3:] + '_post')
    if post:
        lines = post(lines)
    return lines, problems


def apply_exceptions(name, lines):
    out = []
    dropped = []
    for line in lines:
        for pat, why in EXCEPTIONS.get(name, []):
            if re.search(pat, line):
                dropped.append((line, why))
                break
        else:
            out.append(line)
    return out, dropped


def diff(a, b, la, lb):
    import difflib
    return list(difflib.unified_diff(a, b, la, lb, lineterm='', n=2))


def main(argv):
    listing = '-l' in argv
    filt = [a for a in argv if not a.startswith('-')]
    sel = [(n, f) for n, f in SCENARIOS if not filt or any(x in n for x in filt)]
    if listing:
        for n, _ in sel:
            print(n)
        return 0
    test_bus = os.environ.get('KDBUS_TEST_BUS', 'dbus-daemon')
    ref = os.environ.get('KDBUS_TEST_REF', 'dbus-daemon')
    verbose = os.environ.get('KDBUS_TEST_VERBOSE')
    compare = test_bus != ref
    print('1..%d' % len(sel))
    print('# bus under test: %s; reference: %s' % (test_bus, ref if compare else '(none)'))
    failed = 0
    for i, (name, fn) in enumerate(sel, 1):
        t0 = time.monotonic()
        notes = []
        ok = True
        got, probs = run_scenario(fn, test_bus)
        if probs:
            ok = False
            notes += ['%s: %s' % (test_bus, p) for p in probs]
        if compare:
            want, rprobs = run_scenario(fn, ref)
            if rprobs:
                ok = False
                notes += ['reference %s: %s' % (ref, p) for p in rprobs]
            g2, gd = apply_exceptions(name, got)
            w2, wd = apply_exceptions(name, want)
            for line, why in sorted(set(gd + wd)):
                notes.append('exception: %s (%s)' % (line, why))
            if g2 != w2:
                ok = False
                notes += diff(w2, g2, 'reference', 'under-test')
        if verbose:
            notes += ['transcript: ' + x for x in got]
        failed += not ok
        print('%s %d - %s (%.1fs)' % ('ok' if ok else 'not ok', i, name, time.monotonic() - t0))
        for n in notes:
            for line in str(n).splitlines():
                print('# ' + line)
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
