/* cluster.h — a cluster profile: a named Kafka cluster from the server
 * config. Job specs name a profile; only the profile name ever appears in
 * output. Client properties may hold credentials: they are passed to the
 * Kafka client and never logged or printed. */
#ifndef SV_CLUSTER_H
#define SV_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sv_kv {
	char *key;
	char *value;
} sv_kv_t;

typedef struct sv_cluster {
	char *name;
	char *bootstrap; /* host:port[,host:port] */
	size_t nprops;
	sv_kv_t *props; /* extra librdkafka properties (secret-bearing) */
	bool dev_embedded; /* the in-process mock cluster: no transactional
				* isolation, for development only */
} sv_cluster_t;

#endif
