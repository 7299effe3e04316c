#!/usr/bin/python3
# Service activation against kdbusd and dbus-daemon: the same configuration, the same
# .service files and the same client actions on both buses; the answers (reply values,
# error names) must be equal, and every failure's text must say why.
#
# usage: activation.py KDBUSD DBUS_DAEMON       (TAP on stdout)
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time

import dbus
import dbus.lowlevel
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE_PY = os.path.join(HERE, "service.py")
TIMEOUT_MS = 1500

SERVICES = {
    # name: Exec=
    "org.kdbus.act.Good": "/usr/bin/python3 %s org.kdbus.act.Good" % SERVICE_PY,
    "org.kdbus.act.Good2": "/usr/bin/python3 %s org.kdbus.act.Good2" % SERVICE_PY,
    "org.kdbus.act.Queue": "/usr/bin/python3 %s org.kdbus.act.Queue" % SERVICE_PY,
    "org.kdbus.act.Env": "/usr/bin/python3 %s org.kdbus.act.Env" % SERVICE_PY,
    "org.kdbus.act.Missing": "/nonexistent/kdbus-test-binary --flag",
    "org.kdbus.act.Exit1": "/bin/sh -c 'exit 1'",
    "org.kdbus.act.Signal": "/bin/sh -c 'kill -9 $$'",
    "org.kdbus.act.Slow": "/bin/sleep 30",
    "org.kdbus.act.NoName": "/bin/true",
    "org.kdbus.act.Denied": "/usr/bin/python3 %s org.kdbus.act.Denied" % SERVICE_PY,
}


def write_service(d, fname, name, exe):
    with open(os.path.join(d, fname), "w") as f:
        f.write("[D-BUS Service]\nName=%s\nExec=%s\n" % (name, exe))


class Bus:
    def __init__(self, exe, tmp, tag, bus_type="session"):
        self.exe, self.tmp, self.tag = exe, tmp, tag
        self.dir = os.path.join(tmp, tag)
        self.svc = os.path.join(self.dir, "services")
        os.makedirs(self.svc)
        for i, (name, exe_line) in enumerate(sorted(SERVICES.items())):
            write_service(self.svc, "%02d.service" % i, name, exe_line)
        # a broken file and one without Exec are skipped by both buses
        with open(os.path.join(self.svc, "broken.service"), "w") as f:
            f.write("this is not a key file\n")
        with open(os.path.join(self.svc, "noexec.service"), "w") as f:
            f.write("[D-BUS Service]\nName=org.kdbus.act.NoExec\n")
        self.sock = os.path.join(self.dir, "bus")
        conf = os.path.join(self.dir, "bus.conf")
        with open(conf, "w") as f:
            f.write("""<busconfig>
  %s
  <listen>unix:path=%s</listen>
  <servicedir>%s</servicedir>
  <limit name="service_start_timeout">%d</limit>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
    <allow receive_sender="*"/>
    <deny send_destination="org.kdbus.act.Denied"/>
  </policy>
</busconfig>
""" % ("<type>%s</type>" % bus_type if bus_type else "", self.sock, self.svc, TIMEOUT_MS))
        self.log = open(os.path.join(self.dir, "log"), "w")
        # the bus's environment names other buses: a service must get this bus's address
        env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS="unix:path=/nonexistent/session",
                   DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/system")
        self.proc = subprocess.Popen([exe, "--config-file=" + conf, "--nofork",
                                      "--print-address"], stdout=subprocess.PIPE,
                                     stderr=self.log, env=env)
        self.address = self.proc.stdout.readline().decode().strip()
        self.conn = dbus.bus.BusConnection(self.address)

    def driver(self):
        return dbus.Interface(self.conn.get_object("org.freedesktop.DBus",
                                                   "/org/freedesktop/DBus"),
                              "org.freedesktop.DBus")

    def stop(self):
        for name in ("org.kdbus.act.Good", "org.kdbus.act.Good2", "org.kdbus.act.Queue",
                     "org.kdbus.act.Env", "org.kdbus.act.Denied"):
            try:
                call(self, name, "Quit", "", (), auto_start=False)
            except dbus.DBusException:
                pass
        self.proc.terminate()
        self.exit_code = self.proc.wait(10)
        self.log.close()

    def sanitizer_report(self):
        """Why this bus's run was not clean (a sanitizer report, or a non-zero exit at
        SIGTERM), or None."""
        with open(os.path.join(self.dir, "log")) as f:
            text = f.read()
        for mark in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            if mark in text:
                return "sanitizer report in the log (%s)" % mark
        if self.exit_code != 0:
            return "exited with %d at SIGTERM" % self.exit_code
        return None


