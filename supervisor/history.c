/* history.c — a job's recent past (history.h): a ring of samples for the
 * dashboard's plots and a short window of one-second points for rates, ETAs
 * and progress.
 *
 * The supervisor thread offers an observation of every job at every tick
 * (100 ms); the ring keeps one every interval and the rate window one a
 * second, so memory is fixed per job (720 samples of ~100 bytes: ~70 KiB)
 * and nothing is allocated after creation. Rates are differences of the
 * cumulative counters over the window (up to 10 s), not instantaneous: a
 * bounded job's ETA is its remaining records over that rate; a stream's
 * catch-up ETA is its lag over the rate at which the lag has been
 * shrinking (none while it grows), since a stream's input keeps arriving.
 * Progress counts records read against the records read plus those still
 * behind the end offsets, so its percent only rises while an attempt runs
 * and is 100 once the job completed. */
#define _GNU_SOURCE
#include "supervisor/history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "supervisor/supervisor_int.h"

typedef struct rate_point {
	int64_t t_ms;
	uint64_t in, out;
	int64_t lag; /* -1 unknown */
} rate_point_t;

struct sv_history {
	sv_hist_sample_t *ring;
	size_t cap, head, n; /* head: next slot to write */
	int64_t interval_ms;
	int64_t last_sample_ms; /* 0: none yet */
	rate_point_t pts[SV_HISTORY_RATE_POINTS];
	size_t pt_head, npts;
	bool closed; /* terminal: last sample taken */
};

sv_history_t *sv_history_new(size_t cap, int64_t interval_ms)
{
	sv_history_t *h = sv_calloc(1, sizeof(*h));
	h->cap = cap ? cap : 1;
	h->ring = sv_calloc(h->cap, sizeof(*h->ring));
	h->interval_ms = interval_ms > 0 ? interval_ms : SV_HISTORY_INTERVAL_MS;
	return h;
}

void sv_history_destroy(sv_history_t *h)
{
	if (!h)
		return;
	free(h->ring);
	free(h);
}

size_t sv_history_len(const sv_history_t *h)
{
	return h ? h->n : 0;
}

const sv_hist_sample_t *sv_history_at(const sv_history_t *h, size_t i)
{
	if (!h || i >= h->n)
		return NULL;
	return &h->ring[(h->head + h->cap - h->n + i) % h->cap];
}

static const rate_point_t *point_at(const sv_history_t *h, size_t i)
{
	return &h->pts[(h->pt_head + SV_HISTORY_RATE_POINTS - h->npts + i) %
		       SV_HISTORY_RATE_POINTS];
}

bool sv_history_rates(const sv_history_t *h, double *in_per_s,
		      double *out_per_s, double *lag_drain_per_s)
{
	*in_per_s = *out_per_s = *lag_drain_per_s = NAN;
	if (!h || h->npts < 2)
		return false;
	const rate_point_t *a = point_at(h, 0), *b = point_at(h, h->npts - 1);
	double dt = (double)(b->t_ms - a->t_ms) / 1000.0;
	if (dt <= 0)
		return false;
	/* a restart may replay: counters are cumulative over attempts, so
	 * they never go back, but guard anyway */
	*in_per_s = b->in >= a->in ? (double)(b->in - a->in) / dt : 0;
	*out_per_s = b->out >= a->out ? (double)(b->out - a->out) / dt : 0;
	if (a->lag >= 0 && b->lag >= 0)
		*lag_drain_per_s = (double)(a->lag - b->lag) / dt;
	return true;
}

void sv_history_sample_now(sv_history_t *h, int64_t now,
			   const sv_hist_input_t *in)
{
	sv_hist_sample_t *s = &h->ring[h->head];
	memset(s, 0, sizeof(*s));
	s->t_ms = now;
	s->in = *in;
	s->in_per_s = s->out_per_s = NAN;
	if (h->n > 0) {
		const sv_hist_sample_t *p = sv_history_at(h, h->n - 1);
		double dt = (double)(now - p->t_ms) / 1000.0;
		if (dt > 0) {
			s->in_per_s = in->records_in >= p->in.records_in
				? (double)(in->records_in - p->in.records_in) /
					dt
				: 0;
			s->out_per_s = in->records_out >= p->in.records_out
				? (double)(in->records_out -
					   p->in.records_out) /
					dt
				: 0;
		}
	}
	h->head = (h->head + 1) % h->cap;
	if (h->n < h->cap)
		h->n++;
	h->last_sample_ms = now;
}

