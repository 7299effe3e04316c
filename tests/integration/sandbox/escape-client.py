#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# The sandboxed client: tries every way it knows to learn of or reach the peers it may
# not see (org.example.Hidden, and its unique name, "guessed": the test hands it over),
# or may only see (org.example.Seen). One line per probe: "probe: result". argv: ADDRESS
# HIDDEN_UNIQUE SEEN_UNIQUE.
import os
import sys

import dbus
import dbus.lowlevel
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402  (a wire client that sends what no library would)

DBusGMainLoop(set_as_default=True)
address, hidden_unique, seen_unique = sys.argv[1:4]
bus = dbus.bus.BusConnection(address)
raw = rawbus.Conn(address, name='raw')
DRV = ('org.freedesktop.DBus', '/org/freedesktop/DBus')
got = []


def on_message(conn, msg):
    if msg.get_type() in (dbus.lowlevel.MESSAGE_TYPE_SIGNAL, dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL):
        if msg.get_sender() != 'org.freedesktop.DBus':
            got.append('%s@%s' % (msg.get_member(), msg.get_path()))
    return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED


bus.add_message_filter(on_message)


def out(probe, result):
    print('%s: %s' % (probe, result), flush=True)


def call(dest, path, iface, member, sig='', args=(), **kw):
    try:
        r = bus.call_blocking(dest, path, iface, member, sig, args, timeout=10, **kw)
        if r is None or r == []:
            return 'ok'
        if isinstance(r, (list, dbus.Array, dict, dbus.Dictionary)):
            return 'ok %d' % len(r)
        if isinstance(r, dbus.Boolean):
            return 'ok %s' % bool(r)
        if isinstance(r, dbus.types.UnixFd):
            return 'ok fd'
        return 'ok %s' % r
    except dbus.DBusException as e:
        return e.get_dbus_name()


def drv(member, sig='', args=(), iface='org.freedesktop.DBus'):
    return call(DRV[0], DRV[1], iface, member, sig, args)


def send_raw(msg):
    bus.send_message(msg)


def flush():
    # a round trip: the bus has routed everything sent before it
    bus.call_blocking(DRV[0], DRV[1], 'org.freedesktop.DBus', 'GetId', '', ())
    ctx = GLib.MainContext.default()
    while ctx.iteration(False):
        pass


names = [str(n) for n in bus.call_blocking(*DRV, 'org.freedesktop.DBus', 'ListNames', '', ())]
out('ListNames', ' '.join(sorted(n for n in names if not n.startswith(':'))))
out('ListNames uniques', ' '.join(sorted(
    'own' if n == bus.get_unique_name() else 'hidden' if n == hidden_unique else
    'seen' if n == seen_unique else 'other' for n in names if n.startswith(':'))))
acts = [str(n) for n in bus.call_blocking(*DRV, 'org.freedesktop.DBus', 'ListActivatableNames',
                                          '', ())]
out('ListActivatableNames', ' '.join(sorted(n for n in acts if n.startswith('org.example'))))
for who in ('org.example.Hidden', hidden_unique, 'org.example.Seen'):
    tag = 'hidden-unique' if who == hidden_unique else who
    out('NameHasOwner ' + tag, drv('NameHasOwner', 's', (who,)))
    out('GetNameOwner ' + tag, drv('GetNameOwner', 's', (who,)))
    for m in ('GetConnectionUnixUser', 'GetConnectionUnixProcessID', 'GetConnectionCredentials',
              'GetConnectionUnixProcessFD', 'GetConnectionSELinuxSecurityContext',
              'GetAdtAuditSessionData'):
        out('%s %s' % (m, tag), drv(m, 's', (who,)))
    out('ListQueuedOwners ' + tag, drv('ListQueuedOwners', 's', (who,)))
    out('ReleaseName ' + tag, drv('ReleaseName', 's', (who,)))
out('RequestName org.example.Hidden', drv('RequestName', 'su', ('org.example.Hidden', 4)))
for m, sig, args in (('GetStats', '', ()), ('GetAllMatchRules', '', ()),
                     ('GetConnectionStats', 's', (hidden_unique,)),
                     ('GetConnectionStats', 's', (bus.get_unique_name(),))):
    out('Debug.Stats.%s%s' % (m, ' hidden' if args and args[0] == hidden_unique else
                              ' self' if args else ''),
        drv(m, sig, args, iface='org.freedesktop.DBus.Debug.Stats'))
