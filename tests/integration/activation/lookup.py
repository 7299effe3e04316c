#!/usr/bin/python3
# When a bus looks at its .service files, against kdbusd and dbus-daemon: dbus-daemon reads
# its service directories again whenever a name it does not know is asked for (auto-start or
# StartServiceByName), and checks a known name's file before starting it, so a file counts at
# once where no inotify watch sees it: in a directory made after the bus started, or gone
# from one. Neither sends ActivatableServicesChanged for that (only for a reload or a watched
# change). And a file written to a watched directory is found by a call made at once, before
# the watch's event is handled. The two transcripts must be equal.
#
# usage: lookup.py KDBUSD DBUS_DAEMON       (TAP on stdout)
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402
from rawbus import Conn  # noqa: E402

SERVICE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "service.py")
LATER, STARTED, GONE, WATCHED = ("org.kdbus.look.%s" % n for n in
                                 ("Later", "Started", "Gone", "Watched"))


def write_service(d, name):
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".service")
    with open(path, "w") as f:
        f.write("[D-BUS Service]\nName=%s\nExec=%s %s %s\n" % (name, sys.executable, SERVICE,
                                                                 name))
    return path


def answer(r):
    if r.type == rawbus.METHOD_RETURN:
        return "reply %r" % (r.body,)
    return r.error_name or "no answer"


def echo(conn, name, arg):
    r = conn.call(name, "/", "org.kdbus.Test", "Echo", "s", [arg], timeout=20)
    if r.type == rawbus.METHOD_RETURN:
        conn.call(name, "/", "org.kdbus.Test", "Quit", timeout=5)
    return answer(r)


def wait_gone(conn, name, seconds=10.0):
    deadline = time.monotonic() + seconds
    while conn.bus("NameHasOwner", "s", [name], quiet=True).body[0]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def run(exe, tmp, tag):
    base = os.path.join(tmp, tag)
    later = os.path.join(base, "later", "dbus-1", "services")    # made after the start
    watched = os.path.join(base, "watched")
    os.makedirs(watched)
    conf = os.path.join(base, "bus.conf")
    with open(conf, "w") as f:
        f.write("""<busconfig>
  <type>session</type>
  <listen>unix:path=%s/bus</listen>
  <servicedir>%s</servicedir>
  <servicedir>%s</servicedir>
  <policy context="default">
    <allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/>
  </policy>
</busconfig>
""" % (base, later, watched))
    log = open(os.path.join(base, "log"), "w")
    proc = subprocess.Popen([exe, "--config-file=" + conf, "--nofork", "--print-address"],
                            stdout=subprocess.PIPE, stderr=log)
    seen = []
    try:
        conn = Conn(proc.stdout.readline().decode().strip(), name="client")
        conn.bus("AddMatch", "s", ["type='signal',member='ActivatableServicesChanged'"],
                 quiet=True)
        seen.append("before: %s" % echo(conn, LATER, "early"))
        write_service(later, LATER)
        seen.append("new directory, auto-start: %s" % echo(conn, LATER, "later"))
        wait_gone(conn, LATER)
        write_service(later, STARTED)
        r = conn.bus("StartServiceByName", "su", [STARTED, 0], quiet=True)
        seen.append("new file there, StartServiceByName: %s" % answer(r))
        conn.call(STARTED, "/", "org.kdbus.Test", "Quit", timeout=5)
        names = conn.bus("ListActivatableNames", quiet=True).body[0]
        seen.append("listed: %s" % sorted(n for n in names if n.startswith("org.kdbus")))
        gone = write_service(later, GONE)
        seen.append("known file: %s" % echo(conn, GONE, "gone"))
        wait_gone(conn, GONE)
        os.unlink(gone)
        r = conn.bus("StartServiceByName", "su", [GONE, 0], quiet=True)
        seen.append("file removed, StartServiceByName: %s" % answer(r))
        seen.append("file removed, auto-start: %s" % echo(conn, GONE, "gone"))
        conn.sync()
        seen.append("ActivatableServicesChanged: %d" % sum(
            1 for m in conn.log if m.type == rawbus.SIGNAL and
            m.member == "ActivatableServicesChanged"))
        write_service(watched, WATCHED)
        seen.append("watched directory, called at once: %s" % echo(conn, WATCHED, "now"))
        conn.close()
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
    return seen


def main():
    ours, ref = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="kdbus-lookup-")
    try:
        want = run(ref, tmp, "dbus-daemon")
        got = run(ours, tmp, "kdbusd")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..1")
    # the reference must show what the test is about, else it proves nothing
    if want == got and "new directory, auto-start: reply ['later']" in got:
        print("ok 1 - .service files are looked at when a name is asked for\n# %r" % got)
        return 0
    print("not ok 1 - differs\n#   dbus-daemon: %r\n#   kdbusd:      %r" % (want, got))
    return 1


if __name__ == "__main__":
    sys.exit(main())
