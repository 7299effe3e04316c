#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Native (kdbus ABI) peers against the legacy path and the reference buses, one run (issue
# #4; bench/run.sh calls it unless --no-native; see bench/README.md):
#
#   small calls (8-byte `ay` body, one call in flight):
#     kernel interface kdbus-kabi-bench --workload call under libkdbus-preload.so against
#                      kdbusd --kdbusfs: open/ioctl/mmap/poll only, SEND with EXPECT_REPLY,
#                      poll, RECV, FREE (a plain kdbus program; issue #18)
#     kernel sync      the same with --sync (SEND with SYNC_REPLY, FREE)
#     native batched   kdbus-native-bench --workload call (KDBUS_HELLO_WIRE_BATCH; the
#                      service's reply and its held RECV for the next call in one
#                      datagram: KDBUS_WIRE_BATCH_THEN_RECV | KDBUS_WIRE_BATCH_HOLD_RECV)
#     native held      the same with --service-wait held (the reply, then a held RECV)
#     native eventfd   the same with --service-wait eventfd (batched, the service polls
#                      the wakeup eventfd, then RECV)
#     native plain     the same with --plain (kdbus's commands only, one round trip each)
#     kdbusd legacy, dbus-daemon, dbus-broker: legacy-payload-bench --size 8 (libdbus)
#   pipelined calls (the same call, $BENCH_INFLIGHT (64) in flight): kdbus-kabi-bench
#     --workload pipeline, kdbus-native-bench --workload pipeline (batched and --plain),
#     legacy-payload-bench --inflight on kdbusd's dbus1 socket, dbus-daemon, dbus-broker,
#     and the floor (kdbus-floor --peers 2: two peers doing blocking round trips with an
#     epoll echo, as a kdbus SEND through the library is; a call is two of them)
#   payloads (1 MiB, 16 MiB): sealed memfd through the kernel interface (kdbus-kabi-bench
#     --workload memfd: SEND, poll, RECV, FREE) and through libkdbus (kdbus-native-bench,
#     SYNC_REPLY) against the same `ay` through kdbusd's dbus1 socket, dbus-daemon and
#     dbus-broker
#
# The preload library is loaded into kdbus-kabi-bench alone (env LD_PRELOAD=... for that
# one program), never into a bus or another peer.
#
# Buses on CPU $BENCH_BUS_CPU (0), peers on $BENCH_PEER_CPU (1). Rounds of $BENCH_SECONDS (1)
# are interleaved, one per configuration in turn, $BENCH_ROUNDS (5) times, so background load
# hits every configuration alike; medians. Bus CPU per call: utime + stime of the bus process
# over the timed rounds (clock ticks: coarse at low rates); peers CPU per call: the same of
# the client and its service (with the preload library's or libkdbus's or libdbus's work).
#
# Usage: bench/native.sh BUILDDIR     (a release build with kdbus-native-bench,
#        kdbus-kabi-bench, libkdbus-preload.so and legacy-payload-bench:
#        meson setup -Dbuildtype=release BUILDDIR)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup bench/native.sh "${1:?usage: bench/native.sh BUILDDIR}" proxy/kdbusd \
        bench/kdbus-native-bench bench/kdbus-kabi-bench bench/legacy-payload-bench \
        bench/kdbus-floor preload/libkdbus-preload.so
inflight=${BENCH_INFLIGHT:-64}
py=/usr/bin/python3
preload=$build/preload/libkdbus-preload.so

bench_start_kdbusd --kdbusfs="$run/kdbusfs"
bench_wait_sock "$run/kdbusfs/control"
bench_start_dbus_daemon
bench_start_broker
declare -A bus_pid=([kdbusd]=$kdbusd_pid [dbus-daemon]=$daemon_pid [dbus-broker]=$broker_pid)

# "RATE BUS_CPU_US PEERS_CPU_US" from a RESULT line of kdbus-native-bench / kdbus-kabi-bench
result_fields() {
        sed -n 's/^RESULT .* median=\([0-9.]*\) .*bus_cpu_us_per_call=\([-0-9.]*\) peers_cpu_us_per_call=\([-0-9.]*\).*/\1 \2 \3/p'
}

