/* http.c — the HTTP API (DESIGN.md §5) on libmicrohttpd.
 *
 * This is the only file that includes microhttpd.h. The daemon runs an
 * internal polling thread and one thread per connection: every handler ends
 * in a supervisor call that posts a command to the supervisor thread and
 * waits for its reply, so a slow request must not hold up other
 * connections. Handlers only route and translate: sv_http_route() (a pure
 * function, unit-tested on its own) maps method + path to an operation; the
 * access handler collects a POST body across libmicrohttpd's upload calls
 * (bounded by SV_HTTP_BODY_MAX), calls the supervisor and turns its answer
 * or error into a response. Errors have one shape, {"error": {...}}, with the
 * status taken from the error category (sv_errcat_http_status). Every
 * request, including 404s and 405s, is counted with
 * sv_supervisor_count_http().
 *
 * The raw query string is taken from the URI log callback, which sees the
 * request line before libmicrohttpd splits and decodes it; that callback also
 * allocates the per-request state. */
#define _GNU_SOURCE
#include "http/http.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <jansson.h>
#include <microhttpd.h>

#include "core/log.h"
#include "core/util.h"
#include "http/http_int.h"
#include "http/web.h"

#define JSON_TYPE "application/json"
#define PROTOBUF_TYPE "application/x-protobuf"
/* what curl -d sends: taken as JSON when the body is JSON */
#define FORM_TYPE "application/x-www-form-urlencoded"
#define PROM_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct sv_http {
	struct MHD_Daemon *mhd;
	sv_supervisor_t *sv;
	int port;
};

/* ---- routing (pure) ---- */

static const struct {
	const char *name;
	unsigned allow;
	int action; /* sv_action_t for POST, or -1 */
	int view; /* sv_view_t for GET, or -1 */
} job_subs[] = {
	{"cancel", SV_HTTP_POST, SV_ACTION_CANCEL, -1},
	{"drain", SV_HTTP_POST, SV_ACTION_DRAIN, -1},
	{"resume", SV_HTTP_POST, SV_ACTION_RESUME, -1},
	{"restart", SV_HTTP_POST, SV_ACTION_RESTART, -1},
	{"checkpoints", SV_HTTP_GET | SV_HTTP_HEAD | SV_HTTP_POST,
	 SV_ACTION_CHECKPOINT, SV_VIEW_CHECKPOINTS},
	{"observations", SV_HTTP_GET | SV_HTTP_HEAD, -1, SV_VIEW_OBSERVATIONS},
	{"execution-observations", SV_HTTP_GET | SV_HTTP_HEAD, -1,
	 SV_VIEW_EXECUTION_OBSERVATIONS},
	{"preview", SV_HTTP_GET | SV_HTTP_HEAD, -1, SV_VIEW_PREVIEW},
	{"result", SV_HTTP_GET | SV_HTTP_HEAD, -1, SV_VIEW_RESULT},
	{"history", SV_HTTP_GET | SV_HTTP_HEAD, -1, SV_VIEW_HISTORY},
};

unsigned sv_http_method_bit(const char *method)
{
	if (!method)
		return 0;
	if (strcmp(method, "GET") == 0)
		return SV_HTTP_GET;
	if (strcmp(method, "HEAD") == 0)
		return SV_HTTP_HEAD;
	if (strcmp(method, "POST") == 0)
		return SV_HTTP_POST;
	if (strcmp(method, "DELETE") == 0)
		return SV_HTTP_DELETE;
	return 0;
}

static int id_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' ||
		c == '-';
}

