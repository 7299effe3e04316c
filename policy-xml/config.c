/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Config tree: allocation, merging (for include expansion) and the canonical dump.
 *
 * Arrays grow by doubling with realloc; nobody keeps pointers into them across an append
 * except the loader's "current policy", and policies are never appended while one is open
 * (<policy> cannot nest and <include> is not allowed inside it).
 *
 * The dump is canonical: fixed section order, rules' attributes in a fixed order, strings
 * quoted with C escapes, no file:line unless asked. Two configurations that mean the same to
 * dbus-daemon's parser (attribute order, comments, CDATA, includes vs. inline, <x/> vs.
 * <x></x>) dump identically; tests/data/equiv-config relies on that.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>
#include "policy-xml/config.h"
#include "util/error.h"

static const char *const limit_names[_CONFIG_LIMIT_N] = {
        [CONFIG_LIMIT_MAX_INCOMING_BYTES] = "max_incoming_bytes",
        [CONFIG_LIMIT_MAX_INCOMING_UNIX_FDS] = "max_incoming_unix_fds",
        [CONFIG_LIMIT_MAX_OUTGOING_BYTES] = "max_outgoing_bytes",
        [CONFIG_LIMIT_MAX_OUTGOING_UNIX_FDS] = "max_outgoing_unix_fds",
        [CONFIG_LIMIT_MAX_MESSAGE_SIZE] = "max_message_size",
        [CONFIG_LIMIT_MAX_MESSAGE_UNIX_FDS] = "max_message_unix_fds",
        [CONFIG_LIMIT_SERVICE_START_TIMEOUT] = "service_start_timeout",
        [CONFIG_LIMIT_AUTH_TIMEOUT] = "auth_timeout",
        [CONFIG_LIMIT_PENDING_FD_TIMEOUT] = "pending_fd_timeout",
        [CONFIG_LIMIT_MAX_COMPLETED_CONNECTIONS] = "max_completed_connections",
        [CONFIG_LIMIT_MAX_INCOMPLETE_CONNECTIONS] = "max_incomplete_connections",
        [CONFIG_LIMIT_MAX_CONNECTIONS_PER_USER] = "max_connections_per_user",
        [CONFIG_LIMIT_MAX_PENDING_SERVICE_STARTS] = "max_pending_service_starts",
        [CONFIG_LIMIT_MAX_NAMES_PER_CONNECTION] = "max_names_per_connection",
        [CONFIG_LIMIT_MAX_MATCH_RULES_PER_CONNECTION] = "max_match_rules_per_connection",
        [CONFIG_LIMIT_MAX_REPLIES_PER_CONNECTION] = "max_replies_per_connection",
        [CONFIG_LIMIT_REPLY_TIMEOUT] = "reply_timeout",
        [CONFIG_LIMIT_MAX_CONTAINERS] = "max_containers",
        [CONFIG_LIMIT_MAX_CONTAINERS_PER_USER] = "max_containers_per_user",
        [CONFIG_LIMIT_MAX_CONTAINER_METADATA_BYTES] = "max_container_metadata_bytes",
        [CONFIG_LIMIT_MAX_CONNECTIONS_PER_CONTAINER] = "max_connections_per_container",
};

static const char *const attr_names[_CONFIG_ATTR_N] = {
        [CONFIG_ATTR_SEND_DESTINATION] = "send_destination",
        [CONFIG_ATTR_SEND_DESTINATION_PREFIX] = "send_destination_prefix",
        [CONFIG_ATTR_SEND_INTERFACE] = "send_interface",
        [CONFIG_ATTR_SEND_MEMBER] = "send_member",
        [CONFIG_ATTR_SEND_ERROR] = "send_error",
        [CONFIG_ATTR_SEND_PATH] = "send_path",
        [CONFIG_ATTR_RECEIVE_SENDER] = "receive_sender",
        [CONFIG_ATTR_RECEIVE_INTERFACE] = "receive_interface",
        [CONFIG_ATTR_RECEIVE_MEMBER] = "receive_member",
        [CONFIG_ATTR_RECEIVE_ERROR] = "receive_error",
        [CONFIG_ATTR_RECEIVE_PATH] = "receive_path",
        [CONFIG_ATTR_OWN] = "own",
        [CONFIG_ATTR_OWN_PREFIX] = "own_prefix",
        [CONFIG_ATTR_USER] = "user",
        [CONFIG_ATTR_GROUP] = "group",
};

