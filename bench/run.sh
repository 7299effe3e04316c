#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# kdbusd vs dbus-daemon vs dbus-broker, side by side in one run, and bench/kdbus-relay (the
# same bytes between the same sockets with no bus logic: the physical reference) (see
# bench/README.md).
#
#   bench/run.sh [--quick] [--json FILE] [--tree] [--no-build] [--no-extra] [--profile] [--policy]
#                [--no-native] [--only NAME,...] [--base REV]
#
# Builds kdbusd and the bench programs in their own release build dir ($BENCH_BUILDDIR,
# default <repo>/build-bench) from a snapshot of the committed HEAD (git archive into
# $BENCH_BUILDDIR.src), so edits in progress in a shared tree do not break or skew the run;
# --tree builds the working tree instead. Starts the three buses (each pinned to CPU $BENCH_BUS_CPU,
# default 0; the benchmark's client and peers are pinned to $BENCH_PEER_CPU, default 1;
# $BENCH_PEER_ARGS: more kdbus-bench options for every run, e.g. --poll),
# checks each with a ping round trip, then runs every workload $BENCH_ROUNDS times (default
# 5) for $BENCH_SECONDS seconds each (default 1), interleaving the buses round by round so
# that background load hits all three alike. Prints a table of medians (min-max) and
# speedups (>1: kdbusd faster; kdbusd/relay < 1: what the bus costs over the sockets).
# Workloads: call-1, call-64, call-1MiB (1 MiB call + 1 MiB reply, MiB/s both ways, p50/p99),
# connect (connect + SASL + Hello + close; the relay answers with fixed lines and a Hello
# reply of its own), signal-1, signal-8.
# Then, unless --no-extra: allocations per operation in each
# bus (bench/malloc-count.so preloaded into the bus) and syscalls per call (perf stat on the
# bus process) during the pipelined workload. --profile adds a perf record of kdbusd
# (call-64, call-1MiB, connect).
# --policy: kdbusd and dbus-daemon each with allow-all (session policy) and with Debian's
# system.conf + system.d + bench/policy/org.kdbus.Bench.conf; call-1, call-64, signal-8;
# checks first that the system policy denies; adds instructions per operation (callgrind).
# --only: just these workloads (names as in the table), e.g. --only signal-10,signal-10-idle1k.
# Last, unless --no-native or --policy: bench/native.sh (kdbus's kernel interface through
# libkdbus-preload.so and libkdbus, plain and batched, against kdbusd's legacy path,
# dbus-daemon and dbus-broker: small calls, pipelined calls, 1 MiB / 16 MiB memfd payloads
# against the legacy paths; ratios).
# --base REV: also kdbusd built from REV (any git revision, built in $BENCH_BUILDDIR-base) as
# bus "kdbusd-base", interleaved with the others round by round, with kdbusd/kdbusd-base in the
# table: a change's before and after in one run, both under the same background load.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BENCH_BUILDDIR:-$root/build-bench}
rounds=${BENCH_ROUNDS:-5}
seconds=${BENCH_SECONDS:-1}
bus_cpu=${BENCH_BUS_CPU:-0}
peer_cpu=${BENCH_PEER_CPU:-1}
read -r -a peer_args <<<"${BENCH_PEER_ARGS:-}"
json=
do_build=1
do_extra=1
do_profile=0
policy=0
from_tree=0
native=1
only=
base=

while [ $# -gt 0 ]; do
        case "$1" in
        --quick) rounds=3; seconds=0.3 ;;
        --json) json=$2; shift ;;
        --no-build) do_build=0 ;;
        --tree) from_tree=1 ;;
        --no-extra) do_extra=0 ;;
        --profile) do_profile=1 ;;
        --policy) policy=1 ;;
        --no-native) native=0 ;;
        --only) only=$2; shift ;;
        --base) base=$2; shift ;;
        -h|--help) sed -n '3,34p' "$0"; exit 0 ;;
        *) echo "bench/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        esac
        shift
done

