/* dist.c — distributed mode's node identity and job registry (dist.h).
 *
 * The node id file is written once, atomically (temporary file, fsync,
 * rename), and only read afterwards: a data dir belongs to one node.
 *
 * The registry uses two librdkafka clients made by kafka/client.c: an
 * idempotent producer (acks=all) for job and node records, and a consumer
 * with no group that is assigned partition 0 of the registry topic from
 * the beginning and reads with read_committed on its own thread, calling
 * the apply callback for every job record. Reading the whole compacted
 * topic at start is how a node that was down learns the jobs submitted
 * meanwhile (Kafka Connect's config topic, read to the end). There is no
 * leader yet: any node writes job records, so two nodes accepting the same
 * name at the same moment both write it (docs/cluster.md says so); ids are
 * random, so records never collide. A bounded job's record also carries
 * its end offsets (`end_offsets`, taken by sv_dist_end_offsets with a
 * read_committed consumer's ListOffsets: the last stable offsets). */
#define _GNU_SOURCE
#include "cluster/dist.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "core/log.h"
#include "core/util.h"
#include "kafka/client.h"

#define DIST_TIMEOUT_MS 10000

struct sv_dist {
	char *name, *node_id, *url, *topic;
	sv_dist_conf_t conf;
	sv_logctx_t log;
	rd_kafka_t *prod;
	rd_kafka_t *cons;
	pthread_mutex_t lock; /* one publish at a time */
	rd_kafka_resp_err_t dr_err; /* under lock: the last delivery */
	int dr_pending;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	_Atomic int64_t applied;
	/* attempts/<job>/<node> records as read (under lock) */
	struct dist_attempts {
		char *job, *node;
		int64_t window_start_ms;
		int attempts;
	} * att;
	size_t natt;
	pthread_mutex_t att_lock;
};

/* ---- node id ---- */

static bool id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return false;
	return true;
}

static sv_error_t *node_err(sv_error_t *err)
{
	return sv_error_set_field(err, "distributed.node_id");
}

static int mkdir_p(const char *dir)
{
	char *p = sv_strdup(dir);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (mkdir(p, 0750) && errno != EEXIST) {
				free(p);
				return -1;
			}
			*s = '/';
		}
	int rc = mkdir(p, 0750) && errno != EEXIST ? -1 : 0;
	free(p);
	return rc;
}

sv_error_t *sv_dist_node_id(const char *data_dir, const char *configured,
			    char **out)
{
	*out = NULL;
	char path[4096], tmp[4200];
	snprintf(path, sizeof(path), "%s/node_id", data_dir);
	FILE *f = fopen(path, "r");
	if (f) {
		char buf[128] = {0};
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
			buf[--n] = 0;
		if (!id_ok(buf))
			return node_err(sv_error_new(SV_ERR_CONFIG,
						     "the node id file '%s' "
						     "holds no valid node id",
						     path));
		if (configured && strcmp(configured, buf))
			return node_err(sv_error_new(
				SV_ERR_CONFIG,
				"data dir '%s' belongs to node '%s', not '%s': "
				"give this node its own data dir, or its old "
				"node_id",
				data_dir, buf, configured));
		*out = sv_strdup(buf);
		return NULL;
	}
	char made[32];
	if (!configured) {
		unsigned char r[4] = {0};
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || read(fd, r, sizeof(r)) != (ssize_t)sizeof(r)) {
			if (fd >= 0)
				close(fd);
			return node_err(sv_error_new(
				SV_ERR_CONFIG, "cannot make a node id: %s",
				strerror(errno)));
		}
		close(fd);
		snprintf(made, sizeof(made), "node-%02x%02x%02x%02x", r[0],
			 r[1], r[2], r[3]);
		configured = made;
	}
	if (mkdir_p(data_dir))
		return node_err(sv_error_new(SV_ERR_CONFIG,
					     "cannot make data dir '%s': %s",
					     data_dir, strerror(errno)));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	size_t len = strlen(configured);
	bool ok = fd >= 0 && write(fd, configured, len) == (ssize_t)len &&
		write(fd, "\n", 1) == 1 && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok || rename(tmp, path))
		return node_err(sv_error_new(SV_ERR_CONFIG,
					     "cannot write the node id file "
					     "'%s': %s",
					     path, strerror(errno)));
	*out = sv_strdup(configured);
	return NULL;
}

