#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# dbus-python client for the integration tests: calls py-service.py, prints every reply, error
# name and received signal in a deterministic order (one signal receiver per match key; each
# receiver's hits are printed sorted by receiver, in arrival order within a receiver).

import os
import stat
import sys

import dbus
import dbus.bus
import dbus.mainloop.glib
from gi.repository import GLib

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
svc = bus.get_object('com.example.PyService', '/com/example/Obj')
iface = dbus.Interface(svc, 'com.example.Iface')


def show(label, fn):
    try:
        r = fn()
        print(label, '->', repr(r))
    except dbus.DBusException as e:
        print(label, '-> error', e.get_dbus_name())


show('Echo', lambda: iface.Echo('héllo'))
show('Add', lambda: iface.Add(2, 40))
show('Keys', lambda: iface.Keys({'b': dbus.Int32(1), 'a': 'x'}))
show('Fail', lambda: iface.Fail())
show('wrong signature', lambda: iface.Add('x', 'y', signature='ss'))
show('unknown method', lambda: iface.Nope())
show('missing service', lambda: bus.get_object('com.example.Missing', '/').Foo(
    dbus_interface='com.example.X'))
show('NameHasOwner', lambda: bus.name_has_owner('com.example.PyService'))
show('owner is unique', lambda: bus.get_name_owner('com.example.PyService').startswith(':'))
show('Introspect has Echo', lambda: 'name="Echo"' in svc.Introspect(
    dbus_interface='org.freedesktop.DBus.Introspectable'))

# a memfd through the bus both ways, read back on the other side
memfd = os.memfd_create('py-client')
os.write(memfd, b'written by the client')
show('ReadFd(memfd)', lambda: str(iface.ReadFd(dbus.types.UnixFd(memfd))))
os.close(memfd)


def make_fd():
    fd = iface.MakeFd('written by the service').take()
    try:
        st = os.fstat(fd)
        return '%s, %r' % ('regular file' if stat.S_ISREG(st.st_mode) else 'not a file',
                           os.pread(fd, 100, 0).decode())
    finally:
        os.close(fd)


show('MakeFd', make_fd)


# the bus's credentials of this client and of the service: the real uid, pid and groups
def creds(name, pid):
    c = bus.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus',
                          'org.freedesktop.DBus', 'GetConnectionCredentials', 's', [name])
    out = ['UnixUserID is my uid: %s' % (c['UnixUserID'] == os.getuid()),
           'ProcessID: %s' % ('my pid' if c['ProcessID'] == os.getpid() else c['ProcessID']),
           'UnixGroupIDs are my groups: %s' % (
               set(c['UnixGroupIDs']) == set(os.getgroups()) | {os.getgid()}),
           'keys: %s' % sorted(k for k in c if k != 'ProcessFD')]
    if 'ProcessFD' in c:
        fd = c['ProcessFD'].take()
        with open('/proc/self/fdinfo/%d' % fd) as f:
            pids = [x.split()[1] for x in f if x.startswith('Pid:')]
        pids = ['my pid' if x == str(os.getpid()) else x for x in pids]
        os.close(fd)
        print('ProcessFD of %s: pidfd of %s' % (pid, pids))
    return '; '.join(out)


show('credentials of self', lambda: creds(bus.get_unique_name(), 'self'))
show('credentials of service', lambda: creds('com.example.PyService', 'service'))

hits = {}
receivers = {
    'interface': dict(dbus_interface='com.example.Iface'),
    'member-Sig': dict(signal_name='Sig'),
    'path': dict(path='/com/example/Obj'),
    'sender-wellknown': dict(bus_name='com.example.PyService'),
    'sender-unique': dict(bus_name=bus.get_name_owner('com.example.PyService')),
    'sender-other': dict(bus_name='com.example.Nobody'),
    'arg0': dict(arg0='one'),
    'arg0-negative': dict(arg0='nothing'),
    'interface-Other': dict(dbus_interface='com.example.Other'),
    'path-negative': dict(path='/nowhere'),
}
for key, kw in receivers.items():
    def cb(*args, _key=key, **kw2):
        hits.setdefault(_key, []).append('%s:%s' % (kw2['member'], args[0]))
    bus.add_signal_receiver(cb, member_keyword='member', **kw)

loop = GLib.MainLoop()
done = []


def on_done(*a):
    done.append(1)
    # Done is the service's last signal: everything it sent before is dispatched already
    GLib.idle_add(loop.quit)


bus.add_signal_receiver(on_done, signal_name='Done')
iface.Emit()
GLib.timeout_add(5000, loop.quit)
loop.run()
print('Done received:', len(done))
for key in sorted(receivers):
    print('signals for', key, '->', ' '.join(hits.get(key, [])) or 'none')
show('Quit', lambda: iface.Quit())
