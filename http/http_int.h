/* http_int.h — internals of the HTTP layer shared by http.c and its tests:
 * the pure routing function that turns a method and a path into what the
 * handler should do. No libmicrohttpd types here, so tests can call it
 * without a daemon. */
#ifndef SV_HTTP_INT_H
#define SV_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "supervisor/supervisor.h"

/* Request bodies above this many bytes get 413 (the default of
 * limits.max_body_bytes). */
#define SV_HTTP_BODY_MAX (1024 * 1024)
/* Longest job id the router accepts; longer ids are unknown (404). */
#define SV_HTTP_ID_MAX 128

/* Methods as bits, so a path can say which it accepts (the Allow header). */
enum {
	SV_HTTP_GET = 1u << 0,
	SV_HTTP_HEAD = 1u << 1,
	SV_HTTP_POST = 1u << 2,
	SV_HTTP_DELETE = 1u << 3,
};

/* What a request asks for once routed. */
typedef enum sv_http_op {
	SV_HTTP_OP_NOT_FOUND = 0, /* no such path: 404 */
	SV_HTTP_OP_NOT_ALLOWED, /* known path, wrong method: 405 + Allow */
	SV_HTTP_OP_HEALTHZ, /* GET /healthz */
	SV_HTTP_OP_INFO, /* GET /v1/info */
	SV_HTTP_OP_METRICS, /* GET /metrics */
	SV_HTTP_OP_SUBMIT, /* POST /v1/jobs */
	SV_HTTP_OP_LIST, /* GET /v1/jobs */
	SV_HTTP_OP_STATUS, /* GET /v1/jobs/{id} */
	SV_HTTP_OP_DELETE, /* DELETE /v1/jobs/{id} */
	SV_HTTP_OP_ACTION, /* POST /v1/jobs/{id}/{sub}: route.action */
	SV_HTTP_OP_GET_SUB, /* GET /v1/jobs/{id}/{sub}: route.view */
	SV_HTTP_OP_STATIC, /* GET / and /ui/{file}: the dashboard (web.h) */
	SV_HTTP_OP_OPENAPI, /* GET /v1/openapi.json */
	SV_HTTP_OP_CLUSTER, /* GET /v1/cluster (distributed mode) */
	SV_HTTP_OP__COUNT
} sv_http_op_t;

typedef struct sv_http_route {
	sv_http_op_t op;
	unsigned allow; /* methods the path accepts (0 if none) */
	char id[SV_HTTP_ID_MAX + 1]; /* job id, "" when the path has none */
	const char *sub; /* static string: "cancel", "preview", ...
					 * the asset name for STATIC, or NULL */
	int action; /* SV_HTTP_OP_ACTION: the sv_action_t */
	int view; /* SV_HTTP_OP_GET_SUB: the sv_view_t */
} sv_http_route_t;

/* The method bit of an HTTP method name, 0 for methods we never accept. */
unsigned sv_http_method_bit(const char *method);

/* Route method + path (the decoded path, without the query string). A single
 * trailing slash is ignored. Fills *r (borrowed, caller-owned) and returns
 * r->op. HEAD is accepted wherever GET is. Job ids are 1..SV_HTTP_ID_MAX
 * characters of [A-Za-z0-9._~-]; anything else is not a job path (404).
 * thread: any (pure) */
sv_http_op_t sv_http_route(const char *method, const char *path,
			   sv_http_route_t *r);

/* The least role a route needs (SV_ROLE_NONE: no token needed), and
 * whether it acts (submit, actions, delete: audited, the principal
 * recorded in the job's observations). The one table of who may do what;
 * docs/security.md shows it. */
int sv_http_op_role(sv_http_op_t op);
bool sv_http_op_acts(sv_http_op_t op);

/* The checks of the request framing done before any handler (request
 * smuggling; libmicrohttpd 0.9.75 lets these through): given the number of
 * Content-Length and Transfer-Encoding headers and their (last) values,
 * NULL when fine, else why the request is refused (400). */
const char *sv_http_framing_error(unsigned n_cl, const char *cl, unsigned n_te,
				  const char *te);

/* Format an Allow header value ("GET, HEAD, POST") into buf of size n. */
void sv_http_allow_str(unsigned allow, char *buf, size_t n);

/* Whether a Content-Type header value names the given media type, ignoring
 * case, surrounding blanks and parameters ("application/json;
 * charset=utf-8" matches "application/json"). NULL never matches. */
int sv_http_media_type_is(const char *content_type, const char *type);

/* Whether body[0..len) is a JSON object: a POST /v1/jobs sent as
 * application/x-www-form-urlencoded (curl -d) is taken as a JSON job spec
 * when it is one, and refused with 415 otherwise. */
int sv_http_body_is_json(const char *body, size_t len);

#endif
