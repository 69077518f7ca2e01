/* http.h — the HTTP API (DESIGN.md §5) on libmicrohttpd. The only file that
 * includes microhttpd.h is http.c. Handlers only route and translate: every
 * request becomes a call into supervisor.h. */
#ifndef SV_HTTP_H
#define SV_HTTP_H

#include "core/error.h"
#include "supervisor/supervisor.h"

typedef struct sv_http sv_http_t;

/* Listen on host:port (port 0 = any free port) and serve sv (borrowed). */
sv_error_t *sv_http_start(sv_supervisor_t *sv, const char *host, int port,
			  sv_http_t **out);
/* The port actually bound. */
int sv_http_port(const sv_http_t *http);
void sv_http_stop(sv_http_t *http);

/* The error body {"error": {"category", "message", "job_id", "field",
 * "position"}} for err; caller frees. */
char *sv_http_error_json(const sv_error_t *err);

#endif
