# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The integration harness: starting a bus (kdbusd or the reference dbus-daemon) in a temp
# dir, running client tools, normalizing transcripts, the scenario registry, the named
# exceptions and the TAP runner. The scenarios live in sc_*.py (grouped by topic); itest.py
# imports them and calls main().
#
# Every scenario runs against a freshly started bus and produces a transcript (a list of
# lines: what each client saw, in order). In the main mode (KDBUS_TEST_BUS = path to kdbusd,
# KDBUS_TEST_REF = reference, default dbus-daemon) every scenario runs against BOTH buses
# and the normalized transcripts must be equal; the reference is the specification. With
# KDBUS_TEST_BUS=dbus-daemon the scenarios run once against dbus-daemon, which checks the
# harness itself.
#
# Normalization: unique names (:1.42) are renamed by order of first appearance over the whole
# transcript, GUIDs and the pids/uids of this process and its children are replaced by
# placeholders. Serials never enter a transcript (replies are labelled with the call's member).
#
# Deliberate differences are named exceptions (exception() below, next to the scenario they
# concern): lines matching the exception's regex are taken out of both transcripts before the
# comparison, and on the bus under test each of them must ALSO match the exception's `expect`
# regex, so an exception states what kdbusd does instead and is still checked. Each one is
# documented in docs/differences.md. Keep them rare.
#
# Output is TAP. Processes are started in their own session and killed in `finally`/atexit.

import atexit
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rawbus  # noqa: E402
from rawbus import BUS, Conn, Disconnected  # noqa: E402

PYTHON = '/usr/bin/python3'
LIVE = set()

# scenario name -> [Exception]; filled by exception()
EXCEPTIONS = {}


class Exception_:
    """A deliberate difference: @pattern selects the lines concerned (dropped from both
    transcripts before comparing); @expect must match each of them on the bus under test."""

    def __init__(self, name, pattern, expect, reason):
        self.name = name
        self.pattern = re.compile(pattern)
        self.expect = re.compile(expect) if expect else None
        self.reason = reason


def exception(scenario_name, name, pattern, reason, expect=None):
    EXCEPTIONS.setdefault(scenario_name, []).append(
        Exception_(name, pattern, expect, reason))


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


def is_reference(binary):
    return os.path.basename(binary) in ('dbus-daemon', 'dbus-broker')


class Bus:
    """A bus process in its own temp dir. kind: 'dbus-daemon' or a path to kdbusd."""

    def __init__(self, binary, hermetic=False):
        """@hermetic: start kdbusd with the reference's config file too (same policy and
        limits, no service directories) instead of its built-in --session."""
        self.binary = binary
        self.is_ref = is_reference(binary)
        self.dir = tempfile.mkdtemp(prefix='kdbus-itest-')
        self.sock = os.path.join(self.dir, 'bus')
        self.stderr_path = os.path.join(self.dir, 'stderr')
        self.pids = []
        mode = ['--session']
        if os.path.basename(binary) == 'dbus-daemon' or hermetic:
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
        return self.wait(lambda lines: any(needle in x for x in lines), timeout)

    def wait(self, pred, timeout=10):
        """Reads until pred(self.lines) is true (True) or EOF/timeout (False)."""
        deadline = time.monotonic() + timeout
        while True:
            if pred(self.lines):
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


class GoneWatcher:
    """Waits for the bus to announce that connections are gone (NameOwnerChanged with an
    empty new owner), instead of polling. Create it before the connections close."""

    def __init__(self, ctx):
        self.c = ctx.conn('watcher')
        self.c.bus('AddMatch', 's', ["type='signal',sender='org.freedesktop.DBus',"
                                     "member='NameOwnerChanged'"], quiet=True)
        self.gone = set()

    def wait(self, uniques, timeout=10):
        """Returns the names of @uniques the bus has not announced as gone in time."""
        want = set(uniques)
        deadline = time.monotonic() + timeout
        while want - self.gone:
            m = self.c.recv(deadline - time.monotonic())
            if m is None:
                break
            if m.member == 'NameOwnerChanged' and m.body[2] == '':
                self.gone.add(m.body[0])
        self.c.log = []
        return want - self.gone


