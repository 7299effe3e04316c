#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# A test peer for the kdbusctl tests: owns (or, with --queue, queues for) a well-known name,
# echoes every call to com.example.Test.Echo with the same signature and values, answers
# com.example.Test.Fail with an error, and on com.example.Test.Emit sends the signal
# com.example.Test.Ping(s). Prints "READY <unique name>" once its name request is done.
import sys

import dbus
import dbus.lowlevel
from gi.repository import GLib

IFACE = 'com.example.Test'


def main():
    address, name = sys.argv[1], sys.argv[2]
    queue = '--queue' in sys.argv
    bus = dbus.bus.BusConnection(address)
    flags = 0 if queue else dbus.bus.NAME_FLAG_DO_NOT_QUEUE
    r = bus.request_name(name, flags)
    want = dbus.bus.REQUEST_NAME_REPLY_IN_QUEUE if queue else \
        dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER
    if r != want:
        print('RequestName(%s) answered %d, expected %d' % (name, r, want), file=sys.stderr)
        sys.exit(1)

    def on_message(conn, msg):
        if msg.get_type() != dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL or \
                msg.get_interface() != IFACE:
            return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED
        member = msg.get_member()
        if member == 'Echo':
            reply = dbus.lowlevel.MethodReturnMessage(msg)
            sig = msg.get_signature()
            if sig:
                reply.append(signature=sig, *msg.get_args_list())
        elif member == 'Fail':
            reply = dbus.lowlevel.ErrorMessage(msg, 'com.example.Error.Failed',
                                               'it failed as asked')
        elif member == 'Emit':
            sig = dbus.lowlevel.SignalMessage('/com/example/Obj', IFACE, 'Ping')
            sig.append('pong', signature='s')
            conn.send_message(sig)
            reply = dbus.lowlevel.MethodReturnMessage(msg)
        else:
            return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED
        conn.send_message(reply)
        return dbus.lowlevel.HANDLER_RESULT_HANDLED

    bus.add_message_filter(on_message)
    print('READY', bus.get_unique_name(), flush=True)
    GLib.MainLoop().run()


if __name__ == '__main__':
    from dbus.mainloop.glib import DBusGMainLoop
    DBusGMainLoop(set_as_default=True)
    main()