void sv_dist_jobs_topic(const char *name, char *out, size_t n)
{
	snprintf(out, n, "_streamvisor.%s.jobs", name);
}

/* ---- registry ---- */

static void on_delivery(void *opaque, const rd_kafka_message_t *m)
{
	sv_dist_t *d = opaque;
	d->dr_err = m->err;
	d->dr_pending--;
}

static sv_error_t *create_topic(sv_dist_t *d)
{
	char errstr[256];
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(
		d->topic, 1,
		d->conf.replication_factor > 0 ? d->conf.replication_factor : 1,
		errstr, sizeof(errstr));
	if (!nt)
		return sv_error_new(SV_ERR_CONFIG,
				    "cannot describe topic '%s': %s", d->topic,
				    errstr);
	rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
	rd_kafka_queue_t *q = rd_kafka_queue_new(d->prod);
	rd_kafka_CreateTopics(d->prod, &nt, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, DIST_TIMEOUT_MS);
	rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
	if (ev) {
		e = rd_kafka_event_error(ev);
		const rd_kafka_CreateTopics_result_t *res =
			rd_kafka_event_CreateTopics_result(ev);
		size_t n = 0;
		const rd_kafka_topic_result_t **tr = res
			? rd_kafka_CreateTopics_result_topics(res, &n)
			: NULL;
		if (!e && n == 1)
			e = rd_kafka_topic_result_error(tr[0]);
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_queue_destroy(q);
	rd_kafka_NewTopic_destroy(nt);
	if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
		return sv_kafka_error(d->prod, &d->log, SV_ERR_BINDING, e, NULL,
				      "cannot create the job registry topic "
				      "'%s' on cluster '%s'",
				      d->topic, d->conf.kafka->name);
	return NULL;
}

static sv_error_t *produce(sv_dist_t *d, const char *key, const char *value)
{
	pthread_mutex_lock(&d->lock);
	d->dr_pending = 1;
	d->dr_err = 0;
	rd_kafka_resp_err_t e = rd_kafka_producev(
		d->prod, RD_KAFKA_V_TOPIC(d->topic), RD_KAFKA_V_PARTITION(0),
		RD_KAFKA_V_KEY(key, strlen(key)),
		RD_KAFKA_V_VALUE((void *)value, strlen(value)),
		RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
	if (!e) {
		int64_t deadline = sv_mono_ms() + DIST_TIMEOUT_MS;
		while (d->dr_pending > 0 && sv_mono_ms() < deadline)
			rd_kafka_poll(d->prod, 100);
		e = d->dr_pending > 0 ? RD_KAFKA_RESP_ERR__TIMED_OUT
				      : d->dr_err;
	}
	pthread_mutex_unlock(&d->lock);
	if (e)
		return sv_kafka_error(d->prod, &d->log, SV_ERR_BINDING, e, NULL,
				      "cannot write '%s' to the job registry "
				      "topic '%s'",
				      key, d->topic);
	return NULL;
}

/* A record's `end_offsets` (an array, index = partition) into *ends (the
 * caller's); returns the count, 0 when absent or not all integers. */
static size_t record_ends(const json_t *a, int64_t **ends)
{
	*ends = NULL;
	size_t n = json_is_array(a) ? json_array_size(a) : 0;
	if (!n)
		return 0;
	*ends = sv_calloc(n, sizeof(**ends));
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_array_get(a, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			free(*ends);
			*ends = NULL;
			return 0;
		}
		(*ends)[i] = json_integer_value(v);
	}
	return n;
}

/* An attempts/<job>/<node> record into the table (the newest wins). */
static void take_attempts(sv_dist_t *d, const rd_kafka_message_t *m)
{
	json_error_t je;
	json_t *o = json_loadb(m->payload, m->len, 0, &je);
	const char *job = json_string_value(json_object_get(o, "job"));
	const char *node = json_string_value(json_object_get(o, "node"));
	if (job && node) {
		pthread_mutex_lock(&d->att_lock);
		size_t i = 0;
		while (i < d->natt &&
		       (strcmp(d->att[i].job, job) ||
			strcmp(d->att[i].node, node)))
			i++;
		if (i == d->natt) {
			d->att = sv_realloc(d->att,
					    (d->natt + 1) * sizeof(*d->att));
			d->att[i].job = sv_strdup(job);
			d->att[i].node = sv_strdup(node);
			d->natt++;
		}
		d->att[i].window_start_ms = json_integer_value(
			json_object_get(o, "window_start_ms"));
		d->att[i].attempts = (int)json_integer_value(
			json_object_get(o, "attempts"));
		pthread_mutex_unlock(&d->att_lock);
	}
	json_decref(o);
}

static void apply(sv_dist_t *d, const rd_kafka_message_t *m)
{
	if (m->key && m->payload && m->key_len > 9 &&
	    !memcmp(m->key, "attempts/", 9)) {
		take_attempts(d, m);
		return;
	}
	if (!m->key || !m->payload || m->key_len < 5 ||
	    memcmp(m->key, "job/", 4))
		return;
	json_error_t je;
	json_t *o = json_loadb(m->payload, m->len, 0, &je);
	const char *id = o ? json_string_value(json_object_get(o, "id")) : NULL;
	const char *spec = o ? json_string_value(json_object_get(o, "spec"))
			     : NULL;
	const char *target = o ? json_string_value(json_object_get(o, "target"))
			       : NULL;
	int64_t *ends = NULL;
	size_t nends = record_ends(json_object_get(o, "end_offsets"), &ends);
	if (id && spec) {
		sv_error_t *err = d->conf.apply(d->conf.opaque, id, spec,
						target ? target : "running",
						ends, nends);
		if (err) {
			sv_logctx_t lc = {id, 0};
			sv_log(&lc, SV_LOG_WARN, "cluster",
			       "job record at offset %lld of '%s' not taken: "
			       "%s",
			       (long long)m->offset, d->topic, err->message);
			sv_error_destroy(err);
		}
	} else {
		sv_log(&d->log, SV_LOG_WARN, "cluster",
		       "job record at offset %lld of '%s' is not "
		       "{id, spec}: skipped",
		       (long long)m->offset, d->topic);
	}
	free(ends);
	json_decref(o);
}

static void *reader_main(void *arg)
{
	sv_dist_t *d = arg;
	while (!atomic_load(&d->stop)) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(d->cons, 200);
		if (!m)
			continue;
		if (!m->err) {
			apply(d, m);
			atomic_store(&d->applied, m->offset + 1);
		} else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			sv_log(&d->log, SV_LOG_WARN, "cluster",
			       "reading the job registry '%s': %s", d->topic,
			       rd_kafka_err2str(m->err));
		}
		rd_kafka_message_destroy(m);
	}
	return NULL;
}

