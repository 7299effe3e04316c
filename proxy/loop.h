/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The few event-loop calls proxy/ makes, in one place, so that the loop underneath
 * (sd-event today) can be replaced by an edge-triggered dispatcher later without touching
 * the clients and listeners. Every source is level-triggered; times are CLOCK_MONOTONIC
 * microseconds.
 */
#include <stdint.h>
#include <systemd/sd-event.h>

typedef sd_event Loop;
typedef sd_event_source LoopSource;

static inline int loop_new(Loop **ret) {
        return sd_event_new(ret);
}

static inline Loop *loop_unref(Loop *l) {
        return sd_event_unref(l);
}

static inline uint64_t loop_now(Loop *l) {
        uint64_t now = 0;

        (void) sd_event_now(l, CLOCK_MONOTONIC, &now);
        return now;
}

/* Disables and frees a source; returns NULL. */
static inline LoopSource *loop_source_free(LoopSource *s) {
        return sd_event_source_disable_unref(s);
}

static inline void loop_source_freep(LoopSource **s) {
        *s = loop_source_free(*s);
}

static inline int loop_source_set_enabled(LoopSource *s, int enabled) {
        return sd_event_source_set_enabled(s, enabled ? SD_EVENT_ON : SD_EVENT_OFF);
}

static inline int loop_io_set_events(LoopSource *s, uint32_t events) {
        return sd_event_source_set_io_events(s, events);
}

/* Arms (or, with @usec == UINT64_MAX, disarms) a one-shot timer. */
static inline int loop_timer_set(LoopSource *s, uint64_t usec) {
        int r;

        if (usec == UINT64_MAX)
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        r = sd_event_source_set_time(s, usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}
