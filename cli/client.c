/* client.c — blocking HTTP/1.1 client (see client.h).
 *
 * One request per connection: resolve, connect with a non-blocking socket
 * and poll() so the connect honours the deadline too, write the request,
 * then read until the response is complete. The response is parsed from one
 * growing buffer: interim 1xx responses are skipped, the header block is
 * read up to its blank line, and the body is framed by the chunked transfer
 * coding, Content-Length, or the end of the connection (we always send
 * Connection: close), in that order of precedence as RFC 9112 §6.3 says.
 * Every wait is a poll() against one deadline for the whole exchange, so a
 * server that accepts and never answers costs at most the timeout. TLS sits
 * between the socket and that reader: a GnuTLS session on the non-blocking
 * socket, each GNUTLS_E_AGAIN waited for with the same poll() in the
 * direction GnuTLS asks, the handshake under the same deadline. */
#define _GNU_SOURCE
#include "cli/client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/util.h"

#ifndef SV_VERSION_STRING
#define SV_VERSION_STRING "0.0.0-unknown"
#endif

#define HEADER_MAX (64 * 1024)

/* ---- URL ---- */

sv_error_t *sv_client_init(sv_client_t *cl, const char *url)
{
	memset(cl, 0, sizeof(*cl));
	cl->timeout_ms = SV_CLIENT_TIMEOUT_MS;
	if (!url || !*url)
		return sv_error_new(SV_ERR_CONFIG, "empty server URL");
	const char *p = url;
	const char *scheme_end = strstr(url, "://");
	bool tls = false;
	if (scheme_end) {
		size_t n = (size_t)(scheme_end - url);
		tls = n == 5 && strncasecmp(url, "https", 5) == 0;
		if (!tls && (n != 4 || strncasecmp(url, "http", 4) != 0))
			return sv_error_new(
				SV_ERR_CONFIG,
				"unsupported scheme in server URL '%s': only "
				"http:// and https:// are supported",
				url);
		p = scheme_end + 3;
	}
	const char *hend;
	const char *host = p;
	size_t hlen;
	if (*p == '[') {
		const char *rb = strchr(p, ']');
		if (!rb)
			return sv_error_new(
				SV_ERR_CONFIG,
				"unterminated '[' in server URL '%s'", url);
		host = p + 1;
		hlen = (size_t)(rb - host);
		hend = rb + 1;
	} else {
		hlen = strcspn(p, ":/?#");
		hend = p + hlen;
	}
	if (hlen == 0)
		return sv_error_new(SV_ERR_CONFIG, "no host in server URL '%s'",
				    url);
	int port = tls ? 443 : 80;
	if (*hend == ':') {
		char *end;
		errno = 0;
		long v = strtol(hend + 1, &end, 10);
		if (end == hend + 1 || errno || v < 1 || v > 65535 ||
		    (*end && *end != '/'))
			return sv_error_new(SV_ERR_CONFIG,
					    "bad port in server URL '%s'", url);
		port = (int)v;
		hend = end;
	} else if (*hend && *hend != '/') {
		return sv_error_new(SV_ERR_CONFIG,
				    "unexpected '%c' in server URL '%s'", *hend,
				    url);
	}
	/* The prefix keeps no trailing slash: paths bring their own. */
	size_t plen = strlen(hend);
	while (plen > 0 && hend[plen - 1] == '/')
		plen--;
	cl->host = sv_strndup(host, hlen);
	cl->port = port;
	cl->prefix = sv_strndup(hend, plen);
	cl->tls = tls;
	return NULL;
}

sv_error_t *sv_client_set_tls(sv_client_t *cl, const char *ca_file,
			      const char *cert_file, const char *key_file)
{
	if (!cert_file != !key_file)
		return sv_error_new(SV_ERR_CONFIG,
				    "a client certificate needs its key and a "
				    "key its certificate: give both --cert "
				    "and --key");
	if (!cl->tls && (ca_file || cert_file))
		return sv_error_new(SV_ERR_CONFIG,
				    "TLS files given for a plain http:// "
				    "server URL: use https://");
	free(cl->ca_file);
	free(cl->cert_file);
	free(cl->key_file);
	cl->ca_file = ca_file ? sv_strdup(ca_file) : NULL;
	cl->cert_file = cert_file ? sv_strdup(cert_file) : NULL;
	cl->key_file = key_file ? sv_strdup(key_file) : NULL;
	return NULL;
}

