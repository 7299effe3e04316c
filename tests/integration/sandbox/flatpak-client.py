#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# The app inside a bwrap sandbox that sees nothing of the host but /usr and the two proxy
# sockets flatpak binds in (DBUS_SESSION_BUS_ADDRESS, AT_SPI_BUS_ADDRESS). One line per
# step; then it waits for a line on stdin and tries the session bus once more.
import os
import sys

import dbus
import dbus.lowlevel
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
APP = sys.argv[1]
session = dbus.bus.BusConnection(os.environ['DBUS_SESSION_BUS_ADDRESS'])
got = []


def on_message(conn, msg):
    if msg.get_type() == dbus.lowlevel.MESSAGE_TYPE_SIGNAL and msg.get_member() == 'Changed':
        got.append(msg.get_path())
    return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED


def out(*a):
    print(*a, flush=True)


def attempt(f):
    try:
        return f()
    except dbus.DBusException as e:
        return e.get_dbus_name()


session.add_message_filter(on_message)
out('sees', ' '.join(sorted(str(n) for n in os.listdir('/run/flatpak'))))
out('unique', session.get_unique_name(), os.getpid())
out('own', attempt(lambda: int(session.request_name(APP))))
out('own mpris', attempt(lambda: int(session.request_name('org.mpris.MediaPlayer2.' + APP))))
out('own other', attempt(lambda: int(session.request_name('org.example.Other'))))
out('names', ' '.join(sorted(str(n) for n in session.list_names() if not n.startswith(':'))))
session.add_match_string('type=signal')
out('portal', attempt(lambda: str(session.call_blocking(
    'org.freedesktop.portal.Test', '/org/freedesktop/portal/desktop', 'org.freedesktop.portal.X',
    'Emit', '', ()))))
session.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                      'GetId', '', ())
ctx = GLib.MainContext.default()
while ctx.iteration(False):
    pass
out('broadcasts', ' '.join(sorted(got)))
out('hidden', attempt(lambda: str(session.call_blocking(
    'org.example.Hidden', '/', 'org.test.X', 'Ping', '', ()))))

a11y = dbus.bus.BusConnection(os.environ['AT_SPI_BUS_ADDRESS'])
out('a11y allowed', attempt(lambda: str(a11y.call_blocking(
    'org.a11y.atspi.Registry', '/org/a11y/atspi/registry', 'org.a11y.atspi.Registry',
    'GetRegisteredEvents', '', ()))))
out('a11y denied', attempt(lambda: str(a11y.call_blocking(
    'org.a11y.atspi.Registry', '/org/a11y/atspi/registry', 'org.a11y.atspi.Registry',
    'SomethingElse', '', ()))))
uniques = [n for n in a11y.list_names() if n.startswith(':')]
out('a11y sloppy uniques', len(uniques) > 1)
out('a11y hidden owner', attempt(lambda: str(a11y.get_name_owner('org.example.Hidden'))))
out('ready')
sys.stdin.readline()
out('after', attempt(lambda: str(session.call_blocking(
    'org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'GetId', '', ()))))
