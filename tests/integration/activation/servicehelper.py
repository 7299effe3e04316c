#!/usr/bin/python3
# <servicehelper> (system bus activation through a setuid launch helper) against kdbusd and
# dbus-daemon, both running our kdbus-launch-helper (built as kdbus-launch-helper-test, which
# reads the configuration this test writes at the path it was built with). As root: the
# buses run as <user>kdbus-hbus</user> (created), the helper is installed as dbus-daemon's
# is (setuid root, mode 4750, the bus user's group), and the services name
# User=kdbus-hsvc (created). Checked: a service starts as its User=; the failure paths
# (no User= user, no User= key, Exec= missing, the file not named NAME.service, a bad
# name) give the caller dbus-daemon's error name and text, kdbusd adding why after ": ";
# a service that exits by itself: kdbusd says so (Spawn.ChildExited "exited with status
# 3"), where dbus-daemon reads its status as a helper code (a deliberate difference,
# docs/activation.md).
#
# usage: servicehelper.py KDBUSD DBUS_DAEMON HELPER HELPER_CONFIG       (TAP on stdout)
import grp
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import rawbus  # noqa: E402
from rawbus import BUS, BUS_PATH, Conn  # noqa: E402

BUS_USER = 'kdbus-hbus'
SVC_USER = 'kdbus-hsvc'
SERVICE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'service.py')
P = 'org.kdbus.helper.'

# name -> (file name without .service, its text after Name=); %(py)s etc. are filled in
SERVICES = {
    P + 'Ok': (P + 'Ok', 'Exec=%(py)s %(service)s %(name)s\nUser=%(svc)s\n'),
    P + 'BadUser': (P + 'BadUser', 'Exec=/bin/true\nUser=kdbus-no-such-user\n'),
    P + 'NoUser': (P + 'NoUser', 'Exec=/bin/true\n'),
    P + 'NoExec': (P + 'NoExec', 'Exec=/nonexistent/kdbus-test-program\nUser=%(svc)s\n'),
    P + 'Misnamed': ('not-its-name', 'Exec=/bin/true\nUser=%(svc)s\n'),
    P + 'Exits': (P + 'Exits', "Exec=/bin/sh -c 'exit 3'\nUser=%(svc)s\n"),
    P + 'BadExec': (P + 'BadExec', "Exec=/bin/true 'unterminated\nUser=%(svc)s\n"),
}


def ensure_user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(['useradd', '--system', '--no-create-home', '--user-group', '--shell',
                        '/usr/sbin/nologin', name], check=True, capture_output=True)
        return pwd.getpwnam(name)


def setup(tmp, helper_src, conf_path):
    bus_pw = ensure_user(BUS_USER)
    ensure_user(SVC_USER)
    os.chmod(tmp, 0o755)
    helper = os.path.join(tmp, 'kdbus-launch-helper')
    shutil.copy(helper_src, helper)
    os.chown(helper, 0, bus_pw.pw_gid)
    os.chmod(helper, 0o4750)
    services = os.path.join(tmp, 'services')
    os.mkdir(services, 0o755)
    for name, (fname, body) in SERVICES.items():
        with open(os.path.join(services, fname + '.service'), 'w') as f:
            f.write('[D-BUS Service]\nName=%s\n' % name + body % {
                'py': sys.executable, 'service': SERVICE, 'name': name, 'svc': SVC_USER})
    with open(conf_path, 'w') as f:
        f.write('''<busconfig>
  <type>system</type>
  <user>%s</user>
  <listen>unix:path=%s/bus</listen>
  <servicehelper>%s</servicehelper>
  <servicedir>%s</servicedir>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
    <allow own="*"/>
  </policy>
</busconfig>
''' % (BUS_USER, tmp, helper, services))
    os.chmod(conf_path, 0o644)


def run(exe, conf, tmp, tag):
    """{name: (error name or 'started', text or user)}"""
    log = open(os.path.join(tmp, tag + '.log'), 'w')
    proc = subprocess.Popen([exe, '--config-file=' + conf, '--nofork', '--print-address',
                             '--nopidfile'], stdout=subprocess.PIPE, stderr=log)
    out = {}
    try:
        c = Conn(proc.stdout.readline().decode().strip(), name='client')
        names = c.bus('ListActivatableNames', quiet=True).body[0]
        out['listed'] = ('listed', ' '.join(sorted(n for n in names if n.startswith(P))))
        for name in sorted(SERVICES):
            r = c.bus('StartServiceByName', 'su', [name, 0], timeout=30)
            if r.type == rawbus.ERROR:
                out[name] = (r.error_name, r.body[0] if r.body else '')
                continue
            uid = c.bus('GetConnectionUnixUser', 's', [name], quiet=True).body[0]
            out[name] = ('started', pwd.getpwuid(uid).pw_name)
            c.call(name, '/', 'org.kdbus.Test', 'Quit', timeout=5)
        c.close()
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
    return out


