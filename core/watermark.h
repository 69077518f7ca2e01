/* watermark.h — per-partition event-time watermarks, combined as the minimum.
 *
 * Each source partition tracks the largest event time seen. Its watermark is
 * that maximum minus the bounded out-of-orderness minus 1 (Flink's
 * BoundedOutOfOrdernessWatermarks). The combined watermark is the minimum
 * over the partitions that are not idle; a partition is idle when it has
 * received no record for idle_timeout_ms of processing time (0: never idle).
 * A known partition that has no data yet and is not idle holds the combined
 * watermark back. When every partition is idle the combined watermark stays
 * where it was. The combined watermark never goes back. See docs/windows.md.
 *
 * thread: the worker thread that owns the job attempt. */
#ifndef SV_WATERMARK_H
#define SV_WATERMARK_H

#include <stdint.h>

#include "core/operator.h" /* SV_WATERMARK_NONE */

typedef struct sv_watermarks sv_watermarks_t;

/* Negative arguments are treated as 0. */
sv_watermarks_t *sv_watermarks_new(int64_t max_out_of_orderness_ms,
				   int64_t idle_timeout_ms);
void sv_watermarks_destroy(sv_watermarks_t *wm);

/* Declare partition p (>= 0) as assigned at processing time now_ms: until
 * it has data or goes idle it holds the combined watermark back. Adding a
 * known partition again only refreshes its idle clock. */
void sv_watermarks_add_partition(sv_watermarks_t *wm, int32_t p,
				 int64_t now_ms);
/* Forget partition p (revoked). */
void sv_watermarks_remove_partition(sv_watermarks_t *wm, int32_t p);

/* A record of partition p with event time event_ms arrived at now_ms. An
 * unknown partition is added. Cheap: a max and a store. */
void sv_watermarks_observe(sv_watermarks_t *wm, int32_t p, int64_t event_ms,
			   int64_t now_ms);

/* The combined watermark at processing time now_ms (monotonic), or
 * SV_WATERMARK_NONE before any partition allowed one. */
int64_t sv_watermarks_current(sv_watermarks_t *wm, int64_t now_ms);

/* Partition p's own watermark (max event time - out-of-orderness - 1), or
 * SV_WATERMARK_NONE when it has no data or is unknown. */
int64_t sv_watermarks_partition(const sv_watermarks_t *wm, int32_t p);
/* Whether partition p is idle at now_ms (unknown partitions: false). */
bool sv_watermarks_idle(const sv_watermarks_t *wm, int32_t p, int64_t now_ms);

/* The largest event time seen over all partitions (restored ones count
 * with the event time their watermark stands for), or SV_WATERMARK_NONE. */
int64_t sv_watermarks_max_event(const sv_watermarks_t *wm);

/* Iterate known partitions: returns the smallest known partition id > after
 * (start with -1), or -1 at the end. */
int32_t sv_watermarks_next_partition(const sv_watermarks_t *wm, int32_t after);

/* Restore from a checkpoint: partition p's watermark (as returned by
 * sv_watermarks_partition; NONE means no data yet), with its idle clock
 * started at now_ms. */
void sv_watermarks_set(sv_watermarks_t *wm, int32_t p, int64_t watermark_ms,
		       int64_t now_ms);
/* Restore the combined watermark (it never goes below this afterwards). */
void sv_watermarks_set_current(sv_watermarks_t *wm, int64_t watermark_ms);

#endif
