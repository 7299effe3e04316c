#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# kdbusd's own instructions per small call (8-byte `ay`, one call in flight), per path
# (issue #16: the native small call against the classic path's):
#
#   batched    kdbus-native-bench --workload call (libkdbus, KDBUS_HELLO_WIRE_BATCH, the
#              service's reply and its held RECV in one datagram)
#   plain      the same with --plain (kdbus's commands, one round trip each)
#   kabi       kdbus-kabi-bench --workload call under libkdbus-preload.so: SEND with
#              EXPECT_REPLY, poll, RECV, FREE
#   kabi-sync  the same with --sync (SEND with SYNC_REPLY, FREE)
#   classic    legacy-payload-bench --size 8 (libdbus) on kdbusd's dbus1 socket
#
# kdbusd (a release build; -Dc_args=-g names its lines) runs under valgrind
# --tool=callgrind. Per path: the counters are dumped (and so zeroed), the program makes N
# calls (twice N for the native programs, which run a warm-up round of N first), dumped,
# then 2N calls, dumped; instructions per call = (total(2N) - total(N)) / (calls(2N) -
# calls(N)), so kdbusd's start, the peers' connection setup and teardown cancel out. No
# timing is involved: the count is the same on a busy machine. The dumps stay in DIR
# (--keep DIR) for callgrind_annotate.
#
# Usage: bench/native-callgrind.sh BUILDDIR [--calls N (500)] [--keep DIR] [PATH...]
#        (default paths: batched kabi kabi-sync classic)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup bench/native-callgrind.sh "${1:?usage: bench/native-callgrind.sh BUILDDIR}" \
        proxy/kdbusd bench/kdbus-native-bench bench/kdbus-kabi-bench \
        bench/legacy-payload-bench preload/libkdbus-preload.so
shift
calls=500
keep=
paths=()
while [ $# -gt 0 ]; do
        case "$1" in
        --calls) calls=$2; shift 2 ;;
        --keep) keep=$2; shift 2 ;;
        *) paths+=("$1"); shift ;;
        esac
done
[ ${#paths[@]} -gt 0 ] || paths=(batched kabi kabi-sync classic)

kdbusd_wrap=(valgrind --tool=callgrind --callgrind-out-file="$run/cg.out"
             --dump-instr=no --collect-atstart=yes)
bench_start_kdbusd --kdbusfs="$run/kdbusfs"
bench_wait_sock "$run/kdbusfs/control"
dumps=0

# dump kdbusd's counters (which zeroes them): total, the dump's instructions (not in a
# subshell: dumps counts the files)
dump() {
        local f
        callgrind_control -d "$kdbusd_pid" >/dev/null 2>&1
        dumps=$((dumps + 1))
        f="$run/cg.out.$dumps"
        for _ in $(seq 100); do [ -s "$f" ] && grep -q '^totals:' "$f" && break; sleep 0.1; done
        total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$f")
}

# one run of path $1 with $2 calls a round: echo the calls made
one() {
        local p=$1 n=$2
        case "$p" in
        batched|plain)
                local -a args=(--workload call)
                [ "$p" = plain ] && args+=(--plain)
                "$build/bench/kdbus-native-bench" --native "$run/kdbusd.native" "${args[@]}" \
                        --calls "$n" --repeat 1 >/dev/null
                echo $((2 * n)) ;;
        kabi|kabi-sync)
                local -a args=(--workload call)
                [ "$p" = kabi-sync ] && args+=(--sync)
                env LD_PRELOAD="$build/preload/libkdbus-preload.so" \
                        "$build/bench/kdbus-kabi-bench" --root "$run/kdbusfs" "${args[@]}" \
                        --calls "$n" --repeat 1 >/dev/null
                echo $((2 * n)) ;;
        classic)
                "$build/bench/legacy-payload-bench" --address "unix:path=$run/kdbusd.sock" \
                        --size 8 --calls "$n" --repeat 1 >/dev/null
                echo "$n" ;;
        *) echo "bench/native-callgrind.sh: unknown path $p" >&2; exit 2 ;;
        esac
}

echo "native-callgrind $(date -u +%FT%TZ): kdbusd $("$build/proxy/kdbusd" --version 2>/dev/null |
        head -1 || true), $calls and $((2 * calls)) calls a round"
for p in "${paths[@]}"; do
        dump
        c1=$(one "$p" "$calls")
        dump
        i1=$total
        c2=$(one "$p" $((2 * calls)))
        dump
        i2=$total
        printf '%-10s %8d instructions per call  (%d - %d over %d - %d calls)\n' "$p" \
                $(((i2 - i1) / (c2 - c1))) "$i2" "$i1" "$c2" "$c1"
        if [ -n "$keep" ]; then
                mkdir -p "$keep"
                cp "$run/cg.out.$((dumps - 1))" "$keep/$p.1"
                cp "$run/cg.out.$dumps" "$keep/$p.2"
        fi
done
