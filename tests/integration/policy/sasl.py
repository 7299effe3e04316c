#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Authentication (SASL) on dbus-daemon and kdbusd: the same raw dialogues against the same
# configuration (<auth> lists, <allow_anonymous/>) must give the same transcripts: the
# mechanisms REJECTED lists, the ERROR texts (bad hex, non-ASCII, commands out of place),
# blanks between words, ANONYMOUS with and without <allow_anonymous/>, DBUS_COOKIE_SHA1 with
# the keyring in ~/.dbus-keyrings (a full exchange computed here, a wrong hash, a user that
# is not the bus's), what the driver says about an ANONYMOUS peer, GetId against the server
# guid, and a real libdbus client (dbus-send) forced to use DBUS_COOKIE_SHA1. TAP output.
#
# Usage: sasl.py KDBUSD [DBUS_DAEMON]

import binascii
import hashlib
import os
import pwd
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
sys.path.insert(0, HERE)
import rawbus  # noqa: E402
from connect import HELLO  # noqa: E402

ME = pwd.getpwuid(os.getuid())
UID = str(os.getuid()).encode().hex().encode()
OPEN = ('<policy context="default"><allow user="*"/><allow own="*"/>'
        '<allow send_destination="*"/><allow receive_sender="*"/></policy>')
KEYRING = os.path.join(ME.pw_dir, '.dbus-keyrings', 'org_freedesktop_general')

CONFIGS = [
    ('no <auth>', ''),
    ('no <auth>, <allow_anonymous/>', '<allow_anonymous/>'),
    ('EXTERNAL', '<auth>EXTERNAL</auth>'),
    ('EXTERNAL, <allow_anonymous/>', '<auth>EXTERNAL</auth><allow_anonymous/>'),
    ('ANONYMOUS EXTERNAL, <allow_anonymous/>',
     '<auth>ANONYMOUS</auth><auth>EXTERNAL</auth><allow_anonymous/>'),
    ('DBUS_COOKIE_SHA1', '<auth>DBUS_COOKIE_SHA1</auth>'),
]


def hexs(s):
    return binascii.hexlify(s.encode() if isinstance(s, str) else s)


# label -> the lines written one by one (each "\r\n"-terminated); a callable computes the
# next line from the last answer (the cookie exchange)
def cookie_answer(good):
    def answer(last):
        m = re.match(r'DATA ([0-9a-f]+)$', last)
        if not m:
            return b'CANCEL'
        context, cid, server_challenge = binascii.unhexlify(m.group(1)).decode().split(' ')
        cookie = None
        with open(os.path.join(os.path.dirname(KEYRING), context)) as f:
            for line in f:
                w = line.split()
                if len(w) == 3 and w[0] == cid:
                    cookie = w[2]
        client_challenge = binascii.hexlify(os.urandom(16)).decode()
        h = hashlib.sha1(('%s:%s:%s' % (server_challenge, client_challenge,
                                         cookie if good else 'wrong')).encode()).hexdigest()
        return b'DATA ' + hexs('%s %s' % (client_challenge, h))
    return answer


DIALOGUES = [
    ('AUTH', [b'AUTH']),
    ('AUTH unknown', [b'AUTH FOO']),
    ('AUTH lowercase command', [b'auth EXTERNAL ' + UID]),
    ('EXTERNAL bad hex', [b'AUTH EXTERNAL zz', b'AUTH EXTERNAL ' + UID]),
    ('EXTERNAL hex with a gap', [b'AUTH EXTERNAL 3x30']),
    ('EXTERNAL trailing blank', [b'AUTH EXTERNAL ' + UID + b' ']),
    ('EXTERNAL upper-case hex', [b'AUTH EXTERNAL ' + UID.upper()]),
    ('EXTERNAL double spaces', [b'AUTH  EXTERNAL  ' + UID, b'BEGIN', HELLO]),
    ('EXTERNAL tabs', [b'AUTH\tEXTERNAL\t' + UID]),
    ('EXTERNAL other user', [b'AUTH EXTERNAL ' + hexs(str(os.getuid() + 4242))]),
    ('EXTERNAL user name', [b'AUTH EXTERNAL ' + hexs(ME.pw_name)]),
    ('EXTERNAL via DATA', [b'AUTH EXTERNAL', b'DATA zz', b'DATA', b'BEGIN', HELLO]),
    ('NUL in a line', [b'AUTH\0 EXTERNAL']),
    ('non-ASCII in a line', [b'AUTH \xc3\xa9']),
    ('out of place', [b'DATA', b'CANCEL', b'FOO', b'NEGOTIATE_UNIX_FD', b'REJECTED', b'OK',
                      b'ERROR', b'ERROR some text']),
    ('after OK', [b'AUTH EXTERNAL ' + UID, b'AUTH EXTERNAL', b'DATA', b'FOO',
                  b'NEGOTIATE_UNIX_FD', b'CANCEL', b'AUTH EXTERNAL ' + UID, b'BEGIN', HELLO]),
    ('early BEGIN', [b'BEGIN']),
    ('ANONYMOUS', [b'AUTH ANONYMOUS', b'BEGIN', HELLO]),
    ('ANONYMOUS trace', [b'AUTH ANONYMOUS ' + hexs('me@example.com'), b'BEGIN', HELLO]),
    ('ANONYMOUS bad UTF-8', [b'AUTH ANONYMOUS ff']),
    ('COOKIE no user', [b'AUTH DBUS_COOKIE_SHA1']),
    ('COOKIE other user', [b'AUTH DBUS_COOKIE_SHA1 ' + hexs('nobody')]),
    ('COOKIE good', [b'AUTH DBUS_COOKIE_SHA1 ' + UID, cookie_answer(True), b'BEGIN', HELLO]),
    ('COOKIE by user name', [b'AUTH DBUS_COOKIE_SHA1 ' + hexs(ME.pw_name),
                             cookie_answer(True)]),
    ('COOKIE wrong hash', [b'AUTH DBUS_COOKIE_SHA1 ' + UID, cookie_answer(False)]),
    ('COOKIE no space', [b'AUTH DBUS_COOKIE_SHA1 ' + UID, b'DATA ' + hexs('abc')]),
    ('COOKIE cancel', [b'AUTH DBUS_COOKIE_SHA1 ' + UID, b'CANCEL']),
]


