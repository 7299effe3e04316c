#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A legacy (dbus1) peer for the interop tests, on dbus-python, driven line by line like
# native-peer.c: prints "ready :1.N", answers each stdin command with one "= ..." line, and
# prints every signal it receives as "signal SENDER IFACE.MEMBER ARG|ARG|..." (the bus
# driver's NameOwnerChanged included, once a match rule asks for it).
#
# usage: legacy-peer.py ADDRESS [--uid UID]
# Commands: match RULE | emit MEMBER [ARG...] | request NAME | release NAME | listnames |
#           call DEST MEMBER [ARG] | serve NAME (Echo returns "legacy:" + arg) |
#           owner NAME (GetNameOwner) | pid NAME (GetConnectionUnixProcessID) | quit
# emit ends with a round trip to the bus, so when "= ok" comes the bus has routed the signal.

import os
import sys

if len(sys.argv) == 4 and sys.argv[2] == '--uid':
    uid = int(sys.argv[3])
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)

import dbus  # noqa: E402
import dbus.bus  # noqa: E402
import dbus.lowlevel  # noqa: E402
import dbus.mainloop.glib  # noqa: E402
import dbus.service  # noqa: E402
from gi.repository import GLib  # noqa: E402

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
loop = GLib.MainLoop()
IFACE = 'org.example.Test'
DBUS = 'org.freedesktop.DBus'
driver = dbus.Interface(bus.get_object(DBUS, '/org/freedesktop/DBus'), DBUS)
served = []


def out(*parts):
    sys.stdout.write(' '.join(str(p) for p in parts) + '\n')
    sys.stdout.flush()


def on_message(b, m):
    if m.get_type() == 4:  # signal
        out('signal', m.get_sender(), '%s.%s' % (m.get_interface(), m.get_member()),
            '|'.join(str(a) for a in m.get_args_list()))
    return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED  # the objects still get calls


bus.add_message_filter(on_message)


class Echo(dbus.service.Object):
    @dbus.service.method(IFACE, in_signature='s', out_signature='s')
    def Echo(self, s):
        return 'legacy:' + s


def command(t):
    if t[0] == 'match':
        bus.add_match_string(' '.join(t[1:]))
        return 'ok'
    if t[0] == 'emit':
        msg = dbus.lowlevel.SignalMessage('/org/example', IFACE, t[1])
        if len(t) > 2:
            msg.append(*t[2:], signature='s' * (len(t) - 2))
        bus.send_message(msg)
        driver.GetId()  # the round trip: the bus has routed the signal
        return 'ok'
    if t[0] == 'request':
        return 'ok %d' % bus.request_name(t[1], dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
    if t[0] == 'release':
        return 'ok %d' % bus.release_name(t[1])
    if t[0] == 'listnames':
        return 'names ' + ' '.join(sorted(str(n) for n in driver.ListNames()
                                          if n.startswith('org.example.')))
    if t[0] == 'call':
        proxy = bus.get_object(t[1], '/org/example', introspect=False)
        r = proxy.get_dbus_method(t[2], IFACE)(*t[3:], timeout=10)
        return 'return ' + str(r)
    if t[0] == 'owner':
        return 'owner ' + str(driver.GetNameOwner(t[1]))
    if t[0] == 'pid':
        return 'pid %d' % driver.GetConnectionUnixProcessID(t[1])
    if t[0] == 'serve':
        served.append(dbus.service.BusName(t[1], bus, do_not_queue=True))
        served.append(Echo(bus, '/org/example'))
        return 'ok'
    if t[0] == 'quit':
        loop.quit()
        return 'ok'
    return 'unknown-command ' + t[0]


def on_stdin(fd, cond):
    line = sys.stdin.readline()
    if not line:
        loop.quit()
        return False
    t = line.split()
    if t:
        try:
            r = command(t)
        except dbus.DBusException as e:
            r = 'error ' + e.get_dbus_name()
        out('=', r)
    return True


GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, on_stdin)
out('ready', bus.get_unique_name())
loop.run()
