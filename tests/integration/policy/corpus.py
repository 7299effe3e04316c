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
# Usage: corpus.py CONFIG_COMPILE_BINARY

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


def main():
    tool = sys.argv[1]
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
        print('1..2')
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
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
