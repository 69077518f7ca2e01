/* plan.c — builds the operator pipeline from a job spec (see plan.h). Each
 * step's errors are tagged with the spec field they come from, so the HTTP
 * 400 names "pipeline[2].select.total" rather than just the expression. */
#include "ingress/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/join.h"
#include "core/window.h"

/* Name the spec field an error is about, unless it already names one. */
static sv_error_t *tag(sv_error_t *err, size_t i, const char *step)
{
	char field[128];
	if (step)
		snprintf(field, sizeof(field), "pipeline[%zu].%s", i, step);
	else
		snprintf(field, sizeof(field), "pipeline[%zu]", i);
	if (!err->field)
		sv_error_set_field(err, field);
	return err;
}

static sv_schema_t *schema_of(Streamvisor__Field *const *fields, size_t n)
{
	sv_schema_t *schema = sv_schema_new();
	for (size_t i = 0; i < n; i++) {
		sv_type_t t;
		sv_type_parse(fields[i]->type, &t); /* checked by the spec */
		sv_schema_add(schema, fields[i]->name, t, !fields[i]->not_null);
	}
	return schema;
}

/* The join step's operator; its right input schema goes to the plan. */
static sv_error_t *build_join(const Streamvisor__Join *j, size_t i,
			      const sv_schema_t *in, sv_plan_t *plan,
			      sv_op_t **op)
{
	plan->right_schema = schema_of(j->schema, j->n_schema);
	plan->right_event_time_col = j->event_time
		? sv_schema_find(plan->right_schema, j->event_time->field)
		: -1;
	plan->join_step = (int)i;
	sv_join_spec_t js = {0};
	js.type = !strcmp(j->type, "interval") ? SV_JOIN_INTERVAL
		: !strcmp(j->type, "lookup")   ? SV_JOIN_LOOKUP
					       : SV_JOIN_HASH;
	js.kind = !strcmp(j->kind, "left") ? SV_JOIN_LEFT : SV_JOIN_INNER;
	js.nkeys = j->n_on_left;
	js.left_keys = (const char *const *)j->on_left;
	js.right_keys = (const char *const *)j->on_right;
	js.ntake = j->n_take;
	const char **names = sv_calloc(j->n_take + 1, sizeof(char *));
	const char **cols = sv_calloc(j->n_take + 1, sizeof(char *));
	for (size_t k = 0; k < j->n_take; k++) {
		names[k] = j->take[k]->name;
		cols[k] = j->take[k]->column;
	}
	js.take_names = names;
	js.take_cols = cols;
	js.lower_ms = j->lower_ms;
	js.upper_ms = j->upper_ms;
	js.processing_time = j->time && !strcmp(j->time, "processing");
	js.retention_ms = j->retention_ms;
	js.max_state_rows = (uint64_t)j->max_state_rows;
	js.max_state_bytes = (uint64_t)j->max_state_bytes;
	sv_error_t *err = sv_op_join_new(in, plan->right_schema, &js, op);
	free(names);
	free(cols);
	if (err) {
		/* the operator names its own field ("take.id"): place it */
		char field[192];
		snprintf(field, sizeof(field), "pipeline[%zu].join%s%s", i,
			 err->field ? "." : "", err->field ? err->field : "");
		sv_error_set_field(err, field);
	}
	return err;
}