/**
 * config_limit_to_string() - XML name of a limit
 * @id:         the limit
 *
 * Return: the name, or NULL if @id is out of range.
 */
const char *config_limit_to_string(ConfigLimitId id) {
        if ((unsigned)id >= _CONFIG_LIMIT_N)
                return NULL;
        return limit_names[id];
}

/**
 * config_limit_from_string() - look up a <limit name=...>
 * @name:       the name as written
 *
 * Return: the ConfigLimitId, or -1 if dbus-daemon has no such limit.
 */
int config_limit_from_string(const char *name) {
        for (size_t i = 0; i < _CONFIG_LIMIT_N; ++i)
                if (!strcmp(limit_names[i], name))
                        return (int)i;
        return -1;
}

/**
 * config_rule_attr_to_string() - XML name of a string attribute of <allow>/<deny>
 * @attr:       the attribute
 *
 * Return: the name, or NULL if @attr is out of range.
 */
const char *config_rule_attr_to_string(ConfigRuleAttr attr) {
        if ((unsigned)attr >= _CONFIG_ATTR_N)
                return NULL;
        return attr_names[attr];
}

/*
 * Arrays carry no capacity field: it is implied by the length, cap(n) = 0 for n = 0, else the
 * next power of two >= max(n, 4). array_reserve() reallocs when a length change crosses it.
 */
static size_t array_cap(size_t n) {
        size_t cap = 4;

        if (!n)
                return 0;
        while (cap < n)
                cap *= 2;
        return cap;
}

static int array_reserve(void **array, size_t n_old, size_t n_new, size_t size) {
        size_t cap = array_cap(n_new);
        void *p;

        if (cap <= array_cap(n_old))
                return 0;
        if (cap > SIZE_MAX / size)
                return error_origin(-ENOMEM);
        p = realloc(*array, cap * size);
        if (!p)
                return error_origin(-ENOMEM);
        *array = p;
        return 0;
}

static int array_grow(void **array, size_t n, size_t size) {
        return array_reserve(array, n, n + 1, size);
}

/**
 * config_new() - an empty configuration
 * @ret_config: the new Config
 *
 * Return: 0 or -ENOMEM.
 */
int config_new(Config **ret_config) {
        Config *c = calloc(1, sizeof(*c));

        if (!c)
                return error_origin(-ENOMEM);
        *ret_config = c;
        return 0;
}

/**
 * config_rule_deinit() - free what a rule owns, leaving it zeroed
 * @rule:       the rule
 */
void config_rule_deinit(ConfigRule *rule) {
        for (size_t i = 0; i < _CONFIG_ATTR_N; ++i)
                free(rule->str[i]);
        memset(rule, 0, sizeof(*rule));
}

static void config_policy_deinit(ConfigPolicy *p) {
        for (size_t i = 0; i < p->n_rules; ++i)
                config_rule_deinit(&p->rules[i]);
        free(p->rules);
        free(p->name);
}

/**
 * config_free() - free a configuration and everything it owns
 * @config:     the Config, or NULL
 *
 * Return: NULL.
 */
Config *config_free(Config *config) {
        size_t i;

        if (!config)
                return NULL;
        free(config->type.value);
        free(config->user.value);
        free(config->pidfile.value);
        free(config->servicehelper.value);
        for (i = 0; i < config->n_listen; ++i)
                free(config->listen[i].value);
        free(config->listen);
        for (i = 0; i < config->n_auth; ++i)
                free(config->auth[i].value);
        free(config->auth);
        for (i = 0; i < config->n_servicedirs; ++i)
                free(config->servicedirs[i].path);
        free(config->servicedirs);
        for (i = 0; i < config->n_policies; ++i)
                config_policy_deinit(&config->policies[i]);
        free(config->policies);
        for (i = 0; i < config->n_associations; ++i) {
                free(config->associations[i].own);
                free(config->associations[i].context);
        }
        free(config->associations);
        for (i = 0; i < config->n_files; ++i)
                free(config->files[i]);
        free(config->files);
        for (i = 0; i < config->n_includedirs; ++i)
                free(config->includedirs[i].value);
        free(config->includedirs);
        free(config);
        return NULL;
}

/**
 * config_intern_file() - a Config-owned copy of a file name for ConfigLoc
 * @config:     the Config
 * @file:       the name
 * @ret_file:   the interned copy, valid as long as @config
 *
 * Return: 0 or -ENOMEM.
 */
