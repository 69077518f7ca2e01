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
 * allocates the per-request state.
 *
 * Security (docs/security.md) sits in one place, the first access-handler
 * call of a request, before any route runs, in this order: the mTLS peer
 * check (TLS sessions only), request smuggling checks (one Content-Length,
 * never with Transfer-Encoding), authentication (Authorization: Bearer
 * against the tokens file, 401 for everything but /healthz), routing
 * (404/405), then the role the route needs (route_policy[], 403). TLS is
 * libmicrohttpd's HTTPS on GnuTLS: the certificate comes from our
 * certificate callback, so SIGHUP (sv_http_reload) swaps in new
 * certificates and tokens without dropping the listener; with a client CA
 * the handshake requires and verifies a client certificate. Limits: total
 * and per-client connection caps, the idle timeout and the header cap are
 * libmicrohttpd options; the whole-request deadline (slowloris) is a reaper
 * thread that shuts down connections whose current request has taken longer
 * than request_timeout_s outside a handler. */
#define _GNU_SOURCE
#include "http/http.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>
#include <jansson.h>
#include <microhttpd.h>

#include "core/log.h"
#include "cli/client.h"
#include "core/util.h"
#include "http/http_int.h"
#include "http/web.h"
#include "supervisor/auth.h"
#include "supervisor/observe.h"

/* docs/openapi.json, embedded at build time (openapi_gen.c) */
extern const char sv_openapi_json[];
extern const size_t sv_openapi_json_len;

#define JSON_TYPE "application/json"
#define PROTOBUF_TYPE "application/x-protobuf"
/* what curl -d sends: taken as JSON when the body is JSON */
#define FORM_TYPE "application/x-www-form-urlencoded"
#define PROM_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* distributed mode (docs/api.md "Distributed mode") */
#define JOBS_OFFSET_HEADER "X-Streamvisor-Jobs-Offset"
#define LEADER_HEADER "X-Streamvisor-Leader"
#define FORWARDED_HEADER "X-Streamvisor-Forwarded-By"
#define RETRY_AFTER_S "1"
#define FORWARD_TIMEOUT_MS 12000

/* One TLS certificate chain and key, as GnuTLS wants them from the
 * certificate callback. Replaced sets are kept until the daemon stops: a
 * handshake in flight may still use one. */
typedef struct tls_certs {
	gnutls_pcert_st *pcert;
	unsigned int npcert;
	gnutls_privkey_t key;
	struct tls_certs *older;
} tls_certs_t;

/* A connection, for the request deadline (the reaper). */
typedef struct http_conn {
	int fd;
	int64_t phase_ms; /* when the current request phase began */
	bool busy; /* a handler is running: not reaped */
	bool reaped;
	struct http_conn *prev, *next;
} http_conn_t;

struct sv_http {
	struct MHD_Daemon *mhd;
	sv_supervisor_t *sv;
	int port;
	sv_http_limits_t limits;
	char *tokens_file, *cert_file, *key_file, *ca_file;
	bool tls;
	char *node_id; /* distributed mode: this node's id, or NULL */

	pthread_rwlock_t lock; /* tokens and certs (swapped on reload) */
	sv_tokens_t *tokens; /* NULL: no authentication */
	tls_certs_t *certs;

	pthread_mutex_t conn_lock; /* conns */
	http_conn_t *conns;
	pthread_t reaper;
	bool reaper_started, stopping;
	pthread_cond_t reaper_wake;
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
		} else if (nseg == 2 &&
			   seg_is(seg[1], seglen[1], "openapi.json")) {
			get_op = SV_HTTP_OP_OPENAPI;
		} else if (nseg == 2 && seg_is(seg[1], seglen[1], "cluster")) {
			get_op = SV_HTTP_OP_CLUSTER;
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

/* ---- who may do what (the one table) ---- */

/* An op missing here needs admin (never public by omission): a new route
 * gets its line. */
static const struct {
	sv_role_t role;
	bool acts;
	bool listed;
} route_policy[SV_HTTP_OP__COUNT] = {
	[SV_HTTP_OP_NOT_FOUND] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_NOT_ALLOWED] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_HEALTHZ] = {SV_ROLE_NONE, false, true},
	[SV_HTTP_OP_INFO] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_METRICS] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_OPENAPI] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_LIST] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_STATUS] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_GET_SUB] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_CLUSTER] = {SV_ROLE_VIEWER, false, true},
	[SV_HTTP_OP_SUBMIT] = {SV_ROLE_OPERATOR, true, true},
	[SV_HTTP_OP_ACTION] = {SV_ROLE_OPERATOR, true, true},
	[SV_HTTP_OP_DELETE] = {SV_ROLE_ADMIN, true, true},
	/* the dashboard's page and scripts: public (a browser cannot send a
	 * bearer token for them); every API call the page makes needs one */
	[SV_HTTP_OP_STATIC] = {SV_ROLE_NONE, false, true},
};

