/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The injected log sink: bridge/, compat/ and policy-xml/ never log on their own; they hand
 * lines to whatever sink proxy/ (journal or stderr) or a test (a GString) installs.
 */
#include <stdarg.h>
#include "util/macro.h"

enum {
        LOG_SINK_ERR = 3,
        LOG_SINK_WARNING = 4,
        LOG_SINK_NOTICE = 5,
        LOG_SINK_INFO = 6,
        LOG_SINK_DEBUG = 7,
};

typedef struct LogSink {
        void (*write)(void *userdata, int level, const char *fmt, va_list ap);
        void *userdata;
} LogSink;

#define LOG_SINK_NULL(s) { .write = NULL, .userdata = NULL }

static inline _printf_(3, 4) void log_sink_printf(const LogSink *sink, int level, const char *fmt, ...) {
        va_list ap;

        if (!sink || !sink->write)
                return;
        va_start(ap, fmt);
        sink->write(sink->userdata, level, fmt, ap);
        va_end(ap);
}
