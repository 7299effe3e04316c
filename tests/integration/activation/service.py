#!/usr/bin/python3
# A test service started by the bus: takes its name from argv[1] on the bus in
# DBUS_STARTER_ADDRESS, answers Echo (and remembers the order), Env (a variable of its
# environment), Log (the Echo arguments in arrival order) and Quit.
import os
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(os.environ["DBUS_STARTER_ADDRESS"])
bus.set_exit_on_disconnect(True)        # never outlive the bus under test
loop = GLib.MainLoop()
log = []


class Service(dbus.service.Object):
    @dbus.service.method("org.kdbus.Test", in_signature="s", out_signature="s")
    def Echo(self, s):
        log.append(str(s))
        return s

    @dbus.service.method("org.kdbus.Test", in_signature="s", out_signature="s")
    def Env(self, key):
        return os.environ.get(str(key), "<unset>")

    @dbus.service.method("org.kdbus.Test", in_signature="", out_signature="as")
    def Log(self):
        return log

    @dbus.service.method("org.kdbus.Test", in_signature="", out_signature="")
    def Quit(self):
        GLib.timeout_add(20, loop.quit)


Service(bus, "/")
name = dbus.service.BusName(sys.argv[1], bus)
loop.run()
