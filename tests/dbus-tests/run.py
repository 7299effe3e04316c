#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs dbus-daemon's installed tests (Debian's dbus-tests package) against a reference bus
(dbus-daemon) and against kdbusd, and compares.

Every test named by a .test file under /usr/share/installed-tests/dbus runs twice with its Exec=
command line, once with DBUS_TEST_DAEMON pointing at each bus. The tests spawn that program with
dbus-daemon's command line (--session or --config-file=$DBUS_TEST_DATA/..., --nofork,
--print-address=1, --address=unix:tmpdir=..., --systemd-activation; test-dbus-daemon-fork.sh:
--fork --print-address=8 --print-pid=9), which kdbusd accepts as it is. Type=session tests also
get a session bus of the bus under test at $XDG_RUNTIME_DIR/bus (a fresh private directory), so
integration/transient-services.sh runs instead of skipping.

A test that fails on kdbusd and passes on dbus-daemon is run again one GLib test path at a time
(-l lists them, -p runs one) on both buses, so the table names the subtests that differ.

Exit status: 1 when a test passes on dbus-daemon and not on kdbusd, unless known-differences.txt
(beside this file) lists the test, or every subtest that differs; 77 (skip) when the installed
tests are missing; else 0.
"""
import argparse
import fnmatch
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PASS, FAIL, SKIP, TIMEOUT = 'PASS', 'FAIL', 'SKIP', 'TIMEOUT'


def read_test_file(path):
    """The [Test] keys of a .test file (Exec, Type, Output)."""
    keys = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if '=' in line and not line.startswith(('#', '[')):
                k, v = line.split('=', 1)
                keys[k.strip()] = v.strip()
    if 'Exec' not in keys:
        raise SystemExit(f'{path}: no Exec= line; is this an installed-tests file?')
    return keys


def discover(tests_dir):
    """(name, keys) for each .test file, integration/ ones named integration/NAME."""
    found = []
    for root, _, files in os.walk(tests_dir):
        for fn in sorted(files):
            if fn.endswith('.test'):
                rel = os.path.relpath(os.path.join(root, fn), tests_dir)
                found.append((rel[:-len('.test')], read_test_file(os.path.join(root, fn))))
    return sorted(found)


def load_known(path):
    """known-differences.txt: 'TEST [SUBTEST] | AREA | REASON' per line, '#' comments.
    TEST may be a shell glob (test-monitor*). Returns a list of (test, subtest|None, area, reason)."""
    known = []
    if not os.path.exists(path):
        return known
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            parts = [p.strip() for p in line.split('|')]
            if len(parts) != 3 or not all(parts):
                raise SystemExit(f'{path}:{n}: expected "TEST [SUBTEST] | AREA | REASON", '
                                 f'got {line!r}')
            name = parts[0].split()
            if len(name) > 2:
                raise SystemExit(f'{path}:{n}: "{parts[0]}": one test and at most one subtest')
            known.append((name[0], name[1] if len(name) == 2 else None, parts[1], parts[2]))
    return known


def known_entry(known, test, subtest):
    for t, s, area, reason in known:
        if fnmatch.fnmatchcase(test, t) and s == subtest:
            return area, reason
    return None


def tap_verdict(rc, out, timed_out):
    """PASS / FAIL / SKIP / TIMEOUT from the exit status and the TAP stream."""
    if timed_out:
        return TIMEOUT
    lines = out.splitlines()
    if rc != 0 or any(l.startswith(('not ok', 'Bail out!')) and '# TODO' not in l
                      for l in lines):
        return FAIL
    oks = [l for l in lines if l.startswith('ok')]
    plan_skip = any(re.match(r'1\.\.0\b', l) for l in lines)
    if plan_skip or (oks and all(re.search(r'#\s*SKIP', l, re.I) for l in oks)):
        return SKIP
    return PASS


class Bus:
    """A session bus of the bus program under test, for Type=session tests."""

    def __init__(self, program, runtime_dir, log):
        self.address = 'unix:path=' + os.path.join(runtime_dir, 'bus')
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime_dir)
        self.proc = subprocess.Popen(
            [program, '--session', '--nofork', '--print-address=1',
             '--address=' + self.address],
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True)
        line = self.proc.stdout.readline().decode().strip()
        if not line:
            self.stop()
            raise RuntimeError(f'{program} --session printed no address (see its log)')

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


MARK = 'KDBUS_DBUS_TESTS_RUN'


def reap(work):
    """Kills what this run left behind: a test that failed or timed out leaves its buses (some
    forked into their own session, test-dbus-daemon-fork.sh), all carrying MARK=work."""
    me = str(os.getpid())
    want = f'{MARK}={work}'.encode()
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or pid == me:
            continue
        try:
            with open(f'/proc/{pid}/environ', 'rb') as f:
                if want in f.read().split(b'\0'):
                    os.kill(int(pid), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def run_once(name, keys, program, extra_args, timeout, log_path):
    """Runs one test (or one subtest with extra_args) against one bus; returns (verdict, out)."""
    argv = shlex.split(keys['Exec']) + extra_args
    work = tempfile.mkdtemp(prefix='dbus-tests.')
    runtime = os.path.join(work, 'runtime')
    os.mkdir(runtime, 0o700)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('DBUS_') and k not in ('XDG_RUNTIME_DIR',)}
    env.update(DBUS_TEST_DAEMON=program, XDG_RUNTIME_DIR=runtime, TMPDIR=work, **{MARK: work},
               HOME=os.environ.get('HOME', work))
    with open(log_path, 'w') as log:
        log.write(f'# {name} {" ".join(extra_args)} against {program}\n# {shlex.join(argv)}\n')
        log.flush()
        bus = None
        timed_out = False
        try:
            if keys.get('Type') == 'session':
                bus = Bus(program, runtime, log)
                env['DBUS_SESSION_BUS_ADDRESS'] = bus.address
            # output to the log file, not a pipe: a daemon the test leaves behind would hold a
            # pipe open after the test exits
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env, cwd=work,
                                 start_new_session=True)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                log.write(f'\n# runner: timed out after {timeout:.0f}s\n')
            reap(work)
            p.wait()
            log.flush()
            with open(log_path, errors='replace') as f:
                out = f.read()
            rc = p.returncode
        except (RuntimeError, OSError) as e:
            out, rc = f'Bail out! runner: {e}\n', 1
            log.write(out)
        finally:
            if bus:
                bus.stop()
            reap(work)
            shutil.rmtree(work, ignore_errors=True)
    return tap_verdict(rc, out, timed_out), out


def glib_paths(keys):
    """The GLib test paths of a test program, or [] when it is not one (shell scripts)."""
    argv = shlex.split(keys['Exec'])
    prog = next((a for a in argv if a != 'env' and '=' not in a), '')
    try:
        with open(prog, 'rb') as f:
            if f.read(4) != b'\x7fELF':
                return []       # a script would run its test instead of listing anything
    except OSError:
        return []
    try:
        p = subprocess.run(argv + ['-l'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if p.returncode != 0:
        return []
    return [l for l in p.stdout.decode().split() if l.startswith('/')]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--kdbusd', default=os.environ.get('KDBUS_TEST_BUS'), required=
                    'KDBUS_TEST_BUS' not in os.environ, help='kdbusd to test')
    ap.add_argument('--reference', default='/usr/bin/dbus-daemon')
    ap.add_argument('--tests-dir', default='/usr/share/installed-tests/dbus')
    ap.add_argument('--known', default=os.path.join(HERE, 'known-differences.txt'))
    ap.add_argument('--timeout', type=float, default=40, help='seconds per test')
    ap.add_argument('--subtest-timeout', type=float, default=10, help='seconds per subtest')
    ap.add_argument('--log-dir', help='keep each run\'s output here (default: a temp dir)')
    ap.add_argument('--only', action='append', default=[], help='glob of tests to run')
    args = ap.parse_args()

    if not os.path.isdir(args.tests_dir):
        print(f'1..0 # SKIP {args.tests_dir} missing: apt-get install dbus-tests '
              '(tools/dev/deps.sh)')
        return 77
    known = load_known(args.known)
    log_dir = args.log_dir or tempfile.mkdtemp(prefix='dbus-tests-logs.')
    os.makedirs(log_dir, exist_ok=True)
    buses = (('dbus-daemon', args.reference), ('kdbusd', args.kdbusd))
    tests = [(n, k) for n, k in discover(args.tests_dir)
             if not args.only or any(fnmatch.fnmatchcase(n, g) for g in args.only)]

    start = time.monotonic()
    rows, regressions, ref_pass, both_pass = [], [], 0, 0
    for name, keys in tests:
        res, outs = {}, {}
        for label, program in buses:
            log = os.path.join(log_dir, f'{name.replace("/", "_")}.{label}.log')
            t0 = time.monotonic()
            res[label], outs[label] = run_once(name, keys, program, [], args.timeout, log)
            res[label + '-time'] = time.monotonic() - t0
        note = ''
        subrows = []
        ref_ok = res['dbus-daemon'] == PASS
        ref_pass += ref_ok
        if ref_ok and res['kdbusd'] == PASS:
            both_pass += 1
            stale = [f'{t} {sub or ""}' for t, sub, _, _ in known if fnmatch.fnmatchcase(name, t)]
            if stale:
                note = 'passes: drop from known-differences: ' + ', '.join(stale)
        elif ref_ok:
            whole = known_entry(known, name, None)
            # one GLib test path at a time, to name what differs: those the whole run did not
            # report ok, on kdbusd first, and on dbus-daemon only those that fail on kdbusd
            done = set(re.findall(r'^ok \d+ (/\S+)', outs['kdbusd'], re.M))
            differing = []
            for path in glib_paths(keys):
                if path in done:
                    continue
                sub = {}
                for label, program in reversed(buses):
                    log = os.path.join(log_dir, f'{name.replace("/", "_")}{path.replace("/", "_")}'
                                                f'.{label}.log')
                    sub[label], _ = run_once(name, keys, program, ['-p', path],
                                             args.subtest_timeout, log)
                    if sub[label] in (PASS, SKIP):
                        break
                if len(sub) == 2 and sub['kdbusd'] != sub['dbus-daemon']:
                    entry = known_entry(known, name, path)
                    differing.append((path, entry))
                    subrows.append((path, sub['dbus-daemon'], sub['kdbusd'],
                                    f'known: {entry[0]}' if entry else 'DIFFERS'))
            if whole:
                note = f'known: {whole[0]}'
            elif differing and all(e for _, e in differing):
                note = 'known (subtests)'
            else:
                note = 'REGRESSION'
                regressions.append(name)
        rows.append((name, res['dbus-daemon'], res['kdbusd'], note,
                     res['dbus-daemon-time'], res['kdbusd-time']))
        rows.extend(('  ' + p, a, b, n, None, None) for p, a, b, n in subrows)
        print(f'# {name}: dbus-daemon {res["dbus-daemon"]}, kdbusd {res["kdbusd"]} {note}',
              flush=True)

    width = max([len(r[0]) for r in rows] + [4])
    print(f'\n{"test":<{width}}  {"dbus-daemon":<11}  {"kdbusd":<8}  note')
    for name, a, b, note, ta, tb in rows:
        times = f'  ({ta:.1f}s / {tb:.1f}s)' if ta is not None else ''
        print(f'{name:<{width}}  {a:<11}  {b:<8}  {note}{times}')
    print(f'\n{len(tests)} tests; {ref_pass} pass on dbus-daemon; {both_pass} of those pass on '
          f'kdbusd; {len(regressions)} unexplained: {" ".join(regressions) or "none"}')
    print(f'wall time {time.monotonic() - start:.0f}s; logs in {log_dir}')
    return 1 if regressions else 0


if __name__ == '__main__':
    sys.exit(main())
