/* ident.h — who a Kafka driver instance is, for its log lines and errors:
 * the job and attempt, the cluster profile's name and the topic. The Kafka
 * source and sink embed one and fill it once at open, the same way. */
#ifndef SV_KAFKA_IDENT_H
#define SV_KAFKA_IDENT_H

#include "core/cluster.h"
#include "core/log.h"

typedef struct sv_kafka_ident {
	sv_logctx_t logctx; /* job_id points at job_id below */
	char *job_id; /* NULL: no job (a test's driver) */
	int attempt;
	char *cluster_name; /* the profile's name, "(none)" without one */
	char *topic; /* "" when none was given */
} sv_kafka_ident_t;

/* Fill id from the open call's configuration (every argument borrowed and
 * copied; each may be NULL). id must not move afterwards: its logctx
 * points into it. */
void sv_kafka_ident_init(sv_kafka_ident_t *id, const char *job_id, int attempt,
			 const sv_cluster_t *cluster, const char *topic);
/* Free what init copied (a zeroed id too). */
void sv_kafka_ident_release(sv_kafka_ident_t *id);

#endif