int config_intern_file(Config *config, const char *file, const char **ret_file) {
        char *copy;
        int r;

        for (size_t i = 0; i < config->n_files; ++i)
                if (!strcmp(config->files[i], file)) {
                        *ret_file = config->files[i];
                        return 0;
                }
        r = array_grow((void **)&config->files, config->n_files, sizeof(char *));
        if (r < 0)
                return error_trace(r);
        copy = strdup(file);
        if (!copy)
                return error_origin(-ENOMEM);
        config->files[config->n_files++] = copy;
        *ret_file = copy;
        return 0;
}

/**
 * config_string_set() - replace a single-valued element (last one wins)
 * @s:          the field
 * @value:      the text, @n bytes, need not be NUL-terminated
 * @n:          its length
 * @loc:        where it was written
 *
 * Return: 0 or -ENOMEM.
 */
int config_string_set(ConfigString *s, const char *value, size_t n, ConfigLoc loc) {
        char *copy = strndup(value, n);

        if (!copy)
                return error_origin(-ENOMEM);
        free(s->value);
        s->value = copy;
        s->loc = loc;
        return 0;
}

/**
 * config_append_string() - append to a multi-valued element list (<listen>, <auth>)
 * @array:      the list
 * @n:          its length, incremented
 * @value:      the text
 * @loc:        where it was written
 *
 * Return: 0 or -ENOMEM.
 */
int config_append_string(ConfigString **array, size_t *n, const char *value, ConfigLoc loc) {
        char *copy;
        int r;

        r = array_grow((void **)array, *n, sizeof(**array));
        if (r < 0)
                return error_trace(r);
        copy = strdup(value);
        if (!copy)
                return error_origin(-ENOMEM);
        (*array)[(*n)++] = (ConfigString){ .value = copy, .loc = loc };
        return 0;
}

/**
 * config_append_servicedir() - append a service directory entry
 * @config:     the Config
 * @kind:       a path or one of the standard-directories markers
 * @path:       PATH only, else NULL
 * @loc:        where it was written
 *
 * Return: 0 or -ENOMEM.
 */
int config_append_servicedir(Config *config, ConfigServiceDirKind kind, const char *path,
                             ConfigLoc loc) {
        char *copy = NULL;
        int r;

        r = array_grow((void **)&config->servicedirs, config->n_servicedirs,
                       sizeof(*config->servicedirs));
        if (r < 0)
                return error_trace(r);
        if (path) {
                copy = strdup(path);
                if (!copy)
                        return error_origin(-ENOMEM);
        }
        config->servicedirs[config->n_servicedirs++] =
                (ConfigServiceDir){ .kind = kind, .path = copy, .loc = loc };
        return 0;
}

/**
 * config_append_policy() - append a zeroed policy
 * @config:     the Config
 * @ret_policy: the new policy, valid until the next config_append_policy()
 *
 * Return: 0 or -ENOMEM.
 */
int config_append_policy(Config *config, ConfigPolicy **ret_policy) {
        int r;

        r = array_grow((void **)&config->policies, config->n_policies,
                       sizeof(*config->policies));
        if (r < 0)
                return error_trace(r);
        config->policies[config->n_policies] = (ConfigPolicy){};
        *ret_policy = &config->policies[config->n_policies++];
        return 0;
}

/**
 * config_policy_append_rule() - append a zeroed rule
 * @policy:     the policy
 * @ret_rule:   the new rule, valid until the next append to @policy
 *
 * Return: 0 or -ENOMEM.
 */
int config_policy_append_rule(ConfigPolicy *policy, ConfigRule **ret_rule) {
        int r;

        r = array_grow((void **)&policy->rules, policy->n_rules, sizeof(*policy->rules));
        if (r < 0)
                return error_trace(r);
        policy->rules[policy->n_rules] = (ConfigRule){};
        *ret_rule = &policy->rules[policy->n_rules++];
        return 0;
}

/**
 * config_append_associate() - append a <selinux><associate/>
 * @config:     the Config
 * @own:        the name
 * @context:    the SELinux context
 * @loc:        where it was written
 *
 * Return: 0 or -ENOMEM.
 */
int config_append_associate(Config *config, const char *own, const char *context,
                            ConfigLoc loc) {
        _cleanup_(freep) char *o = NULL, *c = NULL;
        int r;

        r = array_grow((void **)&config->associations, config->n_associations,
                       sizeof(*config->associations));
        if (r < 0)
                return error_trace(r);
        o = strdup(own);
        c = strdup(context);
        if (!o || !c)
                return error_origin(-ENOMEM);
        config->associations[config->n_associations++] =
                (ConfigAssociate){ .own = steal_ptr(&o), .context = steal_ptr(&c), .loc = loc };
        return 0;
}

