/* cli.c — the CLI subcommands (see cli.h): one option parser (each command
 * says which options and how many arguments it takes), one request
 * function (--server URL, else $STREAMVISOR_URL, else
 * http://127.0.0.1:8080) and one error printer, so every command fails the
 * same way: the server's error body as "streamvisor: <category>: <message>"
 * on stderr and an exit code that tells usage (1), connection (2), HTTP 4xx
 * (3) and HTTP 5xx (4) apart. By default a command prints a human-readable
 * table or summary; --json prints the server's body unchanged. */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/util.h"


/* A column-aligned table on stdout: cells added row by row, widths taken
 * from the widest cell. align holds 'l' or 'r' per column. */
typedef struct table {
	size_t ncols;
	const char *align;
	char **cells;
	size_t n, cap;
} table_t;

static void table_init(table_t *t, size_t ncols, const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->align = align;
}

static void table_add(table_t *t, const char *cell)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 32;
		t->cells = sv_realloc(t->cells, t->cap * sizeof(*t->cells));
	}
	t->cells[t->n++] = sv_strdup(cell ? cell : "");
}

/* Print and free the table. */
static void table_print(table_t *t)
{
	size_t width[16] = {0};
	for (size_t i = 0; i < t->n; i++) {
		size_t w = strlen(t->cells[i]);
		size_t col = i % t->ncols;
		if (col < SV_ARRAY_LEN(width) && w > width[col])
			width[col] = w;
	}
	for (size_t i = 0; i < t->n; i++) {
		size_t col = i % t->ncols;
		bool last = col + 1 == t->ncols || i + 1 == t->n;
		int w = col < SV_ARRAY_LEN(width) ? (int)width[col] : 0;
		if (t->align[col] == 'r')
			printf("%*s", w, t->cells[i]);
		else if (last)
			printf("%s", t->cells[i]);
		else
			printf("%-*s", w, t->cells[i]);
		printf(last ? "\n" : "  ");
		free(t->cells[i]);
	}
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

/* A JSON scalar as table text: strings as they are, numbers, true/false,
 * "-" for null or absent; arrays and objects compact. Returns buf or a
 * string borrowed from v. */
static const char *json_text(json_t *v, char *buf, size_t n)
{
	switch (v ? json_typeof(v) : JSON_NULL) {
	case JSON_STRING:
		return *json_string_value(v) ? json_string_value(v) : "-";
	case JSON_INTEGER:
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, n, "%.3f", json_real_value(v));
		return buf;
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_NULL:
		return "-";
	default: {
		char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		snprintf(buf, n, "%s", d ? d : "?");
		free(d);
		return buf;
	}
	}
}

/* The first member of o among keys (NULL-terminated) that is present and
 * not null. */
static json_t *member(json_t *o, const char *const *keys)
{
	for (; *keys; keys++) {
		json_t *v = json_object_get(o, *keys);
		if (v && !json_is_null(v))
			return v;
	}
	return NULL;
}

/* ms since the epoch as ISO-8601, "-" for null. */
static const char *ms_text(json_t *v, char *buf, size_t n)
{
	if (!json_is_integer(v))
		return json_text(v, buf, n);
	sv_format_iso8601((int64_t)json_integer_value(v), buf, n);
	return buf;
}

/* Append s to b with every byte outside RFC 3986's unreserved set
 * percent-encoded (job ids are used as one path segment). */
static void put_segment(sv_buf_t *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			sv_buf_putc(b, (char)c);
		else
			sv_buf_printf(b, "%%%02X", c);
	}
}

/* "/v1/jobs/<id>[/<sub>]". Caller frees. */
static char *job_path(const char *id, const char *sub)
{
	sv_buf_t b;
	sv_buf_init(&b);
	sv_buf_puts(&b, "/v1/jobs/");
	put_segment(&b, id);
	if (sub)
		sv_buf_printf(&b, "/%s", sub);
	return sv_buf_detach(&b);
}

/* Print a non-2xx answer: the server's {"error": {...}} as
 * "streamvisor: <category>: <message>", then the field and any coverage
 * records; a body of another shape as "HTTP <status>: <first line>". */