int sv_http_op_role(sv_http_op_t op)
{
	return (unsigned)op < SV_HTTP_OP__COUNT && route_policy[op].listed
		? (int)route_policy[op].role
		: (int)SV_ROLE_ADMIN;
}

bool sv_http_op_acts(sv_http_op_t op)
{
	return (unsigned)op < SV_HTTP_OP__COUNT && route_policy[op].acts;
}

const char *sv_http_framing_error(unsigned n_cl, const char *cl, unsigned n_te,
				  const char *te)
{
	if (n_cl > 1)
		return "more than one Content-Length header";
	if (n_cl && n_te)
		return "both Content-Length and Transfer-Encoding";
	if (n_te > 1)
		return "more than one Transfer-Encoding header";
	if (n_cl) {
		if (!cl || !*cl)
			return "empty Content-Length";
		for (const char *p = cl; *p; p++)
			if (*p < '0' || *p > '9')
				return "Content-Length is not a decimal "
				       "number";
		if (strlen(cl) > 15)
			return "Content-Length too long";
	}
	if (n_te && (!te || strcasecmp(te, "chunked") != 0))
		return "Transfer-Encoding other than 'chunked'";
	return NULL;
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
	int too_large; /* body exceeded limits.max_body_bytes */
	size_t dropped; /* body bytes dropped since */
	sv_http_route_t route;
	char principal[128]; /* who asked ("" without authentication) */
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

/* Queue body (taken, malloc'd) with status and, when hname is set, one more
 * header; counts the request. */
static enum MHD_Result respond_hdr(sv_http_t *http, struct MHD_Connection *conn,
				   const char *method, const char *url,
				   int status, const char *type, char *body,
				   const char *hname, const char *hval)
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
	if (hname && hval)
		MHD_add_response_header(resp, hname, hval);
	if (http->tls)
		MHD_add_response_header(resp, "Strict-Transport-Security",
					"max-age=31536000");
	enum MHD_Result ret = MHD_queue_response(conn, (unsigned int)status,
						 resp);
	MHD_destroy_response(resp);
	sv_supervisor_count_http(http->sv, method, status);
	sv_log(NULL, SV_LOG_DEBUG, "http", "%s %s %d", method, url, status);
	return ret;
}

/* Queue body (taken) with status, and an Allow header when allow is set. */
static enum MHD_Result respond(sv_http_t *http, struct MHD_Connection *conn,
			       const char *method, const char *url, int status,
			       const char *type, char *body, const char *allow)
{
	return respond_hdr(http, conn, method, url, status, type, body,
			   allow ? MHD_HTTP_HEADER_ALLOW : NULL, allow);
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
	if (status == 503) /* no leader now (distributed mode): retry */
		return respond_hdr(http, conn, method, url, status, JSON_TYPE,
				   body, "Retry-After", RETRY_AFTER_S);
	return respond(http, conn, method, url, status, JSON_TYPE, body, allow);
}

/* Answer with err (taken) and one extra header (WWW-Authenticate,
 * Connection). */
