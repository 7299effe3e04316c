#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# Nothing sticky (sandbox.py's "live" part): an app on a filtered socket (argv[2]) with
# --filter --talk=org.example.Svc, peers straight on the bus (argv[1]). One line per probe,
# "probe: result". The app and the peers are connections of this one process, driven
# asynchronously on one GLib main loop, so that each waits for what the others do.
import os
import sys
import time

import dbus
import dbus.lowlevel
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
bus_address, app_address = sys.argv[1:3]
DRV = ('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus')
ctx = GLib.MainContext.default()


def out(probe, result):
    print('%s: %s' % (probe, result), flush=True)


def wait(pred, seconds=5.0):
    end = time.monotonic() + seconds
    while not pred() and time.monotonic() < end:
        ctx.iteration(False) or time.sleep(0.005)
    return pred()


def acall(conn, dest, path, iface, member, sig='', args=()):
    """A call answered while the main loop runs (the peers here answer it)."""
    box = []
    conn.call_async(dest, path, iface, member, sig, args,
                    lambda *r: box.append('ok %s' % (r[0] if r else '')),
                    lambda e: box.append(e.get_dbus_name()), timeout=10)
    wait(lambda: box, 15)
    return box[0].strip() if box else 'no answer'


def drv(conn, member, sig='', args=()):
    return acall(conn, DRV[0], DRV[1], DRV[2], member, sig, args)


def recorder(log, answer):
    def on_message(conn, msg):
        if msg.get_sender() == 'org.freedesktop.DBus' and msg.get_member() != 'NameOwnerChanged':
            return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED
        t = msg.get_type()
        if t == dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL:
            log.append('call %s from %s' % (msg.get_member(), msg.get_sender()))
            if answer and not msg.get_no_reply():
                reply = dbus.lowlevel.MethodReturnMessage(msg)
                reply.append('pong')
                conn.send_message(reply)
            return dbus.lowlevel.HANDLER_RESULT_HANDLED
        if t == dbus.lowlevel.MESSAGE_TYPE_SIGNAL:
            args = [str(a) for a in msg.get_args_list()]
            log.append('signal %s %s' % (msg.get_member(), ' '.join(args)))
        return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED
    return on_message


svc_log, peer_log, app_log = [], [], []
svc = dbus.bus.BusConnection(bus_address)
svc.add_message_filter(recorder(svc_log, True))
svc.request_name('org.example.Svc')
S = svc.get_unique_name()
peer = dbus.bus.BusConnection(bus_address)
peer.add_message_filter(recorder(peer_log, True))
P = peer.get_unique_name()
app = dbus.bus.BusConnection(app_address)
app.add_message_filter(recorder(app_log, True))
app.add_match_string('type=signal')
A = app.get_unique_name()

# a name's owner is visible while it owns the name, not after
out('svc unique while owning', drv(app, 'NameHasOwner', 's', (S,)))
out('call svc unique while owning', acall(app, S, '/', 'org.test.X', 'Ping'))
svc.release_name('org.example.Svc')
drv(svc, 'GetId')
drv(app, 'GetId')
out('svc unique after release', drv(app, 'NameHasOwner', 's', (S,)))
out('call svc unique after release', acall(app, S, '/', 'org.test.X', 'Ping'))
out('call svc name after release', acall(app, 'org.example.Svc', '/', 'org.test.X', 'Ping'))

# a name acquired after the app connected makes its owner visible at once
svc2 = dbus.bus.BusConnection(bus_address)
svc2.add_message_filter(recorder([], True))
svc2.request_name('org.example.Svc')
S2 = svc2.get_unique_name()
drv(app, 'GetId')
out('new owner visible', drv(app, 'NameHasOwner', 's', (S2,)))
out('call new owner', acall(app, S2, '/', 'org.test.X', 'Ping'))

# a peer that calls the app is visible to it while connected, and may get its signals
out('peer before calling', drv(app, 'NameHasOwner', 's', (P,)))
m = dbus.lowlevel.MethodCallMessage(A, '/', 'org.test.X', 'Hi')
m.set_no_reply(True)
peer.send_message(m)
out('app got the call', wait(lambda: any(l.startswith('call Hi') for l in app_log)))
out('peer while connected', drv(app, 'NameHasOwner', 's', (P,)))
out('peer uid while connected', drv(app, 'GetConnectionUnixUser', 's', (P,)))
sig = dbus.lowlevel.SignalMessage('/', 'org.test.X', 'Back')
sig.set_destination(P)
app.send_message(sig)
out('peer got the app\'s unicast signal', wait(lambda: 'signal Back ' in peer_log, 3))
peer.close()
out('app saw the peer leave', wait(lambda: any(l.startswith('signal NameOwnerChanged %s ' % P)
                                              for l in app_log), 3))
out('peer after leaving', drv(app, 'NameHasOwner', 's', (P,)))
# what the app learns of itself: its own pid (a proxy answers with the app's, not its own)
pid = drv(app, 'GetConnectionUnixProcessID', 's', (A,))
out('own pid', 'ok' if pid == 'ok %d' % os.getpid() else pid)
creds = []
app.call_async(*DRV, 'GetConnectionCredentials', 's', (A,), lambda c: creds.append(c),
               lambda e: creds.append({}))
wait(lambda: creds)
out('own pid in credentials', 'ok' if creds and int(creds[0].get('ProcessID', 0)) == os.getpid()
    else repr(creds))
out('leaks of hidden uniques in NameOwnerChanged',
    ' '.join(sorted(set(l.split()[2] for l in app_log
                        if l.startswith('signal NameOwnerChanged :') and
                        l.split()[2] not in (P, A)))) or '-')
