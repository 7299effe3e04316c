#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Run dbus-broker without systemd, for the benchmark.

dbus-broker is only the message broker: a controller process owns it through a socketpair
(--controller FD), speaks D-Bus peer-to-peer on it and hands it listening sockets with
org.bus1.DBus.Broker.AddListener(o path, h socket, v policy). This controller does exactly
that and nothing else: one listener on a unix:path= socket, with a policy equal to
session.conf's (connect, own any name, send and receive anything), prints the address on
stdout and keeps the controller connection open until SIGTERM/SIGINT, then stops the broker.

The policy variant's signature is dbus-broker's policy type, found in its documentation and
sources (the man page says it is not stable yet; it changed between releases):
  (a(u(bt a(btbs) a(btssssuutt) a(btssssuutt)))    per-uid batches, uid -1 = default
   a(buu(bt a(btbs) a(btssssuutt) a(btssssuutt)))  per-gid / uid-range batches
   a(ss) b s)                                      SELinux names, AppArmor on?, bus type
A batch is: connect verdict (allow, priority), own rules (allow, prio, is-prefix, name),
send rules and receive rules (allow, prio, name, path, interface, member, type,
broadcast tristate, min fds, max fds); empty strings and 0 mean "any".

Usage: broker-controller.py --listen PATH [--broker /usr/bin/dbus-broker]
Environment: BENCH_BROKER_PRELOAD, if set, becomes LD_PRELOAD of the broker only (with
BENCH_MALLOC_COUNT_FILE passed through), so the allocation counter sees the broker and not
this Python process. BENCH_BROKER_ARGS: more arguments for the broker (its per-user quotas:
--max-bytes, --max-fds, --max-matches, --max-objects; bench/scale.py raises them).
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import uuid

from gi.repository import Gio, GLib

BATCH = "(bta(btbs)a(btssssuutt)a(btssssuutt))"
POLICY_SIGNATURE = "(a(u" + BATCH + ")a(buu" + BATCH + ")a(ss)bs)"
UINT64_MAX = (1 << 64) - 1


def session_policy():
    allow_all = (True, 1, "", "", "", "", 0, 0, 0, UINT64_MAX)
    batch = (True, 1, [(True, 1, True, "")], [allow_all], [allow_all])
    return GLib.Variant(POLICY_SIGNATURE, ([(0xFFFFFFFF, batch)], [], [], False, "session"))


def machine_id():
    try:
        with open("/etc/machine-id") as f:
            mid = f.read().strip()
        if len(mid) == 32:
            return mid
    except OSError:
        pass
    return uuid.uuid4().hex


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True, help="path of the unix socket to serve")
    ap.add_argument("--broker", default="/usr/bin/dbus-broker")
    args = ap.parse_args()

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if os.environ.get("BENCH_BROKER_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["BENCH_BROKER_PRELOAD"]
    broker = subprocess.Popen(
        [args.broker, "--controller", str(theirs.fileno()), "--machine-id", machine_id()]
        + os.environ.get("BENCH_BROKER_ARGS", "").split(),
        pass_fds=[theirs.fileno()], env=env)
    theirs.close()

    try:
        stream = Gio.Socket.new_from_fd(ours.detach()).connection_factory_create_connection()
        conn = Gio.DBusConnection.new_sync(
            stream, None, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT, None, None)

        try:
            os.unlink(args.listen)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(args.listen)
        listener.listen(4096)
        # dbus-broker accepts until EAGAIN: a blocking listener would hang it in accept4()
        listener.setblocking(False)
        fds = Gio.UnixFDList.new()
        index = fds.append(listener.fileno())
        conn.call_with_unix_fd_list_sync(
            None, "/org/bus1/DBus/Broker", "org.bus1.DBus.Broker", "AddListener",
            GLib.Variant("(ohv)", ("/org/bus1/DBus/Listener/0", index, session_policy())),
            None, Gio.DBusCallFlags.NONE, 10000, fds, None)
        listener.close()
    except GLib.Error as e:
        print(f"broker-controller: AddListener on {args.listen} failed: {e.message} "
              f"(dbus-broker's policy type may have changed: see this file's docstring)",
              file=sys.stderr)
        broker.kill()
        broker.wait()
        return 1

    print(f"unix:path={args.listen}", flush=True)
    loop = GLib.MainLoop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    conn.connect("closed", lambda *a: loop.quit())
    loop.run()
    broker.terminate()
    try:
        broker.wait(5)
    except subprocess.TimeoutExpired:
        broker.kill()
        broker.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
