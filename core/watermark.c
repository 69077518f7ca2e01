/* watermark.c — per-partition watermark tracking (see watermark.h).
 *
 * Partitions are small dense integers (Kafka partition ids), so they live in
 * an array indexed by id; observe() is a bounds check, a max and a store.
 * current() walks the known partitions, which is done once per batch. */
#include "core/watermark.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"

typedef struct wm_part {
	bool known;
	int64_t max_event; /* SV_WATERMARK_NONE: no data yet */
	int64_t last_ms; /* processing time of the last record (or add) */
} wm_part_t;

struct sv_watermarks {
	int64_t ooo, idle;
	int64_t current;
	wm_part_t *parts;
	int32_t nparts; /* array length (max id + 1) */
};

sv_watermarks_t *sv_watermarks_new(int64_t max_out_of_orderness_ms,
				   int64_t idle_timeout_ms)
{
	sv_watermarks_t *wm = sv_calloc(1, sizeof(*wm));
	wm->ooo = max_out_of_orderness_ms > 0 ? max_out_of_orderness_ms : 0;
	wm->idle = idle_timeout_ms > 0 ? idle_timeout_ms : 0;
	wm->current = SV_WATERMARK_NONE;
	return wm;
}

void sv_watermarks_destroy(sv_watermarks_t *wm)
{
	if (!wm)
		return;
	free(wm->parts);
	free(wm);
}

static wm_part_t *part_get(sv_watermarks_t *wm, int32_t p)
{
	if (p < 0)
		p = 0; /* unpartitioned sources count as partition 0 */
	if (p >= wm->nparts) {
		int32_t n = wm->nparts ? wm->nparts : 4;
		while (n <= p)
			n *= 2;
		wm->parts = sv_realloc(wm->parts,
				       (size_t)n * sizeof(wm_part_t));
		memset(wm->parts + wm->nparts, 0,
		       (size_t)(n - wm->nparts) * sizeof(wm_part_t));
		wm->nparts = n;
	}
	return &wm->parts[p];
}

static const wm_part_t *part_find(const sv_watermarks_t *wm, int32_t p)
{
	if (p < 0)
		p = 0;
	if (p >= wm->nparts || !wm->parts[p].known)
		return NULL;
	return &wm->parts[p];
}

void sv_watermarks_add_partition(sv_watermarks_t *wm, int32_t p, int64_t now_ms)
{
	wm_part_t *pt = part_get(wm, p);
	if (!pt->known) {
		pt->known = true;
		pt->max_event = SV_WATERMARK_NONE;
	}
	pt->last_ms = now_ms;
}

void sv_watermarks_remove_partition(sv_watermarks_t *wm, int32_t p)
{
	if (p < 0)
		p = 0;
	if (p < wm->nparts)
		memset(&wm->parts[p], 0, sizeof(wm_part_t));
}

void sv_watermarks_observe(sv_watermarks_t *wm, int32_t p, int64_t event_ms,
			   int64_t now_ms)
{
	wm_part_t *pt;
	if (p >= 0 && p < wm->nparts && wm->parts[p].known) {
		pt = &wm->parts[p];
	} else {
		pt = part_get(wm, p);
		if (!pt->known) {
			pt->known = true;
			pt->max_event = SV_WATERMARK_NONE;
		}
	}
	if (event_ms > pt->max_event)
		pt->max_event = event_ms;
	pt->last_ms = now_ms;
}

/* max_event - ooo - 1 without overflow. */
static int64_t part_wm(const sv_watermarks_t *wm, const wm_part_t *pt)
{
	if (pt->max_event == SV_WATERMARK_NONE)
		return SV_WATERMARK_NONE;
	if (pt->max_event < INT64_MIN + wm->ooo + 2)
		return SV_WATERMARK_NONE;
	return pt->max_event - wm->ooo - 1;
}

static bool part_idle(const sv_watermarks_t *wm, const wm_part_t *pt,
		      int64_t now_ms)
{
	/* unsigned difference: no overflow on odd clocks */
	return wm->idle > 0 && now_ms > pt->last_ms &&
		(uint64_t)now_ms - (uint64_t)pt->last_ms >= (uint64_t)wm->idle;
}

int64_t sv_watermarks_current(sv_watermarks_t *wm, int64_t now_ms)
{
	int64_t min = INT64_MAX;
	bool active = false;
	for (int32_t p = 0; p < wm->nparts; p++) {
		const wm_part_t *pt = &wm->parts[p];
		if (!pt->known || part_idle(wm, pt, now_ms))
			continue;
		active = true;
		int64_t w = part_wm(wm, pt);
		if (w < min)
			min = w;
	}
	/* All idle (or none known): stay where we were, like Flink. */
	if (active && min != SV_WATERMARK_NONE && min > wm->current)
		wm->current = min;
	return wm->current;
}

int64_t sv_watermarks_partition(const sv_watermarks_t *wm, int32_t p)
{
	const wm_part_t *pt = part_find(wm, p);
	return pt ? part_wm(wm, pt) : SV_WATERMARK_NONE;
}

bool sv_watermarks_idle(const sv_watermarks_t *wm, int32_t p, int64_t now_ms)
{
	const wm_part_t *pt = part_find(wm, p);
	return pt && part_idle(wm, pt, now_ms);
}

int64_t sv_watermarks_max_event(const sv_watermarks_t *wm)
{
	int64_t max = SV_WATERMARK_NONE;
	for (int32_t p = 0; p < wm->nparts; p++)
		if (wm->parts[p].known && wm->parts[p].max_event > max)
			max = wm->parts[p].max_event;
	return max;
}

int32_t sv_watermarks_next_partition(const sv_watermarks_t *wm, int32_t after)
{
	for (int32_t p = after < 0 ? 0 : after + 1; p < wm->nparts; p++)
		if (wm->parts[p].known)
			return p;
	return -1;
}

void sv_watermarks_set(sv_watermarks_t *wm, int32_t p, int64_t watermark_ms,
		       int64_t now_ms)
{
	wm_part_t *pt = part_get(wm, p);
	pt->known = true;
	pt->last_ms = now_ms;
	if (watermark_ms == SV_WATERMARK_NONE ||
	    watermark_ms > INT64_MAX - wm->ooo - 1)
		pt->max_event = SV_WATERMARK_NONE;
	else
		pt->max_event = watermark_ms + wm->ooo + 1;
}

void sv_watermarks_set_current(sv_watermarks_t *wm, int64_t watermark_ms)
{
	wm->current = watermark_ms;
}
