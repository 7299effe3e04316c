#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Unique names as dbus-daemon numbers them: the first connection is ":1.0", the second
# ":1.1" (GLib's own GDBus tests assert that), a monitor takes its number, and the same
# names show everywhere a legacy client meets one: Hello, NameOwnerChanged, GetNameOwner,
# ListNames, GetConnectionUnixProcessID/User/Credentials, SENDER and DESTINATION fields,
# match rules with sender= and destination=, a monitor's copies, errors naming a unique
# name, gdbus. Run on kdbusd and on dbus-daemon with the same configuration; the
# transcripts are compared as they are (unique names are NOT normalized here).
#
# usage: unique-names.py KDBUSD [DBUS_DAEMON]        (TAP on stdout)

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rawbus  # noqa: E402
from harness import Bus, clean_env, tap_same  # noqa: E402

P = '/org/example'
I = 'org.example.T'
NOC = "type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged'"


def show(m):
    if m is None:
        return 'nothing'
    if m.type == rawbus.ERROR:
        return 'error %s %s' % (m.error_name, m.body[0] if m.body else '')
    if m.type == rawbus.METHOD_RETURN:
        return 'return %s from %s to %s' % (m.body, m.sender, m.destination)
    kind = 'signal' if m.type == rawbus.SIGNAL else 'call'
    return '%s %s.%s %s from %s to %s' % (kind, m.interface, m.member, m.body, m.sender,
                                          m.destination)


def wanted(m, member):
    return m.member == member or (member is None and m.type in (rawbus.METHOD_RETURN,
                                                                 rawbus.ERROR))


def next_of(c, member, timeout=5):
    """The next message to @c whose member is @member (None: a reply), in order of arrival;
    others are skipped. Messages a call of @c read while waiting for its reply are in
    c.log: those come first."""
    seen = getattr(c, 'seen', 0)
    while True:
        while seen < len(c.log):
            m = c.log[seen]
            seen += 1
            if wanted(m, member):
                c.seen = seen
                return m
        if c.recv(timeout) is None:
            c.seen = seen
            return None


