/* ident.c — see ident.h. The copies are the driver's own, so the strings
 * outlive the job spec that the open call borrowed them from; the log
 * context points at the copy of the job id. */
#include "kafka/ident.h"

#include <stdlib.h>

#include "core/util.h"

void sv_kafka_ident_init(sv_kafka_ident_t *id, const char *job_id, int attempt,
			 const sv_cluster_t *cluster, const char *topic)
{
	id->job_id = job_id ? sv_strdup(job_id) : NULL;
	id->attempt = attempt;
	id->logctx.job_id = id->job_id;
	id->logctx.attempt = attempt;
	id->cluster_name = sv_strdup(cluster && cluster->name ? cluster->name
							      : "(none)");
	id->topic = sv_strdup(topic ? topic : "");
}

void sv_kafka_ident_release(sv_kafka_ident_t *id)
{
	free(id->job_id);
	free(id->cluster_name);
	free(id->topic);
	id->job_id = id->cluster_name = id->topic = NULL;
	id->logctx.job_id = NULL;
}
