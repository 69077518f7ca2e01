/* test_http.c — the HTTP layer (http/http.c).
 *
 * Two halves: the pure pieces (routing, Allow header, media types, the error
 * body) tested directly; and the running daemon, driven by a raw-socket
 * HTTP/1.1 client. For the daemon the supervisor is replaced by the stubs
 * below, which record what they were asked and answer deterministically, so
 * each test proves exactly how a request is translated (id, action, body,
 * query, protobuf flag) and how an answer or error becomes a status, headers
 * and body. Defining every sv_supervisor_* function here keeps the linker
 * from pulling the real supervisor out of the library. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "http/http.h"
#include "http/http_int.h"
#include "supervisor/supervisor.h"

/* ---- the stub supervisor ---- */

struct sv_supervisor {
	int unused;
};

static struct {
	pthread_mutex_t mu;
	int calls; /* supervisor calls other than count_http */
	char fn[32]; /* last call */
	char id[160], what[32];
	char *body; /* copy of the last body (NUL added) */
	size_t len;
	int body_null;
	int protobuf;
	char *query; /* NULL when the call got NULL */
	int counted; /* count_http calls */
	char last_count[64]; /* "GET 404" */
} stub = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void stub_reset(void)
{
	pthread_mutex_lock(&stub.mu);
	free(stub.body);
	free(stub.query);
	pthread_mutex_t mu = stub.mu;
	memset(&stub, 0, sizeof(stub));
	stub.mu = mu;
	pthread_mutex_unlock(&stub.mu);
}

static void record(const char *fn, const char *id, const char *what,
		   const char *body, size_t len)
{
	pthread_mutex_lock(&stub.mu);
	stub.calls++;
	snprintf(stub.fn, sizeof(stub.fn), "%s", fn);
	snprintf(stub.id, sizeof(stub.id), "%s", id ? id : "");
	snprintf(stub.what, sizeof(stub.what), "%s", what ? what : "");
	free(stub.body);
	stub.body = NULL;
	stub.body_null = body == NULL;
	if (body) {
		stub.body = sv_malloc(len + 1);
		memcpy(stub.body, body, len);
		stub.body[len] = '\0';
	}
	stub.len = len;
	pthread_mutex_unlock(&stub.mu);
}

static char *json_printf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static char *json_printf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

sv_error_t *sv_supervisor_new(const sv_svconf_t *conf, sv_supervisor_t **out)
{
	SV_UNUSED(conf);
	*out = sv_calloc(1, sizeof(**out));
	return NULL;
}

void sv_supervisor_destroy(sv_supervisor_t *sv)
{
	free(sv);
}

sv_error_t *sv_supervisor_dry_run(sv_supervisor_t *sv, const char *body,
				  size_t len, bool protobuf, char **json)
{
	SV_UNUSED(sv);
	record("dry_run", NULL, NULL, body, len);
	stub.protobuf = protobuf;
	*json = sv_strdup("{\"spec\":{},\"coverage\":[]}");
	return NULL;
}

sv_error_t *sv_supervisor_submit(sv_supervisor_t *sv, const char *body,
				 size_t len, bool protobuf, char **json)
{
	SV_UNUSED(sv);
	record("submit", NULL, NULL, body, len);
	stub.protobuf = protobuf;
	if (len >= 3 && memcmp(body, "bad", 3) == 0) {
		sv_error_t *err = sv_error_new(SV_ERR_SUBMISSION,
					       "unknown column 'x'");
		sv_error_set_field(err, "pipeline[0].filter");
		err->position = 5;
		return err;
	}
	if (len >= 5 && memcmp(body, "taken", 5) == 0)
		return sv_error_new(SV_ERR_CONFLICT, "name 'a' in use");
	*json = sv_strdup("{\"id\":\"j1\",\"state\":\"pending\"}");
	return NULL;
}

sv_error_t *sv_supervisor_list(sv_supervisor_t *sv, char **json)
{
	SV_UNUSED(sv);
	record("list", NULL, NULL, NULL, 0);
	*json = sv_strdup("{\"jobs\":[]}");
	return NULL;
}

static sv_error_t *unknown_job(const char *id)
{
	return sv_error_set_job(
		sv_error_new(SV_ERR_NOT_FOUND, "no job '%s'", id), id, 0);
}

sv_error_t *sv_supervisor_status(sv_supervisor_t *sv, const char *id,
				 char **json)
{
	SV_UNUSED(sv);
	record("status", id, NULL, NULL, 0);
	if (strcmp(id, "missing") == 0)
		return unknown_job(id);
	*json = json_printf("{\"id\":\"%s\"}", id);
	return NULL;
}

