#!/usr/bin/env bash
# Installs the dependencies, builds with -Werror and ASan+UBSan (gcc), runs every test
# (unit, fuzz seed replays, integration against kdbusd and dbus-daemon), then checks that
# clang builds the tree warning-free. Ends with one line "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -n "${KDBUS_DEPS_INSTALLED:-}" ]; then
        :       # .ci/run installed them
elif [ "$(id -u)" -eq 0 ]; then
        tools/dev/deps.sh
else
        echo "not root: assuming the packages of tools/dev/deps.sh are installed" >&2
fi

builddir=build-test
rm -rf "$builddir" build-test-clang
CC=gcc meson setup "$builddir" -Dwerror=true -Db_sanitize=address,undefined \
        -Dbuildtype=debugoptimized
ninja -C "$builddir"

# Sanitizers: any report fails the process; leaks are checked at exit.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
meson test -C "$builddir" --print-errorlogs --num-processes 2 || status=$?

# A second compiler catches what the first lets through; build only, the tests ran above.
extra_failed=0
if ! { CC=clang meson setup build-test-clang -Dwerror=true -Dtests=true &&
       ninja -C build-test-clang >/dev/null; }; then
        echo "clang build failed" >&2
        status=1
        extra_failed=1
fi

/usr/bin/python3 - "$builddir/meson-logs/testlog.json" "$extra_failed" <<'PY'
import json, sys
passed = skipped = 0
failed = int(sys.argv[2])
with open(sys.argv[1]) as f:
    for line in f:
        if not line.strip():
            continue
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
exit $status
