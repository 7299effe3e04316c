#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The bus started the way a distribution starts dbus-daemon, by the real launchers, unchanged:
# each scenario runs in a private mount namespace (unshare -m) where the bus under test is
# bind-mounted over /usr/bin/dbus-daemon, the path every launcher runs (dbus-run-session
# from PATH, dbus-launch and at-spi-bus-launcher by that absolute path, Debian's
# /etc/init.d/dbus as DAEMON=). The same scenarios run with the real dbus-daemon and the
# transcripts are compared:
#
#   run-session          dbus-run-session -- PROBE: the bus's command line, the address it
#                        gives, the bus serves, PROBE's exit status comes back, the bus is
#                        gone afterwards
#   run-session-options  dbus-run-session --dbus-daemon=BUS --config-file=FILE
#   launch-*             dbus-launch with no X display: plain, --sh-syntax (evaluated by sh),
#                        --csh-syntax, --binary-syntax, dbus-launch PROGRAM, and
#                        --exit-with-session (the bus goes when dbus-launch's stdin closes)
#   at-spi               at-spi2's bus launcher, activated on a session bus by GetAddress as a
#                        desktop does: it starts the accessibility bus, which activates
#                        at-spi2-registryd (which must find the session bus again)
#   init-script          /etc/init.d/dbus start, status, reload, stop on a private /run/dbus:
#                        --system with <fork/>, the pid file, the <user>, the socket
#   system-fork          `BUS --system --fork --print-pid` by hand: SIGTERM, then the pid file
#
#   launch-x11           dbus-launch with an X server (Xvfb): --autolaunch=MACHINE_ID starts
#                        the bus and publishes it on the display, a second --autolaunch finds
#                        that same bus, --exit-with-x11 starts another; when the X server
#                        goes, both buses go (the babysitter watches the display)
# Every process the scenario leaves is re-parented to the scenario's runner (a subreaper)
# and killed at its end. Needs root (mount namespaces); TAP output.
#
# Usage: launchers.py KDBUSD [DBUS_DAEMON]

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402
from sysutil import rawbus, proc_stat, gone, cmdline, descendants  # noqa: E402

HERE = os.path.abspath(__file__)
DAEMON = '/usr/bin/dbus-daemon'
AT_SPI_LAUNCHER = '/usr/libexec/at-spi-bus-launcher'
INIT_SCRIPT = '/etc/init.d/dbus'


# ---- helpers of the scenarios (run inside the namespace) ----

def bus_facts(address, timeout=20):
    """What a client sees of the bus at @address: it serves, and the driver's own name."""
    c = rawbus.Conn(address)
    try:
        r = c.bus('ListNames', timeout=timeout)
        names = sorted(n for n in r.body[0] if not n.startswith(':'))
        return 'serves, names %s' % ','.join(names)
    finally:
        c.close()


def is_bus(pid):
    """@pid runs what /usr/bin/dbus-daemon is here (the bus under test)."""
    try:
        return os.stat('/proc/%d/exe' % pid).st_ino == os.stat(DAEMON).st_ino
    except OSError:
        return False


def bus_processes():
    """The buses running now (all descend from the reaper)."""
    return [p for p in descendants(os.getppid()) if is_bus(p)]


def probe(out):
    """Run by a launcher as its session's program: what the session looks like from inside."""
    facts = {'env': sorted(k for k in os.environ if k.startswith('DBUS_'))}
    addr = os.environ.get('DBUS_SESSION_BUS_ADDRESS', '')
    facts['address'] = addr
    try:
        facts['bus'] = bus_facts(addr)
    except Exception as e:  # noqa: BLE001 -- recorded, compared
        facts['bus'] = 'failed: %s' % type(e).__name__
    with open(out, 'w') as f:
        json.dump(facts, f)
    return int(os.environ.get('PROBE_EXIT', '0'))


