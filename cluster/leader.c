/* leader.c — the lead group and the fenced leader producer (leader.h).
 *
 * One thread polls the lead consumer. Its rebalance callback and the
 * claim run on that thread, so they never overlap; a leader write runs
 * on the caller's thread (the supervisor's) under the mutex that the
 * revoke also takes, so a revoke waits for a write in flight and the
 * write after it sees that this node no longer leads. The claim does not
 * hold the mutex while it waits for the registry reader: the reader
 * applies records through the supervisor thread, which may be waiting
 * for the mutex in a write that will then be refused.
 *
 * A write that fails for a fatal reason (the producer was fenced by a
 * newer leader's init_transactions) or whose outcome is unknown (the
 * commit timed out) ends this node's leadership: the producer is
 * destroyed, and if the lead group still assigns partition 0 here after a
 * session timeout, the node claims again (a new init_transactions, a new
 * epoch). A stale leader whose generation is gone cannot commit either,
 * because every transaction sends the lead group's offset with the lead
 * consumer's group metadata (KIP-447): the broker refuses it. */
#define _GNU_SOURCE
#include "cluster/leader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "core/log.h"
#include "core/util.h"
#include "kafka/client.h"

#define LEADER_TXN_MS 10000
#define LEADER_CLAIM_WAIT_MS 30000
#define LEADER_RETRY_MS 2000

struct sv_leader {
	char *name, *node_id, *url, *topic, *group, *txn_id;
	sv_leader_conf_t conf;
	sv_logctx_t log;
	rd_kafka_t *lead; /* the lead-group consumer */
	pthread_mutex_t lock; /* txp, leading, epoch; held during a write */
	rd_kafka_t *txp; /* the transactional producer while leading */
	bool leading;
	int64_t epoch;
	atomic_bool leading_now; /* a copy of leading, read without the lock */
	_Atomic int64_t epoch_now;
	/* leader thread only */
	bool assigned0; /* the lead group assigns partition 0 here */
	bool claim_pending;
	int64_t claim_at_ms;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	_Atomic int64_t elected, writes;
};

/* Under lock: stop leading, abort what is open, destroy the producer. */
static void drop_locked(sv_leader_t *l, const char *why)
{
	if (l->txp) {
		rd_kafka_error_t *e = rd_kafka_abort_transaction(l->txp, 2000);
		if (e)
			rd_kafka_error_destroy(e);
		sv_kafka_client_destroy(l->txp);
		l->txp = NULL;
	}
	if (l->leading)
		sv_log(&l->log, SV_LOG_INFO, "cluster",
		       "node '%s' stops leading (epoch %lld): %s", l->node_id,
		       (long long)l->epoch, why);
	l->leading = false;
	atomic_store(&l->leading_now, false);
}

static sv_error_t *txn_err(sv_leader_t *l, rd_kafka_error_t *e,
			   const char *what, const char *key)
{
	sv_error_t *err = sv_kafka_error(
		l->txp, &l->log, SV_ERR_UNAVAILABLE, rd_kafka_error_code(e),
		rd_kafka_error_string(e),
		"the leader's write of '%s' to '%s' failed at %s: retry", key,
		l->topic, what);
	return err;
}

/* Under lock, with l->txp: one transaction of key → value with the lead
 * group's offset. On failure the transaction is aborted; *lost says
 * whether this node can no longer write as leader. */