def scenario(address):
    out = []
    c0 = rawbus.Conn(address, name='c0')
    out.append('first Hello: ' + c0.unique)
    c0.bus('AddMatch', 's', [NOC])
    c1 = rawbus.Conn(address, name='c1')
    out.append('second Hello: ' + c1.unique)
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))
    out.append('c1 RequestName: %s' % c1.bus('RequestName', 'su', ['org.example.N', 0]).body)
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))
    out.append('GetNameOwner: ' + show(c0.bus('GetNameOwner', 's', ['org.example.N'])))
    names = c0.bus('ListNames').body[0]
    out.append('ListNames unique: %s' % sorted(n for n in names if n.startswith(':')))
    r = c0.bus('GetConnectionUnixProcessID', 's', [':1.0'])
    out.append('GetConnectionUnixProcessID :1.0 is our pid: %s' % (r.body == [os.getpid()]))
    r = c0.bus('GetConnectionUnixUser', 's', [':1.1'])
    out.append('GetConnectionUnixUser :1.1 is our uid: %s' % (r.body == [os.getuid()]))
    r = c0.bus('GetConnectionCredentials', 's', [':1.1'])
    out.append('GetConnectionCredentials :1.1: %s' % sorted(r.body[0]))
    out.append('GetConnectionUnixProcessID :1.2: ' +
               show(c0.bus('GetConnectionUnixProcessID', 's', [':1.2'])))
    out.append('NameHasOwner :1.0 :1.1 :1.2: %s %s %s' % tuple(
        c0.bus('NameHasOwner', 's', [n]).body[0] for n in (':1.0', ':1.1', ':1.2')))

    # a call by unique name both ways
    c0.send(rawbus.Message(rawbus.METHOD_CALL, path=P, interface=I, member='Ping',
                           destination=':1.1'))
    call = next_of(c1, 'Ping')
    out.append('c1 gets: ' + show(call))
    c1.reply(call, 's', ['pong'])
    out.append('c0 gets: ' + show(next_of(c0, None)))

    # match rules naming unique names
    c0.bus('AddMatch', 's', ["type='signal',sender=':1.1',member='S1'"])
    c0.bus('AddMatch', 's', ["type='signal',sender=':1.0',member='S0'"])
    c0.bus('AddMatch', 's', ["type='signal',destination=':1.0',member='D'"])
    c1.emit(P, I, 'S0')
    c1.emit(P, I, 'S1')
    c1.emit(P, I, 'D', dest=':1.0')
    c0.bus('AddMatch', 's', ["type='signal',member='Fence'"])
    c1.emit(P, I, 'Fence')
    start = getattr(c0, 'seen', 0)
    fence = next_of(c0, 'Fence')
    got = [show(m) for m in c0.log[start:] if m.type == rawbus.SIGNAL and
           m.member in ('S0', 'S1', 'D')]
    out.append('c0 matched: %s, then %s' % (got, show(fence)))

    # a monitor takes the next number; its copies carry the same names
    mon = rawbus.Conn(address, name='mon')
    out.append('third Hello (the monitor): ' + mon.unique)
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))
    r = mon.call(rawbus.BUS, rawbus.BUS_PATH, 'org.freedesktop.DBus.Monitoring',
                 'BecomeMonitor', 'asu', [["type='method_call',member='Ping'"], 0])
    out.append('BecomeMonitor: ' + show(r))
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))
    c1.send(rawbus.Message(rawbus.METHOD_CALL, path=P, interface=I, member='Ping',
                           destination=':1.0', flags=rawbus.NO_REPLY_EXPECTED))
    out.append('monitor gets: ' + show(next_of(mon, 'Ping')))
    c3 = rawbus.Conn(address, name='c3')
    out.append('fourth Hello: ' + c3.unique)
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))

    # gdbus (GDBus's own connection) in the same numbering
    r = subprocess.run(['gdbus', 'call', '--address', address, '--dest', 'org.freedesktop.DBus',
                        '--object-path', '/org/freedesktop/DBus', '--method',
                        'org.freedesktop.DBus.GetConnectionUnixUser', ':1.3'],
                       capture_output=True, text=True, env=clean_env(), timeout=20)
    out.append('gdbus GetConnectionUnixUser :1.3: %s' % (r.stdout.strip() == '(uint32 %d,)'
                                                         % os.getuid()))
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))

    # c1 leaves: its names go, errors name it as dbus-daemon does
    c1.close()
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))
    out.append('c0 sees: ' + show(next_of(c0, 'NameOwnerChanged')))
    r = c0.call(':1.1', P, I, 'Ping')
    out.append('a call to :1.1 now: ' + show(r))
    for c in (c0, mon, c3):
        c.close()
    return out


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    print('TAP version 13', flush=True)
    results = []
    for binary in [ours] + ([ref] if ref else []):
        bus = Bus(binary, hermetic=True)
        try:
            lines = scenario(bus.address)
        except Exception as e:  # noqa: BLE001 -- a failed step fails the comparison
            lines = ['stopped by %s: %s' % (type(e).__name__, e)]
        problems = bus.stop()
        results.append((lines, problems))
    n = 0
    failed = False
    lines, problems = results[0]
    n += 1
    ok = not problems and not any(x.startswith('stopped by') for x in lines)
    ok = ok and lines[0] == 'first Hello: :1.0' and lines[1] == 'second Hello: :1.1'
    failed |= not ok
    print('%sok %d - kdbusd: the first connections are :1.0 and :1.1, the scenario ran'
          % ('' if ok else 'not ', n), flush=True)
    for x in lines + problems:
        print('# ' + x)
    if ref:
        n += 1
        failed |= not tap_same(n, 'kdbusd: the same as dbus-daemon', results[1][0], lines)
    print('1..%d' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