py=/usr/bin/python3
for tool in taskset dbus-daemon dbus-broker "$py"; do
        command -v "$tool" >/dev/null || {
                echo "bench/run.sh: '$tool' is missing: run tools/dev/deps.sh" >&2; exit 1; }
done

run=$(mktemp -d /tmp/kdbus-bench.XXXXXX)
declare -A bus_pid bus_addr
buses=(kdbusd dbus-daemon dbus-broker relay)
[ "$policy" = 1 ] && buses=(kdbusd kdbusd-policy dbus-daemon dbus-daemon-policy)
[ -n "$base" ] && buses=(kdbusd kdbusd-base "${buses[@]:1}")
trap 'rm -rf "$run"' EXIT
wrap=()                 # a command prefix for the bus (valgrind), see start_bus
src=$root
if [ "$from_tree" = 0 ] && git -C "$root" rev-parse --verify -q HEAD >/dev/null; then
        src=$build.src
        head=$(git -C "$root" rev-parse HEAD)
        if [ "$do_build" = 1 ] && [ "$(cat "$src/.bench-commit" 2>/dev/null)" != "$head" ]; then
                rm -rf "$src.new"
                mkdir -p "$src.new"
                git -C "$root" archive HEAD | tar -x -C "$src.new"
                echo "$head" >"$src.new/.bench-commit"
                rm -rf "$src"
                mv "$src.new" "$src"
        fi
fi
if [ "$do_build" = 1 ]; then
        # meson ties a build dir to one source dir: set up anew when it is another one
        if [ -f "$build/build.ninja" ] && [ "$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
                        "$build/meson-info/meson-info.json" 2>/dev/null)" != "$src" ]; then
                rm -rf "$build"
        fi
        if [ ! -f "$build/build.ninja" ]; then
                meson setup "$build" "$src" --buildtype=release -Dtests=false -Dwerror=true \
                        >"$run/setup.log" 2>&1 || { cat "$run/setup.log" >&2; exit 1; }
        fi
        targets=(proxy/kdbusd bench/kdbus-bench bench/kdbus-relay bench/malloc-count.so)
        [ "$native" = 1 ] && [ "$policy" = 0 ] &&
                targets+=(bench/kdbus-native-bench bench/legacy-payload-bench bench/kdbus-kabi-bench bench/kdbus-floor
                          preload/libkdbus-preload.so)
        if ! nice ninja -C "$build" -j2 "${targets[@]}" >"$run/ninja.log" 2>&1; then
                tail -30 "$run/ninja.log" >&2
                echo "bench/run.sh: build failed (log: $build.ninja.log)" >&2
                exit 1
        fi
fi
built_from=$(cat "$src/.bench-commit" 2>/dev/null || echo "working tree $src")
kdbusd=$build/proxy/kdbusd
kdbusd_base=
if [ -n "$base" ]; then
        base_rev=$(git -C "$root" rev-parse --verify -q "$base^{commit}") || {
                echo "bench/run.sh: --base '$base': no such revision in $root" >&2; exit 2; }
        base_src=$build-base.src
        if [ "$(cat "$base_src/.bench-commit" 2>/dev/null)" != "$base_rev" ]; then
                rm -rf "$base_src" "$build-base"
                mkdir -p "$base_src"
                git -C "$root" archive "$base_rev" | tar -x -C "$base_src"
                echo "$base_rev" >"$base_src/.bench-commit"
        fi
        if [ ! -f "$build-base/build.ninja" ]; then
                meson setup "$build-base" "$base_src" --buildtype=release -Dtests=false \
                        >"$run/setup-base.log" 2>&1 || { cat "$run/setup-base.log" >&2; exit 1; }
        fi
        nice ninja -C "$build-base" -j2 proxy/kdbusd >"$run/ninja-base.log" 2>&1 || {
                tail -30 "$run/ninja-base.log" >&2
                echo "bench/run.sh: --base $base: build failed" >&2; exit 1; }
        kdbusd_base=$build-base/proxy/kdbusd
