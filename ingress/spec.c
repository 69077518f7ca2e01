/* spec.c — job spec parsing and canonicalization (see spec.h).
 *
 * JSON is read with jansson into a Streamvisor__JobSpec whose strings and
 * sub-messages live in a scratch arena; every object is checked for unknown
 * keys and every value for its type, so an error names the exact field.
 * Defaults are then filled in, the message is packed (the canonical bytes
 * behind the plan id) and unpacked again, so the message the caller owns is
 * always one protobuf-c allocated and freed with __free_unpacked. The
 * protobuf path unpacks, fills defaults and goes the same way. Expression
 * checking happens when the plan is built (ingress/plan.c). */
#define _GNU_SOURCE
#include "ingress/spec.h"

#include <jansson.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "core/util.h"
#include "ingress/coverage.h"

typedef struct pctx {
	sv_arena_t arena;
	sv_error_t *err;
	char path[256];
} pctx_t;

static char *adup(pctx_t *c, const char *s)
{
	return sv_arena_memdup(&c->arena, s, strlen(s) + 1);
}

static void *anew(pctx_t *c, size_t size)
{
	void *p = sv_arena_alloc(&c->arena, size);
	memset(p, 0, size);
	return p;
}

/* Fail with a message about the field at path/key. */
static bool failf(pctx_t *c, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool failf(pctx_t *c, const char *key, const char *fmt, ...)
{
	if (c->err)
		return false;
	char field[320];
	if (key && c->path[0])
		snprintf(field, sizeof(field), "%s.%s", c->path, key);
	else
		snprintf(field, sizeof(field), "%s", key ? key : c->path);
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->err = sv_error_new(SV_ERR_SUBMISSION, "field '%s': %s", field, msg);
	sv_error_set_field(c->err, field);
	return false;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "integer";
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	default:
		return "null";
	}
}

/* Every key of obj must be in allowed (NULL-terminated). */
static bool check_keys(pctx_t *c, json_t *obj, const char *const *allowed)
{
	const char *k;
	json_t *v;
	json_object_foreach (obj, k, v) {
		bool ok = false;
		for (const char *const *a = allowed; *a; a++)
			if (!strcmp(*a, k))
				ok = true;
		if (!ok) {
			char list[256] = "";
			for (const char *const *a = allowed; *a; a++) {
				strncat(list, *a,
					sizeof(list) - strlen(list) - 3);
				if (a[1])
					strncat(list, ", ",
						sizeof(list) - strlen(list) -
							1);
			}
			return failf(c, k,
				     "unknown field (expected one of: %s)",
				     list);
		}
	}
	return true;
}

static bool get_str(pctx_t *c, json_t *obj, const char *key, char **out,
		    bool required)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (required)
			return failf(c, key, "is required");
		return true;
	}
	if (!json_is_string(v))
		return failf(c, key, "expected a string, got %s", json_kind(v));
	*out = adup(c, json_string_value(v));
	return true;
}

static bool get_int(pctx_t *c, json_t *obj, const char *key, int64_t *out,
		    int64_t min)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v))
		return failf(c, key, "expected an integer, got %s",
			     json_kind(v));
	int64_t x = json_integer_value(v);
	if (x < min)
		return failf(c, key, "must be >= %lld, got %lld",
			     (long long)min, (long long)x);
	*out = x;
	return true;
}

static bool get_i32(pctx_t *c, json_t *obj, const char *key, int32_t *out,
		    int64_t min)
{
	int64_t x = *out;
	if (!get_int(c, obj, key, &x, min))
		return false;
	if (x > INT32_MAX)
		return failf(c, key, "too large");
	*out = (int32_t)x;
	return true;
}

static bool get_num(pctx_t *c, json_t *obj, const char *key, double *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return true;
	if (!json_is_number(v))
		return failf(c, key, "expected a number, got %s", json_kind(v));
	*out = json_number_value(v);
	return true;
}

static bool get_bool(pctx_t *c, json_t *obj, const char *key, bool *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return true;
	if (!json_is_boolean(v))
		return failf(c, key, "expected true or false, got %s",
			     json_kind(v));
	*out = json_is_true(v);
	return true;
}

/* Enter a sub-object: checks type and keys; returns NULL when absent. */
static json_t *enter(pctx_t *c, json_t *obj, const char *key,
		     const char *const *allowed, bool required, size_t *saved)
{
	json_t *v = json_object_get(obj, key);
	*saved = strlen(c->path);
	if (!v || json_is_null(v)) {
		if (required)
			failf(c, key, "is required");
		return NULL;
	}
	if (!json_is_object(v)) {
		failf(c, key, "expected an object, got %s", json_kind(v));
		return NULL;
	}
	size_t n = *saved;
	snprintf(c->path + n, sizeof(c->path) - n, "%s%s", n ? "." : "", key);
	if (!check_keys(c, v, allowed))
		return NULL;
	return v;
}

static void leave(pctx_t *c, size_t saved)
{
	c->path[saved] = '\0';
}

static bool get_strlist(pctx_t *c, json_t *obj, const char *key, size_t *n,
			char ***out)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return true;
	if (!json_is_array(v))
		return failf(c, key,
			     "expected an array of column names, got %s",
			     json_kind(v));
	*n = json_array_size(v);
	*out = anew(c, (*n ? *n : 1) * sizeof(char *));
	for (size_t i = 0; i < *n; i++) {
		json_t *e = json_array_get(v, i);
		if (!json_is_string(e)) {
			char k[64];
			snprintf(k, sizeof(k), "%s[%zu]", key, i);
			return failf(c, k, "expected a string, got %s",
				     json_kind(e));
		}
		(*out)[i] = adup(c, json_string_value(e));
	}
	return true;
}

static const char *const source_keys[] = {
	"kind",      "cluster", "topic",      "format", "start",
	"generator", "count",   "rate_per_s", "seed",   NULL};
static const char *const sink_keys[] = {"kind",
					"cluster",
					"topic",
					"format",
					"key",
					"path",
					"transaction_timeout_ms",
					NULL};

