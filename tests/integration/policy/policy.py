#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Differential policy and reload tests (issue #3): the same busconfig and the same client
# actions against dbus-daemon (the reference) and kdbusd; the transcripts (reply or error
# NAME of each action, which broadcasts arrived) must be equal. Actions run as root and, when
# the test runs as root, as an unprivileged user it creates (useradd kdbus-ptest); otherwise
# that half is skipped. Reload: a good ReloadConfig changes decisions for peers that stay
# connected; a broken file (ReloadConfig and SIGHUP) leaves the bus serving with its old
# policy. TAP output.
#
# Usage: policy.py KDBUSD [DBUS_DAEMON]

import contextlib
import os
import pwd
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402
from rawbus import BUS, BUS_PATH, Conn  # noqa: E402

TEST_USER = 'kdbus-ptest'

POLICY = '''
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <deny own="org.test.Forbidden"/>
    <deny own_prefix="org.test.Reload"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <deny send_destination="org.test.Service" send_interface="org.test.Secret"/>
    <deny send_type="signal" send_interface="org.test.Noisy"/>
    <deny send_destination="org.test.Service" send_member="Hidden" send_path="/"/>
  </policy>
  <policy context="default">
    <deny receive_interface="org.test.NoRecv"/>
    <deny send_type="error" send_error="org.test.Error.Secret"/>
    <deny own="org.test.GroupOwned"/>
    <deny send_destination="org.test.Service" send_interface="org.test.Fds" min_fds="1"/>
  </policy>
  <policy group="%(group)s">
    <allow own="org.test.GroupOwned"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.test.Service" send_interface="org.test.Secret"/>
    <allow own="org.test.Forbidden"/>
  </policy>
  %(extra)s
'''


def config_text(sock, extra=''):
    return ('<busconfig>\n  <type>session</type>\n  <listen>unix:path=%s</listen>\n'
            '  <auth>EXTERNAL</auth>\n%s\n</busconfig>\n'
            % (sock, POLICY % {'extra': extra, 'group': TEST_USER}))


