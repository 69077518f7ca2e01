/* expr.h — the expression language of filter, select, window keys and
 * aggregate arguments.
 *
 * Grammar (precedence low → high):
 *   or:      and ( ('||' | 'OR') and )*
 *   and:     not ( ('&&' | 'AND') not )*
 *   not:     ('!' | 'NOT') not | cmp
 *   cmp:     add ( ('=='|'='|'!='|'<>'|'<'|'<='|'>'|'>=') add
 *                | IS [NOT] NULL | [NOT] IN '(' expr, ... ')' )?
 *   add:     mul ( ('+'|'-') mul )*     ('+' on two strings concatenates;
 *            '||' is logical or, not concatenation)
 *   mul:     unary ( ('*'|'/'|'%') unary )*
 *   unary:   '-' unary | primary
 *   primary: literal | column | func '(' args ')' | '(' expr ')'
 *   literal: 123, 1.5, 'text' (''-escaped), "text", true, false, null
 *   column:  identifier, or `quoted identifier`
 * Keywords are case-insensitive. Exact semantics (null propagation, integer
 * division, casts) are documented in docs/expressions.md.
 *
 * Expressions are parsed and type-checked once, at submit time, against the
 * input schema; evaluation is then allocation-free except for string
 * results, which go into the caller's arena. */
#ifndef SV_EXPR_H
#define SV_EXPR_H

#include "core/error.h"
#include "core/record.h"

typedef struct sv_expr sv_expr_t;

/* Parse and type-check text against schema (borrowed for the call only).
 * On success *out is a new expression the caller owns (sv_expr_destroy) and
 * NULL is returned. On failure returns an error naming the expression, the
 * 1-based position (err->position) and the reason:
 *   SV_ERR_SUBMISSION  syntax, unknown column, type mismatch
 *   SV_ERR_COVERAGE    a function that is not in the registry
 * e.g. "expression 'amount >' at position 9: expected an operand". */
sv_error_t *sv_expr_parse(const char *text, const sv_schema_t *schema,
			  sv_expr_t **out);

/* Result type; SV_T_NULL only for the literal null. */
sv_type_t sv_expr_type(const sv_expr_t *expr);
/* Whether the result can be null. */
bool sv_expr_nullable(const sv_expr_t *expr);
/* The source text (owned by expr). */
const char *sv_expr_text(const sv_expr_t *expr);
/* When the expression is a bare column reference, its index; else -1. */
int sv_expr_column(const sv_expr_t *expr);

/* Evaluate on one row of the schema given at parse time. String results
 * either point into the row's strings or are allocated in arena.
 * thread: any (expressions are immutable after parse). */
void sv_expr_eval(const sv_expr_t *expr, const sv_value_t *row,
		  sv_arena_t *arena, sv_value_t *out);

/* Evaluate a predicate: true only when the result is boolean true (null and
 * false are both "not kept"). */
bool sv_expr_test(const sv_expr_t *expr, const sv_value_t *row,
		  sv_arena_t *arena);

void sv_expr_destroy(sv_expr_t *expr);

/* The function registry, for coverage reporting. */
size_t sv_func_count(void);
const char *sv_func_name(size_t i);
bool sv_func_exists(const char *name);

#endif
