#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# The peers outside the sandbox, on the real bus (argv[1]): one connection per name.
# argv[2], optional: the portal role's name instead of org.freedesktop.portal.Test.
#   portal  org.freedesktop.portal.Test  TALK for the sandbox: answers every call
#                                        (Emit: broadcasts on two paths; Trigger: calls
#                                        hidden, which the sandbox must not see)
#   seen    org.example.Seen             SEE only
#   hidden  org.example.Hidden           nothing
# Every connection logs what it receives; org.test.Actor.Log() on any of them (called from
# outside the sandbox) returns and clears that log. Prints "ready <hidden unique>
# <seen unique> <portal unique>" when all are up.
import sys
import traceback

import dbus
import dbus.lowlevel
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
address = sys.argv[1]
conns = {}
logs = {}


def make(role, name):
    bus = dbus.bus.BusConnection(address)
    logs[role] = []

    def on_message(conn, msg):
        try:
            return handle(conn, msg)
        except Exception:
            traceback.print_exc()
            raise

    def handle(conn, msg):
        t = msg.get_type()
        member = msg.get_member()
        if t == dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL and member == 'Log':
            reply = dbus.lowlevel.MethodReturnMessage(msg)
            reply.append(dbus.Array(logs[role], signature='s'))
            logs[role] = []
            conn.send_message(reply)
            return dbus.lowlevel.HANDLER_RESULT_HANDLED
        if msg.get_sender() == 'org.freedesktop.DBus':
            return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED
        kind = {dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL: 'call', dbus.lowlevel.MESSAGE_TYPE_SIGNAL: 'signal',
                dbus.lowlevel.MESSAGE_TYPE_METHOD_RETURN: 'return',
                dbus.lowlevel.MESSAGE_TYPE_ERROR: 'error'}.get(t, '?')
        nfds = sum(1 for a in msg.get_args_list() if isinstance(a, dbus.types.UnixFd))
        logs[role].append('%s %s%s' % (kind, member or msg.get_error_name() or '-',
                                       ' fds=%d' % nfds if nfds else ''))
        if t == dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL and not msg.get_no_reply():
            if role == 'portal' and member == 'Emit':
                for path in ('/org/freedesktop/portal/desktop', '/elsewhere'):
                    sig = dbus.lowlevel.SignalMessage(path, 'org.freedesktop.portal.Test', 'Changed')
                    sig.append(path)
                    conn.send_message(sig)
            if role == 'portal' and member == 'Trigger':
                # traffic between two outside peers the sandbox must not overhear
                call = dbus.lowlevel.MethodCallMessage('org.example.Hidden', '/x',
                                                       'org.test.Private', 'Secret')
                call.set_no_reply(True)
                conn.send_message(call)
            reply = dbus.lowlevel.MethodReturnMessage(msg)
            reply.append('pong')
            conn.send_message(reply)
        return dbus.lowlevel.HANDLER_RESULT_HANDLED

    bus.add_message_filter(on_message)
    bus.add_match_string('type=signal')
    if name:
        bus.request_name(name)
    conns[role] = bus
    return bus


# argv[2]: another name for the portal role (the a11y bus's registry)
make('portal', sys.argv[2] if len(sys.argv) > 2 else 'org.freedesktop.portal.Test')
make('seen', 'org.example.Seen')
make('hidden', 'org.example.Hidden')
print('ready', conns['hidden'].get_unique_name(), conns['seen'].get_unique_name(),
      conns['portal'].get_unique_name(), flush=True)
GLib.MainLoop().run()
