#!/usr/bin/python3
# <standard_session_servicedirs/> against kdbusd and dbus-daemon: which directory wins when
# several provide the same name. $XDG_RUNTIME_DIR, $XDG_DATA_HOME and two $XDG_DATA_DIRS
# entries each hold a .service file for one name whose program exits with the directory's
# number; the error ("exited with status N") tells which file the bus used. Then the
# winner's file is removed (the bus sees it through inotify) and the next one must win:
# the whole precedence order, compared between the buses.
# Second test: the transient service directory. Both buses create $XDG_RUNTIME_DIR/dbus-1/
# services (0700) at start; a file dropped there is found after ReloadConfig; a
# $XDG_RUNTIME_DIR that is not a directory, or a dbus-1 there that is a file, only costs
# that directory: the bus still runs.
#
# usage: standard-dirs.py KDBUSD DBUS_DAEMON       (TAP on stdout)
import os
import shutil
import subprocess
import sys
import tempfile
import time

import dbus

NAME = "org.kdbus.act.Where"


def run(exe, tmp, tag):
    base = os.path.join(tmp, tag)
    dirs = {
        "XDG_RUNTIME_DIR": os.path.join(base, "runtime"),
        "XDG_DATA_HOME": os.path.join(base, "data-home"),
        "XDG_DATA_DIRS:1": os.path.join(base, "data-dir-1"),
        "XDG_DATA_DIRS:2": os.path.join(base, "data-dir-2"),
    }
    service_dirs = {k: os.path.join(v, "dbus-1", "services") for k, v in dirs.items()}
    numbers = {}
    for i, (k, d) in enumerate(sorted(service_dirs.items()), 1):
        os.makedirs(d)
        numbers[i] = k
        with open(os.path.join(d, NAME + ".service"), "w") as f:
            f.write("[D-BUS Service]\nName=%s\nExec=/bin/sh -c 'exit %d'\n" % (NAME, i))
    # dbus-daemon(1): in the runtime directory only NAME.service counts
    with open(os.path.join(service_dirs["XDG_RUNTIME_DIR"], "other.service"), "w") as f:
        f.write("[D-BUS Service]\nName=org.kdbus.act.Misnamed\nExec=/bin/true\n")
    os.chmod(dirs["XDG_RUNTIME_DIR"], 0o700)     # a runtime dir is private to its user
    conf = os.path.join(base, "bus.conf")
    with open(conf, "w") as f:
        f.write("""<busconfig>
  <type>session</type>
  <listen>unix:path=%s/bus</listen>
  <standard_session_servicedirs/>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
  </policy>
</busconfig>
""" % base)
    env = dict(os.environ, XDG_RUNTIME_DIR=dirs["XDG_RUNTIME_DIR"],
               XDG_DATA_HOME=dirs["XDG_DATA_HOME"],
               XDG_DATA_DIRS=dirs["XDG_DATA_DIRS:1"] + ":" + dirs["XDG_DATA_DIRS:2"])
    log = open(os.path.join(base, "log"), "w")
    proc = subprocess.Popen([exe, "--config-file=" + conf, "--nofork", "--print-address"],
                            stdout=subprocess.PIPE, stderr=log, env=env)
    order = []
    try:
        conn = dbus.bus.BusConnection(proc.stdout.readline().decode().strip())
        names = conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus", "ListActivatableNames", "", ())
        order.append("misnamed listed" if "org.kdbus.act.Misnamed" in names else
                     "misnamed ignored")
        for _ in range(len(service_dirs)):
            try:
                conn.call_blocking(NAME, "/", "org.kdbus.Test", "Echo", "", (), timeout=20)
                order.append("no error")
                break
            except dbus.DBusException as e:
                text = e.get_dbus_message()
                n = int(text.rsplit(" ", 1)[-1]) if "exited with status" in text else 0
                if n not in numbers:
                    order.append(e.get_dbus_name())
                    break
                order.append(numbers[n])
                os.unlink(os.path.join(service_dirs[numbers[n]], NAME + ".service"))
                # the runtime directory is not watched: ask for a reload; the others are
                # (inotify): give the bus time to read them again
                if numbers[n] == "XDG_RUNTIME_DIR":
                    conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "ReloadConfig", "", ())
                time.sleep(1.0)
        conn.close()
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
    return order