static Streamvisor__Source *parse_source(pctx_t *c, json_t *root)
{
	size_t saved;
	json_t *o = enter(c, root, "source", source_keys, true, &saved);
	if (!o)
		return NULL;
	Streamvisor__Source *s = anew(c, sizeof(*s));
	streamvisor__source__init(s);
	int64_t seed = 0;
	if (!get_str(c, o, "kind", &s->kind, false) ||
	    !get_str(c, o, "cluster", &s->cluster, false) ||
	    !get_str(c, o, "topic", &s->topic, false) ||
	    !get_str(c, o, "format", &s->format, false) ||
	    !get_str(c, o, "start", &s->start, false) ||
	    !get_str(c, o, "generator", &s->generator, false) ||
	    !get_int(c, o, "count", &s->count, -1) ||
	    !get_int(c, o, "rate_per_s", &s->rate_per_s, 0) ||
	    !get_int(c, o, "seed", &seed, 0))
		return NULL;
	s->seed = (uint64_t)seed;
	leave(c, saved);
	return s;
}

static Streamvisor__Sink *parse_sink(pctx_t *c, json_t *root, const char *key,
				     bool required)
{
	size_t saved;
	json_t *o = enter(c, root, key, sink_keys, required, &saved);
	if (!o)
		return NULL;
	Streamvisor__Sink *s = anew(c, sizeof(*s));
	streamvisor__sink__init(s);
	if (!get_str(c, o, "kind", &s->kind, false) ||
	    !get_str(c, o, "cluster", &s->cluster, false) ||
	    !get_str(c, o, "topic", &s->topic, false) ||
	    !get_str(c, o, "format", &s->format, false) ||
	    !get_str(c, o, "key", &s->key, false) ||
	    !get_str(c, o, "path", &s->path, false) ||
	    !get_int(c, o, "transaction_timeout_ms", &s->transaction_timeout_ms,
		     0))
		return NULL;
	leave(c, saved);
	return s;
}

static bool parse_schema(pctx_t *c, json_t *root, Streamvisor__JobSpec *js)
{
	json_t *v = json_object_get(root, "schema");
	if (!v)
		return failf(c, "schema", "is required");
	if (!json_is_array(v) || json_array_size(v) == 0)
		return failf(c, "schema",
			     "expected a non-empty array of fields");
	js->n_schema = json_array_size(v);
	js->schema = anew(c, js->n_schema * sizeof(*js->schema));
	static const char *const keys[] = {"name", "type", "nullable", NULL};
	for (size_t i = 0; i < js->n_schema; i++) {
		json_t *f = json_array_get(v, i);
		snprintf(c->path, sizeof(c->path), "schema[%zu]", i);
		if (!json_is_object(f))
			return failf(c, NULL,
				     "expected an object {\"name\", \"type\"}");
		if (!check_keys(c, f, keys))
			return false;
		Streamvisor__Field *fl = anew(c, sizeof(*fl));
		streamvisor__field__init(fl);
		bool nullable = true;
		if (!get_str(c, f, "name", &fl->name, true) ||
		    !get_str(c, f, "type", &fl->type, true) ||
		    !get_bool(c, f, "nullable", &nullable))
			return false;
		fl->not_null = !nullable;
		js->schema[i] = fl;
	}
	c->path[0] = '\0';
	return true;
}

static bool parse_window(pctx_t *c, json_t *w, Streamvisor__Window *win)
{
	static const char *const keys[] = {"type",
					   "size_ms",
					   "slide_ms",
					   "gap_ms",
					   "key",
					   "aggregates",
					   "allowed_lateness_ms",
					   "late",
					   "time",
					   NULL};
	if (!json_is_object(w))
		return failf(c, "window", "expected an object, got %s",
			     json_kind(w));
	size_t n = strlen(c->path);
	snprintf(c->path + n, sizeof(c->path) - n, ".window");
	if (!check_keys(c, w, keys))
		return false;
	if (!get_str(c, w, "type", &win->type, true) ||
	    !get_int(c, w, "size_ms", &win->size_ms, 1) ||
	    !get_int(c, w, "slide_ms", &win->slide_ms, 1) ||
	    !get_int(c, w, "gap_ms", &win->gap_ms, 1) ||
	    !get_strlist(c, w, "key", &win->n_key, &win->key) ||
	    !get_int(c, w, "allowed_lateness_ms", &win->allowed_lateness_ms,
		     0) ||
	    !get_str(c, w, "late", &win->late, false) ||
	    !get_str(c, w, "time", &win->time, false))
		return false;
	json_t *aggs = json_object_get(w, "aggregates");
	if (!aggs || !json_is_object(aggs) || json_object_size(aggs) == 0)
		return failf(c, "aggregates",
			     "expected an object of \"name\": \"fn(expr)\"");
	win->n_aggregates = json_object_size(aggs);
	win->aggregates = anew(c, win->n_aggregates * sizeof(*win->aggregates));
	const char *k;
	json_t *v;
	size_t i = 0;
	json_object_foreach (aggs, k, v) {
		if (!json_is_string(v)) {
			char f[160];
			snprintf(f, sizeof(f), "aggregates.%s", k);
			return failf(
				c, f,
				"expected a string like \"sum(x)\", got %s",
				json_kind(v));
		}
		Streamvisor__Aggregate *a = anew(c, sizeof(*a));
		streamvisor__aggregate__init(a);
		a->name = adup(c, k);
		a->expr = adup(c, json_string_value(v));
		win->aggregates[i++] = a;
	}
	c->path[n] = '\0';
	return true;
}

/* The coverage record of a join step: the spec did not parse, so the step
 * sits under IncQL's unavailable plan target. */
static void join_record(sv_error_t *err, size_t i)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char plan[80], tid[160], path[40];
	snprintf(plan, sizeof(plan), "plan:unavailable:execute:%lld",
		 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	snprintf(tid, sizeof(tid), "%s:target:pipeline-step:%zu", plan, i);
	snprintf(path, sizeof(path), "pipeline/%zu", i);
	json_t *t = sv_target_new("relation_output", tid, plan, "pipeline",
				  path, "join", (int64_t)i, -1);
	json_t *a = json_pack(
		"[o]",
		sv_coverage_record_new(t, "stateful_join_support", "required",
				       "a join step keeps state of both "
				       "inputs to match records",
				       "uncovered", "no join operator exists"));
	json_decref(t);
	char *d = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	sv_error_set_details(err, d);
	free(d);
}

