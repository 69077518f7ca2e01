/* stages.c — the repartition planner (stages.h, docs/repartition.md).
 *
 * The stage specs are copies of the job's message (packed and unpacked
 * again, so each owns its strings), edited: stage 0 keeps the source and
 * pipeline[0 .. at-1] and gets a kafka sink to the internal topic keyed
 * by the step's key, format sv-row; stage 1 gets the internal topic as
 * its kafka source (format sv-row, partitioned_by the key, schema = stage
 * 0's output schema, never idle) and pipeline[at ..] with the job's sink.
 * The worker gives each stage its own members, transactional ids, group
 * and checkpoint namespace (supervisor/stage.c). */
#define _GNU_SOURCE
#include "ingress/stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "ingress/plan.h"

static bool follows(const Streamvisor__Source *s, char **key, size_t nkey,
		    const char *rp_key)
{
	for (size_t j = 0; j < nkey; j++) {
		if (rp_key && !strcmp(key[j], rp_key))
			return true;
		for (size_t i = 0; i < s->n_partitioned_by; i++)
			if (!strcmp(key[j], s->partitioned_by[i]))
				return true;
	}
	return false;
}

static bool keyed_step(const Streamvisor__Step *st, char ***key, size_t *nkey)
{
	if (st->step_case == STREAMVISOR__STEP__STEP_WINDOW) {
		*key = st->window->key;
		*nkey = st->window->n_key;
		return true;
	}
	if (st->step_case == STREAMVISOR__STEP__STEP_DEDUP) {
		*key = st->dedup->key;
		*nkey = st->dedup->n_key;
		return true;
	}
	return false;
}

int sv_stages_split_at(const Streamvisor__JobSpec *js, const char **key)
{
	*key = NULL;
	if (js->parallelism <= 1 || !js->source)
		return -1;
	for (size_t i = 0; i < js->n_pipeline; i++) {
		char **k;
		size_t nk;
		if (!keyed_step(js->pipeline[i], &k, &nk) ||
		    follows(js->source, k, nk, NULL))
			continue;
		if (nk == 1)
			*key = k[0];
		return (int)i;
	}
	return -1;
}

bool sv_stages_refused(const sv_jobspec_t *spec, int at, char *msg, size_t len)
{
	const Streamvisor__JobSpec *js = spec->msg;
	const char *key;
	sv_stages_split_at(js, &key);
	if (!key) {
		snprintf(msg, len,
			 "its key has %s columns; a repartition takes a "
			 "one-column key",
			 "several (or no)");
		return true;
	}
	if (js->plan) {
		snprintf(msg, len, "a Substrait plan is not repartitioned");
		return true;
	}
	if (!js->source || strcmp(js->source->kind, "kafka")) {
		snprintf(msg, len, "a repartition needs a kafka source");
		return true;
	}
	for (size_t i = 0; i < js->n_pipeline; i++) {
		const Streamvisor__Step *st = js->pipeline[i];
		char **k;
		size_t nk;
		if (st->step_case == STREAMVISOR__STEP__STEP_JOIN) {
			snprintf(msg, len,
				 "a job with a join is not repartitioned");
			return true;
		}
		if ((int)i > at && keyed_step(st, &k, &nk) &&
		    !follows(js->source, k, nk, key)) {
			snprintf(msg, len,
				 "pipeline[%zu] would need a second "
				 "repartition (only one is built)",
				 i);
			return true;
		}
	}
	return false;
}

char *sv_stages_topic(const char *job_id)
{
	char *t;
	if (asprintf(&t, "_streamvisor.%s.rp0", job_id) < 0)
		abort();
	return t;
}

static Streamvisor__JobSpec *copy_msg(const Streamvisor__JobSpec *js)
{
	size_t n = streamvisor__job_spec__get_packed_size(js);
	uint8_t *buf = sv_malloc(n ? n : 1);
	streamvisor__job_spec__pack(js, buf);
	Streamvisor__JobSpec *c = streamvisor__job_spec__unpack(NULL, n, buf);
	free(buf);
	if (!c)
		abort();
	return c;
}

static void set_str(char **dst, const char *v)
{
	if (*dst && *dst != protobuf_c_empty_string)
		free(*dst);
	*dst = sv_strdup(v ? v : "");
}

static sv_jobspec_t *wrap(Streamvisor__JobSpec *msg, const sv_jobspec_t *of)
{
	sv_jobspec_t *s = sv_calloc(1, sizeof(*s));
	s->msg = msg;
	memcpy(s->plan_id, of->plan_id, sizeof(s->plan_id));
	return s;
}

