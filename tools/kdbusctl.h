/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * kdbusctl: a command-line client for any D-Bus bus (kdbusd, dbus-daemon, dbus-broker).
 *
 * It speaks the wire protocol through our own wire/ layer over a plain blocking socket
 * (CtlConn), not through sd-bus: `monitor --pcap` must store every message exactly as the bus
 * sent it, and sd-bus offers no public way to get a received message's bytes. One connection
 * type then serves every command, and every message kdbusctl receives passes wire/'s
 * validator before it is printed.
 *
 * Exit codes (CTL_EXIT_*): 0 success, 1 the bus or the peer answered with an error or the
 * operation failed, 2 bad command line (options, signature, arguments), 3 cannot connect to or
 * authenticate with the bus. Every error message names the address or peer at fault.
 */
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "util/macro.h"
#include "wire/message.h"
#include "wire/reader.h"
#include "wire/writer.h"

enum {
        CTL_EXIT_OK = 0,
        CTL_EXIT_FAILED = 1,
        CTL_EXIT_USAGE = 2,
        CTL_EXIT_CONNECT = 3,
};

#define CTL_DEFAULT_TIMEOUT_MS 25000

/* One received message: @data is malloc()ed and owned, @hdr points into it. */
typedef struct CtlMsg {
        uint8_t *data;
        size_t size;
        WireHeader hdr;
} CtlMsg;

#define CTL_MSG_NULL(x) { .data = NULL }
void ctl_msg_deinit(CtlMsg *m);

/*
 * A client connection: authenticated with EXTERNAL, Hello done. @address is the entry that
 * was connected to, used in every error message about this bus.
 */
typedef struct CtlConn {
        int fd;
        char *address;
        char *unique_name;
        uint32_t serial;
        bool lenient_fds;               /* monitors see UNIX_FDS fields without the fds */
        bool has_sigmask;               /* wait with @sigmask; -EINTR is returned, not retried */
        sigset_t sigmask;
        uint8_t *in;
        size_t in_size;
        size_t in_alloc;
} CtlConn;

/* Resolve --address/--session/--system (exactly one may be set) into a bus address. */
int ctl_address_resolve(const char *address, bool session, bool system, char **ret_address);

/*
 * Parse one entry of a D-Bus address ("unix:path=/x,guid=..." or "unix:abstract=y") into a
 * sockaddr path. Return: 0, CTL_ADDR_E_* (positive) for malformed or unsupported entries.
 */
enum {
        _CTL_ADDR_E_SUCCESS,
        CTL_ADDR_E_TRANSPORT,           /* not unix: */
        CTL_ADDR_E_SYNTAX,              /* missing '=', bad %-escape */
        CTL_ADDR_E_NO_PATH,             /* no path= / abstract= key */
        CTL_ADDR_E_TOO_LONG,            /* does not fit sockaddr_un */
};
int ctl_address_parse_entry(const char *entry, char *ret_path, size_t path_size,
                            bool *ret_abstract);

int ctl_conn_open(const char *address, CtlConn **ret_conn);
CtlConn *ctl_conn_free(CtlConn *c);
static inline void ctl_conn_freep(CtlConn **c) {
        if (*c)
                ctl_conn_free(*c);
}

/* Send one message; @spec->serial is assigned. Return: 0 or negative errno (reported). */
int ctl_conn_send(CtlConn *c, WireMsgSpec *spec, const WireWriter *body);
/* Receive the next message, waiting up to @timeout_ms (-1: forever). Return 0, -ETIMEDOUT,
 * -ECONNRESET when the bus hung up, -EBADMSG for a malformed message (reported), -errno. */
int ctl_conn_recv(CtlConn *c, int timeout_ms, CtlMsg *ret);
/*
 * Call a method and wait for its reply (other messages are dropped). @body may be NULL.
 * The reply may be an error message: check ret->hdr.type. Return: 0 or negative errno.
 */
