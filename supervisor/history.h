/* history.h — a job's recent past for the dashboard: a bounded ring of
 * samples (counters, rates, lag, watermark lag, state size, state) taken
 * every SV_HISTORY_INTERVAL_MS on the supervisor thread and kept for
 * SV_HISTORY_CAP samples (an hour at 5 s), plus a short window of one-second
 * points from which the current rates and the ETA of bounded work or of a
 * stream's catch-up are computed. Served as GET /v1/jobs/{id}/history
 * (docs/api.md); nothing of it is persisted.
 *
 * The ring itself (sv_history_*) knows nothing of jobs and is unit-tested on
 * its own; sv_job_history_tick() and sv_job_history_json() read a job.
 * thread: supervisor. */
#ifndef SV_HISTORY_H
#define SV_HISTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SV_HISTORY_INTERVAL_MS 5000
#define SV_HISTORY_CAP 720 /* one hour at 5 s */
#define SV_HISTORY_RATE_POINTS 11 /* one a second: a 10 s rate window */

/* What one observation of a job is. Doubles are NAN when unknown;
 * lag_records is -1 when unknown. */
typedef struct sv_hist_input {
	int state; /* sv_jobstate_t */
	int attempt;
	uint64_t records_in, records_out;
	int64_t lag_records;
	double lag_s; /* wall clock minus watermark */
	double event_lag_s; /* wall clock minus newest event time */
	uint64_t state_bytes;
} sv_hist_input_t;

typedef struct sv_hist_sample {
	int64_t t_ms;
	sv_hist_input_t in;
	double in_per_s, out_per_s; /* NAN for the first sample */
} sv_hist_sample_t;

typedef struct sv_history sv_history_t;

/* cap samples, one every interval_ms. */
sv_history_t *sv_history_new(size_t cap, int64_t interval_ms);
void sv_history_destroy(sv_history_t *h);

/* Offer an observation at now: it becomes a rate point once a second and a
 * sample once an interval (the first one at once). in is borrowed. */
void sv_history_observe(sv_history_t *h, int64_t now,
			const sv_hist_input_t *in);
/* Take a sample now whatever the interval (a job's last, as it ends). */
void sv_history_sample_now(sv_history_t *h, int64_t now,
			   const sv_hist_input_t *in);

/* Rates over the rate window (up to 10 s of one-second points):
 * records in and out per second, and how fast the lag shrinks (records
 * per second, negative when it grows). false until two points exist. */
bool sv_history_rates(const sv_history_t *h, double *in_per_s,
		      double *out_per_s, double *lag_drain_per_s);

size_t sv_history_len(const sv_history_t *h);
/* The i-th kept sample, oldest first (i < len). */
const sv_hist_sample_t *sv_history_at(const sv_history_t *h, size_t i);

/* The samples as columns (uPlot's layout): {"interval_ms", "capacity",
 * "count", "series": {"t": [epoch seconds], "records_in": [...], ...}},
 * only samples with t_ms > since_ms, at most limit (the newest). */
json_t *sv_history_json(const sv_history_t *h, int64_t since_ms, size_t limit);

#endif

/* ---- a job's history (the supervisor's side) ---- */

struct sv_job;

/* Observe the job (creates its history on first use). Called every
 * supervisor tick; a terminal job gets one last sample, then no more. */
void sv_job_history_tick(struct sv_job *job, int64_t now);
/* GET /v1/jobs/{id}/history[?since=epoch_ms&limit=n]: the job's samples
 * after since_ms, at most limit (see sv_history_json), with "id". */
json_t *sv_job_history_json(struct sv_job *job, int64_t since_ms, size_t limit);
/* Add "rates" {records_in_per_s, records_out_per_s} and, for a bounded
 * job, "progress" {records, total, percent, rate_per_s, eta_s}, for a
 * stream "catch_up" {lag_records, rate_per_s, drain_per_s, eta_s} to the
 * status document o. */
void sv_job_history_status(struct sv_job *job, json_t *o);
