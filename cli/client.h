/* client.h — a minimal blocking HTTP/1.1 client for the streamvisor API: one
 * request per TCP connection (Connection: close), bodies framed by
 * Content-Length, chunked transfer coding or the end of the connection, and
 * one deadline for the whole exchange. Used by the CLI (main.c) and the
 * integration test kit; it is the only HTTP client in the tree. https://
 * URLs speak TLS through GnuTLS (the library the server's HTTPS uses): the
 * server's certificate is verified against a CA file or the system's trust
 * store and must name the URL's host; a client certificate and key give
 * mTLS. No redirects, no keep-alive. thread: any (no shared state). */
#ifndef SV_CLIENT_H
#define SV_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

/* Default deadline of one request, connect to last byte. */
#define SV_CLIENT_TIMEOUT_MS 30000
/* Responses larger than this are refused (the API's bodies are far smaller;
 * this only bounds what a wrong server can make us allocate). */
#define SV_CLIENT_BODY_MAX (64u * 1024u * 1024u)

/* Where requests go. Embedded: sv_client_init / sv_client_release. */
typedef struct sv_client {
	char *host; /* name or address, IPv6 without brackets */
	int port;
	char *prefix; /* path prefix from the URL, "" or "/base" */
	int timeout_ms; /* deadline per request; <= 0: none */
	char *token; /* bearer token (Authorization header), or NULL; wiped
		      * on release */
	bool tls; /* https:// */
	char *ca_file; /* PEM CAs the server's certificate must verify
			* against; NULL: the system's trust store */
	char *cert_file, *key_file; /* client certificate (mTLS), or NULL */
	char *header; /* one more request header line "Name: value", or
		       * NULL (sv_client_set_header) */
} sv_client_t;

/* One response. Embedded: filled by sv_client_request, freed with
 * sv_client_resp_release. */
typedef struct sv_client_resp {
	int status; /* HTTP status code */
	char *body; /* the body, NUL-terminated; never NULL after a
			      * successful request (empty body: "") */
	size_t len; /* body bytes, without the NUL */
	char *content_type; /* Content-Type header value, or NULL */
} sv_client_resp_t;

/* Parse url, "http[s]://HOST[:PORT][/PREFIX]" (the scheme may be left
 * out: http; IPv6 hosts in brackets; port 80, or 443 for https, by
 * default) into cl, with the default timeout. url is borrowed. Returns a
 * SV_ERR_CONFIG error for a URL that cannot be used (another scheme, bad
 * port, empty host); cl is then empty but may still be released. */
sv_error_t *sv_client_init(sv_client_t *cl, const char *url);
void sv_client_release(sv_client_t *cl);

/* TLS material (copied; each may be NULL): the CA file that replaces the
 * system's trust store, and the client certificate and key for mTLS (both
 * or neither). Files are read at each request, so an unreadable one is an
 * error of the request naming the file. SV_ERR_CONFIG when only one of
 * cert_file and key_file is given, or when any is given for an http://
 * URL. */
sv_error_t *sv_client_set_tls(sv_client_t *cl, const char *ca_file,
			      const char *cert_file, const char *key_file);

/* Use token (copied) as the bearer token of every request; NULL: none. */
void sv_client_set_token(sv_client_t *cl, const char *token);
/* Send header ("Name: value", copied; no CR or LF) with every request;
 * NULL: none. */
void sv_client_set_header(sv_client_t *cl, const char *header);
/* Read a token from a file (the first line, surrounding blanks removed)
 * into a new string *out. The file should be readable only by its owner.
 * Errors: SV_ERR_CONFIG naming the file (never quoting its content). */
sv_error_t *sv_client_read_token_file(const char *path, char **out);

/* Send one request and read the whole response. path is appended to the
 * URL's prefix ("/v1/jobs?limit=3"); content_type may be NULL (no header);
 * body may be NULL (none; POST then sends Content-Length: 0). Everything is
 * borrowed. On success returns NULL and fills *resp whatever the HTTP status
 * is; an error (SV_ERR_RUNTIME, errno as the cause where there is one) means
 * no complete HTTP response arrived: cannot resolve or connect, timed out,
 * connection closed early, malformed or oversized response. */
sv_error_t *sv_client_request(const sv_client_t *cl, const char *method,
			      const char *path, const char *content_type,
			      const char *body, size_t len,
			      sv_client_resp_t *resp);

void sv_client_resp_release(sv_client_resp_t *resp);

#endif