class Scenario:
    def __init__(self, d):
        self.d = d
        self.lines = []
        self.names = {}

    def norm(self, text):
        text = str(text).replace(self.d, 'DIR')
        text = re.sub(r'DIR/dbus-[A-Za-z0-9]{10}', 'DIR/dbus-X', text)
        text = re.sub(r'guid=[0-9a-f]{32}', 'guid=G', text)
        text = re.sub(r'/tmp/dbus-[A-Za-z0-9]{10}', '/tmp/dbus-X', text)
        for pid, name in self.names.items():
            text = re.sub(r'\b%d\b' % pid, name, text)
        return text

    def add(self, what, value):
        self.lines.append('%s: %s' % (what, self.norm(value)))

    def name_pid(self, pid, name):
        if pid and pid > 0:
            self.names[pid] = name

    def probe_run(self, argv, env=None, exit_code=0, stdin=subprocess.DEVNULL):
        out = os.path.join(self.d, 'probe.json')
        if os.path.exists(out):
            os.unlink(out)
        e = dict(os.environ, PROBE_EXIT=str(exit_code), **(env or {}))
        r = subprocess.run(argv + [sys.executable, HERE, '--probe', out], env=e, stdin=stdin,
                           capture_output=True, text=True, timeout=120)
        try:
            with open(out) as f:
                facts = json.load(f)
        except (OSError, ValueError):
            facts = {}
        return r, facts

    def bus_gone(self, pids):
        return all(gone(p) for p in pids)


def sc_run_session(s):
    """dbus-run-session -- PROBE, as a login or a test harness runs it."""
    r, facts = s.probe_run(['dbus-run-session', '--'], exit_code=7)
    s.add('exit status (PROBE exits 7)', r.returncode)
    # the session's stderr is the user's terminal: the bus adds nothing to it when it is
    # stopped (dbus-daemon's warning that it cannot raise its fd limit, where setrlimit is
    # refused, is about this machine)
    s.add('stderr', [line for line in r.stderr.splitlines()
                     if 'Failed to set fd limit' not in line])
    s.add('inside: DBUS_* variables', facts.get('env'))
    s.add('inside: address', facts.get('address'))
    s.add('inside: the bus', facts.get('bus'))
    s.add('buses left running', len(bus_processes()))
    # the command line it ran, seen from a second run whose program looks at its parent
    sh = ('for p in /proc/[0-9]*; do [ "$(awk \'{print $4}\' $p/stat 2>/dev/null)" = $PPID ] '
          '&& [ "$p" != /proc/$$ ] && tr "\\0" " " < $p/cmdline && echo; done')
    r = subprocess.run(['dbus-run-session', '--', 'sh', '-c', sh], capture_output=True,
                       text=True, timeout=60)
    s.add('the bus command line', r.stdout.strip())


def sc_run_session_options(s):
    conf = sysutil.write_conf(s.d, 'unix:dir=' + s.d)
    r, facts = s.probe_run(['dbus-run-session', '--dbus-daemon=' + DAEMON,
                            '--config-file=' + conf, '--'])
    s.add('exit status', r.returncode)
    s.add('inside: address', facts.get('address'))
    s.add('inside: the bus', facts.get('bus'))
    s.add('buses left running', len(bus_processes()))


def parse_vars(text):
    return dict(re.findall(r"(DBUS_SESSION_BUS_\w+)[= ]'?([^';\n]*)'?", text))


def launch_check(s, what, text, returncode):
    """A dbus-launch output: the variables, the bus at the address, DBUS_SESSION_BUS_PID."""
    v = parse_vars(text)
    pid = int(v.get('DBUS_SESSION_BUS_PID', '0') or 0)
    s.name_pid(pid, 'BUSPID')
    s.add(what + ': exit', returncode)
    s.add(what + ': output', text.strip())
    try:
        s.add(what + ': the bus', bus_facts(v.get('DBUS_SESSION_BUS_ADDRESS', '')))
    except Exception as e:  # noqa: BLE001
        s.add(what + ': the bus', 'failed: %s' % type(e).__name__)
    st = proc_stat(pid) if pid else None
    s.add(what + ': DBUS_SESSION_BUS_PID is the bus, daemonized',
          bool(st) and is_bus(pid) and st[0] == os.getppid())
    s.add(what + ': the command line', ' '.join(cmdline(pid)))
    if pid:
        os.kill(pid, signal.SIGTERM)
        s.add(what + ': gone after SIGTERM', s.bus_gone([pid]))


