#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The policy's connect rules (<allow|deny user=|group=> in the default and mandatory
# contexts) on dbus-daemon and kdbusd: the same raw SASL dialogues against the same
# configuration must give the same transcripts. dbus-daemon 1.14.10 does not REJECT a refused
# user at AUTH: it answers OK (and AGREE_UNIX_FD), then closes the socket once BEGIN arrives,
# without an error message. TAP output.
#
# Usage: connect.py KDBUSD [DBUS_DAEMON]

import grp
import os
import pwd
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402

ME = pwd.getpwuid(os.getuid()).pw_name
MYGROUP = grp.getgrgid(os.getgid()).gr_name
OPEN = '<allow own="*"/><allow send_destination="*"/><allow eavesdrop="true"/>'

# label -> <policy> elements
CONFIGS = [
    ('deny user=me', '<policy context="default"><deny user="%s"/>%s</policy>' % (ME, OPEN)),
    ('deny user=* allow group=mine',
     '<policy context="default"><deny user="*"/><allow group="%s"/>%s</policy>'
     % (MYGROUP, OPEN)),
    ('allow user=* deny group=mine',
     '<policy context="default"><allow user="*"/><deny group="%s"/>%s</policy>'
     % (MYGROUP, OPEN)),
    ('mandatory deny user=me',
     '<policy context="default"><allow user="*"/>%s</policy>'
     '<policy context="mandatory"><deny user="%s"/></policy>' % (OPEN, ME)),
    ('allow user=me', '<policy context="default"><allow user="%s"/>%s</policy>' % (ME, OPEN)),
]

UID = str(os.getuid()).encode().hex().encode()
HELLO = rawbus.Message(rawbus.METHOD_CALL, path=rawbus.BUS_PATH, interface=rawbus.BUS,
                       member='Hello', destination=rawbus.BUS).to_bytes(1)
AUTH = b'\0AUTH EXTERNAL ' + UID + b'\r\n'

# label -> the writes; after each one, what the bus answers within 0.5 s is recorded
DIALOGUES = [
    ('auth, begin, hello', [AUTH, b'BEGIN\r\n', HELLO]),
    ('auth, fds, begin, hello', [AUTH, b'NEGOTIATE_UNIX_FD\r\n', b'BEGIN\r\n', HELLO]),
    ('all in one write', [AUTH + b'NEGOTIATE_UNIX_FD\r\nBEGIN\r\n' + HELLO]),
    ('auth without identity', [b'\0AUTH EXTERNAL\r\n', b'DATA\r\n', b'BEGIN\r\n', HELLO]),
]


def describe(data):
    """SASL lines as text, D-Bus messages as their type; the guid and names elided."""
    out = []
    while data:
        if data[:1] in (b'l', b'B') and len(data) >= 16:
            p = rawbus.parse_message(bytes(data))
            if not p:
                out.append('partial message')
                break
            m, n = p
            out.append({rawbus.METHOD_RETURN: 'return', rawbus.ERROR: 'error ' + str(m.error_name),
                        rawbus.SIGNAL: 'signal ' + str(m.member)}.get(m.type, 'message'))
            data = data[n:]
            continue
        line, _, data = data.partition(b'\r\n')
        out.append(re.sub(r'OK [0-9a-f]{32}', 'OK <guid>', line.decode('ascii', 'replace')))
    return ', '.join(out)


def dialogue(sock_path, writes):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    out = []
    try:
        for w in writes:
            try:
                s.sendall(w)
            except OSError as e:
                out.append('write: ' + type(e).__name__)
                break
            data, eof = b'', False
            while True:
                r, _, _ = select.select([s], [], [], 0.5)
                if not r:
                    break
                try:
                    d = s.recv(65536)
                except ConnectionResetError:
                    d = b''
                if not d:
                    eof = True
                    break
                data += d
            out.append((describe(data) or '-') + (' EOF' if eof else ''))
            if eof:
                break
    finally:
        s.close()
    return out


def run(binary, policy):
    d = tempfile.mkdtemp(prefix='kdbus-connect-')
    sock = os.path.join(d, 'bus')
    conf = os.path.join(d, 'bus.conf')
    with open(conf, 'w') as f:
        f.write('<busconfig><listen>unix:path=%s</listen>%s</busconfig>\n' % (sock, policy))
    p = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--print-address'],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        r, _, _ = select.select([p.stdout], [], [], 15)
        if not r or not p.stdout.readline().strip():
            return ['%s did not start' % binary]
        return ['%s: %s' % (label, ' | '.join(dialogue(sock, w))) for label, w in DIALOGUES]
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        subprocess.run(['rm', '-rf', d])


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else 'dbus-daemon'
    print('TAP version 13')
    print('1..%d' % len(CONFIGS))
    failed = 0
    for i, (label, policy) in enumerate(CONFIGS, 1):
        want, got = run(ref, policy), run(ours, policy)
        for x in want:
            print('# ref: ' + x)
        if want == got:
            print('ok %d - %s: same transcripts' % (i, label))
            continue
        for x in got:
            print('# ours: ' + x)
        print('not ok %d - %s: transcripts differ' % (i, label))
        failed += 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
