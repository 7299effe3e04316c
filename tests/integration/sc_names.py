# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Name ownership across three clients: every RequestName flag combination of an owner
# and two contenders, queues, ReleaseName codes, invalid names, the owner disconnecting; each
# step logs the reply and the NameOwnerChanged/NameAcquired/NameLost signals each client got,
# in order.

import rawbus
from harness import GoneWatcher, scenario
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
