#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# kdbusd gives memory back after a flood (proxy/server.c server_trim_later()): a peer that
# does not read is sent 40,000 small signals (the bus holds them: its RSS grows by tens of
# MB), then it reads them all; within a few seconds the bus's RSS is back near where it
# started (less than a quarter of the growth left). It also checks what the queue costs:
# under 1 KiB of RSS per queued 190-byte message (size classes of 512/640/768... bytes, was
# 2 KiB). TAP output.
#
# Usage: memory.py KDBUSD

import os
import subprocess
import sys
import tempfile
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sysutil  # noqa: E402
from sysutil import rawbus  # noqa: E402

N = 40000


def rss_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def sanitized(binary):
    """ASan's allocator keeps freed memory in quarantine and puts redzones around each
    block: RSS figures say nothing about kdbusd's own allocation then."""
    with open(binary, 'rb') as f:
        return b'__asan_init' in f.read()


def main():
    tap = sysutil.Tap()
    if sanitized(sys.argv[1]):
        tap.skip('RSS per queued message, memory back after a flood',
                 'kdbusd is built with AddressSanitizer')
        return tap.done()
    d = tempfile.mkdtemp(prefix='kdbus-memory-')
    conf = sysutil.write_conf(d, 'unix:path=%s/s' % d,
                              '  <limit name="max_outgoing_bytes">1000000000</limit>\n')
    p = subprocess.Popen([sys.argv[1], '--config-file=' + conf, '--nofork', '--nopidfile'],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        if not tap.ok(sysutil.wait_for(lambda: sysutil.serves(d + '/s'), 15), 'kdbusd serves'):
            return tap.done()
        recv = rawbus.Conn('unix:path=%s/s' % d)
        send = rawbus.Conn('unix:path=%s/s' % d)
        send.sync()
        before = rss_kb(p.pid)
        sig = rawbus.Message(rawbus.SIGNAL, path='/a', interface='com.example.Q', member='M',
                             destination=recv.unique, signature='s',
                             body=['x' * 90]).to_bytes(100)
        send.sock.settimeout(60)
        for _ in range(N // 1000):
            send.sock.sendall(sig * 1000)
        send.sync()
        peak = rss_kb(p.pid)
        grown = peak - before
        tap.diag('RSS %d kB before, %d kB with %d messages of %d bytes queued (%.0f B each)'
                 % (before, peak, N, len(sig), grown * 1024.0 / N))
        tap.ok(grown * 1024.0 / N < 1024, 'a queued 190-byte message costs under 1 KiB of RSS',
               '%.0f B' % (grown * 1024.0 / N))
        got, buf = 0, bytearray()
        recv.sock.settimeout(60)
        while got < N:
            data = recv.sock.recv(1 << 20)
            if not data:
                break
            buf += data
            while len(buf) >= 16:
                m = rawbus.parse_message(buf)
                if not m:
                    break
                del buf[:m[1]]
                got += 1
        tap.ok(got == N, 'the receiver got all %d' % N, str(got))
        send.sync()
        ok = sysutil.wait_for(lambda: rss_kb(p.pid) - before < grown / 4, 10)
        tap.diag('RSS %d kB after the receiver read them' % rss_kb(p.pid))
        tap.ok(ok, 'the memory goes back to the system after the flood (under a quarter of '
               'the growth left)', '%d kB left of %d' % (rss_kb(p.pid) - before, grown))
        recv.close()
        send.close()
    finally:
        p.terminate()
        p.wait(20)
        shutil.rmtree(d, ignore_errors=True)
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
