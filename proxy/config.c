/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * From a busconfig file to what kdbusd runs with (see config.h). The steps of a load, each
 * of which can fail without side effects: load the XML with its includes (policy-xml/
 * loader), check what kdbusd cannot honour (auth mechanisms, apparmor mode="required"),
 * map the <limit>s onto BusLimits, compile the policy. Only a complete ProxyConfig is ever
 * handed out, so a reload either swaps everything or nothing.
 *
 * Limits: dbus-daemon starts from its built-in defaults (bus_limits_init_system(); Debian's
 * system.conf lists them, commented out) and applies the file's <limit>s on top; so do we.
 * Values are in dbus-daemon's units (bytes, counts, milliseconds) and are clamped to what
 * the core's fields hold.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bridge/bus.h"
#include "bridge/policy.h"
#include "policy-xml/compile.h"
#include "policy-xml/config.h"
#include "policy-xml/loader.h"
#include "proxy/config.h"
#include "proxy/config-watch.h"
#include "proxy/log.h"
#include "proxy/notify.h"
#include "proxy/sasl.h"
#include "proxy/server.h"
#include "util/error.h"

/* dbus-daemon's session.conf without its includes and service directories: what
 * `kdbusd --session` runs with on a machine that has no /usr/share/dbus-1/session.conf. */
static const char builtin_session_conf[] =
        "<busconfig>\n"
        "  <type>session</type>\n"
        "  <keep_umask/>\n"
        "  <listen>unix:tmpdir=/tmp</listen>\n"
        "  <auth>EXTERNAL</auth>\n"
        "  <standard_session_servicedirs/>\n"
        "  <policy context=\"default\">\n"
        "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
        "    <allow eavesdrop=\"true\"/>\n"
        "    <allow own=\"*\"/>\n"
        "  </policy>\n"
        "  <limit name=\"max_incoming_bytes\">1000000000</limit>\n"
        "  <limit name=\"max_incoming_unix_fds\">250000000</limit>\n"
        "  <limit name=\"max_outgoing_bytes\">1000000000</limit>\n"
        "  <limit name=\"max_outgoing_unix_fds\">250000000</limit>\n"
        "  <limit name=\"max_message_size\">1000000000</limit>\n"
        "  <limit name=\"service_start_timeout\">120000</limit>\n"
        "  <limit name=\"auth_timeout\">240000</limit>\n"
        "  <limit name=\"pending_fd_timeout\">150000</limit>\n"
        "  <limit name=\"max_completed_connections\">100000</limit>\n"
        "  <limit name=\"max_incomplete_connections\">10000</limit>\n"
        "  <limit name=\"max_connections_per_user\">100000</limit>\n"
        "  <limit name=\"max_pending_service_starts\">10000</limit>\n"
        "  <limit name=\"max_names_per_connection\">50000</limit>\n"
        "  <limit name=\"max_match_rules_per_connection\">50000</limit>\n"
        "  <limit name=\"max_replies_per_connection\">50000</limit>\n"
        "</busconfig>\n";

typedef struct LoadState {
        ProxyConfigError *error;
        bool failed;
} LoadState;

static void load_diag(void *userdata, ConfigDiagLevel level, const char *file, unsigned line,
                      const char *message) {
        LoadState *st = userdata;

        if (level == CONFIG_DIAG_WARNING) {
                proxy_log(LOG_WARNING, "%s:%u: %s", file, line, message);
                return;
        }
        if (st->failed)
                return;
        st->failed = true;
        if (line)
                snprintf(st->error->text, sizeof(st->error->text), "%s:%u: %s", file, line,
                         message);
        else            /* the file itself, e.g. it cannot be opened */
                snprintf(st->error->text, sizeof(st->error->text), "%s: %s", file, message);
        st->error->not_found = !strncmp(message, "Failed to open", 14) &&
                               strstr(message, strerror(ENOENT));
}