void sv_history_observe(sv_history_t *h, int64_t now, const sv_hist_input_t *in)
{
	const rate_point_t *last = h->npts ? point_at(h, h->npts - 1) : NULL;
	if (!last || now - last->t_ms >= 1000) {
		rate_point_t *p = &h->pts[h->pt_head];
		p->t_ms = now;
		p->in = in->records_in;
		p->out = in->records_out;
		p->lag = in->lag_records;
		h->pt_head = (h->pt_head + 1) % SV_HISTORY_RATE_POINTS;
		if (h->npts < SV_HISTORY_RATE_POINTS)
			h->npts++;
	}
	if (!h->last_sample_ms || now - h->last_sample_ms >= h->interval_ms)
		sv_history_sample_now(h, now, in);
}

static json_t *num(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

json_t *sv_history_json(const sv_history_t *h, int64_t since_ms, size_t limit)
{
	static const char *const cols[] = {
		"t",
		"state",
		"attempt",
		"records_in",
		"records_out",
		"records_in_per_s",
		"records_out_per_s",
		"lag_records",
		"lag_seconds",
		"event_lag_seconds",
		"state_bytes",
	};
	json_t *series = json_object();
	json_t *a[SV_ARRAY_LEN(cols)];
	for (size_t k = 0; k < SV_ARRAY_LEN(cols); k++) {
		a[k] = json_array();
		json_object_set_new(series, cols[k], a[k]);
	}
	size_t n = sv_history_len(h), first = 0;
	while (first < n && sv_history_at(h, first)->t_ms <= since_ms)
		first++;
	if (n - first > limit)
		first = n - limit;
	for (size_t i = first; i < n; i++) {
		const sv_hist_sample_t *s = sv_history_at(h, i);
		size_t k = 0;
		json_array_append_new(a[k++], json_real((double)s->t_ms / 1e3));
		json_array_append_new(a[k++],
				      json_string(sv_jobstate_name(
					      (sv_jobstate_t)s->in.state)));
		json_array_append_new(a[k++], json_integer(s->in.attempt));
		json_array_append_new(
			a[k++], json_integer((json_int_t)s->in.records_in));
		json_array_append_new(
			a[k++], json_integer((json_int_t)s->in.records_out));
		json_array_append_new(a[k++], num(s->in_per_s));
		json_array_append_new(a[k++], num(s->out_per_s));
		json_array_append_new(
			a[k++],
			s->in.lag_records < 0
				? json_null()
				: json_integer(s->in.lag_records));
		json_array_append_new(a[k++], num(s->in.lag_s));
		json_array_append_new(a[k++], num(s->in.event_lag_s));
		json_array_append_new(
			a[k++], json_integer((json_int_t)s->in.state_bytes));
	}
	return json_pack(
		"{s:I, s:I, s:I, s:o}", "interval_ms",
		(json_int_t)(h ? h->interval_ms : SV_HISTORY_INTERVAL_MS),
		"capacity", (json_int_t)(h ? h->cap : SV_HISTORY_CAP), "count",
		(json_int_t)(n - first), "series", series);
}

/* ---- a job's history ---- */

/* Records still behind the end offsets, or -1 when an end is unknown (or
 * no attempt runs). */
static int64_t remaining_records(sv_job_t *job)
{
	if (!job->worker)
		return -1;
	sv_partpos_t *pos = NULL;
	size_t n = sv_worker_positions(job->worker, &pos);
	int64_t left = n ? 0 : -1;
	for (size_t i = 0; i < n; i++) {
		if (pos[i].end_offset < 0) {
			left = -1;
			break;
		}
		left += sv_partpos_lag(&pos[i]);
	}
	free(pos);
	return left;
}

static void job_input(sv_job_t *job, int64_t now, sv_hist_input_t *in)
{
	sv_progress_t pr;
	sv_job_progress(job, &pr);
	memset(in, 0, sizeof(*in));
	in->state = (int)job->state;
	in->attempt = job->attempt;
	in->records_in = pr.n.in;
	in->records_out = pr.n.out;
	in->lag_records = job->worker ? sv_job_lag_records(job) : -1;
	in->lag_s = pr.watermark_ms == INT64_MIN
		? NAN
		: fmax(0.0, (double)(now - pr.watermark_ms) / 1000.0);
	in->event_lag_s = pr.last_event_ms == INT64_MIN
		? NAN
		: fmax(0.0, (double)(now - pr.last_event_ms) / 1000.0);
	in->state_bytes = pr.state_bytes;
}

void sv_job_history_tick(sv_job_t *job, int64_t now)
{
	if (!job->history)
		job->history = sv_history_new(SV_HISTORY_CAP,
					      SV_HISTORY_INTERVAL_MS);
	sv_history_t *h = job->history;
	bool terminal = sv_jobstate_terminal(job->state);
	if (terminal && h->closed)
		return;
	sv_hist_input_t in;
	job_input(job, now, &in);
	if (terminal) {
		sv_history_sample_now(h, now, &in);
		h->closed = true;
		return;
	}
	h->closed = false;
	sv_history_observe(h, now, &in);
}

json_t *sv_job_history_json(sv_job_t *job, int64_t since_ms, size_t limit)
{
	json_t *o = sv_history_json(job->history, since_ms, limit);
	json_object_set_new(o, "id", json_string(job->id));
	return o;
}

static json_t *eta_json(double left, double per_s)
{
	if (left <= 0)
		return json_real(0);
	if (isnan(per_s) || per_s <= 0)
		return json_null();
	return json_real(left / per_s);
}

void sv_job_history_status(sv_job_t *job, json_t *o)
{
	double in_s, out_s, drain_s;
	bool running = job->worker &&
		(job->state == SV_JOB_RUNNING || job->state == SV_JOB_LAGGING);
	if (!running ||
	    !sv_history_rates(job->history, &in_s, &out_s, &drain_s))
		in_s = out_s = drain_s = running ? NAN : 0;
	json_object_set_new(o, "rates",
			    json_pack("{s:o, s:o}", "records_in_per_s",
				      num(in_s), "records_out_per_s",
				      num(out_s)));
	sv_progress_t pr;
	sv_job_progress(job, &pr);
	if (sv_jobspec_bounded(job->spec)) {
		double records = (double)pr.n.in, total = NAN, pct = NAN;
		double left = NAN;
		if (job->state == SV_JOB_COMPLETED) {
			total = records;
			pct = 100;
			left = 0;
		} else {
			int64_t rem = remaining_records(job);
			if (rem >= 0) {
				left = (double)rem;
				total = records + left;
				pct = total > 0 ? 100.0 * records / total : 0;
			}
		}
		json_object_set_new(
			o, "progress",
			json_pack("{s:I, s:o, s:o, s:o, s:o}", "records",
				  (json_int_t)pr.n.in, "total",
				  isnan(total)
					  ? json_null()
					  : json_integer((json_int_t)total),
				  "percent", num(pct), "rate_per_s", num(in_s),
				  "eta_s",
				  isnan(left) ? json_null()
					      : eta_json(left, in_s)));
		return;
	}
	int64_t lag = job->worker ? sv_job_lag_records(job) : 0;
	json_object_set_new(o, "catch_up",
			    json_pack("{s:I, s:o, s:o, s:o}", "lag_records",
				      (json_int_t)lag, "rate_per_s", num(in_s),
				      "drain_per_s", num(drain_s), "eta_s",
				      running ? eta_json((double)lag, drain_s)
					      : json_null()));
}
