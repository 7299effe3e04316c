#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Real monitoring clients against kdbusd and dbus-daemon 1.14.10 with the same traffic:
# `dbus-monitor --address` and `busctl --address= monitor` (both use BecomeMonitor with no
# rule) and `dbus-monitor` with match rules. The traffic comes from raw clients in a fixed
# order (calls, replies, errors, signals, unicast signals, a call to a missing name, driver
# calls, name changes, a peer leaving), so the two transcripts must be identical once
# timestamps, serials and unique-name numbers are normalized.
#
# Usage: monitor.py KDBUSD DBUS_DAEMON   (TAP on stdout)

import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import harness  # noqa: E402
from rawbus import BUS, BUS_PATH, ERROR, METHOD_CALL, Message  # noqa: E402

TOOLS = {
    'dbus-monitor': lambda a: ['dbus-monitor', '--address', a],
    'dbus-monitor-rules': lambda a: ['dbus-monitor', '--address', a,
                                     "interface='com.example.Mon'",
                                     "sender='org.freedesktop.DBus'",
                                     "type='error'"],
    'busctl-monitor': lambda a: ['busctl', '--address=' + a, 'monitor'],
}


def wait_for(conn, pred, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = conn.recv(deadline - time.monotonic())
        if m is None:
            break
        if pred(m):
            return m
    raise TimeoutError('%s: expected message did not come' % conn.name)


def traffic(bus):
    """The same sequence on any bus; each step waits for its effect, so the order is fixed."""
    svc = bus.conn(name='svc')
    cli = bus.conn(name='cli')
    svc.bus('RequestName', 'su', ['com.example.Svc', 4], quiet=True)

    # a call and its reply
    s = cli.send(Message(METHOD_CALL, path='/o', interface='com.example.Mon', member='Echo',
                         destination='com.example.Svc', signature='s', body=['hi']))
    call = wait_for(svc, lambda m: m.member == 'Echo')
    svc.reply(call, 's', ['hi'])
    wait_for(cli, lambda m: m.reply_serial == s)
    # a call answered with an error
    s = cli.send(Message(METHOD_CALL, path='/o', interface='com.example.Mon', member='Fail',
                         destination='com.example.Svc'))
    call = wait_for(svc, lambda m: m.member == 'Fail')
    svc.error(call, 'com.example.Mon.Error.Failed', 'it failed')
    wait_for(cli, lambda m: m.reply_serial == s)
    # signals: broadcast and unicast
    cli.emit('/o', 'com.example.Mon', 'Broadcast', 'su', ['x', 7])
    cli.emit('/o', 'com.example.Mon', 'Unicast', 's', ['y'], dest='com.example.Svc')
    wait_for(svc, lambda m: m.member == 'Unicast')
    # a call to nobody: the bus answers
    s = cli.send(Message(METHOD_CALL, path='/o', interface='com.example.Mon', member='Lost',
                         destination='com.example.Nobody'))
    wait_for(cli, lambda m: m.reply_serial == s and m.type == ERROR)
    # driver calls, a name change, a peer leaving
    cli.bus('GetNameOwner', 's', ['com.example.Svc'])
    cli.bus('NameHasOwner', 's', ['com.example.Nobody'])
    cli.bus('AddMatch', 's', ["type='signal',member='NameOwnerChanged',arg0='%s'" % svc.unique])
    svc.bus('ReleaseName', 's', ['com.example.Svc'])
    svc.close()
    # the bus has seen svc go when cli gets the NameOwnerChanged of its unique name
    wait_for(cli, lambda m: m.member == 'NameOwnerChanged' and m.body[0] == svc.unique)
    cli.emit('/o', 'com.example.Mon', 'End')
    return cli


class Lines:
    def __init__(self, f):
        self.f = f
        self.buf = b''
        self.lines = []

    def until(self, needle, timeout=10):
        import select
        deadline = time.monotonic() + timeout
        while not any(needle in x for x in self.lines):
            r, _, _ = select.select([self.f], [], [], max(0, deadline - time.monotonic()))
            if not r:
                return False
            d = os.read(self.f.fileno(), 65536)
            if not d:
                return False
            self.buf += d
            *done, self.buf = self.buf.split(b'\n')
            self.lines += [x.decode('utf-8', 'replace') for x in done]
        return True


def normalize(tool, lines):
    out = []
    for x in lines:
        x = re.sub(r' time=[\d.]+', '', x)
        x = re.sub(r' (reply_)?serial=\d+', '', x)
        x = re.sub(r'(Cookie|ReplyCookie)=\d+', r'\1=N', x)
        x = re.sub(r'Timestamp="[^"]*"', 'Timestamp=T', x)
        x = re.sub(r'(Monotonic|Realtime)=\d+', r'\1=T', x)
        x = re.sub(r'uint32 \d{4,}', 'uint32 N', x)     # our probe counter
        out.append(x)
    return harness.normalize(out)


def transcript(binary, tool):
    bus = harness.Bus(binary)
    p = None
    try:
        p = harness.popen(TOOLS[tool](bus.address), stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, bufsize=0)
        out = Lines(p.stdout)
        probe = bus.conn(name='probe')
        for i in range(200):
            probe.emit('/o', 'com.example.Mon', 'Probe', 'u', [1000 + i])
            if out.until('Probe', 0.1):
                break
        probe.emit('/o', 'com.example.Mon', 'ProbeEnd')
        attached = out.until('ProbeEnd')
        probe.sync()
        probe.close()
        # what came before ProbeEnd (and ProbeEnd itself) depends on timing: drop it
        time.sleep(0.1)
        out.until('\x00', 0.2)
        idx = max(i for i, x in enumerate(out.lines) if 'ProbeEnd' in x)
        # busctl prints a message over several lines: skip to the next message start
        rest = out.lines[idx + 1:]
        while rest and rest[0].strip() and not rest[0].startswith(('signal', 'method', 'error',
                                                                   '‣')):
            rest = rest[1:]
        out.lines = rest
        traffic(bus)
        ended = out.until('End')
        time.sleep(0.2)
        out.until('\x00', 0.3)     # whatever the tool still prints after End
        lines = out.lines
        end = max((i for i, x in enumerate(lines) if 'member=End' in x or 'Member=End' in x),
                  default=len(lines) - 1)
        # keep busctl's body lines of the End message up to the blank separator
        j = end + 1
        while j < len(lines) and lines[j].strip():
            j += 1
        return attached and ended, normalize(tool, lines[:j])
    finally:
        if p:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            harness.LIVE.discard(p)
        bus.stop()


def main(argv):
    kdbusd, ref = argv[1], argv[2]
    tests = list(TOOLS)
    print('1..%d' % len(tests))
    failed = 0
    for n, tool in enumerate(tests, 1):
        ok_r, want = transcript(ref, tool)
        ok_k, got = transcript(kdbusd, tool)
        ok = ok_r and ok_k and want == got and len(want) > 10
        if not ok:
            failed += 1
            import difflib
            print('# %s: reference attached/ended %s, kdbusd %s, %d vs %d lines'
                  % (tool, ok_r, ok_k, len(want), len(got)))
            for line in difflib.unified_diff(want, got, 'dbus-daemon', 'kdbusd', lineterm=''):
                print('# ' + line)
        print('%s %d - %s: same transcript as dbus-daemon (%d lines)'
              % ('ok' if ok else 'not ok', n, tool, len(got)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
