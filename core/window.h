/* window.h — keyed event-time or processing-time windows and dedup.
 * Spec forms (docs/windows.md):
 *   {"window": {"type": "tumbling", "size_ms": n, "key": [...],
 *               "aggregates": {"out": "fn(expr)"}, "allowed_lateness_ms": n,
 *               "late": "drop"|"side_output", "time": "event"|"processing"}}
 *   sliding: size_ms + slide_ms (pane-based); session: gap_ms; global: no
 *   size, one window [0, 2^61) that only the end of input fires.
 *   {"dedup": {"key": [...], "within_ms": n}}  keeps the first of each key.
 * Output rows: key columns, window_start, window_end (timestamp_ms), then
 * the aggregates by name, in the order given. Aggregates: count(), count(x),
 * sum, min, max, avg, count_distinct, first, last. */
#ifndef SV_WINDOW_H
#define SV_WINDOW_H

#include "core/operator.h"

typedef enum sv_wintype {
	SV_WIN_TUMBLING = 0,
	SV_WIN_SLIDING,
	SV_WIN_SESSION,
	SV_WIN_GLOBAL, /* one window over the whole input, keyed: fires only at
			* the end of input (bounded jobs; a plain GROUP BY) */
} sv_wintype_t;

typedef struct sv_window_spec {
	sv_wintype_t type;
	int64_t size_ms; /* tumbling, sliding */
	int64_t slide_ms; /* sliding */
	int64_t gap_ms; /* session */
	int64_t allowed_lateness_ms; /* default 0 */
	bool processing_time; /* "time": "processing" */
	bool late_side_output; /* "late": "side_output" */
	size_t nkeys;
	const char *const *keys; /* column names of the input */
	size_t naggs;
	const char *const *agg_names;
	const char *const *agg_exprs; /* "sum(amount)", "count()" */
} sv_window_spec_t;

/* Errors: SV_ERR_SUBMISSION naming the key/aggregate and reason; an unknown
 * aggregate function is SV_ERR_COVERAGE. spec is borrowed for the call. */
sv_error_t *sv_op_window_new(const sv_schema_t *in,
			     const sv_window_spec_t *spec, sv_op_t **out);

sv_error_t *sv_op_dedup_new(const sv_schema_t *in, size_t nkeys,
			    const char *const *keys, int64_t within_ms,
			    sv_op_t **out);

#endif
