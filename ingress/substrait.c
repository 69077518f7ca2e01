/* substrait.c — translate a Substrait plan into the canonical JobSpec.
 *
 * The plan is checked on the wire (depth cap, well-formedness), unpacked,
 * walked for unknown fields, and then translated relation by relation from
 * the read root up. Each relation's output is a list of columns, each an
 * expression text over the current pipeline stage; FilterRel and
 * AggregateRel add pipeline steps, ProjectRel and emit only compose texts,
 * and the root adds the select that names the output after RelRoot.names.
 * Expressions become streamvisor expression text, parsed later by the
 * existing parser (ingress/plan.c), so a plan means exactly what the
 * translated spec shown by dry_run says. Functions are resolved by
 * normalized name (signature suffix dropped, lower case) within the
 * namespaces of the producers we know: DataFusion (no URN), the standard
 * io.substrait extensions (Isthmus) and IncQL's URN. Everything else is a
 * 422 coverage error naming the relation, function or type; nothing is
 * ignored silently. Streaming facts Substrait lacks (event time, lateness,
 * state bounds) come from the job spec around the plan. */
#define _GNU_SOURCE
#include "ingress/substrait.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingress/coverage.h"
#include "substrait/plan.pb-c.h"

#define NO_URN 4294967295u
#define INCQL_URN "https://incql.io/extensions/v0.1/functions.yaml"
#define BIG_WITHIN_MS ((int64_t)1 << 60)

typedef struct col {
	char *text; /* expression over the current stage */
	const char *type; /* streamvisor type name, or NULL if unknown */
} col_t;

typedef struct cols {
	col_t *v;
	size_t n;
} cols_t;

typedef struct fn {
	uint32_t anchor;
	const char *name; /* normalized */
	const char *raw;
} fn_t;

typedef struct tctx {
	Streamvisor__JobSpec *js;
	sv_arena_t *arena;
	json_t *coverage;
	json_t *partials; /* capabilities already in coverage */
	sv_error_t *err;
	fn_t *fns;
	size_t nfns;
	Streamvisor__Step **steps;
	size_t nsteps, capsteps;
	bool at_source; /* no schema-changing step yet */
	bool bounded;
	const char *event_col; /* event_time.field, or NULL */
	bool *used; /* per binding: a read root uses it */
	bool ordered; /* an order step exists: only stateless steps after */
	int nagg; /* aggregates translated (for unique names) */
	int nsel;
} tctx_t;

/* ---- small helpers ---- */

static char *adup(tctx_t *c, const char *s)
{
	return sv_arena_memdup(c->arena, s, strlen(s) + 1);
}

static void *anew(tctx_t *c, size_t n)
{
	void *p = sv_arena_alloc(c->arena, n ? n : 1);
	memset(p, 0, n ? n : 1);
	return p;
}

