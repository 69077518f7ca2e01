/* admin.c — see admin.h. One short-lived client per check, made by
 * kafka/client.c: the profile's properties are used (they may hold
 * credentials) and never printed; librdkafka's text reaches a message only
 * scrubbed. */
#include "kafka/admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "core/util.h"
#include "kafka/client.h"

#define ADMIN_TIMEOUT_MS 5000

/* transaction.max.timeout.ms of one broker, or -1 with *err set. */
static int64_t broker_max_txn_timeout(rd_kafka_t *rk, const char *cluster,
				      sv_error_t **err)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, NULL, &md,
						  ADMIN_TIMEOUT_MS);
	if (e || !md || md->broker_cnt < 1) {
		*err = sv_error_new(SV_ERR_BINDING,
				    "cluster '%s': cannot read "
				    "its brokers: %s",
				    cluster, rd_kafka_err2str(e));
		if (md)
			rd_kafka_metadata_destroy(md);
		return -1;
	}
	char id[16];
	snprintf(id, sizeof(id), "%d", md->brokers[0].id);
	rd_kafka_metadata_destroy(md);

	rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(
		RD_KAFKA_RESOURCE_BROKER, id);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(
		rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
	char es[256];
	rd_kafka_AdminOptions_set_request_timeout(opt, ADMIN_TIMEOUT_MS, es,
						  sizeof(es));
	rd_kafka_DescribeConfigs(rk, &res, 1, opt, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS + 1000);
	int64_t max = -1;
	const char *why = "no answer";
	if (ev && rd_kafka_event_error(ev)) {
		why = rd_kafka_event_error_string(ev);
	} else if (ev) {
		const rd_kafka_DescribeConfigs_result_t *r =
			rd_kafka_event_DescribeConfigs_result(ev);
		size_t nr;
		const rd_kafka_ConfigResource_t **rs = r
			? rd_kafka_DescribeConfigs_result_resources(r, &nr)
			: NULL;
		for (size_t i = 0; rs && i < nr; i++) {
			size_t ne;
			const rd_kafka_ConfigEntry_t **ents =
				rd_kafka_ConfigResource_configs(rs[i], &ne);
			for (size_t j = 0; j < ne; j++) {
				const char *v = rd_kafka_ConfigEntry_value(
					ents[j]);
				if (!strcmp(rd_kafka_ConfigEntry_name(ents[j]),
					    "transaction.max.timeout.ms") &&
				    v)
					max = strtoll(v, NULL, 10);
			}
		}
		why = "the broker did not report transaction.max.timeout.ms";
	}
	char text[512];
	if (max < 0)
		*err = sv_error_new(
			SV_ERR_BINDING,
			"cluster '%s': cannot read "
			"transaction.max.timeout.ms of broker %s: %s",
			cluster, id,
			sv_kafka_client_scrub(rk, why, text, sizeof(text)));
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_queue_destroy(q);
	rd_kafka_ConfigResource_destroy(res);
	return max;
}

/* The short-lived client of one check (kafka/client.c: the profile's
 * properties, its errors name keys only). */
static sv_error_t *admin_client(const sv_cluster_t *cluster, rd_kafka_t **rk)
{
	static const sv_kafka_prop_t tuning[] = {{"log_level", "3"}};
	char role[300];
	snprintf(role, sizeof(role), "admin client of cluster '%s'",
		 cluster->name);
	sv_kafka_client_conf_t kc = {
		.type = RD_KAFKA_PRODUCER,
		.cluster = cluster,
		.client_id = "streamvisor-admin",
		.role = role,
		.tuning = tuning,
		.ntuning = SV_ARRAY_LEN(tuning),
	};
	return sv_kafka_client_new(&kc, rk);
}