out('Peer.Ping bus', drv('Ping', iface='org.freedesktop.DBus.Peer'))
out('Peer.GetMachineId bus', drv('GetMachineId', iface='org.freedesktop.DBus.Peer'))
out('Properties.Get Features', drv('Get', 'ss', ('org.freedesktop.DBus', 'Features'),
                                   iface='org.freedesktop.DBus.Properties'))
out('ReloadConfig', drv('ReloadConfig'))
out('UpdateActivationEnvironment', drv('UpdateActivationEnvironment', 'a{ss}', ({'A': 'b'},)))
out('BecomeMonitor', drv('BecomeMonitor', 'asu', ([], 0), iface='org.freedesktop.DBus.Monitoring'))
out('StartServiceByName hidden-activatable',
    drv('StartServiceByName', 'su', ('org.example.HiddenActivatable', 0)))
out('auto-start hidden-activatable',
    call('org.example.HiddenActivatable', '/', 'org.test.X', 'Ping'))
# SEE is not enough to start a service (xdg-dbus-proxy asks TALK), running or not
out('StartServiceByName org.example.Seen', drv('StartServiceByName', 'su', ('org.example.Seen', 0)))
out('StartServiceByName seen-activatable',
    drv('StartServiceByName', 'su', ('org.example.SeenActivatable', 0)))
out('auto-start seen-activatable', call('org.example.SeenActivatable', '/', 'org.test.X', 'Ping'))
out('AddMatch eavesdrop', drv('AddMatch', 's', ('eavesdrop=true',)))
out('AddMatch all', drv('AddMatch', 's', ('type=signal',)))

# calls
for who in ('org.example.Hidden', hidden_unique, 'org.example.Seen', seen_unique,
            'org.freedesktop.portal.Test'):
    tag = {hidden_unique: 'hidden-unique', seen_unique: 'seen-unique'}.get(who, who)
    out('call ' + tag, call(who, '/x', 'org.test.X', 'Ping'))
r, w = os.pipe()
out('call portal with fd', call('org.freedesktop.portal.Test', '/x', 'org.test.X', 'TakeFd', 'h',
                                (dbus.types.UnixFd(r),)))
out('call hidden with fd', call(hidden_unique, '/x', 'org.test.X', 'TakeFd', 'h',
                                (dbus.types.UnixFd(r),)))
# messages without answer: no-reply calls, unicast signals, replies to calls never made
for who in ('org.example.Hidden', hidden_unique, 'org.example.Seen', seen_unique):
    m = dbus.lowlevel.MethodCallMessage(who, '/x', 'org.test.X', 'NoReply')
    m.set_no_reply(True)
    send_raw(m)
    s = dbus.lowlevel.SignalMessage('/x', 'org.test.X', 'Unicast')
    s.set_destination(who)
    send_raw(s)
    # answers to calls the peer never made to us (serials 1..3: its Hello and first calls)
    for serial in (1, 2, 3):
        raw.send(rawbus.Message(rawbus.ERROR, error_name='org.test.Error', reply_serial=serial,
                                destination=who, signature='s', body=['unasked']))
        raw.send(rawbus.Message(rawbus.METHOD_RETURN, reply_serial=serial, destination=who))
# a broadcast of its own: everybody with a match may hear it (xdg-dbus-proxy passes it too)
send_raw(dbus.lowlevel.SignalMessage('/org/example/App', 'org.example.App', 'Hello'))
raw.sync()
flush()
# what it overhears: the portal's broadcasts (rule: /org/freedesktop/portal/*), and the
# portal's private call to the hidden peer (Trigger) must not show
got.clear()
out('portal Emit', call('org.freedesktop.portal.Test', '/x', 'org.test.X', 'Emit'))
out('portal Trigger', call('org.freedesktop.portal.Test', '/x', 'org.test.X', 'Trigger'))
flush()
out('received', ' '.join(sorted(got)) or '-')
