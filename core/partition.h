/* partition.h — which Kafka partition a key goes to, as our Kafka sink and
 * the Java client's default partitioner decide it: the key rendered as text
 * (sv_key_text, the bytes the sink sends as the message key) hashed with
 * Kafka's murmur2, made positive, modulo the partition count. The worker
 * uses it to check source.partitioned_by record by record
 * (docs/parallelism.md). thread: any (pure functions). */
#ifndef SV_PARTITION_H
#define SV_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "core/record.h"

/* Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2). */
uint32_t sv_murmur2(const void *data, size_t len);

/* The partition of a key among nparts (> 0): murmur2 & 0x7fffffff mod
 * nparts, librdkafka's murmur2_random for a non-null key. */
static inline int32_t sv_partition_of(const void *key, size_t len,
				      int32_t nparts)
{
	return (int32_t)((sv_murmur2(key, len) & 0x7fffffff) %
			 (uint32_t)nparts);
}

/* A value as message-key text: string bytes, or the number / bool printed
 * (doubles in their shortest round-trip form). Returns the bytes (v's own
 * for strings, else tmp) and sets *len; NULL for null values (no key). */
const char *sv_key_text(const sv_value_t *v, char *tmp, size_t tmplen,
			size_t *len);

#endif
