#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The process options, on kdbusd and dbus-daemon, compared: --introspect (the same XML),
# --print-pid[=FD] and --print-address[=FD] in the foreground and with --fork (the printed pid
# is the forked bus, the one in the pid file), a bad descriptor, and where log lines go with
# --nosyslog, --syslog, --syslog-only, neither, and <syslog/>: stderr and/or the system log.
# The system log is a datagram socket of the test bound over /dev/log in a private mount
# namespace (root and unshare(1) needed, else that part is skipped); there is no journal
# here, so both buses use syslog(3). --config-file=/proc/self/fd/N of a memfd (dbus-broker's
# test suite hands dbus-daemon its configuration so; kdbusd refused it, ENOENT). TAP output.
#
# Usage: cmdline.py KDBUSD [DBUS_DAEMON]

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402
from sysutil import rawbus  # noqa: E402

NS_SCRIPT = r'''set -e
D="$1"; shift
for n in null zero full random urandom; do touch "$D/$n"; mount --bind "/dev/$n" "$D/$n"; done
touch "$D/log"; mount --bind "$D/../log" "$D/log"
mount --rbind "$D" /dev
exec "$@"
'''


def norm(text, d, pids=()):
    text = re.sub(r'guid=[0-9a-f]{32}', 'guid=G', text.strip().replace(d, 'DIR'))
    for name, pid in pids:
        text = re.sub(r'\b%d\b' % pid, name, text)
    return text


def read_fd(fd):
    data = b''
    while True:
        b = os.read(fd, 4096)
        if not b:
            return data.decode(errors='replace')
        data += b


def read_eof(fd, timeout=10.0):
    """What @fd gives until its end, and whether the end came within @timeout seconds (a
    launcher reads the bus's pipes to their end)."""
    data = b''
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return data.decode(errors='replace'), False
        b = os.read(fd, 4096)
        if not b:
            return data.decode(errors='replace'), True
        data += b


def read_ready(f):
    """What the pipe @f holds now, without waiting."""
    data = b''
    while select.select([f], [], [], 0)[0]:
        b = os.read(f.fileno(), 4096)
        if not b:
            break
        data += b
    return data.decode(errors='replace')