/* Whether segment s[0..n) equals the literal lit. */
static int seg_is(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

sv_http_op_t sv_http_route(const char *method, const char *path,
			   sv_http_route_t *r)
{
	memset(r, 0, sizeof(*r));
	r->op = SV_HTTP_OP_NOT_FOUND;
	if (!path || path[0] != '/')
		return r->op;

	/* Split into at most 4 segments; a single trailing slash is dropped,
	 * an empty segment anywhere else is not a route. */
	const char *seg[4];
	size_t seglen[4];
	size_t nseg = 0;
	size_t plen = strlen(path);
	if (plen > 1 && path[plen - 1] == '/')
		plen--;
	if (plen > 1 && path[plen - 1] == '/')
		return r->op;
	const char *p = path + 1, *end = path + plen;
	while (p < end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		const char *se = slash ? slash : end;
		if (se == p || nseg == SV_ARRAY_LEN(seg))
			return r->op;
		seg[nseg] = p;
		seglen[nseg++] = (size_t)(se - p);
		p = slash ? slash + 1 : end;
	}

	sv_http_op_t get_op = SV_HTTP_OP_NOT_FOUND, post_op = get_op,
		     delete_op = get_op;
	if (nseg == 0) {
		r->sub = "index.html";
		get_op = SV_HTTP_OP_STATIC;
	} else if (nseg == 2 && seg_is(seg[0], seglen[0], "ui")) {
		const sv_web_asset_t *a = sv_web_asset_find(seg[1], seglen[1]);
		if (!a)
			return r->op;
		r->sub = a->name;
		get_op = SV_HTTP_OP_STATIC;
	} else if (nseg == 1 && seg_is(seg[0], seglen[0], "healthz")) {
		get_op = SV_HTTP_OP_HEALTHZ;
	} else if (nseg == 1 && seg_is(seg[0], seglen[0], "metrics")) {
		get_op = SV_HTTP_OP_METRICS;
	} else if (nseg >= 2 && seg_is(seg[0], seglen[0], "v1")) {
		if (nseg == 2 && seg_is(seg[1], seglen[1], "info")) {
			get_op = SV_HTTP_OP_INFO;
		} else if (seg_is(seg[1], seglen[1], "jobs")) {
			if (nseg == 2) {
				get_op = SV_HTTP_OP_LIST;
				post_op = SV_HTTP_OP_SUBMIT;
			} else {
				if (seglen[2] > SV_HTTP_ID_MAX)
					return r->op;
				for (size_t i = 0; i < seglen[2]; i++)
					if (!id_char_ok(seg[2][i]))
						return r->op;
				if (nseg == 3) {
					get_op = SV_HTTP_OP_STATUS;
					delete_op = SV_HTTP_OP_DELETE;
				} else {
					for (size_t i = 0;
					     i < SV_ARRAY_LEN(job_subs); i++) {
						if (!seg_is(seg[3], seglen[3],
							    job_subs[i].name))
							continue;
						r->sub = job_subs[i].name;
						r->action = job_subs[i].action;
						r->view = job_subs[i].view;
						if (job_subs[i].allow &
						    SV_HTTP_GET)
							get_op =
								SV_HTTP_OP_GET_SUB;
						if (job_subs[i].allow &
						    SV_HTTP_POST)
							post_op =
								SV_HTTP_OP_ACTION;
					}
					if (!r->sub)
						return r->op;
				}
				memcpy(r->id, seg[2], seglen[2]);
				r->id[seglen[2]] = '\0';
			}
		}
	}
	if (get_op != SV_HTTP_OP_NOT_FOUND)
		r->allow |= SV_HTTP_GET | SV_HTTP_HEAD;
	if (post_op != SV_HTTP_OP_NOT_FOUND)
		r->allow |= SV_HTTP_POST;
	if (delete_op != SV_HTTP_OP_NOT_FOUND)
		r->allow |= SV_HTTP_DELETE;
	if (!r->allow) {
		r->id[0] = '\0';
		r->sub = NULL;
		return r->op;
	}

	switch (sv_http_method_bit(method)) {
	case SV_HTTP_GET:
	case SV_HTTP_HEAD:
		r->op = get_op;
		break;
	case SV_HTTP_POST:
		r->op = post_op;
		break;
	case SV_HTTP_DELETE:
		r->op = delete_op;
		break;
	default:
		break;
	}
	if (r->op == SV_HTTP_OP_NOT_FOUND)
		r->op = SV_HTTP_OP_NOT_ALLOWED;
	return r->op;
}

void sv_http_allow_str(unsigned allow, char *buf, size_t n)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{SV_HTTP_GET, "GET"},
		{SV_HTTP_HEAD, "HEAD"},
		{SV_HTTP_POST, "POST"},
		{SV_HTTP_DELETE, "DELETE"},
	};
	size_t len = 0;
	if (n == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < SV_ARRAY_LEN(names); i++) {
		if (!(allow & names[i].bit))
			continue;
		int w = snprintf(buf + len, n - len, "%s%s", len ? ", " : "",
				 names[i].name);
		if (w < 0 || (size_t)w >= n - len) {
			buf[len] = '\0'; /* no half-written method */
			return;
		}
		len += (size_t)w;
	}
}

