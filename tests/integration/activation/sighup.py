#!/usr/bin/python3
# SIGHUP against kdbusd and dbus-daemon: like ReloadConfig, it reads the configuration and the
# service directories again. The .service file is put in $XDG_RUNTIME_DIR/dbus-1/services (of
# <standard_session_servicedirs/>), which neither bus watches with inotify, so only the
# rescan can make the name known: before the signal it is not listed, after it is listed,
# ActivatableServicesChanged was broadcast, and a call auto-starts the service. Then the file
# goes and, after another SIGHUP, the name is gone. The two transcripts must be equal.
#
# usage: sighup.py KDBUSD DBUS_DAEMON       (TAP on stdout)
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402
from rawbus import BUS, BUS_PATH, Conn  # noqa: E402

NAME = "org.kdbus.act.Hup"
SERVICE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "service.py")


def listed(conn):
    return NAME in conn.bus("ListActivatableNames", quiet=True).body[0]


def wait_listed(conn, want, seconds=5.0):
    """Polls until the name is (@want) or is not listed: the signal is handled
    asynchronously. Return: whether it is listed at the end."""
    deadline = time.monotonic() + seconds
    while True:
        now = listed(conn)
        if now == want or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def changed_signals(conn):
    conn.sync()
    n = sum(1 for m in conn.log if m.type == rawbus.SIGNAL and
            m.member == "ActivatableServicesChanged")
    conn.log = []
    return n


def run(exe, tmp, tag):
    base = os.path.join(tmp, tag)
    runtime = os.path.join(base, "runtime")
    os.makedirs(runtime, 0o700)
    os.chmod(runtime, 0o700)
    conf = os.path.join(base, "bus.conf")
    with open(conf, "w") as f:
        f.write("""<busconfig>
  <type>session</type>
  <listen>unix:path=%s/bus</listen>
  <standard_session_servicedirs/>
  <policy context="default">
    <allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/>
  </policy>
</busconfig>
""" % base)
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime, XDG_DATA_HOME=base + "/none",
               XDG_DATA_DIRS=base + "/none")
    log = open(os.path.join(base, "log"), "w")
    proc = subprocess.Popen([exe, "--config-file=" + conf, "--nofork", "--print-address"],
                            stdout=subprocess.PIPE, stderr=log, env=env)
    seen = []
    try:
        conn = Conn(proc.stdout.readline().decode().strip(), name="client")
        conn.bus("AddMatch", "s", ["type='signal',member='ActivatableServicesChanged'"],
                 quiet=True)
        services = os.path.join(runtime, "dbus-1", "services")
        path = os.path.join(services, NAME + ".service")
        with open(path, "w") as f:
            f.write("[D-BUS Service]\nName=%s\nExec=%s %s %s\n" % (
                NAME, sys.executable, SERVICE, NAME))
        time.sleep(1.0)     # time enough for a watch, if there were one
        seen.append("file added, no signal: %s" % ("listed" if listed(conn) else "not listed"))
        os.kill(proc.pid, signal.SIGHUP)
        seen.append("after SIGHUP: %s" % ("listed" if wait_listed(conn, True) else
                                          "not listed"))
        seen.append("ActivatableServicesChanged: %d" % changed_signals(conn))
        r = conn.call(NAME, "/", "org.kdbus.Test", "Echo", "s", ["hup"], timeout=20)
        seen.append("call auto-starts it: %s" % (
            r.body[0] if r.type == rawbus.METHOD_RETURN else r.error_name))
        conn.call(NAME, "/", "org.kdbus.Test", "Quit", timeout=5)
        os.unlink(path)
        os.kill(proc.pid, signal.SIGHUP)
        seen.append("file removed, after SIGHUP: %s" % (
            "listed" if wait_listed(conn, False) else "not listed"))
        seen.append("ActivatableServicesChanged: %d" % changed_signals(conn))
        conn.close()
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
    return seen


def main():
    ours, ref = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="kdbus-sighup-")
    try:
        want = run(ref, tmp, "dbus-daemon")
        got = run(ours, tmp, "kdbusd")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..1")
    # the reference must show what the test is about, else it proves nothing
    if want == got and "after SIGHUP: listed" in got and "call auto-starts it: hup" in got:
        print("ok 1 - SIGHUP reads the service directories again\n# %r" % got)
        return 0
    print("not ok 1 - SIGHUP differs\n#   dbus-daemon: %r\n#   kdbusd:      %r" % (want, got))
    return 1


if __name__ == "__main__":
    sys.exit(main())
