/* devcluster.c — the embedded development cluster (devcluster.h).
 *
 * librdkafka ships an in-process mock Kafka cluster: broker threads that
 * listen on loopback ports and answer the Kafka protocol from memory. A mock
 * cluster must be owned by a client handle, so we create a dummy producer
 * (never used to produce) and hang the cluster off it; destroying the
 * cluster and then the handle stops everything.
 *
 * The mock cluster writes no transaction markers and does not filter
 * aborted records for read_committed readers (librdkafka 2.0.2), so it has
 * no transactional isolation. That is logged loudly at start: a developer
 * must not take a passing exactly-once run against it as proof. */
#include "kafka/devcluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "core/log.h"
#include "core/util.h"
#include "kafka/client.h"

/* Kafka protocol ApiKey of Metadata (librdkafka's RD_KAFKAP_Metadata lives
 * in a private header). */
#define SV_KAFKA_APIKEY_METADATA 3

struct sv_devcluster {
	rd_kafka_t *rk; /* dummy producer owning the cluster */
	rd_kafka_mock_cluster_t *mc;
	char *bootstrap;
	int nbrokers;
};

sv_error_t *sv_devcluster_start(int nbrokers, char **bootstrap_out,
				sv_devcluster_t **out)
{
	sv_devcluster_t *dc;

	*out = NULL;
	if (bootstrap_out)
		*bootstrap_out = NULL;
	if (nbrokers < 1 || nbrokers > 64)
		return sv_error_new(
			SV_ERR_CONFIG,
			"development cluster needs 1 to 64 brokers, "
			"got %d",
			nbrokers);

	/* The owner handle has no brokers of its own; keep it quiet. */
	static const sv_kafka_prop_t quiet[] = {{"log_level", "4"}};
	sv_kafka_client_conf_t kc = {
		.type = RD_KAFKA_PRODUCER,
		.client_id = "streamvisor-devcluster",
		.role = "development cluster",
		.tuning = quiet,
		.ntuning = SV_ARRAY_LEN(quiet),
	};
	dc = sv_calloc(1, sizeof(*dc));
	sv_error_t *err = sv_kafka_client_new(&kc, &dc->rk);
	if (err) {
		free(dc);
		return err;
	}
	dc->mc = rd_kafka_mock_cluster_new(dc->rk, nbrokers);
	if (!dc->mc) {
		sv_kafka_client_destroy(dc->rk);
		free(dc);
		return sv_error_new(SV_ERR_BINDING,
				    "cannot start development cluster of %d "
				    "broker(s)",
				    nbrokers);
	}
	dc->nbrokers = nbrokers;
	/* The 2.0.2 mock advertises Metadata v0-2 only, and below v4 a
	 * Metadata request cannot say AllowAutoTopicCreation=false, so asking
	 * about a missing topic creates it. Its handler does parse v4; the
	 * client speaks up to v4. Advertise v4 so that, like our real
	 * clusters, a missing topic stays missing. */
	rd_kafka_mock_set_apiversion(dc->mc, SV_KAFKA_APIKEY_METADATA, 0, 4);
	dc->bootstrap = sv_strdup(rd_kafka_mock_cluster_bootstraps(dc->mc));

	sv_log(NULL, SV_LOG_WARN, "devcluster",
	       "EMBEDDED DEVELOPMENT CLUSTER started with %d broker(s) on %s: "
	       "it has NO transactional isolation (aborted records are "
	       "visible to read_committed readers), caps each partition log "
	       "at about 5 MiB and keeps nothing on disk; never use it to "
	       "verify exactly-once or in production",
	       nbrokers, dc->bootstrap);

	if (bootstrap_out)
		*bootstrap_out = sv_strdup(dc->bootstrap);
	*out = dc;
	return NULL;
}

const char *sv_devcluster_bootstrap(const sv_devcluster_t *dc)
{
	return dc->bootstrap;
}

sv_error_t *sv_devcluster_create_topic(sv_devcluster_t *dc, const char *topic,
				       int partitions)
{
	rd_kafka_resp_err_t err;

	if (!topic || !*topic)
		return sv_error_new(SV_ERR_BINDING,
				    "development cluster: empty topic name");
	if (partitions < 1)
		return sv_error_new(SV_ERR_BINDING,
				    "development cluster: topic '%s' needs at "
				    "least one partition, got %d",
				    topic, partitions);
	err = rd_kafka_mock_topic_create(dc->mc, topic, partitions, 1);
	if (err)
		return sv_error_set_cause(
			sv_error_new(SV_ERR_BINDING,
				     "development cluster: cannot create "
				     "topic '%s'",
				     topic),
			err, rd_kafka_err2str(err));
	sv_log(NULL, SV_LOG_INFO, "devcluster",
	       "created topic '%s' with %d partition(s)", topic, partitions);
	return NULL;
}

sv_error_t *sv_devcluster_push_errors(sv_devcluster_t *dc, const char *api,
				      int kafka_err, int count)
{
	/* Kafka protocol ApiKeys (public protocol numbers). */
	static const struct {
		const char *name;
		int16_t key;
	} apis[] = {
		{"produce", 0},
		{"fetch", 1},
		{"list_offsets", 2},
		{"metadata", 3},
		{"offset_commit", 8},
		{"offset_fetch", 9},
		{"find_coordinator", 10},
		{"init_producer_id", 22},
		{"txn_offset_commit", 28},
	};
	rd_kafka_resp_err_t *errs;

	if (count < 1)
		return NULL;
	for (size_t i = 0; i < SV_ARRAY_LEN(apis); i++) {
		if (strcmp(apis[i].name, api))
			continue;
		errs = sv_calloc((size_t)count, sizeof(*errs));
		for (int k = 0; k < count; k++)
			errs[k] = (rd_kafka_resp_err_t)kafka_err;
		rd_kafka_mock_push_request_errors_array(dc->mc, apis[i].key,
							(size_t)count, errs);
		free(errs);
		return NULL;
	}
	return sv_error_new(SV_ERR_CONFIG,
			    "development cluster: unknown request kind '%s'",
			    api);
}

void sv_devcluster_stop(sv_devcluster_t *dc)
{
	if (!dc)
		return;
	rd_kafka_mock_cluster_destroy(dc->mc);
	sv_kafka_client_destroy(dc->rk);
	free(dc->bootstrap);
	free(dc);
	sv_log(NULL, SV_LOG_INFO, "devcluster", "development cluster stopped");
}
