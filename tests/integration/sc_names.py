# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Name ownership across three clients: every RequestName flag combination of an owner
# and two contenders, queues, ReleaseName codes, invalid names, the owner disconnecting; each
# step logs the reply and the NameOwnerChanged/NameAcquired/NameLost signals each client got,
# in order.

import os
import resource
import socket

import rawbus
from harness import FrozenBus, GoneWatcher, scenario
from rawbus import BUS, Message


NAME = 'com.example.Queued'


def ownership_step(ctx, conns, label, fn):
    res = fn()
    for c in conns:
        c.sync()
    ctx.log('==', label, '->', res)
    for c in conns:
        for x in c.take_log():
            ctx.log('  %s got %s' % (c.name, x))


@scenario
def sc_name_ownership(ctx):
    a, b, c = ctx.conn('A'), ctx.conn('B'), ctx.conn('C')
    conns = [a, b, c]
    for x in conns:
        x.bus('AddMatch', 's', ["type='signal',sender='org.freedesktop.DBus',"
                                "member='NameOwnerChanged',arg0='%s'" % NAME], quiet=True)

    def req(conn, flags, name=NAME):
        def f():
            r = conn.bus('RequestName', 'su', [name, flags], label='RequestName')
            return '%s RequestName(%s,%d) = %s' % (conn.name, name, flags,
                                                   r.error_name or r.body)
        return f

    def rel(conn, name=NAME):
        def f():
            r = conn.bus('ReleaseName', 's', [name], label='ReleaseName')
            return '%s ReleaseName(%s) = %s' % (conn.name, name, r.error_name or r.body)
        return f

    def queued(name=NAME):
        def f():
            r = a.bus('ListQueuedOwners', 's', [name], quiet=True)
            o = a.bus('GetNameOwner', 's', [name], quiet=True)
            return 'queue=%s owner=%s' % (r.error_name or r.body, o.error_name or o.body)
        return f

    # every flag combination of the owner and of a contender, then of a third in the queue
    for fa in range(8):
        for fb in range(8):
            ownership_step(ctx, conns, 'A %d / B %d' % (fa, fb), req(a, fa))
            ownership_step(ctx, conns, '', req(b, fb))
            ownership_step(ctx, conns, '', req(c, fb ^ 2))
            ownership_step(ctx, conns, '', queued())
            ownership_step(ctx, conns, '', req(a, fa))
            ownership_step(ctx, conns, '', queued())
            for x in (a, b, c):
                ownership_step(ctx, conns, '', rel(x))
            ownership_step(ctx, conns, '', queued())
    # release codes and the queue handing over
    for step in (req(a, 0), req(b, 0), req(c, 4), req(c, 0), queued(), rel(c), rel(c),
                 rel(a, 'com.example.Never'), rel(a, ':1.9999'), queued(), rel(a), queued(),
                 rel(b), queued(), req(a, 8), req(a, 0xffffffff), rel(a), req(a, 1),
                 req(b, 2), req(c, 3), queued()):
        ownership_step(ctx, conns, '', step)
    # names that cannot be owned
    for n in (a.unique, ':1.4242', 'org.freedesktop.DBus', 'nodots', 'a..b', '', 'x' * 256,
              '1a.b', 'com.example.' + 'é'):
        ownership_step(ctx, conns, '', req(a, 0, n))
        ownership_step(ctx, conns, '', rel(a, n))
    ownership_step(ctx, conns, '', queued('nodots'))
    ownership_step(ctx, conns, '', queued('com.example.Never'))
    # the owner disconnects: the queue moves on, everyone sees it
    w = GoneWatcher(ctx)
    b.close()
    ctx.log('B gone:', not w.wait([b.unique]))
    c.sync()
    a.sync()
    ctx.log('== B disconnected')
    for x in (a, c):
        for line in x.take_log():
            ctx.log('  %s got %s' % (x.name, line))
    ownership_step(ctx, [a, c], '', queued())