/* Moves @n_src elements of @size from *@src to the end of *@dst. */
static int array_move(void **dst, size_t *n_dst, void **src, size_t *n_src, size_t size) {
        int r;

        r = array_reserve(dst, *n_dst, *n_dst + *n_src, size);
        if (r < 0)
                return error_trace(r);
        if (*n_src)
                memcpy((char *)*dst + *n_dst * size, *src, *n_src * size);
        *n_dst += *n_src;
        free(*src);
        *src = NULL;
        *n_src = 0;
        return 0;
}

static void string_take(ConfigString *dst, ConfigString *src) {
        if (!src->value)
                return;
        free(dst->value);
        *dst = *src;
        *src = (ConfigString){};
}

static void flag_take(ConfigFlag *dst, const ConfigFlag *src) {
        if (src->set)
                *dst = *src;
}

/**
 * config_merge() - append everything of @src to @dst, as if @src's file were written at the
 * current end of @dst's; single-valued elements set in @src replace @dst's.
 * @dst:        the including configuration
 * @src:        the included one; emptied (not freed) on success
 *
 * On -ENOMEM both stay valid and freeable, @src possibly partly moved.
 *
 * Return: 0 or -ENOMEM.
 */
int config_merge(Config *dst, Config *src) {
        int r;

        /* the file names first, so no ConfigLoc ever points to a freed name */
        r = array_move((void **)&dst->files, &dst->n_files, (void **)&src->files, &src->n_files,
                       sizeof(char *));
        if (r < 0)
                return error_trace(r);
        r = array_move((void **)&dst->includedirs, &dst->n_includedirs,
                       (void **)&src->includedirs, &src->n_includedirs, sizeof(ConfigString));
        if (r < 0)
                return error_trace(r);
        r = array_move((void **)&dst->listen, &dst->n_listen, (void **)&src->listen,
                       &src->n_listen, sizeof(ConfigString));
        if (r < 0)
                return error_trace(r);
        r = array_move((void **)&dst->auth, &dst->n_auth, (void **)&src->auth, &src->n_auth,
                       sizeof(ConfigString));
        if (r < 0)
                return error_trace(r);
        r = array_move((void **)&dst->servicedirs, &dst->n_servicedirs,
                       (void **)&src->servicedirs, &src->n_servicedirs,
                       sizeof(ConfigServiceDir));
        if (r < 0)
                return error_trace(r);
        r = array_move((void **)&dst->policies, &dst->n_policies, (void **)&src->policies,
                       &src->n_policies, sizeof(ConfigPolicy));
        if (r < 0)
                return error_trace(r);
        r = array_move((void **)&dst->associations, &dst->n_associations,
                       (void **)&src->associations, &src->n_associations,
                       sizeof(ConfigAssociate));
        if (r < 0)
                return error_trace(r);

        string_take(&dst->type, &src->type);
        string_take(&dst->user, &src->user);
        string_take(&dst->pidfile, &src->pidfile);
        string_take(&dst->servicehelper, &src->servicehelper);
        flag_take(&dst->fork, &src->fork);
        flag_take(&dst->keep_umask, &src->keep_umask);
        flag_take(&dst->syslog, &src->syslog);
        flag_take(&dst->allow_anonymous, &src->allow_anonymous);
        for (size_t i = 0; i < _CONFIG_LIMIT_N; ++i)
                if (src->limits[i].set)
                        dst->limits[i] = src->limits[i];
        if (src->apparmor != CONFIG_APPARMOR_UNSET) {
                dst->apparmor = src->apparmor;
                dst->apparmor_loc = src->apparmor_loc;
        }
        return 0;
}

/* Dump helpers. */

static void dump_quoted(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else if (*p == '\t')
                        fputs("\\t", f);
                else if (*p < 0x20 || *p == 0x7f)
                        fprintf(f, "\\x%02x", *p);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
}

static void dump_end(FILE *f, unsigned flags, ConfigLoc loc) {
        if (flags & CONFIG_DUMP_LOCATIONS)
                fprintf(f, "  # %s:%u", loc.file ? loc.file : "?", loc.line);
        fputc('\n', f);
}

static void dump_string(FILE *f, unsigned flags, const char *key, const ConfigString *s) {
        if (!s->value)
                return;
        fprintf(f, "%s ", key);
        dump_quoted(f, s->value);
        dump_end(f, flags, s->loc);
}

