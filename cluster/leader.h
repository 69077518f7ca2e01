/* leader.h — distributed mode's leader (docs/cluster.md "Leader"): who
 * may write the job registry, elected through Kafka's group coordinator
 * and fenced by its transaction coordinator (SCALE-OUT.md §5.2, Kafka
 * Connect's model).
 *
 * Every node runs a consumer in the lead group `_streamvisor.<c>.lead`
 * (static member `group.instance.id = <node>`, eager `range`) subscribed
 * to the one-partition registry topic: the member assigned partition 0 is
 * the leader. On that assignment it makes a producer with the fixed
 * transactional id `_streamvisor.<c>.leader` and calls init_transactions,
 * which fences the previous leader's producer; it waits until the
 * registry reader read the topic to its end (read_committed), then writes
 * `leader` → {node, url, epoch = previous + 1} in a transaction that also
 * sends the lead group's offset with the lead consumer's group metadata,
 * so a leader whose generation is stale cannot commit. Every later write
 * (sv_leader_write) is such a transaction. On a revoke or a lost
 * assignment it stops leading, aborts, closes the producer, then
 * acknowledges. */
#ifndef SV_CLUSTER_LEADER_H
#define SV_CLUSTER_LEADER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"

typedef struct sv_leader sv_leader_t;

typedef struct sv_leader_conf {
	const char *name; /* the streamvisor cluster */
	const char *node_id;
	const char *url; /* this node's advertised URL */
	const char *topic; /* the registry topic */
	const sv_cluster_t *kafka;
	int session_timeout_ms;
	/* The registry reader's position: every record below it has been
	 * applied to this node's view. thread: the leader's */
	int64_t (*read_pos)(void *opaque);
	/* The highest leader epoch the registry holds (0: none yet). */
	int64_t (*last_epoch)(void *opaque);
	void *opaque;
} sv_leader_conf_t;

/* Join the lead group and start the thread that polls it. conf's strings
 * are copied. Errors: SV_ERR_BINDING (the consumer cannot be made). */
sv_error_t *sv_leader_start(const sv_leader_conf_t *conf, sv_leader_t **out);

/* Whether this node leads now; *epoch (may be NULL) its epoch then.
 * thread: any */
bool sv_leader_is(sv_leader_t *l, int64_t *epoch);

/* Write key → value (borrowed; "epoch" and "leader" are set in it) to the
 * registry in one leader transaction with the lead group's offset, and
 * wait for the commit (at most 10 s). Errors: SV_ERR_UNAVAILABLE (not the
 * leader, or fenced or revoked during the write: nothing was written, or
 * a newer leader aborted it). thread: any */
sv_error_t *sv_leader_write(sv_leader_t *l, const char *key, json_t *value);

/* How many times this node became leader, and how many leader writes it
 * committed (metrics). thread: any */
void sv_leader_counts(sv_leader_t *l, int64_t *elected, int64_t *writes);

/* Stop leading, leave (close the consumer), stop the thread. NULL is
 * fine. */
void sv_leader_stop(sv_leader_t *l);

#endif