def call(bus, dest, member, sig, args, auto_start=True, timeout=10.0):
    m = dbus.lowlevel.MethodCallMessage(dest, "/", "org.kdbus.Test", member)
    if sig:
        m.append(signature=sig, *args)
    m.set_auto_start(auto_start)
    reply = bus.conn.send_message_with_reply_and_block(m, timeout)
    return reply.get_args_list()


def outcome(fn):
    """('ok', value) or ('error', name, text)."""
    try:
        return ("ok", fn())
    except dbus.DBusException as e:
        return ("error", e.get_dbus_name(), e.get_dbus_message())


def dbus_send(bus, dest, member):
    p = subprocess.run(["dbus-send", "--bus=" + bus.address, "--print-reply=literal",
                        "--dest=" + dest, "/", "org.kdbus.Test." + member, "string:hello"],
                       capture_output=True, text=True, timeout=30)
    return (p.returncode, p.stdout.strip(), p.stderr.strip())


# ---- scenarios: each returns a comparable value (and may check texts itself) ----

def sc_list(bus):
    return sorted(str(n) for n in bus.driver().ListActivatableNames())


def sc_autostart_dbus_send(bus):
    rc, out, err = dbus_send(bus, "org.kdbus.act.Good", "Echo")
    return (rc, out, err)


def sc_start_service_by_name(bus):
    d = bus.driver()
    first = int(d.StartServiceByName("org.kdbus.act.Good2", dbus.UInt32(0)))
    second = int(d.StartServiceByName("org.kdbus.act.Good2", dbus.UInt32(0)))
    unknown = outcome(lambda: d.StartServiceByName("org.kdbus.act.Nope", dbus.UInt32(0)))
    noexec = outcome(lambda: d.StartServiceByName("org.kdbus.act.NoExec", dbus.UInt32(0)))
    return (first, second, unknown[:2], noexec[:2])


def sc_queue_order(bus):
    """Messages sent before the service is up are delivered in order once it is."""
    DBusGMainLoop(set_as_default=True)
    conn = dbus.bus.BusConnection(bus.address, mainloop=DBusGMainLoop())
    loop = GLib.MainLoop()
    replies = []
    words = ["one", "two", "three", "four", "five"]

    def on_reply(*args):
        replies.append(str(args[0]) if args else None)
        if len(replies) == len(words):
            loop.quit()

    for w in words:
        conn.call_async("org.kdbus.act.Queue", "/", "org.kdbus.Test", "Echo", "s", (w,),
                        on_reply, lambda e: on_reply("error:" + e.get_dbus_name()),
                        timeout=20)
    GLib.timeout_add(20000, loop.quit)
    loop.run()
    log = [str(x) for x in call(bus, "org.kdbus.act.Queue", "Log", "", ())[0]]
    conn.close()
    return (replies, log)


def sc_owned_not_activatable(bus):
    """StartServiceByName of a name that is owned but no .service file provides:
    ServiceUnknown on dbus-daemon 1.14 (not ALREADY_RUNNING); owned and activatable: 2."""
    other = dbus.bus.BusConnection(bus.address)
    other.request_name("org.kdbus.act.OwnedOnly")
    d = bus.driver()
    owned = outcome(lambda: d.StartServiceByName("org.kdbus.act.OwnedOnly", dbus.UInt32(0)))
    unique = outcome(lambda: d.StartServiceByName(other.get_unique_name(), dbus.UInt32(0)))
    other.request_name("org.kdbus.act.Good2")   # activatable, owned by somebody else
    running = outcome(lambda: d.StartServiceByName("org.kdbus.act.Good2", dbus.UInt32(0)))
    other.close()
    return (owned, (unique[0], unique[1]), running)


