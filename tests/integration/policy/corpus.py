#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Corpus test (issue #3): the D-Bus policy files that real Debian packages ship must all
# load and compile. The packages are fetched at test time with `apt-get download` and
# unpacked with `dpkg-deb -x` into a temp dir (never committed); every
# {usr/share,etc}/dbus-1/{system,session}.d/*.conf in them goes through config-compile
# (our loader + compiler). Prints the number of files and rules. Without apt or network:
# SKIP, said clearly. TAP output.
#
# Then the whole system bus configuration as a machine with all these packages would have it
# (/usr/share/dbus-1/system.conf plus every unpacked system.d) is loaded and compiled, and
# kdbusd is started with it and must answer a client.
#
# Usage: corpus.py CONFIG_COMPILE_BINARY [KDBUSD]

import glob
import os
import shutil
import subprocess
import sys
import tempfile

PACKAGES = [
    'polkitd', 'udisks2', 'upower', 'bluez', 'avahi-daemon', 'wpasupplicant', 'modemmanager',
    'network-manager', 'accountsservice', 'systemd', 'systemd-resolved', 'systemd-timesyncd',
    'cups-daemon', 'colord', 'fwupd', 'packagekit', 'power-profiles-daemon', 'rtkit',
    'geoclue-2.0', 'switcheroo-control', 'bolt', 'fprintd', 'gdm3', 'iio-sensor-proxy',
    'ofono', 'connman', 'firewalld', 'dnsmasq-base', 'thermald', 'usbguard', 'dbus',
]


def whole_system(kdbusd, tool, tmp, root):
    """system.conf with every unpacked system.d: compiles, and kdbusd serves with it."""
    conf = os.path.join(tmp, 'system-all.conf')
    sock = os.path.join(tmp, 'bus')
    with open(conf, 'w') as f:
        f.write('<busconfig>\n  <include>/usr/share/dbus-1/system.conf</include>\n'
                '  <includedir>%s/usr/share/dbus-1/system.d</includedir>\n'
                '  <includedir>%s/etc/dbus-1/system.d</includedir>\n</busconfig>\n'
                % (root, root))
    r = subprocess.run([tool, conf], capture_output=True, text=True, timeout=120)
    print('# system.conf + all system.d: ' + r.stdout.strip().replace(tmp, ''))
    p = subprocess.Popen([kdbusd, '--config-file=' + conf, '--nofork', '--nopidfile',
                          '--print-address', '--address=unix:path=' + sock],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        addr = p.stdout.readline().strip()
        # dbus-python registers (Hello) on a BusConnection; dbus-send --address does not
        g = subprocess.run(['/usr/bin/python3', '-c',
                            'import dbus, sys; b = dbus.bus.BusConnection(sys.argv[1]); '
                            'print(b.call_blocking("org.freedesktop.DBus", '
                            '"/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", '
                            '"", ()))', addr], capture_output=True, text=True,
                           timeout=20) if addr else None
        good = r.returncode == 0 and g is not None and g.returncode == 0
        print('%s 3 - kdbusd runs with system.conf and every package\'s system.d (%s)'
              % ('ok' if good else 'not ok', 'GetId answered' if good else
                 (g.stderr.strip() if g else 'no address')))
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def main():
    tool = sys.argv[1]
    kdbusd = sys.argv[2] if len(sys.argv) > 2 else None
    print('TAP version 13')
    if not shutil.which('apt-get') or not shutil.which('dpkg-deb'):
        print('1..0 # SKIP apt-get/dpkg-deb not available')
        return 0
    tmp = tempfile.mkdtemp(prefix='kdbus-corpus-')
    try:
        debs = os.path.join(tmp, 'debs')
        root = os.path.join(tmp, 'root')
        os.makedirs(debs)
        os.makedirs(root)
        got = []
        for p in PACKAGES:
            r = subprocess.run(['apt-get', 'download', p], cwd=debs, capture_output=True,
                               text=True, timeout=300)
            if r.returncode == 0:
                got.append(p)
            else:
                print('# %s: not downloaded (%s)' % (p, r.stderr.strip().splitlines()[-1:]))
        files = sorted(glob.glob(os.path.join(debs, '*.deb')))
        if len(got) < len(PACKAGES) // 2:
            print('1..0 # SKIP only %d of %d packages could be downloaded (no network or no '
                  'apt lists: run apt-get update)' % (len(got), len(PACKAGES)))
            return 0
        for deb in files:
            subprocess.run(['dpkg-deb', '-x', deb, root], check=True)
        confs = []
        for pat in ('usr/share/dbus-1/system.d/*.conf', 'etc/dbus-1/system.d/*.conf',
                    'usr/share/dbus-1/session.d/*.conf', 'etc/dbus-1/session.d/*.conf',
                    'usr/share/dbus-1/*.conf'):
            confs += sorted(glob.glob(os.path.join(root, pat)))
        print('1..%d' % (3 if kdbusd else 2))
        print('# %d packages, %d .deb files, %d D-Bus configuration files'
              % (len(got), len(files), len(confs)))
        ok = len(confs) >= 20
        print('%s 1 - at least 20 policy files found (%d)' % ('ok' if ok else 'not ok',
                                                            len(confs)))
        r = subprocess.run([tool] + confs, capture_output=True, text=True, timeout=300)
        n_rules = n_compiled = 0
        compiled = True
        bad = []
        for line in r.stdout.splitlines():
            parts = line.split(' ', 3)
            if parts[0] == 'ok':
                n_rules += int(parts[2])
                if parts[3] == '-':
                    compiled = False
                else:
                    n_compiled += int(parts[3])
            else:
                bad.append(line.replace(root, ''))
        for b in bad:
            print('#   ' + b)
        print('# %d files, %d rules in the files; %s' % (
            len(confs), n_rules, ('%d rules compiled' % n_compiled) if compiled else
            'policy compiler not in this build: loaded only'))
        good = r.returncode == 0 and not bad and len(r.stdout.splitlines()) == len(confs)
        print('%s 2 - every file loads and compiles (%d failed)' % ('ok' if good else 'not ok',
                                                                    len(bad)))
        if r.stderr:
            print('# warnings:\n' + '\n'.join('#   ' + x.replace(root, '')
                                              for x in r.stderr.splitlines()[:40]))
        if kdbusd:
            whole_system(kdbusd, tool, tmp, root)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
