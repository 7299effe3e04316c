#!/usr/bin/python3
# <standard_session_servicedirs/> against kdbusd and dbus-daemon: which directory wins when
# several provide the same name. $XDG_RUNTIME_DIR, $XDG_DATA_HOME and two $XDG_DATA_DIRS
# entries each hold a .service file for one name whose program exits with the directory's
# number; the error ("exited with status N") tells which file the bus used. Then the
# winner's file is removed (the bus sees it through inotify) and the next one must win:
# the whole precedence order, compared between the buses.
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


def main():
    ours, ref = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="kdbus-std-dirs-")
    try:
        want = run(ref, tmp, "dbus-daemon")
        got = run(ours, tmp, "kdbusd")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..1")
    if want == got and len(got) == 5:
        print("ok 1 - precedence of the standard session service directories\n# %r" % got)
        return 0
    print("not ok 1 - precedence differs\n#   dbus-daemon: %r\n#   kdbusd:      %r" %
          (want, got))
    return 1


if __name__ == "__main__":
    sys.exit(main())