@scenario
def sc_disconnect_order(ctx):
    """A peer that owns names, has a queued request and owes replies disconnects: what the
    callers and watchers see, in order (NameOwnerChanged per name, NameAcquired of the next
    in the queue, the unique name, the errors for the calls it owed)."""
    a, b, c = ctx.conn('A'), ctx.conn('B'), ctx.conn('C')
    for x in (a, c):
        x.bus('AddMatch', 's', ["type='signal',sender='org.freedesktop.DBus',"
                                "member='NameOwnerChanged'"], quiet=True)
    for n in ('com.example.First', 'com.example.Second', 'com.example.Third'):
        b.bus('RequestName', 'su', [n, 0], quiet=True)
    c.bus('RequestName', 'su', ['com.example.Second', 0], quiet=True)  # queued behind B
    b.bus('RequestName', 'su', ['com.example.Theirs', 0], quiet=True)
    for member in ('One', 'Two', 'Three'):
        a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.X',
                       member=member, destination=b.unique), label=member)
    for _ in range(3):
        m = b.recv(10)
        while m is not None and m.sender == BUS:
            m = b.recv(10)
    for x in (a, b, c):
        x.sync()
        x.take_log()
    w = GoneWatcher(ctx)
    b.close()
    ctx.log('B gone:', not w.wait([b.unique]))
    for x in (a, c):
        x.sync()
        for line in x.take_log():
            ctx.log('%s got %s' % (x.name, line))
    ctx.log('owner of Second:', a.bus('GetNameOwner', 's', ['com.example.Second'],
                                      quiet=True).body)


def closing_story(who, msgs, labels, b, watched_before):
    """Check that what @who saw (@msgs, in order) of B's leaving holds together; return the
    lines for the transcript, the same whichever moment the bus tore B down. @b: B's
    unique name; @watched_before: @who's NameOwnerChanged match predates B's hangup."""
    gone = {}       # name -> position of its NameOwnerChanged from B
    for i, m in enumerate(msgs):
        if m.member == 'NameOwnerChanged' and m.body[1] == b:
            gone.setdefault(m.body[0], i)
    lines = []
    if watched_before:
        lines.append('%s saw B leave: %s' % (who, ', '.join(
            '%s->%s' % (n if n != b else 'B', msgs[i].body[2] and 'next' or 'none')
            for n, i in sorted(gone.items(), key=lambda x: x[1]))))
    for i, m in enumerate(msgs):
        label = labels.get(m.reply_serial) if m.reply_serial is not None else None
        if label and label.startswith('GetNameOwner('):
            name = 'com.example.' + label[len('GetNameOwner('):-1]
            said_b = m.type == rawbus.METHOD_RETURN and m.body[0] == b
            if name in gone:
                ok = said_b == (i < gone[name])
            else:   # no news of it: only if it was gone before @who watched
                ok = not said_b and not watched_before
            if not ok:
                raise AssertionError('%s: %s answered %s at %d, its NameOwnerChanged at %s'
                                     % (who, label, m.body or m.error_name, i, gone.get(name)))
            lines.append('%s %s: the owner of the moment' % (who, label))
        elif label in ('Owed', 'ByUnique', 'ByName'):
            dest = 'com.example.First' if label == 'ByName' else b
            if m.type != rawbus.ERROR:
                raise AssertionError('%s: %s answered %s' % (who, label, m.describe()))
            # NoReply: B had the call and left; else it was gone: after the news either way
            after = gone.get(b if m.error_name.endswith('.NoReply') else dest)
            if after is None or after > i:
                raise AssertionError('%s: %s failed (%s) at %d before B left (%s)'
                                     % (who, label, m.error_name, i, gone))
            lines.append('%s %s: an error after B left' % (who, label))
        elif m.member == 'NameAcquired' and m.body[0] in gone:
            if gone[m.body[0]] > i:
                raise AssertionError('%s: NameAcquired %s before B released it'
                                     % (who, m.body[0]))
            lines.append('%s NameAcquired(%s) after B released it' % (who, m.body[0]))
    return sorted(lines)


# more than one epoll_wait() of kdbusd returns (LOOP_EVENTS_MAX), so B's teardown comes
# wakeups after the requests below are answered
CLOSING_FILLERS = 1100


def fd_soft_limit(pid):
    with open('/proc/%d/limits' % pid) as f:
        for line in f:
            if line.startswith('Max open files'):
                v = line.split()[3]
                return 1 << 30 if v == 'unlimited' else int(v)
    return 1024