int sv_kafka_topic_partitions(const sv_cluster_t *cluster, const char *topic)
{
	if (!cluster || cluster->dev_embedded || !topic || !*topic)
		return 0;
	rd_kafka_t *rk;
	sv_error_t *cerr = admin_client(cluster, &rk);
	if (cerr) {
		sv_error_destroy(cerr); /* the job's start reports it */
		return 0;
	}
	int n = 0;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	if (rkt && !rd_kafka_metadata(rk, 0, rkt, &md, ADMIN_TIMEOUT_MS) &&
	    md->topic_cnt == 1 && !md->topics[0].err)
		n = md->topics[0].partition_cnt;
	if (md)
		rd_kafka_metadata_destroy(md);
	if (rkt)
		rd_kafka_topic_destroy(rkt);
	sv_kafka_client_destroy(rk);
	return n;
}

sv_error_t *sv_kafka_check_txn_timeout(const sv_cluster_t *cluster,
				       int64_t timeout_ms, const char *field)
{
	if (!cluster || cluster->dev_embedded)
		return NULL;
	rd_kafka_t *rk;
	sv_error_t *cerr = admin_client(cluster, &rk);
	if (cerr)
		return cerr;
	sv_error_t *err = NULL;
	int64_t max = broker_max_txn_timeout(rk, cluster->name, &err);
	sv_kafka_client_destroy(rk);
	if (err)
		return err;
	if (timeout_ms > max)
		return sv_error_set_field(
			sv_error_new(SV_ERR_CONFIG,
				     "transaction timeout %lld ms "
				     "exceeds the broker's "
				     "transaction.max.timeout.ms "
				     "%lld on cluster '%s'",
				     (long long)timeout_ms, (long long)max,
				     cluster->name),
			field);
	return NULL;
}

/* Wait for the one topic result of a CreateTopics or DeleteTopics call:
 * its error code (or the request's), with its text in why. */
static rd_kafka_resp_err_t topic_result(rd_kafka_queue_t *q, bool create,
					char *why, size_t whylen)
{
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS + 1000);
	rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
	snprintf(why, whylen, "no answer");
	if (ev && rd_kafka_event_error(ev)) {
		e = rd_kafka_event_error(ev);
		snprintf(why, whylen, "%s", rd_kafka_event_error_string(ev));
	} else if (ev) {
		const rd_kafka_topic_result_t **tr;
		size_t n = 0;
		if (create) {
			const rd_kafka_CreateTopics_result_t *r =
				rd_kafka_event_CreateTopics_result(ev);
			tr = r ? rd_kafka_CreateTopics_result_topics(r, &n)
			       : NULL;
		} else {
			const rd_kafka_DeleteTopics_result_t *r =
				rd_kafka_event_DeleteTopics_result(ev);
			tr = r ? rd_kafka_DeleteTopics_result_topics(r, &n)
			       : NULL;
		}
		if (tr && n == 1) {
			e = rd_kafka_topic_result_error(tr[0]);
			const char *s = rd_kafka_topic_result_error_string(
				tr[0]);
			snprintf(why, whylen, "%s",
				 s ? s : rd_kafka_err2str(e));
		}
	}
	if (ev)
		rd_kafka_event_destroy(ev);
	return e;
}

/* have partitions: too few, or (exactly) other than the spec's */
static bool wrong_count(const sv_kafka_topic_spec_t *spec, int have)
{
	return have > 0 &&
		(spec->at_least ? have < spec->partitions
				: have != spec->partitions);
}

