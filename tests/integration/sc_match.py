# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Broadcast routing by match rules: every key of the specification (type, sender,
# interface, member, path, path_namespace, destination, argN, argNpath, arg0namespace) against
# a fixed set of signals, duplicate rules, RemoveMatch, and rules AddMatch must refuse.

import rawbus
from harness import scenario


MATCH_RULES = [
    "type='signal'",
    "type='method_call'",
    "type='error'",
    "sender='{E}'",
    "sender='com.example.Emitter'",
    "sender='{E2}'",
    "sender='com.example.Nobody'",
    "interface='com.example.I1'",
    "member='M2'",
    "path='/a/b'",
    "path='/a'",
    "path_namespace='/a'",
    "path_namespace='/'",
    "destination='{R}'",
    "destination='{T}'",
    "arg0='foo'",
    "arg0='fo'",
    "arg1='/a/b/'",
    "arg1path='/a/'",
    "arg1path='/a/b/c'",
    "arg1path='/a'",
    "arg0path='/a/b'",
    "arg0path='/a/'",
    "arg0namespace='com.example.foo'",
    "arg0namespace='com.example'",
    "arg0namespace='com.exam'",
    "arg2='z'",
    "type='signal',interface='com.example.I1',member='M2'",
    "type='signal',sender='{E}',path_namespace='/a',arg0='foo'",
    "eavesdrop='true',destination='{T}'",
    "",
]

BAD_RULES = [
    "type='bogus'", "foo='bar'", "arg64='x'", "arg63='x'", "path='not a path'",
    "path_namespace='/a/'", "interface='noDots'", "member='1x'", "sender='a..b'",
    "type='signal',type='signal'", "type='signal'=", "type=signal", "type='signal",
    "path='/a',path_namespace='/a'", "arg0namespace='com..x'", "destination=':x'",
    "eavesdrop='maybe'", "arg0namespace='foo'", "member=''", "x" * 2000,
]


def emit_set(e, e2, r, t):
    """The fixed set of signals each rule is tested against, then a unicast barrier."""
    e.emit('/a/b', 'com.example.I1', 'M1', 'ss', ['foo', '/a/b/'])
    e.emit('/a/c', 'com.example.I2', 'M2', 's', ['bar'])
    e.emit('/x', 'com.example.I1', 'M2', 'ss', ['com.example.foo.bar', '/a/b/c/d'])
    e.emit('/a', 'com.example.I2', 'M3', 'os', ['/a/b', '/a'])
    e.emit('/a/b/c', 'com.example.I1', 'M4', 'sss', ['com.example.foo', 'x', 'z'])
    e.emit('/a/b', 'com.example.I1', 'ToT', 's', ['foo'], dest=t.unique)
    e.emit('/a/b', 'com.example.I1', 'ToR', 's', ['foo'], dest=r.unique)
    e2.emit('/a/b', 'com.example.I1', 'M1', 'ss', ['foo', '/a/b/'])
    e2.emit('/a/b', 'com.example.I1', 'Barrier', '', [], dest=r.unique)
    e.emit('/a/b', 'com.example.I1', 'Barrier', '', [], dest=r.unique)


def drain_until_barriers(r, n=2, timeout=5):
    got = []
    barriers = 0
    while barriers < n:
        m = r.recv(timeout)
        if m is None:
            got.append('TIMEOUT')
            break
        if m.member == 'Barrier':
            barriers += 1
            continue
        got.append(m)
    r.log = []
    return got


def tags(got, names):
    """Received signals as tags, in arrival order per sender (the interleaving of two
    senders' messages is not defined)."""
    t = [sig_tag(m, names) for m in got]
    return ' '.join(sorted(t, key=lambda x: x.split(':')[0]))


def sig_tag(m, names):
    if isinstance(m, str):
        return m
    return '%s:%s%s' % (names.get(m.sender, m.sender), m.member, m.path)


@scenario
def sc_match_rules(ctx):
    e = ctx.conn('E')
    e.bus('RequestName', 'su', ['com.example.Emitter', 4], quiet=True)
    e2 = ctx.conn('E2')
    r = ctx.conn('R')
    t = ctx.conn('T')
    names = {e.unique: 'E', e2.unique: 'E2'}
    for rule in MATCH_RULES:
        rr = rule.format(E=e.unique, E2=e2.unique, R=r.unique, T=t.unique)
        a = r.bus('AddMatch', 's', [rr])
        if a.type == rawbus.ERROR:
            ctx.log('rule %r AddMatch -> %s' % (rule, a.error_name))
            continue
        emit_set(e, e2, r, t)
        got = drain_until_barriers(r)
        ctx.log('rule %r -> %s' % (rule, tags(got, names)))
        rm = r.bus('RemoveMatch', 's', [rr])
        ctx.log('  RemoveMatch ->', rm.error_name or 'ok')
        t.log = []
    # after all removals nothing but the unicast arrives
    emit_set(e, e2, r, t)
    ctx.log('no rules ->', tags(drain_until_barriers(r), names))
    # the same rule twice needs two RemoveMatch; the third says MatchRuleNotFound
    for _ in range(2):
        r.bus('AddMatch', 's', ["member='M2'"])
    emit_set(e, e2, r, t)
    ctx.log('twice ->', tags(drain_until_barriers(r), names))
    for _ in range(3):
        rm = r.bus('RemoveMatch', 's', ["member='M2'"])
        ctx.log('  RemoveMatch ->', rm.error_name or 'ok')
    emit_set(e, e2, r, t)
    ctx.log('removed ->', tags(drain_until_barriers(r), names))
    # a rule equal after parsing but spelt differently is removed by RemoveMatch
    r.bus('AddMatch', 's', ["member='M2',type='signal'"])
    rm = r.bus('RemoveMatch', 's', ["type='signal', member='M2'"])
    ctx.log('reordered RemoveMatch ->', rm.error_name or 'ok')
    for rule in BAD_RULES:
        a = r.bus('AddMatch', 's', [rule])
        ctx.log('bad rule %r -> %s' % (rule[:60], a.error_name or 'accepted'))
        if a.type != rawbus.ERROR:
            r.bus('RemoveMatch', 's', [rule])
        rm = r.bus('RemoveMatch', 's', [rule])
        ctx.log('  RemoveMatch ->', rm.error_name or 'ok')
    ctx.log(ctx.victim_ok(t))