int sv_http_media_type_is(const char *content_type, const char *type)
{
	if (!content_type)
		return 0;
	while (*content_type == ' ' || *content_type == '\t')
		content_type++;
	size_t n = strcspn(content_type, ";");
	while (n > 0 &&
	       (content_type[n - 1] == ' ' || content_type[n - 1] == '\t'))
		n--;
	return n == strlen(type) && strncasecmp(content_type, type, n) == 0;
}

int sv_http_body_is_json(const char *body, size_t len)
{
	json_t *v = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	int ok = json_is_object(v);
	json_decref(v);
	return ok;
}

/* ---- error bodies ---- */

/* {"error": {category, kind, message, job_id, attempt, field, position,
 * details}}, absent members left out; kind is IncQL's backend error kind
 * (sv_errcat_backend_kind). The third-party cause stays out of
 * API bodies (it is logged). */
char *sv_http_error_json(const sv_error_t *err)
{
	sv_buf_t b;
	sv_buf_init(&b);
	const char *msg = err && err->message ? err->message : "internal error";
	sv_buf_puts(&b, "{\"error\": {\"category\": ");
	const char *cat = sv_errcat_name(err ? err->category : SV_ERR_RUNTIME);
	sv_buf_json_str(&b, cat, strlen(cat));
	const char *kind = sv_errcat_backend_kind(
		err ? err->category : SV_ERR_RUNTIME, err ? err->field : NULL);
	if (kind) {
		sv_buf_puts(&b, ", \"kind\": ");
		sv_buf_json_str(&b, kind, strlen(kind));
	}
	sv_buf_puts(&b, ", \"message\": ");
	sv_buf_json_str(&b, msg, strlen(msg));
	if (err && err->job_id) {
		sv_buf_puts(&b, ", \"job_id\": ");
		sv_buf_json_str(&b, err->job_id, strlen(err->job_id));
		if (err->attempt > 0)
			sv_buf_printf(&b, ", \"attempt\": %d", err->attempt);
	}
	if (err && err->field) {
		sv_buf_puts(&b, ", \"field\": ");
		sv_buf_json_str(&b, err->field, strlen(err->field));
	}
	if (err && err->position > 0)
		sv_buf_printf(&b, ", \"position\": %d", err->position);
	if (err && err->details_json) {
		/* Our own JSON (coverage records, ...); checked anyway so a
		 * bug there cannot break the body: invalid text goes out as
		 * a string. */
		json_t *d = json_loads(err->details_json, JSON_DECODE_ANY,
				       NULL);
		sv_buf_puts(&b, ", \"details\": ");
		if (d)
			sv_buf_puts(&b, err->details_json);
		else
			sv_buf_json_str(&b, err->details_json,
					strlen(err->details_json));
		json_decref(d);
	}
	sv_buf_puts(&b, "}}");
	return sv_buf_detach(&b);
}

/* ---- the daemon ---- */

typedef struct http_req {
	char *uri; /* raw request target, query included */
	int started; /* the first access-handler call happened */
	int too_large; /* body exceeded SV_HTTP_BODY_MAX */
	sv_http_route_t route;
	sv_buf_t body;
} http_req_t;

static http_req_t *req_new(const char *uri)
{
	http_req_t *rq = sv_calloc(1, sizeof(*rq));
	rq->uri = uri ? sv_strdup(uri) : NULL;
	sv_buf_init(&rq->body);
	return rq;
}

static void req_destroy(http_req_t *rq)
{
	if (!rq)
		return;
	free(rq->uri);
	sv_buf_release(&rq->body);
	free(rq);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	SV_UNUSED(cls);
	SV_UNUSED(conn);
	return req_new(uri);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	SV_UNUSED(cls);
	SV_UNUSED(conn);
	SV_UNUSED(toe);
	req_destroy(*req_cls);
	*req_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	SV_UNUSED(cls);
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	size_t n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	sv_log(NULL, SV_LOG_WARN, "http", "libmicrohttpd: %s", line);
}