def run_transient(exe, tmp, tag):
    base = os.path.join(tmp, tag + "-transient")
    os.makedirs(base)
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
    seen = []

    def start(runtime):
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime, XDG_DATA_HOME=base + "/none",
                   XDG_DATA_DIRS=base + "/none")
        log = open(os.path.join(base, "log"), "a")
        proc = subprocess.Popen([exe, "--config-file=" + conf, "--nofork", "--print-address"],
                                stdout=subprocess.PIPE, stderr=log, env=env)
        log.close()
        return proc, proc.stdout.readline().decode().strip()

    def stop(proc):
        proc.terminate()
        proc.wait(10)

    # a fresh runtime directory: dbus-1/services appears, private, and is read on reload
    runtime = os.path.join(base, "runtime")
    os.mkdir(runtime, 0o700)
    proc, address = start(runtime)
    try:
        conn = dbus.bus.BusConnection(address)
        for sub in ("dbus-1", "dbus-1/services"):
            p = os.path.join(runtime, sub)
            seen.append("%s %s" % (sub, oct(os.stat(p).st_mode & 0o7777)
                                   if os.path.isdir(p) else "missing"))
        services = os.path.join(runtime, "dbus-1", "services")
        if os.path.isdir(services):
            with open(os.path.join(services, NAME + ".service"), "w") as f:
                f.write("[D-BUS Service]\nName=%s\nExec=/bin/false\n" % NAME)
        conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                           "org.freedesktop.DBus", "ReloadConfig", "", ())
        names = conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus", "ListActivatableNames", "", ())
        seen.append("transient listed" if NAME in names else "transient not listed")
        conn.close()
    finally:
        stop(proc)
    # cannot be made: the bus runs anyway
    not_dir = os.path.join(base, "not-a-dir")
    open(not_dir, "w").close()
    dbus1_file = os.path.join(base, "runtime-2")
    os.mkdir(dbus1_file, 0o700)
    open(os.path.join(dbus1_file, "dbus-1"), "w").close()
    for runtime in (not_dir, dbus1_file, os.path.join(base, "missing")):
        proc, address = start(runtime)
        try:
            conn = dbus.bus.BusConnection(address)
            seen.append("runs: " + conn.get_unique_name()[:1])
            conn.close()
        except Exception as e:      # noqa: BLE001 (any failure is the difference shown)
            seen.append("fails: %s" % e)
        finally:
            stop(proc)
    seen.append("missing stays missing" if not os.path.exists(os.path.join(base, "missing"))
                else "missing created")
    return seen


def main():
    ours, ref = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="kdbus-std-dirs-")
    try:
        want = run(ref, tmp, "dbus-daemon")
        got = run(ours, tmp, "kdbusd")
        want_t = run_transient(ref, tmp, "dbus-daemon")
        got_t = run_transient(ours, tmp, "kdbusd")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..2")
    fails = 0
    if want == got and len(got) == 5:
        print("ok 1 - precedence of the standard session service directories\n# %r" % got)
    else:
        print("not ok 1 - precedence differs\n#   dbus-daemon: %r\n#   kdbusd:      %r" %
              (want, got))
        fails += 1
    # the reference must show what the test is about, else it proves nothing
    if want_t == got_t and "dbus-1/services 0o700" in got_t and "transient listed" in got_t:
        print("ok 2 - transient service directory made at start\n# %r" % got_t)
    else:
        print("not ok 2 - transient service directory differs\n#   dbus-daemon: %r\n"
              "#   kdbusd:      %r" % (want_t, got_t))
        fails += 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
