/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * .service files as dbus-daemon reads them: a key file whose [D-BUS Service] group names a
 * service (Name, a well-known bus name) and how to start it (Exec; User on the system bus;
 * SystemdService for systemd activation; AssumedAppArmorLabel). Pure functions: the caller
 * reads the file (proxy/) and passes its bytes.
 *
 * Syntax (dbus-daemon's desktop-file rules): lines end at '\n'; blank lines and lines
 * starting with '#' are ignored; "[Group]" starts a group; "Key=Value" (blanks around '='
 * allowed, the value runs to the end of the line) belongs to the group above. Keys before any
 * group, a group or key given twice, NUL bytes, invalid UTF-8 and malformed lines are
 * errors. Other groups and unknown keys are ignored.
 */
#include <stddef.h>
#include "util/macro.h"

enum {
        _ACTIVATION_SERVICE_E_SUCCESS,
        ACTIVATION_SERVICE_E_INVALID,   /* malformed or incomplete; the message says where */
        _ACTIVATION_SERVICE_E_N,
};

typedef struct ActivationService {
        char *name;                     /* Name= */
        char *exec;                     /* Exec= (required) */
        char *user;                     /* User=, or NULL */
        char *systemd_service;          /* SystemdService=, or NULL */
        char *apparmor_label;           /* AssumedAppArmorLabel=, or NULL */
} ActivationService;

/**
 * activation_service_parse() - parse the bytes of one .service file
 * @data, @size:        the file's contents
 * @file:               its name, for messages
 * @ret:                the service (activation_service_free())
 * @err, @n_err:        on ACTIVATION_SERVICE_E_INVALID: "file:line: why"
 *
 * Return: 0, -ENOMEM, or ACTIVATION_SERVICE_E_INVALID.
 */
int activation_service_parse(const char *data, size_t size, const char *file,
                             ActivationService **ret, char *err, size_t n_err);
ActivationService *activation_service_free(ActivationService *s);
DEFINE_CLEANUP(ActivationService *, activation_service_free);

/**
 * activation_exec_split() - split an Exec= line into argv, as a POSIX shell would split
 * words: blanks separate words; '...' is literal; "..." keeps blanks and takes \ before
 * $ ` " \ and newline; \ outside quotes escapes the next character. No expansion.
 * @exec:       the command line
 * @ret_argv:   NULL-terminated, each string and the array malloc'd (activation_strv_free())
 * @err, @n_err: why on failure
 *
 * Return: 0, -ENOMEM, or ACTIVATION_SERVICE_E_INVALID (unterminated quote, trailing \,
 * empty command).
 */
int activation_exec_split(const char *exec, char ***ret_argv, char *err, size_t n_err);
char **activation_strv_free(char **v);
