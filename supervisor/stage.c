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

#include <stdatomic.h>
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

sv_error_t *sv_stage_delete_topic(const sv_cluster_t *cluster,
				  const char *topic)
{
	return sv_kafka_topic_delete(cluster, topic);
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

bool sv_stage_in_ended(const sv_stage_in_t *si)
{
	for (size_t i = 0; i < si->ntasks; i++)
		if (sv_stage_in_watermark(si, i) != SV_STAGE_WM_END)
			return false;
	return si->ntasks > 0;
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

struct sv_stage_purge {
	sv_kafka_admin_t *adm;
	const char *topic;
	int32_t nparts;
	_Atomic int64_t *before; /* per partition: last purged below, or -1 */
	int64_t next_mono;
	int32_t *parts; /* request scratch */
	int64_t *offs;
};

sv_error_t *sv_stage_purge_new(const sv_cluster_t *cluster, const char *topic,
			       int32_t partitions, sv_stage_purge_t **out)
{
	*out = NULL;
	sv_kafka_admin_t *adm;
	sv_error_t *err = sv_kafka_admin_new(cluster, &adm);
	if (err)
		return err;
	sv_stage_purge_t *pg = sv_calloc(1, sizeof(*pg));
	pg->adm = adm;
	pg->topic = topic;
	pg->nparts = partitions > 0 ? partitions : 1;
	pg->before = sv_calloc((size_t)pg->nparts, sizeof(*pg->before));
	for (int32_t p = 0; p < pg->nparts; p++)
		atomic_store(&pg->before[p], -1);
	pg->parts = sv_calloc((size_t)pg->nparts, sizeof(*pg->parts));
	pg->offs = sv_calloc((size_t)pg->nparts, sizeof(*pg->offs));
	*out = pg;
	return NULL;
}

void sv_stage_purge_destroy(sv_stage_purge_t *pg)
{
	if (!pg)
		return;
	sv_error_destroy(sv_kafka_admin_drain(pg->adm, 1000));
	sv_kafka_admin_destroy(pg->adm);
	free(pg->before);
	free(pg->parts);
	free(pg->offs);
	free(pg);
}

sv_error_t *sv_stage_purge(sv_stage_purge_t *pg, const sv_partpos_t *pos,
			   size_t n, int64_t now_mono)
{
	if (now_mono < pg->next_mono)
		return NULL;
	pg->next_mono = now_mono + SV_STAGE_PURGE_INTERVAL_MS;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int32_t p = pos[i].partition;
		if (p < 0 || p >= pg->nparts || pos[i].next_offset <= 0 ||
		    pos[i].next_offset <= atomic_load(&pg->before[p]))
			continue;
		pg->parts[k] = p;
		pg->offs[k++] = pos[i].next_offset;
		atomic_store(&pg->before[p], pos[i].next_offset);
	}
	return sv_kafka_delete_records(pg->adm, pg->topic, pg->parts, pg->offs,
				       k);
}

int64_t sv_stage_purged_before(const sv_stage_purge_t *pg, int32_t partition)
{
	if (!pg || partition < 0 || partition >= pg->nparts)
		return -1;
	return atomic_load(&pg->before[partition]);
}
