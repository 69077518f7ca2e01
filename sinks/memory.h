/* memory.h — the "memory" sink driver: keeps what is written, in memory.
 *
 * Every row written is encoded once as a JSON line (sv_json_encode_row, no
 * trailing newline) and kept in write order; raw payloads (write_raw, the
 * dead-letter path) are kept apart. With a maximum set, the oldest lines are
 * dropped first, which makes the sink a bounded "recent output" sample
 * (preview). Used by tests and by bounded jobs that collect a result.
 *
 * records_out counts every row written plus every raw payload, including
 * those later dropped by the maximum. All functions are thread: any (one
 * mutex per sink). */
#ifndef SV_SINK_MEMORY_H
#define SV_SINK_MEMORY_H

#include <stddef.h>

#include "sinks/sink.h"

/* The driver (name "memory"); listed in sinks/registry.c. */
extern const sv_sink_ops_t sv_sink_memory_ops;

/* Keep at most max rows (and, separately, at most max raw payloads),
 * dropping the oldest first; 0 means unbounded (the default). Lowering it
 * drops the excess at once. snk must be a memory sink. */
void sv_sink_memory_set_max(sv_sink_t *snk, size_t max);

/* Rows currently held (at most the maximum). */
size_t sv_sink_memory_count(sv_sink_t *snk);
/* Raw payloads currently held. */
size_t sv_sink_memory_raw_count(sv_sink_t *snk);
/* Rows dropped so far because of the maximum. */
size_t sv_sink_memory_dropped(sv_sink_t *snk);

/* The first limit rows held (0: all), oldest first, as JSON lines joined by
 * '\n' (no trailing newline; "" when empty). Returns a NUL-terminated copy
 * the caller frees. */
char *sv_sink_memory_lines(sv_sink_t *snk, size_t limit);

/* Call cb for every row held, oldest first. line is NUL-terminated and valid
 * only during the call; cb must not call back into this sink (the sink's
 * lock is held). */
void sv_sink_memory_each(sv_sink_t *snk,
			 void (*cb)(const char *line, size_t len, void *opaque),
			 void *opaque);

/* Same for raw payloads; reason may be NULL. */
void sv_sink_memory_raw_each(sv_sink_t *snk,
			     void (*cb)(const char *payload, size_t len,
					const char *reason, void *opaque),
			     void *opaque);

/* Drop everything held (records_out is kept). */
void sv_sink_memory_clear(sv_sink_t *snk);

#endif