def sc_launch(s):
    env = dict(os.environ)
    for flags in ([], ['--sh-syntax'], ['--csh-syntax']):
        r = subprocess.run(['dbus-launch'] + flags, env=env, capture_output=True, text=True,
                           timeout=60)
        launch_check(s, 'dbus-launch ' + ' '.join(flags), r.stdout, r.returncode)
    # --binary-syntax: the address up to a NUL, then the pid and the window id as longs
    r = subprocess.run(['dbus-launch', '--binary-syntax'], env=env, capture_output=True,
                       timeout=60)
    addr, _, rest = r.stdout.partition(b'\0')
    pid = int.from_bytes(rest[:8], sys.byteorder) if len(rest) >= 8 else 0
    launch_check(s, 'dbus-launch --binary-syntax', 'DBUS_SESSION_BUS_ADDRESS=%s\n'
                 'DBUS_SESSION_BUS_PID=%d\ntrailing bytes %d' % (addr.decode(), pid, len(rest)),
                 r.returncode)


def sc_launch_sh_eval(s):
    """The way a shell profile uses it: eval "$(dbus-launch --sh-syntax)", then clients."""
    env = dict(os.environ)
    out = os.path.join(s.d, 'probe.json')
    r = subprocess.run(['sh', '-c', 'eval "$(dbus-launch --sh-syntax)" && "$@"; st=$?; '
                        'kill $DBUS_SESSION_BUS_PID; echo "pid $DBUS_SESSION_BUS_PID"; exit $st',
                        'sh', sys.executable, HERE, '--probe', out], env=env,
                       capture_output=True, text=True, timeout=60)
    with open(out) as f:
        facts = json.load(f)
    pid = int(r.stdout.split()[-1]) if r.stdout.split() else 0
    s.add('exit', r.returncode)
    s.add('inside: DBUS_* variables', facts.get('env'))
    s.add('inside: the bus', facts.get('bus'))
    s.add('gone after kill $DBUS_SESSION_BUS_PID', s.bus_gone([pid]) if pid else 'no pid')


def sc_launch_program(s):
    """dbus-launch PROGRAM: the program runs in a new session bus."""
    r, facts = s.probe_run(['dbus-launch'])
    s.add('exit', r.returncode)
    s.add('inside: DBUS_* variables', facts.get('env'))
    s.add('inside: the bus', facts.get('bus'))
    buses = bus_processes()
    s.add('buses running after PROGRAM (dbus-launch leaves it)', len(buses))
    for p in buses:
        os.kill(p, signal.SIGTERM)
    s.add('gone after SIGTERM', s.bus_gone(buses))


