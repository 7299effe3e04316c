/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Error convention (HACKING.md, Errors):
 *   0             success
 *   negative errno fatal, passed up unchanged
 *   positive      an expected, module-specific outcome (MODULE_E_*) that the caller handles
 *
 * error_origin(r) marks where a fatal error is born, error_trace(r) each frame it passes,
 * error_fold(r) turns an unexpected positive code into a fatal one (-ENOTRECOVERABLE). Each
 * writes file:line:function to the trace sink only when r < 0 (or folded), so the success
 * path costs a compare.
 */
#include <errno.h>

void error_trace_record(int r, const char *file, int line, const char *func);

static inline int error_trace_impl(int r, const char *file, int line, const char *func) {
        if (r < 0)
                error_trace_record(r, file, line, func);
        return r;
}

static inline int error_fold_impl(int r, const char *file, int line, const char *func) {
        if (r > 0)
                r = -ENOTRECOVERABLE;
        return error_trace_impl(r, file, line, func);
}

#define error_origin(r) error_trace_impl((r), __FILE__, __LINE__, __func__)
#define error_trace(r) error_trace_impl((r), __FILE__, __LINE__, __func__)
#define error_fold(r) error_fold_impl((r), __FILE__, __LINE__, __func__)

/* Where traces go; default: stderr when KDBUS_ERROR_TRACE is set in the environment, else nowhere. */
typedef void (*ErrorTraceFn)(int r, const char *file, int line, const char *func);
void error_trace_set_sink(ErrorTraceFn fn);