sv_error_t *sv_dist_start(const sv_dist_conf_t *conf, sv_dist_t **out)
{
	*out = NULL;
	sv_dist_t *d = sv_calloc(1, sizeof(*d));
	d->conf = *conf;
	d->name = sv_strdup(conf->name);
	d->node_id = sv_strdup(conf->node_id);
	d->url = sv_strdup(conf->url ? conf->url : "");
	d->conf.name = d->name;
	d->conf.node_id = d->node_id;
	d->conf.url = d->url;
	char topic[300];
	sv_dist_jobs_topic(d->name, topic, sizeof(topic));
	d->topic = sv_strdup(topic);
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->att_lock, NULL);
	atomic_store(&d->applied, 0);

	char cid[200], role[400];
	snprintf(cid, sizeof(cid), "streamvisor-%s-registry", d->node_id);
	snprintf(role, sizeof(role), "job registry '%s' on cluster '%s'",
		 d->topic, conf->kafka->name);
	static const sv_kafka_prop_t pfixed[] = {
		{"enable.idempotence", "true"},
		{"acks", "all"},
	};
	sv_kafka_client_conf_t pc = {
		.type = RD_KAFKA_PRODUCER,
		.cluster = conf->kafka,
		.client_id = cid,
		.role = role,
		.log = &d->log,
		.fixed = pfixed,
		.nfixed = SV_ARRAY_LEN(pfixed),
		.opaque = d,
		.on_delivery = on_delivery,
	};
	sv_error_t *err = sv_kafka_client_new(&pc, &d->prod);
	if (!err)
		err = create_topic(d);
	char group[300];
	snprintf(group, sizeof(group), "_streamvisor.%s.reader-%s", d->name,
		 d->node_id);
	const sv_kafka_prop_t cfixed[] = {
		{"group.id", group}, /* never joined: manual assign */
		{"enable.auto.commit", "false"},
		{"isolation.level", "read_committed"},
		{"enable.partition.eof", "true"},
	};
	sv_kafka_client_conf_t cc = {
		.type = RD_KAFKA_CONSUMER,
		.cluster = conf->kafka,
		.client_id = cid,
		.role = role,
		.log = &d->log,
		.fixed = cfixed,
		.nfixed = SV_ARRAY_LEN(cfixed),
		.opaque = d,
	};
	if (!err)
		err = sv_kafka_client_new(&cc, &d->cons);
	if (!err) {
		rd_kafka_poll_set_consumer(d->cons);
		rd_kafka_topic_partition_list_t *l =
			rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(l, d->topic, 0)->offset =
			RD_KAFKA_OFFSET_BEGINNING;
		rd_kafka_resp_err_t e = rd_kafka_assign(d->cons, l);
		rd_kafka_topic_partition_list_destroy(l);
		if (e)
			err = sv_kafka_error(d->cons, &d->log, SV_ERR_BINDING,
					     e, NULL,
					     "cannot read the job registry "
					     "topic '%s'",
					     d->topic);
	}
	if (!err) {
		char key[200];
		snprintf(key, sizeof(key), "node/%s", d->node_id);
		json_t *o = json_pack("{s:s, s:s, s:I}", "node", d->node_id,
				      "url", d->url, "started_at_ms",
				      (json_int_t)sv_now_ms());
		char *v = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		err = produce(d, key, v);
		free(v);
	}
	if (!err && pthread_create(&d->thread, NULL, reader_main, d) == 0)
		d->started = true;
	else if (!err)
		err = sv_error_new(SV_ERR_RUNTIME,
				   "cannot start the job registry reader");
	if (err) {
		sv_dist_stop(d);
		return err;
	}
	sv_log(&d->log, SV_LOG_INFO, "cluster",
	       "node '%s' of streamvisor cluster '%s' (%s): job registry '%s'",
	       d->node_id, d->name, d->url, d->topic);
	*out = d;
	return NULL;
}