fi
bench=$build/bench/kdbus-bench
relay=$build/bench/kdbus-relay
relay_sndbuf=$(sed -n 's/^#define CLIENT_SNDBUF (\([0-9]*\) \* \([0-9]*\)).*/\1 * \2/p' "$src/proxy/client.h")
relay_sndbuf=$((${relay_sndbuf:-0}))
preload=$build/bench/malloc-count.so
buildtype=$(meson introspect --buildoptions "$build" 2>/dev/null |
            "$py" -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"][0])' ||
            echo unknown)


stop_buses() {
        local b
        for b in "${buses[@]}"; do
                if [ -n "${bus_pid[$b]:-}" ]; then
                        kill "${bus_pid[$b]}" 2>/dev/null || true
                        wait "${bus_pid[$b]}" 2>/dev/null || true
                        bus_pid[$b]=
                fi
        done
}
cleanup() { stop_buses; rm -rf "$run"; }
trap cleanup EXIT

# dbus-daemon: the installed session.conf minus its service directories (no activation)
sed -e '/<standard_session_servicedirs/d' -e '/<servicedir>/d' \
        /usr/share/dbus-1/session.conf > "$run/dbus-daemon.conf"
# --policy: what --system loads (system.conf, its system.d includes) plus the bench service's
# package-style file, for both buses; dbus-daemon drops to <user>messagebus</user> (kdbusd
# does not yet), so the run dir must be traversable and the callgrind dir writable by it
if [ "$policy" = 1 ]; then
        chmod 711 "$run"
        sed "s/user=\"root\"/user=\"$(id -un)\"/" "$root/bench/policy/org.kdbus.Bench.conf" \
                >"$run/org.kdbus.Bench.conf"
        cat >"$run/system-bench.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <include>/usr/share/dbus-1/system.conf</include>
  <include>$run/org.kdbus.Bench.conf</include>
</busconfig>
EOF
fi

# start_bus NAME [PRELOAD]: start NAME pinned to $bus_cpu, wait for its address
start_bus() {
        local b=$1 pre=${2:-} out=$run/$1.out i
        local -a envs=()
        if [ -n "$pre" ]; then
                envs=(BENCH_MALLOC_COUNT_FILE="$run/$b.allocs")
                [ "$b" = dbus-broker ] && envs+=(BENCH_BROKER_PRELOAD="$pre") || envs+=(LD_PRELOAD="$pre")
        fi
        rm -f "$run/$b.sock" "$run/$b.allocs"
        case "$b" in
        kdbusd|kdbusd-base)
                local bin=$kdbusd
                [ "$b" = kdbusd-base ] && bin=$kdbusd_base
                env "${envs[@]}" taskset -c "$bus_cpu" "${wrap[@]}" "$bin" --session \
                        --address="unix:path=$run/$b.sock" --nofork --print-address >"$out" 2>"$run/$b.err" &
                ;;
        dbus-daemon)
                env "${envs[@]}" taskset -c "$bus_cpu" "${wrap[@]}" dbus-daemon --config-file="$run/dbus-daemon.conf" \
                        --address="unix:path=$run/$b.sock" --nofork --print-address >"$out" 2>"$run/$b.err" &
                ;;
        kdbusd-policy|dbus-daemon-policy)
                local prog=dbus-daemon
                [ "$b" = kdbusd-policy ] && prog=$kdbusd
                env "${envs[@]}" taskset -c "$bus_cpu" "${wrap[@]}" "$prog" \
                        --config-file="$run/system-bench.conf" --nopidfile \
                        --address="unix:path=$run/$b.sock" --nofork --print-address >"$out" 2>"$run/$b.err" &
                ;;
        dbus-broker)
                # the controller (idle Python) and the broker it spawns share the bus CPU
                env "${envs[@]}" taskset -c "$bus_cpu" "$py" "$root/bench/broker-controller.py" \
                        --listen "$run/$b.sock" >"$out" 2>"$run/$b.err" &
                ;;
        relay)
                # the socket buffers kdbusd gives its peers (CLIENT_SNDBUF, proxy/client.h)
                env "${envs[@]}" taskset -c "$bus_cpu" "${wrap[@]}" "$relay" --listen "$run/$b.sock" \
                        --sndbuf "$relay_sndbuf" >"$out" 2>"$run/$b.err" &
                ;;
        esac
        bus_pid[$b]=$!
        for i in $(seq 300); do
                [ -s "$out" ] && break
                kill -0 "${bus_pid[$b]}" 2>/dev/null || break
                sleep 0.1
        done
        if [ ! -s "$out" ]; then
                echo "bench/run.sh: $b did not start; its stderr:" >&2
                cat "$run/$b.err" >&2
                exit 1
        fi
        bus_addr[$b]=unix:path=$run/$b.sock
        if [ -n "$pre" ]; then
                for i in $(seq 50); do [ -s "$run/$b.allocs" ] && break; sleep 0.1; done
        fi
}

