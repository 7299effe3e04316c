/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Message arguments on the command line, in busctl's syntax, both ways: tokens -> body
 * (ctl_args_append) and body -> text (ctl_print_body), so that what `kdbusctl call` prints
 * can be pasted back as arguments.
 *
 * Invariant of the parser: every value consumes at least one token (arrays their count,
 * variants their signature, structs are never empty), so an array count larger than the
 * remaining tokens is rejected at once and no input makes the parser loop or recurse beyond
 * the signature's own nesting plus one level per variant token.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "tools/kdbusctl.h"
#include "wire/names.h"
#include "wire/signature.h"

#define ARGS_MAX_DEPTH 64u

typedef struct ArgCursor {
        char *const *tokens;
        int n_tokens;
        int pos;
        CtlArgsError *err;
} ArgCursor;

_printf_(4, 5)
static int args_fail(ArgCursor *c, int code, int index, const char *fmt, ...) {
        va_list ap;

        if (c->err) {
                c->err->index = index;
                va_start(ap, fmt);
                vsnprintf(c->err->text, sizeof(c->err->text), fmt, ap);
                va_end(ap);
        }
        return code;
}

static const char *args_next(ArgCursor *c, const char *what, int *ret_index) {
        if (c->pos >= c->n_tokens)
                return NULL;
        (void) what;
        *ret_index = c->pos;
        return c->tokens[c->pos++];
}

static int args_missing(ArgCursor *c, const char *what) {
        return args_fail(c, CTL_ARGS_E_MISSING, c->pos,
                         "argument %d: missing %s (the signature needs more arguments)",
                         c->pos + 1, what);
}

static bool parse_signed(const char *s, int64_t min, int64_t max, int64_t *ret) {
        char *end;
        long long v;

        if (!*s)
                return false;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || *end || v < min || v > max)
                return false;
        *ret = v;
        return true;
}

static bool parse_unsigned(const char *s, uint64_t max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!*s || *s == '-' || *s == '+' || *s == ' ')
                return false;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || *end || v > max)
                return false;
        *ret = v;
        return true;
}

static bool parse_bool(const char *s, uint32_t *ret) {
        static const char *const yes[] = { "true", "yes", "on", "1" };
        static const char *const no[] = { "false", "no", "off", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); ++i) {
                if (!strcmp(s, yes[i])) {
                        *ret = 1;
                        return true;
                }
                if (!strcmp(s, no[i])) {
                        *ret = 0;
                        return true;
                }
        }
        return false;
}

/* A token for an error message: printable ASCII as is, other bytes as \xNN, shortened. */
static void escape_token(const char *tok, char *buf, size_t size) {
        size_t n = 0;

        for (const unsigned char *p = (const unsigned char *)tok; *p && n + 8 < size; ++p) {
                if (*p >= 0x20 && *p < 0x7f && *p != '\\')
                        buf[n++] = (char)*p;
                else
                        n += (size_t)snprintf(buf + n, size - n, "\\x%02x", *p);
        }
        if (tok[0] && n + 8 >= size && n + 4 < size)
                n += (size_t)snprintf(buf + n, size - n, "...");
        buf[n] = 0;
}

static const char *type_name(char t) {
        switch (t) {
        case 'y': return "byte (0..255)";
        case 'b': return "boolean (true/false)";
        case 'n': return "int16";
        case 'q': return "uint16";
        case 'i': return "int32";
        case 'u': return "uint32";
        case 'x': return "int64";
        case 't': return "uint64";
        case 'd': return "double";
        case 's': return "string (valid UTF-8)";
        case 'o': return "object path";
        case 'g': return "signature";
        default: return "value";
        }
}

