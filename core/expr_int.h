/* expr_int.h — internals shared by the expression compiler (expr.c), the
 * function registry (func.c) and their tests.
 *
 * The registry is a static table: each function has a name, an arity range,
 * a type rule run once at parse time (which also asks for argument
 * coercions and says whether the result can be null) and an eval function
 * run per row. Casting between the record types lives here too because
 * the parser (cast(x AS t), implicit coercions), the evaluator and the
 * functions (concat) all need the same conversions. */
#ifndef SV_EXPR_INT_H
#define SV_EXPR_INT_H

#include "core/expr.h"

/* Most arguments a call can have (variadic functions included). */
#define SV_FUNC_MAX_ARGS 64
/* max_args of a variadic function. */
#define SV_FUNC_VARIADIC SV_FUNC_MAX_ARGS

enum {
	/* Null when any argument is null; eval never sees a null argument. */
	SV_FN_STRICT = 1 << 0,
	/* Parsed specially (cast(x AS type)); eval is NULL. */
	SV_FN_SPECIAL = 1 << 1,
};

/* The type rule's in/out parameter block. */
typedef struct sv_fcheck {
	int nargs;
	sv_type_t arg[SV_FUNC_MAX_ARGS]; /* in: SV_T_NULL for the literal null */
	bool nullable[SV_FUNC_MAX_ARGS]; /* in */
	sv_type_t want[SV_FUNC_MAX_ARGS]; /* out: coerce argument i to this
					   * type; preset to arg[i] */
	sv_type_t ret; /* out */
	bool ret_nullable; /* out; preset to "any argument
					   * nullable" */
	char why[160]; /* out: reason when false is
					   * returned, e.g. "argument 1 of
					   * 'lower' must be string, got int64" */
} sv_fcheck_t;

/* args: nargs values, none null when the function is SV_FN_STRICT. String
 * results point into the arguments' strings or are allocated in arena
 * (which may be NULL: then a function that must allocate yields null). */
typedef void (*sv_func_eval_fn)(const sv_value_t *args, int nargs,
				sv_arena_t *arena, sv_value_t *out);

typedef struct sv_func {
	const char *name; /* lower case; looked up case-insensitively */
	int min_args, max_args;
	unsigned flags; /* SV_FN_* */
	bool (*check)(const struct sv_func *fn, sv_fcheck_t *fc);
	sv_func_eval_fn eval;
} sv_func_t;

extern const sv_func_t sv_funcs[];
extern const size_t sv_nfuncs;

/* Index of the function named name[0..len) (case-insensitive), or -1. */
int sv_func_find(const char *name, size_t len);

/* The common type two operands are compared or unified as: equal types,
 * int64+float64 → float64, int64+timestamp_ms → timestamp_ms, the literal
 * null adopts the other type. False when incompatible. */
bool sv_type_unify(sv_type_t a, sv_type_t b, sv_type_t *out);

/* Whether cast(x AS to) is allowed for an x of type from, and whether it
 * can yield null for a non-null input (string parsing, float range). */
bool sv_cast_allowed(sv_type_t from, sv_type_t to);
bool sv_cast_may_fail(sv_type_t from, sv_type_t to);
/* Convert in to type to (see docs/expressions.md for the exact rules). A
 * null in gives null; a failed conversion gives null. String results go
 * into arena (NULL arena: null). in and out may alias. */
void sv_cast_value(const sv_value_t *in, sv_type_t to, sv_arena_t *arena,
		   sv_value_t *out);

/* Parse an ISO-8601 timestamp ("2024-03-01", "2024-03-01T12:00:00.250Z",
 * "2024-03-01 12:00:00+02:00") or an integer of milliseconds. */
bool sv_parse_timestamp(const char *s, size_t n, int64_t *ms);

#endif