sv_error_t *sv_kafka_topic_ensure_spec(const sv_cluster_t *cluster,
				       const char *topic,
				       const sv_kafka_topic_spec_t *spec,
				       bool *created)
{
	bool made = false;
	if (!created)
		created = &made;
	*created = false;
	int partitions = spec->partitions;
	if (!cluster || cluster->dev_embedded)
		return sv_error_new(
			SV_ERR_CONFIG,
			"topic '%s' needs a real Kafka cluster (the "
			"embedded development cluster has no "
			"admin API)",
			topic);
	int have = sv_kafka_topic_partitions(cluster, topic);
	if (wrong_count(spec, have))
		return sv_error_new(SV_ERR_CONFIG,
				    "topic '%s' on cluster '%s' has %d "
				    "partitions, not the %s%d it needs",
				    topic, cluster->name, have,
				    spec->at_least ? "at least " : "",
				    partitions);
	if (have > 0)
		return NULL;
	rd_kafka_t *rk;
	sv_error_t *err = admin_client(cluster, &rk);
	if (err)
		return err;
	char es[256], why[512], text[512];
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(
		topic, partitions,
		spec->replication_factor > 0 ? spec->replication_factor : -1,
		es, sizeof(es));
	if (!nt) {
		sv_kafka_client_destroy(rk);
		return sv_error_new(SV_ERR_CONFIG, "topic '%s': %s", topic, es);
	}
	if (spec->compact) {
		rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
	} else {
		rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "delete");
		rd_kafka_NewTopic_set_config(nt, "retention.ms", "-1");
	}
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(
		rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_AdminOptions_set_request_timeout(opt, ADMIN_TIMEOUT_MS, es,
						  sizeof(es));
	rd_kafka_AdminOptions_set_operation_timeout(opt, ADMIN_TIMEOUT_MS, es,
						    sizeof(es));
	rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
	rd_kafka_resp_err_t e = topic_result(q, true, why, sizeof(why));
	if (!e)
		*created = true;
	else if (e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
		err = sv_error_new(
			SV_ERR_BINDING,
			"cannot create topic '%s' on cluster '%s': %s", topic,
			cluster->name,
			sv_kafka_client_scrub(rk, why, text, sizeof(text)));
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_queue_destroy(q);
	rd_kafka_NewTopic_destroy(nt);
	sv_kafka_client_destroy(rk);
	if (!err && !*created) {
		have = sv_kafka_topic_partitions(cluster, topic);
		if (wrong_count(spec, have))
			err = sv_error_new(SV_ERR_CONFIG,
					   "topic '%s' on cluster '%s' has %d "
					   "partitions, not the %s%d it needs",
					   topic, cluster->name, have,
					   spec->at_least ? "at least " : "",
					   partitions);
	}
	return err;
}

sv_error_t *sv_kafka_topic_ensure(const sv_cluster_t *cluster,
				  const char *topic, int partitions,
				  bool *created)
{
	sv_kafka_topic_spec_t spec = {.partitions = partitions};
	return sv_kafka_topic_ensure_spec(cluster, topic, &spec, created);
}

sv_error_t *sv_kafka_topic_delete(const sv_cluster_t *cluster,
				  const char *topic)
{
	if (!cluster || cluster->dev_embedded)
		return NULL;
	rd_kafka_t *rk;
	sv_error_t *err = admin_client(cluster, &rk);
	if (err)
		return err;
	char es[256], why[512], text[512];
	rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(
		rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
	rd_kafka_AdminOptions_set_request_timeout(opt, ADMIN_TIMEOUT_MS, es,
						  sizeof(es));
	rd_kafka_AdminOptions_set_operation_timeout(opt, ADMIN_TIMEOUT_MS, es,
						    sizeof(es));
	rd_kafka_DeleteTopics(rk, &dt, 1, opt, q);
	rd_kafka_resp_err_t e = topic_result(q, false, why, sizeof(why));
	if (e && e != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
		err = sv_error_new(
			SV_ERR_BINDING,
			"cannot delete topic '%s' on cluster '%s': %s", topic,
			cluster->name,
			sv_kafka_client_scrub(rk, why, text, sizeof(text)));
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_queue_destroy(q);
	rd_kafka_DeleteTopic_destroy(dt);
	sv_kafka_client_destroy(rk);
	return err;
}

/* ---- DeleteRecords (repartition purge) ---- */

struct sv_kafka_admin {
	rd_kafka_t *rk;
	rd_kafka_queue_t *q;
	char *cluster;
	int inflight; /* DeleteRecords requests without a result yet */
};

sv_error_t *sv_kafka_admin_new(const sv_cluster_t *cluster,
			       sv_kafka_admin_t **out)
{
	*out = NULL;
	if (!cluster || cluster->dev_embedded)
		return sv_error_new(SV_ERR_CONFIG,
				    "an admin client needs a real Kafka "
				    "cluster");
	rd_kafka_t *rk;
	sv_error_t *err = admin_client(cluster, &rk);
	if (err)
		return err;
	sv_kafka_admin_t *adm = sv_calloc(1, sizeof(*adm));
	adm->rk = rk;
	adm->q = rd_kafka_queue_new(rk);
	adm->cluster = sv_strdup(cluster->name);
	*out = adm;
	return NULL;
}

void sv_kafka_admin_destroy(sv_kafka_admin_t *adm)
{
	if (!adm)
		return;
	rd_kafka_queue_destroy(adm->q);
	sv_kafka_client_destroy(adm->rk);
	free(adm->cluster);
	free(adm);
}

/* The results of earlier requests that have arrived: the first failure
 * as an error (the others are dropped). */
static sv_error_t *delete_results(sv_kafka_admin_t *adm, int timeout_ms)
{
	sv_error_t *err = NULL;
	rd_kafka_event_t *ev;
	while (adm->inflight > 0 &&
	       (ev = rd_kafka_queue_poll(adm->q, timeout_ms))) {
		adm->inflight--;
		char why[512] = "", text[512];
		if (rd_kafka_event_error(ev)) {
			snprintf(why, sizeof(why), "%s",
				 rd_kafka_event_error_string(ev));
		} else {
			const rd_kafka_DeleteRecords_result_t *r =
				rd_kafka_event_DeleteRecords_result(ev);
			const rd_kafka_topic_partition_list_t *l = r
				? rd_kafka_DeleteRecords_result_offsets(r)
				: NULL;
			for (int i = 0; l && i < l->cnt && !why[0]; i++)
				if (l->elems[i].err)
					snprintf(why, sizeof(why),
						 "partition %d: %s",
						 l->elems[i].partition,
						 rd_kafka_err2str(
							 l->elems[i].err));
		}
		if (why[0] && !err)
			err = sv_error_new(
				SV_ERR_BINDING,
				"cannot delete records on cluster '%s': %s",
				adm->cluster,
				sv_kafka_client_scrub(adm->rk, why, text,
						      sizeof(text)));
		rd_kafka_event_destroy(ev);
	}
	return err;
}

sv_error_t *sv_kafka_delete_records(sv_kafka_admin_t *adm, const char *topic,
				    const int32_t *partitions,
				    const int64_t *before, size_t n)
{
	sv_error_t *err = delete_results(adm, 0);
	if (!n)
		return err;
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(
		(int)n);
	for (size_t i = 0; i < n; i++)
		rd_kafka_topic_partition_list_add(l, topic, partitions[i])
			->offset = before[i];
	rd_kafka_DeleteRecords_t *dr = rd_kafka_DeleteRecords_new(l);
	rd_kafka_topic_partition_list_destroy(l);
	char es[256];
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(
		adm->rk, RD_KAFKA_ADMIN_OP_DELETERECORDS);
	rd_kafka_AdminOptions_set_request_timeout(opt, ADMIN_TIMEOUT_MS, es,
						  sizeof(es));
	rd_kafka_AdminOptions_set_operation_timeout(opt, ADMIN_TIMEOUT_MS, es,
						    sizeof(es));
	rd_kafka_DeleteRecords(adm->rk, &dr, 1, opt, adm->q);
	adm->inflight++;
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_DeleteRecords_destroy(dr);
	return err;
}

sv_error_t *sv_kafka_admin_drain(sv_kafka_admin_t *adm, int timeout_ms)
{
	return delete_results(adm, timeout_ms);
}