sv_error_t *sv_dist_publish_job(sv_dist_t *d, const char *job_id,
				const char *spec_json, const char *target)
{
	return sv_dist_publish_job_ends(d, job_id, spec_json, target, NULL, 0);
}

sv_error_t *sv_dist_publish_job_ends(sv_dist_t *d, const char *job_id,
				     const char *spec_json, const char *target,
				     const int64_t *ends, size_t nends)
{
	char key[200];
	snprintf(key, sizeof(key), "job/%s", job_id);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", job_id, "spec",
			      spec_json, "node", d->node_id, "target", target);
	if (nends) {
		json_t *a = json_array();
		for (size_t i = 0; i < nends; i++)
			json_array_append_new(a, json_integer(ends[i]));
		json_object_set_new(o, "end_offsets", a);
	}
	char *v = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	sv_error_t *err = produce(d, key, v);
	free(v);
	return err;
}

sv_error_t *sv_dist_end_offsets(const sv_cluster_t *kafka, const char *topic,
				int64_t **ends, size_t *nends)
{
	*ends = NULL;
	*nends = 0;
	sv_logctx_t log = {NULL, 0};
	char role[400];
	snprintf(role, sizeof(role),
		 "end offsets of topic '%s' on cluster '%s'", topic,
		 kafka->name);
	static const sv_kafka_prop_t fixed[] = {
		{"group.id", "_streamvisor.end-offsets"}, /* never joined */
		{"enable.auto.commit", "false"},
		/* ListOffsets at the last stable offset: a transaction of
		 * the input still open at submit is not part of the job */
		{"isolation.level", "read_committed"},
	};
	sv_kafka_client_conf_t cc = {
		.type = RD_KAFKA_CONSUMER,
		.cluster = kafka,
		.client_id = "streamvisor-end-offsets",
		.role = role,
		.log = &log,
		.fixed = fixed,
		.nfixed = SV_ARRAY_LEN(fixed),
	};
	rd_kafka_t *rk = NULL;
	sv_error_t *err = sv_kafka_client_new(&cc, &rk);
	if (err)
		return err;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t e = rkt
		? rd_kafka_metadata(rk, 0, rkt, &md, DIST_TIMEOUT_MS)
		: rd_kafka_last_error();
	if (!e &&
	    (md->topic_cnt != 1 || md->topics[0].err ||
	     md->topics[0].partition_cnt < 1))
		e = md->topic_cnt == 1 && md->topics[0].err
			? md->topics[0].err
			: RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
	int np = e ? 0 : md->topics[0].partition_cnt;
	int64_t *out = np ? sv_calloc((size_t)np, sizeof(*out)) : NULL;
	for (int p = 0; !e && p < np; p++) {
		int64_t lo = -1, hi = -1;
		e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi,
						     DIST_TIMEOUT_MS);
		out[p] = hi;
	}
	if (e)
		err = sv_error_set_field(
			sv_kafka_error(rk, &log, SV_ERR_BINDING, e, NULL,
				       "cannot take the end offsets of topic "
				       "'%s' on cluster '%s' for a bounded "
				       "job",
				       topic, kafka->name),
			"source.topic");
	if (md)
		rd_kafka_metadata_destroy(md);
	if (rkt)
		rd_kafka_topic_destroy(rkt);
	sv_kafka_client_destroy(rk);
	if (err) {
		free(out);
		return err;
	}
	*ends = out;
	*nends = (size_t)np;
	return NULL;
}