static int append_basic(WireWriter *w, char t, ArgCursor *c) {
        union {
                uint8_t y;
                uint32_t b;
                int16_t n;
                uint16_t q;
                int32_t i;
                uint32_t u;
                int64_t x;
                uint64_t t;
                double d;
        } v;
        const void *p = &v;
        const char *tok;
        int64_t sv;
        uint64_t uv;
        bool ok = true;
        int index = 0, r;

        tok = args_next(c, type_name(t), &index);
        if (!tok)
                return args_missing(c, type_name(t));

        switch (t) {
        case 'y': ok = parse_unsigned(tok, UINT8_MAX, &uv); v.y = (uint8_t)uv; break;
        case 'b': ok = parse_bool(tok, &v.b); break;
        case 'n': ok = parse_signed(tok, INT16_MIN, INT16_MAX, &sv); v.n = (int16_t)sv; break;
        case 'q': ok = parse_unsigned(tok, UINT16_MAX, &uv); v.q = (uint16_t)uv; break;
        case 'i': ok = parse_signed(tok, INT32_MIN, INT32_MAX, &sv); v.i = (int32_t)sv; break;
        case 'u': ok = parse_unsigned(tok, UINT32_MAX, &uv); v.u = (uint32_t)uv; break;
        case 'x': ok = parse_signed(tok, INT64_MIN, INT64_MAX, &sv); v.x = sv; break;
        case 't': ok = parse_unsigned(tok, UINT64_MAX, &uv); v.t = uv; break;
        case 'd': {
                char *end;

                errno = 0;
                v.d = strtod(tok, &end);
                ok = *tok && !*end && !errno && !isnan(v.d);
                break;
        }
        case 's':
                ok = wire_utf8_is_valid(tok, strlen(tok));
                p = tok;
                break;
        case 'o':
                ok = wire_path_is_valid(tok, strlen(tok));
                p = tok;
                break;
        case 'g':
                ok = wire_signature_is_valid(tok, strlen(tok));
                p = tok;
                break;
        case 'h':
                return args_fail(c, CTL_ARGS_E_UNSUPPORTED, index,
                                 "argument %d: type 'h' (unix fd) is not supported: kdbusctl "
                                 "does not pass file descriptors", index + 1);
        default:
                return args_fail(c, CTL_ARGS_E_BAD_SIGNATURE, -1, "unknown type '%c'", t);
        }
        if (!ok) {
                char shown[64];

                escape_token(tok, shown, sizeof(shown));
                return args_fail(c, CTL_ARGS_E_BAD_VALUE, index,
                                 "argument %d: \"%s\" is not a valid %s", index + 1, shown,
                                 type_name(t));
        }
        r = wire_writer_append_basic(w, t, p);
        if (r < 0)
                return r;
        if (r)
                return args_fail(c, CTL_ARGS_E_BAD_VALUE, index, "argument %d: \"%s\": %s",
                                 index + 1, tok, wire_strerror(r));
        return 0;
}

static int append_value(WireWriter *w, const char *sig, ArgCursor *c, unsigned depth);

static int writer_result(ArgCursor *c, int r) {
        if (r < 0)
                return r;
        if (r)
                return args_fail(c, CTL_ARGS_E_BAD_VALUE, c->pos > 0 ? c->pos - 1 : 0,
                                 "argument %d: %s", c->pos, wire_strerror(r));
        return 0;
}

static int append_array(WireWriter *w, const char *sig, ArgCursor *c, unsigned depth) {
        char elem[WIRE_MAX_SIGNATURE_LEN + 1];
        size_t len = wire_signature_type_len(sig + 1);
        const char *tok;
        uint64_t count;
        int index = 0, r;

        memcpy(elem, sig + 1, len);
        elem[len] = 0;
        tok = args_next(c, "array length", &index);
        if (!tok)
                return args_missing(c, "array length");
        if (!parse_unsigned(tok, UINT32_MAX, &count))
                return args_fail(c, CTL_ARGS_E_BAD_VALUE, index,
                                 "argument %d: \"%s\" is not an array length (a%s: the number "
                                 "of elements comes first)", index + 1, tok, elem);
        if (count > (uint64_t)(c->n_tokens - c->pos))
                return args_fail(c, CTL_ARGS_E_MISSING, index,
                                 "argument %d: array of %" PRIu64 " elements, but only %d "
                                 "arguments follow", index + 1, count, c->n_tokens - c->pos);
        r = writer_result(c, wire_writer_open(w, 'a', elem));
        if (r)
                return r;
        for (uint64_t i = 0; i < count; ++i) {
                r = append_value(w, elem, c, depth + 1);
                if (r)
                        return r;
        }
        return writer_result(c, wire_writer_close(w));
}