static bool parse_pipeline(pctx_t *c, json_t *root, Streamvisor__JobSpec *js)
{
	json_t *v = json_object_get(root, "pipeline");
	if (!v || json_is_null(v))
		return true;
	if (!json_is_array(v))
		return failf(c, "pipeline",
			     "expected an array of steps, got %s",
			     json_kind(v));
	js->n_pipeline = json_array_size(v);
	js->pipeline = anew(c,
			    (js->n_pipeline ? js->n_pipeline : 1) *
				    sizeof(*js->pipeline));
	for (size_t i = 0; i < js->n_pipeline; i++) {
		json_t *st = json_array_get(v, i);
		snprintf(c->path, sizeof(c->path), "pipeline[%zu]", i);
		if (!json_is_object(st) || json_object_size(st) != 1)
			return failf(c, NULL,
				     "a step is an object with exactly one "
				     "of: filter, select, window, dedup");
		Streamvisor__Step *s = anew(c, sizeof(*s));
		streamvisor__step__init(s);
		js->pipeline[i] = s;
		const char *k = json_object_iter_key(json_object_iter(st));
		json_t *body = json_object_get(st, k);
		if (!strcmp(k, "filter")) {
			if (!json_is_string(body))
				return failf(
					c, k,
					"expected an expression string, got %s",
					json_kind(body));
			s->step_case = STREAMVISOR__STEP__STEP_FILTER;
			s->filter = adup(c, json_string_value(body));
		} else if (!strcmp(k, "select")) {
			if (!json_is_object(body) ||
			    json_object_size(body) == 0)
				return failf(c, k,
					     "expected an object of "
					     "\"column\": \"expression\"");
			Streamvisor__Select *sel = anew(c, sizeof(*sel));
			streamvisor__select__init(sel);
			sel->n_items = json_object_size(body);
			sel->items = anew(c,
					  sel->n_items * sizeof(*sel->items));
			const char *name;
			json_t *e;
			size_t j = 0;
			json_object_foreach (body, name, e) {
				if (!json_is_string(e)) {
					char f[160];
					snprintf(f, sizeof(f), "select.%s",
						 name);
					return failf(c, f,
						     "expected an expression "
						     "string, got %s",
						     json_kind(e));
				}
				Streamvisor__SelectItem *it = anew(c,
								   sizeof(*it));
				streamvisor__select_item__init(it);
				it->name = adup(c, name);
				it->expr = adup(c, json_string_value(e));
				sel->items[j++] = it;
			}
			s->step_case = STREAMVISOR__STEP__STEP_SELECT;
			s->select = sel;
		} else if (!strcmp(k, "window")) {
			Streamvisor__Window *win = anew(c, sizeof(*win));
			streamvisor__window__init(win);
			if (!parse_window(c, body, win))
				return false;
			s->step_case = STREAMVISOR__STEP__STEP_WINDOW;
			s->window = win;
		} else if (!strcmp(k, "dedup")) {
			static const char *const keys[] = {"key", "within_ms",
							   NULL};
			if (!json_is_object(body))
				return failf(c, k, "expected an object");
			strncat(c->path, ".dedup",
				sizeof(c->path) - strlen(c->path) - 1);
			if (!check_keys(c, body, keys))
				return false;
			Streamvisor__Dedup *d = anew(c, sizeof(*d));
			streamvisor__dedup__init(d);
			if (!get_strlist(c, body, "key", &d->n_key, &d->key) ||
			    !get_int(c, body, "within_ms", &d->within_ms, 1))
				return false;
			s->step_case = STREAMVISOR__STEP__STEP_DEDUP;
			s->dedup = d;
		} else if (!strcmp(k, "join")) {
			/* a known stream-processing step this backend does not
			 * run: a coverage error with its record, not a typo */
			failf(c, k,
			      "a join step needs capability "
			      "'stateful_join_support', which is not covered");
			c->err->category = SV_ERR_COVERAGE;
			join_record(c->err, i);
			return false;
		} else {
			return failf(c, k,
				     "unknown step (expected one of: filter, "
				     "select, window, dedup)");
		}
	}
	c->path[0] = '\0';
	return true;
}

static const char *const top_keys[] = {
	"name",     "mode",         "source",    "schema",     "event_time",
	"pipeline", "sink",         "delivery",  "checkpoint", "restart",
	"lag",      "dead_letter",  "late_sink", "on_invalid", "plan_target",
	"plan_id",  "requirements", NULL};

/* ---- IncQL evidence: plan_target | plan_id, requirements ---- */

static Streamvisor__Evidence *evidence_of(pctx_t *c, Streamvisor__JobSpec *js)
{
	if (!js->evidence) {
		js->evidence = anew(c, sizeof(*js->evidence));
		streamvisor__evidence__init(js->evidence);
	}
	return js->evidence;
}

static bool parse_target(pctx_t *c, json_t *root, const char *key,
			 Streamvisor__SemanticTarget **out)
{
	static const char *const keys[] = {"kind",     "target_id", "plan_id",
					   "scope_id", "path",      "name",
					   "node_id",  "ordinal",   NULL};
	size_t saved;
	json_t *o = enter(c, root, key, keys, false, &saved);
	if (!o)
		return !c->err;
	Streamvisor__SemanticTarget *t = anew(c, sizeof(*t));
	streamvisor__semantic_target__init(t);
	if (!get_str(c, o, "kind", &t->kind, true) ||
	    !get_str(c, o, "target_id", &t->target_id, true) ||
	    !get_str(c, o, "plan_id", &t->plan_id, false) ||
	    !get_str(c, o, "scope_id", &t->scope_id, false) ||
	    !get_str(c, o, "path", &t->path, false) ||
	    !get_str(c, o, "name", &t->name, false))
		return false;
	json_t *v = json_object_get(o, "node_id");
	if (v && !json_is_null(v)) {
		if (!get_int(c, o, "node_id", &t->node_id, 0))
			return false;
		t->has_node_id = true;
	}
	v = json_object_get(o, "ordinal");
	if (v && !json_is_null(v)) {
		if (!get_int(c, o, "ordinal", &t->ordinal, 0))
			return false;
		t->has_ordinal = true;
	}
	leave(c, saved);
	*out = t;
	return true;
}

