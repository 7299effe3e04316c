# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers of the system-integration tests: TAP output, a bus configuration in a temp dir,
waiting for a socket to serve, and a notification socket that plays systemd's NOTIFY_SOCKET."""

import ctypes
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402,F401


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        print('TAP version 13', flush=True)

    def ok(self, cond, what, detail=''):
        self.n += 1
        if not cond:
            self.failed += 1
        print('%sok %d - %s%s' % ('' if cond else 'not ', self.n, what,
                                  (' # ' + detail) if detail and not cond else ''), flush=True)
        return cond

    def skip(self, what, why):
        self.n += 1
        print('ok %d - %s # SKIP %s' % (self.n, what, why), flush=True)

    def diag(self, text):
        for line in str(text).splitlines():
            print('# ' + line, flush=True)

    def done(self):
        print('1..%d' % self.n, flush=True)
        return 1 if self.failed else 0


def write_conf(d, listen=None, extra='', name='bus.conf'):
    """A session-type configuration that lets everyone talk; @listen: a <listen> address."""
    path = os.path.join(d, name)
    with open(path, 'w') as f:
        f.write('<busconfig>\n  <type>session</type>\n%s  <auth>EXTERNAL</auth>\n'
                '  <policy context="default"><allow send_destination="*"/><allow own="*"/>'
                '<allow receive_sender="*"/></policy>\n%s</busconfig>\n'
                % ('  <listen>%s</listen>\n' % listen if listen else '', extra))
    return path


def get_id(path, timeout=10):
    """The bus id from GetId over unix:path=@path, or raise."""
    c = rawbus.Conn('unix:path=' + path)
    try:
        r = c.bus('GetId', timeout=timeout)
        if r.type != rawbus.METHOD_RETURN:
            raise RuntimeError('GetId: %s' % r.error_name)
        return r.body[0]
    finally:
        c.close()


def serves(path):
    try:
        get_id(path, timeout=5)
        return True
    except (OSError, RuntimeError, TimeoutError, rawbus.Disconnected):
        return False


def wait_for(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def wait_gone(pid, timeout=10.0):
    return wait_for(lambda: not os.path.exists('/proc/%d' % pid) or
                    open('/proc/%d/stat' % pid).read().split(') ')[1][0] == 'Z', timeout)


class NotifySocket:
    """systemd's side of sd_notify: a datagram socket with SO_PASSCRED, so every message
    comes with the sender's pid (what systemd's NotifyAccess=main checks)."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        if os.path.exists(path):
            os.unlink(path)
        self.sock.bind(path)

    def recv(self, timeout=10.0):
        """(pid, text) of the next message, or None after @timeout seconds."""
        self.sock.settimeout(timeout)
        try:
            data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            return None
        pid = None
        for level, typ, val in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                pid = struct.unpack('iII', val[:12])[0]
        return pid, data.decode('utf-8', 'replace')

    def close(self):
        self.sock.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


# ---- processes: what a test started, found through /proc, and a subreaper that plays init ----

def proc_stat(pid):
    """(ppid, uid) of @pid, or None when it is gone or a zombie."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            rest = f.read().rsplit(')', 1)[1].split()
        if rest[0] == 'Z':
            return None
        with open('/proc/%d/status' % pid) as f:
            uid = int(next(x for x in f if x.startswith('Uid:')).split()[1])
        return int(rest[1]), uid
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def gone(pid, timeout=10.0):
    """@pid has exited (or is a zombie) within @timeout seconds (race-free, unlike a check
    for /proc/PID followed by a read of it)."""
    return wait_for(lambda: proc_stat(pid) is None, timeout)


def cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return [x.decode() for x in f.read().split(b'\0')[:-1]]
    except OSError:
        return []


def children(pid):
    out = []
    for e in os.listdir('/proc'):
        if e.isdigit():
            st = proc_stat(int(e))
            if st and st[0] == pid:
                out.append(int(e))
    return sorted(out)


def descendants(pid):
    out = []
    for c in children(pid):
        out.append(c)
        out.extend(descendants(c))
    return out


def kill_descendants():
    """End everything the scenario left (all of it re-parented to us, the subreaper)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = descendants(os.getpid())
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        for p in pids:
            gone(p, 5)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                break
        except ChildProcessError:
            break


PR_SET_CHILD_SUBREAPER = 36


def run_as_init(fn):
    """fn() (which returns something JSON can carry) in a child of this process, which
    becomes a subreaper: every daemon the scenario starts (a bus that forks, a service its
    babysitter or launch helper lets go) is re-parented here instead of to the machine's
    init, is reaped as init would reap it, and is killed once fn() has returned."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with tempfile.TemporaryFile() as out:     # not a pipe: the parent reads it at the end
        child = os.fork()
        if child == 0:
            try:
                data = json.dumps(fn())
            except Exception as e:  # noqa: BLE001 -- reported to the caller
                data = json.dumps(['stopped by %s: %s' % (type(e).__name__, e)])
            out.write(data.encode())
            out.flush()
            os._exit(0)
        while True:
            try:
                if os.waitpid(-1, 0)[0] == child:
                    break
            except ChildProcessError:
                break
        kill_descendants()
        out.seek(0)
        return json.loads(out.read().decode() or '[]')