static sv_error_t *write_locked(sv_leader_t *l, const char *key, json_t *value,
				int64_t epoch, bool *lost)
{
	*lost = false;
	json_object_set_new(value, "epoch", json_integer(epoch));
	json_object_set_new(value, "leader", json_string(l->node_id));
	char *v = json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS);
	rd_kafka_error_t *e = rd_kafka_begin_transaction(l->txp);
	const char *at = "begin";
	if (!e) {
		rd_kafka_resp_err_t pe = rd_kafka_producev(
			l->txp, RD_KAFKA_V_TOPIC(l->topic),
			RD_KAFKA_V_PARTITION(0),
			RD_KAFKA_V_KEY(key, strlen(key)),
			RD_KAFKA_V_VALUE(v, strlen(v)),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			RD_KAFKA_V_END);
		if (pe)
			e = rd_kafka_error_new(pe, "%s", rd_kafka_err2str(pe));
		at = "produce";
	}
	if (!e) {
		int64_t pos = l->conf.read_pos(l->conf.opaque);
		rd_kafka_topic_partition_list_t *offs =
			rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(offs, l->topic, 0)->offset =
			pos > 0 ? pos : 0;
		rd_kafka_consumer_group_metadata_t *md =
			rd_kafka_consumer_group_metadata(l->lead);
		e = md ? rd_kafka_send_offsets_to_transaction(l->txp, offs, md,
							      LEADER_TXN_MS)
		       : rd_kafka_error_new(RD_KAFKA_RESP_ERR__STATE,
					    "no group metadata");
		if (md)
			rd_kafka_consumer_group_metadata_destroy(md);
		rd_kafka_topic_partition_list_destroy(offs);
		at = "send_offsets_to_transaction";
	}
	if (!e) {
		e = rd_kafka_commit_transaction(l->txp, LEADER_TXN_MS);
		at = "commit";
	}
	free(v);
	if (!e) {
		atomic_fetch_add(&l->writes, 1);
		return NULL;
	}
	sv_error_t *err = txn_err(l, e, at, key);
	/* fenced (fatal) or an unknown outcome (a commit that timed out, a
	 * stale generation): this producer writes no more */
	*lost = rd_kafka_error_is_fatal(e) || !strcmp(at, "commit") ||
		!strcmp(at, "send_offsets_to_transaction");
	if (!*lost && rd_kafka_error_txn_requires_abort(e)) {
		rd_kafka_error_t *a = rd_kafka_abort_transaction(l->txp,
								 LEADER_TXN_MS);
		if (a) {
			*lost = true;
			rd_kafka_error_destroy(a);
		}
	}
	rd_kafka_error_destroy(e);
	return err;
}

static void schedule_claim(sv_leader_t *l, int64_t delay_ms)
{
	l->claim_pending = true;
	l->claim_at_ms = sv_mono_ms() + delay_ms;
}

static rd_kafka_t *make_txp(sv_leader_t *l)
{
	char cid[200], role[400], tmo[32];
	snprintf(cid, sizeof(cid), "streamvisor-%s-leader", l->node_id);
	snprintf(role, sizeof(role), "leader producer of '%s'", l->topic);
	snprintf(tmo, sizeof(tmo), "%d", LEADER_TXN_MS * 3);
	const sv_kafka_prop_t fixed[] = {
		{"transactional.id", l->txn_id},
		{"enable.idempotence", "true"},
		{"acks", "all"},
		{"transaction.timeout.ms", tmo},
	};
	sv_kafka_client_conf_t pc = {
		.type = RD_KAFKA_PRODUCER,
		.cluster = l->conf.kafka,
		.client_id = cid,
		.role = role,
		.log = &l->log,
		.fixed = fixed,
		.nfixed = SV_ARRAY_LEN(fixed),
		.opaque = l,
	};
	rd_kafka_t *p = NULL;
	sv_error_t *err = sv_kafka_client_new(&pc, &p);
	if (err) {
		sv_log(&l->log, SV_LOG_WARN, "cluster", "%s", err->message);
		sv_error_destroy(err);
		return NULL;
	}
	return p;
}

/* Leader thread: partition 0 is ours; fence the previous leader, read to
 * the end, write the leader record. */