def sc_launch_exit_with_session(s):
    """--exit-with-session: a babysitter kills the bus when the terminal on dbus-launch's
    stdin hangs up (with no terminal and no X it kills the bus at once: a pty here)."""
    master, slave = os.openpty()
    p = subprocess.Popen(['dbus-launch', '--exit-with-session', '--sh-syntax'],
                         stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    os.close(slave)
    try:
        text = p.stdout.read()
        p.wait(30)
        v = parse_vars(text)
        pid = int(v.get('DBUS_SESSION_BUS_PID', '0') or 0)
        s.name_pid(pid, 'BUSPID')
        s.add('exit', p.returncode)
        s.add('the bus', bus_facts(v.get('DBUS_SESSION_BUS_ADDRESS', '')))
        s.add('still running while the terminal is open', proc_stat(pid) is not None)
    finally:
        os.close(master)
    s.add('gone once the terminal hangs up', s.bus_gone([pid]))


A11Y_PROBE = r'''
import os, sys, json, time
sys.path.insert(0, sys.argv[2])
import rawbus
facts = {}
s = rawbus.Conn(os.environ['DBUS_SESSION_BUS_ADDRESS'])
r = s.call('org.a11y.Bus', '/org/a11y/bus', 'org.a11y.Bus', 'GetAddress', timeout=60)
facts['GetAddress'] = r.error_name or 'ok'
addr = r.body[0] if not r.error_name else ''
facts['address'] = addr
if addr:
    a = rawbus.Conn(addr)
    r = a.call('org.a11y.atspi.Registry', '/org/a11y/atspi/registry',
               'org.freedesktop.DBus.Peer', 'Ping', timeout=60)
    facts['registry Ping'] = r.error_name or 'ok'
    r = a.bus('ListNames')
    facts['a11y bus names'] = sorted(n for n in r.body[0] if not n.startswith(':'))
    r = a.bus('GetConnectionUnixProcessID', 's', ['org.a11y.atspi.Registry'])
    if r.error_name:
        facts['registry pid'] = r.error_name
    else:
        # its babysitter lets it go once it has its name: wait for that
        deadline = time.monotonic() + 10
        while True:
            st = open('/proc/%d/stat' % r.body[0]).read().rsplit(')', 1)[1].split()
            if int(st[1]) == int(sys.argv[3]) or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        facts['registry re-parented to init (the reaper)'] = int(st[1]) == int(sys.argv[3])
        facts['registry command line'] = open('/proc/%d/cmdline' % r.body[0]).read().replace(
            '\0', ' ').strip()
json.dump(facts, open(sys.argv[1], 'w'))
'''


def sc_launch_x11(s):
    """dbus-launch --autolaunch and --exit-with-x11 on an Xvfb display."""
    disp = ':%d' % (90 + os.getpid() % 500)
    xsock = '/tmp/.X11-unix/X' + disp[1:]
    x = subprocess.Popen(['Xvfb', disp, '-nolisten', 'tcp'], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(xsock):
            break
        time.sleep(0.05)
    env = dict(os.environ, DISPLAY=disp, HOME=s.d)
    with open('/etc/machine-id') as f:
        machine = f.read().strip()
    pids = []
    for what, flags in (('--autolaunch', ['--autolaunch=' + machine]),
                        ('--autolaunch again', ['--autolaunch=' + machine]),
                        ('--exit-with-x11', ['--exit-with-x11'])):
        r = subprocess.run(['dbus-launch', '--sh-syntax'] + flags, env=env,
                           capture_output=True, text=True, timeout=60)
        v = parse_vars(r.stdout)
        pid = int(v.get('DBUS_SESSION_BUS_PID', '0') or 0)
        s.name_pid(pid, 'BUSPID%d' % len(set(pids + [pid])))
        pids.append(pid)
        s.add(what + ': exit', r.returncode)
        s.add(what + ': output', re.sub(r'WINDOWID=\d+', 'WINDOWID=W', r.stdout.strip()))
        try:
            s.add(what + ': the bus', bus_facts(v.get('DBUS_SESSION_BUS_ADDRESS', '')))
        except Exception as e:  # noqa: BLE001
            s.add(what + ': the bus', 'failed: %s' % type(e).__name__)
    s.add('the second --autolaunch found the first bus', pids[0] == pids[1] != 0)
    x.terminate()
    x.wait()
    s.add('both buses gone with the X server', s.bus_gone(sorted(set(pids))))


def sc_at_spi(s):
    """at-spi2's launcher, activated by GetAddress on the session bus, as a desktop does."""
    out = os.path.join(s.d, 'a11y.json')
    env = dict(os.environ, XDG_RUNTIME_DIR=s.d, HOME=s.d)
    env.pop('DISPLAY', None)
    r = subprocess.run(['dbus-run-session', '--', sys.executable, '-c', A11Y_PROBE, out,
                        os.path.dirname(rawbus.__file__), str(os.getppid())], env=env,
                       capture_output=True,
                       text=True, timeout=150)
    s.add('exit', r.returncode)
    try:
        with open(out) as f:
            facts = json.load(f)
    except (OSError, ValueError):
        facts = {'failed': r.stderr.strip()[-300:]}
    for k in sorted(facts):
        s.add(k, facts[k])


def init_script(s, action):
    env = dict(os.environ)
    env.pop('DBUS_SYSTEM_BUS_ADDRESS', None)
    r = subprocess.run([INIT_SCRIPT, action], env=env, capture_output=True, text=True,
                       timeout=60)
    return r.returncode, (r.stdout + r.stderr).strip()


# A bus's own warnings in an init script's output ("dbus[PID]: TEXT" from dbus-daemon,
# "kdbusd[PID]: FILE:LINE: TEXT" from kdbusd, which names the file and line at fault) depend on
# what the machine's /etc/dbus-1/system.d holds (a package naming a user that does not
# exist): compared as the set of TEXTs, apart from the script's own lines.
BUS_WARNING = re.compile(r'^[\w.-]+\[\d+\]: (?:/\S+:\d+: )?(.*)$')


def split_bus_warnings(text):
    own, warnings = [], set()
    for line in text.splitlines():
        m = BUS_WARNING.match(line)
        if m:
            warnings.add(m.group(1))
        else:
            own.append(line)
    return '\n'.join(own), sorted(warnings)


def private_run_dbus():
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'mode=755', 'tmpfs', '/run/dbus'],
                   check=True)


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def sc_init_script(s):
    """Debian's /etc/init.d/dbus, unchanged: start-stop-daemon --exec /usr/bin/dbus-daemon
    -- --system, the pid file of system.conf, status, reload (dbus-send), stop (--user
    messagebus --pidfile)."""
    private_run_dbus()
    st, text = init_script(s, 'start')
    pid = read_pid('/run/dbus/pid')
    s.name_pid(pid, 'BUSPID')
    text, warnings = split_bus_warnings(text)
    s.add('start', '%d %s' % (st, text))
    s.add("the bus's warnings at start", warnings)
    try:
        s.add('the system bus', bus_facts('unix:path=/run/dbus/system_bus_socket'))
    except Exception as e:  # noqa: BLE001
        s.add('the system bus', 'failed: %s' % type(e).__name__)
    # once it serves (dbus-daemon's parent writes the pid file and exits before the bus
    # drops its privileges)
    info = proc_stat(pid) if pid else None
    s.add('the pid file names the bus; daemonized; its uid', (
        bool(info) and is_bus(pid), info and info[0] == os.getppid(), info and info[1]))
    s.add('/run/dbus', sorted(os.listdir('/run/dbus')))
    for action in ('status', 'reload'):
        st, text = init_script(s, action)
        s.add(action, '%d %s' % (st, text))
    st, text = init_script(s, 'stop')
    s.add('stop', '%d %s' % (st, text))
    s.add('gone after stop', s.bus_gone([pid]) if pid else 'no pid')
    s.add('/run/dbus after stop', sorted(os.listdir('/run/dbus')))


