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
 * meanwhile (Kafka Connect's config topic, read to the end): until the
 * first end the reader keeps each job's latest record and applies only
 * those, so a restarted node does not replay a drain that a resume
 * followed. Only the leader writes job records (leader.c: one fenced
 * transaction each); the reader keeps the view the control plane needs:
 * each job's latest record, the newest `leader` record, and a count of
 * records whose leader epoch is below one read before (zero while the
 * fencing holds). The producer here only creates the topic. A bounded
 * job's record also carries its end offsets (`end_offsets`, taken once by
 * the leader at submit with sv_dist_end_offsets: a read_committed
 * consumer's ListOffsets, the last stable offsets). */
#define _GNU_SOURCE
#include "cluster/dist.h"
#include "cluster/leader.h"

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
#include "kafka/admin.h"
#include "kafka/client.h"

#define DIST_TIMEOUT_MS 10000

struct sv_dist {
	char *name, *node_id, *url, *topic;
	sv_dist_conf_t conf;
	sv_logctx_t log;
	rd_kafka_t *prod;
	rd_kafka_t *cons;
	pthread_mutex_t lock;
	rd_kafka_resp_err_t dr_err; /* the last delivery (none expected) */
	pthread_t thread;
	bool started;
	atomic_bool stop;
	_Atomic int64_t applied;
	/* the view (leader.c's control plane; under view_lock) */
	pthread_mutex_t view_lock;
	json_t *records; /* job id → its latest record */
	json_t *snapshot; /* until the first end: key → latest record */
	char *leader_node, *leader_url;
	int64_t leader_epoch; /* the highest epoch of a leader record */
	int64_t max_epoch; /* the highest epoch of any record */
	int64_t stale_records; /* records with an epoch below an earlier one */
	int64_t leader_records;
	_Atomic int64_t eof; /* the end the reader reached, -1: not yet */
	atomic_bool loaded; /* the topic was read to its end once */
	struct sv_leader *leader;
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
}

static sv_error_t *create_topic(sv_dist_t *d)
{
	sv_kafka_topic_spec_t spec = {
		.partitions = 1,
		.replication_factor = d->conf.replication_factor,
		.compact = true,
	};
	return sv_kafka_topic_ensure_spec(d->conf.kafka, d->topic, &spec, NULL);
}

/* One job record (o borrowed) to the node: the supervisor's callback. */
static void apply_job(sv_dist_t *d, json_t *o, int64_t offset)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *spec = json_string_value(json_object_get(o, "spec"));
	const char *target = json_string_value(json_object_get(o, "target"));
	if (!id || !spec) {
		sv_log(&d->log, SV_LOG_WARN, "cluster",
		       "job record at offset %lld of '%s' is not "
		       "{id, spec}: skipped",
		       (long long)offset, d->topic);
		return;
	}
	sv_error_t *err = d->conf.apply_record
		? d->conf.apply_record(d->conf.opaque, o)
		: d->conf.apply(d->conf.opaque, id, spec,
				target ? target : "running");
	if (err) {
		sv_logctx_t lc = {id, 0};
		sv_log(&lc, SV_LOG_WARN, "cluster",
		       "job record at offset %lld of '%s' not taken: "
		       "%s",
		       (long long)offset, d->topic, err->message);
		sv_error_destroy(err);
	}
}

/* Reader thread: a record into the view; a job record applied now, or
 * kept until the first end (then only each job's latest is applied, as
 * Connect applies its config snapshot). */
static void apply(sv_dist_t *d, const rd_kafka_message_t *m)
{
	if (!m->key || !m->payload || m->key_len < 5)
		return;
	json_error_t je;
	json_t *o = json_loadb(m->payload, m->len, 0, &je);
	if (!json_is_object(o)) {
		json_decref(o);
		return;
	}
	bool is_leader = m->key_len == 6 && !memcmp(m->key, "leader", 6);
	bool is_job = !memcmp(m->key, "job/", 4);
	json_int_t epoch = json_integer_value(json_object_get(o, "epoch"));
	pthread_mutex_lock(&d->view_lock);
	if (json_object_get(o, "epoch")) {
		if (epoch < d->max_epoch) {
			d->stale_records++;
			sv_log(&d->log, SV_LOG_WARN, "cluster",
			       "record at offset %lld of '%s' carries leader "
			       "epoch %lld, below %lld seen before",
			       (long long)m->offset, d->topic, (long long)epoch,
			       (long long)d->max_epoch);
		} else {
			d->max_epoch = epoch;
		}
	}
	if (is_leader) {
		const char *node = json_string_value(
			json_object_get(o, "node"));
		const char *url = json_string_value(json_object_get(o, "url"));
		if (epoch > d->leader_epoch) {
			d->leader_epoch = epoch;
			free(d->leader_node);
			free(d->leader_url);
			d->leader_node = sv_strdup(node ? node : "");
			d->leader_url = sv_strdup(url ? url : "");
		}
		d->leader_records++;
	}
	const char *id = is_job ? json_string_value(json_object_get(o, "id"))
				: NULL;
	if (id)
		json_object_set(d->records, id, o);
	bool now = atomic_load(&d->loaded);
	if (is_job && !now) {
		char key[300];
		snprintf(key, sizeof(key), "%.*s", (int)m->key_len,
			 (const char *)m->key);
		json_object_set(d->snapshot, key, o);
	}
	pthread_mutex_unlock(&d->view_lock);
	if (is_job && now)
		apply_job(d, o, m->offset);
	json_decref(o);
}

