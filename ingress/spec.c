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
#include "ingress/substrait.h"
#include "substrait/plan.pb-c.h"

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
	"kind",  "cluster",    "topic", "format",         "start", "generator",
	"count", "rate_per_s", "seed",  "partitioned_by", NULL};
static const char *const sink_keys[] = {"kind",
					"cluster",
					"topic",
					"format",
					"key",
					"path",
					"transaction_timeout_ms",
					NULL};

static Streamvisor__Source *parse_source(pctx_t *c, json_t *root,
					 const char *key,
					 const char *const *keys)
{
	size_t saved;
	json_t *o = enter(c, root, key, keys, true, &saved);
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
	    !get_int(c, o, "seed", &seed, 0) ||
	    !get_strlist(c, o, "partitioned_by", &s->n_partitioned_by,
			 &s->partitioned_by))
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

/* The "schema" array of obj (the job's or a join's input). */
static bool parse_fields(pctx_t *c, json_t *obj, size_t *nout,
			 Streamvisor__Field ***out)
{
	size_t base = strlen(c->path);
	char prefix[200];
	snprintf(prefix, sizeof(prefix), "%.180s%sschema", c->path,
		 base ? "." : "");
	json_t *v = json_object_get(obj, "schema");
	if (!v)
		return failf(c, "schema", "is required");
	if (!json_is_array(v) || json_array_size(v) == 0)
		return failf(c, "schema",
			     "expected a non-empty array of fields");
	size_t n = json_array_size(v);
	Streamvisor__Field **fields = anew(c, n * sizeof(*fields));
	*nout = n;
	*out = fields;
	static const char *const keys[] = {"name", "type", "nullable", NULL};
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_array_get(v, i);
		snprintf(c->path, sizeof(c->path), "%.200s[%zu]", prefix, i);
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
		fields[i] = fl;
	}
	c->path[base] = '\0';
	return true;
}

static bool parse_schema(pctx_t *c, json_t *root, Streamvisor__JobSpec *js)
{
	return parse_fields(c, root, &js->n_schema, &js->schema);
}

/* The "event_time" object of obj, or NULL in *out when absent. */
static bool parse_event_time(pctx_t *c, json_t *obj,
			     Streamvisor__EventTime **out)
{
	static const char *const et_keys[] = {
		"field", "max_out_of_orderness_ms", "idle_timeout_ms",
		"watermark_scope", NULL};
	size_t saved;
	*out = NULL;
	json_t *o = enter(c, obj, "event_time", et_keys, false, &saved);
	if (c->err)
		return false;
	if (!o)
		return true;
	Streamvisor__EventTime *et = anew(c, sizeof(*et));
	streamvisor__event_time__init(et);
	if (!get_str(c, o, "field", &et->field, true) ||
	    !get_int(c, o, "max_out_of_orderness_ms",
		     &et->max_out_of_orderness_ms, 0) ||
	    !get_int(c, o, "idle_timeout_ms", &et->idle_timeout_ms, 0) ||
	    !get_str(c, o, "watermark_scope", &et->watermark_scope, false))
		return false;
	leave(c, saved);
	*out = et;
	return true;
}