/* The stub's own names of the typed actions and views (the real ones are
 * in supervisor.c, which this test does not link). */
static const char *stub_action(sv_action_t a)
{
	static const char *const n[] = {"cancel", "drain", "resume", "restart",
					"checkpoints"};
	return (unsigned)a < SV_ARRAY_LEN(n) ? n[a] : "?";
}

static const char *stub_view(sv_view_t v)
{
	static const char *const n[] = {"checkpoints", "observations",
					"preview", "result"};
	return (unsigned)v < SV_ARRAY_LEN(n) ? n[v] : "?";
}

sv_error_t *sv_supervisor_action(sv_supervisor_t *sv, const char *id,
				 sv_action_t action, const char *body,
				 size_t len, char **json)
{
	SV_UNUSED(sv);
	record("action", id, stub_action(action), body, len);
	if (strcmp(id, "busy") == 0)
		return sv_error_set_job(
			sv_error_new(SV_ERR_CONFLICT, "job '%s' is failed", id),
			id, 3);
	*json = json_printf("{\"id\":\"%s\",\"action\":\"%s\"}", id,
			    stub_action(action));
	return NULL;
}

sv_error_t *sv_supervisor_get(sv_supervisor_t *sv, const char *id,
			      sv_view_t view, const char *query, char **json)
{
	SV_UNUSED(sv);
	record("get", id, stub_view(view), NULL, 0);
	pthread_mutex_lock(&stub.mu);
	free(stub.query);
	stub.query = query ? sv_strdup(query) : NULL;
	pthread_mutex_unlock(&stub.mu);
	*json = json_printf("{\"what\":\"%s\"}", stub_view(view));
	return NULL;
}

sv_error_t *sv_supervisor_delete(sv_supervisor_t *sv, const char *id,
				 const char *query, char **json)
{
	SV_UNUSED(sv);
	SV_UNUSED(query);
	record("delete", id, NULL, NULL, 0);
	*json = json_printf("{\"deleted\":\"%s\"}", id);
	return NULL;
}

char *sv_supervisor_info(sv_supervisor_t *sv)
{
	SV_UNUSED(sv);
	record("info", NULL, NULL, NULL, 0);
	return sv_strdup("{\"backend\":\"streamvisor\"}");
}

char *sv_supervisor_metrics(sv_supervisor_t *sv)
{
	SV_UNUSED(sv);
	record("metrics", NULL, NULL, NULL, 0);
	return sv_strdup("streamvisor_up 1\n");
}

/* Standalone: every mutation is local, no registry offset. */
sv_route_t sv_supervisor_route(sv_supervisor_t *sv, char **url, char **node)
{
	SV_UNUSED(sv);
	*url = *node = NULL;
	return SV_ROUTE_LOCAL;
}

int64_t sv_supervisor_jobs_offset(sv_supervisor_t *sv)
{
	SV_UNUSED(sv);
	return -1;
}

sv_error_t *sv_supervisor_cluster(sv_supervisor_t *sv, char **json)
{
	SV_UNUSED(sv);
	*json = sv_strdup("{\"mode\":\"standalone\",\"nodes\":[]}");
	return NULL;
}

void sv_supervisor_cluster_job(sv_supervisor_t *sv, const char *id, char **json)
{
	SV_UNUSED(sv);
	SV_UNUSED(id);
	SV_UNUSED(json);
}

void sv_supervisor_count_http(sv_supervisor_t *sv, const char *method,
			      int status)
{
	SV_UNUSED(sv);
	pthread_mutex_lock(&stub.mu);
	stub.counted++;
	snprintf(stub.last_count, sizeof(stub.last_count), "%s %d", method,
		 status);
	pthread_mutex_unlock(&stub.mu);
}

/* ---- routing (pure) ---- */

static void expect_route(const char *method, const char *path, sv_http_op_t op,
			 const char *id, const char *sub, unsigned allow)
{
	sv_http_route_t r;
	sv_http_op_t got = sv_http_route(method, path, &r);
	if (got != op || r.op != op)
		fail_msg("%s %s: op %d, want %d", method, path, got, op);
	assert_string_equal(r.id, id);
	if (sub)
		assert_string_equal(r.sub, sub);
	else
		assert_null(r.sub);
	if (r.allow != allow)
		fail_msg("%s %s: allow %#x, want %#x", method, path, r.allow,
			 allow);
}

#define GH (SV_HTTP_GET | SV_HTTP_HEAD)