# the process that does the bus work (for perf): dbus-broker is the controller's child
work_pid() {
        if [ "$1" = dbus-broker ]; then
                pgrep -P "${bus_pid[$1]}" -x dbus-broker
        else
                echo "${bus_pid[$1]}"
        fi
}

# perf_summary FILE N: perf stat -x, output as "per operation" figures
perf_summary() {
        "$py" - "$1" "$2" <<'PY'
import sys
n = int(sys.argv[2])
out = []
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) < 3 or not f[0].replace(".", "").isdigit():
        continue
    count, ev = float(f[0]), f[2]
    if ev == "task-clock":          # msec of CPU time of the bus process
        out.append(f"CPU {count * 1000 / n:.2f} us")
        continue
    ev = ev.replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "syscalls")
    ev = ev.replace("context-switches", "ctx-switches")
    if count:
        out.append(f"{ev} {count / n:.3f}")
print("; ".join(out))
PY
}

# bench_one BUS ARGS...: run kdbus-bench pinned to $peer_cpu, print its RESULT line
bench_one() {
        local b=$1; shift
        local out
        local -a rel=()
        [ "$b" = relay ] && rel=(--relay)
        if ! out=$(taskset -c "$peer_cpu" "$bench" --address "${bus_addr[$b]}" "${rel[@]}" \
                        "${peer_args[@]}" "$@" 2>&1); then
                echo "bench/run.sh: kdbus-bench on $b failed ($*):" >&2
                echo "$out" >&2
                cat "$run/$b.err" >&2
                exit 1
        fi
        grep '^RESULT' <<<"$out"
}

big=1048576000          # a multiple of every window: rounds are bounded by time
mib=1048576
# name|unit|kdbus-bench arguments[|factor: the table shows signals/s times it, deliveries/s];
# call-1MiB's rate is turned into MiB/s (2 MiB per call)
workloads=(
        "call-1|calls/s, 1 in flight|--workload call --inflight 1 --warmup 2000"
        "call-64|calls/s, 64 in flight|--workload call --inflight 64 --warmup 20000"
        "call-1MiB|MiB/s, 1 MiB call+reply|--workload call --inflight 1 --warmup 50 --payload $mib --reply-payload $mib"
        "connect|connections/s|--workload connect --warmup 200"
        "signal-1|signals/s, 1 receiver|--workload signal --receivers 1 --warmup 6400"
        "signal-8|signals/s, 8 receivers|--workload signal --receivers 8 --warmup 6400"
        "signal-100|deliveries/s, 100 rcv|--workload signal --receivers 100 --warmup 640|100"
        "signal-10|deliveries/s, 10 rcv|--workload signal --receivers 10 --warmup 1280|10"
        "signal-10-idle1k|deliveries/s, + 1k rules|--workload signal --receivers 10 --idle-peers 100 --idle-rules 1000 --warmup 1280|10"
        "signal-1-idle10k|signals/s, + 10k rules|--workload signal --receivers 1 --idle-peers 100 --idle-rules 10000 --warmup 6400"
)
[ "$policy" = 1 ] && workloads=("${workloads[0]}" "${workloads[1]}" "${workloads[5]}")
if [ -n "$only" ]; then
        picked=()
        for w in "${workloads[@]}"; do
                [[ ",$only," == *",${w%%|*},"* ]] && picked+=("$w")
        done
        [ "${#picked[@]}" -gt 0 ] || { echo "bench/run.sh: --only '$only': no such workload" >&2; exit 2; }
        workloads=("${picked[@]}")