sv_error_t *sv_dist_publish_attempts(sv_dist_t *d, const char *job_id,
				     int64_t window_start_ms, int attempts)
{
	char key[300];
	snprintf(key, sizeof(key), "attempts/%s/%s", job_id, d->node_id);
	json_t *o = json_pack("{s:s, s:s, s:I, s:i}", "job", job_id, "node",
			      d->node_id, "window_start_ms",
			      (json_int_t)window_start_ms, "attempts",
			      attempts);
	char *v = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	sv_error_t *err = produce(d, key, v);
	free(v);
	return err;
}

int sv_dist_attempts_elsewhere(sv_dist_t *d, const char *job_id, int64_t now,
			       int64_t window_ms)
{
	int n = 0;
	pthread_mutex_lock(&d->att_lock);
	for (size_t i = 0; i < d->natt; i++)
		if (!strcmp(d->att[i].job, job_id) &&
		    strcmp(d->att[i].node, d->node_id) &&
		    now - d->att[i].window_start_ms <= window_ms)
			n += d->att[i].attempts;
	pthread_mutex_unlock(&d->att_lock);
	return n;
}

int64_t sv_dist_applied_offset(const sv_dist_t *d)
{
	return atomic_load(&d->applied);
}

void sv_dist_stop(sv_dist_t *d)
{
	if (!d)
		return;
	atomic_store(&d->stop, true);
	if (d->started)
		pthread_join(d->thread, NULL);
	if (d->cons) {
		rd_kafka_consumer_close(d->cons);
		sv_kafka_client_destroy(d->cons);
	}
	if (d->prod) {
		rd_kafka_flush(d->prod, 2000);
		sv_kafka_client_destroy(d->prod);
	}
	pthread_mutex_destroy(&d->lock);
	for (size_t i = 0; i < d->natt; i++) {
		free(d->att[i].job);
		free(d->att[i].node);
	}
	free(d->att);
	pthread_mutex_destroy(&d->att_lock);
	free(d->name);
	free(d->node_id);
	free(d->url);
	free(d->topic);
	free(d);
}