class Bus:
    def __init__(self, binary, extra='', policy=None):
        self.dir = tempfile.mkdtemp(prefix='kdbus-ptest-')
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, 'bus')
        self.conf = os.path.join(self.dir, 'bus.conf')
        args = []
        if policy is None:
            self.write(extra)
        elif policy == SYSTEM_CONF:
            # the machine's system bus configuration, on a socket of ours (dbus-daemon drops
            # to <user>messagebus</user> after it listens; kdbusd does not drop privileges)
            self.write(text='<busconfig><include>%s</include></busconfig>\n' % SYSTEM_CONF)
            args = ['--address=unix:path=' + self.sock, '--nopidfile']
        else:
            self.write(text='<busconfig>\n  <listen>unix:path=%s</listen>\n%s\n</busconfig>\n'
                       % (self.sock, policy))
        self.err = open(os.path.join(self.dir, 'stderr'), 'w+')
        self.proc = subprocess.Popen([binary, '--config-file=' + self.conf, '--nofork',
                                      '--print-address'] + args, stdout=subprocess.PIPE,
                                     stderr=self.err, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        r, _, _ = select.select([self.proc.stdout], [], [], 15)
        self.address = self.proc.stdout.readline().decode().strip() if r else ''
        if not self.address:
            self.stop()
            raise RuntimeError('%s did not start: %s' % (binary, self.stderr()))
        os.chmod(self.sock, 0o777)

    def write(self, extra='', text=None):
        with open(self.conf, 'w') as f:
            f.write(text if text is not None else config_text(self.sock, extra))

    def stderr(self):
        self.err.flush()
        self.err.seek(0)
        return self.err.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        subprocess.run(['rm', '-rf', self.dir])


@contextlib.contextmanager
def as_user(uid, gid):
    """Connect as @uid: SO_PEERCRED takes the effective ids at connect()."""
    if uid is None:
        yield
        return
    groups = os.getgroups()
    os.setgroups([])
    os.setresgid(gid, gid, 0)
    os.setresuid(uid, uid, 0)
    try:
        yield
    finally:
        os.setresuid(0, 0, 0)
        os.setresgid(0, 0, 0)
        os.setgroups(groups)


def outcome(conn, msg_serial, timeout=2.0):
    """The reply to @msg_serial: 'return' or 'error NAME'."""
    deadline = time.monotonic() + timeout
    while True:
        m = conn.recv(timeout=deadline - time.monotonic())
        if m is None:
            return 'no reply'
        if m.type in (rawbus.METHOD_RETURN, rawbus.ERROR) and m.reply_serial == msg_serial:
            conn.log.remove(m)
            return 'return' if m.type == rawbus.METHOD_RETURN else 'error ' + m.error_name


def call(conn, dest, path, iface, member, sig='', args=(), service=None):
    serial = conn.send(rawbus.Message(rawbus.METHOD_CALL, path=path, interface=iface,
                                      member=member, destination=dest, signature=sig,
                                      body=list(args)))
    if service is not None:   # answer what reaches the service
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            m = service.recv(timeout=deadline - time.monotonic())
            if m is not None and m.type == rawbus.METHOD_CALL and m.member == member:
                service.reply(m)
                break
    return outcome(conn, serial)


def scenario(bus, who):
    """Client actions; returns transcript lines."""
    uid = gid = None
    if who != 'root':
        pw = pwd.getpwnam(TEST_USER)
        uid, gid = pw.pw_uid, pw.pw_gid
    lines = []
    service = Conn(bus.address, name='service')
    service.bus('RequestName', 'su', ['org.test.Service', 4], quiet=True)
    listener = Conn(bus.address, name='listener')
    listener.bus('AddMatch', 's', ["type='signal',interface='org.test.Public'"], quiet=True)
    listener.bus('AddMatch', 's', ["type='signal',interface='org.test.Noisy'"], quiet=True)
    with as_user(uid, gid):
        c = Conn(bus.address, name='client')
    for name in ('org.test.Forbidden', 'org.test.Allowed', 'org.test.Reload.X'):
        lines.append('RequestName %s: %s' % (name, call(c, BUS, BUS_PATH, BUS, 'RequestName',
                                                        'su', [name, 4])))
    for iface, member in (('org.test.Secret', 'Get'), ('org.test.Public', 'Get'),
                          ('org.test.Public', 'Hidden')):
        lines.append('call %s.%s: %s' % (iface, member, call(
            c, 'org.test.Service', '/', iface, member, service=service)))
    for iface in ('org.test.Noisy', 'org.test.Public'):
        c.emit('/', iface, 'Ping')
    c.bus('GetId', quiet=True)          # barrier: the signals went through the bus
    listener.bus('GetId', quiet=True)
    got = sorted(m.interface for m in listener.log if m.type == rawbus.SIGNAL and
                 m.member == 'Ping')
    lines.append('listener received: %s' % (' '.join(got) or 'nothing'))
    for x in (c, service, listener):
        x.close()
    return lines


def errors_scenario(bus, who):
    """Receive rules, denied error replies, unicast signals, eavesdropping, fds."""
    uid = gid = None
    if who != 'root':
        pw = pwd.getpwnam(TEST_USER)
        uid, gid = pw.pw_uid, pw.pw_gid
    lines = []
    service = Conn(bus.address, name='service')
    service.bus('RequestName', 'su', ['org.test.Service', 4], quiet=True)
    spy = Conn(bus.address, name='spy')
    spy.bus('AddMatch', 's', ["eavesdrop=true,interface='org.test.Public'"], quiet=True)
    with as_user(uid, gid):
        c = Conn(bus.address, name='client', fds=True)
    lines.append('RequestName org.test.GroupOwned: ' + call(
        c, BUS, BUS_PATH, BUS, 'RequestName', 'su', ['org.test.GroupOwned', 4]))
    lines.append('call to a receive-denied interface: ' + call(
        c, 'org.test.Service', '/', 'org.test.NoRecv', 'Get', service=service))
    # the service answers with an error the policy does not let it send
    serial = c.send(rawbus.Message(rawbus.METHOD_CALL, path='/', interface='org.test.Public',
                                   member='Fail', destination='org.test.Service'))
    m = service.recv(timeout=1.0)
    while m is not None and m.member != 'Fail':
        m = service.recv(timeout=1.0)
    if m is not None:
        es = service.error(m, 'org.test.Error.Secret', 'secret')
        lines.append('service sends a denied error: service gets ' +
                     outcome(service, es, timeout=0.5))
    lines.append('... caller gets: ' + outcome(c, serial))
    # a unicast signal to an interface the receiver may not receive
    s1 = c.send(rawbus.Message(rawbus.SIGNAL, path='/', interface='org.test.NoRecv',
                               member='Uni', destination=service.unique))
    lines.append('unicast signal to a receive-denied interface: sender gets ' +
                 outcome(c, s1, timeout=0.5))
    got = service.recv(timeout=0.3)
    lines.append('... receiver got: ' + ('%s.%s' % (got.interface, got.member)
                                         if got is not None else 'nothing'))
    # a method call carrying an fd to a destination that refuses fds
    r, w = os.pipe()
    try:
        s2 = c.send(rawbus.Message(rawbus.METHOD_CALL, path='/', interface='org.test.Fds',
                                   member='Take', destination='org.test.Service',
                                   signature='h', body=[0]), fds=[r])
        m = service.recv(timeout=0.5)
        if m is not None and m.type == rawbus.METHOD_CALL:
            service.reply(m)
        lines.append('call with an fd to a min_fds-denied interface: ' + outcome(c, s2))
    finally:
        os.close(r)
        os.close(w)
    lines.append('call seen by an eavesdropper: ' + call(
        c, 'org.test.Service', '/', 'org.test.Public', 'Get', service=service))
    spy.bus('GetId', quiet=True)
    seen = [m for m in spy.log if m.type == rawbus.METHOD_CALL and m.member == 'Get']
    lines.append('... eavesdropper saw: %d' % len(seen))
    for x in (c, service, spy):
        x.close()
    return lines


def eavesdrop_scenario(bus, who):
    """dbus-daemon 1.14 lets only root and the bus's user eavesdrop, whatever the policy's
    eavesdrop= rules allow (here: everything); and an eavesdropper sees the calls the bus
    answered without an error, its own AddMatch among them, after the bus's answer."""
    import re
    uid = gid = None
    if who != 'root':
        pw = pwd.getpwnam(TEST_USER)
        uid, gid = pw.pw_uid, pw.pw_gid
    lines = []
    with as_user(uid, gid):
        spy = Conn(bus.address, name='spy')
        b = Conn(bus.address, name='B')
    names = {spy.unique: 'spy', b.unique: 'B', BUS: 'bus'}

    def norm(text):
        if text in names:
            return names[text]
        for u, n in names.items():
            text = text.replace(u, '<%s>' % n)
        return re.sub(r'pid=%d\b' % os.getpid(), 'pid=<pid>', text)
    for rule in ("eavesdrop='true'", "type='method_call',eavesdrop=true", "eavesdrop='false'"):
        serial = spy.send(rawbus.Message(rawbus.METHOD_CALL, path=BUS_PATH, interface=BUS,
                                         member='AddMatch', destination=BUS, signature='s',
                                         body=[rule]))
        r = None
        while r is None or r.reply_serial != serial:
            r = spy.recv(timeout=2.0)
            if r is None:
                break
        if r is not None and r.type == rawbus.ERROR:
            text = str(r.body[0]).replace(spy.unique, '<spy>')
            text = re.sub(r'pid=%d\b' % os.getpid(), 'pid=<pid>', text)
            lines.append('AddMatch %s: %s %s' % (rule, r.error_name, text))
        else:
            lines.append('AddMatch %s: %s' % (rule, 'return' if r is not None else 'nothing'))
    # what B does; then what the spy saw, in order (it sees nothing unless privileged)
    b.bus('GetId', quiet=True)
    b.bus('RequestName', 'su', ['org.test.Eaves', 4], quiet=True)
    b.bus('GetNameOwner', 's', ['org.test.Missing'], quiet=True)       # an error
    spy.bus('GetId', quiet=True)
    spy.bus('ListQueuedOwners', 's', ['org.test.Eaves'], quiet=True)
    b.bus('GetConnectionUnixUser', 's', [spy.unique], quiet=True)
    b.sync()
    spy.sync()
    for m in spy.log:
        if isinstance(m, str):
            continue
        lines.append('spy saw: %s %s from %s to %s %s' % (
            {rawbus.METHOD_CALL: 'call', rawbus.SIGNAL: 'signal', rawbus.ERROR: 'error',
             rawbus.METHOD_RETURN: 'return'}.get(m.type, m.type), m.member or m.error_name,
            names.get(m.sender, m.sender), names.get(m.destination, m.destination),
            [norm(x) if isinstance(x, str) else x for x in m.body]))
    spy.close()
    b.close()
    return lines


SYSTEM_CONF = '/usr/share/dbus-1/system.conf'


def system_scenario(bus, who):
    """Debian's system.conf (and the system.d files of this machine): a root service owns a
    name its package's file gives it, the client (root or the test user) talks to it, to the
    driver, tries to own names and to call privileged driver methods."""
    uid = gid = None
    if who != 'root':
        pw = pwd.getpwnam(TEST_USER)
        uid, gid = pw.pw_uid, pw.pw_gid
    lines = []
    service = Conn(bus.address, name='service')
    lines.append('root owns org.freedesktop.login1: ' + call(
        service, BUS, BUS_PATH, BUS, 'RequestName', 'su', ['org.freedesktop.login1', 4]))
    with as_user(uid, gid):
        c = Conn(bus.address, name='client')
    lines.append('ListNames: ' + call(c, BUS, BUS_PATH, BUS, 'ListNames'))
    for name in ('org.test.Anything', 'org.freedesktop.login1'):
        lines.append('RequestName %s: %s' % (name, call(c, BUS, BUS_PATH, BUS, 'RequestName',
                                                        'su', [name, 4])))
    lines.append('UpdateActivationEnvironment: ' + call(
        c, BUS, BUS_PATH, BUS, 'UpdateActivationEnvironment', 'a{ss}', [[('A', 'B')]]))
    for iface, member in (('org.freedesktop.login1.Manager', 'ListSessions'),
                          ('org.freedesktop.DBus.Introspectable', 'Introspect'),
                          ('org.freedesktop.login1.Manager', 'NoSuchMethod')):
        lines.append('call %s.%s: %s' % (iface, member, call(
            c, 'org.freedesktop.login1', '/org/freedesktop/login1', iface,
            member, service=service)))
    c.bus('AddMatch', 's', ["type='signal',sender='org.freedesktop.login1'"], quiet=True)
    service.emit('/org/freedesktop/login1',
                 'org.freedesktop.login1.Manager', 'Changed')
    service.bus('GetId', quiet=True)
    c.bus('GetId', quiet=True)
    got = [m.member for m in c.log if m.type == rawbus.SIGNAL and m.member == 'Changed']
    lines.append('client received the service\'s broadcast: %s' % bool(got))
    for x in (c, service):
        x.close()
    return lines


# dbus-daemon checks receive rules for everything, the driver's replies and signals too: a
# configuration that allows sending but no receiving leaves a client without its Hello reply
NO_RECEIVE_POLICY = '''  <policy context="default">
    <allow send_destination="*"/>
    <allow own="*"/>
  </policy>'''


def no_receive_scenario(bus, who):
    c = Conn(bus.address, name='c', hello=False)
    serial = c.send(rawbus.Message(rawbus.METHOD_CALL, path=BUS_PATH, interface=BUS,
                                   member='Hello', destination=BUS))
    lines = ['Hello without receive rules: ' + outcome(c, serial, timeout=1.0)]
    c.close()
    return lines


# forbidding.conf of dbus-daemon's own tests, and more: what a monitor sees of denied copies
# (broadcast receivers, an eavesdropper, the bus's own NameAcquired) and of denied replies.
MONITOR_POLICY = '''  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow own="*"/>
    <allow eavesdrop="true"/>
    <deny send_interface="org.test.CannotSend"/>
    <deny send_interface="org.test.CannotBroadcast" send_broadcast="true"/>
    <deny send_destination="org.test.Picky" send_interface="org.test.NotForPicky"/>
    <deny send_destination="org.test.Spy" send_interface="org.test.Eaves"/>
    <deny receive_interface="org.test.CannotReceive"/>
    <deny receive_interface="org.freedesktop.DBus" receive_member="NameAcquired"/>
    <deny send_type="error" send_error="org.test.Error.Secret" send_requested_reply="true"/>
    <deny receive_type="error" receive_error="org.test.Error.NoRecv"
          receive_requested_reply="true"/>
  </policy>'''


def monitor_scenario(bus, part):
    """A monitor's view (what dbus-daemon 1.14.10 shows it, see dbus-tests' test-monitor
    /monitor/forbidden-broadcast and /monitor/forbidden-reply): a copy the policy denies
    (a broadcast to one receiver, an eavesdropped message, the bus's NameAcquired) is dropped
    with no answer to anyone, and the monitor sees the message and then the AccessDenied
    error the bus made of it (to the sender; to org.freedesktop.DBus for the bus's own);
    a denied requested reply answers its sender AccessDenied. Unique names become labels,
    serials the member of the message answered."""
    mon = Conn(bus.address, name='monitor')
    sender = Conn(bus.address, name='sender')
    picky = Conn(bus.address, name='picky')
    picky.bus('RequestName', 'su', ['org.test.Picky', 4], quiet=True)
    picky.bus('AddMatch', 's', ["type='signal',path='/b'"], quiet=True)
    other = Conn(bus.address, name='other')
    other.bus('AddMatch', 's', ["type='signal',path='/b'"], quiet=True)
    spy = Conn(bus.address, name='spy')
    spy.bus('RequestName', 'su', ['org.test.Spy', 4], quiet=True)
    spy.bus('AddMatch', 's', ["eavesdrop=true,path='/eaves'"], quiet=True)
    service = Conn(bus.address, name='service')
    service.bus('RequestName', 'su', ['org.test.Service', 4], quiet=True)
    conns = (sender, picky, other, spy, service)
    label = {c.unique: c.name for c in conns}
    label[BUS] = 'bus'
    # not quiet: rawbus would hide the errors answering the sender's message of that serial
    mon.call(BUS, BUS_PATH, 'org.freedesktop.DBus.Monitoring', 'BecomeMonitor', 'asu',
             [[], 0])
    lines = []
    if part == 'broadcast':
        for iface in ('org.test.CannotSend', 'org.test.CannotReceive',
                      'org.test.CannotBroadcast', 'org.test.NotForPicky', 'org.test.Fine'):
            sender.emit('/b', iface, 'Sig')
        sender.emit('/eaves', 'org.test.Eaves', 'Uni', dest=picky.unique)
        sender.sync()
    else:
        lines.append('RequestName while NameAcquired may not be received: ' + call(
            sender, BUS, BUS_PATH, BUS, 'RequestName', 'su', ['org.test.Sender', 4]))
    for err in (('org.test.Error.Secret', 'org.test.Error.NoRecv') if part == 'reply' else ()):
        serial = sender.send(rawbus.Message(rawbus.METHOD_CALL, path='/',
                                            interface='org.test.Public', member='Fail',
                                            destination='org.test.Service'))
        m = service.recv(timeout=2.0)
        while m is not None and m.member != 'Fail':
            m = service.recv(timeout=2.0)
        if m is None:
            lines.append('service did not get the call')
            continue
        es = service.error(m, err, 'no')
        lines.append('service answers %s: service gets %s' % (err, outcome(service, es,
                                                                          timeout=1.0)))
        lines.append('... caller gets: ' + outcome(sender, serial, timeout=0.3))
    for c in conns:
        c.sync()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and mon.recv(timeout=0.2) is not None:
        pass
    for c in (picky, other, spy):
        got = ['%s.%s' % (m.interface, m.member) for m in c.log
               if m.type == rawbus.SIGNAL and m.path in ('/b', '/eaves')]
        lines.append('%s received: %s' % (c.name, ' '.join(got) or 'nothing'))
    lines.append('sender received errors: %s' % (' '.join(
        m.error_name for m in sender.log if m.type == rawbus.ERROR) or 'none'))
    sent = {}
    for m in mon.log:
        name = label.get(m.sender, m.sender)
        what = ('%s.%s' % (m.interface, m.member) if m.member else
                m.error_name or rawbus.TYPE_NAMES[m.type])
        sent[(name, m.serial)] = what
        if m.destination == mon.unique or m.member == 'GetId' or (
                m.reply_serial is not None and sent.get((label.get(m.destination),
                                                         m.reply_serial)) == BUS + '.GetId'):
            continue
        line = '%s %s -> %s: %s' % (rawbus.TYPE_NAMES[m.type], name,
                                    label.get(m.destination, m.destination or '*'), what)
        if m.reply_serial is not None:
            line += ' (answers %s)' % sent.get((label.get(m.destination, m.destination),
                                                m.reply_serial), '?')
        if m.type == rawbus.SIGNAL and m.interface == BUS:
            line += ' ' + ' '.join(label.get(a, a) for a in m.body)
        lines.append('monitor: ' + line)
    for c in conns + (mon,):
        c.close()
    return lines


def monitor_broadcast_scenario(bus, who):
    return monitor_scenario(bus, 'broadcast')


def monitor_reply_scenario(bus, who):
    return monitor_scenario(bus, 'reply')


def connect_scenario(bus, who):
    """<deny user=> in the default context: the user cannot connect at all."""
    pw = pwd.getpwnam(TEST_USER)
    bus_lines = []
    for label, ids in (('root', (None, None)), (TEST_USER, (pw.pw_uid, pw.pw_gid))):
        try:
            with as_user(*ids):
                c = Conn(bus.address, name='c')
            r = call(c, BUS, BUS_PATH, BUS, 'GetId')
            c.close()
            bus_lines.append('%s connects: GetId %s' % (label, r))
        except (RuntimeError, rawbus.Disconnected, OSError, TimeoutError):
            bus_lines.append('%s connects: refused' % label)
    return bus_lines


def reload_scenario(bus):
    lines = []
    c = Conn(bus.address, name='client')
    r = call(c, BUS, BUS_PATH, BUS, 'RequestName', 'su', ['org.test.Reload.A', 4])
    lines.append('before reload: RequestName org.test.Reload.A: ' + r)
    bus.write(extra='<policy context="mandatory"><allow own_prefix="org.test.Reload"/></policy>')
    lines.append('good ReloadConfig: ' + call(c, BUS, BUS_PATH, BUS, 'ReloadConfig'))
    r = call(c, BUS, BUS_PATH, BUS, 'RequestName', 'su', ['org.test.Reload.B', 4])
    lines.append('after reload, same peer: RequestName org.test.Reload.B: ' + r)
    bus.write(text='<busconfig>\n<policy context="default"><bogus/></policy>\n</busconfig>\n')
    lines.append('broken ReloadConfig: ' + call(c, BUS, BUS_PATH, BUS, 'ReloadConfig'))
    os.kill(bus.proc.pid, signal.SIGHUP)
    time.sleep(0.2)
    lines.append('bus after broken SIGHUP: GetId ' + call(c, BUS, BUS_PATH, BUS, 'GetId'))
    r = call(c, BUS, BUS_PATH, BUS, 'RequestName', 'su', ['org.test.Reload.C', 4])
    lines.append('old policy kept: RequestName org.test.Reload.C: ' + r)
    d = Conn(bus.address, name='new')
    lines.append('new peer after broken reload: GetId ' + call(d, BUS, BUS_PATH, BUS, 'GetId'))
    bus.write(text='')
    lines.append('empty file ReloadConfig: ' + call(c, BUS, BUS_PATH, BUS, 'ReloadConfig'))
    # a good file through SIGHUP: the stricter policy applies to the connected peer
    bus.write(extra='<policy context="mandatory"><deny own="org.test.Allowed"/></policy>')
    os.kill(bus.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + 5
    while True:     # the reload is asynchronous: poll until the decision changes (or 5 s)
        r = call(c, BUS, BUS_PATH, BUS, 'RequestName', 'su', ['org.test.Allowed', 4])
        if r != 'return' or time.monotonic() > deadline:
            break
        call(c, BUS, BUS_PATH, BUS, 'ReleaseName', 's', ['org.test.Allowed'])
        time.sleep(0.1)
    lines.append('after good SIGHUP, same peer: RequestName org.test.Allowed: ' + r)
    # limits are reloaded too
    bus.write(extra='<limit name="max_match_rules_per_connection">1</limit>')
    lines.append('ReloadConfig with a lower limit: ' + call(c, BUS, BUS_PATH, BUS,
                                                           'ReloadConfig'))
    for i in range(2):
        lines.append('AddMatch %d: %s' % (i, call(c, BUS, BUS_PATH, BUS, 'AddMatch', 's',
                                                  ["type='signal',member='R%d'" % i])))
    os.unlink(bus.conf)
    lines.append('missing file ReloadConfig: ' + call(c, BUS, BUS_PATH, BUS, 'ReloadConfig'))
    c.close()
    d.close()
    return lines


# Differences found by this test and not fixed yet: reported as TAP TODO (visible, not
# failing the suite). Remove an entry when its scenario passes.
KNOWN = {}


def ensure_user():
    if os.geteuid() != 0:
        return False
    try:
        pwd.getpwnam(TEST_USER)
        return True
    except KeyError:
        pass
    r = subprocess.run(['useradd', '--system', '--no-create-home', '--shell',
                        '/usr/sbin/nologin', TEST_USER], capture_output=True)
    return r.returncode == 0


SANITIZER = ('AddressSanitizer', 'LeakSanitizer', 'runtime error:')


def run_both(binaries, fn, *args):
    out = []
    extra = ''
    if fn is connect_scenario:
        extra = '<policy context="mandatory"><deny user="%s"/></policy>' % TEST_USER
    for b in binaries:
        policy = None
        if fn is no_receive_scenario:
            policy = NO_RECEIVE_POLICY
        elif fn in (monitor_broadcast_scenario, monitor_reply_scenario):
            policy = MONITOR_POLICY
        elif fn is system_scenario:
            policy = SYSTEM_CONF
        bus = Bus(b, extra, policy)
        try:
            lines = fn(bus, *args)
        finally:
            bus.stop()
        err = bus.stderr()
        # a sanitizer build of kdbusd must stay clean through every scenario (reloads too)
        for pat in SANITIZER:
            if pat in err:
                lines = lines + ['SANITIZER REPORT: ' + err[err.index(pat):][:2000]]
                break
        out.append((lines, err))
    return out


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else 'dbus-daemon'
    tests = [('as root', scenario, 'root', True), ('as %s' % TEST_USER, scenario, 'user', True),
             ('receive/error/fd/eavesdrop rules as root', errors_scenario, 'root', True),
             ('receive/error/fd/eavesdrop rules as %s' % TEST_USER, errors_scenario, 'user',
              True),
             ('eavesdropping as root', eavesdrop_scenario, 'root', True),
             ('eavesdropping as %s: refused whatever the policy says' % TEST_USER,
              eavesdrop_scenario, 'user', True),
             ('connect rules (deny user=%s)' % TEST_USER, connect_scenario, 'user', True),
             ('no receive rules: the driver\'s replies are not received', no_receive_scenario,
              'root', True),
             ('a monitor\'s view of denied broadcasts and eavesdropping (dbus-tests\' '
              '/monitor/forbidden-broadcast)', monitor_broadcast_scenario, 'root', True),
             ('a monitor\'s view of a denied NameAcquired and denied replies (dbus-tests\' '
              '/monitor/forbidden-reply)', monitor_reply_scenario, 'root', True),
             ('Debian system.conf as root', system_scenario, 'root', True),
             ('Debian system.conf as %s' % TEST_USER, system_scenario, 'user', True),
             ('reload', reload_scenario, None, False)]
    print('TAP version 13')
    print('1..%d' % len(tests))
    have_user = ensure_user()
    failed = 0
    for i, (label, fn, who, policy_needed) in enumerate(tests, 1):
        if who == 'user' and not have_user:
            print('ok %d - %s # SKIP needs root to create user %s' % (i, label, TEST_USER))
            continue
        try:
            args = (who,) if who else ()
            (ref_lines, _), (our_lines, our_err) = run_both([ref, ours], fn, *args)
        except Exception as e:  # noqa: BLE001
            print('not ok %d - %s # %s: %s' % (i, label, type(e).__name__, e))
            failed += 1
            continue
        for x in ref_lines:
            print('# ref: ' + x)
        if ref_lines == our_lines:
            print('ok %d - %s: same decisions and error names' % (i, label))
            continue
        for x in our_lines:
            print('# ours: ' + x)
        if 'no policy compiler' in our_err:
            # what does not depend on enforcement must still agree: reload outcomes, serving
            def keep(lines):
                if fn is not reload_scenario:
                    return []
                return [x for x in lines if 'ReloadConfig' in x or 'GetId' in x]
            if keep(ref_lines) != keep(our_lines):
                print('not ok %d - %s: reload outcomes differ' % (i, label))
                failed += 1
                continue
            print('ok %d - %s # SKIP kdbusd built without the policy compiler (policy not '
                  'enforced yet; reload outcomes and serving compared: same)' % (i, label))
            continue
        if fn in KNOWN:
            print('not ok %d - %s: transcripts differ # TODO %s' % (i, label, KNOWN[fn]))
            continue
        print('not ok %d - %s: transcripts differ' % (i, label))
        failed += 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