def describe(data):
    """SASL lines as text (guid elided, a cookie challenge decoded and elided), D-Bus
    messages as their type."""
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
        text = line.decode('ascii', 'replace')
        m = re.match(r'DATA ([0-9a-f]+)$', text)
        if m:
            w = binascii.unhexlify(m.group(1)).decode('ascii', 'replace').split(' ')
            ok = (len(w) == 3 and w[1].isdigit() and re.fullmatch(r'[0-9a-f]{32}', w[2]))
            text = 'DATA %s <id> <challenge>' % w[0] if ok else 'DATA ' + repr(w)
        out.append(re.sub(r'OK [0-9a-f]{32}', 'OK <guid>', text))
    return ', '.join(out)


def dialogue(sock_path, lines):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    out = []
    last = ''
    try:
        s.sendall(b'\0')
        for w in lines:
            if callable(w):
                w = w(last)
            if not w.startswith(b'l'):
                w += b'\r\n'
            try:
                s.sendall(w)
            except OSError as e:
                out.append('write: ' + type(e).__name__)
                break
            # every SASL line gets exactly one reply line (then a short wait shows nothing
            # else comes); BEGIN and a message may get nothing or messages: wait longer
            line_reply = not w.startswith(b'BEGIN') and not w.startswith(b'l')
            data, eof = b'', False
            while True:
                got_line = line_reply and b'\r\n' in data
                r, _, _ = select.select([s], [], [], 0.02 if got_line else
                                        5 if line_reply else 0.4)
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
            last = data.decode('ascii', 'replace').split('\r\n')[0]
            out.append((describe(data) or '-') + (' EOF' if eof else ''))
            if eof:
                break
    finally:
        s.close()
    return out


def anonymous_driver(address):
    """What the driver tells an ANONYMOUS peer about itself."""
    c = rawbus.Conn(address, auth=False, hello=False)
    c.sock.sendall(b'\0AUTH ANONYMOUS\r\n')
    if not c.sasl_line().startswith('OK '):
        return ['anonymous: not accepted']
    c.sock.sendall(b'BEGIN\r\n')
    me = c.call(rawbus.BUS, rawbus.BUS_PATH, rawbus.BUS, 'Hello', quiet=True).body[0]
    out = []
    for member in ('GetConnectionUnixUser', 'GetConnectionUnixProcessID',
                   'GetConnectionCredentials'):
        r = c.call(rawbus.BUS, rawbus.BUS_PATH, rawbus.BUS, member, 's', [me], quiet=True)
        if r.error_name:
            out.append('%s: %s %s' % (member, r.error_name,
                                      str(r.body[0]).replace(me, '<me>')))
        elif member == 'GetConnectionCredentials':
            out.append('%s: keys %s' % (member, sorted(k for k in r.body[0]
                                                       if k != 'ProcessFD')))
        else:
            out.append('%s: %s' % (member, 'pid' if r.body[0] == os.getpid() else r.body))
    c.close()
    return out


def bus_id(address):
    c = rawbus.Conn(address)
    i = c.call(rawbus.BUS, rawbus.BUS_PATH, rawbus.BUS, 'GetId', quiet=True).body[0]
    c.close()
    return ['GetId equals the SASL guid: %s, the address guid: %s'
            % (i == c.guid, 'guid=' + i in address)]