static enum MHD_Result respond_error_hdr(sv_http_t *http,
					 struct MHD_Connection *conn,
					 const char *method, const char *url,
					 int status, sv_error_t *err,
					 const char *hname, const char *hval)
{
	char *body = sv_http_error_json(err);
	sv_error_destroy(err);
	return respond_hdr(http, conn, method, url, status, JSON_TYPE, body,
			   hname, hval);
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

/* A GET answered from this node's view: in distributed mode it says as of
 * which job registry offset (docs/api.md, X-Streamvisor-Jobs-Offset). */
static enum MHD_Result respond_view(sv_http_t *http,
				    struct MHD_Connection *conn,
				    const char *method, const char *url,
				    sv_error_t *err, char *json)
{
	int64_t off = sv_supervisor_jobs_offset(http->sv);
	if (err || off < 0)
		return respond_call(http, conn, method, url, 200, err, json);
	char v[32];
	snprintf(v, sizeof(v), "%lld", (long long)off);
	return respond_hdr(http, conn, method, url, 200, JSON_TYPE,
			   json ? json : sv_strdup("{}"), JOBS_OFFSET_HEADER,
			   v);
}

/* Whether this request changes the cluster's jobs (forwarded to the
 * leader in distributed mode). A checkpoint now acts on the node asked. */
static bool is_mutation(const http_req_t *rq, struct MHD_Connection *conn)
{
	const sv_http_route_t *r = &rq->route;
	if (r->op == SV_HTTP_OP_SUBMIT) {
		const char *dry = MHD_lookup_connection_value(
			conn, MHD_GET_ARGUMENT_KIND, "dry_run");
		return !(dry && !strcmp(dry, "true"));
	}
	return r->op == SV_HTTP_OP_DELETE ||
		(r->op == SV_HTTP_OP_ACTION &&
		 r->action != SV_ACTION_CHECKPOINT);
}

/* Distributed mode: send the request on to the leader at leader_url with
 * the caller's bearer token, and answer what the leader answered; 503
 * with Retry-After when it cannot be reached (it may have just failed:
 * the caller retries, and a retried submit is idempotent). */
static enum MHD_Result forward(sv_http_t *http, struct MHD_Connection *conn,
			       const char *method, const char *url,
			       http_req_t *rq, const char *leader_url,
			       const char *leader)
{
	sv_client_t cl = {0};
	sv_error_t *err = sv_client_init(&cl, leader_url);
	sv_client_resp_t resp = {0};
	if (!err) {
		cl.timeout_ms = FORWARD_TIMEOUT_MS;
		const char *auth = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		if (auth && !strncasecmp(auth, "Bearer ", 7))
			sv_client_set_token(&cl, auth + 7);
		char hdr[200];
		snprintf(hdr, sizeof(hdr), "%s: %s", FORWARDED_HEADER,
			 http->node_id ? http->node_id : "");
		sv_client_set_header(&cl, hdr);
		const char *ct = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
		err = sv_client_request(&cl, method, rq->uri ? rq->uri : url,
					ct, rq->body.len ? rq->body.data : NULL,
					rq->body.len, &resp);
	}
	sv_client_release(&cl);
	if (err) {
		sv_error_t *e = sv_error_new(
			SV_ERR_UNAVAILABLE,
			"the leader '%s' (%s) did not answer: %s; retry",
			leader ? leader : "", leader_url, err->message);
		sv_error_destroy(err);
		return respond_error(http, conn, method, url, 503, e, NULL);
	}
	char *body = resp.body;
	resp.body = NULL;
	enum MHD_Result r = respond_hdr(
		http, conn, method, url, resp.status,
		resp.content_type ? resp.content_type : JSON_TYPE, body,
		LEADER_HEADER, leader ? leader : "");
	sv_client_resp_release(&resp);
	return r;
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

	if (is_mutation(rq, conn)) {
		char *lurl = NULL, *lnode = NULL;
		sv_route_t to = sv_supervisor_route(sv, &lurl, &lnode);
		bool forwarded = MHD_lookup_connection_value(
					 conn, MHD_HEADER_KIND,
					 FORWARDED_HEADER) != NULL;
		enum MHD_Result ret = MHD_YES;
		bool answered = true;
		if (to == SV_ROUTE_FORWARD && !forwarded)
			ret = forward(http, conn, method, url, rq, lurl, lnode);
		else if (to != SV_ROUTE_LOCAL)
			ret = respond_error(
				http, conn, method, url, 503,
				sv_error_new(SV_ERR_UNAVAILABLE,
					     "no leader in the streamvisor "
					     "cluster now (a failover is under "
					     "way): retry"),
				NULL);
		else
			answered = false;
		free(lurl);
		free(lnode);
		if (answered)
			return ret;
	}

	switch (r->op) {
	case SV_HTTP_OP_CLUSTER:
		err = sv_supervisor_cluster(sv, &json);
		return respond_view(http, conn, method, url, err, json);
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
		return respond_view(http, conn, method, url, err, json);
	case SV_HTTP_OP_STATUS:
		err = sv_supervisor_status(sv, r->id, &json);
		if (!err)
			sv_supervisor_cluster_job(sv, r->id, &json);
		return respond_view(http, conn, method, url, err, json);
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
		return respond_view(http, conn, method, url, err, json);
	case SV_HTTP_OP_STATIC:
		return respond_asset(http, conn, method, url, r->sub);
	case SV_HTTP_OP_OPENAPI:
		return respond_json(
			http, conn, method, url, 200,
			sv_strndup(sv_openapi_json, sv_openapi_json_len));
	case SV_HTTP_OP_NOT_FOUND:
	case SV_HTTP_OP_NOT_ALLOWED:
	case SV_HTTP_OP__COUNT:
		break;
	}
	return reject_early(http, conn, method, url, r);
}

/* ---- the checks before any handler ---- */

static http_conn_t *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* mTLS: the handshake already required and verified a client certificate
 * (tls_retrieve); checked again here so no handler ever runs for a peer
 * that did not pass. */
static bool peer_ok(sv_http_t *http, struct MHD_Connection *conn)
{
	if (!http->tls || !http->ca_file)
		return true;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t session = ci ? ci->tls_session : NULL;
	if (!session)
		return false;
	unsigned int n = 0, status = 1;
	if (!gnutls_certificate_get_peers(session, &n) || n == 0)
		return false;
	return gnutls_certificate_verify_peers2(session, &status) == 0 &&
		status == 0;
}

typedef struct framing {
	unsigned n_cl, n_te;
	const char *cl, *te;
} framing_t;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind,
				     const char *key, const char *value)
{
	SV_UNUSED(kind);
	framing_t *f = cls;
	if (key && !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		f->n_cl++;
		f->cl = value;
	} else if (key && !strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		f->n_te++;
		f->te = value;
	}
	return MHD_YES;
}

