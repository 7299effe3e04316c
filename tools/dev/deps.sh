#!/usr/bin/env bash
# Installs what building and testing kdbus-compat needs on Debian 12 (bookworm).
# Run as root (or through sudo). Safe to run again: apt-get skips what is there.
set -euo pipefail

packages=(
        # build
        meson ninja-build pkg-config gcc clang libclang-rt-14-dev
        libsystemd-dev libexpat1-dev
        # tests: GLib test framework, reference clients and reference buses
        libglib2.0-dev libdbus-1-dev dbus-daemon dbus-bin dbus-broker systemd
        python3 python3-dbus python3-gi
        # dbus-daemon's own installed tests, run against kdbusd (tests/dbus-tests/run.py)
        dbus-tests
        # kdbusctl monitor --pcap test reads the capture back
        tshark
        # tests/integration/system: useradd (privilege drop), unshare/setpriv (util-linux),
        # systemd-socket-activate and systemd-analyze (systemd)
        passwd
        # tests/integration/sandbox: the reference filtering proxy and flatpak's sandbox tool
        xdg-dbus-proxy bubblewrap
        # tests/integration/system/launchers.py: the real launchers run the bus unchanged
        # (dbus-launch; at-spi2's bus launcher and registry; Debian's /etc/init.d/dbus and
        # the lsb functions it sources; Xvfb for dbus-launch --autolaunch / --exit-with-x11)
        dbus-x11 at-spi2-core dbus sysvinit-utils xvfb
        # tests/integration/system/services.py: real services activated by name and used by
        # their own clients (system: rtkit, polkit, accounts, upower, udisks2, colord,
        # PackageKit; session: dconf, gnome-keyring, gvfs, tumbler, the portals)
        rtkit polkitd accountsservice upower udisks2 colord packagekit packagekit-tools
        dconf-service dconf-gsettings-backend gsettings-desktop-schemas libglib2.0-bin
        gnome-keyring gvfs tumbler xdg-desktop-portal
        # benchmarks (bench/run.sh): taskset pins the buses, perf counts their syscalls
        util-linux linux-perf
)

# --list: print the packages (for .ci/run), install nothing
if [ "${1:-}" = "--list" ]; then
        printf '%s\n' "${packages[@]}"
        exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
        echo "tools/dev/deps.sh: needs root to install packages: sudo $0" >&2
        exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