def sc_policy_denied(bus):
    """The sender's send rules deny the name: AccessDenied, and nothing is started."""
    r = outcome(lambda: call(bus, "org.kdbus.act.Denied", "Echo", "s", ("x",)))
    time.sleep(0.5)
    started = outcome(lambda: bus.driver().NameHasOwner("org.kdbus.act.Denied"))
    return (r[:2], started)


def ppid_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def sc_service_reparented(bus):
    """dbus-daemon starts a service through a babysitter that lets it go once it has its
    name: the service is re-parented to init, here the test (a subreaper, see main()), and is
    never the bus's child."""
    call(bus, "org.kdbus.act.Good2", "Echo", "s", ("x",))
    pid = int(bus.driver().GetConnectionUnixProcessID("org.kdbus.act.Good2"))
    deadline = time.monotonic() + 10
    while ppid_of(pid) != os.getpid() and time.monotonic() < deadline:
        time.sleep(0.02)
    ppid = ppid_of(pid)
    return ("parent is the bus", ppid == bus.proc.pid, "parent is init (the test)",
            ppid == os.getpid())


def sc_no_auto_start(bus):
    r = outcome(lambda: call(bus, "org.kdbus.act.Exit1", "Echo", "s", ("x",),
                             auto_start=False))
    return r[:2]


def sc_environment(bus):
    d = bus.driver()
    d.UpdateActivationEnvironment({"KDBUS_TEST_VAR": "value-42"})
    got = [str(call(bus, "org.kdbus.act.Env", "Env", "s", (k,))[0])
           for k in ("KDBUS_TEST_VAR", "DBUS_STARTER_BUS_TYPE")]
    starter = str(call(bus, "org.kdbus.act.Env", "Env", "s", ("DBUS_STARTER_ADDRESS",))[0])
    session = str(call(bus, "org.kdbus.act.Env", "Env", "s", ("DBUS_SESSION_BUS_ADDRESS",))[0])
    bad_path = outcome(lambda: bus.conn.call_blocking(
        "org.freedesktop.DBus", "/", "org.freedesktop.DBus", "UpdateActivationEnvironment",
        "a{ss}", ({"A": "B"},)))
    return (got, starter == bus.address, session == bus.address, bad_path[:2])


BUS_VARS = ("DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE", "DBUS_SESSION_BUS_ADDRESS",
            "DBUS_SYSTEM_BUS_ADDRESS")


def bus_vars(bus):
    """Each DBUS_* variable of an activated service: 'this bus', 'inherited' (what the bus
    was started with) or its value."""
    out = []
    for k in BUS_VARS:
        v = str(call(bus, "org.kdbus.act.Env", "Env", "s", (k,))[0])
        out.append((k, "this bus" if v == bus.address else
                    "inherited" if v.startswith("unix:path=/nonexistent/") else v))
    return out


def sc_system_environment(bus):
    """On a <type>system</type> bus the service also gets DBUS_SYSTEM_BUS_ADDRESS (this bus),
    so that a service connecting to "the system bus" reaches it (GDBus G_BUS_TYPE_SYSTEM,
    python-dbusmock); DBUS_SESSION_BUS_ADDRESS is the bus's own, inherited. The session bus
    is the mirror image."""
    sysbus = Bus(bus.exe, bus.tmp, bus.tag + "-system", bus_type="system")
    try:
        got = bus_vars(sysbus)
        # a service that connects to the system bus by that variable takes its name there
        write_service(sysbus.svc, "sys.service", "org.kdbus.act.Sys",
                      "/bin/sh -c 'DBUS_STARTER_ADDRESS=$DBUS_SYSTEM_BUS_ADDRESS "
                      "exec /usr/bin/python3 %s org.kdbus.act.Sys'" % SERVICE_PY)
        sysbus.driver().ReloadConfig()
        echo = outcome(lambda: call(sysbus, "org.kdbus.act.Sys", "Echo", "s", ("x",)))
        try:
            call(sysbus, "org.kdbus.act.Sys", "Quit", "", (), auto_start=False)
        except dbus.DBusException:
            pass
    finally:
        sysbus.stop()
    why = sysbus.sanitizer_report()
    if why and bus.exe == sysbus.exe and "dbus-daemon" not in bus.tag:
        raise AssertionError("system bus: " + why)
    return (bus_vars(bus), got, echo[:2])