static sv_error_t *build_step(const Streamvisor__Step *st, size_t i,
			      const sv_schema_t *in,
			      const Streamvisor__JobSpec *js, sv_plan_t *plan,
			      sv_op_t **op)
{
	sv_error_t *err = NULL;
	switch (st->step_case) {
	case STREAMVISOR__STEP__STEP_FILTER:
		if ((err = sv_op_filter_new(in, st->filter, op)))
			return tag(err, i, "filter");
		return NULL;
	case STREAMVISOR__STEP__STEP_SELECT: {
		size_t n = st->select->n_items;
		const char **names = sv_calloc(n, sizeof(char *));
		const char **exprs = sv_calloc(n, sizeof(char *));
		for (size_t j = 0; j < n; j++) {
			names[j] = st->select->items[j]->name;
			exprs[j] = st->select->items[j]->expr;
		}
		err = sv_op_select_new(in, n, names, exprs, op);
		free(names);
		free(exprs);
		if (err)
			return tag(err, i, "select");
		return NULL;
	}
	case STREAMVISOR__STEP__STEP_WINDOW: {
		const Streamvisor__Window *w = st->window;
		sv_window_spec_t ws = {0};
		if (!strcmp(w->type, "tumbling"))
			ws.type = SV_WIN_TUMBLING;
		else if (!strcmp(w->type, "sliding"))
			ws.type = SV_WIN_SLIDING;
		else if (!strcmp(w->type, "global"))
			ws.type = SV_WIN_GLOBAL;
		else
			ws.type = SV_WIN_SESSION;
		ws.size_ms = w->size_ms;
		ws.slide_ms = w->slide_ms;
		ws.gap_ms = w->gap_ms;
		ws.allowed_lateness_ms = w->allowed_lateness_ms;
		ws.processing_time = !strcmp(w->time, "processing") &&
			ws.type != SV_WIN_GLOBAL;
		ws.late_side_output = !strcmp(w->late, "side_output");
		ws.nkeys = w->n_key;
		ws.keys = (const char *const *)w->key;
		ws.naggs = w->n_aggregates;
		const char **names = sv_calloc(ws.naggs, sizeof(char *));
		const char **exprs = sv_calloc(ws.naggs, sizeof(char *));
		for (size_t j = 0; j < ws.naggs; j++) {
			names[j] = w->aggregates[j]->name;
			exprs[j] = w->aggregates[j]->expr;
		}
		ws.agg_names = names;
		ws.agg_exprs = exprs;
		err = sv_op_window_new(in, &ws, op);
		free(names);
		free(exprs);
		if (err)
			return tag(err, i, "window");
		return NULL;
	}
	case STREAMVISOR__STEP__STEP_JOIN:
		return build_join(st->join, i, in, plan, op);
	case STREAMVISOR__STEP__STEP_DEDUP:
		err = sv_op_dedup_new(in, st->dedup->n_key,
				      (const char *const *)st->dedup->key,
				      st->dedup->within_ms, op);
		if (err)
			return tag(err, i, "dedup");
		return NULL;
	case STREAMVISOR__STEP__STEP_ORDER: {
		const Streamvisor__Order *o = st->order;
		size_t n = o->n_keys;
		const char **exprs = sv_calloc(n + 1, sizeof(char *));
		bool *desc = sv_calloc(n + 1, sizeof(bool));
		bool *nf = sv_calloc(n + 1, sizeof(bool));
		for (size_t j = 0; j < n; j++) {
			exprs[j] = o->keys[j]->expr;
			desc[j] = o->keys[j]->desc;
			nf[j] = o->keys[j]->nulls_first;
		}
		err = sv_op_order_new(in, n, exprs, desc, nf, o->limit,
				      o->offset, op);
		free(exprs);
		free(desc);
		free(nf);
		if (err)
			return tag(err, i, "order");
		return NULL;
	}
	default:
		(void)js;
		return tag(
			sv_error_new(SV_ERR_SUBMISSION, "empty pipeline step"),
			i, NULL);
	}
}

/* Note processing-time windows; side output needs one schema. */
static sv_error_t *check_time(const Streamvisor__JobSpec *js, size_t i,
			      sv_op_t *op, sv_plan_t *plan)
{
	const Streamvisor__Step *st = js->pipeline[i];
	if (st->step_case != STREAMVISOR__STEP__STEP_WINDOW)
		return NULL;
	const Streamvisor__Window *w = st->window;
	if (!strcmp(w->time, "processing")) /* event_time checked by spec */
		plan->has_proc_windows = true;
	if (!strcmp(w->late, "side_output")) {
		if (plan->late_schema)
			return tag(
				sv_error_new(
					SV_ERR_SUBMISSION,
					"only one window per job may use late: "
					"side_output"),
				i, "window");
		plan->late_schema = op->in_schema;
	}
	return NULL;
}

sv_error_t *sv_plan_build(const sv_jobspec_t *spec, sv_plan_t **out)
{
	const Streamvisor__JobSpec *js = spec->msg;
	*out = NULL;
	sv_plan_t *plan = sv_calloc(1, sizeof(*plan));
	plan->schema = schema_of(js->schema, js->n_schema);
	plan->right_event_time_col = -1;
	plan->join_step = -1;
	plan->event_time_col = js->event_time
		? sv_schema_find(plan->schema, js->event_time->field)
		: -1;
	plan->pipeline = sv_pipeline_new(plan->schema);
	sv_error_t *err = NULL;
	for (size_t i = 0; i < js->n_pipeline && !err; i++) {
		sv_op_t *op = NULL;
		err = build_step(js->pipeline[i], i,
				 sv_pipeline_out_schema(plan->pipeline), js,
				 plan, &op);
		if (!err)
			err = check_time(js, i, op, plan);
		if (!err) {
			sv_pipeline_add(plan->pipeline, op);
			if (op->ops->advance)
				plan->has_windows = true;
		} else if (op) {
			sv_op_destroy(op);
		}
	}
	plan->sink_key_col = -1;
	if (!err && js->sink->key && js->sink->key[0]) {
		plan->sink_key_col = sv_schema_find(
			sv_pipeline_out_schema(plan->pipeline), js->sink->key);
		if (plan->sink_key_col < 0)
			err = sv_error_set_field(
				sv_error_new(SV_ERR_SUBMISSION,
					     "field 'sink.key': unknown output "
					     "column '%s'",
					     js->sink->key),
				"sink.key");
	}
	if (err) {
		sv_plan_destroy(plan);
		return err;
	}
	*out = plan;
	return NULL;
}

void sv_plan_destroy(sv_plan_t *plan)
{
	if (!plan)
		return;
	sv_pipeline_destroy(plan->pipeline);
	sv_schema_destroy(plan->schema);
	sv_schema_destroy(plan->right_schema);
	free(plan);
}