static bool parse_evidence(pctx_t *c, json_t *root, Streamvisor__JobSpec *js)
{
	json_t *pt = json_object_get(root, "plan_target");
	json_t *pid = json_object_get(root, "plan_id");
	if (pt && !json_is_null(pt) && pid && !json_is_null(pid))
		return failf(c, "plan_id",
			     "give either plan_target or plan_id, not both");
	Streamvisor__SemanticTarget *t = NULL;
	if (!parse_target(c, root, "plan_target", &t))
		return false;
	if (t)
		evidence_of(c, js)->plan_target = t;
	char *id = NULL;
	if (!get_str(c, root, "plan_id", &id, false))
		return false;
	if (id) {
		/* IncQL's plan target for a plan id (a Prism cursor's) */
		t = anew(c, sizeof(*t));
		streamvisor__semantic_target__init(t);
		t->kind = (char *)"plan";
		t->target_id = t->plan_id = t->path = id;
		t->scope_id = (char *)"plan";
		t->name = (char *)"plan";
		evidence_of(c, js)->plan_target = t;
	}
	json_t *rq = json_object_get(root, "requirements");
	if (!rq || json_is_null(rq))
		return true;
	if (!json_is_array(rq))
		return failf(c, "requirements",
			     "expected an array of adapter requirements, got "
			     "%s",
			     json_kind(rq));
	Streamvisor__Evidence *ev = evidence_of(c, js);
	ev->n_requirements = json_array_size(rq);
	ev->requirements = anew(c,
				(ev->n_requirements ? ev->n_requirements : 1) *
					sizeof(*ev->requirements));
	static const char *const keys[] = {
		"requirement_id", "target",        "capability", "guarantee",
		"reason",         "evidence_refs", NULL};
	for (size_t i = 0; i < ev->n_requirements; i++) {
		json_t *r = json_array_get(rq, i);
		snprintf(c->path, sizeof(c->path), "requirements[%zu]", i);
		if (!json_is_object(r))
			return failf(c, NULL, "expected an object, got %s",
				     json_kind(r));
		if (!check_keys(c, r, keys))
			return false;
		Streamvisor__Requirement *q = anew(c, sizeof(*q));
		streamvisor__requirement__init(q);
		ev->requirements[i] = q;
		if (!get_str(c, r, "requirement_id", &q->requirement_id,
			     false) ||
		    !parse_target(c, r, "target", &q->target) ||
		    !get_str(c, r, "capability", &q->capability, true) ||
		    !get_str(c, r, "guarantee", &q->guarantee, false) ||
		    !get_str(c, r, "reason", &q->reason, false))
			return false;
		json_t *refs = json_object_get(r, "evidence_refs");
		if (refs && !json_is_null(refs)) {
			if (!json_is_array(refs))
				return failf(c, "evidence_refs",
					     "expected an array of strings");
			q->n_evidence_refs = json_array_size(refs);
			q->evidence_refs = anew(
				c,
				(q->n_evidence_refs ? q->n_evidence_refs : 1) *
					sizeof(char *));
			for (size_t k = 0; k < q->n_evidence_refs; k++) {
				json_t *e = json_array_get(refs, k);
				if (!json_is_string(e))
					return failf(c, "evidence_refs",
						     "expected an array of "
						     "strings");
				q->evidence_refs[k] = adup(
					c, json_string_value(e));
			}
		}
	}
	c->path[0] = '\0';
	return true;
}

static bool parse_root(pctx_t *c, json_t *root, Streamvisor__JobSpec *js)
{
	size_t saved;
	if (!check_keys(c, root, top_keys) ||
	    !get_str(c, root, "name", &js->name, true) ||
	    !get_str(c, root, "mode", &js->mode, false) ||
	    !get_str(c, root, "delivery", &js->delivery, false) ||
	    !get_str(c, root, "on_invalid", &js->on_invalid, false))
		return false;
	if (!(js->source = parse_source(c, root)) ||
	    !parse_schema(c, root, js) || !parse_pipeline(c, root, js) ||
	    !parse_evidence(c, root, js))
		return false;
	if (!(js->sink = parse_sink(c, root, "sink", true)))
		return false;
	js->dead_letter = parse_sink(c, root, "dead_letter", false);
	js->late_sink = parse_sink(c, root, "late_sink", false);
	if (c->err)
		return false;

	static const char *const et_keys[] = {
		"field", "max_out_of_orderness_ms", "idle_timeout_ms", NULL};
	json_t *o = enter(c, root, "event_time", et_keys, false, &saved);
	if (c->err)
		return false;
	if (o) {
		js->event_time = anew(c, sizeof(*js->event_time));
		streamvisor__event_time__init(js->event_time);
		if (!get_str(c, o, "field", &js->event_time->field, true) ||
		    !get_int(c, o, "max_out_of_orderness_ms",
			     &js->event_time->max_out_of_orderness_ms, 0) ||
		    !get_int(c, o, "idle_timeout_ms",
			     &js->event_time->idle_timeout_ms, 0))
			return false;
		leave(c, saved);
	}

	static const char *const ck_keys[] = {"interval_ms", "retain",
					      "full_every", NULL};
	o = enter(c, root, "checkpoint", ck_keys, false, &saved);
	if (c->err)
		return false;
	js->checkpoint = anew(c, sizeof(*js->checkpoint));
	streamvisor__checkpoint__init(js->checkpoint);
	if (o) {
		if (!get_int(c, o, "interval_ms", &js->checkpoint->interval_ms,
			     1) ||
		    !get_i32(c, o, "retain", &js->checkpoint->retain, 1) ||
		    !get_i32(c, o, "full_every", &js->checkpoint->full_every,
			     1))
			return false;
		leave(c, saved);
	}

	static const char *const rs_keys[] = {"max_attempts",
					      "initial_backoff_ms",
					      "max_backoff_ms",
					      "multiplier",
					      "window_ms",
					      "reset_after_ms",
					      NULL};
	o = enter(c, root, "restart", rs_keys, false, &saved);
	if (c->err)
		return false;
	js->restart = anew(c, sizeof(*js->restart));
	streamvisor__restart__init(js->restart);
	if (o) {
		Streamvisor__Restart *r = js->restart;
		if (!get_i32(c, o, "max_attempts", &r->max_attempts, 0) ||
		    !get_int(c, o, "initial_backoff_ms", &r->initial_backoff_ms,
			     1) ||
		    !get_int(c, o, "max_backoff_ms", &r->max_backoff_ms, 1) ||
		    !get_num(c, o, "multiplier", &r->multiplier) ||
		    !get_int(c, o, "window_ms", &r->window_ms, 1) ||
		    !get_int(c, o, "reset_after_ms", &r->reset_after_ms, 1))
			return false;
		if (r->multiplier != 0 && r->multiplier < 1.0)
			return failf(c, "multiplier", "must be >= 1");
		leave(c, saved);
	}

	static const char *const lag_keys[] = {"max_records", "max_seconds",
					       "grace_ms", NULL};
	o = enter(c, root, "lag", lag_keys, false, &saved);
	if (c->err)
		return false;
	js->lag = anew(c, sizeof(*js->lag));
	streamvisor__lag__init(js->lag);
	if (o) {
		if (!get_int(c, o, "max_records", &js->lag->max_records, 1) ||
		    !get_int(c, o, "max_seconds", &js->lag->max_seconds, 1) ||
		    !get_int(c, o, "grace_ms", &js->lag->grace_ms, 0))
			return false;
		leave(c, saved);
	}
	return true;
}