static bool parse_join(pctx_t *c, json_t *body, Streamvisor__Join *j)
{
	static const char *const keys[] = {"type",
					   "source",
					   "schema",
					   "event_time",
					   "on",
					   "kind",
					   "take",
					   "lower_ms",
					   "upper_ms",
					   "time",
					   "retention_ms",
					   "max_state_rows",
					   "max_state_bytes",
					   NULL};
	if (!json_is_object(body))
		return failf(c, "join", "expected an object, got %s",
			     json_kind(body));
	size_t n = strlen(c->path);
	snprintf(c->path + n, sizeof(c->path) - n, ".join");
	int64_t rows = 0, bytes = 0;
	if (!check_keys(c, body, keys) ||
	    !get_str(c, body, "type", &j->type, true) ||
	    !get_str(c, body, "kind", &j->kind, false) ||
	    !get_str(c, body, "time", &j->time, false) ||
	    !get_int(c, body, "lower_ms", &j->lower_ms, INT64_MIN) ||
	    !get_int(c, body, "upper_ms", &j->upper_ms, INT64_MIN) ||
	    !get_int(c, body, "retention_ms", &j->retention_ms, 0) ||
	    !get_int(c, body, "max_state_rows", &rows, 0) ||
	    !get_int(c, body, "max_state_bytes", &bytes, 0))
		return false;
	j->max_state_rows = rows;
	j->max_state_bytes = bytes;
	if (!strcmp(j->type, "interval"))
		for (int b = 0; b < 2; b++) {
			const char *k = b ? "upper_ms" : "lower_ms";
			if (!json_object_get(body, k))
				return failf(c, k,
					     "is required for an interval "
					     "join (bounds of right.time - "
					     "left.time, inclusive)");
		}
	if (!(j->source = parse_source(c, body, "source", source_keys)) ||
	    !parse_fields(c, body, &j->n_schema, &j->schema) ||
	    !parse_event_time(c, body, &j->event_time))
		return false;
	static const char *const on_keys[] = {"left", "right", NULL};
	size_t saved;
	json_t *on = enter(c, body, "on", on_keys, true, &saved);
	if (!on)
		return false;
	if (!get_strlist(c, on, "left", &j->n_on_left, &j->on_left) ||
	    !get_strlist(c, on, "right", &j->n_on_right, &j->on_right))
		return false;
	leave(c, saved);
	json_t *take = json_object_get(body, "take");
	if (take && !json_is_null(take)) {
		if (!json_is_object(take) || json_object_size(take) == 0)
			return failf(c, "take",
				     "expected an object of \"output column\": "
				     "\"right column\"");
		j->n_take = json_object_size(take);
		j->take = anew(c, j->n_take * sizeof(*j->take));
		const char *name;
		json_t *v;
		size_t i = 0;
		json_object_foreach (take, name, v) {
			if (!json_is_string(v)) {
				char f[160];
				snprintf(f, sizeof(f), "take.%s", name);
				return failf(c, f,
					     "expected a right column name, "
					     "got %s",
					     json_kind(v));
			}
			Streamvisor__TakeItem *t = anew(c, sizeof(*t));
			streamvisor__take_item__init(t);
			t->name = adup(c, name);
			t->column = adup(c, json_string_value(v));
			j->take[i++] = t;
		}
	}
	c->path[n] = '\0';
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

/* {"order": {"keys": [{"expr", "desc", "nulls_first"}], "limit", "offset"}} */
static bool parse_order(pctx_t *c, json_t *body, Streamvisor__Step *s)
{
	static const char *const keys[] = {"keys", "limit", "offset", NULL};
	static const char *const kkeys[] = {"expr", "desc", "nulls_first",
					    NULL};
	if (!json_is_object(body))
		return failf(c, "order", "expected an object");
	strncat(c->path, ".order", sizeof(c->path) - strlen(c->path) - 1);
	if (!check_keys(c, body, keys))
		return false;
	Streamvisor__Order *o = anew(c, sizeof(*o));
	streamvisor__order__init(o);
	o->limit = -1;
	if (!get_int(c, body, "limit", &o->limit, -1) ||
	    !get_int(c, body, "offset", &o->offset, 0))
		return false;
	json_t *ks = json_object_get(body, "keys");
	if (ks && !json_is_array(ks))
		return failf(c, "keys", "expected an array of sort keys");
	o->n_keys = ks ? json_array_size(ks) : 0;
	o->keys = anew(c, (o->n_keys + 1) * sizeof(*o->keys));
	size_t n = strlen(c->path);
	for (size_t i = 0; i < o->n_keys; i++) {
		json_t *kv = json_array_get(ks, i);
		snprintf(c->path + n, sizeof(c->path) - n, ".keys[%zu]", i);
		if (!json_is_object(kv))
			return failf(c, NULL, "expected {\"expr\": ...}");
		if (!check_keys(c, kv, kkeys))
			return false;
		Streamvisor__OrderKey *k = anew(c, sizeof(*k));
		streamvisor__order_key__init(k);
		bool desc = false, nf = false;
		if (!get_str(c, kv, "expr", &k->expr, true) ||
		    !get_bool(c, kv, "desc", &desc) ||
		    !get_bool(c, kv, "nulls_first", &nf))
			return false;
		k->desc = desc;
		k->nulls_first = nf;
		o->keys[i] = k;
	}
	c->path[n] = '\0';
	s->step_case = STREAMVISOR__STEP__STEP_ORDER;
	s->order = o;
	return true;
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
				     "of: filter, select, window, dedup, "
				     "join, order");
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
		} else if (!strcmp(k, "order")) {
			if (!parse_order(c, body, s))
				return false;
		} else if (!strcmp(k, "join")) {
			Streamvisor__Join *j = anew(c, sizeof(*j));
			streamvisor__join__init(j);
			if (!parse_join(c, body, j))
				return false;
			s->step_case = STREAMVISOR__STEP__STEP_JOIN;
			s->join = j;
		} else {
			return failf(c, k,
				     "unknown step (expected one of: filter, "
				     "select, window, dedup, join, order)");
		}
	}
	c->path[0] = '\0';
	return true;
}

static const char *const top_keys[] = {
	"name",       "mode",         "source",      "schema",
	"event_time", "pipeline",     "sink",        "delivery",
	"checkpoint", "restart",      "lag",         "dead_letter",
	"late_sink",  "on_invalid",   "plan",        "plan_target",
	"plan_id",    "requirements", "parallelism", "resources",
	NULL};

/* "plan": a Substrait plan with its read-root bindings (ingress/substrait.c
 * translates it in finish()). */
