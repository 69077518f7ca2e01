/* join_views.c — a join's second input in the status document and in
 * /metrics (see join_views.h). Read from the running attempt's counters
 * (worker.h): the join input's positions and lag per partition, its
 * watermark, its records, and the join operator's state per input
 * (state_sides, summed over the tasks). Between attempts the positions
 * are empty and the counters null, as the source's are. */
#include "supervisor/join_views.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/join_input.h"
#include "supervisor/metrics.h"
#include "supervisor/worker.h"

static json_t *side_json(const sv_worker_stats_t *st, int k)
{
	return json_pack(
		"{s:I, s:I, s:I}", "bytes",
		(json_int_t)atomic_load(&st->join_state_bytes[k]), "keys",
		(json_int_t)atomic_load(&st->join_state_keys[k]), "rows",
		(json_int_t)atomic_load(&st->join_state_rows[k]));
}

json_t *sv_join_status_json(sv_job_t *job)
{
	const Streamvisor__Join *j = sv_join_of(job->spec);
	if (!j)
		return json_null();
	const char *topic = j->source && j->source->topic ? j->source->topic
							  : "";
	int par = sv_jobspec_parallelism(job->spec);
	json_t *o = json_pack("{s:s, s:s, s:s}", "type", j->type, "kind",
			      j->kind, "topic", topic);
	sv_partpos_t *pos = NULL;
	size_t n = job->worker ? sv_worker_join_positions(job->worker, &pos)
			       : 0;
	json_t *parts = json_array();
	int64_t lag_records = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t lag = sv_partpos_lag(&pos[i]);
		lag_records += lag;
		json_array_append_new(
			parts,
			json_pack("{s:s, s:i, s:I, s:I, s:I, s:i}", "topic",
				  topic, "partition", pos[i].partition,
				  "next_offset", (json_int_t)pos[i].next_offset,
				  "end_offset", (json_int_t)pos[i].end_offset,
				  "lag_records", (json_int_t)lag, "member",
				  pos[i].partition >= 0 ? pos[i].partition % par
							: 0));
	}
	free(pos);
	json_object_set_new(o, "partitions", parts);
	const sv_worker_stats_t *st = job->worker ? sv_worker_stats(job->worker)
						  : NULL;
	int64_t wm = st ? atomic_load(&st->join_watermark_ms) : INT64_MIN;
	int64_t ev = st ? atomic_load(&st->join_last_event_ms) : INT64_MIN;
	int64_t now = sv_now_ms();
	json_object_set_new(o, "watermark_ms",
			    wm == INT64_MIN ? json_null() : json_integer(wm));
	json_object_set_new(
		o, "lag",
		json_pack("{s:I, s:o, s:o}", "records", (json_int_t)lag_records,
			  "seconds",
			  wm == INT64_MIN
				  ? json_null()
				  : json_real(fmax(0.0,
						   (double)(now - wm) / 1e3)),
			  "event_seconds",
			  ev == INT64_MIN
				  ? json_null()
				  : json_real(fmax(0.0,
						   (double)(now - ev) / 1e3))));
	json_object_set_new(
		o, "records_in",
		st ? json_integer((json_int_t)atomic_load(&st->join_records_in))
		   : json_null());
	json_object_set_new(o, "records_invalid",
			    st ? json_integer((json_int_t)atomic_load(
					 &st->join_records_invalid))
			       : json_null());
	json_object_set_new(o, "state",
			    st ? json_pack("{s:o, s:o}", "left",
					   side_json(st, 0), "right",
					   side_json(st, 1))
			       : json_null());
	return o;
}

void sv_join_metrics(sv_supervisor_t *sv, sv_buf_t *b, sv_buf_t *l)
{
	static const char *const fams[][3] = {
		{"streamvisor_join_records_in_total", "counter",
		 "records read from a join's second input"},
		{"streamvisor_join_watermark_seconds", "gauge",
		 "the watermark of a join's second input, as seconds since "
		 "the epoch"},
		{"streamvisor_join_lag_records", "gauge",
		 "records behind the end of each partition of a join's second "
		 "input"},
		{"streamvisor_join_state_bytes", "gauge",
		 "join state per input (input=left|right)"},
		{"streamvisor_join_state_keys", "gauge",
		 "distinct join keys held per input"},
		{"streamvisor_join_state_rows", "gauge",
		 "rows (table versions) held per input"},
	};
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		sv_prom_family(b, fams[f][0], fams[f][1], fams[f][2]);
		for (size_t i = 0; i < sv->njobs; i++) {
			sv_job_t *job = sv->jobs[i];
			const Streamvisor__Join *j = sv_join_of(job->spec);
			if (!job->worker || !j)
				continue;
			const sv_worker_stats_t *st = sv_worker_stats(
				job->worker);
			sv_buf_reset(l);
			sv_prom_label(l, "job", job->id);
			sv_prom_label(l, "name", job->spec->msg->name);
			size_t mark = l->len;
			if (f == 0) {
				sv_prom_sample(b, fams[f][0], l->data,
					       (double)atomic_load(
						       &st->join_records_in));
			} else if (f == 1) {
				int64_t wm = atomic_load(
					&st->join_watermark_ms);
				if (wm != INT64_MIN)
					sv_prom_sample(b, fams[f][0], l->data,
						       (double)wm / 1e3);
			} else if (f == 2) {
				sv_partpos_t *pos;
				size_t n = sv_worker_join_positions(job->worker,
								    &pos);
				for (size_t p = 0; p < n; p++) {
					if (pos[p].end_offset < 0)
						continue;
					l->len = mark;
					l->data[mark] = '\0';
					char part[16];
					snprintf(part, sizeof(part), "%d",
						 pos[p].partition);
					sv_prom_label(l, "topic",
						      j->source->topic);
					sv_prom_label(l, "partition", part);
					sv_prom_sample(b, fams[f][0], l->data,
						       (double)sv_partpos_lag(
							       &pos[p]));
				}
				free(pos);
			} else {
				for (int k = 0; k < 2; k++) {
					l->len = mark;
					l->data[mark] = '\0';
					sv_prom_label(l, "input",
						      k ? "right" : "left");
					const _Atomic uint64_t *v = f == 3
						? &st->join_state_bytes[k]
						: f == 4
						? &st->join_state_keys[k]
						: &st->join_state_rows[k];
					sv_prom_sample(b, fams[f][0], l->data,
						       (double)atomic_load(v));
				}
			}
		}
	}
}
