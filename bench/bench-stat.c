/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench-stat.h"

double bench_now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

long bench_cpu_ticks(int pid) {
        char path[64], buf[1024], *p;
        unsigned long ut, st;
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        /* the command name may hold anything but ends at the last ')'; after ") ": state
         * ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                         &ut, &st) != 2)
                return -1;
        return (long) (ut + st);
}

long bench_cpu_ticks_sum(const int *pids, unsigned n) {
        long sum = 0;
        unsigned i;

        for (i = 0; i < n; ++i) {
                long t = bench_cpu_ticks(pids[i]);

                if (t < 0)
                        return -1;
                sum += t;
        }
        return sum;
}

double bench_cpu_us_per_call(long ticks0, long ticks1, unsigned long calls) {
        if (ticks0 < 0 || ticks1 < 0 || !calls)
                return -1;
        return (double) (ticks1 - ticks0) * 1e6 / (double) sysconf(_SC_CLK_TCK) /
               (double) calls;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

double bench_median(double *v, unsigned n) {
        qsort(v, n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