/* ---- defaults and value checks, shared by the JSON and protobuf paths ---- */

static bool empty(const char *s)
{
	return !s || !s[0];
}

static bool one_of(const char *v, const char *const *allowed)
{
	for (; *allowed; allowed++)
		if (!strcmp(v, *allowed))
			return true;
	return false;
}

static sv_error_t *bad(const char *field, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static sv_error_t *bad(const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sv_error_t *err = sv_error_new(SV_ERR_SUBMISSION, "field '%s': %s",
				       field, msg);
	return sv_error_set_field(err, field);
}

#define DEFAULT_STR(field, value)                \
	do {                                     \
		if (empty(field))                \
			field = (char *)(value); \
	} while (0)

static sv_error_t *check_sink(Streamvisor__Sink *s, const char *name)
{
	char f[64];
	DEFAULT_STR(s->kind, "kafka");
	DEFAULT_STR(s->format, "json");
	static const char *const kinds[] = {"kafka", "file", "null", "memory",
					    NULL};
	snprintf(f, sizeof(f), "%s.kind", name);
	if (!one_of(s->kind, kinds))
		return bad(f,
			   "unknown sink kind '%s' (expected kafka, file, null "
			   "or memory)",
			   s->kind);
	snprintf(f, sizeof(f), "%s.format", name);
	if (strcmp(s->format, "json"))
		return bad(f, "unsupported output format '%s' (expected json)",
			   s->format);
	if (!strcmp(s->kind, "kafka")) {
		DEFAULT_STR(s->cluster, "default");
		snprintf(f, sizeof(f), "%s.topic", name);
		if (empty(s->topic))
			return bad(f, "is required for a kafka sink");
	}
	snprintf(f, sizeof(f), "%s.transaction_timeout_ms", name);
	if (s->transaction_timeout_ms < 0 ||
	    (s->transaction_timeout_ms && strcmp(s->kind, "kafka")))
		return bad(f,
			   "must be a positive number of milliseconds, on a "
			   "kafka sink");
	snprintf(f, sizeof(f), "%s.path", name);
	if (!strcmp(s->kind, "file") && empty(s->path))
		return bad(f,
			   "is required for a file sink (the output "
			   "directory)");
	if (strcmp(s->kind, "file") && !empty(s->path))
		return bad(f, "only a file sink has a path");
	return NULL;
}

/* A SemanticTarget: a known kind and a target id; the other strings
 * default as IncQL builds a plan target (plan_id = target_id, scope "plan",
 * path = target_id, name "plan"). */
static sv_error_t *normalize_target(Streamvisor__SemanticTarget *t,
				    const char *field)
{
	char f[96];
	snprintf(f, sizeof(f), "%s.kind", field);
	if (empty(t->kind) || !sv_coverage_target_kind_known(t->kind))
		return bad(f, "unknown semantic target kind '%s'",
			   t->kind ? t->kind : "");
	snprintf(f, sizeof(f), "%s.target_id", field);
	if (empty(t->target_id))
		return bad(f, "is required");
	DEFAULT_STR(t->plan_id, t->target_id);
	DEFAULT_STR(t->scope_id, "plan");
	DEFAULT_STR(t->path, t->target_id);
	DEFAULT_STR(t->name, "plan");
	return NULL;
}

static sv_error_t *normalize_evidence(Streamvisor__Evidence *ev)
{
	if (!ev)
		return NULL;
	sv_error_t *err;
	if (ev->plan_target &&
	    (err = normalize_target(ev->plan_target, "plan_target")))
		return err;
	static const char *const guarantees[] = {"required", "preferred",
						 "optional", NULL};
	for (size_t i = 0; i < ev->n_requirements; i++) {
		Streamvisor__Requirement *q = ev->requirements[i];
		char f[96];
		snprintf(f, sizeof(f), "requirements[%zu].capability", i);
		if (empty(q->capability) ||
		    !sv_coverage_capability_known(q->capability))
			return bad(f,
				   "unknown capability '%s' (IncQL's "
				   "AdapterRequirementCapability names and "
				   "RFC 048's streaming names, docs/incql.md)",
				   q->capability ? q->capability : "");
		DEFAULT_STR(q->guarantee, "required");
		snprintf(f, sizeof(f), "requirements[%zu].guarantee", i);
		if (!one_of(q->guarantee, guarantees))
			return bad(f,
				   "unknown guarantee '%s' (expected "
				   "required, preferred or optional)",
				   q->guarantee);
		DEFAULT_STR(q->reason, "requested by the client");
		snprintf(f, sizeof(f), "requirements[%zu].target", i);
		if (q->target && (err = normalize_target(q->target, f)))
			return err;
	}
	return NULL;
}

/* Fill defaults into msg (pointers to static strings are fine: the message
 * is packed and unpacked right after). */
static sv_error_t *normalize(Streamvisor__JobSpec *js)
{
	if (empty(js->name))
		return bad("name", "is required");
	for (const char *p = js->name; *p; p++)
		if (*p < 0x20)
			return bad("name",
				   "must not contain control characters");
	DEFAULT_STR(js->mode, "stream");
	static const char *const modes[] = {"stream", "bounded", NULL};
	if (!one_of(js->mode, modes))
		return bad("mode",
			   "unknown mode '%s' (expected stream or bounded)",
			   js->mode);
	DEFAULT_STR(js->delivery, "at_least_once");
	static const char *const deliveries[] = {"at_least_once",
						 "exactly_once", NULL};
	if (!one_of(js->delivery, deliveries))
		return bad("delivery",
			   "unknown delivery '%s' (expected "
			   "at_least_once or exactly_once)",
			   js->delivery);
	DEFAULT_STR(js->on_invalid, js->dead_letter ? "dead_letter" : "skip");
	static const char *const invalids[] = {"skip", "dead_letter", "fail",
					       NULL};
	if (!one_of(js->on_invalid, invalids))
		return bad("on_invalid",
			   "unknown policy '%s' (expected skip, "
			   "dead_letter or fail)",
			   js->on_invalid);
	if (!strcmp(js->on_invalid, "dead_letter") && !js->dead_letter)
		return bad("dead_letter",
			   "is required when on_invalid is dead_letter");

	Streamvisor__Source *s = js->source;
	if (!s)
		return bad("source", "is required");
	DEFAULT_STR(s->kind, "kafka");
	DEFAULT_STR(s->format, "json");
	static const char *const skinds[] = {"kafka", "generator", NULL};
	if (!one_of(s->kind, skinds))
		return bad("source.kind",
			   "unknown source kind '%s' (expected kafka "
			   "or generator)",
			   s->kind);
	static const char *const formats[] = {"json", "csv", NULL};
	if (!one_of(s->format, formats))
		return bad("source.format",
			   "unknown format '%s' (expected json or "
			   "csv)",
			   s->format);
	if (!strcmp(s->kind, "kafka")) {
		DEFAULT_STR(s->cluster, "default");
		DEFAULT_STR(s->start, "earliest");
		if (empty(s->topic))
			return bad("source.topic",
				   "is required for a kafka source");
		static const char *const starts[] = {"earliest", "latest",
						     NULL};
		if (!one_of(s->start, starts))
			return bad("source.start",
				   "unknown start '%s' (expected "
				   "earliest or latest)",
				   s->start);
		if (s->rate_per_s > 1000000000LL)
			return bad("source.rate_per_s",
				   "%lld is above the limit "
				   "of 1,000,000,000 records per second",
				   (long long)s->rate_per_s);
	} else {
		DEFAULT_STR(s->generator, "sequence");
		static const char *const gens[] = {"sequence", "nexmark", NULL};
		if (!one_of(s->generator, gens))
			return bad("source.generator",
				   "unknown generator '%s' "
				   "(expected sequence or nexmark)",
				   s->generator);
		if (s->count == 0)
			s->count = -1;
		if (!strcmp(js->mode, "bounded") && s->count < 0)
			return bad("source.count",
				   "a bounded generator needs a count");
	}

	for (size_t i = 0; i < js->n_schema; i++) {
		char f[64];
		snprintf(f, sizeof(f), "schema[%zu].type", i);
		static const char *const types[] = {"bool",         "int64",
						    "float64",      "string",
						    "timestamp_ms", NULL};
		if (empty(js->schema[i]->name)) {
			snprintf(f, sizeof(f), "schema[%zu].name", i);
			return bad(f, "is required");
		}
		if (empty(js->schema[i]->type) ||
		    !one_of(js->schema[i]->type, types))
			return bad(f,
				   "unknown type '%s' (expected bool, int64, "
				   "float64, string or timestamp_ms)",
				   js->schema[i]->type ? js->schema[i]->type
						       : "");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(js->schema[j]->name, js->schema[i]->name)) {
				snprintf(f, sizeof(f), "schema[%zu].name", i);
				return bad(f, "duplicate column '%s'",
					   js->schema[i]->name);
			}
	}
	if (js->n_schema == 0)
		return bad("schema", "is required");

	sv_error_t *err;
	if (!js->sink)
		return bad("sink", "is required");
	if ((err = check_sink(js->sink, "sink")))
		return err;
	if (js->dead_letter &&
	    (err = check_sink(js->dead_letter, "dead_letter")))
		return err;
	if (js->late_sink && (err = check_sink(js->late_sink, "late_sink")))
		return err;

	for (size_t i = 0; i < js->n_pipeline; i++) {
		Streamvisor__Step *st = js->pipeline[i];
		if (st->step_case != STREAMVISOR__STEP__STEP_WINDOW)
			continue;
		Streamvisor__Window *w = st->window;
		char f[64];
		snprintf(f, sizeof(f), "pipeline[%zu].window", i);
		static const char *const wtypes[] = {"tumbling", "sliding",
						     "session", NULL};
		if (empty(w->type) || !one_of(w->type, wtypes))
			return bad(
				f,
				"unknown window type '%s' (expected tumbling, "
				"sliding or session)",
				w->type ? w->type : "");
		DEFAULT_STR(w->late, "drop");
		/* like Flink SQL: event time unless asked otherwise */
		DEFAULT_STR(w->time, "event");
		static const char *const lates[] = {"drop", "side_output",
						    NULL};
		static const char *const times[] = {"event", "processing",
						    NULL};
		if (!one_of(w->late, lates))
			return bad(f,
				   "unknown late policy '%s' (expected drop or "
				   "side_output)",
				   w->late);
		if (!one_of(w->time, times))
			return bad(f,
				   "unknown time '%s' (expected event or "
				   "processing)",
				   w->time);
		if (!strcmp(w->time, "event") && !js->event_time)
			return bad("event_time",
				   "is required by the event-time "
				   "window at pipeline[%zu] (or set \"time\": "
				   "\"processing\")",
				   i);
		if (!strcmp(w->late, "side_output") && !js->late_sink)
			return bad("late_sink",
				   "is required by late: side_output "
				   "at pipeline[%zu]",
				   i);
		if (strcmp(w->type, "session") && w->size_ms <= 0)
			return bad(f, "size_ms is required for a %s window",
				   w->type);
		if (!strcmp(w->type, "sliding") && w->slide_ms <= 0)
			return bad(f,
				   "slide_ms is required for a sliding window");
		if (!strcmp(w->type, "session") && w->gap_ms <= 0)
			return bad(f,
				   "gap_ms is required for a session window");
	}
	if (js->event_time) {
		if (empty(js->event_time->field))
			return bad("event_time.field", "is required");
		int idx = -1;
		for (size_t i = 0; i < js->n_schema; i++)
			if (!strcmp(js->schema[i]->name, js->event_time->field))
				idx = (int)i;
		if (idx < 0)
			return bad("event_time.field", "unknown column '%s'",
				   js->event_time->field);
		const char *t = js->schema[idx]->type;
		if (strcmp(t, "timestamp_ms") && strcmp(t, "int64"))
			return bad("event_time.field",
				   "column '%s' is %s; expected "
				   "timestamp_ms or int64",
				   js->event_time->field, t);
	}

	if (js->checkpoint->interval_ms == 0)
		js->checkpoint->interval_ms = 5000;
	if (js->checkpoint->retain == 0)
		js->checkpoint->retain = 3;
	Streamvisor__Restart *r = js->restart;
	if (r->max_attempts == 0)
		r->max_attempts = 10;
	if (r->initial_backoff_ms == 0)
		r->initial_backoff_ms = 500;
	if (r->max_backoff_ms == 0)
		r->max_backoff_ms = 60000;
	if (r->multiplier == 0)
		r->multiplier = 2.0;
	if (r->window_ms == 0)
		r->window_ms = 600000;
	if (r->reset_after_ms == 0)
		r->reset_after_ms = 300000;
	if (r->max_backoff_ms < r->initial_backoff_ms)
		return bad("restart.max_backoff_ms",
			   "must be >= initial_backoff_ms");
	if (js->lag->grace_ms == 0)
		js->lag->grace_ms = 10000;
	return normalize_evidence(js->evidence);
}

