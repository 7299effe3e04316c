#!/usr/bin/python3
# Plays systemd's part in --systemd-activation: owns org.freedesktop.systemd1 on the bus at
# argv[1] and answers org.freedesktop.systemd1.Activator.ActivationRequest(unit): a unit
# named in argv[2:] as UNIT=BUSNAME is started (service.py, with DBUS_STARTER_ADDRESS);
# any other unit gets ActivationFailure(unit, org.freedesktop.systemd1.NoSuchUnit, text).
# Prints each request it gets on stdout.
import os
import subprocess
import sys

import dbus
import dbus.lowlevel
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

HERE = os.path.dirname(os.path.abspath(__file__))
DBusGMainLoop(set_as_default=True)
address = sys.argv[1]
units = dict(a.split("=", 1) for a in sys.argv[2:])
bus = dbus.bus.BusConnection(address)
children = []


def on_message(conn, msg):
    if (msg.get_type() == dbus.lowlevel.MESSAGE_TYPE_SIGNAL and
            msg.get_interface() == "org.freedesktop.systemd1.Activator" and
            msg.get_member() == "ActivationRequest"):
        unit = str(msg.get_args_list()[0])
        print("request %s from %s path %s" % (unit, msg.get_sender(), msg.get_path()),
              flush=True)
        if unit in units:
            env = dict(os.environ, DBUS_STARTER_ADDRESS=address)
            children.append(subprocess.Popen(
                ["/usr/bin/python3", os.path.join(HERE, "service.py"), units[unit]], env=env))
        else:
            fail = dbus.lowlevel.SignalMessage("/org/freedesktop/systemd1",
                                               "org.freedesktop.systemd1.Activator",
                                               "ActivationFailure")
            fail.set_destination("org.freedesktop.DBus")
            fail.append("" + unit, "org.freedesktop.systemd1.NoSuchUnit",
                        "Unit %s not found." % unit, signature="sss")
            conn.send_message(fail)
    if (msg.get_type() == dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL and
            msg.get_member() == "SetEnvironment"):
        dest = msg.get_destination() or ""
        print("%s.%s %s from %s to %s path %s no-reply %s" % (
            msg.get_interface(), msg.get_member(), [str(v) for v in msg.get_args_list()[0]],
            msg.get_sender(), "(unique name)" if dest.startswith(":") else dest,
            msg.get_path(), msg.get_no_reply()), flush=True)
        return dbus.lowlevel.HANDLER_RESULT_HANDLED
    return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED


bus.add_message_filter(on_message)
bus.request_name("org.freedesktop.systemd1")
print("ready", flush=True)
loop = GLib.MainLoop()
GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, lambda *a: loop.quit())
loop.run()
for c in children:
    c.terminate()
    c.wait()
