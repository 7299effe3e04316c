#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Large payloads, one run, side by side (issue #4): a native (libkdbus) call whose body is
# one sealed memfd of SIZE bytes through kdbusd's --native socket, against the same body as a
# classic `ay` through kdbusd's dbus1 socket, dbus-daemon and dbus-broker (libdbus client and
# service, bench/legacy-payload-bench.c). One call in flight; calls/s and MB/s of payload,
# medians of --repeat rounds ($BENCH_REPEAT, 5); ratios >1: the native memfd path is faster.
# Buses on CPU $BENCH_BUS_CPU (0), clients on $BENCH_PEER_CPU (1), as bench/run.sh.
#
# Usage: bench/payload.sh BUILDDIR [SIZE...]   (default sizes 1 MiB and 16 MiB; a release
#        build: meson setup -Dbuildtype=release BUILDDIR)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup bench/payload.sh "${1:?usage: bench/payload.sh BUILDDIR [SIZE...]}" proxy/kdbusd \
        bench/kdbus-native-bench bench/legacy-payload-bench
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1048576 16777216)
repeat=${BENCH_REPEAT:-5}

bench_start_kdbusd
bench_start_dbus_daemon
bench_start_broker

echo "payload bench $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), ${repeat}x${seconds}s rounds"
printf '| size | kdbusd native memfd | kdbusd legacy | dbus-daemon | dbus-broker | vs kdbusd legacy | vs dbus-daemon | vs dbus-broker |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- |\n'
for size in "${sizes[@]}"; do
        native=$(taskset -c "$peer_cpu" "$build/bench/kdbus-native-bench" --native "$run/kdbusd.native" \
                --workload memfd --size "$size" --seconds "$seconds" --repeat "$repeat" \
                --bus-pid "$kdbusd_pid" | sed -n 's/^RESULT .* median=\([0-9.]*\) .*/\1/p')
        declare -A legacy=()
        for b in kdbusd dbus-daemon dbus-broker; do
                legacy[$b]=$(taskset -c "$peer_cpu" "$build/bench/legacy-payload-bench" \
                        --address "unix:path=$run/$b.sock" --size "$size" --seconds "$seconds" \
                        --repeat "$repeat" | awk '/^median/ {print $2}')
        done
        /usr/bin/python3 - "$size" "$native" "${legacy[kdbusd]}" "${legacy[dbus-daemon]}" "${legacy[dbus-broker]}" <<'PY'
import sys
size = int(sys.argv[1]); rates = [float(x) for x in sys.argv[2:]]
cell = lambda r: '%.1f calls/s (%.0f MB/s)' % (r, r * size / 1e6)
print('| %d MiB | %s | %s | %s | %s | %.1fx | %.1fx | %.1fx |' % (
    size >> 20, *(cell(r) for r in rates), *(rates[0] / r for r in rates[1:])))
PY
done
