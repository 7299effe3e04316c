# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2034  # the variables set here are the caller's
#
# What the bench scripts share (sourced, after `set -euo pipefail`): their parameters, a run
# directory removed at exit with every process they started, and the buses they compare,
# each started on the bus CPU and waited for.
#
#   bench_setup NAME BUILDDIR FILE...  checks that every FILE (relative to BUILDDIR) is
#                                      executable, then sets build, root, seconds
#                                      ($BENCH_SECONDS, 1), rounds ($BENCH_ROUNDS, 5),
#                                      bus_cpu ($BENCH_BUS_CPU, 0), peer_cpu
#                                      ($BENCH_PEER_CPU, 1), run (a fresh directory) and
#                                      pids (killed at exit); NAME is used in messages
#   bench_wait_sock PATH               waits up to 10 s for the socket PATH (else: the
#                                      buses' stderr, exit 1)
#   bench_start_kdbusd [ARG...]        kdbusd --session on $run/kdbusd.sock with a native
#                                      socket $run/kdbusd.native, ARGs added: kdbusd_pid
#                                      (run under the command in the array kdbusd_wrap
#                                      if set, e.g. valgrind: its pid is kdbusd's)
#   bench_start_dbus_daemon            dbus-daemon with the installed session.conf minus its
#                                      service directories (no activation) on
#                                      $run/dbus-daemon.sock: daemon_pid
#   bench_start_broker                 dbus-broker (bench/broker-controller.py) on
#                                      $run/dbus-broker.sock: broker_pid (the broker itself,
#                                      the controller's child: the process doing bus work)
# Each bus's stderr goes to $run/<bus>.err.

bench_setup() {
        local f
        bench_name=$1
        build=$2
        shift 2
        root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
        seconds=${BENCH_SECONDS:-1}
        rounds=${BENCH_ROUNDS:-5}
        bus_cpu=${BENCH_BUS_CPU:-0}
        peer_cpu=${BENCH_PEER_CPU:-1}
        for f in "$@"; do
                [ -x "$build/$f" ] || {
                        echo "$bench_name: $build/$f is missing (build it first)" >&2
                        exit 1
                }
        done
        run=$(mktemp -d "/tmp/kdbus-$(basename "$bench_name" .sh)-bench-XXXXXX")
        pids=()
        kdbusd_wrap=()
        trap bench_cleanup EXIT
}

bench_cleanup() {
        local p
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        rm -rf "$run"
}

bench_wait_sock() {
        for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.1; done
        echo "$bench_name: no socket $1; stderr of the buses:" >&2
        cat "$run"/*.err >&2
        exit 1
}

bench_start_kdbusd() {
        taskset -c "$bus_cpu" ${kdbusd_wrap[@]+"${kdbusd_wrap[@]}"} "$build/proxy/kdbusd" --session --nofork \
                --address="unix:path=$run/kdbusd.sock" --native="unix:path=$run/kdbusd.native" \
                "$@" >/dev/null 2>"$run/kdbusd.err" &
        kdbusd_pid=$!
        pids+=("$kdbusd_pid")
        bench_wait_sock "$run/kdbusd.sock"
        bench_wait_sock "$run/kdbusd.native"
}

bench_start_dbus_daemon() {
        sed -e '/<standard_session_servicedirs/d' -e '/<servicedir>/d' \
                /usr/share/dbus-1/session.conf >"$run/dbus-daemon.conf"
        taskset -c "$bus_cpu" dbus-daemon --config-file="$run/dbus-daemon.conf" --nofork \
                --address="unix:path=$run/dbus-daemon.sock" >/dev/null 2>"$run/dbus-daemon.err" &
        daemon_pid=$!
        pids+=("$daemon_pid")
        bench_wait_sock "$run/dbus-daemon.sock"
}

bench_start_broker() {
        local controller
        taskset -c "$bus_cpu" /usr/bin/python3 "$root/bench/broker-controller.py" \
                --listen "$run/dbus-broker.sock" >/dev/null 2>"$run/dbus-broker.err" &
        controller=$!
        pids+=("$controller")
        bench_wait_sock "$run/dbus-broker.sock"
        broker_pid=$(pgrep -P "$controller" -x dbus-broker)
}
