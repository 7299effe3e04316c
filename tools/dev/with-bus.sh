#!/usr/bin/env bash
# Runs a command against a fresh session bus, to compare kdbusd with dbus-daemon on other
# programs' own test suites (docs/differences.md, "Other programs' own test suites"):
#
#   tools/dev/with-bus.sh kdbusd|dbus-daemon CMD [ARG...]
#
# The bus is started as the README says (`--session`, the machine's session.conf) and CMD
# runs with DBUS_SESSION_BUS_ADDRESS set to it, and with a directory first in PATH whose
# `dbus-daemon` is the bus under test, for suites that start their own bus (GTestDBus,
# dbus-run-session, a test's own dbus-daemon command line). The bus's stderr goes to
# $TMPDIR/with-bus.<bus>.log; the bus is stopped when CMD ends, and CMD's exit status is
# returned. KDBUSD names the kdbusd to use (default: build/proxy/kdbusd of this tree).
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
case "${1:-}" in
kdbusd) bus="${KDBUSD:-$here/build/proxy/kdbusd}" ;;
dbus-daemon) bus="$(command -v dbus-daemon)" ;;
*) echo "usage: $0 kdbusd|dbus-daemon CMD [ARG...]" >&2; exit 2 ;;
esac
which="$1"
shift
[ $# -gt 0 ] || { echo "$0: no command to run" >&2; exit 2; }
[ -x "$bus" ] || { echo "$0: $bus is not built (ninja -C build)" >&2; exit 2; }

tmp="$(mktemp -d)"
bus_pid=
cleanup() {
        if [ -n "$bus_pid" ]; then
                kill "$bus_pid" 2>/dev/null || true
                wait "$bus_pid" 2>/dev/null || true
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/bin"
ln -s "$bus" "$tmp/bin/dbus-daemon"

"$bus" --session --nofork --print-address=3 3>"$tmp/address" \
        2>"${TMPDIR:-/tmp}/with-bus.$which.log" &
bus_pid=$!
for _ in $(seq 100); do
        [ -s "$tmp/address" ] && break
        kill -0 "$bus_pid" 2>/dev/null || { echo "$0: $which did not start" >&2; exit 1; }
        sleep 0.1
done
DBUS_SESSION_BUS_ADDRESS="$(head -n 1 "$tmp/address")"
export DBUS_SESSION_BUS_ADDRESS
PATH="$tmp/bin:$PATH"
export PATH
echo "$0: $which (pid $bus_pid) at $DBUS_SESSION_BUS_ADDRESS" >&2
rc=0
"$@" || rc=$?
exit "$rc"
