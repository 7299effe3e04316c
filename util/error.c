/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fatal-error tracing. A fatal error is rare by definition, so the sink may be slow; the
 * success path never reaches this file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/error.h"

static void error_trace_stderr(int r, const char *file, int line, const char *func) {
        fprintf(stderr, "error trace: %s:%d %s(): %s\n", file, line, func, strerror(-r));
}

static ErrorTraceFn trace_sink;
static int trace_sink_resolved;

void error_trace_set_sink(ErrorTraceFn fn) {
        trace_sink = fn;
        trace_sink_resolved = 1;
}

void error_trace_record(int r, const char *file, int line, const char *func) {
        if (!trace_sink_resolved) {
                trace_sink = getenv("KDBUS_ERROR_TRACE") ? error_trace_stderr : NULL;
                trace_sink_resolved = 1;
        }
        if (trace_sink)
                trace_sink(r, file, line, func);
}