def sc_system_fork(s):
    """`BUS --system --fork --print-pid` as a hand-written init script runs it."""
    private_run_dbus()
    r = subprocess.run([DAEMON, '--system', '--fork', '--print-pid'], capture_output=True,
                       text=True, timeout=60)
    pid = read_pid('/run/dbus/pid')
    s.name_pid(pid, 'BUSPID')
    s.add('exit, printed', '%d %s' % (r.returncode, r.stdout.strip()))
    try:
        s.add('the system bus', bus_facts('unix:path=/run/dbus/system_bus_socket'))
    except Exception as e:  # noqa: BLE001
        s.add('the system bus', 'failed: %s' % type(e).__name__)
    info = proc_stat(pid) if pid else None
    s.add('the pid file names the bus; daemonized; its uid', (
        bool(info) and is_bus(pid), info and info[0] == os.getppid(), info and info[1]))
    if pid:
        os.kill(pid, signal.SIGTERM)
        s.add('gone after SIGTERM', s.bus_gone([pid]))
    s.add('/run/dbus after SIGTERM', sorted(os.listdir('/run/dbus')))


SCENARIOS = {
    'run-session': (sc_run_session, ['dbus-run-session']),
    'run-session-options': (sc_run_session_options, ['dbus-run-session']),
    'launch': (sc_launch, ['dbus-launch']),
    'launch-sh-eval': (sc_launch_sh_eval, ['dbus-launch']),
    'launch-program': (sc_launch_program, ['dbus-launch']),
    'launch-exit-with-session': (sc_launch_exit_with_session, ['dbus-launch']),
    'launch-x11': (sc_launch_x11, ['dbus-launch', 'Xvfb']),
    'at-spi': (sc_at_spi, ['dbus-run-session', AT_SPI_LAUNCHER]),
    'init-script': (sc_init_script, [INIT_SCRIPT, 'start-stop-daemon']),
    'system-fork': (sc_system_fork, []),
}


