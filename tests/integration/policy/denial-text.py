#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The whole text of AccessDenied errors, not only their names: the same denied calls, made by
# dbus-send with a command line longer than dbus-daemon's 50-byte comm= limit, against
# dbus-daemon (the reference) and kdbusd. The texts must be equal once the parts that differ
# by run are normalized (unique names, pids). TAP output.
#
# Usage: denial-text.py KDBUSD DBUS_DAEMON

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

CONF = '''<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <deny send_interface="org.test.Denied"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus" send_member="ListNames"/>
  </policy>
</busconfig>
'''

# (what, dbus-send arguments after --bus): long and short command lines, driver and peer
CALLS = [
    ('long cmdline, denied interface to the driver',
     ['--print-reply', '--dest=org.freedesktop.DBus', '/',
      'org.test.Denied.MethodWithARatherLongNameToPassTheLimit',
      'string:' + 'x' * 80]),
    ('short cmdline, denied member of the driver',
     ['--print-reply', '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
      'org.freedesktop.DBus.ListNames']),
]


def normalize(text):
    text = re.sub(r':1\.\d+', ':1.N', text)
    text = re.sub(r'pid=\d+', 'pid=N', text)
    return re.sub(r'kdbus-denial-[A-Za-z0-9_]*', 'kdbus-denial-R', text)


def run(binary):
    d = tempfile.mkdtemp(prefix='kdbus-denial-')
    sock = os.path.join(d, 'sock')
    conf = os.path.join(d, 'bus.conf')
    with open(conf, 'w') as f:
        f.write(CONF % sock)
    proc = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--print-address'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    out = []
    try:
        if not proc.stdout.readline():
            raise RuntimeError('%s did not start: %s' % (binary, proc.stderr.read().decode()))
        for _, args in CALLS:
            r = subprocess.run(['dbus-send', '--bus=unix:path=' + sock] + args,
                               capture_output=True, text=True, timeout=20)
            out.append(normalize((r.stdout + r.stderr).strip()))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        shutil.rmtree(d, ignore_errors=True)
    return out


def main():
    ours, ref = sys.argv[1], sys.argv[2]
    want, got = run(ref), run(ours)
    print('1..%d' % len(CALLS))
    failed = 0
    for i, (what, _) in enumerate(CALLS, 1):
        if 'AccessDenied' in want[i - 1] and want[i - 1] == got[i - 1]:
            print('ok %d - %s: same text' % (i, what))
        else:
            failed += 1
            print('not ok %d - %s\n# dbus-daemon: %s\n# kdbusd:      %s'
                  % (i, what, want[i - 1], got[i - 1]))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
