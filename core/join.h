/* join.h — the join operators: two-input operators (operator.h) whose
 * left input is the pipeline's and whose right input is a second source.
 *
 *   interval: both inputs are streams; a left row l and a right row r of
 *             equal keys match when lower_ms <= r.time - l.time <= upper_ms
 *             (Flink's intervalJoin ... between); state is freed by the
 *             other input's watermark.
 *   lookup:   the right input is a versioned table (latest value per key,
 *             SV_ROW_DELETE rows delete the key); each left row joins the
 *             version current at its event time (Flink's event-time
 *             temporal join), or the latest one when processing_time is
 *             set (Kafka Streams' KStream-KTable join).
 *   hash:     both inputs bounded; the full relational equi-join.
 *
 * Output rows: every left column, then the take columns (the right
 * columns named by take_cols under the names take_names). Null keys match
 * nothing (SQL). kind left emits an unmatched left row once with the take
 * columns null. The rules, the output event time and watermark and the
 * state bounds are in docs/joins.md. */
#ifndef SV_JOIN_H
#define SV_JOIN_H

#include "core/operator.h"

typedef enum sv_jointype {
	SV_JOIN_INTERVAL = 0,
	SV_JOIN_LOOKUP,
	SV_JOIN_HASH,
} sv_jointype_t;

typedef enum sv_joinkind {
	SV_JOIN_INNER = 0,
	SV_JOIN_LEFT,
} sv_joinkind_t;

typedef struct sv_join_spec {
	sv_jointype_t type;
	sv_joinkind_t kind;
	size_t nkeys; /* >= 1 */
	const char *const *left_keys; /* columns of the left input */
	const char *const *right_keys; /* columns of the right input */
	/* ntake == 0: every right column under its own name, except a right
	 * key column named like the left key it is paired with (its value
	 * equals the left one on every match) */
	size_t ntake;
	const char *const *take_names; /* output column names */
	const char *const *take_cols; /* right input columns */
	int64_t lower_ms, upper_ms; /* interval: bounds of r.time - l.time */
	bool processing_time; /* lookup: join the latest version */
	int64_t retention_ms; /* lookup, event time: a left row waits for the
			       * table's watermark at most this long of left
			       * event time (0: no limit) */
	uint64_t max_state_rows; /* 0: no cap */
	uint64_t max_state_bytes; /* 0: no cap */
} sv_join_spec_t;

/* Build a join of left (borrowed, the op's in_schema) and right (borrowed,
 * its right_schema); both must outlive the operator. spec is borrowed for
 * the call. Errors are SV_ERR_SUBMISSION with err->field set ("on.left",
 * "take.x", "lower_ms"): unknown or mistyped key columns, an output column
 * clash (naming both columns), bad bounds. */
sv_error_t *sv_op_join_new(const sv_schema_t *left, const sv_schema_t *right,
			   const sv_join_spec_t *spec, sv_op_t **out);

/* "interval", "lookup", "hash"; "inner", "left". */
const char *sv_jointype_name(sv_jointype_t t);
const char *sv_joinkind_name(sv_joinkind_t k);

#endif