static void print_http_error(const sv_client_resp_t *resp)
{
	json_t *root = json_loadb(resp->body, resp->len, 0, NULL);
	json_t *e = json_object_get(root, "error");
	const char *cat = json_string_value(json_object_get(e, "category"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	if (!cat || !msg) {
		size_t n = strcspn(resp->body, "\r\n");
		if (n > 200)
			n = 200;
		fprintf(stderr, "streamvisor: HTTP %d: %.*s\n", resp->status,
			(int)n, n ? resp->body : "(no body)");
		json_decref(root);
		return;
	}
	fprintf(stderr, "streamvisor: %s: %s\n", cat, msg);
	const char *field = json_string_value(json_object_get(e, "field"));
	if (field)
		fprintf(stderr, "  field: %s\n", field);
	json_t *details = json_object_get(e, "details");
	size_t i;
	json_t *rec;
	/* RFC 033 coverage records (docs/incql.md): the ones not covered */
	json_array_foreach (details, i, rec) {
		json_t *req = json_object_get(rec, "requirement");
		const char *capname = json_string_value(
			json_object_get(req, "capability"));
		const char *status = json_string_value(
			json_object_get(rec, "state"));
		const char *reason = json_string_value(json_object_get(
			json_array_get(json_object_get(rec, "diagnostics"), 0),
			"message"));
		if (capname && status && strcmp(status, "covered"))
			fprintf(stderr, "  %s (%s): %s%s%s\n", capname,
				json_string_value(
					json_object_get(req, "guarantee")),
				status, reason ? " — " : "",
				reason ? reason : "");
	}
	json_decref(root);
}

/* Send one request (body: JSON text or NULL). On a 2xx answer returns 0
 * with *resp filled (caller releases); otherwise prints why and returns the
 * exit code, *resp released. */
static int cli_request(cli_t *cli, const char *method, const char *path,
		       const char *body, sv_client_resp_t *resp)
{
	sv_error_t *err = sv_client_request(
		&cli->client, method, path, body ? "application/json" : NULL,
		body, body ? strlen(body) : 0, resp);
	if (err) {
		fprintf(stderr, "streamvisor: %s\n", err->message);
		if (err->cause_code == ECONNREFUSED)
			fprintf(stderr,
				"streamvisor: is the server running? "
				"(--server URL or $" SERVER_ENV ", now %s)\n",
				cli->server);
		sv_error_destroy(err);
		return EXIT_CLI_CONNECT;
	}
	if (resp->status >= 200 && resp->status < 300)
		return 0;
	print_http_error(resp);
	int rc = resp->status >= 400 && resp->status < 500 ? EXIT_CLI_4XX
							   : EXIT_CLI_5XX;
	sv_client_resp_release(resp);
	return rc;
}

/* Print a body as it came, with a final newline. */
static void print_raw(const sv_client_resp_t *resp)
{
	fwrite(resp->body, 1, resp->len, stdout);
	if (resp->len && resp->body[resp->len - 1] != '\n')
		putchar('\n');
}

/* Request, then either print the raw body (--json) or parse it as a JSON
 * object into *out for the human output. Returns 0 with *out set (NULL
 * after --json) or an exit code. */
static int cli_fetch(cli_t *cli, const char *method, const char *path,
		     const char *body, json_t **out)
{
	*out = NULL;
	sv_client_resp_t resp;
	int rc = cli_request(cli, method, path, body, &resp);
	if (rc)
		return rc;
	if (cli->json) {
		print_raw(&resp);
		sv_client_resp_release(&resp);
		return 0;
	}
	json_error_t jerr;
	*out = json_loadb(resp.body, resp.len, 0, &jerr);
	if (!json_is_object(*out)) {
		fprintf(stderr,
			"streamvisor: the server's answer to %s %s is "
			"not a JSON object: %s\n",
			method, path, *out ? "other JSON" : jerr.text);
		json_decref(*out);
		*out = NULL;
		rc = EXIT_CLI_5XX;
	}
	sv_client_resp_release(&resp);
	return rc;
}

static int cli_get_job(cli_t *cli, const char *sub, const char *query,
		       json_t **out)
{
	char *path = job_path(cli->arg, sub);
	if (query) {
		char *p = NULL;
		if (asprintf(&p, "%s?%s", path, query) < 0)
			abort();
		free(path);
		path = p;
	}
	int rc = cli_fetch(cli, "GET", path, NULL, out);
	free(path);
	return rc;
}

/* Read a whole file ("-" is stdin) into body; 0 or an exit code. */
static int read_file(const char *path, const char *what, sv_buf_t *body)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "streamvisor: cannot read %s '%s': %s\n", what,
			path, strerror(errno));
		return EXIT_CLI_USAGE;
	}
	char chunk[8192];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		sv_buf_append(body, chunk, n);
	bool bad = ferror(f);
	if (f != stdin)
		fclose(f);
	if (bad || !body->len) {
		fprintf(stderr, "streamvisor: %s %s '%s'\n",
			bad ? "cannot read" : "empty", what, path);
		return EXIT_CLI_USAGE;
	}
	return 0;
}

