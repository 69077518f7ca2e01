/* testkit.c — integration test helpers (see testkit.h). Uses librdkafka
 * directly (admin, producer, consumer) as an independent reader and writer,
 * so tests do not verify streamvisor with streamvisor's own Kafka code. */
#define _GNU_SOURCE
#include "tests/integration/testkit.h"

#include <librdkafka/rdkafka.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "cli/client.h"
#include "supervisor/auth.h"

/* A request that takes longer than this fails the test. */
#define TK_HTTP_TIMEOUT_MS 120000

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fail_msg("%s", msg);
}

static rd_kafka_t *client_conf(rd_kafka_type_t type, const char *group,
			       bool read_committed, rd_kafka_conf_t *conf)
{
	char err[512];
	rd_kafka_conf_set(conf, "bootstrap.servers", tk_bootstrap(), err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
	if (group) {
		rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
		rd_kafka_conf_set(conf, "enable.auto.commit", "false", err,
				  sizeof(err));
		rd_kafka_conf_set(conf, "isolation.level",
				  read_committed ? "read_committed"
						 : "read_uncommitted",
				  err, sizeof(err));
	}
	rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof(err));
	if (!rk)
		die("cannot create kafka client: %s", err);
	return rk;
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *group,
			  bool read_committed)
{
	return client_conf(type, group, read_committed, rd_kafka_conf_new());
}

static char *bs;

void tk_use_bootstrap(const char *bootstrap)
{
	free(bs);
	bs = bootstrap ? sv_strdup(bootstrap) : NULL;
}

const char *tk_bootstrap(void)
{
	if (bs)
		return bs;
	const char *e = getenv("KAFKA_BOOTSTRAP");
	if (!e || !*e)
		die("KAFKA_BOOTSTRAP is not set: integration tests need the "
		    "real "
		    "broker (deploy/kafka/kafka.sh start)");
	bs = sv_strdup(e);
	rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL, false);
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t r = rd_kafka_metadata(rk, 0, NULL, &md, 15000);
	if (r)
		die("kafka broker %s does not answer: %s", bs,
		    rd_kafka_err2str(r));
	rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(rk);
	return bs;
}

char *tk_unique(const char *prefix)
{
	static int n;
	char *s;
	if (asprintf(&s, "%s-%d-%ld-%d", prefix, (int)getpid(),
		     (long)(sv_now_ms() % 100000000), ++n) < 0)
		abort();
	return s;
}

void tk_create_topic(const char *topic, int partitions)
{
	rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL, false);
	char err[256];
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1,
							err, sizeof(err));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	if (!ev)
		die("create topic '%s': no answer", topic);
	const rd_kafka_CreateTopics_result_t *res =
		rd_kafka_event_CreateTopics_result(ev);
	size_t n;
	const rd_kafka_topic_result_t **tr =
		rd_kafka_CreateTopics_result_topics(res, &n);
	if (n != 1 ||
	    (rd_kafka_topic_result_error(tr[0]) &&
	     rd_kafka_topic_result_error(tr[0]) !=
		     RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS))
		die("create topic '%s': %s", topic,
		    n ? rd_kafka_topic_result_error_string(tr[0])
		      : "no result");
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_NewTopic_destroy(nt);
	/* wait until every partition has a leader */
	int64_t deadline = sv_mono_ms() + 30000;
	for (;;) {
		rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
		const struct rd_kafka_metadata *md;
		bool ok = false;
		if (!rd_kafka_metadata(rk, 0, rkt, &md, 5000)) {
			ok = md->topic_cnt == 1 && !md->topics[0].err &&
				md->topics[0].partition_cnt == partitions;
			for (int i = 0; ok && i < md->topics[0].partition_cnt;
			     i++)
				ok = md->topics[0].partitions[i].leader >= 0;
			rd_kafka_metadata_destroy(md);
		}
		rd_kafka_topic_destroy(rkt);
		if (ok)
			break;
		if (sv_mono_ms() > deadline)
			die("topic '%s' has no leaders after 30 s", topic);
		usleep(100000);
	}
	rd_kafka_destroy(rk);
}

/* The delivery reports of one produce call: failures are counted (a
 * produce that never arrives must fail the test, not shrink its input) and
 * each record's partition and offset kept (its index is the message's
 * opaque), to check that the log holds the records in produce order. */
typedef struct delivery {
	size_t n, failed;
	int32_t *part;
	int64_t *off;
} delivery_t;