static void test_route_known_paths(void **state)
{
	SV_UNUSED(state);
	expect_route("GET", "/healthz", SV_HTTP_OP_HEALTHZ, "", NULL, GH);
	expect_route("HEAD", "/healthz", SV_HTTP_OP_HEALTHZ, "", NULL, GH);
	expect_route("GET", "/healthz/", SV_HTTP_OP_HEALTHZ, "", NULL, GH);
	expect_route("GET", "/metrics", SV_HTTP_OP_METRICS, "", NULL, GH);
	expect_route("GET", "/v1/info", SV_HTTP_OP_INFO, "", NULL, GH);
	/* the dashboard: / and the embedded files, nothing else under /ui */
	expect_route("GET", "/", SV_HTTP_OP_STATIC, "", "index.html", GH);
	expect_route("GET", "/ui/app.js", SV_HTTP_OP_STATIC, "", "app.js", GH);
	expect_route("HEAD", "/ui/uPlot.iife.min.js", SV_HTTP_OP_STATIC, "",
		     "uPlot.iife.min.js", GH);
	expect_route("POST", "/", SV_HTTP_OP_NOT_ALLOWED, "", "index.html", GH);
	expect_route("GET", "/ui/nope.js", SV_HTTP_OP_NOT_FOUND, "", NULL, 0);
	expect_route("GET", "/ui", SV_HTTP_OP_NOT_FOUND, "", NULL, 0);
	expect_route("GET", "/ui/app.js/x", SV_HTTP_OP_NOT_FOUND, "", NULL, 0);
	expect_route("GET", "/v1/jobs/j1/history", SV_HTTP_OP_GET_SUB, "j1",
		     "history", GH);
	expect_route("GET", "/v1/jobs", SV_HTTP_OP_LIST, "", NULL,
		     GH | SV_HTTP_POST);
	expect_route("POST", "/v1/jobs/", SV_HTTP_OP_SUBMIT, "", NULL,
		     GH | SV_HTTP_POST);
	expect_route("GET", "/v1/jobs/j-1_a.b~c", SV_HTTP_OP_STATUS,
		     "j-1_a.b~c", NULL, GH | SV_HTTP_DELETE);
	expect_route("DELETE", "/v1/jobs/j1", SV_HTTP_OP_DELETE, "j1", NULL,
		     GH | SV_HTTP_DELETE);
	static const char *const posts[] = {"cancel", "drain", "resume",
					    "restart"};
	for (size_t i = 0; i < SV_ARRAY_LEN(posts); i++) {
		char path[64];
		snprintf(path, sizeof(path), "/v1/jobs/j1/%s", posts[i]);
		expect_route("POST", path, SV_HTTP_OP_ACTION, "j1", posts[i],
			     SV_HTTP_POST);
		expect_route("GET", path, SV_HTTP_OP_NOT_ALLOWED, "j1",
			     posts[i], SV_HTTP_POST);
	}
	static const char *const gets[] = {"observations", "preview", "result"};
	for (size_t i = 0; i < SV_ARRAY_LEN(gets); i++) {
		char path[64];
		snprintf(path, sizeof(path), "/v1/jobs/j1/%s", gets[i]);
		expect_route("GET", path, SV_HTTP_OP_GET_SUB, "j1", gets[i],
			     GH);
		expect_route("POST", path, SV_HTTP_OP_NOT_ALLOWED, "j1",
			     gets[i], GH);
	}
	expect_route("GET", "/v1/jobs/j1/checkpoints", SV_HTTP_OP_GET_SUB, "j1",
		     "checkpoints", GH | SV_HTTP_POST);
	expect_route("POST", "/v1/jobs/j1/checkpoints/", SV_HTTP_OP_ACTION,
		     "j1", "checkpoints", GH | SV_HTTP_POST);
}

static void test_route_wrong_method(void **state)
{
	SV_UNUSED(state);
	expect_route("POST", "/healthz", SV_HTTP_OP_NOT_ALLOWED, "", NULL, GH);
	expect_route("DELETE", "/v1/jobs", SV_HTTP_OP_NOT_ALLOWED, "", NULL,
		     GH | SV_HTTP_POST);
	expect_route("PUT", "/v1/jobs/j1", SV_HTTP_OP_NOT_ALLOWED, "j1", NULL,
		     GH | SV_HTTP_DELETE);
	expect_route("OPTIONS", "/metrics", SV_HTTP_OP_NOT_ALLOWED, "", NULL,
		     GH);
	expect_route("get", "/healthz", SV_HTTP_OP_NOT_ALLOWED, "", NULL, GH);
	expect_route(NULL, "/healthz", SV_HTTP_OP_NOT_ALLOWED, "", NULL, GH);
}