/* Queue body (taken, malloc'd) with status; counts the request. */
static enum MHD_Result respond(sv_http_t *http, struct MHD_Connection *conn,
			       const char *method, const char *url, int status,
			       const char *type, char *body, const char *allow)
{
	size_t len = body ? strlen(body) : 0;
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		len, body ? body : (void *)"",
		body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	if (allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	enum MHD_Result ret = MHD_queue_response(conn, (unsigned int)status,
						 resp);
	MHD_destroy_response(resp);
	sv_supervisor_count_http(http->sv, method, status);
	sv_log(NULL, SV_LOG_DEBUG, "http", "%s %s %d", method, url, status);
	return ret;
}

static enum MHD_Result respond_json(sv_http_t *http,
				    struct MHD_Connection *conn,
				    const char *method, const char *url,
				    int status, char *json)
{
	return respond(http, conn, method, url, status, JSON_TYPE,
		       json ? json : sv_strdup("{}"), NULL);
}

/* Answer with err (taken). status 0 = from the category. */
static enum MHD_Result respond_error(sv_http_t *http,
				     struct MHD_Connection *conn,
				     const char *method, const char *url,
				     int status, sv_error_t *err,
				     const char *allow)
{
	if (!status)
		status = sv_errcat_http_status(err->category);
	char *body = sv_http_error_json(err);
	sv_error_destroy(err);
	return respond(http, conn, method, url, status, JSON_TYPE, body, allow);
}

/* Answer with the outcome of a supervisor call: json on success. */
static enum MHD_Result respond_call(sv_http_t *http,
				    struct MHD_Connection *conn,
				    const char *method, const char *url,
				    int ok_status, sv_error_t *err, char *json)
{
	if (err) {
		free(json);
		return respond_error(http, conn, method, url, 0, err, NULL);
	}
	return respond_json(http, conn, method, url, ok_status, json);
}

/* One of the dashboard's embedded files (name from the route). Scripts and
 * styles come from this origin only. */
static enum MHD_Result respond_asset(sv_http_t *http,
				     struct MHD_Connection *conn,
				     const char *method, const char *url,
				     const char *name)
{
	const sv_web_asset_t *a = sv_web_asset_find(name, strlen(name));
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				a->content_type);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-cache");
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'self'; style-src 'self' "
				"'unsafe-inline'; frame-ancestors 'none'");
	enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	sv_supervisor_count_http(http->sv, method, 200);
	sv_log(NULL, SV_LOG_DEBUG, "http", "%s %s 200", method, url);
	return ret;
}

/* Reject a request before its body is read (404, 405, 413, 415). */
static enum MHD_Result reject_early(sv_http_t *http,
				    struct MHD_Connection *conn,
				    const char *method, const char *url,
				    const sv_http_route_t *route)
{
	if (route->op == SV_HTTP_OP_NOT_FOUND)
		return respond_error(http, conn, method, url, 404,
				     sv_error_new(SV_ERR_NOT_FOUND,
						  "no route for '%s'", url),
				     NULL);
	char allow[64];
	sv_http_allow_str(route->allow, allow, sizeof(allow));
	return respond_error(
		http, conn, method, url, 405,
		sv_error_new(SV_ERR_SUBMISSION,
			     "method '%s' not allowed on '%s' (allowed: %s)",
			     method, url, allow),
		allow);
}

static const char *query_of(const http_req_t *rq)
{
	if (!rq->uri)
		return NULL;
	const char *q = strchr(rq->uri, '?');
	if (!q || !q[1])
		return NULL;
	return q + 1;
}