static char *base64(const unsigned char *p, size_t n)
{
	static const char t[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		"0123456789+/";
	char *s = sv_malloc(4 * ((n + 2) / 3) + 1), *o = s;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*o++ = t[v >> 18];
		*o++ = t[(v >> 12) & 63];
		*o++ = i + 1 < n ? t[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? t[v & 63] : '=';
	}
	*o = '\0';
	return s;
}

/* --plan: put the Substrait plan into the spec's "plan" member (JSON as
 * "substrait", anything else as "substrait_base64"). */
static int add_plan(cli_t *cli, sv_buf_t *body)
{
	json_error_t jerr;
	json_t *spec = json_loadb(body->data, body->len, 0, &jerr);
	if (!json_is_object(spec)) {
		fprintf(stderr,
			"streamvisor: job spec '%s' is not a JSON object: "
			"%s\n",
			cli->arg, spec ? "other JSON" : jerr.text);
		json_decref(spec);
		return EXIT_CLI_USAGE;
	}
	sv_buf_t pb;
	sv_buf_init(&pb);
	int rc = read_file(cli->plan, "substrait plan", &pb);
	if (rc) {
		sv_buf_release(&pb);
		json_decref(spec);
		return rc;
	}
	json_t *plan = json_object_get(spec, "plan");
	if (!json_is_object(plan)) {
		plan = json_object();
		json_object_set_new(spec, "plan", plan);
	}
	json_t *pj = json_loadb(pb.data, pb.len, 0, NULL);
	if (json_is_object(pj)) {
		json_object_set_new(plan, "substrait", pj);
	} else {
		json_decref(pj);
		char *b64 = base64((const unsigned char *)pb.data, pb.len);
		json_object_set_new(plan, "substrait_base64", json_string(b64));
		free(b64);
	}
	sv_buf_release(&pb);
	char *text = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	sv_buf_reset(body);
	sv_buf_puts(body, text);
	free(text);
	return 0;
}

int cli_submit(cli_t *cli)
{
	sv_buf_t body;
	sv_buf_init(&body);
	int rc = read_file(cli->arg, "job spec", &body);
	if (!rc && cli->plan)
		rc = add_plan(cli, &body);
	if (rc) {
		sv_buf_release(&body);
		return rc;
	}
	json_t *r = NULL;
	if (cli->dry_run) {
		/* the answer is the translated spec: print it as it came */
		sv_client_resp_t resp;
		rc = cli_request(cli, "POST", "/v1/jobs?dry_run=true",
				 body.data, &resp);
		sv_buf_release(&body);
		if (rc)
			return rc;
		print_raw(&resp);
		sv_client_resp_release(&resp);
		return 0;
	}
	rc = cli_fetch(cli, "POST", "/v1/jobs", body.data, &r);
	sv_buf_release(&body);
	if (rc || !r)
		return rc;
	const char *id = json_string_value(json_object_get(r, "id"));
	if (!id) {
		fprintf(stderr,
			"streamvisor: the server's answer has no job "
			"id\n");
		rc = EXIT_CLI_5XX;
	} else {
		printf("%s\n", id);
	}
	json_decref(r);
	return rc;
}

int cli_jobs(cli_t *cli)
{
	json_t *r = NULL;
	int rc = cli_fetch(cli, "GET", "/v1/jobs", NULL, &r);
	if (rc || !r)
		return rc;
	table_t t;
	table_init(&t, 5, "llllr");
	static const char *const head[] = {"ID", "NAME", "MODE", "STATE",
					   "ATTEMPT"};
	for (size_t i = 0; i < SV_ARRAY_LEN(head); i++)
		table_add(&t, head[i]);
	size_t i;
	json_t *job;
	char buf[64];
	json_array_foreach (json_object_get(r, "jobs"), i, job) {
		static const char *const cols[] = {"id", "name", "mode",
						   "state", "attempt"};
		for (size_t c = 0; c < SV_ARRAY_LEN(cols); c++)
			table_add(&t,
				  json_text(json_object_get(job, cols[c]), buf,
					    sizeof(buf)));
	}
	table_print(&t);
	json_decref(r);
	return 0;
}

/* The integer member key of o as long long, or def. */
static long long int_of(json_t *o, const char *key, long long def)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

/* "[#####-----]  50.0%" into buf: width cells for percent (0..100). */
static const char *bar_text(double pct, char *buf, size_t n)
{
	enum {
		W = 30
	};
	char cells[W + 1];
	int full = (int)(fmin(fmax(pct, 0), 100) * W / 100.0 + 0.5);
	for (int i = 0; i < W; i++)
		cells[i] = i < full ? '#' : '-';
	cells[W] = '\0';
	snprintf(buf, n, "[%s] %5.1f%%", cells, pct);
	return buf;
}

static const char *eta_text(json_t *v, char *buf, size_t n)
{
	if (!json_is_number(v))
		return "unknown";
	double s = json_number_value(v);
	if (s < 60)
		snprintf(buf, n, "%.0f s", ceil(s));
	else if (s < 3600)
		snprintf(buf, n, "%d min %d s", (int)(s / 60),
			 (int)fmod(s, 60));
	else
		snprintf(buf, n, "%d h %d min", (int)(s / 3600),
			 (int)fmod(s / 60, 60));
	return buf;
}

/* The rates, and a bounded job's progress bar or a stream's catch-up ETA
 * (lines of `status` and `wait`). one_line: just the progress, no label
 * column (wait). */
static void print_progress(json_t *st, bool one_line)
{
	char b1[64], b2[64], b3[64], b4[64];
	json_t *rates = json_object_get(st, "rates");
	json_t *rin = json_object_get(rates, "records_in_per_s");
	json_t *rout = json_object_get(rates, "records_out_per_s");
	json_t *p = json_object_get(st, "progress");
	json_t *cu = json_object_get(st, "catch_up");
	if (!one_line && json_is_number(rin))
		printf("%-11s in %.1f/s, out %.1f/s\n", "rates",
		       json_number_value(rin),
		       json_is_number(rout) ? json_number_value(rout) : 0.0);
	if (json_is_object(p)) {
		json_t *pct = json_object_get(p, "percent");
		json_t *rate = json_object_get(p, "rate_per_s");
		if (!one_line)
			printf("%-11s ", "progress");
		if (json_is_number(pct))
			printf("%s",
			       bar_text(json_number_value(pct), b1,
					sizeof(b1)));
		else
			printf("(total not known yet)");
		printf("  %s/%s records",
		       json_text(json_object_get(p, "records"), b2, sizeof(b2)),
		       json_text(json_object_get(p, "total"), b3, sizeof(b3)));
		if (json_is_number(rate))
			printf(", %.0f/s", json_number_value(rate));
		printf(", ETA %s\n",
		       eta_text(json_object_get(p, "eta_s"), b4, sizeof(b4)));
	} else if (json_is_object(cu)) {
		json_t *eta = json_object_get(cu, "eta_s");
		if (one_line ||
		    (json_is_number(eta) && json_number_value(eta) > 0))
			printf("%s%s records behind, catch-up ETA %s\n",
			       one_line ? "" : "catch-up    ",
			       json_text(json_object_get(cu, "lag_records"), b1,
					 sizeof(b1)),
			       eta_text(eta, b2, sizeof(b2)));
	}
}

int cli_status(cli_t *cli)
{
	json_t *st = NULL;
	int rc = cli_get_job(cli, NULL, NULL, &st);
	if (rc || !st)
		return rc;
	char b1[64], b2[64], b3[64], b4[64], b5[64];
#define F(key) json_text(json_object_get(st, key), b1, sizeof(b1))
	printf("%-11s %s\n", "id", F("id"));
	printf("%-11s %s\n", "name", F("name"));
	printf("%-11s %s", "mode", F("mode"));
	if (json_object_get(st, "delivery"))
		printf(", delivery %s", F("delivery"));
	printf("\n%-11s %s", "state", F("state"));
	if (json_object_get(st, "state_since"))
		printf(" since %s", F("state_since"));
	printf("\n%-11s %s", "attempt", F("attempt"));
	if (json_object_get(st, "restarts"))
		printf(" (restarts %s)", F("restarts"));
	printf("\n");
	if (member(st, (const char *const[]){"next_attempt_at", NULL}))
		printf("%-11s %s\n", "next try", F("next_attempt_at"));
	printf("%-11s %s\n", "plan", F("plan_id"));
	if (json_object_get(st, "created_at"))
		printf("%-11s %s\n", "created", F("created_at"));
#undef F
	json_t *err = json_object_get(st, "error");
	if (json_is_object(err)) {
		printf("%-11s %s: %s", "error",
		       json_text(json_object_get(err, "category"), b1,
				 sizeof(b1)),
		       json_string_value(json_object_get(err, "message"))
			       ? json_string_value(
					 json_object_get(err, "message"))
			       : "");
		if (json_object_get(err, "attempt"))
			printf(" (attempt %s)",
			       json_text(json_object_get(err, "attempt"), b2,
					 sizeof(b2)));
		printf("\n");
	}
	json_t *wm = json_object_get(st, "watermark_ms");
	printf("%-11s %s\n", "watermark", ms_text(wm, b1, sizeof(b1)));
	json_t *lag = json_object_get(st, "lag");
	if (json_is_object(lag)) {
		json_t *secs = json_object_get(lag, "seconds");
		printf("%-11s %s records", "lag",
		       json_text(json_object_get(lag, "records"), b1,
				 sizeof(b1)));
		if (json_is_number(secs))
			printf(", %.3f s behind wall clock",
			       json_number_value(secs));
		printf("\n");
	}
	printf("%-11s in %s, out %s, late %s, invalid %s\n", "records",
	       json_text(json_object_get(st, "records_in"), b1, sizeof(b1)),
	       json_text(json_object_get(st, "records_out"), b2, sizeof(b2)),
	       json_text(json_object_get(st, "records_late"), b3, sizeof(b3)),
	       json_text(json_object_get(st, "records_invalid"), b4,
			 sizeof(b4)));
	json_t *ss = json_object_get(st, "state_size");
	if (json_is_object(ss))
		printf("%-11s %s bytes, %s keys\n", "state",
		       json_text(json_object_get(ss, "bytes"), b1, sizeof(b1)),
		       json_text(json_object_get(ss, "keys"), b2, sizeof(b2)));
	print_progress(st, false);
	json_t *ck = json_object_get(st, "last_checkpoint");
	if (json_is_object(ck))
		printf("%-11s %s %s, completed %s, %s ms, %s bytes\n",
		       "checkpoint",
		       json_text(json_object_get(ck, "id"), b1, sizeof(b1)),
		       json_text(json_object_get(ck, "status"), b2, sizeof(b2)),
		       json_text(json_object_get(ck, "completed_at"), b3,
				 sizeof(b3)),
		       json_text(json_object_get(ck, "duration_ms"), b4,
				 sizeof(b4)),
		       json_text(json_object_get(ck, "bytes"), b5, sizeof(b5)));
	else
		printf("%-11s none\n", "checkpoint");
	json_decref(st);
	return 0;
}

/* Follow a job until it is completed, failed, cancelled or checkpointed:
 * a progress line whenever the state or the whole percent changes (at most
 * one per poll), then the outcome; the exit code says which. */
int cli_wait(cli_t *cli)
{
	int64_t deadline = cli->timeout_ms >= 0 ? sv_mono_ms() + cli->timeout_ms
						: INT64_MAX;
	char *path = job_path(cli->arg, NULL);
	char last_state[32] = "";
	long long last_pct = -1;
	int rc = 0;
	for (;;) {
		sv_client_resp_t resp;
		if ((rc = cli_request(cli, "GET", path, NULL, &resp)))
			break;
		json_t *st = json_loadb(resp.body, resp.len, 0, NULL);
		const char *state = json_string_value(
			json_object_get(st, "state"));
		if (!state) {
			fprintf(stderr,
				"streamvisor: the status of '%s' has no "
				"state\n",
				cli->arg);
			json_decref(st);
			sv_client_resp_release(&resp);
			rc = EXIT_CLI_5XX;
			break;
		}
		bool done = true;
		if (!strcmp(state, "completed"))
			rc = 0;
		else if (!strcmp(state, "failed"))
			rc = EXIT_CLI_FAILED;
		else if (!strcmp(state, "cancelled"))
			rc = EXIT_CLI_CANCELLED;
		else if (!strcmp(state, "checkpointed"))
			rc = EXIT_CLI_CHECKPOINTED;
		else
			done = false;
		json_t *pct = json_object_get(json_object_get(st, "progress"),
					      "percent");
		long long p = json_is_number(pct)
			? (long long)json_number_value(pct)
			: -1;
		if (!cli->json &&
		    (strcmp(state, last_state) || p != last_pct || done)) {
			printf("%-12s ", state);
			print_progress(st, true);
			if (!json_object_get(st, "progress") &&
			    !json_object_get(st, "catch_up"))
				printf("\n");
			fflush(stdout);
		}
		snprintf(last_state, sizeof(last_state), "%s", state);
		last_pct = p;
		if (done) {
			if (cli->json)
				print_raw(&resp);
			else if (rc == EXIT_CLI_FAILED) {
				json_t *e = json_object_get(st, "error");
				const char *m = json_string_value(
					json_object_get(e, "message"));
				fprintf(stderr,
					"streamvisor: job '%s' failed: "
					"%s\n",
					cli->arg, m ? m : "(no message)");
			}
			json_decref(st);
			sv_client_resp_release(&resp);
			break;
		}
		json_decref(st);
		sv_client_resp_release(&resp);
		if (sv_mono_ms() >= deadline) {
			fprintf(stderr,
				"streamvisor: job '%s' is still %s after "
				"%lld ms\n",
				cli->arg, last_state, cli->timeout_ms);
			rc = EXIT_CLI_WAIT_TIMEOUT;
			break;
		}
		struct timespec ts = {0, 250 * 1000000L};
		nanosleep(&ts, NULL);
	}
	free(path);
	return rc;
}

int cli_lag(cli_t *cli)
{
	json_t *st = NULL;
	int rc = cli_get_job(cli, NULL, NULL, &st);
	if (rc || !st)
		return rc;
	table_t t;
	table_init(&t, 5, "lrrrr");
	static const char *const head[] = {"TOPIC", "PARTITION", "NEXT_OFFSET",
					   "END_OFFSET", "LAG"};
	for (size_t i = 0; i < SV_ARRAY_LEN(head); i++)
		table_add(&t, head[i]);
	size_t i;
	json_t *p;
	long long total = 0;
	char buf[64];
	json_array_foreach (json_object_get(st, "partitions"), i, p) {
		table_add(&t,
			  json_text(json_object_get(p, "topic"), buf,
				    sizeof(buf)));
		table_add(&t,
			  json_text(json_object_get(p, "partition"), buf,
				    sizeof(buf)));
		long long next = int_of(p, "next_offset", -1);
		long long end = int_of(p, "end_offset", -1);
		snprintf(buf, sizeof(buf), "%lld", next);
		table_add(&t, next >= 0 ? buf : "-");
		snprintf(buf, sizeof(buf), "%lld", end);
		table_add(&t, end >= 0 ? buf : "-");
		long long lag = int_of(p, "lag_records", 0);
		total += lag;
		snprintf(buf, sizeof(buf), "%lld", lag);
		table_add(&t, buf);
	}
	table_add(&t, "total");
	table_add(&t, "");
	table_add(&t, "");
	table_add(&t, "");
	json_t *lag = json_object_get(st, "lag");
	snprintf(buf, sizeof(buf), "%lld", int_of(lag, "records", total));
	table_add(&t, buf);
	table_print(&t);
	json_t *secs = json_object_get(lag, "seconds");
	json_t *wm = json_object_get(st, "watermark_ms");
	if (json_is_number(secs))
		printf("watermark lag: %.3f s (watermark %s)\n",
		       json_number_value(secs), ms_text(wm, buf, sizeof(buf)));
	else
		printf("watermark lag: - (no watermark yet)\n");
	json_decref(st);
	return 0;
}

/* POST an action; prints "<id>: <state>" from the answer. body may be
 * NULL. */
static int cli_action(cli_t *cli, const char *action, const char *body)
{
	char *path = job_path(cli->arg, action);
	json_t *r = NULL;
	int rc = cli_fetch(cli, "POST", path, body, &r);
	free(path);
	if (rc || !r)
		return rc;
	const char *id = json_string_value(json_object_get(r, "id"));
	const char *state = json_string_value(json_object_get(r, "state"));
	if (state) {
		printf("%s: %s\n", id ? id : cli->arg, state);
	} else {
		char *d = json_dumps(r, JSON_COMPACT);
		printf("%s\n", d ? d : "");
		free(d);
	}
	json_decref(r);
	return 0;
}

int cli_cancel(cli_t *cli)
{
	return cli_action(cli, "cancel", NULL);
}

int cli_resume(cli_t *cli)
{
	return cli_action(cli, "resume", NULL);
}

int cli_drain(cli_t *cli)
{
	json_t *b = json_pack("{s:b}", "final_watermark",
			      (int)cli->final_watermark);
	if (cli->timeout_ms >= 0) {
		json_object_set_new(b, "timeout_ms",
				    json_integer(cli->timeout_ms));
		/* the server may answer only when the drain is over */
		long long t = cli->timeout_ms + cli->client.timeout_ms;
		if (cli->client.timeout_ms > 0)
			cli->client.timeout_ms = t > INT_MAX ? INT_MAX : (int)t;
	}
	char *body = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	int rc = cli_action(cli, "drain", body);
	free(body);
	return rc;
}

int cli_restart(cli_t *cli)
{
	json_t *b = json_pack("{s:b}", "ignore_state", (int)cli->ignore_state);
	const char *from = cli->from_checkpoint;
	if (from && strcmp(from, "latest") == 0)
		json_object_set_new(b, "from_checkpoint", json_string(from));
	else if (from)
		json_object_set_new(b, "from_checkpoint",
				    json_integer(strtoll(from, NULL, 10)));
	if (cli->parallelism > 0)
		json_object_set_new(b, "parallelism",
				    json_integer(cli->parallelism));
	char *body = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	int rc = cli_action(cli, "restart", body);
	free(body);
	return rc;
}

int cli_checkpoint(cli_t *cli)
{
	char *path = job_path(cli->arg, "checkpoints");
	json_t *r = NULL;
	int rc = cli_fetch(cli, "POST", path, NULL, &r);
	free(path);
	if (rc || !r)
		return rc;
	/* {"checkpoint_id": n}, {"checkpoint": {"id": n}} or {"id": n} */
	json_t *ck = json_object_get(r, "checkpoint");
	json_t *id = json_object_get(r, "checkpoint_id");
	if (!id && json_is_object(ck))
		id = json_object_get(ck, "id");
	if (!id && json_is_integer(json_object_get(r, "id")))
		id = json_object_get(r, "id");
	char buf[64];
	if (id) {
		printf("%s\n", json_text(id, buf, sizeof(buf)));
	} else {
		char *d = json_dumps(r, JSON_COMPACT);
		printf("%s\n", d ? d : "");
		free(d);
	}
	json_decref(r);
	return 0;
}

int cli_checkpoints(cli_t *cli)
{
	json_t *r = NULL;
	int rc = cli_get_job(cli, "checkpoints", NULL, &r);
	if (rc || !r)
		return rc;
	table_t t;
	table_init(&t, 6, "rllrrl");
	static const char *const head[] = {"ID",           "STATUS",
					   "COMPLETED_AT", "DURATION_MS",
					   "BYTES",        "ATTEMPT"};
	for (size_t i = 0; i < SV_ARRAY_LEN(head); i++)
		table_add(&t, head[i]);
	static const char *const k_id[] = {"id", "checkpoint_id", NULL};
	static const char *const k_at[] = {"completed_at", "time", "started_at",
					   NULL};
	size_t i;
	json_t *ck;
	char buf[64];
	json_array_foreach (json_object_get(r, "checkpoints"), i, ck) {
		table_add(&t, json_text(member(ck, k_id), buf, sizeof(buf)));
		table_add(&t,
			  json_text(json_object_get(ck, "status"), buf,
				    sizeof(buf)));
		table_add(&t, json_text(member(ck, k_at), buf, sizeof(buf)));
		table_add(&t,
			  json_text(json_object_get(ck, "duration_ms"), buf,
				    sizeof(buf)));
		table_add(&t,
			  json_text(json_object_get(ck, "bytes"), buf,
				    sizeof(buf)));
		table_add(&t,
			  json_text(json_object_get(ck, "attempt"), buf,
				    sizeof(buf)));
	}
	table_print(&t);
	json_decref(r);
	return 0;
}

int cli_observations(cli_t *cli)
{
	char query[64] = "";
	if (cli->after >= 0 && cli->limit >= 0)
		snprintf(query, sizeof(query), "after=%lld&limit=%lld",
			 cli->after, cli->limit);
	else if (cli->after >= 0)
		snprintf(query, sizeof(query), "after=%lld", cli->after);
	else if (cli->limit >= 0)
		snprintf(query, sizeof(query), "limit=%lld", cli->limit);
	json_t *r = NULL;
	int rc = cli_get_job(cli, "observations", *query ? query : NULL, &r);
	if (rc || !r)
		return rc;
	size_t i;
	json_t *o;
	json_array_foreach (json_object_get(r, "observations"), i, o) {
		json_t *rest = json_deep_copy(o);
		static const char *const shown[] = {
			"seq", "time", "time_ms", "job_id", "attempt", "kind"};
		for (size_t k = 0; k < SV_ARRAY_LEN(shown); k++)
			json_object_del(rest, shown[k]);
		char *d = json_dumps(rest, JSON_COMPACT);
		char b1[64], b2[64];
		printf("%s %s attempt %lld %s %s\n",
		       json_text(json_object_get(o, "seq"), b1, sizeof(b1)),
		       json_text(json_object_get(o, "time"), b2, sizeof(b2)),
		       int_of(o, "attempt", 0),
		       json_string_value(json_object_get(o, "kind"))
			       ? json_string_value(json_object_get(o, "kind"))
			       : "?",
		       d ? d : "{}");
		free(d);
		json_decref(rest);
	}
	json_decref(r);
	return 0;
}

/* preview and result: {"rows": [...]} printed one compact row a line. */
static int cli_rows(cli_t *cli, const char *sub)
{
	char query[40];
	if (cli->limit >= 0)
		snprintf(query, sizeof(query), "limit=%lld", cli->limit);
	json_t *r = NULL;
	int rc = cli_get_job(cli, sub, cli->limit >= 0 ? query : NULL, &r);
	if (rc || !r)
		return rc;
	size_t i;
	json_t *row;
	json_array_foreach (json_object_get(r, "rows"), i, row) {
		char *d = json_dumps(row, JSON_COMPACT | JSON_ENCODE_ANY);
		printf("%s\n", d ? d : "");
		free(d);
	}
	if (json_is_true(json_object_get(r, "truncated")))
		fprintf(stderr,
			"streamvisor: %zu rows shown; the result has "
			"more (truncated)\n",
			json_array_size(json_object_get(r, "rows")));
	json_decref(r);
	return 0;
}

int cli_preview(cli_t *cli)
{
	return cli_rows(cli, "preview");
}

int cli_result(cli_t *cli)
{
	return cli_rows(cli, "result");
}

int cli_delete(cli_t *cli)
{
	char *base = job_path(cli->arg, NULL);
	char *path;
	if (asprintf(&path, "%s%s", base, cli->purge ? "?purge=true" : "") < 0)
		abort();
	free(base);
	json_t *r = NULL;
	int rc = cli_fetch(cli, "DELETE", path, NULL, &r);
	free(path);
	if (rc || !r)
		return rc;
	const char *id = json_string_value(json_object_get(r, "id"));
	printf("%s: deleted%s\n", id ? id : cli->arg,
	       json_is_true(json_object_get(r, "checkpoints_deleted"))
		       ? " with its checkpoints"
		       : "");
	json_decref(r);
	return 0;
}

int cli_info(cli_t *cli)
{
	json_t *r = NULL;
	int rc = cli_fetch(cli, "GET", "/v1/info", NULL, &r);
	if (rc || !r)
		return rc;
	char b1[64], b2[64];
	printf("%-9s %s %s\n", "backend",
	       json_text(json_object_get(r, "backend_kind"), b1, sizeof(b1)),
	       json_text(json_object_get(r, "backend_version"), b2,
			 sizeof(b2)));
	printf("%-9s %s\n", "identity",
	       json_text(json_object_get(r, "supervisor_identity"), b1,
			 sizeof(b1)));
	printf("%-9s %s\n", "started",
	       json_text(json_object_get(r, "started_at"), b1, sizeof(b1)));
	size_t i;
	json_t *c;
	printf("%-9s", "clusters");
	json_array_foreach (json_object_get(r, "clusters"), i, c)
		printf("%s %s%s", i ? "," : "",
		       json_text(json_object_get(c, "name"), b1, sizeof(b1)),
		       json_is_true(json_object_get(c, "development"))
			       ? " (embedded development cluster)"
			       : "");
	printf("\n\n");
	table_t t;
	table_init(&t, 3, "lll");
	table_add(&t, "CAPABILITY");
	table_add(&t, "STATUS");
	table_add(&t, "REASON");
	/* RFC 033 coverage records: the capability (with the operator or
	 * function a row is about), the state, and the adapter's words */
	json_t *notes = json_object_get(r, "capability_notes");
	json_array_foreach (json_object_get(r, "capabilities"), i, c) {
		json_t *req = json_object_get(c, "requirement");
		json_t *tg = json_object_get(req, "target");
		const char *cap = json_string_value(
			json_object_get(req, "capability"));
		const char *kind = json_string_value(
			json_object_get(tg, "kind"));
		char name[200];
		if (kind && strcmp(kind, "plan"))
			snprintf(name, sizeof(name), "%s [%s]", cap ? cap : "?",
				 json_text(json_object_get(tg, "name"), b1,
					   sizeof(b1)));
		else
			snprintf(name, sizeof(name), "%s", cap ? cap : "?");
		table_add(&t, name);
		table_add(
			&t,
			json_text(json_object_get(c, "state"), b1, sizeof(b1)));
		json_t *why = json_object_get(
			json_array_get(json_object_get(c, "diagnostics"), 0),
			"message");
		if (!json_is_string(why) && kind && !strcmp(kind, "plan"))
			why = json_object_get(notes, cap ? cap : "");
		table_add(&t,
			  json_is_string(why) ? json_string_value(why) : "");
	}
	table_print(&t);
	json_decref(r);
	return 0;
}

int cli_metrics(cli_t *cli)
{
	sv_client_resp_t resp;
	int rc = cli_request(cli, "GET", "/metrics", NULL, &resp);
	if (rc)
		return rc;
	fwrite(resp.body, 1, resp.len, stdout);
	sv_client_resp_release(&resp);
	return 0;
}

/* A non-negative decimal integer, all of s. */
static bool parse_count(const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < 0 || !isdigit((unsigned char)*s))
		return false;
	*out = v;
	return true;
}

