/* status.c — the status topic (status.h).
 *
 * One thread per node: it polls a manual-assign consumer of partition 0
 * (from the beginning, no group) into the view, and every
 * SV_STATUS_INTERVAL_MS asks the supervisor for this node's records
 * (collect) and writes those that changed since they were last written,
 * or were written more than STATUS_REFRESH_MS ago, through an idempotent
 * producer (acks=all, no waiting: a lost heartbeat is replaced by the
 * next). A partition count asked for is read once from the metadata and
 * kept. */
#define _GNU_SOURCE
#include "cluster/status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "core/log.h"
#include "core/util.h"
#include "kafka/admin.h"
#include "kafka/client.h"

#define STATUS_REFRESH_MS 10000

struct sv_status {
	char *name, *node_id, *topic;
	sv_status_conf_t conf;
	sv_logctx_t log;
	rd_kafka_t *prod, *cons;
	pthread_mutex_t lock; /* view, parts */
	json_t *view; /* key → value */
	json_t *parts; /* topic → partition count */
	json_t *sent; /* status thread: key → {v: text, at: mono ms} */
	pthread_t thread;
	bool started;
	atomic_bool stop;
	atomic_bool kick; /* write this node's records now */
};

static sv_error_t *create_topic(sv_status_t *s)
{
	sv_kafka_topic_spec_t spec = {
		.partitions = 1,
		.replication_factor = s->conf.replication_factor,
		.compact = true,
	};
	return sv_kafka_topic_ensure_spec(s->conf.kafka, s->topic, &spec, NULL);
}

static void take(sv_status_t *s, const rd_kafka_message_t *m)
{
	if (!m->key)
		return;
	char key[400];
	snprintf(key, sizeof(key), "%.*s", (int)m->key_len,
		 (const char *)m->key);
	json_t *o = m->payload ? json_loadb(m->payload, m->len, 0, NULL) : NULL;
	pthread_mutex_lock(&s->lock);
	if (json_is_object(o))
		json_object_set(s->view, key, o);
	else
		json_object_del(s->view, key); /* a tombstone */
	pthread_mutex_unlock(&s->lock);
	json_decref(o);
}

/* Status thread: write what changed of this node's records. */
static void publish(sv_status_t *s)
{
	json_t *recs = s->conf.collect(s->conf.opaque);
	if (!recs)
		return;
	int64_t now = sv_mono_ms(), wall = sv_now_ms();
	const char *k;
	json_t *v;
	json_object_foreach (recs, k, v) {
		char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		json_t *was = json_object_get(s->sent, k);
		const char *wtext = json_string_value(
			json_object_get(was, "v"));
		json_int_t at = json_integer_value(json_object_get(was, "at"));
		bool heartbeat = !strncmp(k, "node/", 5);
		if (!heartbeat && wtext && !strcmp(wtext, text) &&
		    now - at < STATUS_REFRESH_MS) {
			free(text);
			continue;
		}
		json_object_set_new(s->sent, k,
				    json_pack("{s:s, s:I}", "v", text, "at",
					      (json_int_t)now));
		free(text);
		json_object_set_new(v, "at_ms", json_integer(wall));
		char *out = json_dumps(v, JSON_COMPACT);
		rd_kafka_resp_err_t e = rd_kafka_producev(
			s->prod, RD_KAFKA_V_TOPIC(s->topic),
			RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY(k, strlen(k)),
			RD_KAFKA_V_VALUE(out, strlen(out)),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			RD_KAFKA_V_END);
		free(out);
		if (e)
			sv_log(&s->log, SV_LOG_DEBUG, "cluster",
			       "status record '%s' not queued: %s", k,
			       rd_kafka_err2str(e));
	}
	json_decref(recs);
}

static void *status_main(void *arg)
{
	sv_status_t *s = arg;
	int64_t next = 0;
	while (!atomic_load(&s->stop)) {
		int64_t now = sv_mono_ms();
		if (now >= next || atomic_exchange(&s->kick, false)) {
			publish(s);
			next = now + SV_STATUS_INTERVAL_MS;
		}
		rd_kafka_poll(s->prod, 0);
		rd_kafka_message_t *m = rd_kafka_consumer_poll(s->cons, 100);
		if (!m)
			continue;
		if (!m->err)
			take(s, m);
		rd_kafka_message_destroy(m);
	}
	return NULL;
}

void sv_status_kick(sv_status_t *s)
{
	if (s)
		atomic_store(&s->kick, true);
}

