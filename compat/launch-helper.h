/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The contract between a system bus and its setuid launch helper (<servicehelper>): the bus
 * runs HELPER NAME with DBUS_STARTER_ADDRESS and DBUS_STARTER_BUS_TYPE set; the helper finds
 * NAME.service in the system service directories itself, checks it, becomes its User= and
 * execs its Exec=. When it fails it exits with one of the codes below. They are dbus-daemon
 * 1.14's (its launch helper's exit codes), so kdbusd can run dbus-daemon-launch-helper and
 * dbus-daemon can run kdbus-launch-helper; the error the caller gets for each code is
 * dbus-daemon's, name and text (dbus-daemon(1) and its activation code, read, not copied).
 *
 * Our addition, ignored by a helper that does not know it: when the bus puts
 * LAUNCH_HELPER_REASON_FD_ENV=N in the helper's environment, fd N is a pipe on which the
 * helper writes LAUNCH_HELPER_EXEC_MARK just before it execs the service and, when it fails,
 * one line saying why ("no user \"x\" (User= of /usr/share/.../a.b.service)"). The bus
 * appends that line to dbus-daemon's text, and a status after the mark is the service's
 * own, not a helper code. The fd is close-on-exec in the helper: the service never has it.
 * Pure functions: no I/O.
 */
#include <stddef.h>

enum {
        LAUNCH_HELPER_EXIT_GENERIC_FAILURE = 1,
        LAUNCH_HELPER_EXIT_NO_MEMORY = 2,
        LAUNCH_HELPER_EXIT_CONFIG_INVALID = 3,
        LAUNCH_HELPER_EXIT_SETUP_FAILED = 4,
        LAUNCH_HELPER_EXIT_NAME_INVALID = 5,
        LAUNCH_HELPER_EXIT_SERVICE_NOT_FOUND = 6,
        LAUNCH_HELPER_EXIT_PERMISSIONS_INVALID = 7,
        LAUNCH_HELPER_EXIT_FILE_INVALID = 8,
        LAUNCH_HELPER_EXIT_EXEC_FAILED = 9,
        LAUNCH_HELPER_EXIT_INVALID_ARGS = 10,
        LAUNCH_HELPER_EXIT_CHILD_SIGNALED = 11,
};

#define LAUNCH_HELPER_REASON_FD_ENV "KDBUS_LAUNCH_HELPER_REASON_FD"
#define LAUNCH_HELPER_EXEC_MARK "exec\n"

/*
 * dbus-daemon's error for a helper that exited with @code (not 0): returns the error name,
 * writes its text to @text (unknown codes: "Launch helper exited with unknown return code N").
 */
const char *launch_helper_exit_error(int code, char *text, size_t n_text);

/* dbus-daemon's standard system service directories, in order, NULL-terminated
 * (<standard_system_servicedirs/>). */
extern const char *const launch_helper_system_dirs[];
