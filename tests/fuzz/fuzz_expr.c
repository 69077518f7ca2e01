/* fuzz_expr.c — libFuzzer target for the expression parser and type checker
 * (core/expr.c): the input is an expression text against the fixed fuzz
 * schema; one that parses is also evaluated on an all-null row and on a row
 * of ordinary values, so evaluation of whatever the parser accepts is
 * fuzzed too. */
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	const sv_schema_t *schema = sv_fuzz_schema();
	sv_expr_t *expr = NULL;
	sv_error_t *err = sv_expr_parse(text, schema, &expr);
	if (err) {
		sv_error_destroy(err);
	} else {
		sv_value_t nulls[5], vals[5];
		memset(nulls, 0, sizeof(nulls));
		memset(vals, 0, sizeof(vals));
		for (size_t i = 0; i < 5; i++)
			nulls[i].type = SV_T_NULL;
		vals[0].type = SV_T_INT64;
		vals[0].v.i = -7;
		vals[1].type = SV_T_STRING;
		vals[1].v.s = "EU-West";
		vals[1].len = 7;
		vals[2].type = SV_T_FLOAT64;
		vals[2].v.f = 2.5;
		vals[3].type = SV_T_BOOL;
		vals[3].v.b = true;
		vals[4].type = SV_T_TIMESTAMP;
		vals[4].v.i = 1700000000000;
		sv_arena_t arena;
		sv_arena_init(&arena);
		sv_value_t out;
		sv_expr_eval(expr, nulls, &arena, &out);
		sv_expr_eval(expr, vals, &arena, &out);
		sv_expr_test(expr, vals, &arena);
		sv_arena_release(&arena);
		sv_expr_destroy(expr);
	}
	free(text);
	return 0;
}