sv_error_t *sv_status_start(const sv_status_conf_t *conf, sv_status_t **out)
{
	*out = NULL;
	sv_status_t *s = sv_calloc(1, sizeof(*s));
	s->conf = *conf;
	s->name = sv_strdup(conf->name);
	s->node_id = sv_strdup(conf->node_id);
	if (asprintf(&s->topic, "_streamvisor.%s.status", s->name) < 0)
		abort();
	pthread_mutex_init(&s->lock, NULL);
	s->view = json_object();
	s->parts = json_object();
	s->sent = json_object();
	char cid[200], role[400], group[300];
	snprintf(cid, sizeof(cid), "streamvisor-%s-status", s->node_id);
	snprintf(role, sizeof(role), "status topic '%s'", s->topic);
	snprintf(group, sizeof(group), "_streamvisor.%s.status-%s", s->name,
		 s->node_id);
	static const sv_kafka_prop_t pfixed[] = {
		{"enable.idempotence", "true"},
		{"acks", "all"},
		{"linger.ms", "5"},
	};
	sv_kafka_client_conf_t pc = {
		.type = RD_KAFKA_PRODUCER,
		.cluster = conf->kafka,
		.client_id = cid,
		.role = role,
		.log = &s->log,
		.fixed = pfixed,
		.nfixed = SV_ARRAY_LEN(pfixed),
		.opaque = s,
	};
	sv_error_t *err = sv_kafka_client_new(&pc, &s->prod);
	if (!err)
		err = create_topic(s);
	const sv_kafka_prop_t cfixed[] = {
		{"group.id", group}, /* never joined: manual assign */
		{"enable.auto.commit", "false"},
		/* the cluster view is read fresh (a failed-attempt count
		 * must reach the other nodes before their next restart):
		 * an idle fetch returns after 100 ms, not librdkafka's 500 */
		{"fetch.wait.max.ms", "100"},
	};
	sv_kafka_client_conf_t cc = {
		.type = RD_KAFKA_CONSUMER,
		.cluster = conf->kafka,
		.client_id = cid,
		.role = role,
		.log = &s->log,
		.fixed = cfixed,
		.nfixed = SV_ARRAY_LEN(cfixed),
		.opaque = s,
	};
	if (!err)
		err = sv_kafka_client_new(&cc, &s->cons);
	if (!err) {
		rd_kafka_poll_set_consumer(s->cons);
		rd_kafka_topic_partition_list_t *l =
			rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(l, s->topic, 0)->offset =
			RD_KAFKA_OFFSET_BEGINNING;
		rd_kafka_resp_err_t e = rd_kafka_assign(s->cons, l);
		rd_kafka_topic_partition_list_destroy(l);
		if (e)
			err = sv_kafka_error(s->cons, &s->log, SV_ERR_BINDING,
					     e, NULL,
					     "cannot read the status topic "
					     "'%s'",
					     s->topic);
	}
	if (!err && pthread_create(&s->thread, NULL, status_main, s) == 0)
		s->started = true;
	else if (!err)
		err = sv_error_new(SV_ERR_RUNTIME,
				   "cannot start the status topic's thread");
	if (err) {
		sv_status_stop(s);
		return err;
	}
	*out = s;
	return NULL;
}

json_t *sv_status_view(sv_status_t *s, const char *prefix)
{
	json_t *out = json_object();
	if (!s)
		return out;
	size_t n = strlen(prefix);
	int64_t now = sv_now_ms();
	pthread_mutex_lock(&s->lock);
	const char *k;
	json_t *v;
	json_object_foreach (s->view, k, v) {
		if (strncmp(k, prefix, n))
			continue;
		json_t *c = json_deep_copy(v);
		json_int_t at = json_integer_value(json_object_get(v, "at_ms"));
		json_object_set_new(c, "age_ms", json_integer(now - at));
		json_object_set_new(out, k, c);
	}
	pthread_mutex_unlock(&s->lock);
	return out;
}

int sv_status_partitions(sv_status_t *s, const char *topic)
{
	if (!s || !topic || !*topic)
		return -1;
	pthread_mutex_lock(&s->lock);
	json_t *n = json_object_get(s->parts, topic);
	int cached = n ? (int)json_integer_value(n) : -1;
	pthread_mutex_unlock(&s->lock);
	if (cached > 0)
		return cached;
	rd_kafka_topic_t *t = rd_kafka_topic_new(s->prod, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	int count = -1;
	if (t && !rd_kafka_metadata(s->prod, 0, t, &md, 5000) && md &&
	    md->topic_cnt == 1 && !md->topics[0].err)
		count = md->topics[0].partition_cnt;
	if (md)
		rd_kafka_metadata_destroy(md);
	if (t)
		rd_kafka_topic_destroy(t);
	if (count > 0) {
		pthread_mutex_lock(&s->lock);
		json_object_set_new(s->parts, topic, json_integer(count));
		pthread_mutex_unlock(&s->lock);
	}
	return count;
}

void sv_status_stop(sv_status_t *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, true);
	if (s->started)
		pthread_join(s->thread, NULL);
	if (s->cons) {
		rd_kafka_consumer_close(s->cons);
		sv_kafka_client_destroy(s->cons);
	}
	if (s->prod) {
		rd_kafka_flush(s->prod, 2000);
		sv_kafka_client_destroy(s->prod);
	}
	pthread_mutex_destroy(&s->lock);
	json_decref(s->view);
	json_decref(s->parts);
	json_decref(s->sent);
	free(s->name);
	free(s->node_id);
	free(s->topic);
	free(s);
}