void sv_client_set_token(sv_client_t *cl, const char *token)
{
	if (cl->token) {
		explicit_bzero(cl->token, strlen(cl->token));
		free(cl->token);
	}
	cl->token = token ? sv_strdup(token) : NULL;
}

void sv_client_set_header(sv_client_t *cl, const char *header)
{
	free(cl->header);
	cl->header = header && !strpbrk(header, "\r\n") ? sv_strdup(header)
							: NULL;
}

sv_error_t *sv_client_read_token_file(const char *path, char **out)
{
	*out = NULL;
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		return sv_error_set_cause(
			sv_error_new(SV_ERR_CONFIG,
				     "cannot read token file '%s': %s", path,
				     strerror(e)),
			e, strerror(e));
	}
	char line[4096];
	char *got = fgets(line, sizeof(line), f);
	fclose(f);
	size_t n = got ? strcspn(line, "\r\n") : 0;
	while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	size_t start = got ? strspn(line, " \t") : 0;
	if (!got || start >= n) {
		explicit_bzero(line, sizeof(line));
		return sv_error_new(SV_ERR_CONFIG, "token file '%s' is empty",
				    path);
	}
	*out = sv_strndup(line + start, n - start);
	explicit_bzero(line, sizeof(line));
	return NULL;
}

void sv_client_release(sv_client_t *cl)
{
	if (!cl)
		return;
	sv_client_set_token(cl, NULL);
	free(cl->header);
	free(cl->host);
	free(cl->prefix);
	free(cl->ca_file);
	free(cl->cert_file);
	free(cl->key_file);
	memset(cl, 0, sizeof(*cl));
}

void sv_client_resp_release(sv_client_resp_t *resp)
{
	if (!resp)
		return;
	free(resp->body);
	free(resp->content_type);
	memset(resp, 0, sizeof(*resp));
}

/* ---- one exchange ---- */

typedef struct conn {
	int fd;
	int64_t deadline; /* sv_mono_ms() value, or -1 for none */
	const char *where; /* "host:port" for messages */
	int timeout_ms;
	gnutls_session_t tls; /* NULL: plain TCP */
	gnutls_certificate_credentials_t cred;
} conn_t;

/* "cannot <doing> '<where>': <strerror>", errno code as the cause. */
static sv_error_t *errno_error(int code, const char *doing, const char *where)
{
	const char *why = strerror(code);
	sv_error_t *err = sv_error_new(SV_ERR_RUNTIME, "cannot %s '%s': %s",
				       doing, where, why);
	return sv_error_set_cause(err, code, why);
}

static sv_error_t *timeout_error(const conn_t *c, const char *doing)
{
	return sv_error_set_cause(
		sv_error_new(SV_ERR_RUNTIME,
			     "no answer from '%s' within %d ms (%s)", c->where,
			     c->timeout_ms, doing),
		ETIMEDOUT, strerror(ETIMEDOUT));
}

/* Wait until fd is ready for events. Returns 0, or -ETIMEDOUT / -errno. */
static int wait_fd(const conn_t *c, short events)
{
	for (;;) {
		int ms = -1;
		if (c->deadline >= 0) {
			int64_t left = c->deadline - sv_mono_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			ms = left > INT_MAX ? INT_MAX : (int)left;
		}
		struct pollfd pfd = {.fd = c->fd, .events = events};
		int r = poll(&pfd, 1, ms);
		if (r > 0)
			return 0; /* errors and hangups show in the next call */
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Connect to one resolved address within the deadline. Returns 0 or
 * -errno; c->fd is the socket on success. */
static int connect_one(conn_t *c, const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family,
			ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol);
	if (fd < 0)
		return -errno;
	c->fd = fd;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return 0;
	int e = errno;
	if (e == EINPROGRESS) {
		int w = wait_fd(c, POLLOUT);
		if (w == 0) {
			socklen_t sl = sizeof(e);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0)
				e = errno;
			if (e == 0)
				return 0;
		} else {
			e = -w;
		}
	}
	close(fd);
	c->fd = -1;
	return -e;
}