/* Keep steps [from, to) of m's pipeline, freeing the others. */
static void keep_steps(Streamvisor__JobSpec *m, size_t from, size_t to)
{
	size_t n = 0;
	for (size_t i = 0; i < m->n_pipeline; i++) {
		if (i >= from && i < to)
			m->pipeline[n++] = m->pipeline[i];
		else
			streamvisor__step__free_unpacked(m->pipeline[i], NULL);
	}
	m->n_pipeline = n;
}

sv_error_t *sv_stages_derive(const sv_jobspec_t *spec, const char *job_id,
			     sv_jobspec_t **s0, sv_jobspec_t **s1)
{
	*s0 = *s1 = NULL;
	const Streamvisor__JobSpec *js = spec->msg;
	const char *key;
	int at = sv_stages_split_at(js, &key);
	char why[256];
	if (at < 0)
		return sv_error_new(SV_ERR_COVERAGE,
				    "the job has no step to repartition at");
	if (sv_stages_refused(spec, at, why, sizeof(why)))
		return sv_error_new(SV_ERR_COVERAGE,
				    "pipeline[%d] cannot be repartitioned: %s",
				    at, why);
	char *topic = sv_stages_topic(job_id);

	/* stage 0: the source, the steps before the split, the topic */
	Streamvisor__JobSpec *m0 = copy_msg(js);
	keep_steps(m0, 0, (size_t)at);
	int64_t txn_timeout = sv_sink_txn_timeout_ms(js->sink);
	streamvisor__sink__free_unpacked(m0->sink, NULL);
	m0->sink = sv_malloc(sizeof(*m0->sink));
	streamvisor__sink__init(m0->sink);
	set_str(&m0->sink->kind, "kafka");
	set_str(&m0->sink->cluster, js->source->cluster);
	set_str(&m0->sink->topic, topic);
	set_str(&m0->sink->format, SV_STAGES_FORMAT);
	set_str(&m0->sink->key, key);
	m0->sink->transaction_timeout_ms = txn_timeout;
	if (m0->late_sink) {
		streamvisor__sink__free_unpacked(m0->late_sink, NULL);
		m0->late_sink = NULL;
	}
	sv_jobspec_t *spec0 = wrap(m0, spec);
	sv_plan_t *plan0;
	sv_error_t *err = sv_plan_build(spec0, &plan0);
	if (err) {
		sv_jobspec_destroy(spec0);
		free(topic);
		return err;
	}
	const sv_schema_t *out = sv_pipeline_out_schema(plan0->pipeline);
	if (js->event_time && js->event_time->field &&
	    js->event_time->field[0] &&
	    sv_schema_find(out, js->event_time->field) < 0) {
		err = sv_error_new(SV_ERR_COVERAGE,
				   "pipeline[%d] cannot be repartitioned: the "
				   "event-time column '%s' is gone before it",
				   at, js->event_time->field);
		sv_plan_destroy(plan0);
		sv_jobspec_destroy(spec0);
		free(topic);
		return err;
	}

	/* stage 1: the topic, the steps from the split on, the sink */
	Streamvisor__JobSpec *m1 = copy_msg(js);
	keep_steps(m1, (size_t)at, m1->n_pipeline);
	Streamvisor__Source *src = m1->source;
	set_str(&src->topic, topic);
	set_str(&src->format, SV_STAGES_FORMAT);
	set_str(&src->start, "earliest");
	/* a bounded job's stage 1 reads until every upstream task ended
	 * (its watermark records say so), not to end offsets */
	set_str(&m1->mode, "stream");
	src->rate_per_s = 0;
	src->count = 0;
	for (size_t i = 0; i < src->n_partitioned_by; i++)
		free(src->partitioned_by[i]);
	free(src->partitioned_by);
	src->partitioned_by = sv_malloc(sizeof(char *));
	src->partitioned_by[0] = sv_strdup(key);
	src->n_partitioned_by = 1;
	for (size_t i = 0; i < m1->n_schema; i++)
		streamvisor__field__free_unpacked(m1->schema[i], NULL);
	free(m1->schema);
	m1->n_schema = out->nfields;
	m1->schema = sv_calloc(out->nfields ? out->nfields : 1,
			       sizeof(*m1->schema));
	for (size_t i = 0; i < out->nfields; i++) {
		Streamvisor__Field *f = sv_malloc(sizeof(*f));
		streamvisor__field__init(f);
		set_str(&f->name, out->fields[i].name);
		set_str(&f->type, sv_type_name(out->fields[i].type));
		f->not_null = !out->fields[i].nullable;
		m1->schema[i] = f;
	}
	if (m1->event_time)
		m1->event_time->idle_timeout_ms = 0;
	if (m1->dead_letter) {
		streamvisor__sink__free_unpacked(m1->dead_letter, NULL);
		m1->dead_letter = NULL;
	}
	set_str(&m1->on_invalid, "fail");
	sv_plan_destroy(plan0);
	free(topic);
	*s0 = spec0;
	*s1 = wrap(m1, spec);
	return NULL;
}
