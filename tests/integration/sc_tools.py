# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Scenarios driven by the real client tools and libraries: dbus-send, gdbus, busctl,
# dbus-python (py-client.py/py-service.py), the libdbus program (client-libdbus.c) and
# dbus-monitor. Each scenario's transcript is what the tools printed, normalized.

import os
import re
import select
import signal
import subprocess

from harness import (HERE, PYTHON, EchoService, LineReader, dbus_send, exception,
                     monitor_norm, popen, run, scenario, strip_header_line, tool_out)
from rawbus import BUS, BUS_PATH


@scenario
def sc_dbus_send(ctx):
    svc = EchoService(ctx, 'com.example.Echo')
    # ListNames: the set of well-known names and the number of unique names
    rc, out, err = run(['dbus-send', '--bus=' + ctx.bus.address, '--print-reply',
                        '--dest=' + BUS, BUS_PATH, BUS + '.ListNames'])
    names = re.findall(r'string "([^"]*)"', out)
    ctx.log('ListNames rc=%d well-known=%s uniques=%d' % (
        rc, sorted(n for n in names if not n.startswith(':')),
        len([n for n in names if n.startswith(':')])))
    rc, out, err = run(['dbus-send', '--bus=' + ctx.bus.address, '--print-reply=literal',
                        '--dest=' + BUS, BUS_PATH, BUS + '.GetId'])
    ctx.log('GetId rc=%d format-ok=%s' % (rc, bool(re.fullmatch(r'\s*[0-9a-f]{32}\s*', out))))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=' + BUS, BUS_PATH,
                                             BUS + '.GetNameOwner', 'string:com.example.Nobody'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=' + BUS, BUS_PATH,
                                             BUS + '.GetNameOwner', 'string:com.example.Echo'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/obj',
                                             'com.example.Echo.Echo', 'string:hello',
                                             'int32:42', 'array:string:a,b'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/obj',
                                             'com.example.Echo.Fail'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Missing', '/obj',
                                             'com.example.Echo.Echo'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/obj',
                                             'com.example.Echo.Exit'))
    svc.stop()
    # the callee exited, so its name is gone
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/obj',
                                             'com.example.Echo.Echo'))
    # a signal and --type=method_call without reply
    ctx.lines += tool_out(*run(['dbus-send', '--bus=' + ctx.bus.address, '--type=signal',
                                '/obj', 'com.example.Sig.Hello', 'string:x']))


@scenario
def sc_gdbus(ctx):
    EchoService(ctx, 'com.example.Echo')
    a = ['gdbus', 'call', '--address', ctx.bus.address]
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    BUS + '.GetNameOwner', BUS]))
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    BUS + '.NameHasOwner', 'com.example.Echo']))
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    BUS + '.GetNameOwner', 'com.example.Nobody']))
    ctx.lines += tool_out(*run(a + ['--dest', 'com.example.Echo', '--object-path', '/o',
                                    '--method', 'com.example.Echo.Echo', 'hi', '7']))
    ctx.lines += tool_out(*run(a + ['--dest', 'com.example.Echo', '--object-path', '/o',
                                    '--method', 'com.example.Echo.Fail']))
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    BUS + '.NoSuchMethod']))
    ctx.lines += tool_out(*run(a + ['--dest', BUS, '--object-path', BUS_PATH, '--method',
                                    'org.freedesktop.DBus.Properties.GetAll', BUS]))
    ctx.lines += tool_out(*run(['gdbus', 'introspect', '--address', ctx.bus.address,
                                '--dest', BUS, '--object-path', BUS_PATH]))
    ctx.lines += tool_out(*run(['gdbus', 'introspect', '--address', ctx.bus.address,
                                '--dest', BUS, '--object-path', '/']))


def busctl_norm(lines):
    out = []
    for x in lines:
        x = re.sub(r'\s+', ' ', x)
        # busctl list: PID and process name of the bus itself differ by construction
        x = re.sub(r'^(out: org\.freedesktop\.DBus) (\d+|<BUSPID>) \S+',
                   r'\1 <BUSPID> <BUSPROC>', x)
        x = re.sub(r'^(out: :U\d+) \d+ ', r'\1 <PID> ', x)
        out.append(x)
    return out