def sc_other_type_environment(bus):
    """A bus of another <type> (at-spi2's "accessibility" bus) gives DBUS_STARTER_BUS_TYPE as
    written and leaves DBUS_SESSION_BUS_ADDRESS as inherited: at-spi2-registryd, started by
    the accessibility bus, asks the session bus for the accessibility bus's address. A bus
    without <type> gives no DBUS_STARTER_BUS_TYPE."""
    out = []
    for tag, bus_type in (("-a11y", "accessibility"), ("-untyped", None)):
        other = Bus(bus.exe, bus.tmp, bus.tag + tag, bus_type=bus_type)
        try:
            out.append(bus_vars(other))
            try:
                call(other, "org.kdbus.act.Env", "Quit", "", (), auto_start=False)
            except dbus.DBusException:
                pass
        finally:
            other.stop()
        why = other.sanitizer_report()
        if why and "dbus-daemon" not in bus.tag:
            raise AssertionError("%s bus: %s" % (bus_type, why))
    return out


# failure scenarios: (service, word that the error text must contain)
FAILURES = [
    ("missing-binary", "org.kdbus.act.Missing", ["No such file"]),
    ("exit-1", "org.kdbus.act.Exit1", ["status 1"]),
    ("killed-by-signal", "org.kdbus.act.Signal", ["signal 9"]),
    ("timeout", "org.kdbus.act.Slow", ["timed out"]),
    ("exits-without-name", "org.kdbus.act.NoName", ["timed out"]),
]


def make_failure(name, words):
    def sc(bus):
        t0 = time.monotonic()
        r = outcome(lambda: call(bus, name, "Echo", "s", ("x",), timeout=20.0))
        took = time.monotonic() - t0
        ssbn = outcome(lambda: bus.driver().StartServiceByName(name, dbus.UInt32(0)))
        texts = [r[2] if r[0] == "error" else "", ssbn[2] if ssbn[0] == "error" else ""]
        missing = [w for w in words for t in texts if w not in t]
        if missing:
            raise AssertionError("error text does not say why (%r): %r" % (words, texts))
        if "timed out" in words and took < TIMEOUT_MS / 1000.0 * 0.9:
            raise AssertionError("timed out after %.2fs, before service_start_timeout" % took)
        return (r[:2], ssbn[:2])
    return sc


def sc_services_changed(bus):
    """A new .service file appears: ActivatableServicesChanged, and the name is listed."""
    conn = dbus.bus.BusConnection(bus.address, mainloop=DBusGMainLoop())
    loop = GLib.MainLoop()
    got = []
    conn.add_signal_receiver(lambda *a: (got.append(1), loop.quit()),
                             signal_name="ActivatableServicesChanged",
                             dbus_interface="org.freedesktop.DBus")
    conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                       "org.freedesktop.DBus.Peer", "Ping", "", ())
    write_service(bus.svc, "new.service", "org.kdbus.act.New", "/bin/true")
    GLib.timeout_add(5000, loop.quit)
    loop.run()
    listed = "org.kdbus.act.New" in [str(n) for n in bus.driver().ListActivatableNames()]
    conn.close()
    return (bool(got), listed)