fi
# the relay keeps no rules: no idle peers for it (connect: it greets each connection with
# fixed answers, the floor of a connection's cost)
skip() { [ "$2" = relay ] && [[ "$1" = *idle* ]]; }

for b in "${buses[@]}"; do start_bus "$b"; done
for b in "${buses[@]}"; do
        bench_one "$b" --workload call --inflight 1 --count 1 --warmup 0 --repeat 1 >/dev/null
done
echo "bench: kdbusd ($buildtype build of $built_from in $build), dbus-daemon $(dbus-daemon --version | head -1 |
        awk '{print $NF}'), dbus-broker $(dbus-broker --version | awk 'NR==1{print $NF}'); every bus answers a ping"
# --policy: the system policy must really be in force on the -policy buses (and not on the
# others): RequestName of a name no rule lists, and a method call to a peer's unique name
if [ "$policy" = 1 ]; then
        for b in "${buses[@]}"; do
                "$py" - "${bus_addr[$b]}" "$b" <<'PY' || exit 1
import dbus, sys
addr, bus = sys.argv[1:3]
want = "denied" if bus.endswith("-policy") else "allowed"
def verdict(e):
    n = e.get_dbus_name()
    if n == "org.freedesktop.DBus.Error.AccessDenied":
        return "denied"
    return "allowed" if n == "org.freedesktop.DBus.Error.NoReply" else n
a, c = dbus.bus.BusConnection(addr), dbus.bus.BusConnection(addr)
got = []
try:
    a.request_name("org.kdbus.BenchUnlisted")
    got.append("allowed")
except dbus.DBusException as e:
    got.append(verdict(e))
try:    # c has no main loop: delivered, the call times out (NoReply)
    a.call_blocking(c.get_unique_name(), "/", "org.kdbus.Other", "Ping", "", (), timeout=0.5)
    got.append("allowed")
except dbus.DBusException as e:
    got.append(verdict(e))
if got != [want, want]:
    sys.exit(f"bench/run.sh: {bus}: RequestName(org.kdbus.BenchUnlisted) and a call to a peer's "
             f"unique name gave {got}, expected {want}: the policy in force is not the one to measure")
print(f"bench: {bus}: RequestName of an unlisted name and a call to a peer's unique name: {want}")
PY
        done
fi
echo "bench: $rounds rounds x ${seconds}s per workload and bus; buses on CPU $bus_cpu, clients on CPU $peer_cpu; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)${BENCH_PEER_ARGS:+; kdbus-bench $BENCH_PEER_ARGS}"

results=$run/results.txt
: >"$results"
# round by round over all workloads, so that a burst of load hits each workload and bus alike
# (the idle-rule costs compare two workloads' medians)
for r in $(seq "$rounds"); do
        for w in "${workloads[@]}"; do
                IFS='|' read -r name unit args factor <<<"$w"
                for b in "${buses[@]}"; do
                        skip "$name" "$b" && continue
                        # shellcheck disable=SC2086
                        line=$(bench_one "$b" $args --seconds "$seconds" --count $big --repeat 1)
                        v=$(sed -n 's/.*median=\([0-9.]*\).*/\1/p' <<<"$line")
                        [ "$name" = call-1MiB ] && v=$("$py" -c "print($v * 2)")
                        echo "$name $b $v ${factor:-1} $(sed -n 's/.* p50=\([0-9.]*\) p99=\([0-9.]*\).*/\1 \2/p' <<<"$line")" \
                                >>"$results"
                done
        done
done