/* Authenticate (401) and authorize (403) the routed request; NULL when it
 * may go on, else the error. Fills rq->principal. */
static sv_error_t *check_auth(sv_http_t *http, struct MHD_Connection *conn,
			      http_req_t *rq, bool *invalid_token)
{
	*invalid_token = false;
	pthread_rwlock_rdlock(&http->lock);
	const sv_tokens_t *tokens = http->tokens;
	sv_error_t *err = NULL;
	int need = sv_http_op_role(rq->route.op);
	if (!tokens || need == SV_ROLE_NONE)
		goto out;
	const char *hdr = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *tok = NULL;
	size_t tlen = 0;
	if (!hdr) {
		err = sv_error_new(SV_ERR_UNAUTHENTICATED,
				   "authentication required: send "
				   "'Authorization: Bearer <token>'");
		goto out;
	}
	if (sv_auth_bearer(hdr, &tok, &tlen) != 0) {
		err = sv_error_new(SV_ERR_UNAUTHENTICATED,
				   "unsupported Authorization scheme: send "
				   "'Authorization: Bearer <token>'");
		goto out;
	}
	const sv_principal_t *p = sv_tokens_match(tokens, tok, tlen);
	if (!p) {
		*invalid_token = true;
		err = sv_error_new(SV_ERR_UNAUTHENTICATED,
				   "invalid token"); /* never echoed */
		goto out;
	}
	snprintf(rq->principal, sizeof(rq->principal), "%s", p->name);
	if ((int)p->role < need)
		err = sv_error_new(SV_ERR_FORBIDDEN,
				   "principal '%s' (role %s) may not do this: "
				   "it needs role %s",
				   p->name, sv_role_name(p->role),
				   sv_role_name((sv_role_t)need));
out:
	pthread_rwlock_unlock(&http->lock);
	return err;
}

/* The first access-handler call: headers are in, no body read yet. Every
 * check that keeps a request from a handler is here. MHD_YES to go on
 * (the body follows), or the result of a queued refusal. *done tells
 * which. */