/* Pack msg, hash it, and unpack into an owned message. */
static sv_error_t *finish(Streamvisor__JobSpec *msg, sv_jobspec_t **out)
{
	Streamvisor__Checkpoint ck = STREAMVISOR__CHECKPOINT__INIT;
	Streamvisor__Restart rs = STREAMVISOR__RESTART__INIT;
	Streamvisor__Lag lag = STREAMVISOR__LAG__INIT;
	if (!msg->checkpoint)
		msg->checkpoint = &ck;
	if (!msg->restart)
		msg->restart = &rs;
	if (!msg->lag)
		msg->lag = &lag;
	sv_error_t *err = normalize(msg);
	if (err)
		return err;
	/* The plan id hashes the plan without the IncQL evidence: the client's
	 * plan identity and requirements are not what the job computes. */
	Streamvisor__Evidence *ev = msg->evidence;
	msg->evidence = NULL;
	size_t hlen = streamvisor__job_spec__get_packed_size(msg);
	uint8_t *hbytes = sv_malloc(hlen ? hlen : 1);
	streamvisor__job_spec__pack(msg, hbytes);
	msg->evidence = ev;
	sv_jobspec_t *spec = sv_calloc(1, sizeof(*spec));
	spec->packed_len = streamvisor__job_spec__get_packed_size(msg);
	spec->packed = sv_malloc(spec->packed_len);
	streamvisor__job_spec__pack(msg, spec->packed);
	spec->msg = streamvisor__job_spec__unpack(NULL, spec->packed_len,
						  spec->packed);
	if (!spec->msg) {
		free(hbytes);
		sv_jobspec_destroy(spec);
		return sv_error_new(SV_ERR_SUBMISSION,
				    "job spec could not be "
				    "encoded");
	}
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(hbytes, hlen, md);
	free(hbytes);
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
		sprintf(spec->plan_id + 2 * i, "%02x", md[i]);
	*out = spec;
	return NULL;
}