int ctl_conn_call(CtlConn *c, const char *dest, const char *path, const char *iface,
                  const char *member, const WireWriter *body, int timeout_ms, CtlMsg *ret);
/* Wait for the reply to @call (sent with ctl_conn_send()); other messages are dropped. */
int ctl_conn_wait_reply(CtlConn *c, const WireMsgSpec *call, int timeout_ms, CtlMsg *ret);
/* Convenience for the driver: one string argument (or none if @arg is NULL). */
int ctl_conn_call_driver(CtlConn *c, const char *iface, const char *member, const char *arg,
                         CtlMsg *ret);
/* The error text of an error reply: "Name: first string argument". Static buffer. */
const char *ctl_msg_error_text(const CtlMsg *m);

/*
 * Arguments in busctl's syntax: a signature, then one token per basic value; an array is
 * its element count followed by the elements; a variant is its signature followed by the
 * value; structs and dict entries are their fields in order. Booleans: true/false/yes/no/
 * on/off/1/0.
 */
enum {
        _CTL_ARGS_E_SUCCESS,
        CTL_ARGS_E_BAD_SIGNATURE,       /* the signature (or a variant's) is not valid */
        CTL_ARGS_E_MISSING,             /* fewer tokens than the signature needs */
        CTL_ARGS_E_BAD_VALUE,           /* a token is not a valid value of its type */
        CTL_ARGS_E_TRAILING,            /* more tokens than the signature takes */
        CTL_ARGS_E_UNSUPPORTED,         /* 'h': kdbusctl does not pass file descriptors */
};

typedef struct CtlArgsError {
        int index;                      /* index into the token array, -1: the signature */
        char text[256];
} CtlArgsError;

int ctl_args_append(WireWriter *w, const char *signature, char *const *tokens, int n_tokens,
                    CtlArgsError *ret_error);

/* Print a validated message's body in the same syntax ("as 2 \"a\" \"b\""), then '\n'. */
int ctl_print_body(FILE *f, const void *msg, const WireHeader *hdr);
/* Print the next value of @r (a variant as its signature, then its value). */
int ctl_print_value(FILE *f, WireReader *r);
/* Print a C-escaped, double-quoted string. */
void ctl_print_string(FILE *f, const char *s);

/* pcap with LINKTYPE_DBUS (231): each record is one whole message, as on the wire. */
#define CTL_PCAP_LINKTYPE_DBUS 231u
int ctl_pcap_write_header(FILE *f);
int ctl_pcap_write_record(FILE *f, const void *data, size_t size, uint64_t usec);

/* Commands: each returns a CTL_EXIT_* code; argv[0] is the command name. */
typedef struct CtlOptions {
        const char *address;
        int timeout_ms;
        bool quiet;
} CtlOptions;

int ctl_cmd_list(const CtlOptions *o, int argc, char **argv);
int ctl_cmd_status(const CtlOptions *o, int argc, char **argv);
int ctl_cmd_call(const CtlOptions *o, int argc, char **argv);
int ctl_cmd_monitor(const CtlOptions *o, int argc, char **argv);
int ctl_cmd_endpoint(const CtlOptions *o, int argc, char **argv);
int ctl_cmd_busmake(const CtlOptions *o, int argc, char **argv);

/* kdbusctl-hold.c: keep a bus-make / endpoint handle until a signal, the bus's hangup or EOF */
int ctl_hold_signals(const char *tool);
void ctl_hold_until_done(int signal_fd, int handle_fd, bool use_stdin);

/* Shared by list and status: pid, uid and comm of a connection ("-" when unknown). */
typedef struct CtlPeerInfo {
        char owner[256];
        int64_t pid;                    /* -1 unknown */
        int64_t uid;
        char comm[64];
} CtlPeerInfo;
int ctl_peer_info(CtlConn *c, const char *name, CtlPeerInfo *ret);