static void test_route_unknown_paths(void **state)
{
	SV_UNUSED(state);
	static const char *const paths[] = {
		"",
		"healthz",
		"//healthz",
		"/healthz//",
		"/healthzz",
		"/HEALTHZ",
		"/v1",
		"/v1/",
		"/v2/jobs",
		"/v1/info/x",
		"/v1/jobs//cancel",
		"/v1/jobs/j1/bogus",
		"/v1/jobs/j1/cancel/x",
		"/v1/jobs/j1/cancel/x/y",
		"/v1/jobs/a b",
		"/v1/jobs/a%2Fb",
		"/v1/jobs/\xc3\xa9",
		"/v1/jobs/j1/Cancel",
		"/metrics/x",
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(paths); i++)
		expect_route("GET", paths[i], SV_HTTP_OP_NOT_FOUND, "", NULL,
			     0);
	expect_route("GET", NULL, SV_HTTP_OP_NOT_FOUND, "", NULL, 0);

	/* id length: SV_HTTP_ID_MAX is fine, one more is not a job path */
	char path[32 + SV_HTTP_ID_MAX];
	strcpy(path, "/v1/jobs/");
	memset(path + 9, 'a', SV_HTTP_ID_MAX);
	path[9 + SV_HTTP_ID_MAX] = '\0';
	sv_http_route_t r;
	assert_int_equal(sv_http_route("GET", path, &r), SV_HTTP_OP_STATUS);
	assert_int_equal(strlen(r.id), SV_HTTP_ID_MAX);
	strcat(path, "a");
	assert_int_equal(sv_http_route("GET", path, &r), SV_HTTP_OP_NOT_FOUND);
}

static void test_allow_and_media_type(void **state)
{
	SV_UNUSED(state);
	char buf[64];
	sv_http_allow_str(GH | SV_HTTP_POST | SV_HTTP_DELETE, buf, sizeof(buf));
	assert_string_equal(buf, "GET, HEAD, POST, DELETE");
	sv_http_allow_str(SV_HTTP_POST, buf, sizeof(buf));
	assert_string_equal(buf, "POST");
	sv_http_allow_str(0, buf, sizeof(buf));
	assert_string_equal(buf, "");
	sv_http_allow_str(GH, buf, 6); /* truncation stops cleanly */
	assert_string_equal(buf, "GET");

	assert_true(
		sv_http_media_type_is("application/json", "application/json"));
	assert_true(sv_http_media_type_is(" Application/JSON ; charset=utf-8",
					  "application/json"));
	assert_true(sv_http_media_type_is("application/x-protobuf",
					  "application/x-protobuf"));
	assert_false(
		sv_http_media_type_is("application/jsonx", "application/json"));
	assert_false(sv_http_media_type_is("text/plain", "application/json"));
	assert_false(sv_http_media_type_is(NULL, "application/json"));
	/* a form-encoded submission is taken when its body is a JSON object */
	assert_true(sv_http_body_is_json("{\"a\": 1}", 8));
	assert_false(sv_http_body_is_json("[1]", 3));
	assert_false(sv_http_body_is_json("name=a", 6));
	assert_false(sv_http_body_is_json("", 0));
	assert_int_equal(sv_http_method_bit("PATCH"), 0);
}

static void test_error_json(void **state)
{
	SV_UNUSED(state);
	sv_error_t *err = sv_error_new(SV_ERR_NOT_FOUND, "no job '%s'", "x");
	char *j = sv_http_error_json(err);
	assert_string_equal(j,
			    "{\"error\": {\"category\": \"not_found\", "
			    "\"message\": \"no job 'x'\"}}");
	free(j);

	sv_error_set_job(err, "j\"1", 2);
	sv_error_set_field(err, "pipeline[0].filter");
	err->position = 7;
	err->category = SV_ERR_SUBMISSION;
	free(err->message);
	err->message = sv_strdup("bad \"x\"\nline");
	j = sv_http_error_json(err);
	assert_string_equal(j,
			    "{\"error\": {\"category\": \"submission\", "
			    "\"kind\": \"backend_planning_error\", "
			    "\"message\": \"bad \\\"x\\\"\\nline\", "
			    "\"job_id\": \"j\\\"1\", \"attempt\": 2, "
			    "\"field\": \"pipeline[0].filter\", "
			    "\"position\": 7}}");
	free(j);
	/* details: a JSON value passed through; invalid text as a string */
	sv_error_t *cov = sv_error_new(SV_ERR_COVERAGE, "not covered");
	sv_error_set_details(cov, "[{\"capability\": \"x\"}]");
	j = sv_http_error_json(cov);
	assert_string_equal(j,
			    "{\"error\": {\"category\": \"coverage\", "
			    "\"kind\": \"backend_planning_error\", "
			    "\"message\": \"not covered\", \"details\": "
			    "[{\"capability\": \"x\"}]}}");
	free(j);
	sv_error_set_details(cov, "[oops");
	j = sv_http_error_json(cov);
	assert_string_equal(j,
			    "{\"error\": {\"category\": \"coverage\", "
			    "\"kind\": \"backend_planning_error\", "
			    "\"message\": \"not covered\", \"details\": "
			    "\"[oops\"}}");
	free(j);
	sv_error_destroy(cov);

	/* the third-party cause is not part of the API body */
	sv_error_set_cause(err, 42, "librdkafka says");
	j = sv_http_error_json(err);
	assert_null(strstr(j, "librdkafka"));
	free(j);
	sv_error_destroy(err);
}