sv_error_t *sv_jobspec_parse_json(const char *text, size_t len,
				  sv_jobspec_t **out)
{
	*out = NULL;
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return sv_error_new(SV_ERR_SUBMISSION,
				    "job spec is not valid JSON: %s at line %d "
				    "column %d",
				    jerr.text, jerr.line, jerr.column);
	if (!json_is_object(root)) {
		json_decref(root);
		return sv_error_new(SV_ERR_SUBMISSION,
				    "job spec must be a JSON object");
	}
	pctx_t c = {0};
	sv_arena_init(&c.arena);
	Streamvisor__JobSpec js = STREAMVISOR__JOB_SPEC__INIT;
	sv_error_t *err = NULL;
	if (!parse_root(&c, root, &js))
		err = c.err ? c.err
			    : sv_error_new(SV_ERR_SUBMISSION, "invalid spec");
	else
		err = finish(&js, out);
	sv_arena_release(&c.arena);
	json_decref(root);
	return err;
}

static void *arena_alloc(void *data, size_t size)
{
	return sv_arena_alloc(data, size);
}

static void arena_free(void *data, void *p)
{
	(void)data;
	(void)p; /* released with the arena */
}

sv_error_t *sv_jobspec_parse_proto(const uint8_t *data, size_t len,
				   sv_jobspec_t **out)
{
	*out = NULL;
	/* Unpack into an arena: normalize() may point fields at static
	 * defaults, which protobuf-c's own free would choke on. */
	sv_arena_t arena;
	sv_arena_init(&arena);
	ProtobufCAllocator alloc = {arena_alloc, arena_free, &arena};
	Streamvisor__JobSpec *msg = streamvisor__job_spec__unpack(&alloc, len,
								  data);
	sv_error_t *err;
	if (!msg)
		err = sv_error_new(SV_ERR_SUBMISSION,
				   "job spec is not a valid protobuf "
				   "streamvisor.JobSpec message");
	else
		err = finish(msg, out);
	sv_arena_release(&arena);
	return err;
}

void sv_jobspec_destroy(sv_jobspec_t *spec)
{
	if (!spec)
		return;
	if (spec->msg)
		streamvisor__job_spec__free_unpacked(spec->msg, NULL);
	free(spec->packed);
	free(spec);
}

/* ---- back to JSON ---- */

static void put_str(json_t *o, const char *k, const char *v)
{
	if (!empty(v))
		json_object_set_new(o, k, json_string(v));
}

static json_t *sink_json(const Streamvisor__Sink *s)
{
	json_t *o = json_object();
	put_str(o, "kind", s->kind);
	put_str(o, "cluster", s->cluster);
	put_str(o, "topic", s->topic);
	put_str(o, "format", s->format);
	put_str(o, "key", s->key);
	put_str(o, "path", s->path);
	if (s->transaction_timeout_ms)
		json_object_set_new(o, "transaction_timeout_ms",
				    json_integer(s->transaction_timeout_ms));
	return o;
}