static char *afmt(tctx_t *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static char *afmt(tctx_t *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	char *r = adup(c, s);
	free(s);
	return r;
}

/* A malformed plan (400). */
static bool bad(tctx_t *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static bool bad(tctx_t *c, const char *fmt, ...)
{
	if (c->err)
		return false;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->err = sv_error_new(SV_ERR_SUBMISSION, "substrait plan: %s", msg);
	sv_error_set_field(c->err, "plan.substrait");
	return false;
}

/* Something this build does not run (422 with its coverage record). */
static bool refuse(tctx_t *c, const char *cap, const char *reason)
{
	if (c->err)
		return false;
	char msg[1024];
	snprintf(msg, sizeof(msg),
		 "substrait plan needs '%s', which is not "
		 "covered: %s",
		 cap, reason);
	c->err = sv_coverage_refuse(cap, reason, "plan.substrait", msg);
	return false;
}

static void partial(tctx_t *c, const char *cap, const char *reason)
{
	if (!c->coverage || json_object_get(c->partials, cap))
		return; /* one record per capability, whatever its shape */
	json_object_set_new(c->partials, cap, json_true());
	json_array_append_new(c->coverage,
			      sv_coverage_record(cap, "partial", reason));
}

static Streamvisor__Step *add_step(tctx_t *c)
{
	if (c->nsteps == c->capsteps) {
		size_t cap = c->capsteps ? 2 * c->capsteps : 8;
		Streamvisor__Step **n = anew(c, cap * sizeof(*n));
		if (c->nsteps)
			memcpy(n, c->steps, c->nsteps * sizeof(*n));
		c->steps = n;
		c->capsteps = cap;
	}
	Streamvisor__Step *s = anew(c, sizeof(*s));
	streamvisor__step__init(s);
	c->steps[c->nsteps++] = s;
	return s;
}

/* s between q quotes, each q inside doubled (streamvisor's expression
 * syntax for column names and string literals alike). */
static char *quoted(tctx_t *c, const char *s, char q)
{
	sv_buf_t b;
	sv_buf_init(&b);
	sv_buf_putc(&b, q);
	for (const char *p = s; *p; p++) {
		if (*p == q)
			sv_buf_putc(&b, q);
		sv_buf_putc(&b, *p);
	}
	sv_buf_putc(&b, q);
	char *r = adup(c, b.data);
	sv_buf_release(&b);
	return r;
}

static char *quote_col(tctx_t *c, const char *name)
{
	return quoted(c, name, '`');
}

static char *quote_str(tctx_t *c, const char *s)
{
	return quoted(c, s, '\'');
}

/* If text is exactly one backticked column, its name; else NULL. */
static char *plain_col(tctx_t *c, const char *text)
{
	size_t n = strlen(text);
	if (n < 3 || text[0] != '`' || text[n - 1] != '`')
		return NULL;
	sv_buf_t b;
	sv_buf_init(&b);
	for (size_t i = 1; i + 1 < n; i++) {
		if (text[i] == '`') {
			if (text[i + 1] != '`' || i + 2 >= n) {
				sv_buf_release(&b);
				return NULL;
			}
			i++;
		}
		sv_buf_putc(&b, text[i]);
	}
	char *r = adup(c, b.data);
	sv_buf_release(&b);
	return r;
}

static const char *oneof_name(const ProtobufCMessageDescriptor *d, unsigned id)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field(d, id);
	return f ? f->name : "unset";
}

/* ---- types ---- */

static const char *sv_type_of(tctx_t *c, const Substrait__Type *t,
			      bool *nullable)
{
	if (!t)
		return bad(c, "a type is missing"), NULL;
	Substrait__Type__Nullability nl =
		SUBSTRAIT__TYPE__NULLABILITY__NULLABILITY_NULLABLE;
	const char *r = NULL;
	switch (t->kind_case) {
	case SUBSTRAIT__TYPE__KIND_BOOL:
		nl = t->bool_->nullability;
		r = "bool";
		break;
	case SUBSTRAIT__TYPE__KIND_I8:
		nl = t->i8->nullability;
		r = "int64";
		break;
	case SUBSTRAIT__TYPE__KIND_I16:
		nl = t->i16->nullability;
		r = "int64";
		break;
	case SUBSTRAIT__TYPE__KIND_I32:
		nl = t->i32->nullability;
		r = "int64";
		break;
	case SUBSTRAIT__TYPE__KIND_I64:
		nl = t->i64->nullability;
		r = "int64";
		break;
	case SUBSTRAIT__TYPE__KIND_FP32:
		nl = t->fp32->nullability;
		r = "float64";
		break;
	case SUBSTRAIT__TYPE__KIND_FP64:
		nl = t->fp64->nullability;
		r = "float64";
		break;
	case SUBSTRAIT__TYPE__KIND_STRING:
		nl = t->string->nullability;
		r = "string";
		break;
	case SUBSTRAIT__TYPE__KIND_VARCHAR:
		nl = t->varchar->nullability;
		r = "string";
		break;
	case SUBSTRAIT__TYPE__KIND_PRECISION_TIMESTAMP:
		nl = t->precision_timestamp->nullability;
		r = "timestamp_ms";
		break;
	case SUBSTRAIT__TYPE__KIND_PRECISION_TIMESTAMP_TZ:
		nl = t->precision_timestamp_tz->nullability;
		r = "timestamp_ms";
		break;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	case SUBSTRAIT__TYPE__KIND_TIMESTAMP:
		nl = t->timestamp->nullability;
		r = "timestamp_ms";
		break;
	case SUBSTRAIT__TYPE__KIND_TIMESTAMP_TZ:
		nl = t->timestamp_tz->nullability;
		r = "timestamp_ms";
		break;
#pragma GCC diagnostic pop
	default: {
		char cap[96];
		snprintf(
			cap, sizeof(cap), "substrait_type:%s",
			oneof_name(&substrait__type__descriptor, t->kind_case));
		refuse(c, cap,
		       "streamvisor has bool, int64, float64, string and "
		       "timestamp_ms; this type has no exact mapping");
		return NULL;
	}
	}
	if (nullable)
		*nullable = nl !=
			SUBSTRAIT__TYPE__NULLABILITY__NULLABILITY_REQUIRED;
	return r;
}

/* ---- functions ---- */

/* The declared function of anchor ref, or NULL. */
static const fn_t *lookup_fn(const tctx_t *c, uint32_t ref)
{
	for (size_t i = 0; i < c->nfns; i++)
		if (c->fns[i].anchor == ref)
			return &c->fns[i];
	return NULL;
}

/* As lookup_fn; an undeclared anchor is a malformed plan. */
static const fn_t *find_fn(tctx_t *c, uint32_t ref)
{
	const fn_t *fn = lookup_fn(c, ref);
	if (!fn)
		bad(c, "function reference %u has no extension declaration",
		    ref);
	return fn;
}

static bool known_urn(const char *urn)
{
	return !strncmp(urn, "extension:io.substrait:functions_", 33) ||
		!strcmp(urn, INCQL_URN);
}

static bool read_extensions(tctx_t *c, const Substrait__Plan *p)
{
	c->fns = anew(c, (p->n_extensions + 1) * sizeof(fn_t));
	for (size_t i = 0; i < p->n_extensions; i++) {
		const Substrait__Extensions__SimpleExtensionDeclaration *d =
			p->extensions[i];
		if (d->mapping_type_case !=
		    SUBSTRAIT__EXTENSIONS__SIMPLE_EXTENSION_DECLARATION__MAPPING_TYPE_EXTENSION_FUNCTION)
			continue; /* types and variations: refused where used */
		const Substrait__Extensions__SimpleExtensionDeclaration__ExtensionFunction
			*f = d->extension_function;
		const char *urn = NULL;
		if (f->extension_urn_reference != NO_URN) {
			for (size_t k = 0; k < p->n_extension_urns; k++)
				if (p->extension_urns[k]->extension_urn_anchor ==
				    f->extension_urn_reference)
					urn = p->extension_urns[k]->urn;
			if (!urn && p->n_extension_urns)
				return bad(c,
					   "function '%s' refers to extension "
					   "URN anchor %u, which is not "
					   "declared",
					   f->name, f->extension_urn_reference);
		}
		char norm[128];
		size_t j = 0;
		for (const char *q = f->name; *q && *q != ':' && j + 1 < 128;
		     q++)
			norm[j++] = (char)tolower((unsigned char)*q);
		norm[j] = '\0';
		if (urn && !known_urn(urn)) {
			char cap[160];
			snprintf(cap, sizeof(cap), "substrait_function:%s",
				 norm);
			char why[400];
			snprintf(why, sizeof(why),
				 "extension URN '%s' is not one this build "
				 "maps (none for DataFusion, "
				 "extension:io.substrait:functions_*, %s)",
				 urn, INCQL_URN);
			return refuse(c, cap, why);
		}
		for (size_t k = 0; k < c->nfns; k++)
			if (c->fns[k].anchor == f->function_anchor)
				return bad(c,
					   "function anchor %u is declared "
					   "twice",
					   f->function_anchor);
		fn_t *e = &c->fns[c->nfns++];
		e->anchor = f->function_anchor;
		e->name = adup(c, norm);
		e->raw = f->name;
	}
	return true;
}

/* Options: only IncQL's metadata that does not change results. */
static bool check_options(tctx_t *c, const char *fname, size_t n,
			  Substrait__FunctionOption *const *opts)
{
	for (size_t i = 0; i < n; i++) {
		const char *o = opts[i]->name;
		if (!strcmp(o, "incql_output_name"))
			continue;
		if (!strcmp(o, "null_treatment") && opts[i]->n_preference &&
		    !strcmp(opts[i]->preference[0], "respect_nulls"))
			continue;
		char cap[160];
		snprintf(cap, sizeof(cap), "function_option:%s", o);
		char why[256];
		snprintf(why, sizeof(why),
			 "option '%s' of '%s' has no streamvisor meaning", o,
			 fname);
		return refuse(c, cap, why);
	}
	return true;
}

/* ---- expressions ---- */

static char *rex(tctx_t *c, const Substrait__Expression *e, const cols_t *in,
		 int depth);

static const Substrait__Expression *arg_value(tctx_t *c,
					      Substrait__FunctionArgument *a)
{
	if (a->arg_type_case != SUBSTRAIT__FUNCTION_ARGUMENT__ARG_TYPE_VALUE) {
		bad(c, "function arguments of kind '%s' are not supported",
		    oneof_name(&substrait__function_argument__descriptor,
			       a->arg_type_case));
		return NULL;
	}
	return a->value;
}

static char **args_text(tctx_t *c, size_t n, Substrait__FunctionArgument **a,
			const cols_t *in, int depth)
{
	char **r = anew(c, (n + 1) * sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		const Substrait__Expression *v = arg_value(c, a[i]);
		if (!v || !(r[i] = rex(c, v, in, depth + 1)))
			return NULL;
	}
	return r;
}

static const char *literal_string(const Substrait__Expression *e)
{
	if (!e || e->rex_type_case != SUBSTRAIT__EXPRESSION__REX_TYPE_LITERAL)
		return NULL;
	const Substrait__Expression__Literal *l = e->literal;
	if (l->literal_type_case ==
	    SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_STRING)
		return l->string;
	if (l->literal_type_case ==
	    SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_VAR_CHAR)
		return l->var_char->value;
	return NULL;
}

static bool literal_is_null(const Substrait__Expression *e)
{
	return e &&
		e->rex_type_case == SUBSTRAIT__EXPRESSION__REX_TYPE_LITERAL &&
		e->literal->literal_type_case ==
		SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_NULL;
}

static char *fp_text(tctx_t *c, double d)
{
	if (isnan(d))
		return adup(c, "cast('NaN' as float64)");
	if (isinf(d))
		return adup(c,
			    d > 0 ? "cast('Infinity' as float64)"
				  : "cast('-Infinity' as float64)");
	char b[64];
	snprintf(b, sizeof(b), "%.17g", d);
	if (!strpbrk(b, ".e"))
		strcat(b, ".0");
	return d < 0 || (d == 0 && signbit(d)) ? afmt(c, "(%s)", b)
					       : adup(c, b);
}

/* Timestamp value of precision p (digits after the second) in ms, exact. */
static bool ts_to_ms(tctx_t *c, int64_t v, int p, int64_t *ms)
{
	if (p < 0 || p > 9)
		return bad(c, "timestamp precision %d", p);
	if (p >= 3) {
		int64_t div = 1;
		for (int i = 3; i < p; i++)
			div *= 10;
		if (v % div)
			return refuse(c, "substrait_literal:sub_ms_timestamp",
				      "streamvisor timestamps are "
				      "milliseconds; this literal has digits "
				      "below the millisecond");
		*ms = v / div;
	} else {
		int64_t mul = 1;
		for (int i = p; i < 3; i++)
			mul *= 10;
		*ms = v * mul;
	}
	return true;
}

static char *literal(tctx_t *c, const Substrait__Expression__Literal *l)
{
	int64_t ms = 0;
	bool nl;
	switch (l->literal_type_case) {
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_BOOLEAN:
		return adup(c, l->boolean ? "true" : "false");
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_I8:
		return afmt(c, l->i8 < 0 ? "(%d)" : "%d", l->i8);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_I16:
		return afmt(c, l->i16 < 0 ? "(%d)" : "%d", l->i16);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_I32:
		return afmt(c, l->i32 < 0 ? "(%d)" : "%d", l->i32);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_I64:
		return afmt(c, l->i64 < 0 ? "(%" PRId64 ")" : "%" PRId64,
			    l->i64);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_FP32:
		return fp_text(c, (double)l->fp32);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_FP64:
		return fp_text(c, l->fp64);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_STRING:
		return quote_str(c, l->string);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_VAR_CHAR:
		return quote_str(c, l->var_char->value);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_PRECISION_TIMESTAMP:
		if (!ts_to_ms(c, l->precision_timestamp->value,
			      l->precision_timestamp->precision, &ms))
			return NULL;
		return afmt(c, "cast(%" PRId64 " as timestamp_ms)", ms);
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_PRECISION_TIMESTAMP_TZ:
		if (!ts_to_ms(c, l->precision_timestamp_tz->value,
			      l->precision_timestamp_tz->precision, &ms))
			return NULL;
		return afmt(c, "cast(%" PRId64 " as timestamp_ms)", ms);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_TIMESTAMP:
		if (!ts_to_ms(c, l->timestamp, 6, &ms))
			return NULL;
		return afmt(c, "cast(%" PRId64 " as timestamp_ms)", ms);
#pragma GCC diagnostic pop
	case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_NULL: {
		const char *t = sv_type_of(c, l->null, &nl);
		return t ? afmt(c, "cast(null as %s)", t) : NULL;
	}
	default: {
		char cap[96];
		snprintf(cap, sizeof(cap), "substrait_literal:%s",
			 oneof_name(&substrait__expression__literal__descriptor,
				    l->literal_type_case));
		refuse(c, cap,
		       "no streamvisor type holds this literal exactly");
		return NULL;
	}
	}
}

typedef struct fmap {
	const char *name;
	const char *op; /* infix operator, or function name */
	int kind; /* 0 infix (n-ary fold), 1 prefix unary, 2 postfix, 3 call */
	const char *partial; /* reason when semantics differ, or NULL */
} fmap_t;

static const fmap_t scalar_map[] = {
	{"and", "AND", 0, NULL},
	{"or", "OR", 0, NULL},
	{"not", "NOT ", 1, NULL},
	{"equal", "==", 0, NULL},
	{"not_equal", "!=", 0, NULL},
	{"lt", "<", 0, NULL},
	{"gt", ">", 0, NULL},
	{"lte", "<=", 0, NULL},
	{"gte", ">=", 0, NULL},
	{"is_null", " IS NULL", 2, NULL},
	{"is_not_null", " IS NOT NULL", 2, NULL},
	{"add", "+", 0,
	 "int64 overflow gives null in streamvisor; DataFusion wraps"},
	{"subtract", "-", 0,
	 "int64 overflow gives null in streamvisor; DataFusion wraps"},
	{"multiply", "*", 0,
	 "int64 overflow gives null in streamvisor; DataFusion wraps"},
	{"divide", "/", 0,
	 "division by zero gives null in streamvisor; DataFusion raises an "
	 "error"},
	{"modulus", "%", 0,
	 "x % 0 gives null in streamvisor; DataFusion raises an error"},
	{"negate", "-", 1,
	 "-(-2^63) gives null in streamvisor; DataFusion wraps"},
	{"abs", "abs", 3, NULL},
	{"ceil", "ceil", 3, NULL},
	{"floor", "floor", 3, NULL},
	{"sqrt", "sqrt", 3, NULL},
	{"round", "round", 3, NULL},
	{"lower", "lower", 3,
	 "ASCII only in streamvisor; DataFusion maps Unicode case"},
	{"upper", "upper", 3,
	 "ASCII only in streamvisor; DataFusion maps Unicode case"},
	{"substring", "substr", 3, NULL},
	{"substr", "substr", 3, NULL},
	{"char_length", "length", 3, NULL},
	{"character_length", "length", 3, NULL},
	{"length", "length", 3, NULL},
	{"trim", "trim", 3,
	 "streamvisor strips all ASCII whitespace, DataFusion only spaces"},
	{"btrim", "trim", 3,
	 "streamvisor strips all ASCII whitespace, DataFusion only spaces"},
	{"ltrim", "ltrim", 3,
	 "streamvisor strips all ASCII whitespace, DataFusion only spaces"},
	{"rtrim", "rtrim", 3,
	 "streamvisor strips all ASCII whitespace, DataFusion only spaces"},
	{"str_concat", "concat", 3, NULL},
	{"replace", "replace", 3, NULL},
	{"starts_with", "starts_with", 3, NULL},
	{"ends_with", "ends_with", 3, NULL},
	{"contains", "contains", 3, NULL},
	{"coalesce", "coalesce", 3, NULL},
	{"nullif", "nullif", 3, NULL},
};

static const fmap_t *lookup(const char *name, const fmap_t *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

static char *unknown_fn(tctx_t *c, const char *name, const char *why)
{
	char cap[160];
	snprintf(cap, sizeof(cap), "substrait_function:%s", name);
	refuse(c, cap, why);
	return NULL;
}

/* like(s, pattern[, escape]) for the shapes the registry has. */
static char *like_text(tctx_t *c, char **a, size_t n,
		       Substrait__FunctionArgument **args)
{
	const char *p = n >= 2 ? literal_string(arg_value(c, args[1])) : NULL;
	if (n == 3 && !literal_is_null(arg_value(c, args[2])) &&
	    !literal_string(arg_value(c, args[2])))
		p = NULL;
	if (!p)
		return unknown_fn(c, "like",
				  "only a constant pattern is covered");
	size_t len = strlen(p);
	bool lead = len && p[0] == '%';
	bool trail = len > (size_t)lead && p[len - 1] == '%';
	size_t s = lead, e = len - trail;
	for (size_t i = s; i < e; i++)
		if (p[i] == '%' || p[i] == '_' || p[i] == '\\')
			return unknown_fn(c, "like",
					  "only 'lit', 'lit%', '%lit' and "
					  "'%lit%' patterns are covered");
	char *lit = anew(c, e - s + 1);
	memcpy(lit, p + s, e - s);
	char *q = quote_str(c, lit);
	const char *f = lead && trail ? "contains"
		: lead                ? "ends_with"
		: trail               ? "starts_with"
				      : NULL;
	if (!f)
		return afmt(c, "(%s == %s)", a[0], q);
	return afmt(c, "%s(%s, %s)", f, a[0], q);
}

static char *scalar(tctx_t *c, const Substrait__Expression__ScalarFunction *f,
		    const cols_t *in, int depth)
{
	const fn_t *fn = find_fn(c, f->function_reference);
	if (!fn || !check_options(c, fn->name, f->n_options, f->options))
		return NULL;
	size_t n = f->n_arguments;
	if (!strcmp(fn->name, "date_bin") || !strcmp(fn->name, "date_trunc"))
		return unknown_fn(c, fn->name,
				  "covered only as the grouping expression of "
				  "a tumbling window");
	char **a = args_text(c, n, f->arguments, in, depth);
	if (!a)
		return NULL;
	if (!strcmp(fn->name, "like"))
		return like_text(c, a, n, f->arguments);
	if (!strcmp(fn->name, "concat")) {
		/* DataFusion's concat skips nulls; ours is strict */
		sv_buf_t b;
		sv_buf_init(&b);
		sv_buf_puts(&b, "concat(");
		for (size_t i = 0; i < n; i++)
			sv_buf_printf(&b, "%scoalesce(cast(%s as string), '')",
				      i ? ", " : "", a[i]);
		sv_buf_puts(&b, ")");
		char *r = adup(c, b.data);
		sv_buf_release(&b);
		return n ? r : unknown_fn(c, "concat", "no arguments");
	}
	const fmap_t *m = lookup(fn->name, scalar_map,
				 SV_ARRAY_LEN(scalar_map));
	if (!m) {
		char why[256];
		snprintf(why, sizeof(why),
			 "'%s' has no equivalent in the expression registry",
			 fn->raw);
		return unknown_fn(c, fn->name, why);
	}
	if (m->partial) {
		char cap[160];
		snprintf(cap, sizeof(cap), "substrait_function:%s", fn->name);
		partial(c, cap, m->partial);
	}
	sv_buf_t b;
	sv_buf_init(&b);
	switch (m->kind) {
	case 0:
		if (n < 2) {
			sv_buf_release(&b);
			return bad(c, "'%s' needs two arguments", fn->raw),
			       NULL;
		}
		sv_buf_putc(&b, '(');
		for (size_t i = 0; i < n; i++)
			sv_buf_printf(&b, "%s%s", i ? " " : "", a[i]),
				i + 1 < n ? sv_buf_printf(&b, " %s", m->op)
					  : (void)0;
		sv_buf_putc(&b, ')');
		break;
	case 1:
	case 2:
		if (n != 1) {
			sv_buf_release(&b);
			return bad(c, "'%s' needs one argument", fn->raw), NULL;
		}
		if (m->kind == 1)
			sv_buf_printf(&b, "(%s%s)", m->op, a[0]);
		else
			sv_buf_printf(&b, "(%s%s)", a[0], m->op);
		break;
	default:
		if (!strcmp(m->op, "trim") && n != 1) {
			sv_buf_release(&b);
			return unknown_fn(c, fn->name,
					  "only trimming whitespace (one "
					  "argument) is covered");
		}
		sv_buf_printf(&b, "%s(", m->op);
		for (size_t i = 0; i < n; i++)
			sv_buf_printf(&b, "%s%s", i ? ", " : "", a[i]);
		sv_buf_putc(&b, ')');
	}
	char *r = adup(c, b.data);
	sv_buf_release(&b);
	return r;
}

static char *field_ref(tctx_t *c,
		       const Substrait__Expression__FieldReference *r,
		       const cols_t *in)
{
	if (r->reference_type_case !=
		    SUBSTRAIT__EXPRESSION__FIELD_REFERENCE__REFERENCE_TYPE_DIRECT_REFERENCE ||
	    r->direct_reference->reference_type_case !=
		    SUBSTRAIT__EXPRESSION__REFERENCE_SEGMENT__REFERENCE_TYPE_STRUCT_FIELD)
		return refuse(c, "substrait_expression:field_reference",
			      "only direct struct field references are "
			      "covered"),
		       NULL;
	if (r->root_type_case !=
		    SUBSTRAIT__EXPRESSION__FIELD_REFERENCE__ROOT_TYPE_ROOT_REFERENCE &&
	    r->root_type_case !=
		    SUBSTRAIT__EXPRESSION__FIELD_REFERENCE__ROOT_TYPE__NOT_SET)
		return refuse(c, "substrait_expression:outer_reference",
			      "only references to the input row are "
			      "covered"),
		       NULL;
	const Substrait__Expression__ReferenceSegment__StructField *sf =
		r->direct_reference->struct_field;
	if (sf->child)
		return refuse(c, "substrait_type:struct",
			      "nested field references need struct types"),
		       NULL;
	if (sf->field < 0 || (size_t)sf->field >= in->n)
		return bad(c,
			   "field reference %d is out of range (the input "
			   "has %zu columns)",
			   sf->field, in->n),
		       NULL;
	return in->v[sf->field].text;
}

static char *cast_text(tctx_t *c, const Substrait__Expression__Cast *k,
		       const cols_t *in, int depth)
{
	bool nl;
	const char *t = sv_type_of(c, k->type, &nl);
	char *x = t ? rex(c, k->input, in, depth + 1) : NULL;
	if (!x)
		return NULL;
	if (k->failure_behavior !=
	    SUBSTRAIT__EXPRESSION__CAST__FAILURE_BEHAVIOR__FAILURE_BEHAVIOR_RETURN_NULL)
		partial(c, "substrait_expression:cast",
			"a CAST that fails (a string that does not read as a "
			"number) gives null in streamvisor; DataFusion raises "
			"an error");
	return afmt(c, "cast(%s as %s)", x, t);
}

static char *rex(tctx_t *c, const Substrait__Expression *e, const cols_t *in,
		 int depth)
{
	if (!e)
		return bad(c, "an expression is missing"), NULL;
	if (depth > 64)
		return bad(c, "expression nested more than 64 deep"), NULL;
	switch (e->rex_type_case) {
	case SUBSTRAIT__EXPRESSION__REX_TYPE_LITERAL:
		return literal(c, e->literal);
	case SUBSTRAIT__EXPRESSION__REX_TYPE_SELECTION:
		return field_ref(c, e->selection, in);
	case SUBSTRAIT__EXPRESSION__REX_TYPE_SCALAR_FUNCTION:
		return scalar(c, e->scalar_function, in, depth);
	case SUBSTRAIT__EXPRESSION__REX_TYPE_CAST:
		return cast_text(c, e->cast, in, depth);
	case SUBSTRAIT__EXPRESSION__REX_TYPE_IF_THEN: {
		const Substrait__Expression__IfThen *it = e->if_then;
		if (!it->n_ifs)
			return bad(c, "if_then without clauses"), NULL;
		char *acc = it->else_ ? rex(c, it->else_, in, depth + 1)
				      : adup(c, "null");
		for (size_t i = it->n_ifs; acc && i-- > 0;) {
			char *cond = rex(c, it->ifs[i]->if_, in, depth + 1);
			char *then = cond
				? rex(c, it->ifs[i]->then, in, depth + 1)
				: NULL;
			acc = then ? afmt(c, "if(%s, %s, %s)", cond, then, acc)
				   : NULL;
		}
		return acc;
	}
	case SUBSTRAIT__EXPRESSION__REX_TYPE_SINGULAR_OR_LIST: {
		const Substrait__Expression__SingularOrList *l =
			e->singular_or_list;
		if (!l->n_options || l->n_options > 64)
			return refuse(c,
				      "substrait_expression:singular_or_list",
				      "IN lists of 1 to 64 items are covered"),
			       NULL;
		char *x = rex(c, l->value, in, depth + 1);
		if (!x)
			return NULL;
		sv_buf_t b;
		sv_buf_init(&b);
		sv_buf_printf(&b, "(%s IN (", x);
		for (size_t i = 0; i < l->n_options; i++) {
			char *o = rex(c, l->options[i], in, depth + 1);
			if (!o) {
				sv_buf_release(&b);
				return NULL;
			}
			sv_buf_printf(&b, "%s%s", i ? ", " : "", o);
		}
		sv_buf_puts(&b, "))");
		char *r = adup(c, b.data);
		sv_buf_release(&b);
		return r;
	}
	case SUBSTRAIT__EXPRESSION__REX_TYPE_WINDOW_FUNCTION:
		return refuse(c, "substrait_expression:window_function",
			      "window functions are covered only as "
			      "row_number() = 1 (dedup)"),
		       NULL;
	case SUBSTRAIT__EXPRESSION__REX_TYPE__NOT_SET:
		return bad(c, "an expression has no kind"), NULL;
	default: {
		char cap[96];
		snprintf(cap, sizeof(cap), "substrait_expression:%s",
			 oneof_name(&substrait__expression__descriptor,
				    e->rex_type_case));
		refuse(c, cap, "this expression kind has no streamvisor form");
		return NULL;
	}
	}
}

/* ---- relations ---- */

static bool rel(tctx_t *c, const Substrait__Rel *r, cols_t *out);

static bool check_adv(tctx_t *c,
		      const Substrait__Extensions__AdvancedExtension *a)
{
	if (a && a->enhancement)
		return refuse(c, "substrait_advanced_extension:enhancement",
			      "an enhancement alters semantics and cannot be "
			      "ignored by a consumer");
	return true;
}

static bool apply_emit(tctx_t *c, const Substrait__RelCommon *cm, cols_t *v)
{
	if (cm && !check_adv(c, cm->advanced_extension))
		return false;
	if (!cm || cm->emit_kind_case != SUBSTRAIT__REL_COMMON__EMIT_KIND_EMIT)
		return true;
	const Substrait__RelCommon__Emit *em = cm->emit;
	cols_t n = {anew(c, (em->n_output_mapping + 1) * sizeof(col_t)),
		    em->n_output_mapping};
	for (size_t i = 0; i < n.n; i++) {
		int32_t k = em->output_mapping[i];
		if (k < 0 || (size_t)k >= v->n)
			return bad(c,
				   "emit output_mapping %d is out of range "
				   "(%zu columns)",
				   k, v->n);
		n.v[i] = v->v[k];
	}
	*v = n;
	return true;
}

static const Streamvisor__SubstraitBinding *find_binding(tctx_t *c,
							 const char *table)
{
	Streamvisor__SubstraitIngress *pl = c->js->plan;
	for (size_t i = 0; i < pl->n_bindings; i++)
		if (!strcmp(pl->bindings[i]->name, table)) {
			c->used[i] = true;
			return pl->bindings[i];
		}
	int n = 0;
	size_t hit = 0;
	for (size_t i = 0; i < pl->n_bindings; i++)
		if (!strcasecmp(pl->bindings[i]->name, table)) {
			hit = i;
			n++;
		}
	if (n != 1)
		return NULL;
	c->used[hit] = true;
	return pl->bindings[hit];
}

static const char *mapped(const Streamvisor__SubstraitBinding *b,
			  const char *name)
{
	for (size_t i = 0; i < b->n_columns; i++)
		if (!strcmp(b->columns[i]->plan_name, name))
			return b->columns[i]->field;
	return name;
}

/* A read root's table: its binding and its schema (base_schema with the
 * binding's column names), one column per field. */
typedef struct table {
	const Streamvisor__SubstraitBinding *binding;
	const char *name; /* names joined by '.' */
	Streamvisor__Field **fields;
	size_t n;
	cols_t base; /* the fields as columns */
} table_t;

static bool read_table(tctx_t *c, const Substrait__ReadRel *r, table_t *t)
{
	if (!check_adv(c, r->advanced_extension))
		return false;
	if (r->read_type_case != SUBSTRAIT__READ_REL__READ_TYPE_NAMED_TABLE) {
		char cap[96];
		snprintf(cap, sizeof(cap), "substrait_read:%s",
			 oneof_name(&substrait__read_rel__descriptor,
				    r->read_type_case));
		return refuse(c, cap,
			      "only named tables bound to a source are read");
	}
	const Substrait__ReadRel__NamedTable *nt = r->named_table;
	sv_buf_t tb;
	sv_buf_init(&tb);
	for (size_t i = 0; i < nt->n_names; i++)
		sv_buf_printf(&tb, "%s%s", i ? "." : "", nt->names[i]);
	t->name = adup(c, tb.data ? tb.data : "");
	sv_buf_release(&tb);
	const Streamvisor__SubstraitBinding *b = find_binding(c, t->name);
	if (!b) {
		c->err = sv_error_new(SV_ERR_BINDING,
				      "field 'plan.bindings': read root '%s' "
				      "has no binding",
				      t->name);
		sv_error_set_field(c->err, "plan.bindings");
		return false;
	}
	t->binding = b;
	const Substrait__NamedStruct *ns = r->base_schema;
	if (!ns || !ns->struct_)
		return bad(c, "read root '%s' has no base_schema", t->name);
	if (ns->n_names != ns->struct_->n_types)
		return refuse(c, "substrait_type:struct",
			      "base_schema names do not match its types one "
			      "to one (nested struct columns)");
	t->n = ns->n_names;
	t->fields = anew(c, (t->n + 1) * sizeof(*t->fields));
	t->base = (cols_t){anew(c, (t->n + 1) * sizeof(col_t)), t->n};
	for (size_t i = 0; i < t->n; i++) {
		bool nl = true;
		const char *ty = sv_type_of(c, ns->struct_->types[i], &nl);
		if (!ty)
			return false;
		Streamvisor__Field *f = anew(c, sizeof(*f));
		streamvisor__field__init(f);
		f->name = adup(c, mapped(b, ns->names[i]));
		f->type = (char *)ty;
		f->not_null = !nl;
		t->fields[i] = f;
		t->base.v[i].text = quote_col(c, f->name);
		t->base.v[i].type = ty;
	}
	return true;
}

/* The ReadRel's projection mask over cols (the table's base columns). */
static bool read_projection(tctx_t *c, const Substrait__ReadRel *r,
			    cols_t *cols)
{
	if (!r->projection)
		return true;
	const Substrait__Expression__MaskExpression__StructSelect *sel =
		r->projection->select;
	size_t n = sel ? sel->n_struct_items : 0;
	cols_t p = {anew(c, (n + 1) * sizeof(col_t)), n};
	for (size_t i = 0; i < n; i++) {
		int32_t k = sel->struct_items[i]->field;
		if (sel->struct_items[i]->child)
			return refuse(c, "substrait_type:struct",
				      "projection into nested "
				      "columns");
		if (k < 0 || (size_t)k >= cols->n)
			return bad(c,
				   "projection field %d is out of "
				   "range",
				   k);
		p.v[i] = cols->v[k];
	}
	*cols = p;
	return true;
}

static bool read_rel(tctx_t *c, const Substrait__ReadRel *r, cols_t *out)
{
	if (c->js->source)
		return refuse(c, "substrait_rel:set",
			      "a job reads one source (and a join's right "
			      "input); this plan has more read roots (a union "
			      "or a second join)");
	table_t t;
	if (!read_table(c, r, &t))
		return false;
	c->js->source = anew(c, sizeof(Streamvisor__Source));
	streamvisor__source__init(c->js->source);
	if (t.binding->source)
		*c->js->source = *t.binding->source;
	c->js->n_schema = t.n;
	c->js->schema = t.fields;
	if (r->filter) {
		char *cond = rex(c, r->filter, &t.base, 0);
		if (!cond)
			return false;
		Streamvisor__Step *s = add_step(c);
		s->step_case = STREAMVISOR__STEP__STEP_FILTER;
		s->filter = cond;
	}
	*out = t.base;
	if (!read_projection(c, r, out))
		return false;
	return apply_emit(c, r->common, out);
}

static bool project_rel(tctx_t *c, const Substrait__ProjectRel *p, cols_t *out)
{
	cols_t in;
	if (!check_adv(c, p->advanced_extension) || !rel(c, p->input, &in))
		return false;
	cols_t o = {anew(c, (in.n + p->n_expressions + 1) * sizeof(col_t)),
		    in.n + p->n_expressions};
	memcpy(o.v, in.v, in.n * sizeof(col_t));
	for (size_t i = 0; i < p->n_expressions; i++) {
		char *t = rex(c, p->expressions[i], &in, 0);
		if (!t)
			return false;
		o.v[in.n + i].text = t; /* rex() texts are atomic */
	}
	*out = o;
	return apply_emit(c, p->common, out);
}

/* Materialize texts as columns _<prefix><i> with one select over the
 * current stage, keeping every text that is already a plain column. */
static char **materialize(tctx_t *c, size_t n, char **texts, const char *prefix)
{
	char **names = anew(c, (n + 1) * sizeof(char *));
	bool all_plain = true;
	for (size_t i = 0; i < n; i++)
		if (!(names[i] = plain_col(c, texts[i])))
			all_plain = false;
	if (all_plain)
		return names;
	Streamvisor__Step *s = add_step(c);
	Streamvisor__Select *sel = anew(c, sizeof(*sel));
	streamvisor__select__init(sel);
	sel->n_items = n;
	sel->items = anew(c, (n + 1) * sizeof(*sel->items));
	int id = c->nsel++;
	for (size_t i = 0; i < n; i++) {
		Streamvisor__SelectItem *it = anew(c, sizeof(*it));
		streamvisor__select_item__init(it);
		it->name = names[i] = afmt(c, "_%s%d_%zu", prefix, id, i);
		it->expr = texts[i];
		sel->items[i] = it;
	}
	s->step_case = STREAMVISOR__STEP__STEP_SELECT;
	s->select = sel;
	c->at_source = false;
	return names;
}

/* date_bin(interval, t[, origin]) or date_trunc(unit, t): the window
 * size and the time argument, or 0 when e is not one. */
static int64_t window_key(tctx_t *c, const Substrait__Expression *e,
			  const cols_t *in, char **time_text)
{
	if (e->rex_type_case != SUBSTRAIT__EXPRESSION__REX_TYPE_SCALAR_FUNCTION)
		return 0;
	const Substrait__Expression__ScalarFunction *f = e->scalar_function;
	const fn_t *fn = find_fn(c, f->function_reference);
	if (!fn)
		return -1;
	bool bin = !strcmp(fn->name, "date_bin");
	if (!bin && strcmp(fn->name, "date_trunc"))
		return 0;
	if (f->n_arguments < 2 || f->n_arguments > (bin ? 3u : 2u))
		return bad(c, "%s needs %s arguments", fn->name,
			   bin ? "2 or 3" : "2"),
		       -1;
	const Substrait__Expression *a0 = arg_value(c, f->arguments[0]);
	const Substrait__Expression *a1 = arg_value(c, f->arguments[1]);
	if (!a0 || !a1)
		return -1;
	int64_t size = 0;
	if (bin) {
		const Substrait__Expression__Literal__IntervalDayToSecond *ds =
			NULL;
		if (a0->rex_type_case ==
		    SUBSTRAIT__EXPRESSION__REX_TYPE_LITERAL) {
			const Substrait__Expression__Literal *l = a0->literal;
			if (l->literal_type_case ==
			    SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_INTERVAL_COMPOUND) {
				const Substrait__Expression__Literal__IntervalYearToMonth
					*ym = l->interval_compound
						      ->interval_year_to_month;
				if (ym && (ym->years || ym->months))
					return refuse(c,
						      "substrait_function:date_"
						      "bin",
						      "month and year bins "
						      "have "
						      "no fixed size"),
					       -1;
				ds = l->interval_compound
					     ->interval_day_to_second;
			} else if (l->literal_type_case ==
				   SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_INTERVAL_DAY_TO_SECOND) {
				ds = l->interval_day_to_second;
			}
		}
		if (!ds)
			return refuse(c, "substrait_function:date_bin",
				      "the bin width must be a constant "
				      "day-to-second interval"),
			       -1;
		int p = ds->precision_mode_case ==
				SUBSTRAIT__EXPRESSION__LITERAL__INTERVAL_DAY_TO_SECOND__PRECISION_MODE_PRECISION
			? ds->precision
			: 6;
		int64_t sub = 0;
		if (!ts_to_ms(c, ds->subseconds, p, &sub))
			return -1;
		size = (int64_t)ds->days * 86400000 +
			(int64_t)ds->seconds * 1000 + sub;
		if (f->n_arguments == 3) {
			const Substrait__Expression *o = arg_value(
				c, f->arguments[2]);
			int64_t oms = 1;
			if (o &&
			    o->rex_type_case ==
				    SUBSTRAIT__EXPRESSION__REX_TYPE_LITERAL &&
			    o->literal->literal_type_case ==
				    SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_PRECISION_TIMESTAMP &&
			    !ts_to_ms(
				    c, o->literal->precision_timestamp->value,
				    o->literal->precision_timestamp->precision,
				    &oms))
				return -1;
			if (size <= 0 || oms % size)
				return refuse(c, "substrait_function:date_bin",
					      "windows are aligned to the "
					      "epoch; the origin must be a "
					      "multiple of the bin width"),
				       -1;
		}
	} else {
		const char *u = literal_string(a0);
		static const struct {
			const char *u;
			int64_t ms;
		} units[] = {{"millisecond", 1},
			     {"second", 1000},
			     {"minute", 60000},
			     {"hour", 3600000},
			     {"day", 86400000}};
		for (size_t i = 0; u && i < SV_ARRAY_LEN(units); i++)
			if (!strcasecmp(u, units[i].u))
				size = units[i].ms;
		if (!size)
			return refuse(c, "substrait_function:date_trunc",
				      "units up to 'day' are covered (weeks, "
				      "months and years are not fixed "
				      "epoch-aligned sizes)"),
			       -1;
	}
	if (size <= 0)
		return bad(c, "window width must be positive"), -1;
	*time_text = rex(c, a1, in, 1);
	return *time_text ? size : -1;
}

static char *agg_text(tctx_t *c, const Substrait__AggregateRel__Measure *m,
		      const cols_t *in)
{
	const Substrait__AggregateFunction *f = m->measure;
	if (!f)
		return bad(c, "a measure has no function"), NULL;
	const fn_t *fn = find_fn(c, f->function_reference);
	if (!fn || !check_options(c, fn->name, f->n_options, f->options))
		return NULL;
	if (f->n_sorts)
		return unknown_fn(c, fn->name,
				  "ordered aggregate input is not covered");
	bool distinct = f->invocation ==
		SUBSTRAIT__AGGREGATE_FUNCTION__AGGREGATION_INVOCATION__AGGREGATION_INVOCATION_DISTINCT;
	static const char *const plain[] = {"sum", "min", "max", "avg", NULL};
	const char *name = NULL;
	for (const char *const *p = plain; *p; p++)
		if (!strcmp(fn->name, *p))
			name = *p;
	bool is_count = !strcmp(fn->name, "count");
	if (!name && !is_count)
		return unknown_fn(c, fn->name,
				  "aggregates covered: sum, min, max, avg, "
				  "count, count(DISTINCT x)");
	if (distinct && !is_count)
		return unknown_fn(c, fn->name,
				  "DISTINCT is covered for count only");
	char *filter = m->filter ? rex(c, m->filter, in, 0) : NULL;
	if (m->filter && !filter)
		return NULL;
	char *arg = NULL;
	if (f->n_arguments > 1)
		return bad(c, "'%s' takes one argument", fn->raw), NULL;
	if (f->n_arguments == 1) {
		const Substrait__Expression *v = arg_value(c, f->arguments[0]);
		if (!v)
			return NULL;
		/* DataFusion writes count(*) as count(1) */
		if (is_count && !distinct &&
		    v->rex_type_case ==
			    SUBSTRAIT__EXPRESSION__REX_TYPE_LITERAL &&
		    v->literal->literal_type_case !=
			    SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_NULL) {
			arg = NULL;
		} else if (!(arg = rex(c, v, in, 0))) {
			return NULL;
		}
	} else if (!is_count || distinct) {
		return bad(c, "'%s' needs an argument", fn->raw), NULL;
	}
	if (is_count && !arg) /* count() FILTER (c) */
		arg = filter ? afmt(c, "if(%s, 1, null)", filter) : NULL;
	else if (filter)
		arg = afmt(c, "if(%s, %s, null)", filter, arg);
	if (!arg)
		return adup(c, "count()");
	return afmt(c, "%s(%s)", distinct ? "count_distinct" : fn->name, arg);
}

static bool aggregate_rel(tctx_t *c, const Substrait__AggregateRel *a,
			  cols_t *out)
{
	cols_t in;
	if (!check_adv(c, a->advanced_extension) || !rel(c, a->input, &in))
		return false;
	if (c->ordered)
		return refuse(c, "substrait_rel:sort",
			      "ORDER BY or LIMIT below an aggregate is not "
			      "covered");
	if (a->n_groupings > 1)
		return refuse(c, "substrait_rel:aggregate_grouping_sets",
			      "several grouping sets (ROLLUP, CUBE, GROUPING "
			      "SETS) are not covered");
	/* the grouping expressions of the one set, either form */
	size_t ng = 0;
	Substrait__Expression **gx = NULL;
	if (a->n_groupings == 1) {
		const Substrait__AggregateRel__Grouping *g = a->groupings[0];
		if (g->n_expression_references) {
			ng = g->n_expression_references;
			gx = anew(c, (ng + 1) * sizeof(*gx));
			for (size_t i = 0; i < ng; i++) {
				uint32_t k = g->expression_references[i];
				if (k >= a->n_grouping_expressions)
					return bad(c,
						   "grouping expression "
						   "reference %u is out of "
						   "range",
						   k);
				gx[i] = a->grouping_expressions[k];
			}
		} else {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
			ng = g->n_grouping_expressions;
			gx = g->grouping_expressions;
#pragma GCC diagnostic pop
		}
	}
	/* find the window key */
	int64_t size = 0;
	int wpos = -1;
	char **keys = anew(c, (ng + 1) * sizeof(char *));
	size_t nk = 0;
	for (size_t i = 0; i < ng; i++) {
		char *tt = NULL;
		int64_t s = window_key(c, gx[i], &in, &tt);
		if (s < 0)
			return false;
		if (s > 0) {
			if (wpos >= 0)
				return refuse(c, "stateful_window_support",
					      "one window per aggregate: two "
					      "date_bin/date_trunc keys");
			char *tc = plain_col(c, tt);
			if (!c->event_col)
				return bad(c,
					   "a tumbling window (%s) needs "
					   "the job's event_time",
					   "date_bin/date_trunc");
			if (!tc || strcmp(tc, c->event_col) || !c->at_source)
				return refuse(c, "watermark_support",
					      "window time argument is not the "
					      "bound event-time column");
			size = s;
			wpos = (int)i;
			continue;
		}
		if (!(keys[nk++] = rex(c, gx[i], &in, 0)))
			return false;
	}
	size_t nm = a->n_measures;
	if (!nm && wpos >= 0)
		return refuse(c, "stateful_window_support",
			      "a window without aggregates (DISTINCT over a "
			      "window) is not covered");
	if (!nm) {
		/* DISTINCT -> dedup on the grouping columns */
		int64_t within = c->js->plan->dedup_within_ms;
		if (!within && !c->bounded)
			return refuse(c, "stateful_window_support",
				      "DISTINCT in stream mode keeps unbounded "
				      "state: set plan.dedup_within_ms");
		if (!within)
			within = BIG_WITHIN_MS;
		else
			partial(c, "substrait_rel:aggregate_distinct",
				"DISTINCT is a dedup whose keys are forgotten "
				"after plan.dedup_within_ms of event time");
		if (!nk)
			return bad(c,
				   "an aggregate with neither groupings "
				   "nor measures");
		char **names = materialize(c, nk, keys, "k");
		Streamvisor__Step *s = add_step(c);
		Streamvisor__Dedup *d = anew(c, sizeof(*d));
		streamvisor__dedup__init(d);
		d->n_key = nk;
		d->key = names;
		d->within_ms = within;
		s->step_case = STREAMVISOR__STEP__STEP_DEDUP;
		s->dedup = d;
		cols_t o = {anew(c, (nk + 1) * sizeof(col_t)), nk};
		for (size_t i = 0; i < nk; i++)
			o.v[i].text = quote_col(c, names[i]);
		*out = o;
		return apply_emit(c, a->common, out);
	}
	if (wpos < 0 && !c->bounded)
		return refuse(c, "stateful_window_support",
			      "an aggregate without a tumbling window "
			      "(date_bin/date_trunc) is an updating result; "
			      "in stream mode only windowed aggregates are "
			      "covered (bounded mode runs it once at the end "
			      "of input)");
	char **aggs = anew(c, (nm + 1) * sizeof(char *));
	for (size_t j = 0; j < nm; j++) {
		if (!(aggs[j] = agg_text(c, a->measures[j], &in)))
			return false;
	}
	char **knames = keys;
	if (nk) {
		/* plain keys stay by name; otherwise keys and aggregate
		 * arguments are materialized together */
		bool plain = true;
		for (size_t i = 0; i < nk; i++)
			if (!plain_col(c, keys[i]))
				plain = false;
		if (plain) {
			knames = materialize(c, nk, keys, "k");
		} else {
			/* materialize keys; aggregates reference the stage
			 * before, so pass their inputs through as well */
			size_t nt = nk + in.n;
			char **texts = anew(c, (nt + 1) * sizeof(char *));
			for (size_t i = 0; i < nk; i++)
				texts[i] = keys[i];
			for (size_t i = 0; i < in.n; i++)
				texts[nk + i] = in.v[i].text;
			char **nn = materialize(c, nt, texts, "k");
			knames = nn;
			/* re-translate measures over the new stage */
			cols_t ni = {anew(c, (in.n + 1) * sizeof(col_t)), in.n};
			for (size_t i = 0; i < in.n; i++)
				ni.v[i].text = quote_col(c, nn[nk + i]);
			for (size_t j = 0; j < nm; j++) {
				if (!(aggs[j] = agg_text(c, a->measures[j],
							 &ni)))
					return false;
			}
		}
	}
	Streamvisor__Step *s = add_step(c);
	Streamvisor__Window *w = anew(c, sizeof(*w));
	streamvisor__window__init(w);
	w->type = adup(c, wpos >= 0 ? "tumbling" : "global");
	w->size_ms = wpos >= 0 ? size : 0;
	w->n_key = nk;
	w->key = knames;
	w->n_aggregates = nm;
	w->aggregates = anew(c, (nm + 1) * sizeof(*w->aggregates));
	int base = c->nagg;
	c->nagg += (int)nm;
	for (size_t j = 0; j < nm; j++) {
		Streamvisor__Aggregate *ag = anew(c, sizeof(*ag));
		streamvisor__aggregate__init(ag);
		ag->name = afmt(c, "_m%zu", (size_t)base + j);
		ag->expr = aggs[j];
		w->aggregates[j] = ag;
	}
	if (wpos >= 0) {
		w->allowed_lateness_ms = c->js->plan->allowed_lateness_ms;
		if (c->js->plan->late && c->js->plan->late[0])
			w->late = c->js->plan->late;
		w->time = adup(c, "event");
		if (!c->bounded)
			partial(c, "late_data_policy",
				"records behind the watermark are handled by "
				"plan.late (drop by default), where the batch "
				"query would count them");
	} else {
		partial(c, "substrait_rel:aggregate",
			"a non-windowed aggregate runs once at the end of a "
			"bounded job; over an empty input it gives no row "
			"(SQL gives one row for a global aggregate)");
	}
	s->step_case = STREAMVISOR__STEP__STEP_WINDOW;
	s->window = w;
	c->at_source = false;
	cols_t o = {anew(c, (ng + nm + 1) * sizeof(col_t)), ng + nm};
	size_t ki = 0;
	for (size_t i = 0; i < ng; i++) {
		if ((int)i == wpos)
			o.v[i].text = adup(c, "`window_start`");
		else
			o.v[i].text = quote_col(c, knames[ki++]);
	}
	for (size_t j = 0; j < nm; j++)
		o.v[ng + j].text = quote_col(c, w->aggregates[j]->name);
	*out = o;
	return apply_emit(c, a->common, out);
}

/* FilterRel(equal($k, 1)) over ProjectRel whose column k is row_number()
 * partitioned by P, ordered by the event time ascending: dedup on P. */
static bool row_number_dedup(tctx_t *c, const Substrait__FilterRel *f,
			     cols_t *out, bool *matched)
{
	*matched = false;
	const Substrait__Expression *e = f->condition;
	const Substrait__Rel *in = f->input;
	if (!e ||
	    e->rex_type_case !=
		    SUBSTRAIT__EXPRESSION__REX_TYPE_SCALAR_FUNCTION ||
	    !in || in->rel_type_case != SUBSTRAIT__REL__REL_TYPE_PROJECT)
		return true;
	const Substrait__Expression__ScalarFunction *sf = e->scalar_function;
	const Substrait__ProjectRel *p = in->project;
	bool found = false;
	for (size_t i = 0; i < p->n_expressions; i++)
		if (p->expressions[i]->rex_type_case ==
		    SUBSTRAIT__EXPRESSION__REX_TYPE_WINDOW_FUNCTION)
			found = true;
	if (!found)
		return true;
	*matched = true;
	const fn_t *eq = find_fn(c, sf->function_reference);
	if (!eq)
		return false;
	const Substrait__Expression *x = sf->n_arguments == 2
		? arg_value(c, sf->arguments[0])
		: NULL;
	const Substrait__Expression *one = sf->n_arguments == 2
		? arg_value(c, sf->arguments[1])
		: NULL;
	if (strcmp(eq->name, "equal") || !x || !one ||
	    x->rex_type_case != SUBSTRAIT__EXPRESSION__REX_TYPE_SELECTION ||
	    one->rex_type_case != SUBSTRAIT__EXPRESSION__REX_TYPE_LITERAL)
		return refuse(c, "substrait_expression:window_function",
			      "window functions are covered only as "
			      "row_number() = 1 (dedup)");
	const Substrait__Expression__Literal *l = one->literal;
	int64_t v = l->literal_type_case ==
			SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_I64
		? l->i64
		: l->literal_type_case ==
			SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_I32
		? l->i32
		: -1;
	cols_t pin;
	if (v != 1 || !check_adv(c, p->advanced_extension) ||
	    !rel(c, p->input, &pin))
		return c->err
			? false
			: refuse(c, "substrait_expression:window_function",
				 "window functions are covered only as "
				 "row_number() = 1 (dedup)");
	cols_t o = {anew(c, (pin.n + p->n_expressions + 1) * sizeof(col_t)),
		    pin.n + p->n_expressions};
	memcpy(o.v, pin.v, pin.n * sizeof(col_t));
	const Substrait__Expression__WindowFunction *wf = NULL;
	for (size_t i = 0; i < p->n_expressions; i++) {
		const Substrait__Expression *pe = p->expressions[i];
		if (pe->rex_type_case ==
		    SUBSTRAIT__EXPRESSION__REX_TYPE_WINDOW_FUNCTION) {
			if (wf)
				return refuse(
					c,
					"substrait_expression:window_function",
					"one row_number() per projection");
			wf = pe->window_function;
			o.v[pin.n + i].text = adup(c, "1");
			continue;
		}
		char *t = rex(c, pe, &pin, 0);
		if (!t)
			return false;
		o.v[pin.n + i].text = t;
	}
	if (!apply_emit(c, p->common, &o))
		return false;
	/* the filter's reference must be the row_number column */
	int32_t k = x->selection->reference_type_case ==
				SUBSTRAIT__EXPRESSION__FIELD_REFERENCE__REFERENCE_TYPE_DIRECT_REFERENCE &&
			x->selection->direct_reference->reference_type_case ==
				SUBSTRAIT__EXPRESSION__REFERENCE_SEGMENT__REFERENCE_TYPE_STRUCT_FIELD
		? x->selection->direct_reference->struct_field->field
		: -1;
	bool is_rn = k >= 0 && (size_t)k < o.n && !strcmp(o.v[k].text, "1");
	const fn_t *rn = find_fn(c, wf->function_reference);
	if (!rn)
		return false;
	if (!is_rn || strcmp(rn->name, "row_number") || wf->n_arguments ||
	    wf->n_sorts != 1 || !wf->n_partitions)
		return refuse(c, "substrait_expression:window_function",
			      "window functions are covered only as "
			      "row_number() OVER (PARTITION BY k ORDER BY "
			      "<event time> ASC) = 1 (dedup)");
	const Substrait__SortField *sf0 = wf->sorts[0];
	char *st = rex(c, sf0->expr, &pin, 0);
	if (!st)
		return false;
	char *sc = plain_col(c, st);
	if (!c->event_col || !sc || strcmp(sc, c->event_col) || !c->at_source ||
	    sf0->sort_kind_case != SUBSTRAIT__SORT_FIELD__SORT_KIND_DIRECTION ||
	    (sf0->direction !=
		     SUBSTRAIT__SORT_FIELD__SORT_DIRECTION__SORT_DIRECTION_ASC_NULLS_FIRST &&
	     sf0->direction !=
		     SUBSTRAIT__SORT_FIELD__SORT_DIRECTION__SORT_DIRECTION_ASC_NULLS_LAST))
		return refuse(c, "substrait_expression:window_function",
			      "row_number() dedup must order by the bound "
			      "event-time column ascending");
	char **pk = anew(c, (wf->n_partitions + 1) * sizeof(char *));
	for (size_t i = 0; i < wf->n_partitions; i++)
		if (!(pk[i] = rex(c, wf->partitions[i], &pin, 0)))
			return false;
	if (c->ordered)
		return refuse(c, "substrait_rel:sort",
			      "ORDER BY or LIMIT below row_number() is not "
			      "covered");
	int64_t within = c->js->plan->dedup_within_ms;
	if (!within && !c->bounded)
		return refuse(c, "stateful_window_support",
			      "row_number() = 1 in stream mode keeps unbounded "
			      "state: set plan.dedup_within_ms");
	partial(c, "substrait_function:row_number",
		"row_number() = 1 keeps the first record of each key to "
		"arrive, which is the earliest event time only when records "
		"arrive in event-time order");
	/* dedup on columns: plain names only (materializing would drop the
	 * other columns) */
	char **names = anew(c, (wf->n_partitions + 1) * sizeof(char *));
	for (size_t i = 0; i < wf->n_partitions; i++)
		if (!(names[i] = plain_col(c, pk[i])))
			return refuse(c, "substrait_expression:window_function",
				      "row_number() must partition by columns");
	Streamvisor__Step *s = add_step(c);
	Streamvisor__Dedup *d = anew(c, sizeof(*d));
	streamvisor__dedup__init(d);
	d->n_key = wf->n_partitions;
	d->key = names;
	d->within_ms = within ? within : BIG_WITHIN_MS;
	s->step_case = STREAMVISOR__STEP__STEP_DEDUP;
	s->dedup = d;
	*out = o;
	return apply_emit(c, f->common, out);
}

static bool filter_rel(tctx_t *c, const Substrait__FilterRel *f, cols_t *out)
{
	bool matched;
	if (!check_adv(c, f->advanced_extension) ||
	    !row_number_dedup(c, f, out, &matched))
		return false;
	if (matched)
		return true;
	cols_t in;
	if (!rel(c, f->input, &in))
		return false;
	char *cond = rex(c, f->condition, &in, 0);
	if (!cond)
		return false;
	Streamvisor__Step *s = add_step(c);
	s->step_case = STREAMVISOR__STEP__STEP_FILTER;
	s->filter = cond;
	*out = in;
	return apply_emit(c, f->common, out);
}

static bool const_int(tctx_t *c, const Substrait__Expression *e, int64_t *v)
{
	if (!e)
		return true;
	if (e->rex_type_case == SUBSTRAIT__EXPRESSION__REX_TYPE_LITERAL) {
		const Substrait__Expression__Literal *l = e->literal;
		switch (l->literal_type_case) {
		case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_I64:
			*v = l->i64;
			return true;
		case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_I32:
			*v = l->i32;
			return true;
		case SUBSTRAIT__EXPRESSION__LITERAL__LITERAL_TYPE_NULL:
			*v = -1;
			return true;
		default:
			break;
		}
	}
	return refuse(c, "substrait_rel:fetch",
		      "only constant integer LIMIT and OFFSET are covered");
}

/* SortRel and FetchRel in a bounded job: an order step (a FetchRel over
 * an order step is folded into it). Only stateless steps may follow. */
static bool sort_fetch(tctx_t *c, const Substrait__Rel *r, cols_t *out)
{
	bool is_sort = r->rel_type_case == SUBSTRAIT__REL__REL_TYPE_SORT;
	const char *cap = is_sort ? "substrait_rel:sort"
				  : "substrait_rel:fetch";
	if (!c->bounded)
		return refuse(c, cap,
			      "ORDER BY and LIMIT are covered in bounded jobs "
			      "only (a stream has no end to sort at)");
	const Substrait__FetchRel *f = is_sort ? NULL : r->fetch;
	const Substrait__SortRel *s = is_sort ? r->sort : NULL;
	cols_t in;
	if (!check_adv(c,
		       is_sort ? s->advanced_extension
			       : f->advanced_extension) ||
	    !rel(c, is_sort ? s->input : f->input, &in))
		return false;
	if (is_sort) {
		Streamvisor__Order *o = anew(c, sizeof(*o));
		streamvisor__order__init(o);
		o->limit = -1;
		o->n_keys = s->n_sorts;
		o->keys = anew(c, (s->n_sorts + 1) * sizeof(*o->keys));
		for (size_t i = 0; i < s->n_sorts; i++) {
			const Substrait__SortField *sf = s->sorts[i];
			Streamvisor__OrderKey *k = anew(c, sizeof(*k));
			streamvisor__order_key__init(k);
			if (!(k->expr = rex(c, sf->expr, &in, 0)))
				return false;
			if (sf->sort_kind_case !=
			    SUBSTRAIT__SORT_FIELD__SORT_KIND_DIRECTION)
				return refuse(c, cap,
					      "custom comparison functions are "
					      "not covered");
			switch (sf->direction) {
			case SUBSTRAIT__SORT_FIELD__SORT_DIRECTION__SORT_DIRECTION_ASC_NULLS_FIRST:
				k->nulls_first = true;
				break;
			case SUBSTRAIT__SORT_FIELD__SORT_DIRECTION__SORT_DIRECTION_ASC_NULLS_LAST:
				break;
			case SUBSTRAIT__SORT_FIELD__SORT_DIRECTION__SORT_DIRECTION_DESC_NULLS_FIRST:
				k->desc = k->nulls_first = true;
				break;
			case SUBSTRAIT__SORT_FIELD__SORT_DIRECTION__SORT_DIRECTION_DESC_NULLS_LAST:
				k->desc = true;
				break;
			default:
				return refuse(c, cap,
					      "clustered sort directions are "
					      "not covered");
			}
			o->keys[i] = k;
		}
		Streamvisor__Step *st = add_step(c);
		st->step_case = STREAMVISOR__STEP__STEP_ORDER;
		st->order = o;
		c->ordered = true;
		*out = in;
		return apply_emit(c, s->common, out);
	}
	int64_t limit = -1, offset = 0;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	if (f->count_mode_case == SUBSTRAIT__FETCH_REL__COUNT_MODE_COUNT)
		limit = f->count;
	else if (f->count_mode_case ==
			 SUBSTRAIT__FETCH_REL__COUNT_MODE_COUNT_EXPR &&
		 !const_int(c, f->count_expr, &limit))
		return false;
	if (f->offset_mode_case == SUBSTRAIT__FETCH_REL__OFFSET_MODE_OFFSET)
		offset = f->offset;
	else if (f->offset_mode_case ==
			 SUBSTRAIT__FETCH_REL__OFFSET_MODE_OFFSET_EXPR &&
		 !const_int(c, f->offset_expr, &offset))
		return false;
#pragma GCC diagnostic pop
	if (limit < -1 || offset < 0)
		return bad(c, "negative LIMIT or OFFSET");
	Streamvisor__Order *o = NULL;
	if (c->nsteps &&
	    c->steps[c->nsteps - 1]->step_case == STREAMVISOR__STEP__STEP_ORDER)
		o = c->steps[c->nsteps - 1]->order;
	if (!o) { /* LIMIT without ORDER BY: in arrival order */
		o = anew(c, sizeof(*o));
		streamvisor__order__init(o);
		o->limit = -1;
		Streamvisor__Step *st = add_step(c);
		st->step_case = STREAMVISOR__STEP__STEP_ORDER;
		st->order = o;
		partial(c, "substrait_rel:fetch",
			"LIMIT without ORDER BY keeps the first rows to "
			"arrive");
	}
	/* fold: skip `offset` of what o passes, keep `limit` of the rest */
	int64_t left = o->limit < 0 ? -1
		: o->limit > offset ? o->limit - offset
				    : 0;
	o->offset += offset;
	o->limit = limit < 0 ? left : left < 0 || limit < left ? limit : left;
	c->ordered = true;
	*out = in;
	return apply_emit(c, f->common, out);
}

/* ---- joins ---- */

/* The index of a plain field reference (a column of the input row), or -1
 * for any other expression. */
static int field_index(const Substrait__Expression *e)
{
	if (!e || e->rex_type_case != SUBSTRAIT__EXPRESSION__REX_TYPE_SELECTION)
		return -1;
	const Substrait__Expression__FieldReference *r = e->selection;
	if (r->reference_type_case !=
		    SUBSTRAIT__EXPRESSION__FIELD_REFERENCE__REFERENCE_TYPE_DIRECT_REFERENCE ||
	    r->direct_reference->reference_type_case !=
		    SUBSTRAIT__EXPRESSION__REFERENCE_SEGMENT__REFERENCE_TYPE_STRUCT_FIELD ||
	    r->direct_reference->struct_field->child ||
	    (r->root_type_case !=
		     SUBSTRAIT__EXPRESSION__FIELD_REFERENCE__ROOT_TYPE_ROOT_REFERENCE &&
	     r->root_type_case !=
		     SUBSTRAIT__EXPRESSION__FIELD_REFERENCE__ROOT_TYPE__NOT_SET))
		return -1;
	return r->direct_reference->struct_field->field;
}

static bool not_equi(tctx_t *c, const char *what)
{
	char why[512];
	snprintf(why, sizeof(why),
		 "only equi-joins are translated: the condition must be "
		 "column = column (one column of each input), or an AND of "
		 "those; this one has %s",
		 what);
	return refuse(c, "substrait_rel:join", why);
}

/* The join condition as key pairs: an AND of equal(left column, right
 * column), in either order; nleft columns of the input are the left's. */
static bool join_keys(tctx_t *c, const Substrait__Expression *e, size_t nleft,
		      size_t n, Streamvisor__Join *j, const cols_t *l,
		      const cols_t *r, int depth)
{
	if (!e)
		return not_equi(c, "no condition (a cross product)");
	if (depth > 64)
		return bad(c, "join condition nested deeper than 64");
	if (e->rex_type_case != SUBSTRAIT__EXPRESSION__REX_TYPE_SCALAR_FUNCTION)
		return not_equi(c, "a term that is not a comparison");
	const Substrait__Expression__ScalarFunction *f = e->scalar_function;
	const fn_t *fn = find_fn(c, f->function_reference);
	if (!fn)
		return false;
	if (!strcmp(fn->name, "and")) {
		for (size_t i = 0; i < f->n_arguments; i++)
			if (!join_keys(c, arg_value(c, f->arguments[i]), nleft,
				       n, j, l, r, depth + 1))
				return false;
		return true;
	}
	if (strcmp(fn->name, "equal") || f->n_arguments != 2) {
		char what[128];
		snprintf(what, sizeof(what), "'%s'", fn->raw);
		return not_equi(c, what);
	}
	int a = field_index(arg_value(c, f->arguments[0]));
	int b = field_index(arg_value(c, f->arguments[1]));
	if (a < 0 || b < 0 || (size_t)a >= n || (size_t)b >= n)
		return not_equi(c,
				"an equality that is not between two "
				"columns");
	if ((size_t)a >= nleft) {
		int t = a;
		a = b;
		b = t;
	}
	if ((size_t)a >= nleft || (size_t)b < nleft)
		return not_equi(c, "an equality of two columns of one input");
	char *lk = plain_col(c, l->v[a].text);
	char *rk = plain_col(c, r->v[(size_t)b - nleft].text);
	if (!lk || !rk)
		return refuse(c, "substrait_rel:join",
			      "a join key must be a column of its input, not "
			      "a computed expression");
	j->on_left[j->n_on_left++] = lk;
	j->on_right[j->n_on_right++] = rk;
	return true;
}

static size_t count_keys(tctx_t *c, const Substrait__Expression *e, int depth)
{
	if (!e || depth > 64 ||
	    e->rex_type_case != SUBSTRAIT__EXPRESSION__REX_TYPE_SCALAR_FUNCTION)
		return 1;
	const Substrait__Expression__ScalarFunction *f = e->scalar_function;
	const fn_t *fn = lookup_fn(c, f->function_reference);
	if (!fn || strcmp(fn->name, "and"))
		return 1;
	size_t k = 0;
	for (size_t i = 0; i < f->n_arguments; i++)
		k += count_keys(c, arg_value(c, f->arguments[i]), depth + 1);
	return k;
}

/* JoinRel, inner and left equi-joins, in a bounded job: a hash join step
 * whose input is the right ReadRel's binding. The output is the left's
 * columns and then the right's, as Substrait's; the right's columns enter
 * the row as "<table>.<column>" (take), which the final select renames. */
static bool join_rel(tctx_t *c, const Substrait__JoinRel *jr, cols_t *out)
{
	if (!check_adv(c, jr->advanced_extension))
		return false;
	const char *kind;
	switch (jr->type) {
	case SUBSTRAIT__JOIN_REL__JOIN_TYPE__JOIN_TYPE_INNER:
		kind = "inner";
		break;
	case SUBSTRAIT__JOIN_REL__JOIN_TYPE__JOIN_TYPE_LEFT:
		kind = "left";
		break;
	default: {
		char why[160];
		snprintf(
			why, sizeof(why),
			"only inner and left joins are translated, not %s",
			protobuf_c_enum_descriptor_get_value(
				&substrait__join_rel__join_type__descriptor,
				jr->type)
				? protobuf_c_enum_descriptor_get_value(
					  &substrait__join_rel__join_type__descriptor,
					  jr->type)
					  ->name
				: "an unknown type");
		return refuse(c, "substrait_rel:join", why);
	}
	}
	if (!c->bounded)
		return refuse(c, "stateful_join_support",
			      "a join of two streams from a Substrait plan "
			      "has no time bound, so its state would grow "
			      "without end: run it as a bounded job (a hash "
			      "join), or write an interval or lookup join "
			      "step in the job spec (docs/joins.md)");
	for (size_t i = 0; i < c->nsteps; i++)
		if (c->steps[i]->step_case == STREAMVISOR__STEP__STEP_JOIN)
			return refuse(c, "substrait_rel:join",
				      "a job has at most one join");
	const Substrait__Rel *rr = jr->right;
	if (!rr || rr->rel_type_case != SUBSTRAIT__REL__REL_TYPE_READ)
		return refuse(c, "substrait_rel:join",
			      "the right input of a join must be a read root "
			      "(a bound table), not a relation over one");
	cols_t l;
	if (!rel(c, jr->left, &l))
		return false;
	if (c->ordered)
		return refuse(c, "substrait_rel:sort",
			      "only stateless steps may follow an order "
			      "step");
	const Substrait__ReadRel *rd = rr->read;
	table_t t;
	if (!read_table(c, rd, &t))
		return false;
	if (rd->filter)
		return refuse(c, "substrait_rel:join",
			      "a filter on the right input of a join is not "
			      "translated");
	cols_t r = t.base;
	if (!read_projection(c, rd, &r) || !apply_emit(c, rd->common, &r))
		return false;
	Streamvisor__Join *j = anew(c, sizeof(*j));
	streamvisor__join__init(j);
	j->type = "hash";
	j->kind = (char *)kind;
	j->source = anew(c, sizeof(Streamvisor__Source));
	streamvisor__source__init(j->source);
	if (t.binding->source)
		*j->source = *t.binding->source;
	j->n_schema = t.n;
	j->schema = t.fields;
	size_t nk = count_keys(c, jr->expression, 0);
	j->on_left = anew(c, (nk + 1) * sizeof(char *));
	j->on_right = anew(c, (nk + 1) * sizeof(char *));
	if (!join_keys(c, jr->expression, l.n, l.n + r.n, j, &l, &r, 0))
		return false;
	/* every right column the plan can see, under "<table>.<column>" */
	j->n_take = r.n;
	j->take = anew(c, (r.n + 1) * sizeof(*j->take));
	cols_t o = {anew(c, (l.n + r.n + 1) * sizeof(col_t)), l.n + r.n};
	for (size_t i = 0; i < l.n; i++)
		o.v[i] = l.v[i];
	for (size_t i = 0; i < r.n; i++) {
		Streamvisor__TakeItem *ti = anew(c, sizeof(*ti));
		streamvisor__take_item__init(ti);
		ti->column = plain_col(c, r.v[i].text);
		ti->name = afmt(c, "%s.%s", t.name, ti->column);
		j->take[i] = ti;
		o.v[l.n + i].text = quote_col(c, ti->name);
		o.v[l.n + i].type = r.v[i].type;
	}
	Streamvisor__Step *s = add_step(c);
	s->step_case = STREAMVISOR__STEP__STEP_JOIN;
	s->join = j;
	c->at_source = false;
	if (jr->post_join_filter) {
		char *cond = rex(c, jr->post_join_filter, &o, 0);
		if (!cond)
			return false;
		Streamvisor__Step *f = add_step(c);
		f->step_case = STREAMVISOR__STEP__STEP_FILTER;
		f->filter = cond;
	}
	*out = o;
	return apply_emit(c, jr->common, out);
}

static bool rel(tctx_t *c, const Substrait__Rel *r, cols_t *out)
{
	if (!r)
		return bad(c, "a relation is missing");
	if (c->err)
		return false;
	switch (r->rel_type_case) {
	case SUBSTRAIT__REL__REL_TYPE_READ:
		return read_rel(c, r->read, out);
	case SUBSTRAIT__REL__REL_TYPE_FILTER:
		return filter_rel(c, r->filter, out);
	case SUBSTRAIT__REL__REL_TYPE_PROJECT:
		return project_rel(c, r->project, out);
	case SUBSTRAIT__REL__REL_TYPE_AGGREGATE:
		return aggregate_rel(c, r->aggregate, out);
	case SUBSTRAIT__REL__REL_TYPE_SORT:
	case SUBSTRAIT__REL__REL_TYPE_FETCH:
		return sort_fetch(c, r, out);
	case SUBSTRAIT__REL__REL_TYPE_JOIN:
		return join_rel(c, r->join, out);
	case SUBSTRAIT__REL__REL_TYPE_CROSS:
		return refuse(c, "substrait_rel:cross",
			      "a cross product of two inputs has no operator");
	case SUBSTRAIT__REL__REL_TYPE_HASH_JOIN:
	case SUBSTRAIT__REL__REL_TYPE_MERGE_JOIN:
	case SUBSTRAIT__REL__REL_TYPE_NESTED_LOOP_JOIN: {
		char cap[96];
		snprintf(cap, sizeof(cap), "substrait_rel:%s",
			 oneof_name(&substrait__rel__descriptor,
				    r->rel_type_case));
		return refuse(c, cap,
			      "physical join relations are not translated; "
			      "a logical JoinRel is");
	}
	case SUBSTRAIT__REL__REL_TYPE__NOT_SET:
		return bad(c, "a relation has no kind");
	default: {
		char cap[96];
		snprintf(cap, sizeof(cap), "substrait_rel:%s",
			 oneof_name(&substrait__rel__descriptor,
				    r->rel_type_case));
		return refuse(c, cap,
			      "this relation has no streamvisor operator");
	}
	}
}

/* ---- the plan ---- */

static const char *const legacy_unknown[] = {
	"substrait.Plan:1", /* extension_uris (legacy, reserved in 0.85) */
	"substrait.extensions.SimpleExtensionDeclaration.ExtensionFunction:1",
	"substrait.extensions.SimpleExtensionDeclaration.ExtensionType:1",
	"substrait.extensions.SimpleExtensionDeclaration."
	"ExtensionTypeVariation:1",
	NULL};

static bool translate(tctx_t *c, const Substrait__Plan *p)
{
	if (!check_adv(c, p->advanced_extensions) || !read_extensions(c, p))
		return false;
	const Substrait__RelRoot *root = NULL;
	for (size_t i = 0; i < p->n_relations; i++) {
		const Substrait__PlanRel *pr = p->relations[i];
		if (pr->rel_type_case == SUBSTRAIT__PLAN_REL__REL_TYPE_ROOT) {
			if (root)
				return refuse(c, "substrait_plan:several_roots",
					      "a job has one output; this plan "
					      "has several RelRoots");
			root = pr->root;
		} else if (pr->rel_type_case ==
			   SUBSTRAIT__PLAN_REL__REL_TYPE_REL) {
			return refuse(c, "substrait_rel:reference",
				      "shared relations (CTEs) are not "
				      "covered");
		}
	}
	if (!root)
		return bad(c, "no RelRoot in relations");
	cols_t o;
	const Substrait__Rel *top = root->input;
	bool ok = top &&
			(top->rel_type_case == SUBSTRAIT__REL__REL_TYPE_SORT ||
			 top->rel_type_case == SUBSTRAIT__REL__REL_TYPE_FETCH)
		? sort_fetch(c, top, &o)
		: rel(c, top, &o);
	if (!ok)
		return false;
	if (root->n_names != o.n)
		return bad(c, "RelRoot has %zu names for %zu output columns",
			   root->n_names, o.n);
	Streamvisor__SubstraitIngress *pl = c->js->plan;
	for (size_t i = 0; i < pl->n_bindings; i++) {
		if (c->used[i])
			continue;
		char f[256];
		snprintf(f, sizeof(f), "plan.bindings.%s",
			 pl->bindings[i]->name);
		c->err = sv_error_new(SV_ERR_BINDING,
				      "field '%s': no read root named '%s' in "
				      "the plan",
				      f, pl->bindings[i]->name);
		sv_error_set_field(c->err, f);
		return false;
	}
	/* the final select names the output */
	Streamvisor__Step *s = add_step(c);
	Streamvisor__Select *sel = anew(c, sizeof(*sel));
	streamvisor__select__init(sel);
	sel->n_items = o.n;
	sel->items = anew(c, (o.n + 1) * sizeof(*sel->items));
	for (size_t i = 0; i < o.n; i++) {
		Streamvisor__SelectItem *it = anew(c, sizeof(*it));
		streamvisor__select_item__init(it);
		it->name = adup(c, root->names[i]);
		it->expr = o.v[i].text;
		sel->items[i] = it;
	}
	s->step_case = STREAMVISOR__STEP__STEP_SELECT;
	s->select = sel;
	return true;
}

sv_error_t *sv_substrait_translate(Streamvisor__JobSpec *js, sv_arena_t *arena,
				   json_t *coverage)
{
	Streamvisor__SubstraitIngress *pl = js->plan;
	tctx_t c = {.js = js, .arena = arena, .coverage = coverage};
	c.bounded = js->mode && !strcmp(js->mode, "bounded");
	c.at_source = true;
	c.used = anew(&c, (pl->n_bindings + 1) * sizeof(bool));
	c.event_col = js->event_time && js->event_time->field &&
			js->event_time->field[0]
		? js->event_time->field
		: NULL;
	const uint8_t *data = pl->substrait.data;
	size_t len = pl->substrait.len;
	if (!len)
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "field 'plan': the substrait plan is "
				     "empty"),
			"plan.substrait");
	sv_error_t *err = sv_pb_check(&substrait__plan__descriptor, data, len,
				      SV_SUBSTRAIT_MAX_DEPTH, NULL);
	if (err)
		return sv_error_set_field(err, "plan.substrait");
	Substrait__Plan *p = substrait__plan__unpack(NULL, len, data);
	if (!p)
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "substrait plan is not a valid "
				     "substrait.Plan message"),
			"plan.substrait");
	if ((err = sv_pb_check_unknown(&p->base, legacy_unknown))) {
		substrait__plan__free_unpacked(p, NULL);
		char cap[64] = "substrait_field:unknown";
		sv_error_t *e = sv_coverage_refuse(
			cap, err->message, "plan.substrait", err->message);
		sv_error_destroy(err);
		return e;
	}
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(data, len, md);
	char hex[65];
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	pl->sha256 = adup(&c, hex);
	if (p->version) {
		pl->producer = adup(&c, p->version->producer);
		pl->version = afmt(&c, "%u.%u.%u", p->version->major_number,
				   p->version->minor_number,
				   p->version->patch_number);
	}
	js->source = NULL;
	js->n_schema = 0;
	js->n_pipeline = 0;
	c.partials = json_object();
	bool ok = translate(&c, p);
	substrait__plan__free_unpacked(p, NULL);
	json_decref(c.partials);
	if (!ok) {
		js->source = NULL;
		return c.err ? c.err
			     : sv_error_new(SV_ERR_SUBMISSION,
					    "substrait plan could not be "
					    "translated");
	}
	js->n_pipeline = c.nsteps;
	js->pipeline = c.steps;
	return NULL;
}