/* ---- the daemon, through a raw socket ---- */

typedef struct fixture {
	sv_supervisor_t *sv;
	sv_http_t *http;
	int port;
} fixture_t;

typedef struct resp {
	int status;
	char *head; /* status line and headers */
	char *body;
	size_t body_len;
} resp_t;

static void resp_free(resp_t *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* The value of header name in r (static buffer), or NULL. */
static const char *header(const resp_t *r, const char *name)
{
	static char val[256];
	size_t n = strlen(name);
	for (const char *p = strstr(r->head, "\r\n"); p && p[2];
	     p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2;
		if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;
			while (*v == ' ')
				v++;
			size_t len = strcspn(v, "\r\n");
			snprintf(val, sizeof(val), "%.*s", (int)len, v);
			return val;
		}
	}
	return NULL;
}

/* Send raw bytes to the daemon, read the whole response (Connection:
 * close). Socket timeouts bound every wait. */
static void raw_request(int port, const char *req, size_t len, resp_t *out)
{
	memset(out, 0, sizeof(*out));
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	size_t off = 0;
	while (off < len) {
		ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (w <= 0)
			break; /* the server may answer early and close */
		off += (size_t)w;
	}
	sv_buf_t in;
	sv_buf_init(&in);
	char buf[65536];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		sv_buf_append(&in, buf, (size_t)n);
	close(fd);
	assert_non_null(in.data);
	const char *sep = strstr(in.data, "\r\n\r\n");
	assert_non_null(sep);
	out->head = sv_strndup(in.data, (size_t)(sep - in.data) + 2);
	out->body_len = in.len - (size_t)(sep + 4 - in.data);
	out->body = sv_strndup(sep + 4, out->body_len);
	assert_int_equal(sscanf(in.data, "HTTP/1.1 %d", &out->status), 1);
	sv_buf_release(&in);
}

static void request(const fixture_t *fx, const char *method, const char *target,
		    const char *extra_headers, const char *body, size_t blen,
		    resp_t *out)
{
	sv_buf_t req;
	sv_buf_init(&req);
	sv_buf_printf(&req,
		      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		      "Connection: close\r\n%s",
		      method, target, extra_headers ? extra_headers : "");
	if (body)
		sv_buf_printf(&req, "Content-Length: %zu\r\n", blen);
	sv_buf_puts(&req, "\r\n");
	if (body)
		sv_buf_append(&req, body, blen);
	raw_request(fx->port, req.data, req.len, out);
	sv_buf_release(&req);
}

static int daemon_setup(void **state)
{
	fixture_t *fx = sv_calloc(1, sizeof(*fx));
	stub_reset();
	sv_svconf_t conf;
	sv_svconf_init(&conf);
	sv_error_t *err = sv_supervisor_new(&conf, &fx->sv);
	sv_svconf_release(&conf);
	if (!err)
		err = sv_http_start(fx->sv, "127.0.0.1", 0, &fx->http);
	if (err) {
		fprintf(stderr, "setup: %s\n", err->message);
		sv_error_destroy(err);
		return -1;
	}
	fx->port = sv_http_port(fx->http);
	*state = fx;
	return 0;
}

static int daemon_teardown(void **state)
{
	fixture_t *fx = *state;
	sv_http_stop(fx->http);
	sv_supervisor_destroy(fx->sv);
	free(fx);
	stub_reset();
	return 0;
}

static void expect_json(const resp_t *r, int status, const char *body)
{
	if (r->status != status)
		fail_msg("status %d, want %d; body %s", r->status, status,
			 r->body);
	assert_string_equal(header(r, "Content-Type"), "application/json");
	assert_string_equal(r->body, body);
}

static void test_daemon_healthz(void **state)
{
	fixture_t *fx = *state;
	assert_true(fx->port > 0 && fx->port != 8080);
	resp_t r;
	request(fx, "GET", "/healthz", NULL, NULL, 0, &r);
	expect_json(&r, 200, "{\"status\":\"ok\"}");
	resp_free(&r);
	assert_int_equal(stub.calls, 0); /* liveness needs no supervisor */
	assert_int_equal(stub.counted, 1);
	assert_string_equal(stub.last_count, "GET 200");
}