def run_forms(binary, conf, d, form, fork):
    """@binary with @form (where 'A' and 'P' stand for the descriptors of an address and a
    pid pipe): what each pipe gave and whether it reached its end while the bus runs, what
    stdout got, the exit status, and whether the bus served."""
    pipes = {}
    argv = [binary, '--fork' if fork else '--nofork', '--nopidfile']
    for x in form:
        for key in 'AP':
            if x == key or x.endswith('=' + key):
                if key not in pipes:
                    pipes[key] = os.pipe()
                x = x[:-1] + str(pipes[key][1])
        argv.append(x.replace('CONF', conf).replace('DIR', d))
    p = subprocess.Popen(argv, pass_fds=[w for _, w in pipes.values()],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    for _, w in pipes.values():
        os.close(w)
    bus_pid = None
    got = {}
    try:
        for key in 'AP':
            got[key] = read_eof(pipes[key][0]) if key in pipes else ('-', True)
        if fork:
            status = p.wait(10)
            try:
                bus_pid = int(got['P'][0]) if 'P' in pipes else None
            except ValueError:
                pass
        else:
            bus_pid = p.pid
        sysutil.wait_for(lambda: sysutil.serves(d + '/s') or (not fork and p.poll() is not None))
        served = sysutil.serves(d + '/s')
        if not fork:
            status = None if served else p.wait(10)
        out = read_ready(p.stdout) if served else p.stdout.read().decode(errors='replace')
        if fork and not bus_pid:
            m = re.search(r'^(\d+)$', out, re.M)
            bus_pid = int(m.group(1)) if m else None
        pids = [('BUSPID', bus_pid or -1)]
        return '%s: exit %s, address %r%s, pid %r%s, stdout %r, serves %s' % (
            ' '.join(form), 'running' if status is None else status,
            norm(got['A'][0], d, pids), '' if got['A'][1] else ' (open)',
            norm(got['P'][0], d, pids), '' if got['P'][1] else ' (open)',
            norm(out, d, pids), served)
    finally:
        if bus_pid and bus_pid > 0 and (not fork or bus_pid != p.pid):
            try:
                os.kill(bus_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            sysutil.wait_gone(bus_pid)
        if p.poll() is None:
            p.kill()
        p.wait(10)
        p.stdout.close()
        for r, _ in pipes.values():
            os.close(r)
        if os.path.exists(d + '/s'):
            os.unlink(d + '/s')


# The forms launchers and init scripts use, as dbus-daemon 1.14 takes them: a value as the
# next argument, an option that follows instead of a value, descriptors given twice, one
# descriptor for both, an empty value, and what it refuses.
ARG_FORMS = [
    (['--config-file', 'CONF', '--print-address', 'A', '--print-pid', 'P'], False),
    (['--config-file', 'CONF', '--print-address', 'A', '--print-pid', 'P'], True),
    (['--config-file=CONF', '--print-address=A', '--print-pid=P'], False),
    (['--config-file=CONF', '--print-address=A', '--print-pid=P'], True),
    (['--config-file=CONF', '--print-address', '--print-pid', 'P'], False),
    (['--config-file=CONF', '--print-pid', '--print-address', 'A'], False),
    (['--config-file', '--address=unix:path=DIR/s', '--print-pid=P'], False),
    (['--config-file=CONF', '--print-pid', '--nofork'], False),
    (['--print-address', '--config-file', 'CONF', '--print-pid='], False),
    (['--config-file', 'CONF', '--address', 'unix:path=DIR/s', '--print-address', 'A'], False),
    (['--config-file=CONF', '--config-file'], False),
    (['--config-file=CONF', '--address'], False),
    (['--config-file=CONF', '--address=', '--print-pid', 'P'], False),
    (['--config-file=CONF', '--print-address', 'x'], False),
    (['--config-file=CONF', '--print-address=-1'], False),
    (['--config-file=CONF', '--print-address', 'A', '--print-address', 'P'], False),
    (['--config-file=CONF', '--print-address', 'A', '--print-address'], False),
    (['--config-file=CONF', '--print-address', 'A', 'P'], False),
    (['--config-file=CONF', '--address', 'unix:path=DIR/s', '--address=unix:path=DIR/t'],
     False),
    (['--config-file=CONF', '--session'], False),
    (['--config-file', 'CONF', 'extra'], False),
    (['--session', '--config-file=CONF'], False),
]


def argument_forms(binary, lines, d):
    conf = sysutil.write_conf(d, 'unix:path=%s/s' % d)
    for form, fork in ARG_FORMS:
        lines.append(('--fork ' if fork else '') + run_forms(binary, conf, d, form, fork))
    r = subprocess.run([binary, '--version'], capture_output=True, text=True, timeout=20)
    lines.append('--version: exit %d, first line %r' % (r.returncode,
                                                         r.stdout.splitlines()[0]))


def print_options(binary, lines, d):
    conf = sysutil.write_conf(d, 'unix:path=%s/s' % d, '<pidfile>%s/pid</pidfile>\n' % d)
    r = subprocess.run([binary, '--introspect'], capture_output=True, text=True, timeout=20)
    lines.append('--introspect: exit %d' % r.returncode)
    lines.append(r.stdout)

    # foreground, pid and address on descriptors of their own
    pr, pw = os.pipe()
    ar, aw = os.pipe()
    p = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--nopidfile',
                          '--print-pid=%d' % pw, '--print-address=%d' % aw], pass_fds=(pw, aw),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    os.close(pw)
    os.close(aw)
    try:
        pid_text = os.read(pr, 100).decode()
        addr = os.read(ar, 4096).decode()
        lines.append('--nofork --print-pid=FD: %s' % norm(pid_text, d, [('BUSPID', p.pid)]))
        lines.append('--print-address=FD: %s' % norm(addr, d))
    finally:
        p.terminate()
        p.wait(10)
        os.close(pr)
        os.close(ar)

    # --fork: the parent prints the address and the forked bus's pid, which is in the pid file
    r = subprocess.run([binary, '--config-file=' + conf, '--fork', '--print-pid',
                        '--print-address'], capture_output=True, text=True, timeout=20)
    try:
        pid = int(open(d + '/pid').read())
    except (OSError, ValueError):
        pid = -1
    try:
        lines.append('--fork: exit %d, printed: %s' % (r.returncode, norm(
            r.stdout, d, [('PIDFILE_PID', pid)]).replace('\n', ' | ')))
        lines.append('--fork: pid file pid is alive and serves: %s' % (
            pid > 0 and os.path.exists('/proc/%d' % pid) and sysutil.serves(d + '/s')))
    finally:
        if pid > 0:
            os.kill(pid, signal.SIGTERM)
            lines.append('--fork: gone after SIGTERM: %s, pid file removed: %s' % (
                sysutil.wait_gone(pid), sysutil.wait_for(
                    lambda: not os.path.exists(d + '/pid'), 5)))
    r = subprocess.run([binary, '--config-file=' + conf, '--nofork', '--print-pid=x'],
                       capture_output=True, text=True, timeout=20)
    lines.append('--print-pid=x: exit %s' % ('nonzero' if r.returncode else '0'))


def memfd_config(binary, lines, d):
    """The configuration in a memfd, named as /proc/self/fd/N (a file without a path)."""
    conf = sysutil.write_conf(d, 'unix:path=%s/m' % d)
    fd = os.memfd_create('bus-config', 0)
    try:
        with open(conf, 'rb') as f:
            os.write(fd, f.read())
        p = subprocess.Popen([binary, '--config-file=/proc/self/fd/%d' % fd, '--nofork',
                              '--print-address'], pass_fds=(fd,), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    finally:
        os.close(fd)
    try:
        ready, _, _ = select.select([p.stdout], [], [], 20)
        addr = p.stdout.readline().decode() if ready else '(nothing in 20 s)'
        lines.append('--config-file=/proc/self/fd/N of a memfd: address %r, serves %s'
                     % (norm(addr, d), sysutil.serves(d + '/m')))
    finally:
        p.terminate()
        p.wait(10)
        p.stdout.close()


def log_places(binary, flags, syslog_elem, d):
    """Where the 'Reloaded configuration' line of a ReloadConfig goes: stderr, syslog."""
    os.makedirs(d + '/dev', exist_ok=True)
    log = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if os.path.exists(d + '/log'):
        os.unlink(d + '/log')
    log.bind(d + '/log')
    conf = sysutil.write_conf(d, 'unix:path=%s/s' % d, '<syslog/>\n' if syslog_elem else '')
    p = subprocess.Popen(['unshare', '-m', '--propagation', 'private', 'sh', '-c', NS_SCRIPT,
                          'sh', d + '/dev', binary, '--config-file=' + conf, '--nofork',
                          '--nopidfile'] + flags, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    in_syslog = False
    try:
        sysutil.wait_for(lambda: sysutil.serves(d + '/s') or p.poll() is not None)
        c = rawbus.Conn('unix:path=%s/s' % d)
        c.bus('ReloadConfig')
        c.close()
        # syslog(3) writes before the bus replies: the line is queued here already
        log.settimeout(0.3)
        try:
            while not in_syslog:
                in_syslog = b'Reloaded configuration' in log.recv(4096)
        except socket.timeout:
            pass
    finally:
        p.terminate()
        _, err = p.communicate(timeout=10)
        log.close()
        subprocess.run(['rm', '-rf', d + '/dev', d + '/s', d + '/log'])
    in_stderr = b'Reloaded configuration' in err
    return 'stderr %s, syslog %s' % ('yes' if in_stderr else 'no', 'yes' if in_syslog else 'no')


def transcript(binary, with_syslog):
    lines = []
    d = tempfile.mkdtemp(prefix='kdbus-cmdline-')
    try:
        print_options(binary, lines, d)
        argument_forms(binary, lines, d)
        if with_syslog:
            for flags, elem in ((['--nosyslog'], False), (['--syslog'], False),
                                (['--syslog-only'], False), ([], False), ([], True),
                                (['--nosyslog'], True)):
                lines.append('%s%s: %s' % (' '.join(flags) or 'no flag',
                                           ' with <syslog/>' if elem else '',
                                           log_places(binary, flags, elem, d)))
        memfd_config(binary, lines, d)
    except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
        lines.append('stopped by %s: %s' % (type(e).__name__, e))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return lines


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    t = sysutil.Tap()
    with_syslog = os.getuid() == 0 and shutil.which('unshare') is not None
    o = transcript(ours, with_syslog)
    t.ok(o[0] == '--introspect: exit 0' and o[1].startswith('<!DOCTYPE node') and
         '<interface name="org.freedesktop.DBus">' in o[1], 'kdbusd --introspect prints XML')
    body = [x for x in o[2:]]
    t.ok(body[:6] == ['--nofork --print-pid=FD: BUSPID',
                      '--print-address=FD: unix:path=DIR/s,guid=G',
                      '--fork: exit 0, printed: unix:path=DIR/s,guid=G | PIDFILE_PID',
                      '--fork: pid file pid is alive and serves: True',
                      '--fork: gone after SIGTERM: True, pid file removed: True',
                      '--print-pid=x: exit nonzero'],
         'kdbusd --print-pid[=FD], --print-address[=FD], --fork with pid file',
         ' | '.join(body[:6]))
    forms = body[6:7 + len(ARG_FORMS)]
    t.ok(all('(open)' not in x and 'serves True' in x and "pid 'BUSPID'" in x and
             "address 'unix:path=DIR/s,guid=G'" in x for x in forms[:4]), 'kdbusd --print-address FD / --print-pid FD as one or '
         'two arguments, with and without --fork: printed, closed (read to EOF), the bus serves',
         ' | '.join(forms[:4]))
    t.ok(forms[-1] == "--version: exit 0, first line 'D-Bus Message Bus Daemon 1.14.10'",
         "kdbusd --version's first line is dbus-daemon's", forms[-1])
    body = body[:6] + body[7 + len(ARG_FORMS):]
    if with_syslog:
        t.ok(body[6:-1] == ['--nosyslog: stderr yes, syslog no', '--syslog: stderr yes, syslog yes',
                            '--syslog-only: stderr no, syslog yes',
                            'no flag: stderr yes, syslog no',
                            'no flag with <syslog/>: stderr yes, syslog yes',
                            '--nosyslog with <syslog/>: stderr yes, syslog no'],
             'kdbusd --nosyslog / --syslog / --syslog-only / <syslog/>: stderr and syslog',
             ' | '.join(body[6:-1]))
    else:
        t.skip('--syslog* (a test /dev/log in a mount namespace)', 'needs root and unshare')
    t.ok(o[-1] == "--config-file=/proc/self/fd/N of a memfd: address 'unix:path=DIR/m,guid=G', "
         "serves True", 'kdbusd --config-file=/proc/self/fd/N of a memfd', o[-1])
    # kdbusd only: one descriptor for both prints both, then closes it (dbus-daemon closes it
    # after the address and fails writing the pid: docs/differences.md)
    d = tempfile.mkdtemp(prefix='kdbus-cmdline-')
    try:
        conf = sysutil.write_conf(d, 'unix:path=%s/s' % d)
        x = run_forms(ours, conf, d, ['--config-file=CONF', '--print-address=A',
                                      '--print-pid=A'], False)
        t.ok(x.endswith("exit running, address 'unix:path=DIR/s,guid=G\\nBUSPID', pid '-', "
                        "stdout '', serves True"), 'kdbusd --print-address=FD --print-pid=FD: '
             'both on FD, then closed', x)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    # kdbusd only (dbus-daemon would take the path over): a path a live bus serves is refused
    d = tempfile.mkdtemp(prefix='kdbus-cmdline-')
    try:
        conf = sysutil.write_conf(d, 'unix:path=%s/s' % d)
        a = subprocess.Popen([ours, '--config-file=' + conf, '--nofork', '--print-address'],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            a.stdout.readline()
            b = subprocess.run([ours, '--config-file=' + conf, '--nofork'],
                               capture_output=True, text=True, timeout=20)
            t.ok(b.returncode != 0 and 'Address already in use' in b.stderr and
                 sysutil.serves(d + '/s'), 'a second kdbusd does not take over the socket of '
                 'a live one', 'exit %d: %s' % (b.returncode, b.stderr.strip()))
        finally:
            a.terminate()
            a.wait(10)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if ref:
        r = transcript(ref, with_syslog)
        if not t.ok(r == o, 'the same as dbus-daemon'):
            for a, b in zip(r, o):
                if a != b:
                    t.diag('dbus-daemon: %s\nkdbusd:      %s' % (a, b))
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