/* The last access-handler call: the whole body is in rq->body. */
static enum MHD_Result dispatch(sv_http_t *http, struct MHD_Connection *conn,
				const char *method, const char *url,
				http_req_t *rq)
{
	sv_supervisor_t *sv = http->sv;
	const sv_http_route_t *r = &rq->route;
	const char *body = rq->body.len ? rq->body.data : NULL;
	char *json = NULL;
	sv_error_t *err;

	switch (r->op) {
	case SV_HTTP_OP_HEALTHZ:
		return respond_json(http, conn, method, url, 200,
				    sv_strdup("{\"status\":\"ok\"}"));
	case SV_HTTP_OP_INFO:
		json = sv_supervisor_info(sv);
		if (!json)
			return respond_error(
				http, conn, method, url, 500,
				sv_error_new(SV_ERR_RUNTIME,
					     "supervisor info unavailable"),
				NULL);
		return respond_json(http, conn, method, url, 200, json);
	case SV_HTTP_OP_METRICS: {
		char *text = sv_supervisor_metrics(sv);
		if (!text)
			return respond_error(
				http, conn, method, url, 500,
				sv_error_new(SV_ERR_RUNTIME,
					     "metrics unavailable"),
				NULL);
		return respond(http, conn, method, url, 200, PROM_TYPE, text,
			       NULL);
	}
	case SV_HTTP_OP_SUBMIT: {
		const char *ct = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
		bool protobuf = sv_http_media_type_is(ct, PROTOBUF_TYPE);
		if (!body)
			return respond_error(http, conn, method, url, 400,
					     sv_error_new(SV_ERR_SUBMISSION,
							  "empty job spec"),
					     NULL);
		if (sv_http_media_type_is(ct, FORM_TYPE) &&
		    !sv_http_body_is_json(rq->body.data, rq->body.len))
			return respond_error(
				http, conn, method, url, 415,
				sv_error_new(SV_ERR_SUBMISSION,
					     "a form-encoded body that is not "
					     "JSON: send the job spec as "
					     "application/json"),
				NULL);
		const char *dry = MHD_lookup_connection_value(
			conn, MHD_GET_ARGUMENT_KIND, "dry_run");
		if (dry && !strcmp(dry, "true")) {
			err = sv_supervisor_dry_run(sv, rq->body.data,
						    rq->body.len, protobuf,
						    &json);
			return respond_call(http, conn, method, url, 200, err,
					    json);
		}
		err = sv_supervisor_submit(sv, rq->body.data, rq->body.len,
					   protobuf, &json);
		return respond_call(http, conn, method, url, 201, err, json);
	}
	case SV_HTTP_OP_LIST:
		err = sv_supervisor_list(sv, &json);
		return respond_call(http, conn, method, url, 200, err, json);
	case SV_HTTP_OP_STATUS:
		err = sv_supervisor_status(sv, r->id, &json);
		return respond_call(http, conn, method, url, 200, err, json);
	case SV_HTTP_OP_DELETE:
		err = sv_supervisor_delete(sv, r->id, query_of(rq), &json);
		return respond_call(http, conn, method, url, 200, err, json);
	case SV_HTTP_OP_ACTION:
		err = sv_supervisor_action(sv, r->id, (sv_action_t)r->action,
					   body, rq->body.len, &json);
		return respond_call(http, conn, method, url, 200, err, json);
	case SV_HTTP_OP_GET_SUB:
		err = sv_supervisor_get(sv, r->id, (sv_view_t)r->view,
					query_of(rq), &json);
		return respond_call(http, conn, method, url, 200, err, json);
	case SV_HTTP_OP_STATIC:
		return respond_asset(http, conn, method, url, r->sub);
	case SV_HTTP_OP_NOT_FOUND:
	case SV_HTTP_OP_NOT_ALLOWED:
		break;
	}
	return reject_early(http, conn, method, url, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req_cls)
{
	SV_UNUSED(version);
	sv_http_t *http = cls;
	http_req_t *rq = *req_cls;
	if (!rq) /* the URI callback always runs first; be safe anyway */
		*req_cls = rq = req_new(NULL);

	if (!rq->started) {
		rq->started = 1;
		sv_http_op_t op = sv_http_route(method, url, &rq->route);
		if (op == SV_HTTP_OP_NOT_FOUND || op == SV_HTTP_OP_NOT_ALLOWED)
			return reject_early(http, conn, method, url,
					    &rq->route);
		const char *cl = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > SV_HTTP_BODY_MAX)
			return respond_error(
				http, conn, method, url, 413,
				sv_error_new(
					SV_ERR_SUBMISSION,
					"request body larger than %d bytes",
					SV_HTTP_BODY_MAX),
				NULL);
		if (op == SV_HTTP_OP_SUBMIT) {
			const char *ct = MHD_lookup_connection_value(
				conn, MHD_HEADER_KIND,
				MHD_HTTP_HEADER_CONTENT_TYPE);
			if (ct && !sv_http_media_type_is(ct, JSON_TYPE) &&
			    !sv_http_media_type_is(ct, PROTOBUF_TYPE) &&
			    !sv_http_media_type_is(ct, FORM_TYPE))
				return respond_error(
					http, conn, method, url, 415,
					sv_error_new(SV_ERR_SUBMISSION,
						     "unsupported content type "
						     "'%s': send "
						     "application/json or "
						     "application/x-protobuf",
						     ct),
					NULL);
		}
		return MHD_YES;
	}

	if (*upload_data_size) {
		/* Bodies are read for POST only; others are drained. */
		if (rq->route.op == SV_HTTP_OP_SUBMIT ||
		    rq->route.op == SV_HTTP_OP_ACTION) {
			if (rq->body.len + *upload_data_size > SV_HTTP_BODY_MAX)
				rq->too_large = 1;
			else
				sv_buf_append(&rq->body, upload_data,
					      *upload_data_size);
		}
		*upload_data_size = 0;
		return MHD_YES;
	}

	if (rq->too_large)
		return respond_error(
			http, conn, method, url, 413,
			sv_error_new(SV_ERR_SUBMISSION,
				     "request body larger than %d bytes",
				     SV_HTTP_BODY_MAX),
			NULL);
	return dispatch(http, conn, method, url, rq);
}

