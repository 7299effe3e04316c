#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# dbus-python service for the integration tests: owns com.example.PyService, exports
# /com/example/Obj (com.example.Iface) and prints "ready" once the name is owned. The client
# (py-client.py) drives it; Emit makes it send signals the client filters with match rules.
# Quits when asked (Quit) or when the bus goes away.

import os
import sys

import dbus
import dbus.bus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

IFACE = 'com.example.Iface'


class CustomError(dbus.DBusException):
    _dbus_error_name = 'com.example.Error.Custom'


class Obj(dbus.service.Object):
    @dbus.service.method(IFACE, in_signature='s', out_signature='s')
    def Echo(self, s):
        return s

    @dbus.service.method(IFACE, in_signature='ii', out_signature='i')
    def Add(self, a, b):
        return a + b

    @dbus.service.method(IFACE, in_signature='a{sv}', out_signature='as')
    def Keys(self, d):
        return sorted(d.keys())

    @dbus.service.method(IFACE, in_signature='', out_signature='')
    def Fail(self):
        raise CustomError('it failed on purpose')

    @dbus.service.method(IFACE, in_signature='', out_signature='', sender_keyword='sender')
    def Emit(self, sender=None):
        self.Sig('one', dbus.ObjectPath('/com/example/Obj/x'))
        self.Other('two', dbus.ObjectPath('/elsewhere'))
        Obj2.Sig('three', dbus.ObjectPath('/com/example/Obj2'))
        self.Done('done')

    @dbus.service.signal(IFACE, signature='so')
    def Sig(self, s, o):
        pass

    @dbus.service.signal('com.example.Other', signature='so')
    def Other(self, s, o):
        pass

    @dbus.service.signal(IFACE, signature='s')
    def Done(self, s):
        pass

    @dbus.service.method(IFACE, in_signature='h', out_signature='s')
    def ReadFd(self, fd):
        """Reads what the client wrote into the memfd it passed, from offset 0."""
        n = fd.take()
        try:
            return os.pread(n, 100, 0).decode()
        finally:
            os.close(n)

    @dbus.service.method(IFACE, in_signature='s', out_signature='h')
    def MakeFd(self, text):
        """A new memfd holding @text, passed back to the caller."""
        n = os.memfd_create('py-service')
        os.write(n, text.encode())
        fd = dbus.types.UnixFd(n)
        os.close(n)
        return fd

    @dbus.service.method(IFACE, in_signature='', out_signature='')
    def Quit(self):
        GLib.idle_add(loop.quit)


class Obj2Class(dbus.service.Object):
    @dbus.service.signal(IFACE, signature='so')
    def Sig(self, s, o):
        pass


dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
bus.call_on_disconnection(lambda c: loop.quit())
name = dbus.service.BusName('com.example.PyService', bus)
obj = Obj(bus, '/com/example/Obj')
Obj2 = Obj2Class(bus, '/com/example/Obj2')
loop = GLib.MainLoop()
print('ready', flush=True)
loop.run()