static bool parse_plan(pctx_t *c, json_t *root, Streamvisor__JobSpec *js)
{
	static const char *const keys[] = {
		"substrait", "substrait_base64", "bindings", "registry",
		"windows",   "dedup_within_ms",  NULL};
	static const char *const binding_keys[] = {
		"kind",  "cluster",    "topic", "format",  "start", "generator",
		"count", "rate_per_s", "seed",  "columns", NULL};
	size_t saved;
	json_t *o = enter(c, root, "plan", keys, true, &saved);
	if (!o)
		return false;
	Streamvisor__SubstraitIngress *pl = anew(c, sizeof(*pl));
	streamvisor__substrait_ingress__init(pl);
	js->plan = pl;
	json_t *sj = json_object_get(o, "substrait");
	json_t *sb = json_object_get(o, "substrait_base64");
	if (!!sj == !!sb)
		return failf(c, NULL,
			     "needs exactly one of 'substrait' (the plan in "
			     "the proto3 JSON mapping) and 'substrait_base64' "
			     "(the binary plan)");
	uint8_t *bytes = NULL;
	size_t len = 0;
	sv_error_t *err;
	if (sj) {
		err = sv_pb_from_json(&substrait__plan__descriptor, sj,
				      SV_SUBSTRAIT_MAX_DEPTH, &bytes, &len);
		pl->from_json = true;
	} else if (!json_is_string(sb)) {
		return failf(c, "substrait_base64",
			     "expected a base64 string, got %s", json_kind(sb));
	} else {
		err = sv_b64_decode(json_string_value(sb), &bytes, &len);
	}
	if (err) {
		failf(c, sj ? "substrait" : "substrait_base64", "%s",
		      err->message);
		sv_error_destroy(err);
		return false;
	}
	pl->substrait.data = (uint8_t *)sv_arena_memdup(&c->arena, bytes,
							len ? len : 1);
	pl->substrait.len = len;
	free(bytes);
	json_t *reg = json_object_get(o, "registry");
	if (reg && !json_is_null(reg)) {
		char *t = json_dumps(
			reg, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		pl->registry_json = adup(c, t);
		free(t);
	}
	if (!get_int(c, o, "dedup_within_ms", &pl->dedup_within_ms, 1))
		return false;
	static const char *const win_keys[] = {"allowed_lateness_ms", "late",
					       NULL};
	size_t ws;
	json_t *w = enter(c, o, "windows", win_keys, false, &ws);
	if (c->err)
		return false;
	if (w) {
		if (!get_int(c, w, "allowed_lateness_ms",
			     &pl->allowed_lateness_ms, 0) ||
		    !get_str(c, w, "late", &pl->late, false))
			return false;
		leave(c, ws);
	}
	size_t bs;
	json_t *b = json_object_get(o, "bindings");
	if (!b || !json_is_object(b) || !json_object_size(b))
		return failf(c, "bindings",
			     "expected an object of read-root name -> source");
	bs = strlen(c->path);
	snprintf(c->path + bs, sizeof(c->path) - bs, ".bindings");
	pl->n_bindings = json_object_size(b);
	pl->bindings = anew(c, pl->n_bindings * sizeof(*pl->bindings));
	const char *name;
	json_t *bv;
	size_t i = 0;
	json_object_foreach (b, name, bv) {
		Streamvisor__SubstraitBinding *sbd = anew(c, sizeof(*sbd));
		streamvisor__substrait_binding__init(sbd);
		sbd->name = adup(c, name);
		if (!(sbd->source = parse_source(c, b, name, binding_keys)))
			return false;
		json_t *cols = json_object_get(bv, "columns");
		if (cols && !json_is_object(cols)) {
			char k[300];
			snprintf(k, sizeof(k), "%s.columns", name);
			return failf(c, k,
				     "expected an object of plan column -> "
				     "record field");
		}
		sbd->n_columns = cols ? json_object_size(cols) : 0;
		sbd->columns = anew(
			c, (sbd->n_columns + 1) * sizeof(*sbd->columns));
		const char *pn;
		json_t *fv;
		size_t j = 0;
		json_object_foreach (cols, pn, fv) {
			if (!json_is_string(fv)) {
				char k[300];
				snprintf(k, sizeof(k), "%s.columns.%s", name,
					 pn);
				return failf(c, k, "expected a field name");
			}
			Streamvisor__SubstraitColumn *sc = anew(c, sizeof(*sc));
			streamvisor__substrait_column__init(sc);
			sc->plan_name = adup(c, pn);
			sc->field = adup(c, json_string_value(fv));
			sbd->columns[j++] = sc;
		}
		pl->bindings[i++] = sbd;
	}
	c->path[bs] = '\0';
	leave(c, saved);
	return true;
}


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
	    !get_str(c, root, "on_invalid", &js->on_invalid, false) ||
	    !get_i32(c, root, "parallelism", &js->parallelism, 1))
		return false;
	if (json_object_get(root, "plan")) {
		static const char *const replaced[] = {"source", "schema",
						       "pipeline", NULL};
		for (const char *const *k = replaced; *k; k++)
			if (json_object_get(root, *k))
				return failf(c, *k,
					     "a job spec with a 'plan' has no "
					     "'%s': the plan and its bindings "
					     "replace source, schema and "
					     "pipeline",
					     *k);
		if (!parse_plan(c, root, js))
			return false;
	} else if (!(js->source = parse_source(c, root, "source",
					       source_keys)) ||
		   !parse_schema(c, root, js) || !parse_pipeline(c, root, js)) {
		return false;
	}
	if (!parse_evidence(c, root, js)) {
		return false;
	}
	if (!(js->sink = parse_sink(c, root, "sink", true)))
		return false;
	js->dead_letter = parse_sink(c, root, "dead_letter", false);
	js->late_sink = parse_sink(c, root, "late_sink", false);
	if (c->err)
		return false;

	if (!parse_event_time(c, root, &js->event_time))
		return false;

	json_t *o;
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

	static const char *const res_keys[] = {"memory_mb", NULL};
	o = enter(c, root, "resources", res_keys, false, &saved);
	if (c->err)
		return false;
	if (o) {
		js->resources = anew(c, sizeof(*js->resources));
		streamvisor__resources__init(js->resources);
		if (!get_int(c, o, "memory_mb", &js->resources->memory_mb, 1))
			return false;
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

/* A kind-specific field of a source or sink section, for checking it
 * against the driver's descriptor (core/driver.h). */
typedef struct kfield {
	const char *name;
	char **str; /* a string field, or NULL */
	int64_t *num; /* an integer field (seed: its bits), or NULL */
	int64_t unset; /* besides 0, the integer that means "not given" */
} kfield_t;

static bool kfield_given(const kfield_t *k)
{
	if (k->str)
		return !empty(*k->str);
	return *k->num != 0 && *k->num != k->unset;
}

/* "a, b or c" from a NULL-terminated list. */
static const char *or_list(const char *const *v, char *buf, size_t len)
{
	size_t o = 0, n = 0;
	buf[0] = '\0';
	while (v[n])
		n++;
	for (size_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s",
				      i == 0               ? ""
					      : i + 1 == n ? " or "
							   : ", ",
				      v[i]);
	return buf;
}

/* Check the kind-specific fields of a section against what the driver of
 * its kind declares: a field it does not take is refused, its defaults are
 * filled in, its required fields and allowed values checked. */
static sv_error_t *check_kind_fields(const sv_drivers_t *cat,
				     sv_driver_role_t role, const char *section,
				     const sv_driver_t *drv, kfield_t *fields,
				     size_t n, bool bounded)
{
	const char *rname = role == SV_DRIVER_SOURCE ? "source" : "sink";
	char f[192], list[160];
	for (size_t i = 0; i < n; i++) {
		kfield_t *k = &fields[i];
		const sv_driver_field_t *df = sv_driver_field(drv, k->name);
		bool given = kfield_given(k);
		snprintf(f, sizeof(f), "%s.%s", section, k->name);
		if (!df) {
			if (given)
				return bad(f, "a %s %s has no %s (%s %ss do)",
					   drv->kind, rname, k->name,
					   sv_drivers_list(cat, role, 0,
							   k->name, list,
							   sizeof(list)),
					   rname);
			continue;
		}
		if (!given && k->str && df->def) {
			*k->str = (char *)df->def;
			given = true;
		}
		bool need = (df->flags & SV_DRIVER_FIELD_REQUIRED) ||
			(bounded && (df->flags & SV_DRIVER_FIELD_BOUNDED));
		if (!given && need)
			return bad(f, "is required for a %s %s%s%s%s%s",
				   drv->kind, rname,
				   df->flags & SV_DRIVER_FIELD_REQUIRED
					   ? ""
					   : " in a bounded job",
				   df->what ? " (" : "",
				   df->what ? df->what : "",
				   df->what ? ")" : "");
		if (given && k->str && df->values &&
		    !one_of(*k->str, df->values))
			return bad(f, "unknown %s '%s' (expected %s)", k->name,
				   *k->str,
				   or_list(df->values, list, sizeof(list)));
	}
	return NULL;
}

/* The driver of a section's kind (the kind defaulted to kafka). */
static sv_error_t *find_driver(const sv_drivers_t *cat, sv_driver_role_t role,
			       const char *section, const char *kind,
			       const sv_driver_t **out)
{
	char f[192], list[160];
	const char *rname = role == SV_DRIVER_SOURCE ? "source" : "sink";
	snprintf(f, sizeof(f), "%s.kind", section);
	*out = sv_drivers_find(cat, role, kind);
	if (!*out)
		return bad(f, "unknown %s kind '%s' (expected %s)", rname, kind,
			   sv_drivers_list(cat, role, 0, NULL, list,
					   sizeof(list)));
	return NULL;
}

static sv_error_t *check_sink(const sv_drivers_t *cat, Streamvisor__Sink *s,
			      const char *name, bool bounded)
{
	char f[64];
	const sv_driver_t *drv;
	sv_error_t *err;
	DEFAULT_STR(s->kind, "kafka");
	DEFAULT_STR(s->format, "json");
	if ((err = find_driver(cat, SV_DRIVER_SINK, name, s->kind, &drv)))
		return err;
	if (!strcmp(name, "dead_letter") &&
	    !sv_driver_has(drv, SV_DRIVER_RAW)) {
		char list[160];
		return bad("dead_letter.kind",
			   "a %s sink takes no dead letters (raw payloads; "
			   "%s sinks do)",
			   s->kind,
			   sv_drivers_list(cat, SV_DRIVER_SINK, SV_DRIVER_RAW,
					   NULL, list, sizeof(list)));
	}
	snprintf(f, sizeof(f), "%s.format", name);
	if (strcmp(s->format, "json"))
		return bad(f, "unsupported output format '%s' (expected json)",
			   s->format);
	snprintf(f, sizeof(f), "%s.transaction_timeout_ms", name);
	if (s->transaction_timeout_ms < 0)
		return bad(f, "must be a positive number of milliseconds");
	kfield_t fields[] = {
		{"cluster", &s->cluster, NULL, 0},
		{"topic", &s->topic, NULL, 0},
		{"path", &s->path, NULL, 0},
		{"transaction_timeout_ms", NULL, &s->transaction_timeout_ms, 0},
	};
	return check_kind_fields(cat, SV_DRIVER_SINK, name, drv, fields,
				 sizeof(fields) / sizeof(fields[0]), bounded);
}

#define SV_MAX_PARALLELISM 256

/* parallelism and source.partitioned_by (docs/parallelism.md). Whether
 * parallelism fits the topic's partition count is checked when the job
 * starts, against the broker. */
static sv_error_t *check_parallelism(Streamvisor__JobSpec *js)
{
	Streamvisor__Source *s = js->source;
	if (js->parallelism == 0)
		js->parallelism = 1;
	if (js->parallelism < 0 || js->parallelism > SV_MAX_PARALLELISM)
		return bad("parallelism", "must be between 1 and %d",
			   SV_MAX_PARALLELISM);
	if (s->n_partitioned_by > 1)
		return bad("source.partitioned_by",
			   "names %zu columns; the Kafka key is one column",
			   s->n_partitioned_by);
	for (size_t i = 0; i < s->n_partitioned_by; i++) {
		bool found = false;
		for (size_t j = 0; j < js->n_schema; j++)
			if (!strcmp(js->schema[j]->name, s->partitioned_by[i]))
				found = true;
		if (!found)
			return bad("source.partitioned_by",
				   "unknown column '%s'", s->partitioned_by[i]);
	}
	if (s->n_partitioned_by && strcmp(s->kind, "kafka"))
		return bad("source.partitioned_by",
			   "is only for a kafka source");
	if (js->parallelism == 1)
		return NULL;
	if (strcmp(s->kind, "kafka"))
		return bad("parallelism",
			   "%d needs a kafka source (tasks are its "
			   "partitions)",
			   js->parallelism);
	if (strcmp(js->sink->kind, "kafka") && strcmp(js->sink->kind, "null"))
		return bad("parallelism",
			   "%d needs a kafka or null sink (sink kind '%s' "
			   "has one writer per job)",
			   js->parallelism, js->sink->kind);
	return NULL;
}

/* resources.memory_mb: each member needs at least SV_SPEC_MEMORY_MB_MIN
 * for its consumer's and producer's queues (kafka/client.c
 * sv_kafka_budget). */
static sv_error_t *check_resources(Streamvisor__JobSpec *js)
{
	const Streamvisor__Resources *r = js->resources;
	if (!r || !r->memory_mb)
		return NULL;
	int64_t min = (int64_t)SV_SPEC_MEMORY_MB_MIN *
		(js->parallelism > 1 ? js->parallelism : 1);
	if (r->memory_mb < min)
		return bad("resources.memory_mb",
			   "%lld is below the minimum %lld (%d MB per "
			   "member at parallelism %d)",
			   (long long)r->memory_mb, (long long)min,
			   SV_SPEC_MEMORY_MB_MIN,
			   js->parallelism > 1 ? js->parallelism : 1);
	if (r->memory_mb > SV_SPEC_MEMORY_MB_MAX)
		return bad("resources.memory_mb", "%lld is above %d MB",
			   (long long)r->memory_mb, SV_SPEC_MEMORY_MB_MAX);
	return NULL;
}

/* Defaults and checks of a source; prefix names it ("source",
 * "pipeline[2].join.source"). */
static sv_error_t *check_source(const sv_drivers_t *cat, Streamvisor__Source *s,
				const char *prefix, bool bounded)
{
	char f[192];
	const sv_driver_t *drv;
	sv_error_t *err;
	DEFAULT_STR(s->kind, "kafka");
	DEFAULT_STR(s->format, "json");
	if ((err = find_driver(cat, SV_DRIVER_SOURCE, prefix, s->kind, &drv)))
		return err;
	static const char *const formats[] = {"json", "csv", NULL};
	snprintf(f, sizeof(f), "%s.format", prefix);
	if (!one_of(s->format, formats))
		return bad(f,
			   "unknown format '%s' (expected json or "
			   "csv)",
			   s->format);
	if (bounded && !sv_driver_has(drv, SV_DRIVER_BOUNDED))
		return bad("mode", "a %s source cannot run a bounded job",
			   s->kind);
	/* not given is -1 in either encoding (JSON's default, protobuf's 0),
	 * so both spell the same plan */
	if (s->count == 0)
		s->count = -1;
	kfield_t fields[] = {
		{"cluster", &s->cluster, NULL, 0},
		{"topic", &s->topic, NULL, 0},
		{"start", &s->start, NULL, 0},
		{"generator", &s->generator, NULL, 0},
		{"count", NULL, &s->count, -1},
		{"rate_per_s", NULL, &s->rate_per_s, 0},
		{"seed", NULL, (int64_t *)&s->seed, 0},
	};
	if ((err = check_kind_fields(cat, SV_DRIVER_SOURCE, prefix, drv, fields,
				     sizeof(fields) / sizeof(fields[0]),
				     bounded)))
		return err;
	snprintf(f, sizeof(f), "%s.rate_per_s", prefix);
	if (s->rate_per_s > 1000000000LL)
		return bad(f,
			   "%lld is above the limit "
			   "of 1,000,000,000 records per second",
			   (long long)s->rate_per_s);
	return NULL;
}

/* Names and types of a schema; prefix "schema" or "pipeline[1].join.schema". */
static sv_error_t *check_fields(Streamvisor__Field **fields, size_t n,
				const char *prefix)
{
	for (size_t i = 0; i < n; i++) {
		char f[192];
		snprintf(f, sizeof(f), "%s[%zu].type", prefix, i);
		static const char *const types[] = {"bool",         "int64",
						    "float64",      "string",
						    "timestamp_ms", NULL};
		if (empty(fields[i]->name)) {
			snprintf(f, sizeof(f), "%s[%zu].name", prefix, i);
			return bad(f, "is required");
		}
		if (empty(fields[i]->type) || !one_of(fields[i]->type, types))
			return bad(f,
				   "unknown type '%s' (expected bool, int64, "
				   "float64, string or timestamp_ms)",
				   fields[i]->type ? fields[i]->type : "");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(fields[j]->name, fields[i]->name)) {
				snprintf(f, sizeof(f), "%s[%zu].name", prefix,
					 i);
				return bad(f, "duplicate column '%s'",
					   fields[i]->name);
			}
	}
	if (n == 0)
		return bad(prefix, "is required");
	return NULL;
}