sv_error_t *sv_http_start(sv_supervisor_t *sv, const char *host, int port,
			  sv_http_t **out)
{
	*out = NULL;
	if (port < 0 || port > 65535)
		return sv_error_new(SV_ERR_CONFIG, "invalid listen port %d",
				    port);
	if (!host || !*host)
		host = "127.0.0.1";
	/* Accept "[::1]" as well as "::1". */
	char hostbuf[256];
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']' &&
	    hl - 2 < sizeof(hostbuf)) {
		memcpy(hostbuf, host + 1, hl - 2);
		hostbuf[hl - 2] = '\0';
		host = hostbuf;
	}

	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", port);
	struct addrinfo hints = {0}, *ai = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int gai = getaddrinfo(host, portstr, &hints, &ai);
	if (gai != 0)
		return sv_error_set_cause(
			sv_error_new(SV_ERR_CONFIG,
				     "cannot resolve listen host '%s'", host),
			gai, gai_strerror(gai));

	sv_http_t *http = sv_calloc(1, sizeof(*http));
	http->sv = sv;
	/* poll(), not select(): every job holds a dozen descriptors (its
	 * Kafka clients), so past ~60 jobs accepted sockets are numbered
	 * above FD_SETSIZE (1024), which a select() loop refuses — the API
	 * stopped answering at 64 jobs (it_faults test_many_jobs) */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
		MHD_USE_ERROR_LOG;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	http->mhd = MHD_start_daemon(
		flags, (uint16_t)port, NULL, NULL, on_request, http,
		/* first, so every message goes through sv_log */
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
		/* default SO_REUSEADDR only: REUSE=1 would add SO_REUSEPORT
		 * and let two supervisors share a port */
		MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_URI_LOG_CALLBACK,
		on_uri, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)256, MHD_OPTION_END);
	int saved = errno;
	freeaddrinfo(ai);
	if (!http->mhd) {
		free(http);
		const char *why = saved ? strerror(saved)
					: "libmicrohttpd could not start";
		return sv_error_set_cause(
			sv_error_new(SV_ERR_CONFIG,
				     "cannot listen on '%s:%d': %s", host, port,
				     why),
			saved, why);
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(
		http->mhd, MHD_DAEMON_INFO_BIND_PORT);
	http->port = info && info->port ? info->port : port;
	sv_log(NULL, SV_LOG_INFO, "http", "listening on %s:%d", host,
	       http->port);
	*out = http;
	return NULL;
}

int sv_http_port(const sv_http_t *http)
{
	return http ? http->port : 0;
}

void sv_http_stop(sv_http_t *http)
{
	if (!http)
		return;
	/* Joins the polling thread and every connection thread, so no
	 * handler runs (or calls the supervisor) after this returns. */
	MHD_stop_daemon(http->mhd);
	free(http);
}