static _printf_(4, 5) int load_fail(LoadState *st, const char *file, unsigned line,
                                    const char *fmt, ...) {
        char text[900];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        load_diag(st, CONFIG_DIAG_ERROR, file ? file : "(configuration)", line, text);
        return 1;
}

static uint32_t clamp32(uint64_t v) {
        return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static uint64_t msec_to_usec(uint64_t v) {
        return v > UINT64_MAX / 1000 ? UINT64_MAX : v * 1000;
}

/* dbus-daemon's built-in limits with @t's <limit>s on top. */
static void limits_from_config(const Config *t, BusLimits *l) {
        bus_limits_init_system(l);
        for (size_t i = 0; i < _CONFIG_LIMIT_N; ++i) {
                uint64_t v = t->limits[i].value;

                if (!t->limits[i].set)
                        continue;
                switch ((ConfigLimitId)i) {
                case CONFIG_LIMIT_MAX_INCOMING_BYTES:
                        l->max_incoming_bytes = v;
                        break;
                case CONFIG_LIMIT_MAX_INCOMING_UNIX_FDS:
                        l->max_incoming_unix_fds = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_OUTGOING_BYTES:
                        l->max_outgoing_bytes = v;
                        break;
                case CONFIG_LIMIT_MAX_OUTGOING_UNIX_FDS:
                        l->max_outgoing_unix_fds = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_MESSAGE_SIZE:
                        l->max_message_size = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_MESSAGE_UNIX_FDS:
                        l->max_message_unix_fds = clamp32(v);
                        break;
                case CONFIG_LIMIT_SERVICE_START_TIMEOUT:
                        l->service_start_timeout_usec = msec_to_usec(v);
                        break;
                case CONFIG_LIMIT_AUTH_TIMEOUT:
                        l->auth_timeout_usec = msec_to_usec(v);
                        break;
                case CONFIG_LIMIT_PENDING_FD_TIMEOUT:
                        l->pending_fd_timeout_usec = msec_to_usec(v);
                        break;
                case CONFIG_LIMIT_MAX_COMPLETED_CONNECTIONS:
                        l->max_completed_connections = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_INCOMPLETE_CONNECTIONS:
                        l->max_incomplete_connections = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_CONNECTIONS_PER_USER:
                        l->max_connections_per_user = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_PENDING_SERVICE_STARTS:
                        l->max_pending_service_starts = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_NAMES_PER_CONNECTION:
                        l->max_names_per_connection = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_MATCH_RULES_PER_CONNECTION:
                        l->max_match_rules_per_connection = clamp32(v);
                        break;
                case CONFIG_LIMIT_MAX_REPLIES_PER_CONNECTION:
                        l->max_replies_per_connection = clamp32(v);
                        break;
                case CONFIG_LIMIT_REPLY_TIMEOUT:
                        /* 0 keeps "never", the built-in value */
                        l->reply_timeout_usec = msec_to_usec(v);
                        break;
                case CONFIG_LIMIT_MAX_CONTAINERS:
                case CONFIG_LIMIT_MAX_CONTAINERS_PER_USER:
                case CONFIG_LIMIT_MAX_CONTAINER_METADATA_BYTES:
                case CONFIG_LIMIT_MAX_CONNECTIONS_PER_CONTAINER:
                        /* no Containers1 interface: nothing to bound */
                case _CONFIG_LIMIT_N:
                        break;
                }
        }
}

/*
 * <auth>: the mechanisms offered, as dbus-daemon: all three without an <auth>, else those
 * listed; a name it does not know is refused with its message. <allow_anonymous/> is apart:
 * ANONYMOUS succeeds whenever it is offered, and a peer that used it is then dropped unless
 * the bus allows anonymous peers (proxy/client.c).
 * Return: 0 or 1 (diagnostic sent).
 */
static int check_auth(LoadState *st, const Config *t, unsigned *ret_mechs) {
        unsigned mechs = t->n_auth == 0 ? SASL_MECH_ALL : 0;

        for (size_t i = 0; i < t->n_auth; ++i) {
                const ConfigString *a = &t->auth[i];

                if (!strcmp(a->value, "EXTERNAL"))
                        mechs |= SASL_MECH_EXTERNAL;
                else if (!strcmp(a->value, "ANONYMOUS"))
                        mechs |= SASL_MECH_ANONYMOUS;
                else if (!strcmp(a->value, "DBUS_COOKIE_SHA1"))
                        mechs |= SASL_MECH_COOKIE;
                else
                        return load_fail(st, a->loc.file, a->loc.line,
                                         "Unsupported auth mechanism \"%s\" in bus config file "
                                         "detected. Supported mechanisms are \"EXTERNAL, "
                                         "DBUS_COOKIE_SHA1, ANONYMOUS\".", a->value);
        }
        *ret_mechs = mechs;
        return 0;
}

static int compile_policy(LoadState *st, ProxyConfig *c) {
        static bool warned;
        PolicyCompileOptions o = { .diag = load_diag, .userdata = st };
        PolicyDb *db = NULL;
        int r;

        r = policy_compile(c->tree, &o, &db);
        if (r == -EOPNOTSUPP) {
                /* a build whose policy compiler is not there yet: say so, check nothing */
                if (!warned)
                        proxy_log(LOG_WARNING, "%s: this kdbusd has no policy compiler; the "
                                  "<policy> rules are NOT enforced, ignoring",
                                  c->path ? c->path : "built-in configuration");
                warned = true;
                return 0;
        }
        if (r < 0)
                return error_trace(r);
        if (r)
                return st->failed ? 1 : load_fail(st, c->path, 0, "the policy does not compile");
        c->policy = db;
        c->n_rules = policy_db_count_rules(db);
        return 0;
}

/**
 * proxy_config_load() - load, check and compile a configuration
 * @path:       the file; NULL: the built-in session configuration
 * @ret:        the configuration, on success
 * @ret_error:  on 1: the first error as "file:line: message"
 *
 * Return: 0, -ENOMEM, or 1 (invalid; @ret_error says why).
 */
int proxy_config_load(const char *path, ProxyConfig **ret, ProxyConfigError *ret_error) {
        _cleanup_(proxy_config_freep) ProxyConfig *c = NULL;
        LoadState st = { .error = ret_error };
        ConfigLoadOptions o = { .diag = load_diag, .userdata = &st };
        const Config *t;
        int r;

        *ret_error = (ProxyConfigError){};
        c = calloc(1, sizeof(*c));
        if (!c)
                return error_origin(-ENOMEM);
        if (path) {
                c->path = strdup(path);
                if (!c->path)
                        return error_origin(-ENOMEM);
                r = config_load_file(path, &o, &c->tree);
        } else {
                r = config_load_memory("<built-in session configuration>", NULL,
                                       builtin_session_conf, sizeof(builtin_session_conf) - 1,
                                       &o, &c->tree);
        }
        if (r < 0)
                return error_trace(r);
        if (r)
                return st.failed ? 1 : load_fail(&st, path, 0, "invalid configuration");
        t = c->tree;

        r = check_auth(&st, t, &c->auth_mechs);
        if (r)
                return r;
        c->allow_anonymous = t->allow_anonymous.set;
        if (t->apparmor == CONFIG_APPARMOR_REQUIRED)
                return load_fail(&st, t->apparmor_loc.file, t->apparmor_loc.line,
                                 "<apparmor mode=\"required\"/>: kdbusd has no AppArmor "
                                 "mediation; use mode=\"enabled\" or \"disabled\"");
        limits_from_config(t, &c->limits);
        r = compile_policy(&st, c);
        if (r)
                return r;

        *ret = steal_ptr(&c);
        return 0;
}

/**
 * proxy_config_free() - free a configuration
 * @c:          the configuration, or NULL
 *
 * Return: NULL.
 */
ProxyConfig *proxy_config_free(ProxyConfig *c) {
        if (!c)
                return NULL;
        c->policy = policy_db_unref(c->policy);
        c->tree = config_free(c->tree);
        free(c->path);
        free(c);
        return NULL;
}

/**
 * proxy_config_apply() - put the reloadable parts of @c on the running bus
 * @s:          the server
 * @c:          the configuration (not taken)
 *
 * The policy goes first: bus_set_policy() re-resolves every connection's snapshot and is
 * all or nothing, so on failure nothing has changed.
 *
 * Return: 0 or -ENOMEM.
 */
int proxy_config_apply(Server *s, const ProxyConfig *c) {
        int r;

        r = bus_set_policy(s->bus, c->policy);
        if (r == -EOPNOTSUPP && !c->policy)
                r = 0;          /* no policy compiler in this build (logged at load) */
        if (r < 0)
                return error_trace(r);
        s->bus->limits = c->limits;
        s->allow_anonymous = c->allow_anonymous;
        if (!s->config)
                s->auth_mechs = c->auth_mechs;  /* <auth> is read at start only */
        return 0;
}

static int config_reload(Server *s, ProxyConfigError *ret_error);

/**
 * proxy_config_reload() - SIGHUP / ReloadConfig: the whole configuration again, or nothing
 * @s:          the server; @s->config is replaced on success
 * @ret_error:  on 1: why the new configuration was refused
 *
 * Listen addresses, auth, pidfile, fork and user are not changed by a reload (as with
 * dbus-daemon); the policy, limits and allow_anonymous are. Connections stay; their policy
 * snapshots are recomputed against the new policy.
 *
 * Return: 0, -ENOMEM (the old configuration stays), or 1 (invalid; the old one stays).
 */
int proxy_config_reload(Server *s, ProxyConfigError *ret_error) {
        /* systemd (Type=notify): RELOADING=1 with the monotonic time it wants, then READY=1
         * when the bus serves again, whatever the outcome */
        struct timespec ts = { 0 };
        int r;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        proxy_notify("RELOADING=1\nMONOTONIC_USEC=%llu",
                     (unsigned long long)ts.tv_sec * 1000000ULL +
                     (unsigned long long)ts.tv_nsec / 1000ULL);
        r = config_reload(s, ret_error);
        proxy_notify("READY=1");
        return r;
}

static int config_reload(Server *s, ProxyConfigError *ret_error) {
        _cleanup_(proxy_config_freep) ProxyConfig *c = NULL;
        ProxyConfig *old;
        int r;

        proxy_config_peer_forget();     /* users are looked up anew, as dbus-daemon does */
        r = proxy_config_load(s->config ? s->config->path : NULL, &c, ret_error);
        if (r == 0)
                r = proxy_config_apply(s, c);
        if (r < 0) {
                snprintf(ret_error->text, sizeof(ret_error->text), "%s", strerror(-r));
                proxy_log(LOG_ERR, "Unable to reload configuration: %s; keeping the running "
                          "configuration", ret_error->text);
                return r;
        }
        if (r) {
                proxy_log(LOG_ERR, "Unable to reload configuration: %s; keeping the running "
                          "configuration", ret_error->text);
                return r;
        }
        old = s->config;
        s->config = steal_ptr(&c);
        (void) proxy_config_free(old);
        proxy_config_watch_update(s->config_watch);     /* its <includedir>s now */
        proxy_log(LOG_INFO, "Reloaded configuration (%s, %zu policy rules)",
                  s->config->path ? s->config->path : "built-in", s->config->n_rules);
        return 0;
}

/**
 * proxy_config_reload_hook() - ReloadConfig
 * @userdata:   the Server
 * @ret_not_found: set if the new configuration names a file that does not exist
 * @msg:        receives "file:line: why" on failure
 * @n_msg:      size of @msg
 *
 * Return: as proxy_config_reload().
 */
int proxy_config_reload_hook(void *userdata, bool *ret_not_found, char *msg, size_t n_msg) {
        ProxyConfigError err;
        int r;

        r = proxy_config_reload(userdata, &err);
        if (r) {
                *ret_not_found = err.not_found;
                snprintf(msg, n_msg, "%s", err.text);
        }
        return r;
}
