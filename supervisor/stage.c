/* stage.c — see stage.h and docs/repartition.md.
 *
 * The watermark records cross the repartition inside stage 0's
 * transactions, so a stage-1 task sees them (read_committed) only with
 * the rows written before them. A stage-1 task keeps one slot per
 * upstream task (a source partition of stage 0), sized by the task count
 * the records carry; its watermark is the minimum over the slots once
 * every slot is filled. Slots only move forward: a record older than the
 * slot (a replay after a restore) changes nothing. */
#include "supervisor/stage.h"

#include <stdlib.h>
#include <string.h>

#include "core/rowcodec.h"
#include "core/util.h"
#include "core/watermark.h"
#include "kafka/admin.h"

sv_error_t *sv_stage_topic_ready(const sv_cluster_t *cluster,
				 const char *source_topic, const char *topic,
				 sv_obslog_t *obs, int attempt,
				 int32_t *partitions)
{
	int n = sv_kafka_topic_partitions(cluster, source_topic);
	if (n <= 0)
		return sv_error_new(SV_ERR_CONFIG,
				    "cannot read the partition count of source "
				    "topic '%s' for the repartition topic '%s'",
				    source_topic, topic);
	bool created = false;
	sv_error_t *err = sv_kafka_topic_ensure(cluster, topic, n, &created);
	if (err)
		return err;
	*partitions = n;
	sv_obslog_add(obs, attempt, "repartition_topic_ready",
		      json_pack("{s:s, s:i, s:b}", "topic", topic, "partitions",
				n, "created", created));
	return NULL;
}

sv_error_t *sv_stage_write_watermark(sv_sink_t *snk, int32_t rp_parts,
				     int32_t src_task, int32_t n_tasks,
				     int64_t watermark_ms)
{
	char rec[SV_ROWCODEC_WM_LEN];
	sv_rowcodec_watermark(rec, src_task, n_tasks, watermark_ms);
	for (int32_t p = 0; p < rp_parts; p++) {
		sv_error_t *err = sv_sink_write_to(snk, p, rec, sizeof(rec));
		if (err)
			return err;
	}
	return NULL;
}

typedef struct upstream {
	int64_t *wm; /* per upstream task; SV_WATERMARK_NONE: not heard */
	int32_t n;
	int32_t heard;
} upstream_t;

struct sv_stage_in {
	upstream_t *tasks;
	size_t ntasks;
};

sv_stage_in_t *sv_stage_in_new(size_t ntasks)
{
	sv_stage_in_t *si = sv_calloc(1, sizeof(*si));
	si->tasks = sv_calloc(ntasks ? ntasks : 1, sizeof(*si->tasks));
	si->ntasks = ntasks;
	return si;
}

void sv_stage_in_destroy(sv_stage_in_t *si)
{
	if (!si)
		return;
	for (size_t i = 0; i < si->ntasks; i++)
		free(si->tasks[i].wm);
	free(si->tasks);
	free(si);
}

static void note(upstream_t *u, int32_t src, int32_t n, int64_t wm)
{
	if (n <= 0 || n > 65536 || src < 0 || src >= n)
		return;
	if (n > u->n) {
		u->wm = sv_realloc(u->wm, (size_t)n * sizeof(*u->wm));
		for (int32_t i = u->n; i < n; i++)
			u->wm[i] = SV_WATERMARK_NONE;
		u->n = n;
	}
	if (u->wm[src] == SV_WATERMARK_NONE) {
		u->heard++;
		u->wm[src] = wm;
	} else if (wm > u->wm[src]) {
		u->wm[src] = wm;
	}
}

size_t sv_stage_in_take(sv_stage_in_t *si, sv_batch_t *b,
			const int32_t *task_of, int32_t ntask_of)
{
	size_t kept = 0, taken = 0;
	for (size_t i = 0; i < b->nrejects; i++) {
		sv_reject_t *rj = &b->rejects[i];
		int32_t src, n;
		int64_t wm;
		if (!sv_rowcodec_is_watermark(rj->payload, rj->len, &src, &n,
					      &wm)) {
			b->rejects[kept++] = *rj;
			continue;
		}
		taken++;
		int32_t p = rj->partition;
		int32_t t = p >= 0 && p < ntask_of ? task_of[p] : -1;
		if (t >= 0 && (size_t)t < si->ntasks)
			note(&si->tasks[t], src, n, wm);
	}
	b->nrejects = kept;
	return taken;
}

int64_t sv_stage_in_watermark(const sv_stage_in_t *si, size_t task)
{
	const upstream_t *u = &si->tasks[task];
	if (!u->n || u->heard < u->n)
		return SV_WATERMARK_NONE;
	int64_t lo = INT64_MAX;
	for (int32_t i = 0; i < u->n; i++)
		if (u->wm[i] < lo)
			lo = u->wm[i];
	return lo;
}