declare -A extra
if [ "$do_extra" = 1 ]; then
        stop_buses
        perf_ok=0
        command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1 && perf_ok=1
        events=task-clock,raw_syscalls:sys_enter,context-switches
        for sc in read write readv writev recvmsg sendmsg sendmmsg recvfrom sendto epoll_wait \
                  epoll_pwait epoll_ctl poll ppoll clock_gettime ioctl; do
                events+=,syscalls:sys_enter_$sc
        done
        for b in "${buses[@]}"; do
                [ "$policy" = 1 ] && break      # allocations: not part of the policy comparison
                [ "$b" = relay ] && continue    # no allocation per message, by construction
                start_bus "$b" "$preload"
                # allocations per operation over the timed rounds
                for w in "call-64|--workload call --inflight 64 --warmup 20000" \
                         "signal-8|--workload signal --receivers 8 --warmup 6400"; do
                        IFS='|' read -r name args <<<"$w"
                        # shellcheck disable=SC2086
                        line=$(bench_one "$b" $args --seconds "$seconds" --count $big --repeat 1 \
                                --alloc-file "$run/$b.allocs")
                        extra[$b.allocs.$name]=$(sed -n 's/.*allocs=\([0-9.]*\).*/\1/p' <<<"$line")
                done
                stop_buses
        done
        # CPU time and syscalls of the bus per operation: a fixed count under perf stat, on
        # buses without the counter. Robust against background load, unlike rates.
        if [ "$perf_ok" = 1 ]; then
                for b in "${buses[@]}"; do
                        start_bus "$b"
                        for w in "call-1|10001|--workload call --inflight 1 --count 10000" \
                                 "call-64|100001|--workload call --inflight 64 --count 100000" \
                                 "call-1MiB|1001|--workload call --inflight 1 --count 1000 --payload $mib --reply-payload $mib" \
                                 "connect|5001|--workload connect --count 5000" \
                                 "signal-8|25664|--workload signal --receivers 8 --count 25600"; do
                                IFS='|' read -r name n args <<<"$w"
                                skip "$name" "$b" && continue
                                [ "$policy" = 1 ] && [[ "$name" = call-1MiB || "$name" = connect ]] && continue
                                perf stat -x, -o "$run/$b.$name.perf" -e "$events" -p "$(work_pid "$b")" &
                                perf_pid=$!
                                sleep 0.3
                                # shellcheck disable=SC2086
                                bench_one "$b" $args --warmup 0 --repeat 1 >/dev/null
                                kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" || true
                                extra[$b.perf.$name]=$(perf_summary "$run/$b.$name.perf" "$n")
                        done
                        if [ "$do_profile" = 1 ] && [ "$b" = kdbusd ]; then
                                for w in "call-64|--workload call --inflight 64 --count 300000" \
                                         "call-1MiB|--workload call --inflight 1 --count 3000 --payload $mib --reply-payload $mib" \
                                         "connect|--workload connect --count 10000"; do
                                        IFS='|' read -r name args <<<"$w"
                                        perf record -q -o "$run/kdbusd.perfdata" -p "${bus_pid[$b]}" 2>/dev/null &
                                        perf_pid=$!
                                        sleep 0.3
                                        # shellcheck disable=SC2086
                                        bench_one "$b" $args --warmup 0 --repeat 1 >/dev/null
                                        kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" || true
                                        echo "  $name:" >>"$run/kdbusd.profile"
                                        perf report -q -i "$run/kdbusd.perfdata" --no-children --sort dso,symbol \
                                                --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -20 \
                                                >>"$run/kdbusd.profile" || true
                                done
                        fi
                        stop_buses
                done
        fi
        # --policy: instructions of the bus per operation (no PMU in this VM: callgrind), from
        # two runs of N and 2N operations, so startup and connection setup cancel out
        if [ "$policy" = 1 ] && command -v valgrind >/dev/null; then
                mkdir -m 777 "$run/cg"
                for b in "${buses[@]}"; do
                        for w in "call-1|300|--workload call --inflight 1" \
                                 "call-64|1000|--workload call --inflight 64" \
                                 "signal-8|640|--workload signal --receivers 8"; do
                                IFS='|' read -r name n args <<<"$w"
                                tot=()
                                for k in 1 2; do
                                        cg=$run/cg/$b.$name.$k
                                        wrap=(valgrind --tool=callgrind --callgrind-out-file="$cg")
                                        start_bus "$b"
                                        chmod 666 "$cg" 2>/dev/null || true    # dbus-daemon dumps as messagebus
                                        # shellcheck disable=SC2086
                                        bench_one "$b" $args --warmup 0 --count $((n * k)) --repeat 1 >/dev/null
                                        stop_buses
                                        tot+=("$(sed -n 's/^summary: //p' "$cg")")
                                done
                                wrap=()
                                extra[$b.instr.$name]=$(( (tot[1] - tot[0]) / n ))
                        done
                done
        fi