static void claim(sv_leader_t *l)
{
	l->claim_pending = false;
	rd_kafka_t *p = make_txp(l);
	if (!p) {
		schedule_claim(l, LEADER_RETRY_MS);
		return;
	}
	int64_t t0 = sv_mono_ms();
	rd_kafka_error_t *e = rd_kafka_init_transactions(p, 30000);
	if (e) {
		sv_log(&l->log, SV_LOG_WARN, "cluster",
		       "leader claim: init_transactions of '%s': %s", l->txn_id,
		       rd_kafka_error_string(e));
		rd_kafka_error_destroy(e);
		sv_kafka_client_destroy(p);
		schedule_claim(l, LEADER_RETRY_MS);
		return;
	}
	/* the previous leader is fenced and its open transaction aborted:
	 * the end is stable now; read to it */
	int64_t lo = 0, hi = 0;
	rd_kafka_resp_err_t qe = rd_kafka_query_watermark_offsets(
		p, l->topic, 0, &lo, &hi, 10000);
	int64_t deadline = sv_mono_ms() + LEADER_CLAIM_WAIT_MS;
	while (!qe && l->conf.read_pos(l->conf.opaque) < hi &&
	       sv_mono_ms() < deadline && !atomic_load(&l->stop))
		usleep(20000);
	if (qe || l->conf.read_pos(l->conf.opaque) < hi) {
		sv_log(&l->log, SV_LOG_WARN, "cluster",
		       "leader claim: the registry '%s' was not read to its "
		       "end %lld (at %lld)%s%s",
		       l->topic, (long long)hi,
		       (long long)l->conf.read_pos(l->conf.opaque),
		       qe ? ": " : "", qe ? rd_kafka_err2str(qe) : "");
		sv_kafka_client_destroy(p);
		schedule_claim(l, LEADER_RETRY_MS);
		return;
	}
	pthread_mutex_lock(&l->lock);
	drop_locked(l, "claiming again");
	l->txp = p;
	int64_t epoch = l->conf.last_epoch(l->conf.opaque) + 1;
	json_t *v = json_pack("{s:s, s:s}", "node", l->node_id, "url", l->url);
	bool lost = false;
	sv_error_t *err = write_locked(l, "leader", v, epoch, &lost);
	json_decref(v);
	if (!err) {
		l->leading = true;
		l->epoch = epoch;
		atomic_store(&l->epoch_now, epoch);
		atomic_store(&l->leading_now, true);
		atomic_fetch_add(&l->elected, 1);
		sv_log(&l->log, SV_LOG_INFO, "cluster",
		       "node '%s' leads streamvisor cluster '%s', epoch %lld "
		       "(claimed in %lld ms, registry read to %lld)",
		       l->node_id, l->name, (long long)epoch,
		       (long long)(sv_mono_ms() - t0), (long long)hi);
	} else {
		sv_log(&l->log, SV_LOG_WARN, "cluster",
		       "leader claim of epoch %lld: %s", (long long)epoch,
		       err->message);
		sv_error_destroy(err);
		drop_locked(l, "claim failed");
		schedule_claim(l, LEADER_RETRY_MS);
	}
	pthread_mutex_unlock(&l->lock);
}

static bool has_p0(const rd_kafka_topic_partition_list_t *parts)
{
	for (int i = 0; parts && i < parts->cnt; i++)
		if (parts->elems[i].partition == 0)
			return true;
	return false;
}

/* Leader thread (inside consumer_poll or close). */
static void on_rebalance(void *opaque, rd_kafka_t *rk, rd_kafka_resp_err_t err,
			 rd_kafka_topic_partition_list_t *parts)
{
	sv_leader_t *l = opaque;
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		rd_kafka_assign(rk, parts);
		/* the messages are the reader's business, not this consumer's */
		rd_kafka_pause_partitions(rk, parts);
		l->assigned0 = has_p0(parts);
		if (l->assigned0)
			schedule_claim(l, 0);
		return;
	}
	bool lost = rd_kafka_assignment_lost(rk);
	l->assigned0 = false;
	l->claim_pending = false;
	pthread_mutex_lock(&l->lock);
	drop_locked(l,
		    lost ? "the lead group's assignment was lost"
			 : "the lead group revoked partition 0");
	pthread_mutex_unlock(&l->lock);
	rd_kafka_assign(rk, NULL);
}

static void *leader_main(void *arg)
{
	sv_leader_t *l = arg;
	while (!atomic_load(&l->stop)) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(l->lead, 200);
		if (m)
			rd_kafka_message_destroy(m);
		if (l->claim_pending && l->assigned0 &&
		    sv_mono_ms() >= l->claim_at_ms)
			claim(l);
		/* a write lost leadership: claim again while assigned */
		if (!l->claim_pending && l->assigned0 &&
		    !atomic_load(&l->leading_now))
			schedule_claim(l, l->conf.session_timeout_ms);
	}
	return NULL;
}