def dbus_send(address):
    """libdbus tries EXTERNAL, is REJECTED with DBUS_COOKIE_SHA1 and uses that."""
    p = subprocess.run(['dbus-send', '--bus=' + address, '--print-reply=literal',
                        '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                        'org.freedesktop.DBus.GetNameOwner', 'string:org.freedesktop.DBus'],
                       capture_output=True, text=True, timeout=30)
    return ['dbus-send: rc=%d %s %s' % (p.returncode, p.stdout.strip(),
                                        re.sub(r'"unix:path=[^"]*"', '<addr>',
                                               p.stderr.strip()))]


def stale_keyring():
    """A keyring with only cookies nobody may use (expired, from the future, malformed):
    the bus must add one, and keep the rest out of the new file as libdbus does."""
    import time
    os.makedirs(os.path.dirname(KEYRING), mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(KEYRING), 0o700)
    now = int(time.time())
    with open(KEYRING, 'w') as f:
        f.write('11 %d %s\n22 %d %s\nnot a cookie line\n'
                % (now - 1000, 'ab' * 24, now + 10000, 'cd' * 24))
    os.chmod(KEYRING, 0o600)


def describe_keyring():
    import time
    now = int(time.time())
    keys = []
    with open(KEYRING) as f:
        for line in f:
            w = line.split()
            keys.append('id %s, %s, cookie of %d hex digits' % (
                'old' if w[0] in ('11', '22') else 'new',
                'created now' if abs(int(w[1]) - now) < 60 else 'created %+d s' % (int(w[1]) - now),
                len(w[2])))
    st = os.stat(KEYRING)
    return ['keyring: mode %o, %s' % (st.st_mode & 0o777, keys)]


def run(binary, extra):
    d = tempfile.mkdtemp(prefix='kdbus-sasl-')
    sock = os.path.join(d, 'bus')
    conf = os.path.join(d, 'bus.conf')
    with open(conf, 'w') as f:
        f.write('<busconfig><type>session</type><listen>unix:path=%s</listen>%s%s'
                '</busconfig>\n' % (sock, extra, OPEN))
    p = subprocess.Popen([binary, '--config-file=' + conf, '--nofork', '--print-address'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    out = []
    if 'DBUS_COOKIE_SHA1' in extra:
        stale_keyring()
    try:
        r, _, _ = select.select([p.stdout], [], [], 15)
        address = p.stdout.readline().decode().strip() if r else ''
        if not address:
            return ['%s did not start' % binary]
        out += ['%s: %s' % (label, ' | '.join(dialogue(sock, w))) for label, w in DIALOGUES]
        if 'allow_anonymous' in extra:
            out += anonymous_driver(address)
        if 'EXTERNAL' in extra or not extra:
            out += bus_id(address)
        out += dbus_send(address)
        if 'DBUS_COOKIE_SHA1' in extra:
            out += describe_keyring()
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        err = p.stderr.read().decode('utf-8', 'replace')
        p.stderr.close()
        p.stdout.close()
        if os.path.basename(binary) != 'dbus-daemon':
            if p.returncode != 0:
                out.append('exit status %d at SIGTERM' % p.returncode)
            for mark in ('AddressSanitizer', 'LeakSanitizer', 'runtime error'):
                if mark in err:
                    out.append('sanitizer report: ' + err[-3000:])
        subprocess.run(['rm', '-rf', d])
    return out


def main():
    ours = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else 'dbus-daemon'
    print('TAP version 13')
    print('1..%d' % len(CONFIGS))
    failed = 0
    # the user's own keyring is put back afterwards
    saved = None
    if os.path.exists(KEYRING):
        with open(KEYRING) as f:
            saved = f.read()
    try:
        failed = compare(ours, ref)
    finally:
        if saved is not None:
            with open(KEYRING, 'w') as f:
                f.write(saved)
        elif os.path.exists(KEYRING):
            os.unlink(KEYRING)
    return 1 if failed else 0


def compare(ours, ref):
    failed = 0
    for i, (label, extra) in enumerate(CONFIGS, 1):
        want, got = run(ref, extra), run(ours, extra)
        if want == got:
            for x in want:
                print('# ' + x)
            print('ok %d - %s: same transcripts' % (i, label))
            continue
        for a, b in zip(want, got):
            print('# %s %s' % ('  ' if a == b else 'ref: ', a))
            if a != b:
                print('#  ours: ' + b)
        for x in want[len(got):]:
            print('# ref only: ' + x)
        for x in got[len(want):]:
            print('# ours only: ' + x)
        print('not ok %d - %s: transcripts differ' % (i, label))
        failed += 1
    return failed


if __name__ == '__main__':
    sys.exit(main())