/* Reader thread: the first end: apply the snapshot. */
static void loaded(sv_dist_t *d)
{
	pthread_mutex_lock(&d->view_lock);
	json_t *snap = d->snapshot;
	d->snapshot = json_object();
	pthread_mutex_unlock(&d->view_lock);
	const char *k;
	json_t *o;
	json_object_foreach (snap, k, o)
		apply_job(d, o, -1);
	json_decref(snap);
	atomic_store(&d->loaded, true);
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
		} else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			if (!atomic_load(&d->loaded))
				loaded(d);
			atomic_store(&d->eof, m->offset);
		} else {
			sv_log(&d->log, SV_LOG_WARN, "cluster",
			       "reading the job registry '%s': %s", d->topic,
			       rd_kafka_err2str(m->err));
		}
		rd_kafka_message_destroy(m);
	}
	return NULL;
}

static int64_t read_pos(void *opaque)
{
	sv_dist_t *d = opaque;
	if (!atomic_load(&d->loaded))
		return 0;
	int64_t a = atomic_load(&d->applied), e = atomic_load(&d->eof);
	return a > e ? a : e;
}

static int64_t last_epoch(void *opaque)
{
	sv_dist_t *d = opaque;
	pthread_mutex_lock(&d->view_lock);
	int64_t e = d->max_epoch;
	pthread_mutex_unlock(&d->view_lock);
	return e;
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
	pthread_mutex_init(&d->view_lock, NULL);
	d->records = json_object();
	d->snapshot = json_object();
	atomic_store(&d->applied, 0);
	atomic_store(&d->eof, -1);

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
	if (!err && pthread_create(&d->thread, NULL, reader_main, d) == 0)
		d->started = true;
	else if (!err)
		err = sv_error_new(SV_ERR_RUNTIME,
				   "cannot start the job registry reader");
	if (!err) {
		sv_leader_conf_t lc = {
			.name = d->name,
			.node_id = d->node_id,
			.url = d->url,
			.topic = d->topic,
			.kafka = conf->kafka,
			.session_timeout_ms = conf->session_timeout_ms,
			.read_pos = read_pos,
			.last_epoch = last_epoch,
			.opaque = d,
		};
		err = sv_leader_start(&lc, &d->leader);
	}
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

sv_error_t *sv_dist_publish_record(sv_dist_t *d, const char *job_id,
				   const char *spec_json, const char *target,
				   const json_t *extra)
{
	char key[200];
	snprintf(key, sizeof(key), "job/%s", job_id);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", job_id, "spec",
			      spec_json, "node", d->node_id, "target", target);
	if (extra)
		json_object_update(o, (json_t *)extra);
	sv_error_t *err = d->leader
		? sv_leader_write(d->leader, key, o)
		: sv_error_new(SV_ERR_UNAVAILABLE, "no leader yet: retry");
	if (!err) {
		/* committed: the leader's view has it before it reads it
		 * back (its next write of the job counts from it) */
		pthread_mutex_lock(&d->view_lock);
		json_object_set(d->records, job_id, o);
		pthread_mutex_unlock(&d->view_lock);
	}
	json_decref(o);
	return err;
}

sv_error_t *sv_dist_publish_job(sv_dist_t *d, const char *job_id,
				const char *spec_json, const char *target)
{
	return sv_dist_publish_record(d, job_id, spec_json, target, NULL);
}

json_t *sv_dist_job_record(sv_dist_t *d, const char *job_id)
{
	pthread_mutex_lock(&d->view_lock);
	json_t *o = json_object_get(d->records, job_id);
	json_t *copy = o ? json_deep_copy(o) : NULL;
	pthread_mutex_unlock(&d->view_lock);
	return copy;
}

json_t *sv_dist_records(sv_dist_t *d)
{
	pthread_mutex_lock(&d->view_lock);
	json_t *copy = json_deep_copy(d->records);
	pthread_mutex_unlock(&d->view_lock);
	return copy;
}

bool sv_dist_leader(sv_dist_t *d, char **node, char **url, int64_t *epoch)
{
	pthread_mutex_lock(&d->view_lock);
	if (node)
		*node = d->leader_node ? sv_strdup(d->leader_node) : NULL;
	if (url)
		*url = d->leader_url ? sv_strdup(d->leader_url) : NULL;
	if (epoch)
		*epoch = d->leader_epoch;
	pthread_mutex_unlock(&d->view_lock);
	return sv_leader_is(d->leader, NULL);
}

json_t *sv_dist_registry_json(sv_dist_t *d)
{
	int64_t elected = 0, writes = 0, my_epoch = 0;
	sv_leader_counts(d->leader, &elected, &writes);
	bool me = sv_leader_is(d->leader, &my_epoch);
	pthread_mutex_lock(&d->view_lock);
	json_t *o = json_pack(
		"{s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I}", "topic",
		d->topic, "jobs_offset", (json_int_t)read_pos(d), "jobs",
		(json_int_t)json_object_size(d->records), "leader_epoch",
		(json_int_t)d->leader_epoch, "leader_records",
		(json_int_t)d->leader_records, "stale_epoch_records",
		(json_int_t)d->stale_records, "this_node_leads", me,
		"this_node_epoch", (json_int_t)my_epoch, "times_elected",
		(json_int_t)elected, "leader_writes", (json_int_t)writes);
	pthread_mutex_unlock(&d->view_lock);
	return o;
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

int64_t sv_dist_applied_offset(const sv_dist_t *d)
{
	return read_pos((void *)d);
}

void sv_dist_stop(sv_dist_t *d)
{
	if (!d)
		return;
	/* first: its claim waits for the reader */
	sv_leader_stop(d->leader);
	d->leader = NULL;
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
	pthread_mutex_destroy(&d->view_lock);
	json_decref(d->records);
	json_decref(d->snapshot);
	free(d->leader_node);
	free(d->leader_url);
	free(d->name);
	free(d->node_id);
	free(d->url);
	free(d->topic);
	free(d);
}