static void dr_record(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op)
{
	(void)rk;
	delivery_t *d = op;
	size_t i = (size_t)(uintptr_t)m->_private;
	if (m->err)
		d->failed++;
	else if (i < d->n) {
		d->part[i] = m->partition;
		d->off[i] = m->offset;
	}
}

/* The producer of test input. Idempotent: without it librdkafka may
 * reorder a partition's records when it retries a request (e.g. one sent
 * to a partition the broker has not loaded yet, right after the topic was
 * created, while a later request succeeds), and tests read the input in
 * produce order (event time, sentinels last). partitioner NULL: the
 * default. */
static rd_kafka_t *input_producer(delivery_t *d, size_t n,
				  const char *partitioner)
{
	char err[256];
	d->n = n;
	d->failed = 0;
	d->part = sv_calloc(n ? n : 1, sizeof(*d->part));
	d->off = sv_calloc(n ? n : 1, sizeof(*d->off));
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "bootstrap.servers", tk_bootstrap(), err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
	if (rd_kafka_conf_set(conf, "enable.idempotence", "true", err,
			      sizeof(err)) != RD_KAFKA_CONF_OK ||
	    (partitioner &&
	     rd_kafka_conf_set(conf, "partitioner", partitioner, err,
			       sizeof(err)) != RD_KAFKA_CONF_OK))
		die("producer: %s", err);
	rd_kafka_conf_set(conf, "linger.ms", "20", err, sizeof(err));
	rd_kafka_conf_set_dr_msg_cb(conf, dr_record);
	rd_kafka_conf_set_opaque(conf, d);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err,
				      sizeof(err));
	if (!rk)
		die("producer: %s", err);
	return rk;
}

/* After the flush: every record arrived, and each partition's offsets
 * follow produce order (a reordered input would make a test fail later
 * and far from its cause, e.g. as late records that never fire). */
static void delivery_check(const char *topic, delivery_t *d)
{
	size_t failed = d->failed;
	int32_t np = 0;
	for (size_t i = 0; i < d->n; i++)
		if (d->part[i] >= np)
			np = d->part[i] + 1;
	int64_t *last = sv_calloc((size_t)np + 1, sizeof(*last));
	size_t bad = SIZE_MAX, prev = 0;
	for (int32_t p = 0; p < np; p++)
		last[p] = -1;
	size_t *at = sv_calloc((size_t)np + 1, sizeof(*at));
	for (size_t i = 0; !failed && i < d->n && bad == SIZE_MAX; i++) {
		int32_t p = d->part[i];
		if (d->off[i] <= last[p]) {
			bad = i;
			prev = at[p];
		}
		last[p] = d->off[i];
		at[p] = i;
	}
	int32_t bp = bad != SIZE_MAX ? d->part[bad] : -1;
	int64_t boff = bad != SIZE_MAX ? d->off[bad] : -1;
	int64_t poff = bad != SIZE_MAX ? d->off[prev] : -1;
	free(last);
	free(at);
	free(d->part);
	free(d->off);
	if (failed)
		die("produce to '%s': %zu of %zu records were not delivered",
		    topic, failed, d->n);
	if (bad != SIZE_MAX)
		die("produce to '%s': partition %d holds record %zu at offset "
		    "%lld, before record %zu (offset %lld): not in produce "
		    "order",
		    topic, (int)bp, bad, (long long)boff, prev,
		    (long long)poff);
}

static int partition_count(rd_kafka_t *rk, const char *topic)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	int n = 0;
	if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) ==
		    RD_KAFKA_RESP_ERR_NO_ERROR &&
	    md->topic_cnt == 1 && !md->topics[0].err)
		n = md->topics[0].partition_cnt;
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	if (n <= 0)
		die("produce to '%s': cannot read its partitions", topic);
	return n;
}

void tk_produce(const char *topic, const char *const *payloads, size_t n)
{
	delivery_t d;
	rd_kafka_t *rk = input_producer(&d, n, NULL);
	int nparts = partition_count(rk, topic);
	for (size_t i = 0; i < n; i++) {
		for (;;) {
			rd_kafka_resp_err_t r = rd_kafka_producev(
				rk, RD_KAFKA_V_TOPIC(topic),
				RD_KAFKA_V_VALUE((void *)payloads[i],
						 strlen(payloads[i])),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_PARTITION(
					(int32_t)(i % (size_t)nparts)),
				RD_KAFKA_V_OPAQUE((void *)(uintptr_t)i),
				RD_KAFKA_V_END);
			if (r == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
				rd_kafka_poll(rk, 10);
				continue;
			}
			if (r)
				die("produce to '%s': %s", topic,
				    rd_kafka_err2str(r));
			break;
		}
	}
	if (rd_kafka_flush(rk, 60000))
		die("produce to '%s': flush timed out", topic);
	rd_kafka_destroy(rk);
	delivery_check(topic, &d);
}