static void dump_flag(FILE *f, unsigned flags, const char *key, const ConfigFlag *fl) {
        if (!fl->set)
                return;
        fputs(key, f);
        dump_end(f, flags, fl->loc);
}

static const char *message_type_to_string(ConfigMessageType t) {
        switch (t) {
        case CONFIG_MESSAGE_ANY:           return "*";
        case CONFIG_MESSAGE_METHOD_CALL:   return "method_call";
        case CONFIG_MESSAGE_METHOD_RETURN: return "method_return";
        case CONFIG_MESSAGE_ERROR:         return "error";
        case CONFIG_MESSAGE_SIGNAL:        return "signal";
        default:                           return NULL;
        }
}

static void dump_tristate(FILE *f, const char *key, ConfigTristate t) {
        if (t != CONFIG_UNSET)
                fprintf(f, " %s=\"%s\"", key, t == CONFIG_TRUE ? "true" : "false");
}

static void dump_rule(FILE *f, unsigned flags, const ConfigRule *rule) {
        static const char *const kinds[] = {
                [CONFIG_RULE_SEND] = "send", [CONFIG_RULE_RECEIVE] = "receive",
                [CONFIG_RULE_OWN] = "own",
                [CONFIG_RULE_USER] = "user", [CONFIG_RULE_GROUP] = "group",
        };

        fprintf(f, "  %s %s", rule->allow ? "allow" : "deny", kinds[rule->kind]);
        for (size_t i = 0; i < _CONFIG_ATTR_N; ++i) {
                if (!rule->str[i])
                        continue;
                fprintf(f, " %s=", attr_names[i]);
                dump_quoted(f, rule->str[i]);
        }
        if (rule->send_type != CONFIG_MESSAGE_UNSET)
                fprintf(f, " send_type=\"%s\"", message_type_to_string(rule->send_type));
        if (rule->receive_type != CONFIG_MESSAGE_UNSET)
                fprintf(f, " receive_type=\"%s\"", message_type_to_string(rule->receive_type));
        dump_tristate(f, "send_requested_reply", rule->send_requested_reply);
        dump_tristate(f, "receive_requested_reply", rule->receive_requested_reply);
        dump_tristate(f, "send_broadcast", rule->send_broadcast);
        dump_tristate(f, "eavesdrop", rule->eavesdrop);
        if (rule->has_min_fds)
                fprintf(f, " min_fds=%u", rule->min_fds);
        if (rule->has_max_fds)
                fprintf(f, " max_fds=%u", rule->max_fds);
        dump_tristate(f, "log", rule->log);
        dump_end(f, flags, rule->loc);
}

static void dump_policy(FILE *f, unsigned flags, const ConfigPolicy *p) {
        switch (p->kind) {
        case CONFIG_POLICY_DEFAULT:
                fputs("policy context=\"default\"", f);
                break;
        case CONFIG_POLICY_MANDATORY:
                fputs("policy context=\"mandatory\"", f);
                break;
        case CONFIG_POLICY_USER:
                fputs("policy user=", f);
                dump_quoted(f, p->name);
                break;
        case CONFIG_POLICY_GROUP:
                fputs("policy group=", f);
                dump_quoted(f, p->name);
                break;
        case CONFIG_POLICY_AT_CONSOLE:
                fprintf(f, "policy at_console=\"%s\"", p->at_console ? "true" : "false");
                break;
        }
        dump_end(f, flags, p->loc);
        for (size_t i = 0; i < p->n_rules; ++i)
                dump_rule(f, flags, &p->rules[i]);
}

/**
 * config_dump_to_file() - print @config canonically
 * @config:     the configuration
 * @flags:      CONFIG_DUMP_LOCATIONS or 0
 * @f:          where to
 *
 * Return: 0, or -EIO if writing failed.
 */
