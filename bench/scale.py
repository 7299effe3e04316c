#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scale benchmark: kdbusd, dbus-broker and dbus-daemon side by side in one run (issue #17).

For each bus, fresh, with the same limits (the fd limit raised to the hard limit for the bus
and for this process, the connection limits above N):
  connect   N peers register (SASL + Hello pipelined, in waves of WAVE), timed;
  idle      the bus's RSS per 1,000 idle peers (RSS after minus before, / N * 1000);
  calls     all N send one GetId at once: time until every one has its answer;
  close     all N close at once: time until a watcher (AddMatch NameOwnerChanged) saw N
            NameOwnerChanged;
  bystander a separate process calls GetId every 2 ms throughout and reports the longest
            wait during the call storm and during the close storm;
  queue     one peer sends M unicast signals of 190 bytes to a peer that does not read:
            the bus's RSS per queued message; then the receiver reads them all: the RSS left
            2.5 s later (this and queue on a fresh bus: memory freed by the peers before
            would hide what the queue takes).
Raw sockets, no D-Bus library in the measured path; bus RSS from /proc/PID/status (for
dbus-broker the broker process, not its controller). The machine's load matters: run
`uptime` beside it.

Usage: scale.py [--peers N] [--messages M] [--kdbusd PATH] [--buses kdbusd,dbus-broker,...]
"""
import argparse
import multiprocessing
import os
import resource
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
import rawbus  # noqa: E402

BUS = 'org.freedesktop.DBus'
BUS_PATH = '/org/freedesktop/DBus'
WAVE = 250

CONF = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
  <limit name="max_incoming_bytes">1000000000</limit>
  <limit name="max_outgoing_bytes">1000000000</limit>
  <limit name="max_message_size">1000000000</limit>
  <limit name="auth_timeout">600000</limit>
  <limit name="max_completed_connections">1000000</limit>
  <limit name="max_incomplete_connections">1000000</limit>
  <limit name="max_connections_per_user">1000000</limit>
  <limit name="max_match_rules_per_connection">50000</limit>
  <limit name="max_replies_per_connection">50000</limit>
</busconfig>
'''


def msg(mtype, serial, **kw):
    return rawbus.Message(mtype, **kw).to_bytes(serial)


def call_bytes(member, serial, sig='', body=()):
    return msg(rawbus.METHOD_CALL, serial, path=BUS_PATH, interface=BUS, member=member,
               destination=BUS, signature=sig, body=body)


AUTH = b'\0AUTH EXTERNAL ' + str(os.getuid()).encode().hex().encode() + b'\r\nBEGIN\r\n'


def frames(buf):
    """Complete messages at the start of @buf: (count, bytes used)."""
    n = used = 0
    while len(buf) - used >= 16:
        e = '<' if buf[used:used + 1] == b'l' else '>'
        blen, _serial, flen = struct.unpack_from(e + 'III', buf, used + 4)
        size = ((16 + flen + 7) & ~7) + blen
        if len(buf) - used < size:
            break
        used += size
        n += 1
    return n, used


class Peers:
    """N raw peers on one epoll set; each counts the messages it receives."""

    def __init__(self, path):
        self.path = path
        self.socks = []
        self.ep = select.epoll()
        self.by_fd = {}

    def connect(self, n):
        hello = AUTH + call_bytes('Hello', 1)
        t0 = time.monotonic()
        while len(self.socks) < n:
            wave = []
            for _ in range(min(WAVE, n - len(self.socks))):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.path)
                s.setblocking(False)
                s.sendall(hello)
                wave.append(s)
            # OK line, then the Hello reply and NameAcquired
            self.wait(wave, 2, sasl=True)
            self.socks.extend(wave)
        return time.monotonic() - t0

    def wait(self, socks, want, sasl=False, timeout=600):
        """Until each of @socks received @want messages. Return: when the last came."""
        state = {}
        for s in socks:
            state[s.fileno()] = [s, bytearray(), 0, sasl]
            self.ep.register(s.fileno(), select.EPOLLIN)
        left = len(socks)
        last = time.monotonic()
        deadline = last + timeout
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError('%d peers still wait' % left)
            for fd, _ev in self.ep.poll(1.0, 4096):
                st = state[fd]
                try:
                    d = st[0].recv(1 << 16)
                except BlockingIOError:
                    continue
                if not d:
                    raise RuntimeError('a peer was disconnected')
                st[1] += d
                if st[3]:
                    i = st[1].find(b'\r\n')
                    if i < 0:
                        continue
                    if not st[1].startswith(b'OK '):
                        raise RuntimeError('SASL: %r' % bytes(st[1][:i]))
                    del st[1][:i + 2]
                    st[3] = False
                k, used = frames(st[1])
                del st[1][:used]
                before = st[2]
                st[2] += k
                if before < want <= st[2]:
                    left -= 1
                    last = time.monotonic()
                    self.ep.unregister(fd)
        return last

    def call_all(self):
        data = call_bytes('GetId', 2)
        t0 = time.monotonic()
        for s in self.socks:
            s.send(data)
        return self.wait(self.socks, 1) - t0, t0

    def close_all(self):
        t0 = time.monotonic()
        for s in self.socks:
            s.close()
        self.socks = []
        return t0


def bystander(address, pipe):
    """Connects, then, told to go, calls GetId every 2 ms; sends [(start, latency)] when
    told to stop. (Started before the peers: rawbus uses select(), fds below 1024.)"""
    c = rawbus.Conn(address)
    out = []
    pipe.send('ready')
    assert pipe.recv() == 'go'
    while not pipe.poll(0):
        t = time.monotonic()
        r = c.bus('GetId', quiet=True, timeout=60)
        assert r.type == rawbus.METHOD_RETURN
        out.append((t, time.monotonic() - t))
        time.sleep(0.002)
    pipe.send(out)


def worst(samples, t0, t1):
    """Longest wait of a call that was in flight some time in [t0, t1]."""
    lat = [lat for t, lat in samples if t <= t1 and t + lat >= t0]
    return max(lat) if lat else float('nan')


def rss_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def start(bus, d, kdbusd):
    path = os.path.join(d, 'bus')
    conf = os.path.join(d, 'bus.conf')
    with open(conf, 'w') as f:
        f.write(CONF % path)
    err = open(os.path.join(d, 'stderr'), 'wb')
    if bus == 'dbus-broker':
        env = dict(os.environ, BENCH_BROKER_ARGS='--max-bytes 100000000000 --max-fds 1000000 '
                   '--max-matches 1000000 --max-objects 100000000')
        # the system's Python: the controller needs its python3-gi
        p = subprocess.Popen(['/usr/bin/python3', os.path.join(ROOT, 'bench', 'broker-controller.py'),
                              '--listen', path], stdout=subprocess.PIPE, stderr=err, env=env)
    else:
        binary = kdbusd if bus == 'kdbusd' else 'dbus-daemon'
        p = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--print-address'],
                             stdout=subprocess.PIPE, stderr=err)
    line = p.stdout.readline().decode().strip()
    if not line:
        raise RuntimeError('%s did not start' % bus)
    pid = p.pid
    if bus == 'dbus-broker':
        for _ in range(100):
            with open('/proc/%d/task/%d/children' % (p.pid, p.pid)) as f:
                kids = f.read().split()
            if kids:
                pid = int(kids[0])
                break
            time.sleep(0.05)
    return p, pid, 'unix:path=' + path, path


def stop(p, d):
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    shutil.rmtree(d, ignore_errors=True)


def queue_test(address, pid, m):
    recv = rawbus.Conn(address)
    send = rawbus.Conn(address)
    send.sync()
    recv.sync()
    time.sleep(0.2)
    before = rss_kb(pid)
    # 190 bytes on the wire with the sender the bus adds (':1.N' fields vary slightly)
    sig = msg(rawbus.SIGNAL, 100, path='/a', interface='com.example.Q', member='M',
              destination=recv.unique, signature='s', body=['x' * 90])
    wire = len(sig)
    batch = sig * 1000
    send.sock.setblocking(True)
    for _ in range(m // 1000):
        send.sock.sendall(batch)
    send.sync()
    time.sleep(0.2)
    held = rss_kb(pid) - before
    # drain
    got = 0
    buf = bytearray()
    recv.sock.setblocking(True)
    need = m
    while got < need:
        d = recv.sock.recv(1 << 20)
        if not d:
            break
        buf += d
        k, used = frames(buf)
        del buf[:used]
        got += k
    send.sync()
    time.sleep(2.5)     # kdbusd trims 1 s after a large queue drained
    left = rss_kb(pid) - before
    recv.close()
    send.close()
    return wire, held * 1024.0 / m, left


def run_bus(bus, args):
    d = tempfile.mkdtemp(prefix='kdbus-scale-')
    p, pid, address, path = start(bus, d, args.kdbusd)
    res = {'bus': bus}
    try:
        ctx = multiprocessing.get_context('fork')
        ours, theirs = ctx.Pipe()
        watcher = rawbus.Conn(address)
        watcher.bus('AddMatch', 's', ["type='signal',member='NameOwnerChanged'"], quiet=True)
        proc = ctx.Process(target=bystander, args=(address, theirs))
        proc.start()
        assert ours.recv() == 'ready'
        time.sleep(0.3)
        rss0 = rss_kb(pid)
        peers = Peers(path)
        res['connect_s'] = peers.connect(args.peers)
        time.sleep(0.5)
        res['rss_per_1000_idle_mb'] = (rss_kb(pid) - rss0) / 1024.0 / args.peers * 1000
        # the watcher got N NameOwnerChanged for the arrivals; forget them
        watcher.sock.setblocking(False)
        try:
            while watcher.sock.recv(1 << 20):
                pass
        except BlockingIOError:
            pass
        watcher.sock.setblocking(True)
        watcher.buf = bytearray()

        ours.send('go')
        time.sleep(0.1)
        res['calls_s'], t0 = peers.call_all()
        t_calls = (t0, t0 + res['calls_s'])
        time.sleep(0.1)

        t0 = peers.close_all()
        seen = 0
        buf = bytearray()
        while seen < args.peers:
            r, _, _ = select.select([watcher.sock], [], [], 600)
            if not r:
                raise TimeoutError('close storm: %d of %d NameOwnerChanged' % (seen, args.peers))
            buf += watcher.sock.recv(1 << 20)
            k, used = frames(buf)
            del buf[:used]
            seen += k
        res['close_s'] = time.monotonic() - t0
        t_close = (t0, time.monotonic())
        time.sleep(0.1)
        ours.send('stop')
        samples = ours.recv()
        proc.join()
        res['bystander_calls_ms'] = worst(samples, *t_calls) * 1000
        res['bystander_close_ms'] = worst(samples, *t_close) * 1000
        watcher.close()

    finally:
        stop(p, d)
    # a fresh bus: memory the peers gave back would hide what the queue takes
    d = tempfile.mkdtemp(prefix='kdbus-scale-')
    p, pid, address, path = start(bus, d, args.kdbusd)
    try:
        wire, per_msg, left = queue_test(address, pid, args.messages)
        res['queued_msg_wire'] = wire
        res['rss_per_queued_msg_b'] = per_msg
        res['rss_left_after_drain_mb'] = left / 1024.0
    finally:
        stop(p, d)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--peers', type=int, default=10000)
    ap.add_argument('--messages', type=int, default=50000)
    ap.add_argument('--kdbusd', default=os.path.join(ROOT, 'build', 'proxy', 'kdbusd'))
    ap.add_argument('--buses', default='kdbusd,dbus-broker,dbus-daemon')
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < args.peers + 200:
        sys.exit('scale.py: the hard fd limit %d is too low for %d peers (this process and '
                 'each bus hold one fd per peer)' % (hard, args.peers))
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = [run_bus(b, args) for b in args.buses.split(',')]
    cols = [('connect_s', '%.2f'), ('calls_s', '%.3f'), ('bystander_calls_ms', '%.1f'),
            ('close_s', '%.3f'), ('bystander_close_ms', '%.1f'),
            ('rss_per_1000_idle_mb', '%.2f'), ('rss_per_queued_msg_b', '%.0f'),
            ('rss_left_after_drain_mb', '%.1f')]
    print('peers %d, queued messages %d of %d bytes' % (args.peers, args.messages,
                                                        rows[0].get('queued_msg_wire', 0)))
    print('| bus | ' + ' | '.join(c for c, _ in cols) + ' |')
    print('| --- ' * (len(cols) + 1) + '|')
    for r in rows:
        print('| %s | ' % r['bus'] + ' | '.join(f % r[c] if c in r else '-' for c, f in cols)
              + ' |')
    ref = {r['bus']: r for r in rows}
    if 'kdbusd' in ref and 'dbus-broker' in ref:
        k, b = ref['kdbusd'], ref['dbus-broker']
        print('kdbusd / dbus-broker: calls %.2fx, close %.2fx, idle RSS %.2fx, queued RSS %.2fx'
              % (k['calls_s'] / b['calls_s'], k['close_s'] / b['close_s'],
                 k['rss_per_1000_idle_mb'] / b['rss_per_1000_idle_mb'],
                 k['rss_per_queued_msg_b'] / b['rss_per_queued_msg_b']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