static enum MHD_Result admit(sv_http_t *http, struct MHD_Connection *conn,
			     const char *url, const char *method,
			     http_req_t *rq, bool *done)
{
	*done = true;
	if (!peer_ok(http, conn))
		return MHD_NO; /* close: no answer to an unverified peer */

	framing_t fr = {0};
	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &fr);
	const char *why = sv_http_framing_error(fr.n_cl, fr.cl, fr.n_te, fr.te);
	if (why)
		return respond_error_hdr(
			http, conn, method, url, 400,
			sv_error_new(SV_ERR_SUBMISSION,
				     "malformed request framing: %s", why),
			MHD_HTTP_HEADER_CONNECTION, "close");

	/* Route first (a pure function of the path), so /healthz is known;
	 * but answer 401 before 404/405, so an unauthenticated client
	 * learns nothing about which paths exist. */
	sv_http_op_t op = sv_http_route(method, url, &rq->route);
	bool invalid = false;
	sv_error_t *err = check_auth(http, conn, rq, &invalid);
	if (err && err->category == SV_ERR_UNAUTHENTICATED)
		return respond_error_hdr(
			http, conn, method, url, 401, err,
			MHD_HTTP_HEADER_WWW_AUTHENTICATE,
			invalid ? "Bearer realm=\"streamvisor\", "
				  "error=\"invalid_token\""
				: "Bearer realm=\"streamvisor\"");
	if (op == SV_HTTP_OP_NOT_FOUND || op == SV_HTTP_OP_NOT_ALLOWED) {
		sv_error_destroy(err);
		return reject_early(http, conn, method, url, &rq->route);
	}
	if (err) {
		sv_log(NULL, SV_LOG_WARN, "audit", "refused: %s %s by '%s': %s",
		       method, url, rq->principal, err->message);
		return respond_error(http, conn, method, url, 403, err, NULL);
	}

	const char *cl = fr.cl;
	if (cl && strtoull(cl, NULL, 10) > http->limits.max_body_bytes)
		return respond_error_hdr(
			http, conn, method, url, 413,
			sv_error_new(SV_ERR_SUBMISSION,
				     "request body larger than %u bytes",
				     http->limits.max_body_bytes),
			MHD_HTTP_HEADER_CONNECTION, "close");
	if (op == SV_HTTP_OP_SUBMIT) {
		const char *ct = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
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
	*done = false;
	return MHD_YES;
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
		bool done = false;
		enum MHD_Result r = admit(http, conn, url, method, rq, &done);
		if (done)
			return r;
		return MHD_YES;
	}

	if (*upload_data_size) {
		/* Bodies are read for POST only; others are drained. */
		if (rq->route.op == SV_HTTP_OP_SUBMIT ||
		    rq->route.op == SV_HTTP_OP_ACTION) {
			if (rq->too_large ||
			    rq->body.len + *upload_data_size >
				    http->limits.max_body_bytes) {
				/* dropped; answered 413 when the body ends
				 * (libmicrohttpd cannot answer mid-upload),
				 * but a body going on past 4x the cap gets
				 * the connection closed instead */
				rq->too_large = 1;
				rq->dropped += *upload_data_size;
				if (rq->dropped >
				    4 * (size_t)http->limits.max_body_bytes)
					return MHD_NO;
			} else {
				sv_buf_append(&rq->body, upload_data,
					      *upload_data_size);
			}
		}
		*upload_data_size = 0;
		return MHD_YES;
	}

	if (rq->too_large)
		return respond_error_hdr(
			http, conn, method, url, 413,
			sv_error_new(SV_ERR_SUBMISSION,
				     "request body larger than %u bytes",
				     http->limits.max_body_bytes),
			MHD_HTTP_HEADER_CONNECTION, "close");

	http_conn_t *hc = conn_of(conn);
	if (hc) {
		pthread_mutex_lock(&http->conn_lock);
		hc->busy = true;
		pthread_mutex_unlock(&http->conn_lock);
	}
	bool acts = sv_http_op_acts(rq->route.op);
	/* the principal goes with the command into the job's observations
	 * (supervisor.c, observe.c); the audit line says who did what */
	if (acts && rq->principal[0])
		sv_obs_set_principal(rq->principal);
	enum MHD_Result ret = dispatch(http, conn, method, url, rq);
	sv_obs_set_principal(NULL);
	if (acts)
		sv_log(NULL, SV_LOG_INFO, "audit", "%s %s by '%s'", method, url,
		       rq->principal[0] ? rq->principal : "(no auth)");
	if (hc) {
		pthread_mutex_lock(&http->conn_lock);
		hc->busy = false;
		hc->phase_ms = sv_now_ms(); /* the answer gets a full deadline */
		pthread_mutex_unlock(&http->conn_lock);
	}
	return ret;
}

/* ---- connections and the request deadline ---- */