def sc_service_file_written_slowly(bus):
    """A .service file written in two steps (as an editor or a package manager may): the
    bus reads it once it is closed, and never logs the half-written file as broken."""
    conn = dbus.bus.BusConnection(bus.address, mainloop=DBusGMainLoop())
    loop = GLib.MainLoop()
    got = []
    conn.add_signal_receiver(lambda *a: (got.append(1), loop.quit()),
                             signal_name="ActivatableServicesChanged",
                             dbus_interface="org.freedesktop.DBus")
    conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                       "org.freedesktop.DBus.Peer", "Ping", "", ())
    log_before = os.path.getsize(os.path.join(bus.dir, "log"))
    path = os.path.join(bus.svc, "slow.service")
    with open(path, "w") as f:
        f.write("[D-BUS Service]\n")
        f.flush()
        time.sleep(0.5)                 # the bus would read the file now if it looked
        f.write("Name=org.kdbus.act.Slowly\nExec=/bin/true\n")
    GLib.timeout_add(5000, loop.quit)
    loop.run()
    listed = "org.kdbus.act.Slowly" in [str(n) for n in bus.driver().ListActivatableNames()]
    conn.close()
    with open(os.path.join(bus.dir, "log")) as f:
        f.seek(log_before)
        logged = "slow.service" in f.read()
    return (bool(got), listed, "half-written file logged" if logged else "nothing logged")


SCENARIOS = [
    ("list-activatable-names", sc_list),
    ("autostart-dbus-send", sc_autostart_dbus_send),
    ("start-service-by-name", sc_start_service_by_name),
    ("service-reparented", sc_service_reparented),
    ("queued-in-order", sc_queue_order),
    ("no-auto-start", sc_no_auto_start),
    ("policy-denied", sc_policy_denied),
    ("owned-not-activatable", sc_owned_not_activatable),
    ("activation-environment", sc_environment),
    ("system-bus-environment", sc_system_environment),
    ("other-type-environment", sc_other_type_environment),
] + [("failure-" + t, make_failure(n, w)) for t, n, w in FAILURES] + [
    ("activatable-services-changed", sc_services_changed),
    ("service-file-written-slowly", sc_service_file_written_slowly),
]


def main():
    ours, ref = sys.argv[1], sys.argv[2]
    # services the buses let go come to us, as they would to init (sc_service_reparented)
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)     # PR_SET_CHILD_SUBREAPER
    tmp = tempfile.mkdtemp(prefix="kdbus-activation-")
    buses = {}
    failed = 0
    print("1..%d" % (len(SCENARIOS) + 1))
    try:
        buses["kdbusd"] = Bus(ours, tmp, "kdbusd")
        buses["dbus-daemon"] = Bus(ref, tmp, "dbus-daemon")
        for i, (tag, fn) in enumerate(SCENARIOS, 1):
            results = {}
            err = None
            for b in ("dbus-daemon", "kdbusd"):
                try:
                    results[b] = fn(buses[b])
                except Exception as e:  # noqa: BLE001 - reported as the test's failure
                    err = "%s: %s: %s" % (b, type(e).__name__, e)
                    break
            if err is None and results["kdbusd"] != results["dbus-daemon"]:
                err = "differs:\n#   dbus-daemon: %r\n#   kdbusd:      %r" % (
                    results["dbus-daemon"], results["kdbusd"])
            if err:
                failed += 1
                print("not ok %d - %s\n# %s" % (i, tag, err))
            else:
                print("ok %d - %s\n# %r" % (i, tag, results["kdbusd"]))
            sys.stdout.flush()
    finally:
        for b in buses.values():
            b.stop()
        why = buses["kdbusd"].sanitizer_report() if "kdbusd" in buses else "did not start"
        if why:
            failed += 1
            print("not ok %d - kdbusd ran clean: %s" % (len(SCENARIOS) + 1, why))
        else:
            print("ok %d - kdbusd ran clean (no sanitizer report, exit 0)" % (len(SCENARIOS) + 1))
        if failed:
            for tag in buses:
                with open(os.path.join(tmp, tag, "log")) as f:
                    print("# --- %s log ---\n# " % tag + f.read().replace("\n", "\n# "))
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