static sv_error_t *do_connect(conn_t *c, const sv_client_t *cl)
{
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", cl->port);
	struct addrinfo hints = {0}, *ai = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int gai = getaddrinfo(cl->host, portstr, &hints, &ai);
	if (gai != 0)
		return sv_error_set_cause(
			sv_error_new(SV_ERR_RUNTIME, "cannot resolve '%s': %s",
				     cl->host, gai_strerror(gai)),
			gai, gai_strerror(gai));
	int r = -ECONNREFUSED;
	for (const struct addrinfo *a = ai; a; a = a->ai_next)
		if ((r = connect_one(c, a)) == 0 || r == -ETIMEDOUT)
			break;
	freeaddrinfo(ai);
	if (r == -ETIMEDOUT)
		return timeout_error(c, "connecting");
	if (r < 0)
		return errno_error(-r, "connect to", c->where);
	return NULL;
}

/* ---- TLS ---- */

static sv_error_t *tls_error(const conn_t *c, const char *doing, int code)
{
	return sv_error_set_cause(sv_error_new(SV_ERR_RUNTIME,
					       "TLS %s '%s' failed: %s", doing,
					       c->where, gnutls_strerror(code)),
				  code, gnutls_strerror(code));
}

/* Wait for what the last GNUTLS_E_AGAIN was waiting for; the two texts as
 * for timeout_error and errno_error. */
static sv_error_t *tls_wait(const conn_t *c, const char *doing,
			    const char *doing_to)
{
	int w = wait_fd(c,
			gnutls_record_get_direction(c->tls) ? POLLOUT : POLLIN);
	if (w == -ETIMEDOUT)
		return timeout_error(c, doing);
	if (w < 0)
		return errno_error(-w, doing_to, c->where);
	return NULL;
}

static sv_error_t *tls_files(conn_t *c, const sv_client_t *cl)
{
	int r = gnutls_certificate_allocate_credentials(&c->cred);
	if (r < 0)
		return tls_error(c, "setup for", r);
	if (cl->ca_file) {
		r = gnutls_certificate_set_x509_trust_file(c->cred, cl->ca_file,
							   GNUTLS_X509_FMT_PEM);
		if (r <= 0)
			return sv_error_new(SV_ERR_CONFIG,
					    "cannot use CA file '%s': %s",
					    cl->ca_file,
					    r < 0 ? gnutls_strerror(r)
						  : "it holds no certificate");
	} else if ((r = gnutls_certificate_set_x509_system_trust(c->cred)) <
		   0) {
		return sv_error_new(SV_ERR_CONFIG,
				    "cannot load the system's trusted CAs: %s "
				    "(give a CA file)",
				    gnutls_strerror(r));
	}
	if (cl->cert_file &&
	    (r = gnutls_certificate_set_x509_key_file(c->cred, cl->cert_file,
						      cl->key_file,
						      GNUTLS_X509_FMT_PEM)) < 0)
		return sv_error_new(SV_ERR_CONFIG,
				    "cannot use client certificate '%s' with "
				    "key '%s': %s",
				    cl->cert_file, cl->key_file,
				    gnutls_strerror(r));
	return NULL;
}

/* GnuTLS's writes, without SIGPIPE when the server has closed (a refused
 * client certificate): the error comes back as EPIPE instead. */
static ssize_t push_nosignal(gnutls_transport_ptr_t fd, const void *data,
			     size_t len)
{
	return send((int)(intptr_t)fd, data, len, MSG_NOSIGNAL);
}

/* The handshake (after tls_files), under the exchange's deadline; the
 * server's certificate must verify and name cl->host (a DNS name or an IP
 * address). */
