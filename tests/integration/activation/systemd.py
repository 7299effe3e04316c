#!/usr/bin/python3
# --systemd-activation against kdbusd and dbus-daemon: a test client plays systemd
# (fake-systemd.py). Services with SystemdService= are started by asking it
# (ActivationRequest from the bus); its ActivationFailure reaches the caller as the error it
# names; requests made before systemd is on the bus wait for it; services without
# SystemdService= are still spawned directly. A monitor (python BecomeMonitor) watches it
# all: it must see each ActivationRequest once, before the message that caused it (also
# when the request waits for systemd), the waiting messages not again when delivered, and
# not systemd's ActivationFailure (what dbus-daemon shows), in the same order on both buses.
# UpdateActivationEnvironment reaches systemd as SetEnvironment (fake-systemd.py prints it),
# also when called before systemd is on the bus.
#
# usage: systemd.py KDBUSD DBUS_DAEMON       (TAP on stdout)
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
FAKE = os.path.join(HERE, "fake-systemd.py")
DBusGMainLoop(set_as_default=True)


def write_service(d, fname, text):
    with open(os.path.join(d, fname), "w") as f:
        f.write("[D-BUS Service]\n" + text)


class Bus:
    def __init__(self, exe, tmp, tag):
        self.dir = os.path.join(tmp, tag)
        svc = os.path.join(self.dir, "services")
        os.makedirs(svc)
        # Exec= would fail: only systemd can start these
        write_service(svc, "a.service", "Name=org.kdbus.sd.Early\nExec=/bin/false\n"
                      "SystemdService=early.service\n")
        write_service(svc, "b.service", "Name=org.kdbus.sd.Good\nExec=/bin/false\n"
                      "SystemdService=good.service\n")
        write_service(svc, "c.service", "Name=org.kdbus.sd.Bad\nExec=/bin/false\n"
                      "SystemdService=bad.service\n")
        write_service(svc, "d.service", "Name=org.kdbus.sd.Direct\nExec=/usr/bin/python3 %s "
                      "org.kdbus.sd.Direct\n" % SERVICE_PY)
        conf = os.path.join(self.dir, "bus.conf")
        with open(conf, "w") as f:
            f.write("""<busconfig>
  <type>session</type>
  <listen>unix:path=%s/bus</listen>
  <servicedir>%s</servicedir>
  <limit name="service_start_timeout">10000</limit>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
  </policy>
</busconfig>
""" % (self.dir, svc))
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen([exe, "--config-file=" + conf, "--nofork",
                                      "--print-address", "--systemd-activation"],
                                     stdout=subprocess.PIPE, stderr=self.log)
        self.address = self.proc.stdout.readline().decode().strip()
        self.conn = dbus.bus.BusConnection(self.address)
        self.fake = None
        self.monitored = []
        self.mon = dbus.bus.BusConnection(self.address)
        self.mon.add_message_filter(self.on_monitored)
        self.mon.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus.Monitoring", "BecomeMonitor", "asu",
                               ([], 0))

    def on_monitored(self, conn, msg):
        t = {dbus.lowlevel.MESSAGE_TYPE_SIGNAL: "sig", dbus.lowlevel.MESSAGE_TYPE_ERROR: "err",
             dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL: "call",
             dbus.lowlevel.MESSAGE_TYPE_METHOD_RETURN: "ret"}.get(msg.get_type(), "?")
        member = msg.get_member() or msg.get_error_name() or ""
        if (member in ("ActivationRequest", "ActivationFailure", "Echo") or
                member.startswith("org.freedesktop.systemd1.")):
            args = [str(a) for a in msg.get_args_list()] if t != "err" else []
            dest = msg.get_destination() or ""
            self.monitored.append("%s %s -> %s %s" % (t, member, ":X" if dest[:1] == ":"
                                                      else dest, args))
        return dbus.lowlevel.HANDLER_RESULT_HANDLED

    def start_fake(self):
        self.fake = subprocess.Popen(["/usr/bin/python3", FAKE, self.address,
                                      "early.service=org.kdbus.sd.Early",
                                      "good.service=org.kdbus.sd.Good"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.fake.stdout.readline().strip() == "ready"

    def requests(self):
        """The requests the fake systemd got so far (it prints one line each)."""
        got = []
        os.set_blocking(self.fake.stdout.fileno(), False)
        while True:
            line = self.fake.stdout.readline()
            if not line:
                break
            got.append(line.strip().replace(self.conn.get_unique_name(), "X"))
        os.set_blocking(self.fake.stdout.fileno(), True)
        return got

    def stop(self):
        for n in ("org.kdbus.sd.Early", "org.kdbus.sd.Good", "org.kdbus.sd.Direct"):
            try:
                call_async_reply(self, n, "Quit", "", (), auto_start=False)
            except dbus.DBusException:
                pass
        if self.fake:
            self.fake.stdin.close()
            self.fake.wait(10)
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


def call_async_reply(bus, dest, member, sig, args, auto_start=True):
    m = dbus.lowlevel.MethodCallMessage(dest, "/", "org.kdbus.Test", member)
    if sig:
        m.append(signature=sig, *args)
    m.set_auto_start(auto_start)
    return bus.conn.send_message_with_reply_and_block(m, 20.0).get_args_list()


def outcome(fn):
    try:
        return ("ok", [str(x) for x in fn()])
    except dbus.DBusException as e:
        return ("error", e.get_dbus_name(), e.get_dbus_message())


def scenario(bus):
    out = {}
    # before systemd is on the bus the request waits; a pending call is answered later;
    # UpdateActivationEnvironment's SetEnvironment for systemd waits too (to its
    # well-known name; once it is there, to its unique name)
    bus.conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                           "org.freedesktop.DBus", "UpdateActivationEnvironment", "a{ss}",
                           ({"KDBUS_EARLY": "1"},))
    pending = bus.conn.call_async("org.kdbus.sd.Early", "/", "org.kdbus.Test", "Echo", "s",
                                  ("early",), lambda *a: None, lambda e: None)
    bus.conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                           "org.freedesktop.DBus.Peer", "Ping", "", ())
    bus.start_fake()
    out["early"] = outcome(lambda: call_async_reply(bus, "org.kdbus.sd.Early", "Echo", "s",
                                                   ("again",)))
    del pending
    out["good"] = outcome(lambda: call_async_reply(bus, "org.kdbus.sd.Good", "Echo", "s",
                                                  ("hi",)))
    out["bad"] = outcome(lambda: call_async_reply(bus, "org.kdbus.sd.Bad", "Echo", "s",
                                                 ("hi",)))
    out["direct"] = outcome(lambda: call_async_reply(bus, "org.kdbus.sd.Direct", "Echo", "s",
                                                    ("hi",)))
    # UpdateActivationEnvironment: the bus passes the variables on to systemd
    bus.conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                           "org.freedesktop.DBus", "UpdateActivationEnvironment", "a{ss}",
                           ({"KDBUS_A": "1", "KDBUS_B": "x y"},))
    bus.conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                           "org.freedesktop.DBus.Peer", "Ping", "", ())
    time.sleep(0.5)
    out["requests"] = sorted(bus.requests())
    ctx = GLib.MainContext.default()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:      # what is still on the way to the monitor
        ctx.iteration(False) or time.sleep(0.01)
    out["monitor"] = bus.monitored
    return out


