/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The launch helper contract (see launch-helper.h): exit codes to dbus-daemon's errors.
 */
#include <stdio.h>
#include "compat/launch-helper.h"
#include "util/macro.h"

#define E(s) "org.freedesktop.DBus.Error." s

/* dbus-daemon 1.14.10's mapping (names as in its dbus-protocol.h, e.g. SETUP_FAILED is
 * Spawn.FailedToSetup); FILE_INVALID shares PermissionsInvalid's name there. */
static const struct {
        const char *name;
        const char *text;
} helper_errors[] = {
        [LAUNCH_HELPER_EXIT_NO_MEMORY] = { E("NoMemory"),
                "Launcher could not run (out of memory)" },
        [LAUNCH_HELPER_EXIT_CONFIG_INVALID] = { E("Spawn.ConfigInvalid"),
                "Invalid configuration (missing or empty <user>?)" },
        [LAUNCH_HELPER_EXIT_SETUP_FAILED] = { E("Spawn.FailedToSetup"),
                "Failed to setup environment correctly" },
        [LAUNCH_HELPER_EXIT_NAME_INVALID] = { E("Spawn.ServiceNotValid"),
                "Bus name is not valid or missing" },
        [LAUNCH_HELPER_EXIT_SERVICE_NOT_FOUND] = { E("Spawn.ServiceNotFound"),
                "Bus name not found in system service directory" },
        [LAUNCH_HELPER_EXIT_PERMISSIONS_INVALID] = { E("Spawn.PermissionsInvalid"),
                "The permission of the setuid helper is not correct" },
        [LAUNCH_HELPER_EXIT_FILE_INVALID] = { E("Spawn.PermissionsInvalid"),
                "The service file is incorrect or does not have all required attributes" },
        [LAUNCH_HELPER_EXIT_EXEC_FAILED] = { E("Spawn.ExecFailed"),
                "Cannot launch daemon, file not found or permissions invalid" },
        [LAUNCH_HELPER_EXIT_INVALID_ARGS] = { E("InvalidArgs"),
                "Invalid arguments to command line" },
        [LAUNCH_HELPER_EXIT_CHILD_SIGNALED] = { E("Spawn.ChildSignaled"),
                "Launched child was signaled, it probably crashed" },
};

const char *const launch_helper_system_dirs[] = {
        "/usr/local/share/dbus-1/system-services",
        "/usr/share/dbus-1/system-services",
        "/lib/dbus-1/system-services",
        NULL,
};

/**
 * launch_helper_exit_error() - dbus-daemon's error for a launch helper's exit status
 * @code:       the exit status (not 0)
 * @text:       receives the error's text
 * @n_text:     its size
 *
 * Return: the error name.
 */
const char *launch_helper_exit_error(int code, char *text, size_t n_text) {
        if (code > 0 && (size_t)code < ELEMENTSOF(helper_errors) && helper_errors[code].name) {
                (void) snprintf(text, n_text, "%s", helper_errors[code].text);
                return helper_errors[code].name;
        }
        (void) snprintf(text, n_text, "Launch helper exited with unknown return code %d", code);
        return E("Spawn.ChildExited");
}