static int append_variant(WireWriter *w, ArgCursor *c, unsigned depth) {
        const char *tok;
        int index = 0, r;

        tok = args_next(c, "variant signature", &index);
        if (!tok)
                return args_missing(c, "variant signature");
        if (!wire_signature_is_single(tok, strlen(tok)))
                return args_fail(c, CTL_ARGS_E_BAD_SIGNATURE, index,
                                 "argument %d: \"%s\" is not a single complete type (a variant "
                                 "is its signature, then its value)", index + 1, tok);
        r = writer_result(c, wire_writer_open(w, 'v', tok));
        if (r)
                return r;
        r = append_value(w, tok, c, depth + 1);
        if (r)
                return r;
        return writer_result(c, wire_writer_close(w));
}

static int append_struct(WireWriter *w, const char *sig, ArgCursor *c, unsigned depth) {
        size_t pos = 1;
        int r;

        r = writer_result(c, wire_writer_open(w, sig[0], NULL));
        if (r)
                return r;
        while (sig[pos] != ')' && sig[pos] != '}') {
                r = append_value(w, sig + pos, c, depth + 1);
                if (r)
                        return r;
                pos += wire_signature_type_len(sig + pos);
        }
        return writer_result(c, wire_writer_close(w));
}

static int append_value(WireWriter *w, const char *sig, ArgCursor *c, unsigned depth) {
        if (depth > ARGS_MAX_DEPTH)
                return args_fail(c, CTL_ARGS_E_BAD_VALUE, c->pos > 0 ? c->pos - 1 : 0,
                                 "argument %d: nesting deeper than %u levels", c->pos,
                                 ARGS_MAX_DEPTH);
        switch (sig[0]) {
        case 'a':
                return append_array(w, sig, c, depth);
        case 'v':
                return append_variant(w, c, depth);
        case '(':
        case '{':
                return append_struct(w, sig, c, depth);
        default:
                return append_basic(w, sig[0], c);
        }
}

/**
 * ctl_args_append() - append the values @tokens describe, typed by @signature, to @w
 * @ret_error:  on a positive return, which token (or the signature) is at fault, and why
 *
 * Return: 0, -ENOMEM, or CTL_ARGS_E_BAD_SIGNATURE, CTL_ARGS_E_MISSING, CTL_ARGS_E_BAD_VALUE,
 * CTL_ARGS_E_TRAILING, CTL_ARGS_E_UNSUPPORTED.
 */
int ctl_args_append(WireWriter *w, const char *signature, char *const *tokens, int n_tokens,
                    CtlArgsError *ret_error) {
        ArgCursor c = { .tokens = tokens, .n_tokens = n_tokens, .err = ret_error };
        size_t pos = 0, n = strlen(signature);
        int r;

        r = wire_signature_check(signature, n, false);
        if (r)
                return args_fail(&c, CTL_ARGS_E_BAD_SIGNATURE, -1,
                                 "signature \"%s\" is not valid: %s", signature, wire_strerror(r));
        while (pos < n) {
                r = append_value(w, signature + pos, &c, 0);
                if (r)
                        return r;
                pos += wire_signature_type_len(signature + pos);
        }
        if (c.pos < n_tokens)
                return args_fail(&c, CTL_ARGS_E_TRAILING, c.pos,
                                 "argument %d: \"%s\" is more than signature \"%s\" takes",
                                 c.pos + 1, tokens[c.pos], signature);
        return 0;
}

