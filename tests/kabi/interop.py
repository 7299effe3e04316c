#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One bus, both worlds: a service written against kdbus's kernel interface alone
(kabi-test --serve, under libkdbus-preload.so, through kdbusd --kdbusfs) answers dbus-send,
gdbus and busctl on the bus's legacy socket; and a kernel-interface client (kabi-test --call)
calls a dbus-python service (tests/integration/py-service.py) on the same bus."""
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def check(cond, what):
    if not cond:
        print('FAIL', what, file=sys.stderr)
        sys.exit(1)
    print('ok', what)


def main():
    kdbusd, kabi, preload = (os.environ[k] for k in ('KDBUSD', 'KABI_TEST', 'KDBUS_PRELOAD'))
    env = dict(os.environ)
    env['LD_PRELOAD'] = preload
    opts = env.get('ASAN_OPTIONS', '')
    env['ASAN_OPTIONS'] = (opts + ':' if opts else '') + 'verify_asan_link_order=0'
    with tempfile.TemporaryDirectory(prefix='kabi-') as tmp:
        root = os.path.join(tmp, 'kdbus')
        bus = subprocess.Popen([kdbusd, '--session', '--nofork',
                                '--address=unix:path=' + os.path.join(tmp, 'session'),
                                '--kdbusfs=' + root])
        svc = pysvc = None
        try:
            for _ in range(500):
                if os.path.exists(os.path.join(root, 'control')):
                    break
                time.sleep(0.01)
            svc = subprocess.Popen([kabi, '--root', root, '--serve'], env=env,
                                   stdout=subprocess.PIPE, text=True)
            line = svc.stdout.readline().split()
            check(len(line) == 2 and line[0] == 'bus', 'kernel-interface service ready')
            node = line[1]
            addr = 'unix:path=' + node + '.dbus1'
            out = subprocess.run(['dbus-send', '--bus=' + addr, '--print-reply',
                                  '--dest=org.example.Kabi', '/org/example',
                                  'org.example.Kabi.Ping', 'string:send'],
                                 capture_output=True, text=True, timeout=20)
            check('"pong:send"' in out.stdout, 'dbus-send gets its answer: ' + out.stdout.strip())
            out = subprocess.run(['gdbus', 'call', '--address', addr, '--dest',
                                  'org.example.Kabi', '--object-path', '/org/example',
                                  '--method', 'org.example.Kabi.Ping', 'gdbus'],
                                 capture_output=True, text=True, timeout=20)
            check("'pong:gdbus'" in out.stdout, 'gdbus gets its answer: ' + out.stdout.strip())
            out = subprocess.run(['busctl', '--address=' + addr, 'call', 'org.example.Kabi',
                                  '/org/example', 'org.example.Kabi', 'Ping', 's', 'busctl'],
                                 capture_output=True, text=True, timeout=20)
            check('"pong:busctl"' in out.stdout, 'busctl gets its answer: ' + out.stdout.strip())

            pysvc = subprocess.Popen([os.environ.get('SYS_PYTHON', '/usr/bin/python3'),
                                      os.path.join(HERE, '..', 'integration', 'py-service.py'),
                                      addr], stdout=subprocess.PIPE, text=True)
            check(pysvc.stdout.readline().strip() == 'ready', 'dbus-python service ready')
            out = subprocess.run([kabi, '--root', root, '--call', node, 'com.example.PyService'],
                                 env=env, capture_output=True, text=True, timeout=20)
            check(out.returncode == 0 and 'echo: kabi' in out.stdout,
                  'kernel-interface client called dbus-python: ' + out.stdout.strip() +
                  out.stderr.strip())
            subprocess.run(['dbus-send', '--bus=' + addr, '--dest=org.example.Kabi',
                            '/org/example', 'org.example.Kabi.Quit'], timeout=20)
            check(svc.wait(timeout=20) == 0, 'kernel-interface service exits cleanly')
        finally:
            for p in (svc, pysvc):
                if p and p.poll() is None:
                    p.kill()
                    p.wait()
            bus.send_signal(signal.SIGTERM)
            code = bus.wait(timeout=20)
        check(code == 0, 'kdbusd exits 0')
    return 0


if __name__ == '__main__':
    sys.exit(main())