static void on_connection(void *cls, struct MHD_Connection *conn,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	sv_http_t *http = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
			conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		http_conn_t *hc = sv_calloc(1, sizeof(*hc));
		hc->fd = ci ? ci->connect_fd : -1;
		hc->phase_ms = sv_now_ms();
		pthread_mutex_lock(&http->conn_lock);
		hc->next = http->conns;
		if (http->conns)
			http->conns->prev = hc;
		http->conns = hc;
		pthread_mutex_unlock(&http->conn_lock);
		*socket_context = hc;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		http_conn_t *hc = *socket_context;
		if (!hc)
			return;
		/* unlinked before libmicrohttpd closes the descriptor, so
		 * the reaper never touches a reused one */
		pthread_mutex_lock(&http->conn_lock);
		if (hc->prev)
			hc->prev->next = hc->next;
		else
			http->conns = hc->next;
		if (hc->next)
			hc->next->prev = hc->prev;
		pthread_mutex_unlock(&http->conn_lock);
		free(hc);
		*socket_context = NULL;
	}
}

/* Every 250 ms: shut down connections whose current request (headers,
 * body, or sending the answer; or the idle wait for the next request) has
 * taken longer than request_timeout_s outside a handler. libmicrohttpd's
 * own timeout is on inactivity only, which a client trickling a byte at a
 * time never trips. */
static void *reaper_main(void *arg)
{
	sv_http_t *http = arg;
	int64_t limit = (int64_t)http->limits.request_timeout_s * 1000;
	pthread_mutex_lock(&http->conn_lock);
	while (!http->stopping) {
		int64_t now = sv_now_ms();
		for (http_conn_t *hc = http->conns; hc; hc = hc->next) {
			if (hc->busy || hc->reaped || hc->fd < 0 ||
			    now - hc->phase_ms <= limit)
				continue;
			hc->reaped = true;
			shutdown(hc->fd, SHUT_RDWR);
			sv_log(NULL, SV_LOG_WARN, "http",
			       "closed a connection whose request took more "
			       "than %u s (limits.request_timeout_s)",
			       http->limits.request_timeout_s);
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&http->reaper_wake, &http->conn_lock,
				       &ts);
	}
	pthread_mutex_unlock(&http->conn_lock);
	return NULL;
}

/* ---- TLS ---- */

static void certs_free(tls_certs_t *c)
{
	while (c) {
		tls_certs_t *older = c->older;
		for (unsigned i = 0; i < c->npcert; i++)
			gnutls_pcert_deinit(&c->pcert[i]);
		gnutls_free(c->pcert);
		if (c->key)
			gnutls_privkey_deinit(c->key);
		free(c);
		c = older;
	}
}

static sv_error_t *tls_error(const char *what, const char *path, int rc)
{
	return sv_error_set_cause(sv_error_new(SV_ERR_CONFIG,
					       "cannot load TLS %s '%s': %s",
					       what, path, gnutls_strerror(rc)),
				  rc, gnutls_strerror(rc));
}