static json_t *strlist(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

char *sv_jobspec_to_json(const sv_jobspec_t *spec)
{
	const Streamvisor__JobSpec *js = spec->msg;
	json_t *o = json_object();
	put_str(o, "name", js->name);
	put_str(o, "mode", js->mode);
	json_t *src = json_object();
	const Streamvisor__Source *s = js->source;
	put_str(src, "kind", s->kind);
	put_str(src, "cluster", s->cluster);
	put_str(src, "topic", s->topic);
	put_str(src, "format", s->format);
	put_str(src, "start", s->start);
	put_str(src, "generator", s->generator);
	if (!strcmp(s->kind, "generator")) {
		json_object_set_new(src, "count", json_integer(s->count));
		json_object_set_new(src, "rate_per_s",
				    json_integer(s->rate_per_s));
		json_object_set_new(src, "seed",
				    json_integer((json_int_t)s->seed));
	}
	json_object_set_new(o, "source", src);
	json_t *sch = json_array();
	for (size_t i = 0; i < js->n_schema; i++)
		json_array_append_new(sch,
				      json_pack("{s:s, s:s, s:b}", "name",
						js->schema[i]->name, "type",
						js->schema[i]->type, "nullable",
						!js->schema[i]->not_null));
	json_object_set_new(o, "schema", sch);
	if (js->event_time)
		json_object_set_new(
			o, "event_time",
			json_pack("{s:s, s:I, s:I}", "field",
				  js->event_time->field,
				  "max_out_of_orderness_ms",
				  (json_int_t)js->event_time
					  ->max_out_of_orderness_ms,
				  "idle_timeout_ms",
				  (json_int_t)js->event_time->idle_timeout_ms));
	json_t *pl = json_array();
	for (size_t i = 0; i < js->n_pipeline; i++) {
		const Streamvisor__Step *st = js->pipeline[i];
		json_t *step = json_object();
		switch (st->step_case) {
		case STREAMVISOR__STEP__STEP_FILTER:
			json_object_set_new(step, "filter",
					    json_string(st->filter));
			break;
		case STREAMVISOR__STEP__STEP_SELECT: {
			json_t *sel = json_object();
			for (size_t j = 0; j < st->select->n_items; j++)
				json_object_set_new(
					sel, st->select->items[j]->name,
					json_string(
						st->select->items[j]->expr));
			json_object_set_new(step, "select", sel);
			break;
		}
		case STREAMVISOR__STEP__STEP_WINDOW: {
			const Streamvisor__Window *w = st->window;
			json_t *wo = json_object();
			put_str(wo, "type", w->type);
			if (w->size_ms)
				json_object_set_new(wo, "size_ms",
						    json_integer(w->size_ms));
			if (w->slide_ms)
				json_object_set_new(wo, "slide_ms",
						    json_integer(w->slide_ms));
			if (w->gap_ms)
				json_object_set_new(wo, "gap_ms",
						    json_integer(w->gap_ms));
			json_object_set_new(wo, "key",
					    strlist(w->key, w->n_key));
			json_t *aggs = json_object();
			for (size_t j = 0; j < w->n_aggregates; j++)
				json_object_set_new(
					aggs, w->aggregates[j]->name,
					json_string(w->aggregates[j]->expr));
			json_object_set_new(wo, "aggregates", aggs);
			json_object_set_new(
				wo, "allowed_lateness_ms",
				json_integer(w->allowed_lateness_ms));
			put_str(wo, "late", w->late);
			put_str(wo, "time", w->time);
			json_object_set_new(step, "window", wo);
			break;
		}
		case STREAMVISOR__STEP__STEP_DEDUP:
			json_object_set_new(
				step, "dedup",
				json_pack("{s:o, s:I}", "key",
					  strlist(st->dedup->key,
						  st->dedup->n_key),
					  "within_ms",
					  (json_int_t)st->dedup->within_ms));
			break;
		default:
			break;
		}
		json_array_append_new(pl, step);
	}
	json_object_set_new(o, "pipeline", pl);
	json_object_set_new(o, "sink", sink_json(js->sink));
	if (js->dead_letter)
		json_object_set_new(o, "dead_letter",
				    sink_json(js->dead_letter));
	if (js->late_sink)
		json_object_set_new(o, "late_sink", sink_json(js->late_sink));
	put_str(o, "delivery", js->delivery);
	put_str(o, "on_invalid", js->on_invalid);
	json_object_set_new(o, "checkpoint",
			    json_pack("{s:I, s:i}", "interval_ms",
				      (json_int_t)js->checkpoint->interval_ms,
				      "retain", js->checkpoint->retain));
	/* 0 (the default, docs/jobspec.md) is left out: the packed spec and
	 * so the plan id of a spec that does not set it stay what they were */
	if (js->checkpoint->full_every)
		json_object_set_new(json_object_get(o, "checkpoint"),
				    "full_every",
				    json_integer(js->checkpoint->full_every));
	const Streamvisor__Restart *r = js->restart;
	json_object_set_new(
		o, "restart",
		json_pack("{s:i, s:I, s:I, s:f, s:I, s:I}", "max_attempts",
			  r->max_attempts, "initial_backoff_ms",
			  (json_int_t)r->initial_backoff_ms, "max_backoff_ms",
			  (json_int_t)r->max_backoff_ms, "multiplier",
			  r->multiplier, "window_ms", (json_int_t)r->window_ms,
			  "reset_after_ms", (json_int_t)r->reset_after_ms));
	json_t *lag = json_object();
	if (js->lag->max_records)
		json_object_set_new(lag, "max_records",
				    json_integer(js->lag->max_records));
	if (js->lag->max_seconds)
		json_object_set_new(lag, "max_seconds",
				    json_integer(js->lag->max_seconds));
	json_object_set_new(lag, "grace_ms", json_integer(js->lag->grace_ms));
	json_object_set_new(o, "lag", lag);
	const Streamvisor__Evidence *ev = js->evidence;
	if (ev && ev->plan_target)
		json_object_set_new(
			o, "plan_target",
			sv_coverage_target_from_proto(ev->plan_target));
	if (ev && ev->n_requirements) {
		json_t *rq = json_array();
		for (size_t i = 0; i < ev->n_requirements; i++) {
			const Streamvisor__Requirement *q = ev->requirements[i];
			json_t *r = json_object();
			put_str(r, "requirement_id", q->requirement_id);
			if (q->target)
				json_object_set_new(
					r, "target",
					sv_coverage_target_from_proto(
						q->target));
			put_str(r, "capability", q->capability);
			put_str(r, "guarantee", q->guarantee);
			put_str(r, "reason", q->reason);
			json_object_set_new(
				r, "evidence_refs",
				strlist(q->evidence_refs, q->n_evidence_refs));
			json_array_append_new(rq, r);
		}
		json_object_set_new(o, "requirements", rq);
	}
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}