def filler_peers(ctx, watcher, n):
    """Up to @n peers that said Hello (pipelined with their AUTH, nothing read), registered
    once @watcher (a NameOwnerChanged match) saw them arrive: fewer if the bus's fd limit or
    ours is lower (ours is raised to the hard limit for them)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY:
        n = min(n, hard - 256)
    n = max(0, min(n, fd_soft_limit(ctx.bus.proc.pid) - 64))
    if soft != resource.RLIM_INFINITY and soft < n + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n + 256, hard))
    hello = (b'\0AUTH EXTERNAL ' + str(os.getuid()).encode().hex().encode() +
             b'\r\nBEGIN\r\n' +
             Message(rawbus.METHOD_CALL, path='/org/freedesktop/DBus', interface=BUS,
                     member='Hello', destination=BUS).to_bytes(1))
    socks = []
    for _ in range(n):
        f = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        f.connect(rawbus.socket_path(ctx.bus.address))
        f.sendall(hello)
        socks.append(f)
    arrived = 0
    while arrived < n:
        m = watcher.recv(30)
        if m is None:
            raise TimeoutError('%d of %d filler peers registered' % (arrived, n))
        if m.member == 'NameOwnerChanged' and m.body[1] == '':
            arrived += 1
    watcher.log = []
    return socks


@scenario
def sc_closing_window(ctx):
    """A peer closes while the bus is busy (stopped here, so that everything below reaches
    it at once, after CLOSING_FILLERS other peers closed): B owns two names (C queued behind it for one) and owes A a reply. Right
    after B's hangup A asks who owns B's name and calls B by both names, C asks who owns
    the name it waits for, and D connects, watches NameOwnerChanged and asks the same.
    Whatever a bus has done with B by the time it reads them (dbus-daemon: B first; kdbusd:
    the others' requests first, B's teardown in a later slice, as if its hangup came
    later), each client's story must hold together (closing_story()): B reported as owner
    exactly until the name's NameOwnerChanged, the calls to B answered by errors after B
    left, C's NameAcquired after B released the name."""
    noc = ["type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged'"]
    a, b, c = ctx.conn('A'), ctx.conn('B'), ctx.conn('C')
    for x in (a, c):
        x.bus('AddMatch', 's', noc, quiet=True)
    for n in ('com.example.First', 'com.example.Second'):
        b.bus('RequestName', 'su', [n, 0], quiet=True)
    c.bus('RequestName', 'su', ['com.example.Second', 0], quiet=True)  # queued behind B
    a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.X', member='Owed',
                   destination=b.unique), label='Owed')
    m = b.recv(10)
    while m is not None and m.sender == BUS:
        m = b.recv(10)
    w = GoneWatcher(ctx)
    d = ctx.conn('D', auth=False, hello=False)
    # (rawbus uses select(): its sockets first, below fd 1024)
    fillers = filler_peers(ctx, a, CLOSING_FILLERS)
    for x in (a, b, c):
        x.sync()
        x.take_log()

    def driver(conn, member, sig, args, label):
        conn.send(Message(rawbus.METHOD_CALL, path='/org/freedesktop/DBus', interface=BUS,
                          member=member, destination=BUS, signature=sig, body=args),
                  label=label)

    with FrozenBus(ctx):
        for f in fillers:
            f.close()
        b.close()
        driver(a, 'GetNameOwner', 's', ['com.example.First'], 'GetNameOwner(First)')
        for dest, member in ((b.unique, 'ByUnique'), ('com.example.First', 'ByName')):
            a.send(Message(rawbus.METHOD_CALL, path='/o', interface='com.example.X',
                           member=member, destination=dest), label=member)
        driver(c, 'GetNameOwner', 's', ['com.example.Second'], 'GetNameOwner(Second)')
        uid = str(os.getuid()).encode().hex().encode()
        d.send_raw(b'\0AUTH EXTERNAL ' + uid + b'\r\nBEGIN\r\n')
        driver(d, 'Hello', '', [], 'Hello')
        driver(d, 'AddMatch', 's', noc, 'AddMatch')
        driver(d, 'GetNameOwner', 's', ['com.example.First'], 'GetNameOwner(First)')
    ctx.log('B gone:', not w.wait([b.unique]))
    ctx.log('D:', d.sasl_line()[:3])
    for x in (a, c, d):
        x.sync()
        for line in closing_story(x.name, x.log, x.labels, b.unique, x is not d):
            ctx.log(line)
        x.take_log()