static sv_error_t *certs_load(const char *cert_file, const char *key_file,
			      tls_certs_t **out)
{
	*out = NULL;
	gnutls_datum_t cert = {0}, key = {0};
	int rc = gnutls_load_file(cert_file, &cert);
	if (rc < 0)
		return tls_error("certificate", cert_file, rc);
	rc = gnutls_load_file(key_file, &key);
	if (rc < 0) {
		gnutls_free(cert.data);
		return tls_error("key", key_file, rc);
	}
	tls_certs_t *c = sv_calloc(1, sizeof(*c));
	sv_error_t *err = NULL;
	unsigned int max = 16;
	c->pcert = gnutls_calloc(max, sizeof(*c->pcert));
	rc = gnutls_pcert_list_import_x509_raw(c->pcert, &max, &cert,
					       GNUTLS_X509_FMT_PEM, 0);
	if (rc < 0 || max == 0) {
		err = tls_error("certificate", cert_file,
				rc < 0 ? rc : GNUTLS_E_NO_CERTIFICATE_FOUND);
		max = 0;
	}
	c->npcert = max;
	if (!err &&
	    ((rc = gnutls_privkey_init(&c->key)) < 0 ||
	     (rc = gnutls_privkey_import_x509_raw(
		      c->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0))
		err = tls_error("key", key_file, rc);
	if (key.data) {
		explicit_bzero(key.data, key.size);
		gnutls_free(key.data);
	}
	gnutls_free(cert.data);
	if (err) {
		certs_free(c);
		return err;
	}
	*out = c;
	return NULL;
}

/* GnuTLS asks for our certificate during each handshake. With a client
 * CA, this is also where the session is told to require a client
 * certificate and verify it against the CA during the handshake, so an
 * unverified client never gets a request through. */
static sv_http_t *tls_http; /* the TLS daemon's; one per process */

static int tls_retrieve(gnutls_session_t session,
			const gnutls_datum_t *req_ca_dn, int nreqs,
			const gnutls_pk_algorithm_t *pk_algos, int pk_algos_len,
			gnutls_pcert_st **pcert, unsigned int *pcert_len,
			gnutls_privkey_t *pkey)
{
	SV_UNUSED(req_ca_dn);
	SV_UNUSED(nreqs);
	SV_UNUSED(pk_algos);
	SV_UNUSED(pk_algos_len);
	sv_http_t *http = tls_http;
	if (!http)
		return -1;
	pthread_rwlock_rdlock(&http->lock);
	tls_certs_t *c = http->certs;
	*pcert = c->pcert;
	*pcert_len = c->npcert;
	*pkey = c->key;
	pthread_rwlock_unlock(&http->lock);
	if (http->ca_file) {
		gnutls_certificate_server_set_request(session,
						      GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(session, NULL, 0);
	}
	return 0;
}

static sv_error_t *read_text(const char *path, char **out)
{
	gnutls_datum_t d = {0};
	int rc = gnutls_load_file(path, &d);
	if (rc < 0)
		return tls_error("client CA", path, rc);
	*out = sv_strndup((const char *)d.data, d.size);
	gnutls_free(d.data);
	return NULL;
}

static void http_free(sv_http_t *http)
{
	if (!http)
		return;
	sv_tokens_destroy(http->tokens);
	certs_free(http->certs);
	free(http->tokens_file);
	free(http->cert_file);
	free(http->key_file);
	free(http->ca_file);
	free(http->node_id);
	pthread_rwlock_destroy(&http->lock);
	pthread_mutex_destroy(&http->conn_lock);
	pthread_cond_destroy(&http->reaper_wake);
	free(http);
}

static char *dup_or_null(const char *s)
{
	return s ? sv_strdup(s) : NULL;
}

sv_error_t *sv_http_start_conf(sv_supervisor_t *sv, const sv_svconf_t *conf,
			       sv_http_t **out)
{
	*out = NULL;
	const char *host = conf->listen_host;
	int port = conf->listen_port;
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

	sv_http_t *http = sv_calloc(1, sizeof(*http));
	http->sv = sv;
	http->limits = conf->limits;
	if (!http->limits.max_body_bytes)
		http->limits.max_body_bytes = SV_HTTP_BODY_MAX;
	if (!http->limits.max_connections)
		http->limits.max_connections = 1024;
	if (!http->limits.idle_timeout_s)
		http->limits.idle_timeout_s = 30;
	if (!http->limits.request_timeout_s)
		http->limits.request_timeout_s = 30;
	if (!http->limits.max_header_bytes)
		http->limits.max_header_bytes = 16384;
	http->tokens_file = dup_or_null(conf->tokens_file);
	http->node_id = dup_or_null(conf->dist.node_id);
	http->cert_file = dup_or_null(conf->tls_cert_file);
	http->key_file = dup_or_null(conf->tls_key_file);
	http->ca_file = dup_or_null(conf->tls_client_ca_file);
	http->tls = http->cert_file && http->key_file;
	pthread_rwlock_init(&http->lock, NULL);
	pthread_mutex_init(&http->conn_lock, NULL);
	pthread_cond_init(&http->reaper_wake, NULL);

	sv_error_t *err = NULL;
	char *ca = NULL;
	if (http->tokens_file)
		err = sv_tokens_load(http->tokens_file, &http->tokens);
	if (!err && http->tls)
		err = certs_load(http->cert_file, http->key_file, &http->certs);
	if (!err && http->tls && http->ca_file)
		err = read_text(http->ca_file, &ca);
	if (!err && http->tls && tls_http)
		err = sv_error_new(SV_ERR_CONFIG,
				   "only one TLS listener per process");
	if (err) {
		free(ca);
		http_free(http);
		return err;
	}

	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", port);
	struct addrinfo hints = {0}, *ai = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int gai = getaddrinfo(host, portstr, &hints, &ai);
	if (gai != 0) {
		free(ca);
		http_free(http);
		return sv_error_set_cause(
			sv_error_new(SV_ERR_CONFIG,
				     "cannot resolve listen host '%s'", host),
			gai, gai_strerror(gai));
	}

	/* poll(), not select(): a thousand connections pass FD_SETSIZE */
	unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD |
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (http->tls) {
		flags |= MHD_USE_TLS;
		tls_http = http;
	}
	const sv_http_limits_t *lim = &http->limits;
	/* the connection's memory pool holds the request line, the headers
	 * and the read buffer: a header block over the cap gets 431 */
	size_t pool = (size_t)lim->max_header_bytes + 4096;
	struct MHD_OptionItem tls_opts[] = {
		{http->tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, 0,
		 http->tls ? (void *)tls_retrieve : NULL},
		{ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, ca},
		{MHD_OPTION_HTTPS_PRIORITIES, 0,
		 (void *)"SECURE128:-VERS-SSL3.0:-VERS-TLS1.0:-VERS-TLS1.1"},
		{MHD_OPTION_END, 0, NULL},
	};
	errno = 0;
	http->mhd = MHD_start_daemon(
		flags, (uint16_t)port, NULL, NULL, on_request, http,
		/* first, so every message goes through sv_log */
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
		/* default SO_REUSEADDR only: REUSE=1 would add SO_REUSEPORT
		 * and let two supervisors share a port */
		MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_URI_LOG_CALLBACK,
		on_uri, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, http,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, http,
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)lim->idle_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)lim->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned int)lim->max_connections_per_client,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
		MHD_OPTION_THREAD_STACK_SIZE, (size_t)256 * 1024,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
		MHD_OPTION_ARRAY, http->tls ? tls_opts : tls_opts + 3,
		MHD_OPTION_END);
	int saved = errno;
	freeaddrinfo(ai);
	free(ca);
	if (!http->mhd) {
		if (http->tls)
			tls_http = NULL;
		http_free(http);
		const char *why = saved ? strerror(saved)
					: "libmicrohttpd could not start";
		return sv_error_set_cause(
			sv_error_new(SV_ERR_CONFIG,
				     "cannot listen on '%s:%d': %s", host, port,
				     why),
			saved, why);
	}
	if (pthread_create(&http->reaper, NULL, reaper_main, http) == 0)
		http->reaper_started = true;
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(
		http->mhd, MHD_DAEMON_INFO_BIND_PORT);
	http->port = info && info->port ? info->port : port;
	sv_log(NULL, SV_LOG_INFO, "http", "listening on %s:%d (%s%s, %s)", host,
	       http->port, http->tls ? "https" : "http",
	       http->ca_file ? " with client certificates" : "",
	       http->tokens ? "bearer tokens" : "no authentication");
	*out = http;
	return NULL;
}