void tk_produce_keyed(const char *topic, const char *const *payloads,
		      const char *const *keys, const int32_t *partitions,
		      size_t n)
{
	delivery_t d;
	/* the Java client's default: what source.partitioned_by declares */
	rd_kafka_t *rk = input_producer(&d, n, "murmur2_random");
	for (size_t i = 0; i < n; i++) {
		for (;;) {
			int32_t part = partitions ? partitions[i]
						  : RD_KAFKA_PARTITION_UA;
			rd_kafka_resp_err_t r = rd_kafka_producev(
				rk, RD_KAFKA_V_TOPIC(topic),
				RD_KAFKA_V_VALUE((void *)payloads[i],
						 strlen(payloads[i])),
				RD_KAFKA_V_KEY((void *)keys[i],
					       strlen(keys[i])),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_PARTITION(part),
				RD_KAFKA_V_OPAQUE((void *)(uintptr_t)i),
				RD_KAFKA_V_END);
			if (r == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
				rd_kafka_poll(rk, 10);
				continue;
			}
			if (r)
				die("produce to '%s': %s", topic,
				    rd_kafka_err2str(r));
			break;
		}
	}
	if (rd_kafka_flush(rk, 60000))
		die("produce to '%s': flush timed out", topic);
	rd_kafka_destroy(rk);
	delivery_check(topic, &d);
}

size_t tk_consume(const char *topic, size_t expect, int timeout_ms,
		  bool read_committed, char ***out)
{
	char *group = tk_unique("tk-reader");
	rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, group, read_committed);
	free(group);
	rd_kafka_poll_set_consumer(rk);
	/* assign every partition from the beginning */
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md;
	if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) || md->topic_cnt != 1 ||
	    md->topics[0].err)
		die("no metadata for topic '%s'", topic);
	rd_kafka_topic_partition_list_t *parts =
		rd_kafka_topic_partition_list_new(md->topics[0].partition_cnt);
	for (int i = 0; i < md->topics[0].partition_cnt; i++)
		rd_kafka_topic_partition_list_add(parts, topic, i)->offset =
			RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_assign(rk, parts);
	rd_kafka_topic_partition_list_destroy(parts);

	size_t n = 0, cap = expect + 16;
	char **lines = sv_calloc(cap, sizeof(char *));
	int64_t deadline = sv_mono_ms() + timeout_ms;
	int64_t settle = -1;
	while (sv_mono_ms() < deadline) {
		if (n >= expect && settle < 0)
			settle = sv_mono_ms() + 1000;
		if (settle >= 0 && sv_mono_ms() > settle)
			break;
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
		if (!m)
			continue;
		if (!m->err) {
			if (n == cap) {
				cap *= 2;
				lines = sv_realloc(lines, cap * sizeof(char *));
			}
			lines[n++] = sv_strndup(m->payload ? m->payload : "",
						m->len);
		}
		rd_kafka_message_destroy(m);
	}
	/* a test that waits out the whole timeout says so (an expected count
	 * that never comes costs the suite its timeout every run) */
	if (n < expect)
		fprintf(stderr,
			"tk_consume: %s: %zu of %zu lines after the whole "
			"timeout of %d ms\n",
			topic, n, expect, timeout_ms);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	*out = lines;
	return n;
}

