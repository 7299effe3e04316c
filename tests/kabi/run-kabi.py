#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs kabi-test (tests/kabi/kabi-test.c) under libkdbus-preload.so against a kdbusd
serving a fresh kdbusfs directory. The preload library goes to the test program only,
never to kdbusd. Under ASan the runtime cannot be first in the library list then, so its
link-order check is turned off for the program (verify_asan_link_order=0)."""
import os
import signal
import subprocess
import sys
import tempfile
import time


def main():
    kdbusd, kabi, preload = (os.environ[k] for k in ('KDBUSD', 'KABI_TEST', 'KDBUS_PRELOAD'))
    with tempfile.TemporaryDirectory(prefix='kabi-') as tmp:
        # kabi-test's policy case opens the bus as uid 65534 too
        os.chmod(tmp, 0o755)
        root = os.path.join(tmp, 'kdbus')
        bus = subprocess.Popen([kdbusd, '--session', '--nofork',
                                '--address=unix:path=' + os.path.join(tmp, 'session'),
                                '--kdbusfs=' + root])
        try:
            for _ in range(500):
                if os.path.exists(os.path.join(root, 'control')):
                    break
                time.sleep(0.01)
            env = dict(os.environ)
            env['LD_PRELOAD'] = preload
            opts = env.get('ASAN_OPTIONS', '')
            env['ASAN_OPTIONS'] = (opts + ':' if opts else '') + 'verify_asan_link_order=0'
            r = subprocess.run([kabi, '--root', root] + sys.argv[1:], env=env, timeout=100)
        finally:
            bus.send_signal(signal.SIGTERM)
            code = bus.wait(timeout=20)
        if code != 0:
            print(f'kdbusd exited {code} (a sanitizer report, a crash?)', file=sys.stderr)
            return 1
        return r.returncode


if __name__ == '__main__':
    sys.exit(main())