def main():
    ours, ref = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="kdbus-sd-activation-")
    results, buses, failed = {}, [], 0
    keys = ["early", "good", "bad", "direct", "requests", "monitor"]
    print("1..%d" % (len(keys) + 2))
    try:
        for tag, exe in (("dbus-daemon", ref), ("kdbusd", ours)):
            b = Bus(exe, tmp, tag)
            buses.append(b)
            results[tag] = scenario(b)
        for i, k in enumerate(keys, 1):
            a, b = results["dbus-daemon"][k], results["kdbusd"][k]
            if a != b:
                failed += 1
                print("not ok %d - %s\n#   dbus-daemon: %r\n#   kdbusd:      %r" % (i, k, a, b))
            else:
                print("ok %d - %s\n# %r" % (i, k, b))
        bad = results["kdbusd"]["bad"]
        if bad[0] != "error" or "bad.service" not in bad[2]:
            failed += 1
            print("not ok %d - systemd's failure text reaches the caller: %r" % (len(keys) + 1,
                                                                                  bad))
        else:
            print("ok %d - systemd's failure text reaches the caller" % (len(keys) + 1))
    finally:
        for b in buses:
            b.stop()
        why = buses[1].sanitizer_report() if len(buses) > 1 else "did not start"
        if why:
            failed += 1
            print("not ok %d - kdbusd ran clean: %s" % (len(keys) + 2, why))
        else:
            print("ok %d - kdbusd ran clean (no sanitizer report, exit 0)" % (len(keys) + 2))
        if failed:
            for b in buses:
                with open(os.path.join(b.dir, "log")) as f:
                    print("# --- log ---\n# " + f.read().replace("\n", "\n# "))
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