static sv_error_t *tls_start(conn_t *c, const sv_client_t *cl)
{
	sv_error_t *err;
	int r = gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
	if (r < 0) {
		c->tls = NULL;
		return tls_error(c, "setup for", r);
	}
	if ((r = gnutls_set_default_priority(c->tls)) < 0 ||
	    (r = gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE,
					c->cred)) < 0)
		return tls_error(c, "setup for", r);
	unsigned char ip[16];
	bool is_ip = inet_pton(AF_INET, cl->host, ip) == 1 ||
		inet_pton(AF_INET6, cl->host, ip) == 1;
	if (!is_ip &&
	    (r = gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, cl->host,
					strlen(cl->host))) < 0)
		return tls_error(c, "setup for", r);
	gnutls_session_set_verify_cert(c->tls, cl->host, 0);
	gnutls_transport_set_int(c->tls, c->fd);
	gnutls_transport_set_push_function(c->tls, push_nosignal);
	while ((r = gnutls_handshake(c->tls)) < 0) {
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
			if ((err = tls_wait(c, "the TLS handshake",
					    "complete a TLS handshake with")))
				return err;
			continue;
		}
		if (!gnutls_error_is_fatal(r))
			continue;
		if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
			gnutls_datum_t why = {0};
			unsigned st = gnutls_session_get_verify_cert_status(
				c->tls);
			gnutls_certificate_verification_status_print(
				st, GNUTLS_CRT_X509, &why, 0);
			err = sv_error_new(SV_ERR_RUNTIME,
					   "the server certificate of '%s' is "
					   "not trusted for '%s': %s",
					   c->where, cl->host,
					   why.data ? (char *)why.data : "?");
			gnutls_free(why.data);
			return sv_error_set_cause(err, r, gnutls_strerror(r));
		}
		if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
			const char *alert = gnutls_alert_get_name(
				gnutls_alert_get(c->tls));
			return sv_error_set_cause(
				sv_error_new(SV_ERR_RUNTIME,
					     "TLS handshake with '%s' refused "
					     "by the server: %s (does it want "
					     "a client certificate: --cert "
					     "and --key?)",
					     c->where, alert ? alert : "?"),
				r, gnutls_strerror(r));
		}
		return tls_error(c, "handshake with", r);
	}
	return NULL;
}

static void tls_end(conn_t *c)
{
	if (c->tls) {
		gnutls_bye(c->tls, GNUTLS_SHUT_WR); /* best effort */
		gnutls_deinit(c->tls);
	}
	if (c->cred)
		gnutls_certificate_free_credentials(c->cred);
	c->tls = NULL;
	c->cred = NULL;
}

static sv_error_t *tls_send_all(conn_t *c, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = gnutls_record_send(c->tls, p, n);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) {
			sv_error_t *err = tls_wait(c, "sending the request",
						   "send to");
			if (err)
				return err;
		} else {
			return tls_error(c, "send to", (int)w);
		}
	}
	return NULL;
}

/* Like recv(): > 0 bytes, 0 at the end, -1 with errno for the socket's
 * errors; TLS errors are returned in *err. */
static ssize_t tls_recv(conn_t *c, char *buf, size_t n, sv_error_t **err)
{
	for (;;) {
		ssize_t r = gnutls_record_recv(c->tls, buf, n);
		if (r >= 0)
			return r;
		/* a server that closes after its answer without close_notify:
		 * the body's framing tells whether anything was cut */
		if (r == GNUTLS_E_PREMATURE_TERMINATION)
			return 0;
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
			if ((*err = tls_wait(c, "reading the response",
					     "read from")))
				return -1;
			continue;
		}
		*err = tls_error(c, "read from", (int)r);
		return -1;
	}
}

static sv_error_t *send_all(conn_t *c, const char *p, size_t n)
{
	if (c->tls)
		return tls_send_all(c, p, n);
	while (n > 0) {
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = wait_fd(c, POLLOUT);
			if (r == -ETIMEDOUT)
				return timeout_error(c, "sending the request");
			if (r < 0)
				return errno_error(-r, "send to", c->where);
			continue;
		}
		return errno_error(w < 0 ? errno : EPIPE, "send to", c->where);
	}
	return NULL;
}

