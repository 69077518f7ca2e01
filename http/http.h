/* http.h — the HTTP API (DESIGN.md §5) on libmicrohttpd. The only file that
 * includes microhttpd.h is http.c. Handlers only route and translate: every
 * request becomes a call into supervisor.h. */
#ifndef SV_HTTP_H
#define SV_HTTP_H

#include "core/error.h"
#include "supervisor/supervisor.h"

typedef struct sv_http sv_http_t;

/* Listen on host:port (port 0 = any free port) and serve sv (borrowed),
 * plain HTTP, no authentication, default limits. */
sv_error_t *sv_http_start(sv_supervisor_t *sv, const char *host, int port,
			  sv_http_t **out);
/* Listen on conf's listen_host:listen_port with its security settings
 * (conf borrowed for the call): tokens_file (bearer tokens, roles), tls
 * (cert_file, key_file, client_ca_file for mTLS) and limits. Errors:
 * SV_ERR_CONFIG naming the file or the address. */
sv_error_t *sv_http_start_conf(sv_supervisor_t *sv, const sv_svconf_t *conf,
			       sv_http_t **out);
/* SIGHUP: read the tokens file and the TLS certificate and key again and
 * swap them in; on any error nothing changes. The client CA and the limits
 * need a restart. thread: any */
sv_error_t *sv_http_reload(sv_http_t *http);
/* The port actually bound. */
int sv_http_port(const sv_http_t *http);
void sv_http_stop(sv_http_t *http);

/* The error body {"error": {"category", "message", "job_id", "field",
 * "position"}} for err; caller frees. */
char *sv_http_error_json(const sv_error_t *err);

#endif
