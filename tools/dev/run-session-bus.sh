#!/usr/bin/env bash
# Installs the build dependencies, builds kdbusd and runs a session bus in the foreground,
# printing its address. Extra arguments go to kdbusd (default: a socket in /tmp).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" -eq 0 ]; then
        tools/dev/deps.sh
fi
[ -d build ] || meson setup build -Dtests=false >/dev/null
ninja -C build proxy/kdbusd >/dev/null

if [ $# -eq 0 ]; then
        set -- --address="unix:path=/tmp/kdbusd-session-$$"
fi
exec build/proxy/kdbusd --session --nofork --print-address "$@"
