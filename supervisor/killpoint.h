/* killpoint.h — crash injection for tests (docs/exactly-once.md).
 *
 *   STREAMVISOR_KILL_AT=<point>[:<n>]
 *
 * makes the process SIGKILL itself the n-th time (default 1st) it reaches
 * <point>. Points, in protocol order: before_prepare, after_prepare,
 * after_send_offsets, after_commit, after_mark_committed; and
 * stage0_committed, after a checkpoint of a repartitioned job's stage 0
 * completed (its rows are in the internal topic, stage 1 has not yet
 * committed their output; docs/repartition.md). Unset: no cost beyond one
 * load. thread: any */
#ifndef SV_KILLPOINT_H
#define SV_KILLPOINT_H

void sv_killpoint(const char *point);

/* STREAMVISOR_DELAY_AT=<point>:<ms> makes every pass through <point> sleep
 * ms milliseconds (read at each call, so in-process tests can set and
 * clear it): how tests make a checkpoint slow, e.g. to see a drain time
 * out. Same points as above. At parallelism > 1, <point>_m<k> (only
 * after_prepare_m<k> for now) delays only member k's checkpoints. */
void sv_delaypoint(const char *point);

#endif