/* ---- coverage rows ---- */

void sv_substrait_coverage_rows(json_t *rows)
{
	static const struct {
		const char *cap, *status, *reason;
	} fixed[] = {
		{"plan_ingress:substrait", "covered",
		 "POST /v1/jobs with a plan member: Substrait Plan in proto3 "
		 "JSON or binary (base64; raw bytes in the protobuf JobSpec), "
		 "protos of spec 0.87 (reads 0.52 to 0.87), with read-root "
		 "bindings; tested with DataFusion 55, Isthmus and "
		 "IncQL-shaped "
		 "plans; dry_run shows the translated job spec"},
		{"substrait_rel:read", "covered",
		 "named tables bound by plan.bindings; projection mask; filter "
		 "(best_effort_filter ignored)"},
		{"substrait_rel:filter", "covered", "a filter step"},
		{"substrait_rel:project", "covered",
		 "expressions and emit become a select"},
		{"substrait_rel:aggregate", "partial",
		 "a tumbling window when one grouping expression is "
		 "date_bin/date_trunc of the event-time column; without one, "
		 "bounded mode only (a global aggregate at the end of input, "
		 "no row for an empty input); one grouping set"},
		{"substrait_rel:aggregate_distinct", "partial",
		 "an aggregate without measures (DISTINCT) is a dedup; stream "
		 "mode needs plan.dedup_within_ms, after which keys are "
		 "forgotten"},
		{"substrait_rel:sort", "partial",
		 "at the root of a bounded job (with or under FetchRel)"},
		{"substrait_rel:fetch", "partial",
		 "at the root of a bounded job, constant count and offset"},
		{"substrait_rel:join", "partial",
		 "inner and left equi-joins (AND of column = column) in a "
		 "bounded job: a hash join step whose right input is a read "
		 "root; no filter on the right read, at most one join; a "
		 "join of streams is refused (no time bound)"},
		{"substrait_rel:cross", "uncovered",
		 "a cross product of two inputs has no operator"},
		{"substrait_rel:set", "uncovered", "a job reads one source"},
		{"substrait_rel:extension_single", "uncovered",
		 "extension relations (IncQL generators) have no operator"},
		{"substrait_rel:extension_multi", "uncovered",
		 "extension relations have no operator"},
		{"substrait_rel:extension_leaf", "uncovered",
		 "extension relations have no operator"},
		{"substrait_rel:write", "uncovered",
		 "the sink is bound by the job spec's sink"},
		{"substrait_rel:window", "uncovered",
		 "ConsistentPartitionWindowRel has no operator"},
		{"substrait_expression:window_function", "partial",
		 "only row_number() OVER (PARTITION BY k ORDER BY event time) "
		 "= 1, as a dedup"},
		{"substrait_expression:cast", "partial",
		 "a failing THROW_EXCEPTION cast gives null"},
		{"substrait_expression:if_then", "covered", "nested if()"},
		{"substrait_expression:singular_or_list", "covered",
		 "IN (1 to 64 items)"},
		{"substrait_function:date_bin", "partial",
		 "as a tumbling window key: constant day-to-second width, "
		 "origin a multiple of it"},
		{"substrait_function:date_trunc", "partial",
		 "as a tumbling window key: units millisecond to day"},
		{"substrait_function:like", "partial",
		 "constant patterns 'lit', 'lit%', '%lit', '%lit%'"},
		{"substrait_function:concat", "covered",
		 "DataFusion's null-skipping concat, rewritten"},
		{"substrait_function:count", "covered",
		 "count(), count(x), count(1), count(DISTINCT x)"},
		{"substrait_function:sum", "covered", "aggregate"},
		{"substrait_function:avg", "covered", "aggregate"},
		{"substrait_function:min", "covered", "aggregate"},
		{"substrait_function:max", "covered", "aggregate"},
		{"substrait_function:row_number", "partial",
		 "row_number() = 1: the first record of each key to arrive"},
		{"substrait_type:bool", "covered", "bool"},
		{"substrait_type:i8/i16/i32/i64", "covered", "int64"},
		{"substrait_type:fp32/fp64", "covered", "float64"},
		{"substrait_type:string/varchar", "covered", "string"},
		{"substrait_type:precision_timestamp", "covered",
		 "timestamp_ms; literals exact to the millisecond (sub-ms "
		 "literals refused)"},
		{"substrait_type:decimal", "uncovered", "no decimal type"},
		{"substrait_type:date", "uncovered", "no date type"},
		{"substrait_type:struct/list/map", "uncovered",
		 "no nested types"},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(fixed); i++)
		json_array_append_new(rows,
				      sv_coverage_record(fixed[i].cap,
							 fixed[i].status,
							 fixed[i].reason));
	for (size_t i = 0; i < SV_ARRAY_LEN(scalar_map); i++) {
		char cap[96];
		snprintf(cap, sizeof(cap), "substrait_function:%s",
			 scalar_map[i].name);
		char why[256];
		snprintf(why, sizeof(why), "as streamvisor '%s'%s%s",
			 scalar_map[i].op, scalar_map[i].partial ? ": " : "",
			 scalar_map[i].partial ? scalar_map[i].partial : "");
		json_array_append_new(rows,
				      sv_coverage_record(cap,
							 scalar_map[i].partial
								 ? "partial"
								 : "covered",
							 why));
	}
}