# one round of configuration $1 at payload size $2 ($3: calls in flight, default 1): "RATE
# BUS_CPU_US PEERS_CPU_US" on stdout (CPU -1: unknown; peers: the client and its service)
one() {
        local cfg=$1 size=$2 depth=${3:-1} out
        case "$cfg" in
        kabi*)
                local -a args=(--workload call)
                [ "$cfg" = kabi-sync ] && args+=(--sync)
                [ "$depth" -gt 1 ] && args=(--workload pipeline --inflight "$depth")
                [ "$cfg" = kabi-memfd ] && args=(--workload memfd --size "$size")
                out=$(taskset -c "$peer_cpu" env LD_PRELOAD="$preload" \
                        "$build/bench/kdbus-kabi-bench" --root "$run/kdbusfs" "${args[@]}" \
                        --seconds "$seconds" --repeat 1 --bus-pid "${bus_pid[kdbusd]}")
                result_fields <<<"$out"
                ;;
        floor)
                # two synchronous requests per call (the caller's SEND, the service's
                # reply SEND), no bus logic: the echo's CPU is the "bus" column
                out=$(taskset -c "$peer_cpu" "$build/bench/kdbus-floor" --peers 2 \
                        --seconds "$seconds" --bus-cpu "$bus_cpu" --peer-cpu "$peer_cpu")
                sed -n 's/^RESULT .* requests_per_s=\([0-9.]*\) peers_cpu_us_per_request=\([0-9.]*\) .*echo_cpu_us_per_request=\([0-9.]*\) .*/\1 \3 \2/p' <<<"$out" |
                        awk '{ print $1 / 2, $2 * 2, $3 * 2 }'
                ;;
        native-*)
                local -a args=(--workload call)
                [ "$depth" -gt 1 ] && args=(--workload pipeline --inflight "$depth")
                [ "$cfg" = native-held ] && args+=(--service-wait held)
                [ "$cfg" = native-eventfd ] && args+=(--service-wait eventfd)
                [ "$cfg" = native-plain ] && args+=(--plain)
                [ "$cfg" = native-memfd ] && args=(--workload memfd --size "$size")
                out=$(taskset -c "$peer_cpu" "$build/bench/kdbus-native-bench" \
                        --native "$run/kdbusd.native" "${args[@]}" --seconds "$seconds" \
                        --repeat 1 --bus-pid "${bus_pid[kdbusd]}")
                result_fields <<<"$out"
                ;;
        *)
                out=$(taskset -c "$peer_cpu" "$build/bench/legacy-payload-bench" \
                        --address "unix:path=$run/$cfg.sock" --size "$size" --seconds "$seconds" \
                        --repeat 1 --bus-pid "${bus_pid[$cfg]}" --inflight "$depth")
                awk '/^median/ {r = $2} /^bus_cpu_us_per_call/ {b = $2}
                     /^peers_cpu_us_per_call/ {p = $2} END {print r, b == "" ? -1 : b, p == "" ? -1 : p}' <<<"$out"
                ;;
        esac
}

echo "native bench $(date -u +%FT%TZ): kdbusd $("$build/proxy/kdbusd" --version 2>/dev/null | head -1 || true)," \
     "load $(cut -d' ' -f1-3 /proc/loadavg), $rounds interleaved rounds of ${seconds}s," \
     "buses on CPU $bus_cpu, peers on CPU $peer_cpu"
small=(kabi kabi-sync native-batch native-held native-eventfd native-plain kdbusd dbus-daemon
       dbus-broker)
