#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# org.freedesktop.DBus.Debug.Stats on kdbusd and dbus-daemon 1.14.10, fresh buses, the same
# raw-client actions (connections, match rules, names owned and queued, a monitor, peers
# leaving): keys, their order and types must be equal, and so must every value that counts
# bus objects (connections, match rules, names, their peaks, Serial, queued messages). Values
# measured in bytes of kdbusd's own memory (ListMemPool*, *Bytes) are only checked for type
# (docs/differences.md, compat/driver-stats.c). Errors must be equal too.
#
# Usage: stats.py KDBUSD DBUS_DAEMON   (TAP on stdout)

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import harness  # noqa: E402
from rawbus import BUS, BUS_PATH, Message, SIGNAL  # noqa: E402

STATS = 'org.freedesktop.DBus.Debug.Stats'
NOT_COMPARED = ('ListMemPool', 'Bytes')     # kdbusd's own memory and message sizes


def stat(c, member, *args):
    r = c.call(BUS, BUS_PATH, STATS, member, 's' * len(args), list(args))
    if r.error_name:
        return ['error %s: %s' % (r.error_name, r.body[0])]
    out = []
    for k, v in r.body[0].items():
        if isinstance(v, tuple):
            sig, val = v
            if any(x in k for x in NOT_COMPARED):
                val = '<%s>' % type(val).__name__
            out.append('%s %s %s' % (k, sig, val))
        else:
            out.append('%s %s' % (k, v))
    return out


def transcript(binary):
    bus = harness.Bus(binary)
    lines = []
    try:
        a = bus.conn(name='a')
        lines += ['GetStats fresh'] + stat(a, 'GetStats')
        b = bus.conn(name='b')
        c = bus.conn(name='c')
        a.bus('AddMatch', 's', ["type='signal',member='One'"])
        a.bus('AddMatch', 's', ["type='signal',member='Two',arg0='x'"])
        b.bus('AddMatch', 's', ["interface='com.example.I'"])
        a.bus('RequestName', 'su', ['com.example.A', 0])
        b.bus('RequestName', 'su', ['com.example.A', 0])     # queued
        b.bus('RequestName', 'su', ['com.example.B', 0])
        a.bus('RemoveMatch', 's', ["type='signal',member='One'"])
        # three signals b does not read yet
        for i in range(3):
            a.send(Message(SIGNAL, path='/o', interface='com.example.I', member='Unread',
                           destination=b.unique, signature='s', body=['x' * 10]))
        a.sync()
        lines += ['GetStats'] + stat(a, 'GetStats')
        lines += ['GetConnectionStats a'] + stat(a, 'GetConnectionStats', a.unique)
        lines += ['GetConnectionStats com.example.B'] + stat(a, 'GetConnectionStats',
                                                             'com.example.B')
        lines += ['GetAllMatchRules'] + stat(a, 'GetAllMatchRules')
        c.call(BUS, BUS_PATH, 'org.freedesktop.DBus.Monitoring', 'BecomeMonitor', 'asu',
               [["type='error'"], 0])
        lines += ['with a monitor'] + stat(a, 'GetStats') + stat(a, 'GetAllMatchRules')
        b.close()
        c.close()
        # the bus has seen both go when com.example.A came back to a
        for _ in range(200):
            if a.bus('GetNameOwner', 's', ['com.example.B'], quiet=True).error_name:
                break
        lines += ['after two left'] + stat(a, 'GetStats')
        for name in ('org.freedesktop.DBus', 'com.example.Gone', '!!', b.unique):
            lines += ['GetConnectionStats %s' % name] + stat(a, 'GetConnectionStats', name)
        lines += ['GetStats again'] + stat(a, 'GetStats')
    finally:
        problems = bus.stop()
    return harness.normalize(lines), problems


def main(argv):
    kdbusd, ref = argv[1], argv[2]
    print('1..1')
    want, p_ref = transcript(ref)
    got, p_k = transcript(kdbusd)
    ok = want == got and not p_k and len(want) > 40
    if not ok:
        import difflib
        for p in p_k:
            print('# kdbusd: ' + p)
        for line in difflib.unified_diff(want, got, 'dbus-daemon', 'kdbusd', lineterm=''):
            print('# ' + line)
    print('%s 1 - Debug.Stats: same keys, types, counts and errors as dbus-daemon (%d lines)'
          % ('ok' if ok else 'not ok', len(got)))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