/* Read more bytes into in. *eof is set at the end of the connection. */
static sv_error_t *fill(conn_t *c, sv_buf_t *in, bool *eof)
{
	for (;;) {
		sv_buf_reserve(in, 16384);
		sv_error_t *err = NULL;
		ssize_t r = c->tls ? tls_recv(c, in->data + in->len,
					      in->cap - in->len - 1, &err)
				   : recv(c->fd, in->data + in->len,
					  in->cap - in->len - 1, 0);
		if (err)
			return err;
		if (r > 0) {
			in->len += (size_t)r;
			in->data[in->len] = '\0';
			if (in->len > SV_CLIENT_BODY_MAX + HEADER_MAX)
				return sv_error_new(
					SV_ERR_RUNTIME,
					"response from '%s' is larger than %u "
					"bytes",
					c->where, SV_CLIENT_BODY_MAX);
			return NULL;
		}
		if (r == 0) {
			*eof = true;
			return NULL;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int w = wait_fd(c, POLLIN);
			if (w == -ETIMEDOUT)
				return timeout_error(c, "reading the response");
			if (w < 0)
				return errno_error(-w, "read from", c->where);
			continue;
		}
		return errno_error(errno, "read from", c->where);
	}
}

static sv_error_t *malformed(const conn_t *c, const char *what)
{
	return sv_error_new(SV_ERR_RUNTIME,
			    "malformed HTTP response from "
			    "'%s': %s",
			    c->where, what);
}

static sv_error_t *truncated(const conn_t *c)
{
	return sv_error_new(SV_ERR_RUNTIME,
			    "connection to '%s' closed "
			    "before the response was complete",
			    c->where);
}

/* Find "\r\n" in in from off; reads more until found. *line_end is its
 * offset. */
static sv_error_t *need_line(conn_t *c, sv_buf_t *in, size_t off,
			     size_t *line_end)
{
	for (;;) {
		if (in->len > off) {
			const char *nl = memmem(in->data + off, in->len - off,
						"\r\n", 2);
			if (nl) {
				*line_end = (size_t)(nl - in->data);
				return NULL;
			}
		}
		if (in->len - off > HEADER_MAX)
			return malformed(c, "line too long");
		bool eof = false;
		sv_error_t *err = fill(c, in, &eof);
		if (err)
			return err;
		if (eof)
			return truncated(c);
	}
}

/* Make sure in holds at least off + n bytes. */
static sv_error_t *need_bytes(conn_t *c, sv_buf_t *in, size_t off, size_t n)
{
	while (in->len < off + n) {
		bool eof = false;
		sv_error_t *err = fill(c, in, &eof);
		if (err)
			return err;
		if (eof)
			return truncated(c);
	}
	return NULL;
}

typedef struct head {
	int status;
	bool chunked;
	long long content_length; /* -1: none */
	char *content_type;
	size_t body_off; /* where the body starts in the buffer */
} head_t;

/* Whether header line [p, end) is "name: value"; *value points past the
 * colon and blanks. */
static bool header_is(const char *p, const char *end, const char *name,
		      const char **value)
{
	size_t n = strlen(name);
	if ((size_t)(end - p) <= n || strncasecmp(p, name, n) != 0 ||
	    p[n] != ':')
		return false;
	p += n + 1;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	*value = p;
	return true;
}

/* Parse one header block starting at off (which must be complete: ends
 * with an empty line at blank). */