fi

: >"$run/extra.txt"
for k in "${!extra[@]}"; do printf '%s\t%s\n' "$k" "${extra[$k]}" >>"$run/extra.txt"; done
BENCH_BASE="${base_rev:-}" BENCH_BUSES="${buses[*]}" "$py" - "$results" "$json" "$rounds" "$seconds" "$run/extra.txt" "$built_from" <<'PY' "${workloads[@]}"
import json, os, statistics, sys
results, json_path, rounds, seconds, extra_path, built_from = sys.argv[1:7]
units = {w.split("|")[0]: w.split("|")[1] for w in sys.argv[7:]}
data, pct = {}, {}
for line in open(results):
    name, bus, value, factor, *lat = line.split()
    data.setdefault(name, {}).setdefault(bus, []).append(float(value) * float(factor))
    if lat:     # p50 p99 of the round's round trips
        pct.setdefault(name, {}).setdefault(bus, []).append([float(x) for x in lat])
buses = os.environ["BENCH_BUSES"].split()
pairs = [("kdbusd", "dbus-daemon"), ("kdbusd", "dbus-broker"), ("kdbusd", "relay")]
if "kdbusd-base" in buses:      # a change's after / before
    pairs.insert(0, ("kdbusd", "kdbusd-base"))
if "kdbusd-policy" in buses:    # ratio > 1: the policy costs that much throughput
    pairs = [("kdbusd", "kdbusd-policy"), ("dbus-daemon", "dbus-daemon-policy")]
def cell(v):
    return f"{statistics.median(v):>9.0f} ({min(v):.0f}-{max(v):.0f})" if v else "-"
print()
print(f"{'workload':<16} {'unit':<24} " + " ".join(f"{b + ' median (min-max)':>30}" for b in buses)
      + "".join(f" {a + '/' + b:>19}" for a, b in pairs))
summary = {"kdbusd": built_from, "kdbusd-base": os.environ.get("BENCH_BASE") or None, "rounds": int(rounds), "seconds_per_round": float(seconds),
           "workloads": {}, "per_operation": dict(l.rstrip("\n").split("\t", 1)
                                                  for l in open(extra_path) if "\t" in l)}
for name in units:
    d = data[name]
    med = {b: statistics.median(d[b]) for b in buses if d.get(b)}
    ratios = {f"{a}/{b}": med[a] / med[b] if a in med and b in med else None for a, b in pairs}
    print(f"{name:<16} {units[name]:<24} " + " ".join(f"{cell(d.get(b)):>30}" for b in buses)
          + "".join(f" {r:>18.2f}x" if r else f" {'-':>19}" for r in ratios.values()))
    summary["workloads"][name] = {"unit": units[name], "runs": d, "median": med, "ratios": ratios}
# what rules that cannot match cost a broadcast, per bus (rounds interleave, so medians of
# the two workloads compare; issue #16 wants <= 5 % at 1k rules, #17 at 10k)
for with_rules, without in (("signal-10-idle1k", "signal-10"), ("signal-1-idle10k", "signal-1")):
    if with_rules in data and without in data:
        have = [b for b in buses if b in data[with_rules] and b in data[without]]
        print(f"{with_rules} against {without} (rate change): " + ", ".join(
            f"{b} {100 * (statistics.median(data[with_rules][b]) / statistics.median(data[without][b]) - 1):+.1f} %"
            for b in have))
        summary.setdefault("idle_rule_cost", {})[with_rules] = {
            b: statistics.median(data[with_rules][b]) / statistics.median(data[without][b]) - 1
            for b in have}