/* An event_time's field must be a timestamp_ms or int64 column. */
static sv_error_t *check_event_time(const Streamvisor__EventTime *et,
				    Streamvisor__Field **fields, size_t n,
				    const char *prefix)
{
	char f[160];
	snprintf(f, sizeof(f), "%s.field", prefix);
	if (empty(et->field))
		return bad(f, "is required");
	int idx = -1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(fields[i]->name, et->field))
			idx = (int)i;
	if (idx < 0)
		return bad(f, "unknown column '%s'", et->field);
	const char *t = fields[idx]->type;
	if (strcmp(t, "timestamp_ms") && strcmp(t, "int64"))
		return bad(f,
			   "column '%s' is %s; expected "
			   "timestamp_ms or int64",
			   et->field, t);
	return NULL;
}

/* A join step: its own input, keys, kind and the type's parameters. */
static sv_error_t *check_join(const sv_drivers_t *cat, Streamvisor__JobSpec *js,
			      size_t i, Streamvisor__Join *j)
{
	char f[96], g[160];
	snprintf(f, sizeof(f), "pipeline[%zu].join", i);
#define JF(name) (snprintf(g, sizeof(g), "%s." name, f), g)
	static const char *const types[] = {"interval", "lookup", "hash", NULL};
	if (empty(j->type) || !one_of(j->type, types))
		return bad(JF("type"),
			   "unknown join type '%s' (expected interval, "
			   "lookup or hash)",
			   j->type ? j->type : "");
	DEFAULT_STR(j->kind, "inner");
	static const char *const kinds[] = {"inner", "left", NULL};
	if (!one_of(j->kind, kinds))
		return bad(JF("kind"),
			   "unknown join kind '%s' (expected inner or left)",
			   j->kind);
	bool lookup = !strcmp(j->type, "lookup");
	bool interval = !strcmp(j->type, "interval");
	if (lookup)
		DEFAULT_STR(j->time, "event");
	if (!empty(j->time) && !lookup)
		return bad(JF("time"), "only a lookup join has a time");
	static const char *const times[] = {"event", "processing", NULL};
	if (lookup && !one_of(j->time, times))
		return bad(JF("time"),
			   "unknown time '%s' (expected event or processing)",
			   j->time);
	bool event = interval || (lookup && !strcmp(j->time, "event"));
	if (!interval && (j->lower_ms || j->upper_ms))
		return bad(JF("lower_ms"), "only an interval join has bounds");
	if (interval && j->lower_ms > j->upper_ms)
		return bad(JF("lower_ms"),
			   "%lld must not exceed upper_ms (%lld)",
			   (long long)j->lower_ms, (long long)j->upper_ms);
	if (j->retention_ms && !(lookup && event))
		return bad(JF("retention_ms"),
			   "only an event-time lookup join has a retention");
	if (!strcmp(j->type, "hash") && strcmp(js->mode, "bounded"))
		return bad(JF("type"),
			   "a hash join reads both inputs to their end: it "
			   "needs mode 'bounded' (use interval or lookup for "
			   "a stream)");
	if (!j->source)
		return bad(JF("source"), "is required");
	sv_error_t *err;
	if ((err = check_source(cat, j->source, JF("source"),
				!strcmp(js->mode, "bounded"))))
		return err;
	/* both inputs' offsets go to the job's one consumer group */
	if (!empty(j->source->topic) && !empty(js->source->topic) &&
	    !empty(js->source->kind) &&
	    !strcmp(j->source->kind, js->source->kind) &&
	    !strcmp(j->source->topic, js->source->topic))
		return bad(JF("source.topic"),
			   "'%s' is the job's source topic: a join reads a "
			   "second topic (both inputs' offsets are committed "
			   "to the job's one consumer group)",
			   j->source->topic);
	/* a source that takes a start (its driver declares one) */
	if (lookup && !empty(j->source->start) &&
	    strcmp(j->source->start, "earliest"))
		return bad(JF("source.start"),
			   "a lookup join reads its table from the start "
			   "(earliest), not '%s'",
			   j->source->start);
	if ((err = check_fields(j->schema, j->n_schema, JF("schema"))))
		return err;
	if (j->n_on_left == 0 || j->n_on_left != j->n_on_right)
		return bad(JF("on"),
			   "expected as many left as right key columns, at "
			   "least one (got %zu and %zu)",
			   j->n_on_left, j->n_on_right);
	if (event && !js->event_time)
		return bad("event_time",
			   "is required by the %s join at pipeline[%zu] (its "
			   "left input's event time)",
			   j->type, i);
	if (event && !j->event_time)
		return bad(JF("event_time"),
			   "is required by an event-time %s join (its right "
			   "input's event time)",
			   j->type);
	if (j->event_time &&
	    (err = check_event_time(j->event_time, j->schema, j->n_schema,
				    JF("event_time"))))
		return err;
#undef JF
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
static sv_error_t *normalize(Streamvisor__JobSpec *js, const sv_drivers_t *cat)
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

	bool bounded = !strcmp(js->mode, "bounded");
	sv_error_t *err;
	if (!js->source)
		return bad("source", "is required");
	if ((err = check_source(cat, js->source, "source", bounded)) ||
	    (err = check_fields(js->schema, js->n_schema, "schema")))
		return err;

	if (!js->sink)
		return bad("sink", "is required");
	if ((err = check_sink(cat, js->sink, "sink", bounded)))
		return err;
	if (js->dead_letter &&
	    (err = check_sink(cat, js->dead_letter, "dead_letter", bounded)))
		return err;
	if (js->late_sink &&
	    (err = check_sink(cat, js->late_sink, "late_sink", bounded)))
		return err;

	int joins = 0;
	for (size_t i = 0; i < js->n_pipeline; i++) {
		Streamvisor__Step *st = js->pipeline[i];
		if (st->step_case != STREAMVISOR__STEP__STEP_JOIN)
			continue;
		if (joins++) {
			char f[64];
			snprintf(f, sizeof(f), "pipeline[%zu].join", i);
			return bad(f, "a job has at most one join step");
		}
		if ((err = check_join(cat, js, i, st->join)))
			return err;
	}
	for (size_t i = 0; i < js->n_pipeline; i++) {
		Streamvisor__Step *st = js->pipeline[i];
		if (st->step_case == STREAMVISOR__STEP__STEP_ORDER) {
			char f[64];
			snprintf(f, sizeof(f), "pipeline[%zu].order", i);
			if (!bounded)
				return bad(f,
					   "an order step needs mode "
					   "'bounded' (it sorts at the end of "
					   "input)");
			for (size_t j = i + 1; j < js->n_pipeline; j++)
				if (js->pipeline[j]->step_case !=
					    STREAMVISOR__STEP__STEP_SELECT &&
				    js->pipeline[j]->step_case !=
					    STREAMVISOR__STEP__STEP_FILTER)
					return bad(f,
						   "only select and filter "
						   "steps may follow an order "
						   "step");
		}
		if (st->step_case != STREAMVISOR__STEP__STEP_WINDOW)
			continue;
		Streamvisor__Window *w = st->window;
		char f[64];
		snprintf(f, sizeof(f), "pipeline[%zu].window", i);
		static const char *const wtypes[] = {"tumbling", "sliding",
						     "session", "global", NULL};
		if (empty(w->type) || !one_of(w->type, wtypes))
			return bad(
				f,
				"unknown window type '%s' (expected tumbling, "
				"sliding, session or global)",
				w->type ? w->type : "");
		if (!strcmp(w->type, "global")) {
			if (!bounded)
				return bad(f,
					   "a global window needs mode "
					   "'bounded' (it fires at the end of "
					   "input)");
			DEFAULT_STR(w->late, "drop");
			DEFAULT_STR(w->time, "event");
			continue;
		}
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
	if (js->event_time &&
	    (err = check_event_time(js->event_time, js->schema, js->n_schema,
				    "event_time")))
		return err;

	if (js->event_time) {
		const char *sc = js->event_time->watermark_scope;
		/* "job" is the default; kept empty so it does not change the
		 * plan id of specs written before the field existed */
		if (!empty(sc) && !strcmp(sc, "job"))
			js->event_time->watermark_scope = (char *)"";
		else if (!empty(sc) && strcmp(sc, "partition"))
			return bad("event_time.watermark_scope",
				   "unknown scope '%s' (expected job or "
				   "partition)",
				   sc);
	}
	if ((err = check_parallelism(js)) || (err = check_resources(js)))
		return err;

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
static sv_error_t *finish(Streamvisor__JobSpec *msg, const sv_drivers_t *cat,
			  sv_arena_t *arena, sv_jobspec_t **out)
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
	sv_error_t *err = NULL;
	json_t *coverage = NULL;
	if (msg->plan) {
		if (msg->source || msg->n_schema || msg->n_pipeline)
			return bad("plan",
				   "a job spec with a plan has no source, "
				   "schema or pipeline: the plan and its "
				   "bindings replace them");
		if (empty(msg->mode))
			msg->mode = "stream";
		coverage = json_array();
		if ((err = sv_substrait_translate(msg, arena, coverage))) {
			json_decref(coverage);
			return err;
		}
	}
	if ((err = normalize(msg, cat))) {
		json_decref(coverage);
		return err;
	}
	/* The plan id hashes the plan without the IncQL evidence: the client's
	 * plan identity and requirements are not what the job computes. */
	Streamvisor__Evidence *ev = msg->evidence;
	msg->evidence = NULL;
	/* nor the plan member: a Substrait plan's bytes differ between runs
	 * of the same producer; the plan id names the translated job */
	Streamvisor__SubstraitIngress *pl = msg->plan;
	msg->plan = NULL;
	/* parallelism is left out too: it is how the plan runs, and a change
	 * of it restores the same checkpoints regrouped */
	int32_t par = msg->parallelism;
	msg->parallelism = 0;
	/* and resources: what the job may use, not what it computes */
	Streamvisor__Resources *res = msg->resources;
	msg->resources = NULL;
	size_t hlen = streamvisor__job_spec__get_packed_size(msg);
	uint8_t *hbytes = sv_malloc(hlen ? hlen : 1);
	streamvisor__job_spec__pack(msg, hbytes);
	msg->evidence = ev;
	msg->plan = pl;
	msg->parallelism = par;
	msg->resources = res;
	sv_jobspec_t *spec = sv_calloc(1, sizeof(*spec));
	if (coverage) {
		spec->coverage_json = json_dumps(coverage, JSON_COMPACT);
		json_decref(coverage);
	}
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

/* The path ("sink.path", "pipeline[1].filter") of the first string value
 * holding a NUL byte (\u0000), written into path; false when none. Such a
 * string would be cut short in C: refused, naming the field, rather than
 * reaching a path or an expression silently truncated. */
static bool find_nul(json_t *v, char *path, size_t n)
{
	size_t len = strlen(path);
	if (json_is_string(v))
		return strlen(json_string_value(v)) != json_string_length(v);
	if (json_is_object(v)) {
		const char *k;
		json_t *e;
		json_object_foreach (v, k, e) {
			snprintf(path + len, n - len, "%s%s", len ? "." : "",
				 k);
			if (find_nul(e, path, n))
				return true;
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach (v, i, e) {
			snprintf(path + len, n - len, "[%zu]", i);
			if (find_nul(e, path, n))
				return true;
		}
	}
	path[len] = '\0';
	return false;
}

sv_error_t *sv_jobspec_parse_json(const char *text, size_t len,
				  const sv_drivers_t *drivers,
				  sv_jobspec_t **out)
{
	*out = NULL;
	json_error_t jerr;
	json_t *root = json_loadb(
		text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
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
	char nulpath[320] = "";
	if (find_nul(root, nulpath, sizeof(nulpath))) {
		json_decref(root);
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "%s holds a NUL byte (\\u0000)", nulpath),
			nulpath);
	}
	pctx_t c = {0};
	sv_arena_init(&c.arena);
	Streamvisor__JobSpec js = STREAMVISOR__JOB_SPEC__INIT;
	sv_error_t *err = NULL;
	if (!parse_root(&c, root, &js))
		err = c.err ? c.err
			    : sv_error_new(SV_ERR_SUBMISSION, "invalid spec");
	else
		err = finish(&js, drivers, &c.arena, out);
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
				   const sv_drivers_t *drivers,
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
		err = finish(msg, drivers, &arena, out);
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
	free(spec->coverage_json);
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

json_t *sv_jobspec_substrait_json(const sv_jobspec_t *spec)
{
	const Streamvisor__SubstraitIngress *pl = spec->msg->plan;
	if (!pl)
		return NULL;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "sha256",
			      pl->sha256 ? pl->sha256 : "", "producer",
			      pl->producer ? pl->producer : "", "version",
			      pl->version ? pl->version : "", "encoding",
			      pl->from_json ? "json" : "binary");
	/* IncQL writes its crate version (0.63) for wire schema 0.85 */
	if (pl->producer && !strcmp(pl->producer, "incql-rfc002") &&
	    pl->version && !strncmp(pl->version, "0.63.", 5))
		json_object_set_new(o, "wire_version", json_string("0.85.0"));
	json_t *reg = empty(pl->registry_json)
		? NULL
		: json_loads(pl->registry_json, JSON_DECODE_ANY, NULL);
	json_object_set_new(o, "registry", reg ? reg : json_null());
	return o;
}

/* The plan member as submitted (binary as base64). */
static json_t *plan_json(const Streamvisor__SubstraitIngress *pl)
{
	json_t *o = json_object();
	char *b64 = sv_b64_encode(pl->substrait.data, pl->substrait.len);
	json_object_set_new(o, "substrait_base64", json_string(b64));
	free(b64);
	json_t *bs = json_object();
	for (size_t i = 0; i < pl->n_bindings; i++) {
		const Streamvisor__SubstraitBinding *b = pl->bindings[i];
		json_t *so = json_object();
		const Streamvisor__Source *s = b->source;
		put_str(so, "kind", s->kind);
		put_str(so, "cluster", s->cluster);
		put_str(so, "topic", s->topic);
		put_str(so, "format", s->format);
		put_str(so, "start", s->start);
		put_str(so, "generator", s->generator);
		if (s->count)
			json_object_set_new(so, "count",
					    json_integer(s->count));
		if (s->rate_per_s)
			json_object_set_new(so, "rate_per_s",
					    json_integer(s->rate_per_s));
		if (s->seed)
			json_object_set_new(so, "seed",
					    json_integer((json_int_t)s->seed));
		if (b->n_columns) {
			json_t *cm = json_object();
			for (size_t j = 0; j < b->n_columns; j++)
				json_object_set_new(
					cm, b->columns[j]->plan_name,
					json_string(b->columns[j]->field));
			json_object_set_new(so, "columns", cm);
		}
		json_object_set_new(bs, b->name, so);
	}
	json_object_set_new(o, "bindings", bs);
	if (!empty(pl->registry_json)) {
		json_t *reg = json_loads(pl->registry_json, JSON_DECODE_ANY,
					 NULL);
		if (reg)
			json_object_set_new(o, "registry", reg);
	}
	if (pl->dedup_within_ms)
		json_object_set_new(o, "dedup_within_ms",
				    json_integer(pl->dedup_within_ms));
	if (pl->allowed_lateness_ms || !empty(pl->late)) {
		json_t *w = json_object();
		if (pl->allowed_lateness_ms)
			json_object_set_new(
				w, "allowed_lateness_ms",
				json_integer(pl->allowed_lateness_ms));
		put_str(w, "late", pl->late);
		json_object_set_new(o, "windows", w);
	}
	return o;
}

static char *spec_text(const sv_jobspec_t *spec, bool translated);

char *sv_jobspec_to_json(const sv_jobspec_t *spec)
{
	return spec_text(spec, false);
}

char *sv_jobspec_translated_json(const sv_jobspec_t *spec)
{
	return spec_text(spec, true);
}

static json_t *source_json(const Streamvisor__Source *s)
{
	json_t *src = json_object();
	put_str(src, "kind", s->kind);
	put_str(src, "cluster", s->cluster);
	put_str(src, "topic", s->topic);
	put_str(src, "format", s->format);
	put_str(src, "start", s->start);
	put_str(src, "generator", s->generator);
	if (s->n_partitioned_by)
		json_object_set_new(
			src, "partitioned_by",
			strlist(s->partitioned_by, s->n_partitioned_by));
	/* the fields the source's driver took (normalize refused the rest) */
	if (s->count > 0)
		json_object_set_new(src, "count", json_integer(s->count));
	if (s->rate_per_s)
		json_object_set_new(src, "rate_per_s",
				    json_integer(s->rate_per_s));
	if (s->seed)
		json_object_set_new(src, "seed",
				    json_integer((json_int_t)s->seed));
	return src;
}

static json_t *fields_json(Streamvisor__Field *const *fields, size_t n)
{
	json_t *sch = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(sch,
				      json_pack("{s:s, s:s, s:b}", "name",
						fields[i]->name, "type",
						fields[i]->type, "nullable",
						!fields[i]->not_null));
	return sch;
}

static json_t *event_time_json(const Streamvisor__EventTime *et)
{
	json_t *o = json_pack("{s:s, s:I, s:I}", "field", et->field,
			      "max_out_of_orderness_ms",
			      (json_int_t)et->max_out_of_orderness_ms,
			      "idle_timeout_ms",
			      (json_int_t)et->idle_timeout_ms);
	if (!empty(et->watermark_scope))
		put_str(o, "watermark_scope", et->watermark_scope);
	return o;
}

static json_t *join_json(const Streamvisor__Join *j)
{
	json_t *o = json_object();
	put_str(o, "type", j->type);
	json_object_set_new(o, "source", source_json(j->source));
	json_object_set_new(o, "schema", fields_json(j->schema, j->n_schema));
	if (j->event_time)
		json_object_set_new(o, "event_time",
				    event_time_json(j->event_time));
	json_object_set_new(o, "on",
			    json_pack("{s:o, s:o}", "left",
				      strlist(j->on_left, j->n_on_left),
				      "right",
				      strlist(j->on_right, j->n_on_right)));
	put_str(o, "kind", j->kind);
	if (j->n_take) {
		json_t *t = json_object();
		for (size_t i = 0; i < j->n_take; i++)
			json_object_set_new(t, j->take[i]->name,
					    json_string(j->take[i]->column));
		json_object_set_new(o, "take", t);
	}
	if (!strcmp(j->type, "interval")) {
		json_object_set_new(o, "lower_ms", json_integer(j->lower_ms));
		json_object_set_new(o, "upper_ms", json_integer(j->upper_ms));
	}
	put_str(o, "time", j->time);
	if (j->retention_ms)
		json_object_set_new(o, "retention_ms",
				    json_integer(j->retention_ms));
	if (j->max_state_rows)
		json_object_set_new(o, "max_state_rows",
				    json_integer(j->max_state_rows));
	if (j->max_state_bytes)
		json_object_set_new(o, "max_state_bytes",
				    json_integer(j->max_state_bytes));
	return o;
}

static char *spec_text(const sv_jobspec_t *spec, bool translated)
{
	const Streamvisor__JobSpec *js = spec->msg;
	json_t *o = json_object();
	put_str(o, "name", js->name);
	put_str(o, "mode", js->mode);
	bool submitted_plan = js->plan && !translated;
	if (submitted_plan)
		json_object_set_new(o, "plan", plan_json(js->plan));
	else if (js->plan)
		json_object_set_new(o, "substrait",
				    sv_jobspec_substrait_json(spec));
	if (!submitted_plan) {
		json_object_set_new(o, "source", source_json(js->source));
		json_object_set_new(o, "schema",
				    fields_json(js->schema, js->n_schema));
	}
	if (js->event_time)
		json_object_set_new(o, "event_time",
				    event_time_json(js->event_time));
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
		case STREAMVISOR__STEP__STEP_ORDER: {
			const Streamvisor__Order *od = st->order;
			json_t *keys = json_array();
			for (size_t j = 0; j < od->n_keys; j++)
				json_array_append_new(
					keys,
					json_pack("{s:s, s:b, s:b}", "expr",
						  od->keys[j]->expr, "desc",
						  od->keys[j]->desc,
						  "nulls_first",
						  od->keys[j]->nulls_first));
			json_object_set_new(
				step, "order",
				json_pack("{s:o, s:I, s:I}", "keys", keys,
					  "limit", (json_int_t)od->limit,
					  "offset", (json_int_t)od->offset));
			break;
		}
		case STREAMVISOR__STEP__STEP_JOIN:
			json_object_set_new(step, "join", join_json(st->join));
			break;
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
	if (!submitted_plan)
		json_object_set_new(o, "pipeline", pl);
	else
		json_decref(pl);
	json_object_set_new(o, "sink", sink_json(js->sink));
	if (js->dead_letter)
		json_object_set_new(o, "dead_letter",
				    sink_json(js->dead_letter));
	if (js->late_sink)
		json_object_set_new(o, "late_sink", sink_json(js->late_sink));
	put_str(o, "delivery", js->delivery);
	put_str(o, "on_invalid", js->on_invalid);
	json_object_set_new(o, "parallelism", json_integer(js->parallelism));
	if (js->resources && js->resources->memory_mb)
		json_object_set_new(
			o, "resources",
			json_pack("{s:I}", "memory_mb",
				  (json_int_t)js->resources->memory_mb));
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