static sv_error_t *parse_head(const conn_t *c, const sv_buf_t *in, size_t off,
			      size_t blank, head_t *h)
{
	const char *p = in->data + off, *end = in->data + blank;
	const char *eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
	int major = 0, minor = 0, status = 0, used = 0;
	if (sscanf(p, "HTTP/%d.%d %3d%n", &major, &minor, &status, &used) !=
		    3 ||
	    major != 1 || status < 100 || status > 999 || p + used > eol)
		return malformed(c, "no HTTP/1.x status line");
	h->status = status;
	h->chunked = false;
	h->content_length = -1;
	free(h->content_type);
	h->content_type = NULL;
	for (p = eol + 2; p < end; p = eol + 2) {
		eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
		const char *v;
		if (header_is(p, eol, "Transfer-Encoding", &v)) {
			/* chunked must be the last coding; it is the only
			 * one we accept */
			const char *tail = eol;
			while (tail > v &&
			       (tail[-1] == ' ' || tail[-1] == '\t'))
				tail--;
			if (tail - v >= 7 &&
			    strncasecmp(tail - 7, "chunked", 7) == 0)
				h->chunked = true;
			else
				return malformed(c,
						 "unsupported transfer coding");
		} else if (header_is(p, eol, "Content-Length", &v)) {
			char *e;
			errno = 0;
			long long n = strtoll(v, &e, 10);
			while (e < eol && (*e == ' ' || *e == '\t'))
				e++;
			if (e == v || e != eol || errno || n < 0 ||
			    (h->content_length >= 0 && h->content_length != n))
				return malformed(c, "bad Content-Length");
			h->content_length = n;
		} else if (header_is(p, eol, "Content-Type", &v)) {
			h->content_type = sv_strndup(v, (size_t)(eol - v));
		}
	}
	h->body_off = blank + 4;
	return NULL;
}

/* Read the header block of the final (non-1xx) response. */
static sv_error_t *read_head(conn_t *c, sv_buf_t *in, head_t *h)
{
	size_t off = 0;
	for (;;) {
		const char *blank = NULL;
		while (!(blank = in->len > off
				 ? memmem(in->data + off, in->len - off,
					  "\r\n\r\n", 4)
				 : NULL)) {
			if (in->len - off > HEADER_MAX)
				return malformed(c, "header block too large");
			bool eof = false;
			sv_error_t *err = fill(c, in, &eof);
			if (err)
				return err;
			if (eof)
				return in->len == off
					? sv_error_new(
						  SV_ERR_RUNTIME,
						  "'%s' closed the connection "
						  "without answering%s",
						  c->where,
						  /* TLS 1.3 refuses a missing
						   * or foreign client
						   * certificate after the
						   * handshake */
						  c->tls ? " (over TLS: does "
							   "it want a client "
							   "certificate, "
							   "--cert and --key?)"
							 : "")
					: truncated(c);
		}
		sv_error_t *err = parse_head(c, in, off,
					     (size_t)(blank - in->data), h);
		if (err)
			return err;
		if (h->status >= 200)
			return NULL;
		off = h->body_off; /* 1xx: interim, no body, another follows */
	}
}

static sv_error_t *read_chunked(conn_t *c, sv_buf_t *in, size_t off,
				sv_buf_t *out)
{
	for (;;) {
		size_t eol;
		sv_error_t *err = need_line(c, in, off, &eol);
		if (err)
			return err;
		const char *p = in->data + off;
		char *e;
		errno = 0;
		unsigned long long n = strtoull(p, &e, 16);
		if (e == p || errno ||
		    (*e != ';' && *e != ' ' && *e != '\t' && *e != '\r'))
			return malformed(c, "bad chunk size");
		if (n > SV_CLIENT_BODY_MAX || out->len + n > SV_CLIENT_BODY_MAX)
			return sv_error_new(
				SV_ERR_RUNTIME,
				"response from '%s' is larger than %u bytes",
				c->where, SV_CLIENT_BODY_MAX);
		off = eol + 2;
		if (n == 0) {
			/* trailer fields, then the empty line */
			for (;;) {
				if ((err = need_line(c, in, off, &eol)))
					return err;
				bool last = eol == off;
				off = eol + 2;
				if (last)
					return NULL;
			}
		}
		if ((err = need_bytes(c, in, off, (size_t)n + 2)))
			return err;
		if (memcmp(in->data + off + n, "\r\n", 2) != 0)
			return malformed(c, "chunk not followed by CRLF");
		sv_buf_append(out, in->data + off, (size_t)n);
		off += (size_t)n + 2;
	}
}