/**
 * ctl_print_string() - @s double-quoted, with quote, backslash and control bytes escaped
 */
void ctl_print_string(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
                switch (*p) {
                case '"': fputs("\\\"", f); break;
                case '\\': fputs("\\\\", f); break;
                case '\n': fputs("\\n", f); break;
                case '\t': fputs("\\t", f); break;
                case '\r': fputs("\\r", f); break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                fprintf(f, "\\x%02x", *p);
                        else
                                fputc(*p, f);
                }
        }
        fputc('"', f);
}

/**
 * ctl_print_value() - print the next value of @r (any type) in the argument syntax
 * Return: 0 or a WIRE_E_* code.
 */
int ctl_print_value(FILE *f, WireReader *r) {
        char t = wire_reader_peek(r);
        int k;

        switch (t) {
        case 'a': {
                WireReader copy = *r;
                unsigned long n = 0;

                k = wire_reader_enter(&copy, 'a', NULL);
                if (k)
                        return k;
                while (wire_reader_peek(&copy)) {
                        k = wire_reader_skip(&copy);
                        if (k)
                                return k;
                        ++n;
                }
                fprintf(f, "%lu", n);
                k = wire_reader_enter(r, 'a', NULL);
                if (k)
                        return k;
                while (wire_reader_peek(r)) {
                        fputc(' ', f);
                        k = ctl_print_value(f, r);
                        if (k)
                                return k;
                }
                return wire_reader_exit(r);
        }
        case 'v':
        case '(':
        case '{': {
                bool first = true;

                k = wire_reader_enter(r, t, NULL);
                if (k)
                        return k;
                if (t == 'v') {
                        const WireReaderFrame *fr = &r->stack[r->depth];

                        fprintf(f, "%.*s", (int)fr->sig_end, fr->sig);
                        first = false;
                }
                while (wire_reader_peek(r)) {
                        if (!first)
                                fputc(' ', f);
                        first = false;
                        k = ctl_print_value(f, r);
                        if (k)
                                return k;
                }
                return wire_reader_exit(r);
        }
        default: {
                union {
                        uint8_t y;
                        uint32_t u;
                        int16_t n;
                        uint16_t q;
                        int32_t i;
                        int64_t x;
                        uint64_t t;
                        double d;
                        const char *s;
                } v;

                k = wire_reader_read_basic(r, t, &v);
                if (k)
                        return k;
                switch (t) {
                case 'y': fprintf(f, "%u", v.y); break;
                case 'b': fputs(v.u ? "true" : "false", f); break;
                case 'n': fprintf(f, "%d", v.n); break;
                case 'q': fprintf(f, "%u", v.q); break;
                case 'i': fprintf(f, "%" PRId32, v.i); break;
                case 'u': case 'h': fprintf(f, "%" PRIu32, v.u); break;
                case 'x': fprintf(f, "%" PRId64, v.x); break;
                case 't': fprintf(f, "%" PRIu64, v.t); break;
                case 'd': fprintf(f, "%g", v.d); break;
                default: ctl_print_string(f, v.s); break;
                }
                return 0;
        }
        }
}

/**
 * ctl_print_body() - print the body of a validated message as "SIGNATURE VALUE...\n"
 *
 * Nothing is printed for an empty body. Return: 0, or a WIRE_E_* code if the reader and the
 * signature disagree (cannot happen for a message wire_message_parse() accepted).
 */
int ctl_print_body(FILE *f, const void *msg, const WireHeader *hdr) {
        WireReader r;
        int k;

        if (!hdr->signature[0])
                return 0;
        wire_reader_init(&r, msg, hdr);
        fputs(hdr->signature, f);
        while (wire_reader_peek(&r)) {
                fputc(' ', f);
                k = ctl_print_value(f, &r);
                if (k)
                        return k;
        }
        fputc('\n', f);
        return 0;
}