static int cli_usage_error(const command_t *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int cli_usage_error(const command_t *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "streamvisor %s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: streamvisor %s %s%s[--server URL]\n",
		cmd->name, cmd->usage, *cmd->usage ? " " : "");
	return EXIT_CLI_USAGE;
}

/* Parse a CLI command's options (argv[0] is the command name) and run it.
 * server is the URL from before the command name, or NULL. */
int cli_run(const command_t *cmd, int argc, char **argv, const char *server)
{
	static const struct option opts[] = {
		{"server", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"final-watermark", no_argument, NULL, 'F'},
		{"timeout-ms", required_argument, NULL, 'T'},
		{"from-checkpoint", required_argument, NULL, 'C'},
		{"ignore-state", no_argument, NULL, 'I'},
		{"limit", required_argument, NULL, 'n'},
		{"after", required_argument, NULL, 'A'},
		{"purge", no_argument, NULL, 'P'},
		{"plan", required_argument, NULL, 'p'},
		{"dry-run", no_argument, NULL, 'D'},
		{"parallelism", required_argument, NULL, 'N'},
		{"token-file", required_argument, NULL, 'K'},
		{"cacert", required_argument, NULL, 'R'},
		{"cert", required_argument, NULL, 'E'},
		{"key", required_argument, NULL, 'Y'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct {
		int c;
		unsigned bit;
	} bits[] = {
		{'j', OPT_JSON},    {'F', OPT_FINAL_WM},     {'T', OPT_TIMEOUT},
		{'C', OPT_FROM_CK}, {'I', OPT_IGNORE_STATE}, {'n', OPT_LIMIT},
		{'A', OPT_AFTER},   {'P', OPT_PURGE},        {'p', OPT_PLAN},
		{'D', OPT_DRY_RUN}, {'N', OPT_PARALLELISM},
	};
	cli_t cli = {.cmd = cmd,
		     .server = server,
		     .timeout_ms = -1,
		     .limit = -1,
		     .after = -1,
		     .parallelism = -1};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:jn:h", opts, NULL)) != -1) {
		const char *opt = argv[optind - 1];
		if (c == '?')
			return cli_usage_error(cmd, "unknown option '%s'", opt);
		if (c == ':')
			return cli_usage_error(cmd, "option '%s' needs a value",
					       opt);
		for (size_t i = 0; i < SV_ARRAY_LEN(bits); i++)
			if (bits[i].c == c && !(cmd->opts & bits[i].bit))
				return cli_usage_error(cmd,
						       "option '%s' does "
						       "not apply here",
						       opt);
		switch (c) {
		case 's':
			cli.server = optarg;
			break;
		case 'K':
			cli.token_file = optarg;
			break;
		case 'R':
			cli.cacert = optarg;
			break;
		case 'E':
			cli.cert = optarg;
			break;
		case 'Y':
			cli.key = optarg;
			break;
		case 'j':
			cli.json = true;
			break;
		case 'F':
			cli.final_watermark = true;
			break;
		case 'I':
			cli.ignore_state = true;
			break;
		case 'P':
			cli.purge = true;
			break;
		case 'p':
			cli.plan = optarg;
			break;
		case 'D':
			cli.dry_run = true;
			break;
		case 'C':
			if (strcmp(optarg, "latest") != 0 &&
			    !parse_count(optarg, &(long long){0}))
				return cli_usage_error(cmd,
						       "--from-checkpoint "
						       "takes a checkpoint id "
						       "or 'latest', not "
						       "'%s'",
						       optarg);
			cli.from_checkpoint = optarg;
			break;
		case 'N': {
			long long v;
			if (!parse_count(optarg, &v) || v < 1)
				return cli_usage_error(cmd,
						       "--parallelism takes "
						       "a positive integer, "
						       "not '%s'",
						       optarg);
			cli.parallelism = v;
			break;
		}
		case 'T':
		case 'n':
		case 'A': {
			long long v;
			if (!parse_count(optarg, &v))
				return cli_usage_error(
					cmd,
					"option '%s' takes "
					"a non-negative integer, not '%s'",
					c == 'T'           ? "--timeout-ms"
						: c == 'n' ? "--limit"
							   : "--after",
					optarg);
			*(c == 'T'           ? &cli.timeout_ms
				  : c == 'n' ? &cli.limit
					     : &cli.after) = v;
			break;
		}
		case 'h':
			printf("usage: streamvisor %s %s%s[--server URL]\n"
			       "%s\n",
			       cmd->name, cmd->usage, *cmd->usage ? " " : "",
			       cmd->summary);
			return 0;
		default:
			return cli_usage_error(cmd, "unknown option '%s'", opt);
		}
	}
	int nargs = argc - optind;
	if (cmd->arg && nargs < 1)
		return cli_usage_error(cmd, "missing %s", cmd->arg);
	if (nargs > (cmd->arg ? 1 : 0))
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind + (cmd->arg ? 1 : 0)]);
	if (cmd->arg) {
		cli.arg = argv[optind];
		if (!*cli.arg)
			return cli_usage_error(cmd, "empty %s", cmd->arg);
	}
	if (!cli.server) {
		const char *env = getenv(SERVER_ENV);
		cli.server = env && *env ? env : DEFAULT_SERVER;
	}
	sv_error_t *err = sv_client_init(&cli.client, cli.server);
	if (err) {
		fprintf(stderr, "streamvisor: %s\n", err->message);
		sv_error_destroy(err);
		sv_client_release(&cli.client);
		return EXIT_CLI_USAGE;
	}
	/* TLS files: the option, else its environment variable */
	const char *const tls_env[] = {CACERT_ENV, CERT_ENV, KEY_ENV};
	const char **tls_opt[] = {&cli.cacert, &cli.cert, &cli.key};
	for (size_t i = 0; i < SV_ARRAY_LEN(tls_env); i++) {
		const char *e = getenv(tls_env[i]);
		if (!*tls_opt[i] && e && *e)
			*tls_opt[i] = e;
	}
	if ((err = sv_client_set_tls(&cli.client, cli.cacert, cli.cert,
				     cli.key))) {
		fprintf(stderr, "streamvisor: %s\n", err->message);
		sv_error_destroy(err);
		sv_client_release(&cli.client);
		return EXIT_CLI_USAGE;
	}
	/* the token: --token-file, else $STREAMVISOR_TOKEN, else
	 * $STREAMVISOR_TOKEN_FILE (never a command-line argument itself:
	 * other users see argv) */
	const char *tf = cli.token_file;
	const char *tenv = getenv(TOKEN_ENV);
	if (!tf && !(tenv && *tenv)) {
		const char *e = getenv(TOKEN_FILE_ENV);
		tf = e && *e ? e : NULL;
	}
	if (tf) {
		char *tok = NULL;
		if ((err = sv_client_read_token_file(tf, &tok))) {
			fprintf(stderr, "streamvisor: %s\n", err->message);
			sv_error_destroy(err);
			sv_client_release(&cli.client);
			return EXIT_CLI_USAGE;
		}
		sv_client_set_token(&cli.client, tok);
		explicit_bzero(tok, strlen(tok));
		free(tok);
	} else if (tenv && *tenv) {
		sv_client_set_token(&cli.client, tenv);
	}
	const char *tmo = getenv(TIMEOUT_ENV);
	if (tmo && *tmo) {
		long long v;
		if (!parse_count(tmo, &v) || v > INT_MAX) {
			sv_client_release(&cli.client);
			return cli_usage_error(cmd,
					       "$" TIMEOUT_ENV " takes "
					       "milliseconds, not '%s'",
					       tmo);
		}
		cli.client.timeout_ms = (int)v; /* 0: no deadline */
	}
	int rc = cmd->client(&cli);
	sv_client_release(&cli.client);
	if (fflush(stdout) != 0 && rc == 0) {
		fprintf(stderr, "streamvisor: cannot write output: %s\n",
			strerror(errno));
		rc = EXIT_CLI_USAGE;
	}
	return rc;
}