int config_dump_to_file(const Config *config, unsigned flags, FILE *f) {
        static const char *const apparmor[] = {
                [CONFIG_APPARMOR_ENABLED] = "enabled",
                [CONFIG_APPARMOR_DISABLED] = "disabled",
                [CONFIG_APPARMOR_REQUIRED] = "required",
        };
        size_t i;

        dump_string(f, flags, "type", &config->type);
        dump_string(f, flags, "user", &config->user);
        dump_flag(f, flags, "fork", &config->fork);
        dump_flag(f, flags, "keep_umask", &config->keep_umask);
        dump_flag(f, flags, "syslog", &config->syslog);
        dump_flag(f, flags, "allow_anonymous", &config->allow_anonymous);
        dump_string(f, flags, "pidfile", &config->pidfile);
        dump_string(f, flags, "servicehelper", &config->servicehelper);
        for (i = 0; i < config->n_listen; ++i)
                dump_string(f, flags, "listen", &config->listen[i]);
        for (i = 0; i < config->n_auth; ++i)
                dump_string(f, flags, "auth", &config->auth[i]);
        for (i = 0; i < config->n_servicedirs; ++i) {
                const ConfigServiceDir *d = &config->servicedirs[i];

                switch (d->kind) {
                case CONFIG_SERVICEDIR_PATH:
                        fputs("servicedir ", f);
                        dump_quoted(f, d->path);
                        break;
                case CONFIG_SERVICEDIR_STANDARD_SESSION:
                        fputs("standard_session_servicedirs", f);
                        break;
                case CONFIG_SERVICEDIR_STANDARD_SYSTEM:
                        fputs("standard_system_servicedirs", f);
                        break;
                }
                dump_end(f, flags, d->loc);
        }
        for (i = 0; i < _CONFIG_LIMIT_N; ++i) {
                if (!config->limits[i].set)
                        continue;
                fprintf(f, "limit %s %llu", limit_names[i],
                        (unsigned long long)config->limits[i].value);
                dump_end(f, flags, config->limits[i].loc);
        }
        for (i = 0; i < config->n_associations; ++i) {
                fputs("selinux associate own=", f);
                dump_quoted(f, config->associations[i].own);
                fputs(" context=", f);
                dump_quoted(f, config->associations[i].context);
                dump_end(f, flags, config->associations[i].loc);
        }
        if (config->apparmor != CONFIG_APPARMOR_UNSET) {
                fprintf(f, "apparmor mode=\"%s\"", apparmor[config->apparmor]);
                dump_end(f, flags, config->apparmor_loc);
        }
        for (i = 0; i < config->n_policies; ++i)
                dump_policy(f, flags, &config->policies[i]);

        if (fflush(f) != 0 || ferror(f))
                return error_origin(-EIO);
        return 0;
}

/*
 * config_dump() writes through fopencookie() into its own buffer rather than open_memstream():
 * glibc's memstream loses (and leaks) the whole buffer when the final shrinking realloc() at
 * fclose() fails, and still reports success.
 */
typedef struct DumpBuf {
        char *buf;
        size_t n;
        size_t cap;
        bool oom;
} DumpBuf;

static int dump_buf_reserve(DumpBuf *b, size_t more) {
        size_t cap = b->cap ? b->cap : 4096;
        char *p;

        if (b->n + more < b->n)
                return -ENOMEM;
        while (cap < b->n + more) {
                if (cap > SIZE_MAX / 2)
                        return -ENOMEM;
                cap *= 2;
        }
        if (cap == b->cap)
                return 0;
        p = realloc(b->buf, cap);
        if (!p)
                return -ENOMEM;
        b->buf = p;
        b->cap = cap;
        return 0;
}

static ssize_t dump_buf_write(void *cookie, const char *data, size_t size) {
        DumpBuf *b = cookie;

        if (dump_buf_reserve(b, size + 1) < 0) {
                b->oom = true;
                return -1;
        }
        memcpy(b->buf + b->n, data, size);
        b->n += size;
        b->buf[b->n] = 0;
        return (ssize_t)size;
}

/**
 * config_dump() - print @config canonically into a new string
 * @config:     the configuration
 * @flags:      CONFIG_DUMP_LOCATIONS or 0
 * @ret_text:   the NUL-terminated text, to free()
 *
 * Return: 0, -ENOMEM or -EIO.
 */
int config_dump(const Config *config, unsigned flags, char **ret_text) {
        static const cookie_io_functions_t io = { .write = dump_buf_write };
        DumpBuf b = {};
        FILE *f;
        int r;

        if (dump_buf_reserve(&b, 1) < 0)
                return error_origin(-ENOMEM);
        b.buf[0] = 0;
        f = fopencookie(&b, "w", io);
        if (!f) {
                free(b.buf);
                return error_origin(-ENOMEM);
        }
        r = config_dump_to_file(config, flags, f);
        if (fclose(f) != 0 && r == 0)
                r = -EIO;
        if (b.oom)
                r = -ENOMEM;
        if (r < 0) {
                free(b.buf);
                return error_origin(r);
        }
        *ret_text = b.buf;
        return 0;
}
