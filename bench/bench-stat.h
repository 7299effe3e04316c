/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * What the one-process benchmarks (kdbus-native-bench, kdbus-kabi-bench,
 * legacy-payload-bench) measure alike: the monotonic clock, the bus process's CPU time from
 * /proc/PID/stat, the median of the round rates, so that their RESULT figures compare.
 */
#include <stdbool.h>

/* CLOCK_MONOTONIC in seconds */
double bench_now(void);
/* utime + stime of process @pid in clock ticks, or -1 (no such process, unreadable) */
long bench_cpu_ticks(int pid);
/* the sum of bench_cpu_ticks() over @pids[0..n-1], or -1 if any is unknown */
long bench_cpu_ticks_sum(const int *pids, unsigned n);
/* CPU µs per call from two bench_cpu_ticks() readings, or -1 if either failed or no calls */
double bench_cpu_us_per_call(long ticks0, long ticks1, unsigned long calls);
/* the median of @v[0..n-1] (n > 0); sorts @v, so v[0] and v[n-1] are min and max after */
double bench_median(double *v, unsigned n);