/* With more than FD_SETSIZE descriptors open (a supervisor with ~64 jobs
 * holds that many for their Kafka clients) the API still answers: a
 * select() loop refused every new connection there. */
static void test_daemon_many_descriptors(void **state)
{
	fixture_t *fx = *state;
	enum {
		N = 1100
	};
	int *fds = calloc(N, sizeof(int));
	int n = 0;
	for (; n < N; n++)
		if ((fds[n] = dup(0)) < 0)
			break;
	if (n < N)
		fail_msg("cannot open %d descriptors (ulimit -n?)", N);
	resp_t r;
	request(fx, "GET", "/healthz", NULL, NULL, 0, &r);
	expect_json(&r, 200, "{\"status\":\"ok\"}");
	resp_free(&r);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
}

static void test_daemon_not_found_and_method(void **state)
{
	fixture_t *fx = *state;
	resp_t r;
	request(fx, "GET", "/nope?x=1", NULL, NULL, 0, &r);
	expect_json(&r, 404,
		    "{\"error\": {\"category\": \"not_found\", "
		    "\"message\": \"no route for '/nope'\"}}");
	assert_null(header(&r, "Allow"));
	resp_free(&r);
	assert_string_equal(stub.last_count, "GET 404");

	request(fx, "DELETE", "/healthz", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(header(&r, "Allow"), "GET, HEAD");
	assert_string_equal(
		r.body,
		"{\"error\": {\"category\": \"submission\", "
		"\"kind\": \"backend_planning_error\", \"message\": "
		"\"method 'DELETE' not allowed on '/healthz' (allowed: GET, "
		"HEAD)\"}}");
	resp_free(&r);
	assert_string_equal(stub.last_count, "DELETE 405");

	request(fx, "GET", "/v1/jobs/j1/cancel", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(header(&r, "Allow"), "POST");
	resp_free(&r);

	/* 405 on POST is answered without reading (or acting on) the body */
	request(fx, "POST", "/v1/jobs/j1/preview", NULL, "{}", 2, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(header(&r, "Allow"), "GET, HEAD");
	resp_free(&r);
	assert_int_equal(stub.calls, 0);
	assert_int_equal(stub.counted, 4);
}

static void test_daemon_submit(void **state)
{
	fixture_t *fx = *state;
	resp_t r;
	const char *spec = "{\"name\":\"a\"}";
	request(fx, "POST", "/v1/jobs",
		"Content-Type: application/json; charset=utf-8\r\n", spec,
		strlen(spec), &r);
	expect_json(&r, 201, "{\"id\":\"j1\",\"state\":\"pending\"}");
	resp_free(&r);
	assert_string_equal(stub.fn, "submit");
	assert_string_equal(stub.body, spec);
	assert_int_equal(stub.len, strlen(spec));
	assert_false(stub.protobuf);
	assert_string_equal(stub.last_count, "POST 201");

	/* no Content-Type is taken as JSON */
	request(fx, "POST", "/v1/jobs", NULL, spec, strlen(spec), &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);
	assert_false(stub.protobuf);

	/* protobuf: binary body with NUL bytes arrives byte for byte */
	const char pb[] = {0x0a, 0x01, 'a', 0x00, 0x10, (char)0xff, 0x00};
	request(fx, "POST", "/v1/jobs",
		"Content-Type: application/x-protobuf\r\n", pb, sizeof(pb), &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);
	assert_true(stub.protobuf);
	assert_int_equal(stub.len, sizeof(pb));
	assert_memory_equal(stub.body, pb, sizeof(pb));

	/* what curl -d sends: a form type with a JSON body is a JSON spec */
	request(fx, "POST", "/v1/jobs",
		"Content-Type: application/x-www-form-urlencoded\r\n", spec,
		strlen(spec), &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);
	assert_false(stub.protobuf);
	assert_string_equal(stub.body, spec);

	/* ?dry_run=true translates and checks, 200, starts nothing */
	request(fx, "POST", "/v1/jobs?dry_run=true", NULL, spec, strlen(spec),
		&r);
	expect_json(&r, 200, "{\"spec\":{},\"coverage\":[]}");
	resp_free(&r);
	assert_string_equal(stub.fn, "dry_run");
	request(fx, "POST", "/v1/jobs?dry_run=false", NULL, spec, strlen(spec),
		&r);
	assert_int_equal(r.status, 201);
	resp_free(&r);
	assert_string_equal(stub.fn, "submit");
}

static void test_daemon_submit_errors(void **state)
{
	fixture_t *fx = *state;
	resp_t r;
	request(fx, "POST", "/v1/jobs", NULL, "bad", 3, &r);
	expect_json(&r, 400,
		    "{\"error\": {\"category\": \"submission\", "
		    "\"kind\": \"backend_planning_error\", "
		    "\"message\": \"unknown column 'x'\", "
		    "\"field\": \"pipeline[0].filter\", "
		    "\"position\": 5}}");
	resp_free(&r);

	request(fx, "POST", "/v1/jobs", NULL, "taken", 5, &r);
	assert_int_equal(r.status, 409);
	resp_free(&r);

	request(fx, "POST", "/v1/jobs", NULL, "", 0, &r);
	expect_json(&r, 400,
		    "{\"error\": {\"category\": \"submission\", "
		    "\"kind\": \"backend_planning_error\", "
		    "\"message\": \"empty job spec\"}}");
	resp_free(&r);
	assert_int_equal(stub.calls, 2); /* the empty body never got there */

	request(fx, "POST", "/v1/jobs", "Content-Type: text/yaml\r\n",
		"name: a\n", 8, &r);
	assert_int_equal(r.status, 415);
	assert_non_null(strstr(r.body, "unsupported content type 'text/yaml'"));
	resp_free(&r);
	assert_int_equal(stub.calls, 2);
	assert_string_equal(stub.last_count, "POST 415");

	/* a real form body is not a job spec: refused, never submitted */
	request(fx, "POST", "/v1/jobs",
		"Content-Type: application/x-www-form-urlencoded\r\n",
		"name=a&mode=stream", 18, &r);
	assert_int_equal(r.status, 415);
	assert_non_null(strstr(r.body, "a form-encoded body that is not JSON"));
	resp_free(&r);
	assert_int_equal(stub.calls, 2);
}

static void test_daemon_body_limit(void **state)
{
	fixture_t *fx = *state;
	resp_t r;
	/* Declared too large: refused before the body is read. */
	sv_buf_t req;
	sv_buf_init(&req);
	sv_buf_printf(&req,
		      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n"
		      "Connection: close\r\nContent-Length: %d\r\n\r\n{",
		      SV_HTTP_BODY_MAX + 1);
	raw_request(fx->port, req.data, req.len, &r);
	sv_buf_release(&req);
	assert_int_equal(r.status, 413);
	assert_non_null(
		strstr(r.body, "request body larger than 1048576 bytes"));
	resp_free(&r);

	/* Chunked (no length up front): cut off while collecting. */
	size_t big = SV_HTTP_BODY_MAX + 10;
	sv_buf_init(&req);
	sv_buf_puts(&req,
		    "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n"
		    "Connection: close\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n");
	for (size_t sent = 0; sent < big;) {
		size_t n = big - sent < 60000 ? big - sent : 60000;
		sv_buf_printf(&req, "%zx\r\n", n);
		sv_buf_reserve(&req, n);
		memset(req.data + req.len, 'x', n);
		req.len += n;
		sv_buf_puts(&req, "\r\n");
		sent += n;
	}
	sv_buf_puts(&req, "0\r\n\r\n");
	raw_request(fx->port, req.data, req.len, &r);
	sv_buf_release(&req);
	assert_int_equal(r.status, 413);
	resp_free(&r);
	assert_int_equal(stub.calls, 0);

	/* Just under the limit, in many upload calls: arrives intact. */
	size_t n = SV_HTTP_BODY_MAX;
	char *body = sv_malloc(n);
	for (size_t i = 0; i < n; i++)
		body[i] = (char)('a' + i % 26);
	request(fx, "POST", "/v1/jobs", NULL, body, n, &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);
	assert_int_equal(stub.len, n);
	assert_memory_equal(stub.body, body, n);
	free(body);
}

static void test_daemon_job_routes(void **state)
{
	fixture_t *fx = *state;
	resp_t r;

	request(fx, "GET", "/v1/jobs", NULL, NULL, 0, &r);
	expect_json(&r, 200, "{\"jobs\":[]}");
	resp_free(&r);

	request(fx, "GET", "/v1/jobs/j1", NULL, NULL, 0, &r);
	expect_json(&r, 200, "{\"id\":\"j1\"}");
	resp_free(&r);
	assert_string_equal(stub.fn, "status");
	assert_string_equal(stub.id, "j1");

	request(fx, "GET", "/v1/jobs/missing", NULL, NULL, 0, &r);
	expect_json(&r, 404,
		    "{\"error\": {\"category\": \"not_found\", "
		    "\"message\": \"no job 'missing'\", "
		    "\"job_id\": \"missing\"}}");
	resp_free(&r);

	const char *drain = "{\"final_watermark\":true}";
	request(fx, "POST", "/v1/jobs/j1/drain",
		"Content-Type: application/json\r\n", drain, strlen(drain), &r);
	expect_json(&r, 200, "{\"id\":\"j1\",\"action\":\"drain\"}");
	resp_free(&r);
	assert_string_equal(stub.fn, "action");
	assert_string_equal(stub.what, "drain");
	assert_string_equal(stub.body, drain);

	request(fx, "POST", "/v1/jobs/j1/cancel", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	assert_string_equal(stub.what, "cancel");
	assert_true(stub.body_null); /* no body: NULL, not "" */
	assert_int_equal(stub.len, 0);

	request(fx, "POST", "/v1/jobs/j1/checkpoints", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	assert_string_equal(stub.fn, "action");
	assert_string_equal(stub.what, "checkpoints");

	request(fx, "POST", "/v1/jobs/busy/resume", NULL, NULL, 0, &r);
	expect_json(&r, 409,
		    "{\"error\": {\"category\": \"conflict\", "
		    "\"message\": \"job 'busy' is failed\", "
		    "\"job_id\": \"busy\", \"attempt\": 3}}");
	resp_free(&r);

	request(fx, "GET", "/v1/jobs/j1/preview?limit=5&x=a%20b", NULL, NULL, 0,
		&r);
	expect_json(&r, 200, "{\"what\":\"preview\"}");
	resp_free(&r);
	assert_string_equal(stub.fn, "get");
	assert_string_equal(stub.what, "preview");
	assert_string_equal(stub.query, "limit=5&x=a%20b"); /* raw */

	request(fx, "GET", "/v1/jobs/j1/checkpoints", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	assert_string_equal(stub.what, "checkpoints");
	assert_null(stub.query);

	request(fx, "DELETE", "/v1/jobs/j1", NULL, NULL, 0, &r);
	expect_json(&r, 200, "{\"deleted\":\"j1\"}");
	resp_free(&r);
	assert_string_equal(stub.fn, "delete");
	assert_string_equal(stub.last_count, "DELETE 200");
}

static void test_daemon_info_metrics(void **state)
{
	fixture_t *fx = *state;
	resp_t r;
	request(fx, "GET", "/v1/info", NULL, NULL, 0, &r);
	expect_json(&r, 200, "{\"backend\":\"streamvisor\"}");
	resp_free(&r);

	request(fx, "GET", "/metrics", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(header(&r, "Content-Type"),
			    "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(r.body, "streamvisor_up 1\n");
	resp_free(&r);

	/* HEAD: headers only */
	request(fx, "HEAD", "/healthz", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	resp_free(&r);
	assert_int_equal(stub.counted, 3);
}

static void test_http_start_errors(void **state)
{
	SV_UNUSED(state);
	sv_supervisor_t *sv = NULL;
	assert_null(sv_supervisor_new(NULL, &sv));
	sv_http_t *http = NULL;
	sv_error_t *err = sv_http_start(sv, "127.0.0.1", 70000, &http);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	sv_error_destroy(err);

	err = sv_http_start(sv, "no-such-host.invalid", 0, &http);
	assert_non_null(err);
	assert_string_equal(
		err->message,
		"cannot resolve listen host 'no-such-host.invalid'");
	sv_error_destroy(err);

	/* a port in use */
	sv_http_t *first = NULL;
	assert_null(sv_http_start(sv, "127.0.0.1", 0, &first));
	int port = sv_http_port(first);
	err = sv_http_start(sv, "127.0.0.1", port, &http);
	assert_non_null(err);
	assert_null(http);
	char want[128];
	snprintf(want, sizeof(want),
		 "cannot listen on '127.0.0.1:%d': Address already in use",
		 port);
	assert_string_equal(err->message, want);
	sv_error_destroy(err);
	sv_http_stop(first);
	sv_supervisor_destroy(sv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_known_paths),
		cmocka_unit_test(test_route_wrong_method),
		cmocka_unit_test(test_route_unknown_paths),
		cmocka_unit_test(test_allow_and_media_type),
		cmocka_unit_test(test_error_json),
		cmocka_unit_test_setup_teardown(test_daemon_healthz,
						daemon_setup, daemon_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_many_descriptors,
						daemon_setup, daemon_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_not_found_and_method, daemon_setup,
			daemon_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_submit,
						daemon_setup, daemon_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_submit_errors,
						daemon_setup, daemon_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_body_limit,
						daemon_setup, daemon_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_job_routes,
						daemon_setup, daemon_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_info_metrics,
						daemon_setup, daemon_teardown),
		cmocka_unit_test(test_http_start_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
