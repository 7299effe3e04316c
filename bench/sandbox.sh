#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Sandboxed apps (issue #15), one run: calls from a client on a sandbox's filtered socket to
# a service on the bus, through
#   kdbusd endpoint   kdbus-proxy in front of kdbusd (an endpoint at the socket; no process
#                     in the data path)
#   kdbus-proxy       kdbus-proxy in front of dbus-daemon (its filtering proxy: a process
#                     in the path, one bus connection per client, as xdg-dbus-proxy)
#   xdg-dbus-proxy    xdg-dbus-proxy in front of dbus-daemon (a proxy process per app)
# and, for reference, the same calls straight on kdbusd and dbus-daemon. All proxies get
# the same command line: --filter --talk=org.kdbus.Bench.
#   rtt        kdbus-bench --workload call --inflight 1 (one call in flight)
#   pipelined  the same with --inflight 64
# Then the RSS of both kdbus-proxy processes, xdg-dbus-proxy and both buses after 100,000
# more calls through each sandbox socket.
#
# Buses and proxies on CPU $BENCH_BUS_CPU (0), clients and services on $BENCH_PEER_CPU (1);
# rounds of $BENCH_SECONDS (1) interleaved, $BENCH_ROUNDS (5) times; medians.
#
# Usage: bench/sandbox.sh BUILDDIR     (a build with proxy/kdbusd, tools/kdbus-proxy and
#        bench/kdbus-bench: meson setup -Dbuildtype=release BUILDDIR)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup bench/sandbox.sh "${1:?usage: bench/sandbox.sh BUILDDIR}" proxy/kdbusd \
        tools/kdbus-proxy bench/kdbus-bench
command -v xdg-dbus-proxy >/dev/null || { echo "bench/sandbox.sh: no xdg-dbus-proxy" >&2; exit 1; }

bench_start_kdbusd
bench_start_dbus_daemon
taskset -c "$bus_cpu" "$build/tools/kdbus-proxy" \
        "kernel:path=$run/kdbusd.native;unix:path=$run/kdbusd.sock" "$run/kdbus-proxy.sock" \
        --filter --talk=org.kdbus.Bench 2>"$run/kdbus-proxy.err" &
pids+=($!); kproxy_pid=$!
taskset -c "$bus_cpu" "$build/tools/kdbus-proxy" "unix:path=$run/dbus-daemon.sock" \
        "$run/kproxy-daemon.sock" --filter --talk=org.kdbus.Bench 2>"$run/kproxy-daemon.err" &
pids+=($!); kfilter_pid=$!
taskset -c "$bus_cpu" xdg-dbus-proxy "unix:path=$run/dbus-daemon.sock" "$run/xdg.sock" \
        --filter --talk=org.kdbus.Bench 2>"$run/xdg.err" &
pids+=($!); xproxy_pid=$!
bench_wait_sock "$run/kdbus-proxy.sock"; bench_wait_sock "$run/kproxy-daemon.sock"
bench_wait_sock "$run/xdg.sock"

declare -A addr=(
        [kdbusd-endpoint]="unix:path=$run/kdbusd.sock unix:path=$run/kdbus-proxy.sock"
        [kdbus-proxy]="unix:path=$run/dbus-daemon.sock unix:path=$run/kproxy-daemon.sock"
        [xdg-dbus-proxy]="unix:path=$run/dbus-daemon.sock unix:path=$run/xdg.sock"
        [kdbusd]="unix:path=$run/kdbusd.sock unix:path=$run/kdbusd.sock"
        [dbus-daemon]="unix:path=$run/dbus-daemon.sock unix:path=$run/dbus-daemon.sock"
)
configs=(kdbusd-endpoint kdbus-proxy xdg-dbus-proxy kdbusd dbus-daemon)

bench() {       # CONFIG INFLIGHT -> calls/s
        local bus client
        read -r bus client <<<"${addr[$1]}"
        taskset -c "$peer_cpu" "$build/bench/kdbus-bench" --address "$bus" \
                --client-address "$client" --workload call --inflight "$2" --repeat 1 \
                --seconds "$seconds" --count 100000000 |
                sed -n 's/^RESULT call median=\([0-9.]*\).*/\1/p'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "bench/sandbox.sh: $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo ?)," \
     "load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds of ${seconds}s"
for inflight in 1 64; do
        declare -A results=()
        for _ in $(seq "$rounds"); do
                for c in "${configs[@]}"; do
                        results[$c]+="$(bench "$c" "$inflight") "
                done
        done
        declare -A med=()
        for c in "${configs[@]}"; do
                med[$c]=$(tr ' ' '\n' <<<"${results[$c]}" | grep . | median)
        done
        label=$([ "$inflight" = 1 ] && echo "rtt (1 in flight)" || echo "pipelined (64 in flight)")
        printf '%-26s' "$label"
        for c in "${configs[@]}"; do printf ' %s %.0f/s' "$c" "${med[$c]}"; done
        printf '\n%-26s endpoint/xdg-dbus-proxy %.2fx, endpoint/kdbusd %.2fx, xdg-dbus-proxy/dbus-daemon %.2fx\n' \
                "" "$(echo "${med[kdbusd-endpoint]} / ${med[xdg-dbus-proxy]}" | bc -l)" \
                "$(echo "${med[kdbusd-endpoint]} / ${med[kdbusd]}" | bc -l)" \
                "$(echo "${med[xdg-dbus-proxy]} / ${med[dbus-daemon]}" | bc -l)"
        printf '%-26s kdbus-proxy/xdg-dbus-proxy %.2fx, kdbus-proxy/dbus-daemon %.2fx\n' \
                "" "$(echo "${med[kdbus-proxy]} / ${med[xdg-dbus-proxy]}" | bc -l)" \
                "$(echo "${med[kdbus-proxy]} / ${med[dbus-daemon]}" | bc -l)"
        unset results med
done

rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
for c in kdbusd-endpoint kdbus-proxy xdg-dbus-proxy; do
        read -r bus client <<<"${addr[$c]}"
        taskset -c "$peer_cpu" "$build/bench/kdbus-bench" --address "$bus" --client-address \
                "$client" --workload call --inflight 64 --repeat 1 --count 100000 \
                --warmup 0 >/dev/null
done
printf 'RSS after 100000 calls per socket: kdbus-proxy (endpoint) %s KiB, kdbusd %s KiB; kdbus-proxy (filtering) %s KiB, xdg-dbus-proxy %s KiB, dbus-daemon %s KiB\n' \
        "$(rss $kproxy_pid)" "$(rss $kdbusd_pid)" "$(rss $kfilter_pid)" "$(rss $xproxy_pid)" \
        "$(rss $daemon_pid)"