@scenario(post=busctl_norm)
def sc_busctl(ctx):
    EchoService(ctx, 'com.example.Echo')
    a = ['busctl', '--address=' + ctx.bus.address, '--no-pager']
    ctx.lines += tool_out(*run(a + ['list', '--no-legend']))
    ctx.lines += tool_out(*run(a + ['call', BUS, BUS_PATH, BUS, 'GetNameOwner', 's', BUS]))
    ctx.lines += tool_out(*run(a + ['call', BUS, BUS_PATH, BUS, 'ListActivatableNames']))
    ctx.lines += tool_out(*run(a + ['call', BUS, BUS_PATH, BUS, 'GetNameOwner', 's',
                                    'com.example.Nobody']))
    ctx.lines += tool_out(*run(a + ['call', 'com.example.Echo', '/o', 'com.example.Echo',
                                    'Echo', 'sas', 'x', '2', 'a', 'b']))
    ctx.lines += tool_out(*run(a + ['introspect', BUS, BUS_PATH]))
    ctx.lines += tool_out(*run(a + ['get-property', BUS, BUS_PATH, BUS, 'Features']))
    ctx.lines += tool_out(*run(a + ['get-property', BUS, BUS_PATH, BUS, 'Interfaces']))
    # credentials of a peer as busctl shows them (from the bus, then /proc of that pid)
    ctx.numbers.append((str(os.getppid()), '<PPID>'))
    ctx.lines += tool_out(*run(a + ['status', 'com.example.Echo']))


exception('dbus-python', 'ProcessFD', r'^out: ProcessFD of ',
          'kdbusd returns ProcessFD (a pidfd) to callers that accept fds; dbus-daemon 1.14 '
          'has no ProcessFD (docs/differences.md#processfd)',
          expect=r"^out: ProcessFD of (self: pidfd of \['my pid'\]|"
                 r"service: pidfd of \['<SVCPID>'\])$")