def run_helper_directly(tmp, as_bus_user, name):
    """The installed helper run by hand: (exit status, its stderr line)."""
    bus_pw = pwd.getpwnam(BUS_USER)

    def become():
        if as_bus_user:
            os.setgroups([])
            os.setgid(bus_pw.pw_gid)
            os.setuid(bus_pw.pw_uid)
    p = subprocess.run([os.path.join(tmp, 'kdbus-launch-helper'), name], capture_output=True,
                       preexec_fn=become, timeout=10)
    return p.returncode, p.stderr.decode(errors='replace').strip()


def main():
    ours, ref, helper, conf = sys.argv[1:5]
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root (creates users, installs the helper setuid root)')
        return 0
    tmp = tempfile.mkdtemp(prefix='kdbus-helper-')
    try:
        setup(tmp, helper, conf)
        want = run(ref, conf, tmp, 'dbus-daemon')
        got = run(ours, conf, tmp, 'kdbusd')
        by_root = run_helper_directly(tmp, False, P + 'Ok')
        bad_name = run_helper_directly(tmp, True, 'not..a.name')
        logs = {t: open(os.path.join(tmp, t + '.log')).read() for t in ('dbus-daemon', 'kdbusd')}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            os.unlink(conf)
        except OSError:
            pass
    checks = []

    def check(label, ok, detail=''):
        checks.append((label, ok, detail))

    check('kdbusd warns about the misnamed file as dbus-daemon does',
          all('should have been named "%sMisnamed.service"' % P in logs[t] for t in logs),
          '' if all('should have been named' in logs[t] for t in logs) else repr(logs))
    check('both list every name', want.get('listed') == got.get('listed') and
          got['listed'][1].count(P) == len(SERVICES), '%r %r' % (want.get('listed'),
                                                                  got.get('listed')))
    check('the service starts as its User= on both buses',
          want.get(P + 'Ok') == got.get(P + 'Ok') == ('started', SVC_USER),
          '%r %r' % (want.get(P + 'Ok'), got.get(P + 'Ok')))
    why = {P + 'BadUser': 'no user "kdbus-no-such-user"',
           P + 'NoExec': '/nonexistent/kdbus-test-program',
           P + 'Misnamed': 'no ' + P + 'Misnamed.service', P + 'BadExec': 'Exec='}
    for name, reason in sorted(why.items()):
        w, g = want.get(name, ('?', '')), got.get(name, ('?', ''))
        # the reference must fail too, else the test proves nothing
        check('%s: same error, kdbusd says why' % name[len(P):],
              w[0] != 'started' and w[0] == g[0] and g[1].startswith(w[1] + ': ') and
              reason in g[1], 'dbus-daemon %r / kdbusd %r' % (w, g))
    # checked by the bus before it runs the helper; dbus-daemon's text ends in a newline
    w, g = want.get(P + 'NoUser', ('?', '')), got.get(P + 'NoUser', ('?', ''))
    check('NoUser: same error from the bus, kdbusd names the file',
          w[0] == g[0] == 'org.freedesktop.DBus.Error.Spawn.FileInvalid' and
          g[1].startswith(w[1].strip()) and 'has no User=' in g[1], '%r / %r' % (w, g))
    w, g = want.get(P + 'Exits'), got.get(P + 'Exits')
    check('a service exiting 3 itself: kdbusd Spawn.ChildExited (dbus-daemon reads a helper '
          'code)', g and g[0] == 'org.freedesktop.DBus.Error.Spawn.ChildExited' and
          'exited with status 3' in g[1] and w and
          w[0] == 'org.freedesktop.DBus.Error.Spawn.ConfigInvalid', '%r / %r' % (w, g))
    # what only the helper itself sees: who runs it, and what it is given
    check('the helper refuses a caller that is not the bus user (exit 7, PermissionsInvalid)',
          by_root[0] == 7 and 'only the bus user %s' % BUS_USER in by_root[1], repr(by_root))
    check('the helper refuses a bad bus name (exit 5, ServiceNotValid)',
          bad_name[0] == 5 and 'not a well-known bus name' in bad_name[1], repr(bad_name))
    print('1..%d' % len(checks))
    fails = 0
    for i, (label, ok, detail) in enumerate(checks, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, label))
        if not ok or detail:
            print('# ' + detail)
        fails += not ok
    if fails:
        for t, text in logs.items():
            print('# %s log:\n#   ' % t + '\n#   '.join(text.splitlines()[-20:]))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