sv_error_t *sv_leader_start(const sv_leader_conf_t *conf, sv_leader_t **out)
{
	*out = NULL;
	sv_leader_t *l = sv_calloc(1, sizeof(*l));
	l->conf = *conf;
	l->name = sv_strdup(conf->name);
	l->node_id = sv_strdup(conf->node_id);
	l->url = sv_strdup(conf->url ? conf->url : "");
	l->topic = sv_strdup(conf->topic);
	if (asprintf(&l->group, "_streamvisor.%s.lead", l->name) < 0 ||
	    asprintf(&l->txn_id, "_streamvisor.%s.leader", l->name) < 0)
		abort();
	pthread_mutex_init(&l->lock, NULL);
	char cid[200], role[400], sess[32], hb[32];
	snprintf(cid, sizeof(cid), "streamvisor-%s-lead", l->node_id);
	snprintf(role, sizeof(role), "lead group '%s'", l->group);
	int st = conf->session_timeout_ms > 0 ? conf->session_timeout_ms
					      : 10000;
	snprintf(sess, sizeof(sess), "%d", st);
	snprintf(hb, sizeof(hb), "%d", st / 6 > 100 ? st / 6 : 100);
	const sv_kafka_prop_t fixed[] = {
		{"group.id", l->group},
		{"group.instance.id", l->node_id},
		{"partition.assignment.strategy", "range"},
		{"session.timeout.ms", sess},
		{"heartbeat.interval.ms", hb},
		{"enable.auto.commit", "false"},
		{"isolation.level", "read_committed"},
	};
	sv_kafka_client_conf_t cc = {
		.type = RD_KAFKA_CONSUMER,
		.cluster = conf->kafka,
		.client_id = cid,
		.role = role,
		.log = &l->log,
		.fixed = fixed,
		.nfixed = SV_ARRAY_LEN(fixed),
		.opaque = l,
		.on_rebalance = on_rebalance,
	};
	sv_error_t *err = sv_kafka_client_new(&cc, &l->lead);
	if (!err) {
		rd_kafka_poll_set_consumer(l->lead);
		rd_kafka_topic_partition_list_t *t =
			rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(t, l->topic,
						  RD_KAFKA_PARTITION_UA);
		rd_kafka_resp_err_t e = rd_kafka_subscribe(l->lead, t);
		rd_kafka_topic_partition_list_destroy(t);
		if (e)
			err = sv_kafka_error(
				l->lead, &l->log, SV_ERR_BINDING, e, NULL,
				"cannot join the lead group '%s'", l->group);
	}
	if (!err && pthread_create(&l->thread, NULL, leader_main, l) == 0)
		l->started = true;
	else if (!err)
		err = sv_error_new(SV_ERR_RUNTIME,
				   "cannot start the lead group's thread");
	if (err) {
		sv_leader_stop(l);
		return err;
	}
	*out = l;
	return NULL;
}

bool sv_leader_is(sv_leader_t *l, int64_t *epoch)
{
	if (!l)
		return false;
	bool on = atomic_load(&l->leading_now);
	if (epoch)
		*epoch = on ? atomic_load(&l->epoch_now) : 0;
	return on;
}

sv_error_t *sv_leader_write(sv_leader_t *l, const char *key, json_t *value)
{
	pthread_mutex_lock(&l->lock);
	if (!l->leading || !l->txp) {
		pthread_mutex_unlock(&l->lock);
		return sv_error_new(SV_ERR_UNAVAILABLE,
				    "node '%s' is not the leader of "
				    "streamvisor cluster '%s' now: retry",
				    l->node_id, l->name);
	}
	bool lost = false;
	sv_error_t *err = write_locked(l, key, value, l->epoch, &lost);
	if (lost)
		drop_locked(l, err ? err->message : "write failed");
	pthread_mutex_unlock(&l->lock);
	return err;
}

void sv_leader_counts(sv_leader_t *l, int64_t *elected, int64_t *writes)
{
	*elected = l ? atomic_load(&l->elected) : 0;
	*writes = l ? atomic_load(&l->writes) : 0;
}

void sv_leader_stop(sv_leader_t *l)
{
	if (!l)
		return;
	atomic_store(&l->stop, true);
	if (l->started)
		pthread_join(l->thread, NULL);
	pthread_mutex_lock(&l->lock);
	drop_locked(l, "the node stops");
	pthread_mutex_unlock(&l->lock);
	if (l->lead) {
		rd_kafka_consumer_close(l->lead);
		sv_kafka_client_destroy(l->lead);
	}
	pthread_mutex_destroy(&l->lock);
	free(l->name);
	free(l->node_id);
	free(l->url);
	free(l->topic);
	free(l->group);
	free(l->txn_id);
	free(l);
}
