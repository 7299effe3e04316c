/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Service activation in the driver: StartServiceByName, ListActivatableNames,
 * UpdateActivationEnvironment, auto-start of messages to an activatable name nobody owns
 * (queued in the core, bridge/activation.h, until the name appears), failures answered
 * with dbus-daemon's error names, and the ActivatableServicesChanged signal.
 *
 * The front end (proxy/) does the I/O: it reads the service directories and tells the
 * driver the names (driver_activation_set_names()), starts processes when asked
 * (DriverActivationOps.start) and reports failures (driver_activation_failed()). The
 * driver reports a name that appeared (DriverActivationOps.started) so the front end can
 * stop watching that start.
 */
#include <stdbool.h>
#include <stddef.h>

typedef struct Driver Driver;

typedef struct DriverActivationOps {
        /*
         * Start the service of @name (a name from the last set). Return: 0 (started: the
         * outcome comes later), -errno (fatal), or 1 with @error_name (an
         * org.freedesktop.DBus.Error.* name) and @text (why) filled: it failed at once.
         */
        int (*start)(void *userdata, const char *name, char *error_name, size_t n_error_name,
                     char *text, size_t n_text);
        /* @name got an owner while its start was pending: the start is over. */
        void (*started)(void *userdata, const char *name);
        /*
         * @name is about to be started, or was asked for and nothing provides it: make the
         * names current for it as dbus-daemon does at that point (its file is still as it
         * was read, else the directories are read again; driver_activation_set_names()
         * without emit_changed). NULL: nothing to refresh. Return: 0 (unchanged), 1 (the
         * names were set again: look again), or -ENOMEM.
         */
        int (*refresh)(void *userdata, const char *name);
        /*
         * UpdateActivationEnvironment: @pairs is key, value, key, value, ..., NULL. Return:
         * 0, -ENOMEM, or 1 (refused: this bus does not allow it, e.g. the system bus).
         */
        int (*update_environment)(void *userdata, const char *const *pairs);
        /*
         * --systemd-activation: the owner of org.freedesktop.systemd1 sent
         * org.freedesktop.systemd1.Activator.ActivationFailure(@unit, @error_name, @text) to
         * the bus: fail the starts of the services of @unit (driver_activation_failed()).
         */
        void (*systemd_failed)(void *userdata, const char *unit, const char *error_name,
                               const char *text);
} DriverActivationOps;

/* Enable activation (before any client connects). Return: 0 or -ENOMEM. */
int driver_set_activation(Driver *driver, const DriverActivationOps *ops, void *userdata);

/* --systemd-activation is on: the Features property then lists "SystemdActivation", as
 * dbus-daemon's does. Call it before any client connects. */
void driver_activation_set_systemd(Driver *driver, bool on);

/* The activatable names, in the order ListActivatableNames lists them (after the driver's
 * own). @emit_changed: broadcast ActivatableServicesChanged. Return: 0 or -ENOMEM. */
int driver_activation_set_names(Driver *driver, const char *const *names, size_t n_names,
                                bool emit_changed);

/*
 * --systemd-activation: ask systemd to start @unit with the signal
 * org.freedesktop.systemd1.Activator.ActivationRequest(@unit), sent by the bus to
 * org.freedesktop.systemd1; while nobody owns that name the requests wait for it.
 * Return: 0 or -ENOMEM.
 */
int driver_activation_request_systemd(Driver *driver, const char *unit);

/*
 * The start of @name failed: every message and StartServiceByName call waiting for it is
 * answered with @error_name and @text. Return: 0 or -ENOMEM.
 */
int driver_activation_failed(Driver *driver, const char *name, const char *error_name,
                             const char *text);