void tk_free_lines(char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

void tk_service_start(tk_service_t *svc)
{
	sv_svconf_t conf;
	sv_svconf_init(&conf);
	sv_svconf_set_cluster(&conf, "default", tk_bootstrap(), false);
	free(conf.data_dir);
	conf.data_dir = tk_unique("/tmp/sv-it-data");
	conf.listen_port = 0;
	/* file sinks of the tests write under /tmp */
	conf.file_sink_roots = sv_calloc(1, sizeof(char *));
	conf.file_sink_roots[0] = sv_strdup("/tmp");
	conf.nfile_sink_roots = 1;
	/* $STREAMVISOR_TOKEN set: the API runs with authentication, that
	 * token being an admin's, and tk_http sends it (docs/security.md) */
	const char *tok = getenv("STREAMVISOR_TOKEN");
	if (tok && *tok) {
		char hex[65];
		sv_auth_hash_hex(tok, strlen(tok), hex);
		conf.tokens_file = tk_unique("/tmp/sv-it-tokens");
		FILE *f = fopen(conf.tokens_file, "w");
		if (!f || fchmod(fileno(f), 0600) != 0)
			die("cannot write '%s'", conf.tokens_file);
		fprintf(f, "testkit: {role: admin, sha256: %s}\n", hex);
		fclose(f);
	}
	sv_error_t *err = sv_supervisor_new(&conf, &svc->sv);
	if (err)
		die("supervisor: %s", err->message);
	err = sv_http_start_conf(svc->sv, &conf, &svc->http);
	if (conf.tokens_file)
		unlink(conf.tokens_file);
	sv_svconf_release(&conf);
	if (err)
		die("http: %s", err->message);
	svc->port = sv_http_port(svc->http);
}

void tk_service_stop(tk_service_t *svc)
{
	sv_http_stop(svc->http);
	sv_supervisor_destroy(svc->sv);
	memset(svc, 0, sizeof(*svc));
}

int tk_http(int port, const char *method, const char *path, const char *body,
	    char **resp)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	sv_client_t cl;
	sv_error_t *err = sv_client_init(&cl, url);
	if (err)
		die("%s", err->message);
	cl.timeout_ms = TK_HTTP_TIMEOUT_MS;
	const char *tok = getenv("STREAMVISOR_TOKEN");
	if (tok && *tok)
		sv_client_set_token(&cl, tok);
	sv_client_resp_t r;
	err = sv_client_request(&cl, method, path, "application/json", body,
				body ? strlen(body) : 0, &r);
	sv_client_release(&cl);
	if (err)
		die("%s %s: %s", method, path, err->message);
	int status = r.status;
	if (resp) {
		*resp = r.body;
		r.body = NULL;
	}
	sv_client_resp_release(&r);
	return status;
}

json_t *tk_http_json(int port, const char *method, const char *path,
		     const char *body, int *status)
{
	char *resp = NULL;
	int st = tk_http(port, method, path, body, &resp);
	if (status)
		*status = st;
	json_error_t jerr;
	json_t *j = json_loads(resp, 0, &jerr);
	if (!j)
		die("%s %s → %d, not JSON: %s", method, path, st, resp);
	free(resp);
	return j;
}

json_t *tk_wait_status(int port, const char *id,
		       bool (*pred)(json_t *status, void *arg), void *arg,
		       int timeout_ms, const char *what)
{
	char path[256];
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	int64_t deadline = sv_mono_ms() + timeout_ms;
	json_t *st = NULL;
	for (;;) {
		json_decref(st);
		st = tk_http_json(port, "GET", path, NULL, NULL);
		if (pred(st, arg))
			return st;
		if (sv_mono_ms() > deadline) {
			char *s = json_dumps(st, JSON_COMPACT);
			die("job %s: timed out after %d ms waiting for %s; "
			    "last "
			    "status %s",
			    id, timeout_ms, what, s);
		}
		usleep(50000);
	}
}

static bool state_is(json_t *st, void *arg)
{
	const char *s = json_string_value(json_object_get(st, "state"));
	if (s && (!strcmp(s, "failed")) && strcmp(arg, "failed")) {
		char *d = json_dumps(st, JSON_COMPACT);
		die("job failed while waiting for '%s': %s", (const char *)arg,
		    d);
	}
	return s && !strcmp(s, arg);
}

json_t *tk_wait_state(int port, const char *id, const char *state,
		      int timeout_ms)
{
	char what[64];
	snprintf(what, sizeof(what), "state '%s'", state);
	return tk_wait_status(port, id, state_is, (void *)state, timeout_ms,
			      what);
}

char *tk_submit(int port, const char *spec)
{
	int status;
	json_t *r = tk_http_json(port, "POST", "/v1/jobs", spec, &status);
	if (status != 201) {
		char *body = json_dumps(r, 0);
		die("submit: HTTP %d: %s", status, body ? body : "");
	}
	char *id = strdup(json_string_value(json_object_get(r, "id")));
	json_decref(r);
	return id;
}