sv_error_t *sv_client_request(const sv_client_t *cl, const char *method,
			      const char *path, const char *content_type,
			      const char *body, size_t len,
			      sv_client_resp_t *resp)
{
	memset(resp, 0, sizeof(*resp));
	char where[300];
	if (strchr(cl->host, ':'))
		snprintf(where, sizeof(where), "[%s]:%d", cl->host, cl->port);
	else
		snprintf(where, sizeof(where), "%s:%d", cl->host, cl->port);
	conn_t c = {.fd = -1,
		    .where = where,
		    .timeout_ms = cl->timeout_ms,
		    .deadline = cl->timeout_ms > 0
			    ? sv_mono_ms() + cl->timeout_ms
			    : -1};

	sv_buf_t req, in, out;
	sv_buf_init(&req);
	sv_buf_init(&in);
	sv_buf_init(&out);
	head_t h = {0};
	/* the TLS files first: a bad one is named whatever the server does */
	sv_error_t *err = cl->tls ? tls_files(&c, cl) : NULL;
	if (!err)
		err = do_connect(&c, cl);
	if (!err && cl->tls)
		err = tls_start(&c, cl);
	if (err)
		goto out;

	sv_buf_printf(&req,
		      "%s %s%s HTTP/1.1\r\nHost: %s\r\n"
		      "User-Agent: streamvisor/%s\r\nAccept: */*\r\n"
		      "Connection: close\r\n",
		      method, cl->prefix ? cl->prefix : "", path, where,
		      SV_VERSION_STRING);
	if (content_type)
		sv_buf_printf(&req, "Content-Type: %s\r\n", content_type);
	if (cl->token)
		sv_buf_printf(&req, "Authorization: Bearer %s\r\n", cl->token);
	if (cl->header)
		sv_buf_printf(&req, "%s\r\n", cl->header);
	bool sends_body = body || !strcmp(method, "POST") ||
		!strcmp(method, "PUT") || !strcmp(method, "PATCH");
	if (sends_body)
		sv_buf_printf(&req, "Content-Length: %zu\r\n",
			      body ? len : (size_t)0);
	sv_buf_puts(&req, "\r\n");
	if ((err = send_all(&c, req.data, req.len)) ||
	    (body && len && (err = send_all(&c, body, len))))
		goto out;

	if ((err = read_head(&c, &in, &h)))
		goto out;
	bool bodyless = !strcmp(method, "HEAD") || h.status == 204 ||
		h.status == 304;
	if (bodyless) {
		/* nothing to read */
	} else if (h.chunked) {
		if ((err = read_chunked(&c, &in, h.body_off, &out)))
			goto out;
	} else if (h.content_length >= 0) {
		if ((unsigned long long)h.content_length > SV_CLIENT_BODY_MAX) {
			err = sv_error_new(SV_ERR_RUNTIME,
					   "response from '%s' "
					   "is larger than %u bytes",
					   where, SV_CLIENT_BODY_MAX);
			goto out;
		}
		if ((err = need_bytes(&c, &in, h.body_off,
				      (size_t)h.content_length)))
			goto out;
		sv_buf_append(&out, in.data + h.body_off,
			      (size_t)h.content_length);
	} else {
		/* delimited by the end of the connection */
		bool eof = false;
		while (!eof && !(err = fill(&c, &in, &eof)))
			;
		if (err)
			goto out;
		sv_buf_append(&out, in.data + h.body_off, in.len - h.body_off);
	}
	resp->status = h.status;
	resp->len = out.len;
	resp->body = sv_buf_detach(&out);
	resp->content_type = h.content_type;
	h.content_type = NULL;
out:
	tls_end(&c);
	if (c.fd >= 0)
		close(c.fd);
	free(h.content_type);
	sv_buf_release(&req);
	sv_buf_release(&in);
	sv_buf_release(&out);
	return err;
}