piped=(kabi native-batch native-plain kdbusd dbus-daemon dbus-broker floor)
big=(kabi-memfd native-memfd kdbusd dbus-daemon dbus-broker)
: >"$run/results"
for r in $(seq "$rounds"); do
        for cfg in "${small[@]}"; do
                echo "small $cfg $(one "$cfg" 8)" >>"$run/results"
        done
        for cfg in "${piped[@]}"; do
                echo "piped $cfg $(one "$cfg" 8 "$inflight")" >>"$run/results"
        done
        for size in 1048576 16777216; do
                for cfg in "${big[@]}"; do
                        echo "$size $cfg $(one "$cfg" "$size")" >>"$run/results"
                done
        done
done

"$py" - "$run/results" "$inflight" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 5 or not f[2]:
        sys.exit("bench/native.sh: a round failed: %r" % line)
    rows.setdefault((f[0], f[1]), []).append((float(f[2]), float(f[3]), float(f[4])))

def med(key):
    rates = [r for r, _, _ in rows[key]]
    cpus = [c for _, c, _ in rows[key] if c >= 0]
    peers = [p for _, _, p in rows[key] if p >= 0]
    return (statistics.median(rates), min(rates), max(rates),
            statistics.median(cpus) if cpus else float('nan'),
            statistics.median(peers) if peers else float('nan'))

names = {'kabi': 'kernel interface (preload): SEND, poll, RECV, FREE',
         'kabi-sync': 'kernel interface (preload): SYNC_REPLY',
         'native-batch': 'libkdbus, batched, reply + held RECV in one',
         'native-held': 'libkdbus, batched, reply then held RECV',
         'native-eventfd': 'libkdbus, batched, eventfd', 'native-plain': 'libkdbus, plain',
         'kdbusd': 'kdbusd classic (dbus1 socket)', 'dbus-daemon': 'dbus-daemon',
         'dbus-broker': 'dbus-broker',
         'floor': 'floor: 2 synchronous requests per call, no bus logic (kdbus-floor)'}


def table(kind, cfgs, title):
    print()
    print(title + '; ratio: the kernel interface (SEND, poll, RECV, FREE) / that row')
    print()
    print('| path | calls/s median (min-max) | bus CPU µs per call | peers CPU µs per call '
          '| kernel interface / this |')
    print('| --- | --- | --- | --- | --- |')
    ka = med((kind, 'kabi'))[0]
    for cfg in cfgs:
        m, lo, hi, cpu, peers = med((kind, cfg))
        print('| %s | %.0f (%.0f-%.0f) | %.1f | %.1f | %.2fx |' % (names[cfg], m, lo, hi, cpu,
                                                                peers, ka / m))


table('small', ('kabi', 'kabi-sync', 'native-batch', 'native-held', 'native-eventfd',
                'native-plain', 'kdbusd', 'dbus-daemon', 'dbus-broker'),
      'Small calls (8-byte `ay` body, one in flight)')
table('piped', ('kabi', 'native-batch', 'native-plain', 'kdbusd', 'dbus-daemon', 'dbus-broker',
                'floor'),
      'Pipelined calls (8-byte `ay` body, %s in flight)' % sys.argv[2])
print()
print('Payloads (one `ay` body, one call in flight): calls/s (MB/s), bus / peers CPU µs per'
      ' call; ratio: kernel interface memfd / that one')
print()
cols = ('kabi-memfd', 'native-memfd', 'kdbusd', 'dbus-daemon', 'dbus-broker')
print('| size | kernel interface memfd | libkdbus memfd | kdbusd classic | dbus-daemon | dbus-broker '
      '| vs libkdbus | vs kdbusd classic | vs dbus-daemon | vs dbus-broker |')
print('| --- |' + ' --- |' * 9)
for size in ('1048576', '16777216'):
    ms = [med((size, c)) for c in cols]
    cell = lambda m: '%.1f (%.0f MB/s), %.0f / %.0f µs' % (m[0], m[0] * int(size) / 1e6, m[3],
                                                            m[4])
    print('| %d MiB | %s | %s |' % (int(size) >> 20, ' | '.join(cell(m) for m in ms),
                                    ' | '.join('%.2fx' % (ms[0][0] / m[0]) for m in ms[1:])))
PY