class FrozenBus:
    """`with FrozenBus(ctx):` the bus process is stopped (SIGSTOP) while the block runs, so
    what the clients do there (close, connect, send) reaches it at once when it goes on, in
    the order they did it: a bus busy with other work, made deterministic."""

    def __init__(self, ctx):
        self.pid = ctx.bus.proc.pid

    def _state(self):
        with open('/proc/%d/stat' % self.pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0]

    def __enter__(self):
        os.kill(self.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while self._state() != 'T':
            if time.monotonic() > deadline:
                raise TimeoutError('the bus did not stop')
            time.sleep(0.001)
        return self

    def __exit__(self, *exc):
        os.kill(self.pid, signal.SIGCONT)
        return False


def recv_peer(c, timeout=5):
    """Next message not sent by the driver (skips NameAcquired after Hello)."""
    while True:
        m = c.recv(timeout)
        if m is None or m.sender != BUS:
            return m


# ---------------------------------------------------------------------------------------
# registry and runner

SCENARIOS = []  # (name, fn, post)


def scenario(fn=None, *, post=None, builtin_session=False):
    """Registers sc_foo_bar as scenario "foo-bar"; @post(lines) runs after normalization.
    Both buses run with the same config file (REF_SESSION_CONF), except in scenarios with
    @builtin_session, where kdbusd runs with its built-in `--session`."""
    def reg(f):
        f.builtin_session = builtin_session
        SCENARIOS.append((f.__name__.replace('sc_', '', 1).replace('_', '-'), f, post))
        return f
    return reg(fn) if fn else reg


def run_scenario(fn, post, binary):
    bus = Bus(binary, hermetic=not fn.builtin_session)
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
    if post:
        lines = post(lines)
    return lines, problems


def apply_exceptions(name, lines):
    """Returns (kept lines, [(line, Exception_)] dropped)."""
    out = []
    dropped = []
    for line in lines:
        for ex in EXCEPTIONS.get(name, []):
            if ex.pattern.search(line):
                dropped.append((line, ex))
                break
        else:
            out.append(line)
    return out, dropped


def tap_same(n, what, ref, ours):
    """TAP point @n: @ours equals @ref (dbus-daemon's transcript); the differing lines as
    diagnostics. Return: whether they are equal."""
    same = ref == ours
    print('%sok %d - %s' % ('' if same else 'not ', n, what), flush=True)
    if not same:
        for a, b in zip(ref + ['(none)'] * len(ours), ours + ['(none)'] * len(ref)):
            if a != b:
                print('# dbus-daemon: %s\n# kdbusd:      %s' % (a, b))
    return same


def diff(a, b, la, lb):
    import difflib
    return list(difflib.unified_diff(a, b, la, lb, lineterm='', n=2))


def select_scenarios(args):
    """An argument equal to a scenario's name selects that one, else it is a substring."""
    if not args:
        return list(SCENARIOS)
    names = {n for n, _, _ in SCENARIOS}
    return [s for s in SCENARIOS
            if any(s[0] == a if a in names else a in s[0] for a in args)]


def check_registered(args):
    """meson.build registers one test per scenario; this test fails when the two lists
    drift apart (a scenario nobody runs, or a registration without a scenario)."""
    have = [n for n, _, _ in SCENARIOS]
    print('1..1')
    missing = sorted(set(have) - set(args))
    extra = sorted(set(args) - set(have))
    dup = sorted({n for n in have if have.count(n) > 1})
    if missing or extra or dup:
        print('not ok 1 - registrations: not in meson.build %s; no such scenario %s; '
              'duplicate names %s' % (missing, extra, dup))
        return 1
    print('ok 1 - %d scenarios, each registered in meson.build' % len(have))
    return 0


FAKE_BUS = """#!/bin/sh
# a stand-in for kdbusd that prints an address, then reports %s on SIGTERM
trap 'printf "%%s\\n" "%s" >&2; exit %d' TERM
echo "unix:path=$(mktemp -u)"
while :; do sleep 0.05; done
"""


def check_sanitizer_detection():
    """The check at SIGTERM must be able to fail: stand-ins for the bus that report an ASan
    error, a UBSan error, a leak, or exit non-zero must each be flagged."""
    cases = [('ASan', '==1==ERROR: AddressSanitizer: heap-use-after-free', 0),
             ('UBSan', 'proxy/client.c:1:1: runtime error: signed integer overflow', 0),
             ('LSan', '==1==ERROR: LeakSanitizer: detected memory leaks', 0),
             ('exit status', 'nothing', 1),
             ('clean', 'nothing', 0)]
    print('1..%d' % len(cases))
    failed = 0
    d = tempfile.mkdtemp(prefix='kdbus-itest-fake-')
    for i, (what, text, status) in enumerate(cases, 1):
        exe = os.path.join(d, 'kdbusd')
        with open(exe, 'w') as f:
            f.write(FAKE_BUS % (what, text, status))
        os.chmod(exe, 0o755)
        problems = Bus(exe).stop()
        ok = bool(problems) == (what != 'clean')
        failed += not ok
        print('%s %d - %s %s' % ('ok' if ok else 'not ok', i, what,
                                 'flagged' if problems else 'not flagged'))
    subprocess.run(['rm', '-rf', d])
    return 1 if failed else 0


def run_one(name, fn, post, test_bus, ref, compare):
    """Returns (ok, notes)."""
    notes = []
    ok = True
    got, probs = run_scenario(fn, post, test_bus)
    if probs:
        ok = False
        notes += ['%s: %s' % (test_bus, p) for p in probs]
    if compare:
        want, rprobs = run_scenario(fn, post, ref)
        if rprobs:
            ok = False
            notes += ['reference %s: %s' % (ref, p) for p in rprobs]
        g2, gd = apply_exceptions(name, got)
        w2, wd = apply_exceptions(name, want)
        # what an exception expects is what kdbusd does; a reference bus under test (the
        # harness checking itself) just has the lines left out
        for line, ex in ([] if is_reference(test_bus) else gd):
            if ex.expect and not ex.expect.search(line):
                ok = False
                notes.append('exception %s: under test, %r does not match %r'
                             % (ex.name, line, ex.expect.pattern))
        for ex in {ex for _, ex in gd + wd}:
            notes.append('exception %s applied (%s)' % (ex.name, ex.reason))
        if g2 != w2:
            ok = False
            notes += diff(w2, g2, 'reference', 'under-test')
    return ok, notes, got


def main(argv):
    if argv[:1] == ['--check-registered']:
        return check_registered(argv[1:])
    if argv[:1] == ['--check-sanitizer-detection']:
        return check_sanitizer_detection()
    listing = '-l' in argv
    sel = select_scenarios([a for a in argv if not a.startswith('-')])
    if listing:
        for n, _, _ in sel:
            print(n)
        return 0
    if not sel:
        print('1..0 # no scenario matches %s' % argv)
        return 1
    test_bus = os.environ.get('KDBUS_TEST_BUS', 'dbus-daemon')
    ref = os.environ.get('KDBUS_TEST_REF', 'dbus-daemon')
    verbose = os.environ.get('KDBUS_TEST_VERBOSE')
    compare = test_bus != ref
    print('1..%d' % len(sel))
    print('# bus under test: %s; reference: %s' % (test_bus, ref if compare else '(none)'))
    failed = 0
    for i, (name, fn, post) in enumerate(sel, 1):
        t0 = time.monotonic()
        ok, notes, got = run_one(name, fn, post, test_bus, ref, compare)
        if verbose:
            notes += ['transcript: ' + x for x in got]
        failed += not ok
        print('%s %d - %s (%.1fs)' % ('ok' if ok else 'not ok', i, name, time.monotonic() - t0))
        for n in notes:
            for line in str(n).splitlines():
                print('# ' + line)
        sys.stdout.flush()
    return 1 if failed else 0