for name, p in pct.items():
    if name == "call-1":
        continue
    # the median round's p50 and p99 (each round's own percentiles; median over rounds)
    print(f"{name} round trip p50 / p99 (us, median over rounds): " + ", ".join(
        f"{b} {statistics.median(x[0] for x in v):.0f} / {statistics.median(x[1] for x in v):.0f}"
        for b, v in p.items()))
    summary["workloads"][name]["p50_p99_us"] = {b: v for b, v in p.items()}
if "call-1" in data:
    print("round trip at the median, 1 in flight: " + ", ".join(
        f"{b} {1e6 / statistics.median(data['call-1'][b]):.1f} us" for b in buses))
if json_path:
    with open(json_path, "w") as f:
        json.dump(summary, f, indent=1)
PY

if [ "$do_extra" = 1 ] && [ "$policy" = 1 ]; then
        echo
        echo "cost of the system policy per message in the bus (a call is 2 messages: call and reply;"
        echo "a signal 1, delivered to 8): CPU us (perf stat task-clock), instructions (callgrind)"
        "$py" - "$run/extra.txt" <<'PY'
import re, sys
x = dict(l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1]) if "\t" in l)
msgs = {"call-1": 2, "call-64": 2, "signal-8": 1}
def cpu(k):
    m = re.search(r"CPU ([0-9.]+) us", x.get(k, ""))
    return float(m.group(1)) if m else float("nan")
def ins(k):
    return float(x.get(k, "nan"))
print(f"  {'workload':<9} {'bus':<12} {'CPU us/msg allow-all':>21} {'system':>8} {'diff':>7}"
      f" {'instr/msg allow-all':>20} {'system':>9} {'diff':>8}")
for name, n in msgs.items():
    for b in ("kdbusd", "dbus-daemon"):
        c0, c1 = cpu(f"{b}.perf.{name}") / n, cpu(f"{b}-policy.perf.{name}") / n
        i0, i1 = ins(f"{b}.instr.{name}") / n, ins(f"{b}-policy.instr.{name}") / n
        print(f"  {name:<9} {b:<12} {c0:>21.2f} {c1:>8.2f} {c1 - c0:>+7.2f} {i0:>20.0f} {i1:>9.0f} {i1 - i0:>+8.0f}")
PY
elif [ "$do_extra" = 1 ]; then
        echo
        echo "bus allocations per operation (malloc+calloc+realloc+memalign in the bus process):"
        for b in "${buses[@]}"; do
                printf '  %-12s pipelined call (call + reply): %s   signal to 8 receivers: %s\n' \
                        "$b" "${extra[$b.allocs.call-64]:-?}" "${extra[$b.allocs.signal-8]:-?}"
        done
        echo "bus CPU time, syscalls and context switches per operation (perf stat on the bus"
        echo "process over a fixed count; a call is 2 messages in and 2 out, a signal 1 in, 8 out,"
        echo "a connection: accept, SASL, Hello and its reply, the disconnect):"
        for name in call-1 call-64 call-1MiB connect signal-8; do
                for b in "${buses[@]}"; do
                        skip "$name" "$b" && continue
                        printf '  %-9s %-12s %s\n' "$name" "$b" "${extra[$b.perf.$name]:-perf unavailable}"
                done
        done
        if [ -s "$run/kdbusd.profile" ]; then
                echo "kdbusd profile (perf record, self time by symbol):"
                cat "$run/kdbusd.profile"
        fi
fi
if [ "$native" = 1 ] && [ "$policy" = 0 ]; then
        # its own bus processes, started after the ones above are stopped
        stop_buses
        echo
        echo "native peers (bench/native.sh, $src):"
        BENCH_ROUNDS=$rounds BENCH_SECONDS=$seconds BENCH_BUS_CPU=$bus_cpu BENCH_PEER_CPU=$peer_cpu \
                "$src/bench/native.sh" "$build"
fi
if [ -n "$json" ]; then echo "bench: JSON in $json"; fi