sv_error_t *sv_http_start(sv_supervisor_t *sv, const char *host, int port,
			  sv_http_t **out)
{
	sv_svconf_t conf;
	sv_svconf_init(&conf);
	free(conf.listen_host);
	conf.listen_host = sv_strdup(host && *host ? host : "127.0.0.1");
	conf.listen_port = port;
	sv_error_t *err = sv_http_start_conf(sv, &conf, out);
	sv_svconf_release(&conf);
	return err;
}

sv_error_t *sv_http_reload(sv_http_t *http)
{
	if (!http)
		return NULL;
	sv_tokens_t *tokens = NULL;
	tls_certs_t *certs = NULL;
	sv_error_t *err = NULL;
	if (http->tokens_file)
		err = sv_tokens_load(http->tokens_file, &tokens);
	if (!err && http->tls)
		err = certs_load(http->cert_file, http->key_file, &certs);
	if (err) {
		sv_tokens_destroy(tokens);
		return sv_error_prefix(err, "reload refused, nothing changed");
	}
	pthread_rwlock_wrlock(&http->lock);
	sv_tokens_t *old_tokens = http->tokens;
	if (http->tokens_file)
		http->tokens = tokens;
	else
		old_tokens = NULL;
	if (certs) {
		certs->older = http->certs; /* kept: handshakes in flight */
		http->certs = certs;
	}
	pthread_rwlock_unlock(&http->lock);
	sv_tokens_destroy(old_tokens);
	sv_log(NULL, SV_LOG_INFO, "http", "reloaded%s%s",
	       http->tokens_file ? " tokens" : "",
	       http->tls ? " TLS certificate and key" : "");
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
	if (http->reaper_started) {
		pthread_mutex_lock(&http->conn_lock);
		http->stopping = true;
		pthread_cond_signal(&http->reaper_wake);
		pthread_mutex_unlock(&http->conn_lock);
		pthread_join(http->reaper, NULL);
	}
	if (tls_http == http)
		tls_http = NULL;
	http_free(http);
}