@scenario
def sc_dbus_python(ctx):
    p = popen([PYTHON, os.path.join(HERE, 'py-service.py'), ctx.bus.address],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.children.append(p)
    r, _, _ = select.select([p.stdout], [], [], 15)
    ready = p.stdout.readline().decode().strip() if r else ''
    ctx.log('service:', ready)
    rc, out, err = run([PYTHON, os.path.join(HERE, 'py-client.py'), ctx.bus.address], timeout=30)
    ctx.lines += tool_out(rc, out, err)
    ctx.numbers.append((str(p.pid), '<SVCPID>'))


@scenario
def sc_libdbus_client(ctx):
    exe = os.environ.get('KDBUS_TEST_LIBDBUS_CLIENT', os.path.join(HERE, 'client-libdbus'))
    if not os.path.exists(exe):
        ctx.log('SKIP: no client-libdbus')
        return
    svc = EchoService(ctx, 'com.example.Echo')
    other = ctx.conn('other')
    other.bus('RequestName', 'su', ['com.example.Shared', 0], quiet=True)
    p = popen([exe, ctx.bus.address,
               'match', "type='signal',sender='org.freedesktop.DBus'",
               'request', 'com.example.Shared', '0',
               'request', 'com.example.Lib', '4',
               'request', 'com.example.Lib', '0',
               'call', 'com.example.Echo', '/o', 'com.example.Echo', 'Echo', 'hello',
               'call', 'com.example.Echo', '/o', 'com.example.Echo', 'Fail', '',
               'call', 'com.example.Nobody', '/o', 'com.example.Echo', 'Echo', 'x',
               'call', BUS, BUS_PATH, BUS, 'GetConnectionUnixUser', 'com.example.Lib',
               'release', 'com.example.Lib',
               'release', 'com.example.Lib',
               'wait-ready',
               'release', 'com.example.Shared'],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE, bufsize=0)
    ctx.children.append(p)
    # hand the shared name over while the libdbus client waits in the queue
    r, _, _ = select.select([p.stdout], [], [], 15)
    first = []
    while r:
        line = p.stdout.readline().decode()
        if not line:
            break
        first.append(line.rstrip('\n'))
        if line.startswith('ready'):
            break
        r, _, _ = select.select([p.stdout], [], [], 15)
    other.bus('ReleaseName', 's', ['com.example.Shared'], quiet=True)
    p.stdin.write(b'go\n')
    p.stdin.flush()
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    ctx.lines += first + tool_out(p.returncode, out.decode(), err.decode())
    svc.stop()


@scenario
def sc_dbus_monitor(ctx):
    """dbus-monitor (BecomeMonitor, or eavesdropping match rules where that is missing)
    sees a call, its reply, an error and a signal, in order."""
    EchoService(ctx, 'com.example.Echo')
    p = popen(['dbus-monitor', '--address', ctx.bus.address,
               "interface='com.example.Echo'", "sender='com.example.Echo'",
               "destination='com.example.Echo'"],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    ctx.children.append(p)
    out = LineReader(p.stdout)
    c = ctx.conn('client')
    # wait until the monitor is attached: it prints one of our probes
    for _ in range(100):
        c.emit('/o', 'com.example.Echo', 'Probe')
        if out.until('member=Probe', 0.1):
            break
    c.emit('/o', 'com.example.Echo', 'ProbeEnd')
    ok = out.until('member=ProbeEnd')
    ctx.log('monitor attached:', ok)
    out.lines = []
    c.call('com.example.Echo', '/o', 'com.example.Echo', 'Echo', 's', ['hi'])
    c.call('com.example.Echo', '/o', 'com.example.Echo', 'Fail')
    c.emit('/o', 'com.example.Echo', 'Sig', 's', ['sig'])
    c.emit('/o', 'com.example.Echo', 'End')
    ctx.log('monitor saw the end:', out.until('member=End'))
    ctx.lines += monitor_norm(out.lines)




class Scripted:
    """A client-libdbus process whose `wait-ready` steps the harness releases one by one."""

    def __init__(self, ctx, label, args):
        self.label = label
        self.p = popen([libdbus_exe(), ctx.bus.address] + args, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
        ctx.children.append(self.p)
        self.out = LineReader(self.p.stdout)
        self.readies = 0

    def ready(self, timeout=10):
        """Waits for the next "ready" (the client has printed all it got until then)."""
        self.readies += 1
        n = self.readies
        if not self.out.wait(lambda ls: sum(x == 'ready' for x in ls) >= n, timeout):
            self.out.lines.append('<no ready %d>' % n)

    def go(self):
        self.p.stdin.write(b'go\n')

    def transcript(self):
        return ['%s: %s' % (self.label, x) for x in self.out.lines]


def libdbus_exe():
    return os.environ.get('KDBUS_TEST_LIBDBUS_CLIENT', os.path.join(HERE, 'client-libdbus'))


LIBDBUS_MATCH_KEYS = [
    ('type', "type='signal'"),
    ('sender', "sender='com.example.Emitter'"),
    ('interface', "interface='com.example.I1'"),
    ('member', "member='M2'"),
    ('path', "path='/a/b'"),
    ('path_namespace', "path_namespace='/a'"),
    ('destination', "destination='@SELF@'"),
    ('argN', "arg1='/a/b/'"),
    ('argNpath', "arg1path='/a/'"),
    ('arg0namespace', "arg0namespace='com.example.foo'"),
]


@scenario
def sc_libdbus_match_keys(ctx):
    """One libdbus client per match key, each with that one rule; two raw emitters send the
    same signals (and one unicast signal to each client); every client prints all it got."""
    e = ctx.conn('E')
    e.bus('RequestName', 'su', ['com.example.Emitter', 4], quiet=True)
    e2 = ctx.conn('E2')
    clients = []
    for key, rule in LIBDBUS_MATCH_KEYS:  # one after the other: their signals are ordered
        c = Scripted(ctx, key, ['match', rule, 'wait-ready', 'wait-ready'])
        c.ready()
        clients.append(c)
    uniques = [x.split()[-1] for c in clients for x in c.out.lines[:1]]
    # one emitter after the other (each round trip to the driver ends its turn): the order
    # between two senders is otherwise not defined
    for em in (e2, e):
        em.emit('/a/b', 'com.example.I1', 'M1', 'ss', ['foo', '/a/b/'])
        em.emit('/a/c', 'com.example.I2', 'M2', 's', ['bar'])
        em.emit('/x', 'com.example.I1', 'M2', 'ss', ['com.example.foo.bar', '/a/b/c/d'])
        em.emit('/a', 'com.example.I2', 'M3', 'os', ['/a/b', '/a'])
        em.emit('/ab', 'com.example.I1', 'M4', 'ss', ['com.example', '/a'])
        if em is e:
            for u in uniques:
                e.emit('/a/b', 'com.example.I1', 'ToYou', 's', ['x'], dest=u)
        em.sync()
    for c in clients:  # each prints what it got, then stops at its second "ready"
        c.go()
    for c in clients:
        c.ready()
        ctx.lines += c.transcript()


@scenario
def sc_libdbus_name_queue(ctx):
    """Three libdbus processes queue for one name and hand it on by releasing it; each
    prints the replies and its NameOwnerChanged/NameAcquired/NameLost signals in order."""
    q = 'com.example.Q'
    noc = ("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',"
           "arg0='%s'" % q)
    lq = ['call', BUS, BUS_PATH, BUS, 'ListQueuedOwners', q]
    a = Scripted(ctx, 'A', ['match', noc, 'request', q, '1', 'wait-ready',
                            'release', q, 'wait-ready', 'wait-ready'])
    a.ready()
    b = Scripted(ctx, 'B', ['match', noc, 'request', q, '0', 'wait-ready',
                            'request', q, '2'] + lq + ['release', q, 'wait-ready',
                                                       'wait-ready'])
    b.ready()
    c = Scripted(ctx, 'C', ['match', noc, 'request', q, '4', 'request', q, '0'] + lq +
                 ['wait-ready', 'release', q, 'release', q, 'wait-ready'])
    c.ready()
    for x in (a, b, c):  # A hands over to B, B to C, C to nobody
        x.go()
        x.ready()
    for x in (a, b):  # everyone has seen the last NameOwnerChanged
        x.go()
        x.ready()
    for x in (a, b, c):
        ctx.lines += x.transcript()


@scenario
def sc_tool_signals(ctx):
    """Signals sent by dbus-send, gdbus emit and busctl emit reach a client whose match rule
    selects them (broadcast and unicast), in the order sent, with their arguments. `gdbus
    emit --address` without --dest sends before Hello (it is not a bus connection): dropped."""
    r = ctx.conn('R')
    r.bus('AddMatch', 's', ["type='signal',interface='com.example.Sig'"], quiet=True)
    r.log = []
    addr = ctx.bus.address
    sends = [  # (argv, whether R must get it)
        (['dbus-send', '--bus=' + addr, '--type=signal', '/o', 'com.example.Sig.FromDbusSend',
          'string:x', 'int32:7'], True),
        (['dbus-send', '--bus=' + addr, '--type=signal', '--dest=' + r.unique, '/o',
          'com.example.Sig.UnicastDbusSend', 'string:y'], True),
        (['gdbus', 'emit', '--address', addr, '--object-path', '/o/g', '--signal',
          'com.example.Sig.FromGdbus', "'s'", '3'], False),
        (['gdbus', 'emit', '--address', addr, '--object-path', '/o/g', '--dest', r.unique,
          '--signal', 'com.example.Sig.UnicastGdbus', "'u'"], True),
        (['busctl', '--address=' + addr, 'emit', '/o/b', 'com.example.Sig', 'FromBusctl',
          'sas', 'z', '2', 'a', 'b'], True),
        (['dbus-send', '--bus=' + addr, '--type=signal', '/o',
          'com.example.Other.NotMatched'], False),
    ]
    for argv, expected in sends:
        rc, out, err = run(argv)
        shown = [a for a in argv if addr not in a and a != '--address']
        if argv[:2] == ['gdbus', 'emit'] and '--dest' not in argv:
            # Sent before Hello: the bus disconnects the sender, and whether that lands
            # before or after gdbus's final flush is a race on either bus (rc 0, or rc 1
            # "The connection is closed"). What counts is that R does not get it (below).
            ctx.log('%s: sent before Hello (rc not compared)' % ' '.join(shown))
            continue
        ctx.log('%s: rc=%d %s' % (' '.join(shown), rc, err.strip()))
        if expected:  # each tool exits once its signal is sent: wait for it to arrive
            m = r.recv(10)
            ctx.log('  R got', m.describe() if m else 'nothing')
    r.log = []
    r.sync()
    ctx.log('R got otherwise', r.take_log())


@scenario(builtin_session=True)
def sc_builtin_session(ctx):
    """kdbusd started as a drop-in `kdbusd --session --address=...` (no config file) serves
    the same as dbus-daemon with its session configuration: registration, calls to the
    driver and to a peer, errors, ownership and signals."""
    svc = EchoService(ctx, 'com.example.Echo')
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=' + BUS, BUS_PATH,
                                             BUS + '.GetNameOwner', 'string:com.example.Echo'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/o',
                                             'com.example.Echo.Echo', 'string:hi'))
    ctx.lines += strip_header_line(dbus_send(ctx, '--dest=com.example.Echo', '/o',
                                             'com.example.Echo.Fail'))
    a = ['busctl', '--address=' + ctx.bus.address, '--no-pager']
    ctx.lines += tool_out(*run(a + ['call', BUS, BUS_PATH, BUS, 'RequestName', 'su',
                                    'com.example.Other', '0']))
    r = ctx.conn('R')
    r.bus('AddMatch', 's', ["interface='com.example.Sig'"], quiet=True)
    r.log = []
    ctx.lines += tool_out(*run(['dbus-send', '--bus=' + ctx.bus.address, '--type=signal',
                                '/o', 'com.example.Sig.Hello', 'string:x']))
    m = r.recv(10)
    ctx.log('R got', m.describe() if m else 'nothing')
    svc.stop()