def inner(name, d):
    """In the namespace, with the bus bound over /usr/bin/dbus-daemon: one scenario, run
    under a subreaper (init, for what the scenario starts: start-stop-daemon sees an
    unreaped bus as running)."""
    def scenario():
        for k in ('DBUS_SESSION_BUS_ADDRESS', 'DBUS_STARTER_ADDRESS', 'DISPLAY'):
            os.environ.pop(k, None)     # no X: see the top
        s = Scenario(d)
        try:
            SCENARIOS[name][0](s)
        except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
            s.lines.append('stopped by %s: %s' % (type(e).__name__, s.norm(e)))
        return s.lines
    print(json.dumps(sysutil.run_as_init(scenario)))
    return 0


NS_SCRIPT = 'mount --bind "$1" %s && shift && exec "$@"' % DAEMON


def run(binary, name):
    d = tempfile.mkdtemp(prefix='kdbus-launch-')
    os.chmod(d, 0o755)
    try:
        r = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', NS_SCRIPT,
                            'sh', binary, sys.executable, HERE, '--inner', name, d],
                           capture_output=True, text=True, timeout=300)
        try:
            return json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return ['no transcript: exit %d, %s' % (r.returncode, r.stderr.strip()[-500:])]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    if sys.argv[1] == '--inner':
        return inner(sys.argv[2], sys.argv[3])
    if sys.argv[1] == '--probe':
        return probe(sys.argv[2])
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    only = os.environ.get('KDBUS_TEST_SCENARIOS', '').split()
    t = sysutil.Tap()
    for name, (_, needs) in SCENARIOS.items():
        if only and name not in only:
            continue
        missing = [x for x in needs if not shutil.which(x) and not os.path.exists(x)]
        if os.getuid() != 0 or not shutil.which('unshare'):
            t.skip(name, 'needs root and unshare (a mount namespace)')
            continue
        if missing:
            t.skip(name, 'not installed: %s' % ', '.join(missing))
            continue
        o = run(ours, name)
        if os.environ.get('KDBUS_TEST_VERBOSE'):
            t.diag('\n'.join(o))
        if not ref:
            t.ok(not any(x.startswith(('stopped by', 'no transcript')) for x in o), name,
                 ' | '.join(o))
            continue
        r = run(ref, name)
        if not t.ok(r == o, '%s: the same as dbus-daemon' % name):
            for i in range(max(len(r), len(o))):
                a = r[i] if i < len(r) else '(none)'
                b = o[i] if i < len(o) else '(none)'
                if a != b:
                    t.diag('dbus-daemon: %s\nkdbusd:      %s' % (a, b))
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
