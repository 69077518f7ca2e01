/* expr.c — lexer, parser, type checker, constant folder and evaluator of
 * the expression language (see expr.h for the grammar and
 * docs/expressions.md for the semantics).
 *
 * sv_expr_parse tokenizes the whole text, then a recursive-descent parser
 * builds a small typed tree in a flat node array. Type checking happens as
 * each node is built, so an error points at the operator or operand that
 * caused it; implicit conversions (int64 → float64 promotion, arguments a
 * function wants as strings) become explicit conversion nodes, so every
 * operator node knows the exact types it will see. A node whose children
 * are all constants is folded on the spot by running it through the
 * evaluator itself, so folding and evaluation cannot disagree.
 *
 * The tree is then compiled into a flat post-order program for a small
 * stack machine with type-specialised opcodes (ADD_I, LT_S, ...): no names,
 * no type dispatch and no recursion at run time, one switch per
 * instruction. && and || jump over their right operand when the left one
 * decides the result. The operand stack lives on the C stack (its depth is
 * computed at compile time and bounded), so evaluation never allocates
 * except for string results, which go into the caller's arena. */
#define _GNU_SOURCE
#include "core/expr_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SV_EXPR_STACK 128 /* operand stack slots of one evaluation */
#define SV_EXPR_MAX_DEPTH 96 /* parser nesting */
/* Height of the tree: bounds the compiler's recursion (emit), which
 * parser nesting alone does not, since a chain like a+a+...+a is built by
 * a loop into a left-deep tree as tall as the chain is long. */
#define SV_EXPR_MAX_HEIGHT 1000

/* ---- the program ---- */

enum {
	OP_COL,
	OP_CONST,
	OP_JF,
	OP_JT, /* jump by arg when the top is false / true (kept) */
	OP_AND,
	OP_OR,
	OP_NOT,
	OP_ISNULL,
	OP_NOTNULL,
	OP_NEG_I,
	OP_NEG_F,
	OP_I2F,
	OP_CAST,
	OP_CONCAT,
	OP_ADD_I,
	OP_SUB_I,
	OP_MUL_I,
	OP_DIV_I,
	OP_MOD_I,
	OP_ADD_F,
	OP_SUB_F,
	OP_MUL_F,
	OP_DIV_F,
	OP_MOD_F,
	OP_ADD_TI,
	OP_SUB_TI,
	OP_SUB_TT,
	OP_CALL,
	OP_IN,
	OP_IN_CONST,
	/* comparisons: OP_CMP + kind * 6 + cmp */
	OP_CMP,
	OP__END = OP_CMP + 4 * 6
};

/* comparison kinds: how the two operands are read */
enum {
	K_I = 0,
	K_F,
	K_S,
	K_B
};
/* comparisons, in the order of the opcodes */
enum {
	C_EQ = 0,
	C_NE,
	C_LT,
	C_LE,
	C_GT,
	C_GE
};

#define IN_NEGATED 0x10

typedef struct sv_insn {
	uint8_t op;
	uint8_t k; /* cast target type, IN kind|negated, CALL strict */
	uint16_t n; /* operands taken from the stack (CALL, IN) */
	uint32_t arg; /* column, constant, function, list, jump distance */
} sv_insn_t;

typedef struct inlist {
	sv_value_t *v; /* the non-null items, converted to the compare type */
	uint32_t n;
	bool has_null;
} inlist_t;

struct sv_expr {
	char *text;
	sv_type_t type;
	bool nullable;
	int column; /* bare column reference, else -1 */
	sv_insn_t *code;
	size_t ncode;
	sv_value_t *consts;
	size_t nconsts, capconsts;
	inlist_t *lists;
	size_t nlists;
	sv_arena_t strings; /* bytes of string constants */
};

/* ---- the evaluator ---- */

static inline bool str_eq(const sv_value_t *a, const sv_value_t *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->v.s, b->v.s, a->len));
}

static inline int str_cmp(const sv_value_t *a, const sv_value_t *b)
{
	uint32_t n = a->len < b->len ? a->len : b->len;
	int c = n ? memcmp(a->v.s, b->v.s, n) : 0;
	if (c)
		return c;
	return (a->len > b->len) - (a->len < b->len);
}

static inline bool kind_eq(int kind, const sv_value_t *a, const sv_value_t *b)
{
	switch (kind) {
	case K_I:
		return a->v.i == b->v.i;
	case K_F:
		return a->v.f == b->v.f;
	case K_S:
		return str_eq(a, b);
	default:
		return a->v.b == b->v.b;
	}
}

static void vm_run(const sv_expr_t *e, const sv_insn_t *code, size_t ncode,
		   const sv_value_t *row, sv_arena_t *arena, sv_value_t *out)
{
	sv_value_t stack[SV_EXPR_STACK];
	sv_value_t *sp = stack;

#define TOP2                                 \
	sv_value_t *a = sp - 2, *b = sp - 1; \
	sp--
#define NULL2                       \
	if (!a->type || !b->type) { \
		*a = sv_null();     \
		break;              \
	}
#define ARITH_I(OPC, BUILTIN, MK)                                     \
	case OPC: {                                                   \
		TOP2;                                                 \
		NULL2;                                                \
		int64_t r;                                            \
		*a = BUILTIN(a->v.i, b->v.i, &r) ? sv_null() : MK(r); \
		break;                                                \
	}
#define ARITH_F(OPC, EXPR)           \
	case OPC: {                  \
		TOP2;                \
		NULL2;               \
		*a = sv_float(EXPR); \
		break;               \
	}
#define CMP_K(KIND, FIELD_CMP)                \
	case OP_CMP + KIND * 6 + C_EQ: {      \
		TOP2;                         \
		NULL2;                        \
		*a = sv_bool(FIELD_CMP == 0); \
		break;                        \
	}                                     \
	case OP_CMP + KIND * 6 + C_NE: {      \
		TOP2;                         \
		NULL2;                        \
		*a = sv_bool(FIELD_CMP != 0); \
		break;                        \
	}                                     \
	case OP_CMP + KIND * 6 + C_LT: {      \
		TOP2;                         \
		NULL2;                        \
		*a = sv_bool(FIELD_CMP < 0);  \
		break;                        \
	}                                     \
	case OP_CMP + KIND * 6 + C_LE: {      \
		TOP2;                         \
		NULL2;                        \
		*a = sv_bool(FIELD_CMP <= 0); \
		break;                        \
	}                                     \
	case OP_CMP + KIND * 6 + C_GT: {      \
		TOP2;                         \
		NULL2;                        \
		*a = sv_bool(FIELD_CMP > 0);  \
		break;                        \
	}                                     \
	case OP_CMP + KIND * 6 + C_GE: {      \
		TOP2;                         \
		NULL2;                        \
		*a = sv_bool(FIELD_CMP >= 0); \
		break;                        \
	}
/* three-way compares that are exact for each kind (floats: NaN compares
 * unequal and unordered, like C) */
#define CMP3(x, y) (((x) > (y)) - ((x) < (y)))

	for (size_t pc = 0; pc < ncode; pc++) {
		const sv_insn_t *in = &code[pc];
		switch (in->op) {
		case OP_COL:
			*sp++ = row[in->arg];
			break;
		case OP_CONST:
			*sp++ = e->consts[in->arg];
			break;
		case OP_JF:
			if (sp[-1].type && !sp[-1].v.b)
				pc += in->arg - 1;
			break;
		case OP_JT:
			if (sp[-1].type && sp[-1].v.b)
				pc += in->arg - 1;
			break;
		case OP_AND: {
			TOP2;
			if ((a->type && !a->v.b) || (b->type && !b->v.b))
				*a = sv_bool(false);
			else if (!a->type || !b->type)
				*a = sv_null();
			else
				*a = sv_bool(true);
			break;
		}
		case OP_OR: {
			TOP2;
			if ((a->type && a->v.b) || (b->type && b->v.b))
				*a = sv_bool(true);
			else if (!a->type || !b->type)
				*a = sv_null();
			else
				*a = sv_bool(false);
			break;
		}
		case OP_NOT:
			if (sp[-1].type)
				sp[-1] = sv_bool(!sp[-1].v.b);
			break;
		case OP_ISNULL:
			sp[-1] = sv_bool(!sp[-1].type);
			break;
		case OP_NOTNULL:
			sp[-1] = sv_bool(sp[-1].type != SV_T_NULL);
			break;
		case OP_NEG_I:
			if (sp[-1].type)
				sp[-1] = sp[-1].v.i == INT64_MIN
					? sv_null()
					: sv_int(-sp[-1].v.i);
			break;
		case OP_NEG_F:
			if (sp[-1].type)
				sp[-1] = sv_float(-sp[-1].v.f);
			break;
		case OP_I2F:
			if (sp[-1].type)
				sp[-1] = sv_float((double)sp[-1].v.i);
			break;
		case OP_CAST:
			sv_cast_value(&sp[-1], (sv_type_t)in->k, arena,
				      &sp[-1]);
			break;
		case OP_CONCAT: {
			TOP2;
			NULL2;
			uint64_t n = (uint64_t)a->len + b->len;
			char *p = arena && n <= UINT32_MAX
				? sv_arena_alloc(arena, n ? n : 1)
				: NULL;
			if (!p) {
				*a = sv_null();
				break;
			}
			if (a->len)
				memcpy(p, a->v.s, a->len);
			if (b->len)
				memcpy(p + a->len, b->v.s, b->len);
			*a = sv_str(p, (uint32_t)n);
			break;
		}
			ARITH_I(OP_ADD_I, __builtin_add_overflow, sv_int)
			ARITH_I(OP_SUB_I, __builtin_sub_overflow, sv_int)
			ARITH_I(OP_MUL_I, __builtin_mul_overflow, sv_int)
			ARITH_I(OP_ADD_TI, __builtin_add_overflow, sv_ts)
			ARITH_I(OP_SUB_TI, __builtin_sub_overflow, sv_ts)
			ARITH_I(OP_SUB_TT, __builtin_sub_overflow, sv_int)
		case OP_DIV_I: {
			TOP2;
			NULL2;
			if (!b->v.i || (b->v.i == -1 && a->v.i == INT64_MIN))
				*a = sv_null();
			else
				*a = sv_int(a->v.i / b->v.i);
			break;
		}
		case OP_MOD_I: {
			TOP2;
			NULL2;
			if (!b->v.i)
				*a = sv_null();
			else
				*a = sv_int(b->v.i == -1 ? 0 : a->v.i % b->v.i);
			break;
		}
			ARITH_F(OP_ADD_F, a->v.f + b->v.f)
			ARITH_F(OP_SUB_F, a->v.f - b->v.f)
			ARITH_F(OP_MUL_F, a->v.f * b->v.f)
		case OP_DIV_F: {
			TOP2;
			NULL2;
			*a = b->v.f == 0 ? sv_null()
					 : sv_float(a->v.f / b->v.f);
			break;
		}
		case OP_MOD_F: {
			TOP2;
			NULL2;
			*a = b->v.f == 0 ? sv_null()
					 : sv_float(fmod(a->v.f, b->v.f));
			break;
		}
			CMP_K(K_I, CMP3(a->v.i, b->v.i))
			CMP_K(K_S, str_cmp(a, b))
			CMP_K(K_B, CMP3(a->v.b, b->v.b))
		/* floats compare directly so NaN is unordered */
		case OP_CMP + K_F * 6 + C_EQ: {
			TOP2;
			NULL2;
			*a = sv_bool(a->v.f == b->v.f);
			break;
		}
		case OP_CMP + K_F * 6 + C_NE: {
			TOP2;
			NULL2;
			*a = sv_bool(a->v.f != b->v.f);
			break;
		}
		case OP_CMP + K_F * 6 + C_LT: {
			TOP2;
			NULL2;
			*a = sv_bool(a->v.f < b->v.f);
			break;
		}
		case OP_CMP + K_F * 6 + C_LE: {
			TOP2;
			NULL2;
			*a = sv_bool(a->v.f <= b->v.f);
			break;
		}
		case OP_CMP + K_F * 6 + C_GT: {
			TOP2;
			NULL2;
			*a = sv_bool(a->v.f > b->v.f);
			break;
		}
		case OP_CMP + K_F * 6 + C_GE: {
			TOP2;
			NULL2;
			*a = sv_bool(a->v.f >= b->v.f);
			break;
		}
		case OP_CALL: {
			const sv_func_t *fn = &sv_funcs[in->arg];
			sv_value_t *args = sp - in->n, r;
			bool null = false;
			if (in->k)
				for (int i = 0; i < in->n; i++)
					null |= !args[i].type;
			if (null)
				r = sv_null();
			else
				fn->eval(args, in->n, arena, &r);
			sp = args;
			*sp++ = r;
			break;
		}
		case OP_IN: {
			sv_value_t *x = sp - in->n - 1;
			int kind = in->k & 0x0f;
			bool found = false, saw_null = false;
			for (int i = 1; i <= in->n && !found; i++) {
				if (!x[i].type)
					saw_null = true;
				else if (x->type)
					found = kind_eq(kind, x, &x[i]);
			}
			sp = x + 1;
			if (!x->type)
				break;
			bool neg = in->k & IN_NEGATED;
			*x = found         ? sv_bool(!neg)
				: saw_null ? sv_null()
					   : sv_bool(neg);
			break;
		}
		case OP_IN_CONST: {
			sv_value_t *x = sp - 1;
			if (!x->type)
				break;
			const inlist_t *l = &e->lists[in->arg];
			bool found = false;
			switch (in->k & 0x0f) {
			case K_I:
				for (uint32_t i = 0; i < l->n && !found; i++)
					found = l->v[i].v.i == x->v.i;
				break;
			case K_F:
				for (uint32_t i = 0; i < l->n && !found; i++)
					found = l->v[i].v.f == x->v.f;
				break;
			case K_S:
				for (uint32_t i = 0; i < l->n && !found; i++)
					found = str_eq(&l->v[i], x);
				break;
			default:
				for (uint32_t i = 0; i < l->n && !found; i++)
					found = l->v[i].v.b == x->v.b;
				break;
			}
			bool neg = in->k & IN_NEGATED;
			*x = found            ? sv_bool(!neg)
				: l->has_null ? sv_null()
					      : sv_bool(neg);
			break;
		}
		default:
			abort(); /* the compiler emits no other opcode */
		}
	}
	*out = stack[0];
#undef TOP2
#undef NULL2
#undef ARITH_I
#undef ARITH_F
#undef CMP_K
#undef CMP3
}

void sv_expr_eval(const sv_expr_t *expr, const sv_value_t *row,
		  sv_arena_t *arena, sv_value_t *out)
{
	if (expr->column >= 0) {
		*out = row[expr->column];
		return;
	}
	vm_run(expr, expr->code, expr->ncode, row, arena, out);
}

bool sv_expr_test(const sv_expr_t *expr, const sv_value_t *row,
		  sv_arena_t *arena)
{
	sv_value_t v;
	sv_expr_eval(expr, row, arena, &v);
	return v.type == SV_T_BOOL && v.v.b;
}

sv_type_t sv_expr_type(const sv_expr_t *expr)
{
	return expr->type;
}

bool sv_expr_nullable(const sv_expr_t *expr)
{
	return expr->nullable;
}

const char *sv_expr_text(const sv_expr_t *expr)
{
	return expr->text;
}

int sv_expr_column(const sv_expr_t *expr)
{
	return expr->column;
}

void sv_expr_destroy(sv_expr_t *expr)
{
	if (!expr)
		return;
	for (size_t i = 0; i < expr->nlists; i++)
		free(expr->lists[i].v);
	free(expr->lists);
	free(expr->consts);
	free(expr->code);
	free(expr->text);
	sv_arena_release(&expr->strings);
	free(expr);
}

/* ---- the lexer ---- */

enum {
	TK_EOF,
	TK_INT,
	TK_FLOAT,
	TK_STR,
	TK_IDENT,
	TK_QIDENT,
	TK_LP,
	TK_RP,
	TK_COMMA,
	TK_OP
};
enum {
	P_PLUS,
	P_MINUS,
	P_STAR,
	P_SLASH,
	P_PCT,
	P_EQ,
	P_NE,
	P_LT,
	P_LE,
	P_GT,
	P_GE,
	P_AND,
	P_OR,
	P_NOT
};

typedef struct tok {
	uint8_t kind, op;
	int pos; /* 1-based */
	int len; /* source length */
	const char *src;
	uint64_t u; /* TK_INT */
	double f; /* TK_FLOAT */
	const char *s; /* TK_STR, TK_QIDENT: unescaped, in expr->strings */
	uint32_t slen;
} tok_t;

typedef struct node {
	uint8_t kind; /* N_* */
	uint8_t type; /* sv_type_t */
	uint8_t op, k;
	bool nullable;
	uint16_t nkids;
	uint32_t kids; /* first index in parser.kids */
	uint32_t arg;
	uint32_t height; /* 1 for a leaf */
	int pos;
} node_t;

enum {
	N_CONST,
	N_COL,
	N_OP,
	N_AND,
	N_OR,
	N_IN
};

typedef struct parser {
	const char *text;
	const sv_schema_t *schema;
	sv_expr_t *e;
	tok_t *toks;
	size_t ntoks, cur;
	node_t *nodes;
	size_t nnodes, capnodes;
	int *kids;
	size_t nkids, capkids;
	sv_insn_t *code;
	size_t ncode, capcode;
	int sp, maxsp;
	int depth;
	sv_error_t *err;
} parser_t;

static int perr(parser_t *p, sv_errcat_t cat, int pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int perr(parser_t *p, sv_errcat_t cat, int pos, const char *fmt, ...)
{
	if (p->err)
		return -1;
	char *why = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&why, fmt, ap) < 0)
		abort();
	va_end(ap);
	p->err = sv_error_new(cat, "expression '%s' at position %d: %s",
			      p->text, pos, why);
	p->err->position = pos;
	free(why);
	return -1;
}

static bool is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Unescape a quoted token body (doubled quote = one quote) into the
 * expression's string arena. */
static void unquote(parser_t *p, tok_t *t, const char *body, size_t n, char q)
{
	char *d = sv_arena_alloc(&p->e->strings, n ? n : 1);
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		d[w++] = body[i];
		if (body[i] == q)
			i++; /* skip the second quote of a pair */
	}
	t->s = d;
	t->slen = (uint32_t)w;
}

static int lex(parser_t *p)
{
	const char *s = p->text;
	size_t n = strlen(s), i = 0, cap = 16;
	p->toks = sv_malloc(cap * sizeof(tok_t));
	for (;;) {
		while (i < n &&
		       (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
			s[i] == '\r'))
			i++;
		if (p->ntoks == cap) {
			cap *= 2;
			p->toks = sv_realloc(p->toks, cap * sizeof(tok_t));
		}
		tok_t *t = &p->toks[p->ntoks++];
		memset(t, 0, sizeof(*t));
		t->pos = (int)i + 1;
		t->src = s + i;
		if (i >= n) {
			t->kind = TK_EOF;
			return 0;
		}
		size_t st = i;
		char c = s[i];
		if (is_digit(c) ||
		    (c == '.' && i + 1 < n && is_digit(s[i + 1]))) {
			bool flt = false;
			while (i < n && is_digit(s[i]))
				i++;
			if (i < n && s[i] == '.') {
				flt = true;
				i++;
				while (i < n && is_digit(s[i]))
					i++;
			}
			if (i < n && (s[i] == 'e' || s[i] == 'E')) {
				size_t j = i + 1;
				if (j < n && (s[j] == '+' || s[j] == '-'))
					j++;
				if (j < n && is_digit(s[j])) {
					flt = true;
					i = j;
					while (i < n && is_digit(s[i]))
						i++;
				}
			}
			t->len = (int)(i - st);
			if (flt) {
				char *tmp = sv_strndup(s + st, i - st);
				t->kind = TK_FLOAT;
				t->f = strtod(tmp, NULL);
				free(tmp);
			} else {
				t->kind = TK_INT;
				uint64_t v = 0;
				for (size_t j = st; j < i; j++) {
					if (v > (UINT64_MAX - 9) / 10)
						return perr(p,
							    SV_ERR_SUBMISSION,
							    t->pos,
							    "integer "
							    "literal '%.*s' is "
							    "out of range",
							    t->len, t->src);
					v = v * 10 + (uint64_t)(s[j] - '0');
				}
				t->u = v;
			}
			continue;
		}
		if (is_ident_start(c)) {
			while (i < n && is_ident_char(s[i]))
				i++;
			t->kind = TK_IDENT;
			t->len = (int)(i - st);
			continue;
		}
		if (c == '\'' || c == '"' || c == '`') {
			/* find the closing quote; a doubled quote is literal */
			size_t j = i + 1;
			for (;;) {
				if (j >= n) {
					return perr(p, SV_ERR_SUBMISSION,
						    t->pos,
						    c == '`' ? "unterminated "
							       "quoted name"
							     : "unterminated "
							       "string");
				}
				if (s[j] == c) {
					if (j + 1 < n && s[j + 1] == c) {
						j += 2;
						continue;
					}
					break;
				}
				j++;
			}
			t->kind = c == '`' ? TK_QIDENT : TK_STR;
			unquote(p, t, s + i + 1, j - i - 1, c);
			i = j + 1;
			t->len = (int)(i - st);
			continue;
		}
		char c2 = i + 1 < n ? s[i + 1] : '\0';
		int op = -1, len = 1;
		switch (c) {
		case '(':
			t->kind = TK_LP;
			break;
		case ')':
			t->kind = TK_RP;
			break;
		case ',':
			t->kind = TK_COMMA;
			break;
		case '+':
			op = P_PLUS;
			break;
		case '-':
			op = P_MINUS;
			break;
		case '*':
			op = P_STAR;
			break;
		case '/':
			op = P_SLASH;
			break;
		case '%':
			op = P_PCT;
			break;
		case '=':
			op = P_EQ;
			len = c2 == '=' ? 2 : 1;
			break;
		case '!':
			op = c2 == '=' ? P_NE : P_NOT;
			len = c2 == '=' ? 2 : 1;
			break;
		case '<':
			op = c2 == '=' ? P_LE : c2 == '>' ? P_NE : P_LT;
			len = (c2 == '=' || c2 == '>') ? 2 : 1;
			break;
		case '>':
			op = c2 == '=' ? P_GE : P_GT;
			len = c2 == '=' ? 2 : 1;
			break;
		case '&':
			if (c2 == '&') {
				op = P_AND;
				len = 2;
			}
			break;
		case '|':
			if (c2 == '|') {
				op = P_OR;
				len = 2;
			}
			break;
		default:
			break;
		}
		if (op >= 0) {
			t->kind = TK_OP;
			t->op = (uint8_t)op;
		} else if (t->kind == TK_EOF) {
			/* not a token: show the whole UTF-8 sequence */
			int cl = 1;
			while (i + (size_t)cl < n &&
			       ((unsigned char)s[i + (size_t)cl] & 0xC0) ==
				       0x80)
				cl++;
			return perr(p, SV_ERR_SUBMISSION, t->pos,
				    "unexpected character '%.*s'", cl, s + i);
		}
		i += (size_t)len;
		t->len = len;
	}
}

/* ---- parser helpers ---- */

static tok_t *cur(parser_t *p)
{
	return &p->toks[p->cur];
}

static tok_t *peek(parser_t *p, size_t ahead)
{
	size_t i = p->cur + ahead;
	return &p->toks[i < p->ntoks ? i : p->ntoks - 1];
}

static bool tok_kw(const tok_t *t, const char *kw)
{
	return t->kind == TK_IDENT && (size_t)t->len == strlen(kw) &&
		!strncasecmp(t->src, kw, (size_t)t->len);
}

static bool tok_op(const tok_t *t, int op)
{
	return t->kind == TK_OP && t->op == op;
}

static bool is_reserved(const tok_t *t)
{
	static const char *const kws[] = {"and", "or", "not", "is", "in", "as"};
	for (size_t i = 0; i < SV_ARRAY_LEN(kws); i++)
		if (tok_kw(t, kws[i]))
			return true;
	return false;
}

static uint32_t add_const(parser_t *p, sv_value_t v)
{
	sv_expr_t *e = p->e;
	if (e->nconsts == e->capconsts) {
		e->capconsts = e->capconsts ? e->capconsts * 2 : 8;
		e->consts = sv_realloc(e->consts,
				       e->capconsts * sizeof(sv_value_t));
	}
	e->consts[e->nconsts] = v;
	return (uint32_t)e->nconsts++;
}

static int new_node(parser_t *p, uint8_t kind, sv_type_t type, bool nullable,
		    int pos, const int *kids, int nkids)
{
	if (p->nnodes == p->capnodes) {
		p->capnodes = p->capnodes ? p->capnodes * 2 : 32;
		p->nodes = sv_realloc(p->nodes, p->capnodes * sizeof(node_t));
	}
	if (p->nkids + (size_t)nkids > p->capkids) {
		while (p->nkids + (size_t)nkids > p->capkids)
			p->capkids = p->capkids ? p->capkids * 2 : 32;
		p->kids = sv_realloc(p->kids, p->capkids * sizeof(int));
	}
	node_t *nd = &p->nodes[p->nnodes];
	memset(nd, 0, sizeof(*nd));
	nd->kind = kind;
	nd->type = (uint8_t)type;
	nd->nullable = nullable;
	nd->pos = pos;
	nd->kids = (uint32_t)p->nkids;
	nd->nkids = (uint16_t)nkids;
	nd->height = 1;
	for (int i = 0; i < nkids; i++) {
		p->kids[p->nkids++] = kids[i];
		if (p->nodes[kids[i]].height >= nd->height)
			nd->height = p->nodes[kids[i]].height + 1;
	}
	return (int)p->nnodes++;
}

static node_t *N(parser_t *p, int id)
{
	return &p->nodes[id];
}

static int kid(parser_t *p, int id, int i)
{
	return p->kids[p->nodes[id].kids + (uint32_t)i];
}

static int mk_const(parser_t *p, sv_value_t v, sv_type_t type, int pos)
{
	int id = new_node(p, N_CONST, type, v.type == SV_T_NULL, pos, NULL, 0);
	N(p, id)->arg = add_const(p, v);
	return id;
}

static bool is_const(parser_t *p, int id)
{
	return N(p, id)->kind == N_CONST;
}

static bool is_null_const(parser_t *p, int id)
{
	return is_const(p, id) && !p->e->consts[N(p, id)->arg].type;
}

static const sv_value_t *const_val(parser_t *p, int id)
{
	return &p->e->consts[N(p, id)->arg];
}

/* ---- code emission ---- */

static size_t put(parser_t *p, uint8_t op, uint8_t k, uint16_t n, uint32_t arg)
{
	if (p->ncode == p->capcode) {
		p->capcode = p->capcode ? p->capcode * 2 : 32;
		p->code = sv_realloc(p->code, p->capcode * sizeof(sv_insn_t));
	}
	p->code[p->ncode] = (sv_insn_t){.op = op, .k = k, .n = n, .arg = arg};
	return p->ncode++;
}

static void stack_push(parser_t *p, int delta)
{
	p->sp += delta;
	if (p->sp > p->maxsp)
		p->maxsp = p->sp;
}

static void emit(parser_t *p, int id)
{
	node_t nd = *N(p, id);
	switch (nd.kind) {
	case N_CONST:
		put(p, OP_CONST, 0, 0, nd.arg);
		stack_push(p, 1);
		break;
	case N_COL:
		put(p, OP_COL, 0, 0, nd.arg);
		stack_push(p, 1);
		break;
	case N_OP:
		for (int i = 0; i < nd.nkids; i++)
			emit(p, kid(p, id, i));
		put(p, nd.op, nd.k, nd.nkids, nd.arg);
		stack_push(p, 1 - nd.nkids);
		break;
	case N_AND:
	case N_OR: {
		emit(p, kid(p, id, 0));
		size_t j = put(p, nd.kind == N_AND ? OP_JF : OP_JT, 0, 0, 0);
		emit(p, kid(p, id, 1));
		put(p, nd.kind == N_AND ? OP_AND : OP_OR, 0, 0, 0);
		stack_push(p, -1);
		p->code[j].arg = (uint32_t)(p->ncode - j);
		break;
	}
	case N_IN: {
		emit(p, kid(p, id, 0));
		int nitems = nd.nkids - 1;
		bool all_const = true;
		for (int i = 1; i <= nitems; i++)
			all_const &= is_const(p, kid(p, id, i));
		if (!all_const) {
			for (int i = 1; i <= nitems; i++)
				emit(p, kid(p, id, i));
			put(p, OP_IN, nd.k, (uint16_t)nitems, 0);
			stack_push(p, -nitems);
			break;
		}
		sv_expr_t *e = p->e;
		e->lists = sv_realloc(e->lists,
				      (e->nlists + 1) * sizeof(inlist_t));
		inlist_t *l = &e->lists[e->nlists];
		l->v = sv_malloc((size_t)nitems * sizeof(sv_value_t));
		l->n = 0;
		l->has_null = false;
		for (int i = 1; i <= nitems; i++) {
			const sv_value_t *v = const_val(p, kid(p, id, i));
			if (v->type)
				l->v[l->n++] = *v;
			else
				l->has_null = true;
		}
		put(p, OP_IN_CONST, nd.k, 0, (uint32_t)e->nlists++);
		break;
	}
	}
}

/* Replace node id by its value when all its operands are constants. */
static int fold(parser_t *p, int id)
{
	node_t *nd = N(p, id);
	if (nd->kind == N_CONST || nd->kind == N_COL)
		return id;
	for (int i = 0; i < nd->nkids; i++)
		if (!is_const(p, kid(p, id, i)))
			return id;
	size_t start = p->ncode;
	int sp = p->sp, maxsp = p->maxsp;
	emit(p, id);
	sv_value_t v;
	vm_run(p->e, p->code + start, p->ncode - start, NULL, &p->e->strings,
	       &v);
	p->ncode = start;
	p->sp = sp;
	p->maxsp = maxsp;
	nd = N(p, id);
	nd->kind = N_CONST;
	nd->nkids = 0;
	nd->height = 1;
	nd->arg = add_const(p, v);
	nd->nullable = v.type == SV_T_NULL;
	return id;
}

static int mk_op(parser_t *p, uint8_t op, uint8_t k, uint32_t arg,
		 sv_type_t type, bool nullable, int pos, const int *kids,
		 int nkids)
{
	int id = new_node(p, N_OP, type, nullable, pos, kids, nkids);
	N(p, id)->op = op;
	N(p, id)->k = k;
	N(p, id)->arg = arg;
	return fold(p, id);
}

static int mk_cast(parser_t *p, int x, sv_type_t to, int pos)
{
	node_t *nd = N(p, x);
	if (nd->type == to)
		return x;
	if (nd->type == SV_T_NULL) { /* a null of no type becomes typed */
		nd->type = (uint8_t)to;
		return x;
	}
	bool nullable = nd->nullable || sv_cast_may_fail(nd->type, to);
	if (nd->type == SV_T_INT64 && to == SV_T_FLOAT64)
		return mk_op(p, OP_I2F, 0, 0, to, nullable, pos, &x, 1);
	return mk_op(p, OP_CAST, (uint8_t)to, 0, to, nullable, pos, &x, 1);
}

/* A string constant compared with a timestamp is read as a timestamp. */
static int ts_literal(parser_t *p, int id)
{
	const sv_value_t *v = const_val(p, id);
	int64_t ms;
	if (!sv_parse_timestamp(v->v.s, v->len, &ms))
		return perr(p, SV_ERR_SUBMISSION, N(p, id)->pos,
			    "cannot read '%.*s' as timestamp_ms", (int)v->len,
			    v->v.s);
	return mk_const(p, sv_ts(ms), SV_T_TIMESTAMP, N(p, id)->pos);
}

static bool is_str_const(parser_t *p, int id)
{
	return is_const(p, id) && N(p, id)->type == SV_T_STRING &&
		!is_null_const(p, id);
}

/* Comparison kind and common type of two operand types, or -1. */
static int cmp_kind(sv_type_t a, sv_type_t b, sv_type_t *common)
{
	bool ia = a == SV_T_INT64 || a == SV_T_TIMESTAMP;
	bool ib = b == SV_T_INT64 || b == SV_T_TIMESTAMP;
	if (ia && ib) {
		*common = a;
		return K_I;
	}
	if ((a == SV_T_INT64 || a == SV_T_FLOAT64) &&
	    (b == SV_T_INT64 || b == SV_T_FLOAT64)) {
		*common = SV_T_FLOAT64;
		return K_F;
	}
	if (a != b)
		return -1;
	*common = a;
	return a == SV_T_STRING ? K_S : a == SV_T_BOOL ? K_B : -1;
}

static int type_error2(parser_t *p, const tok_t *op, sv_type_t a, sv_type_t b)
{
	return perr(p, SV_ERR_SUBMISSION, op->pos,
		    "operator '%.*s' cannot apply to %s and %s", op->len,
		    op->src, sv_type_name(a), sv_type_name(b));
}

static int mk_cmp(parser_t *p, const tok_t *op, int l, int r)
{
	static const uint8_t cmp_of[] = {
		[P_EQ] = C_EQ, [P_NE] = C_NE, [P_LT] = C_LT,
		[P_LE] = C_LE, [P_GT] = C_GT, [P_GE] = C_GE,
	};
	sv_type_t tl = N(p, l)->type, tr = N(p, r)->type;
	if (tl == SV_T_NULL || tr == SV_T_NULL)
		return mk_const(p, sv_null(), SV_T_BOOL, op->pos);
	if (tl == SV_T_TIMESTAMP && is_str_const(p, r)) {
		if ((r = ts_literal(p, r)) < 0)
			return -1;
		tr = SV_T_TIMESTAMP;
	} else if (tr == SV_T_TIMESTAMP && is_str_const(p, l)) {
		if ((l = ts_literal(p, l)) < 0)
			return -1;
		tl = SV_T_TIMESTAMP;
	}
	sv_type_t common;
	int kind = cmp_kind(tl, tr, &common);
	if (kind < 0)
		return type_error2(p, op, tl, tr);
	if (kind == K_F) {
		l = mk_cast(p, l, SV_T_FLOAT64, N(p, l)->pos);
		r = mk_cast(p, r, SV_T_FLOAT64, N(p, r)->pos);
	}
	int kids[2] = {l, r};
	return mk_op(p, (uint8_t)(OP_CMP + kind * 6 + cmp_of[op->op]), 0, 0,
		     SV_T_BOOL, N(p, l)->nullable || N(p, r)->nullable, op->pos,
		     kids, 2);
}

static int mk_arith(parser_t *p, const tok_t *op, int l, int r)
{
	sv_type_t tl0 = N(p, l)->type, tr0 = N(p, r)->type;
	sv_type_t tl = tl0, tr = tr0;
	bool null = tl == SV_T_NULL || tr == SV_T_NULL;
	if (tl == SV_T_NULL && tr == SV_T_NULL)
		return mk_const(p, sv_null(), SV_T_NULL, op->pos);
	/* a null literal takes the type that makes the operation valid */
	if (tl == SV_T_NULL)
		tl = tr == SV_T_TIMESTAMP ? SV_T_INT64 : tr;
	if (tr == SV_T_NULL)
		tr = tl == SV_T_TIMESTAMP ? SV_T_INT64 : tl;
	int o = op->op, opc = -1;
	sv_type_t rt = SV_T_NULL;
	bool nullable = true; /* overflow, division by zero */
	bool flt = false;
	if (tl == SV_T_STRING && tr == SV_T_STRING) {
		if (o == P_PLUS) {
			opc = OP_CONCAT;
			rt = SV_T_STRING;
			nullable = N(p, l)->nullable || N(p, r)->nullable;
		}
	} else if (tl == SV_T_INT64 && tr == SV_T_INT64) {
		static const uint8_t ops[] = {
			[P_PLUS] = OP_ADD_I, [P_MINUS] = OP_SUB_I,
			[P_STAR] = OP_MUL_I, [P_SLASH] = OP_DIV_I,
			[P_PCT] = OP_MOD_I,
		};
		opc = ops[o];
		rt = SV_T_INT64;
	} else if ((tl == SV_T_INT64 || tl == SV_T_FLOAT64) &&
		   (tr == SV_T_INT64 || tr == SV_T_FLOAT64)) {
		static const uint8_t ops[] = {
			[P_PLUS] = OP_ADD_F, [P_MINUS] = OP_SUB_F,
			[P_STAR] = OP_MUL_F, [P_SLASH] = OP_DIV_F,
			[P_PCT] = OP_MOD_F,
		};
		opc = ops[o];
		rt = SV_T_FLOAT64;
		flt = true;
		nullable = o == P_SLASH || o == P_PCT || N(p, l)->nullable ||
			N(p, r)->nullable;
	} else if (tl == SV_T_TIMESTAMP && tr == SV_T_INT64 &&
		   (o == P_PLUS || o == P_MINUS)) {
		opc = o == P_PLUS ? OP_ADD_TI : OP_SUB_TI;
		rt = SV_T_TIMESTAMP;
	} else if (tl == SV_T_INT64 && tr == SV_T_TIMESTAMP && o == P_PLUS) {
		int t = l; /* int + ts == ts + int */
		l = r;
		r = t;
		opc = OP_ADD_TI;
		rt = SV_T_TIMESTAMP;
	} else if (tl == SV_T_TIMESTAMP && tr == SV_T_TIMESTAMP &&
		   o == P_MINUS) {
		opc = OP_SUB_TT;
		rt = SV_T_INT64;
	}
	if (opc < 0)
		return type_error2(p, op, tl0, tr0);
	if (null)
		return mk_const(p, sv_null(), rt, op->pos);
	if (flt) {
		l = mk_cast(p, l, SV_T_FLOAT64, N(p, l)->pos);
		r = mk_cast(p, r, SV_T_FLOAT64, N(p, r)->pos);
	}
	int kids[2] = {l, r};
	return mk_op(p, (uint8_t)opc, 0, 0, rt, nullable, op->pos, kids, 2);
}

static int mk_logic(parser_t *p, const tok_t *op, bool is_and, int l, int r)
{
	sv_type_t tl = N(p, l)->type, tr = N(p, r)->type;
	if ((tl != SV_T_BOOL && tl != SV_T_NULL) ||
	    (tr != SV_T_BOOL && tr != SV_T_NULL))
		return type_error2(p, op, tl, tr);
	N(p, l)->type = N(p, r)->type = SV_T_BOOL;
	int kids[2] = {l, r};
	int id = new_node(p, is_and ? N_AND : N_OR, SV_T_BOOL,
			  N(p, l)->nullable || N(p, r)->nullable, op->pos, kids,
			  2);
	return fold(p, id);
}

/* ---- the grammar ---- */

static int parse_or(parser_t *p);

static int enter(parser_t *p)
{
	if (++p->depth > SV_EXPR_MAX_DEPTH)
		return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
			    "expression is nested too deeply");
	return 0;
}

static int expect_operand(parser_t *p)
{
	return perr(p, SV_ERR_SUBMISSION, cur(p)->pos, "expected an operand");
}

/* Called after each link of an operator chain (the loops below). */
static int check_height(parser_t *p, const tok_t *op, int id)
{
	if (id >= 0 && N(p, id)->height > SV_EXPR_MAX_HEIGHT)
		return perr(p, SV_ERR_SUBMISSION, op->pos,
			    "expression is too complex (more than %d nested "
			    "operations)",
			    SV_EXPR_MAX_HEIGHT);
	return id;
}

static int column_ref(parser_t *p, const tok_t *t, const char *name, size_t len)
{
	int c = sv_schema_findn(p->schema, name, len);
	if (c < 0)
		return perr(p, SV_ERR_SUBMISSION, t->pos,
			    "unknown column '%.*s'", (int)len, name);
	const sv_field_t *f = &p->schema->fields[c];
	int id = new_node(p, N_COL, f->type, f->nullable, t->pos, NULL, 0);
	N(p, id)->arg = (uint32_t)c;
	return id;
}

static bool parse_type_name(const tok_t *t, sv_type_t *out)
{
	static const struct {
		const char *name;
		sv_type_t type;
	} names[] = {
		{"bool", SV_T_BOOL},
		{"boolean", SV_T_BOOL},
		{"int64", SV_T_INT64},
		{"int", SV_T_INT64},
		{"integer", SV_T_INT64},
		{"bigint", SV_T_INT64},
		{"float64", SV_T_FLOAT64},
		{"double", SV_T_FLOAT64},
		{"float", SV_T_FLOAT64},
		{"string", SV_T_STRING},
		{"varchar", SV_T_STRING},
		{"text", SV_T_STRING},
		{"timestamp_ms", SV_T_TIMESTAMP},
		{"timestamp", SV_T_TIMESTAMP},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(names); i++) {
		if (tok_kw(t, names[i].name)) {
			*out = names[i].type;
			return true;
		}
	}
	return false;
}

static int parse_cast(parser_t *p, const tok_t *name)
{
	int x = parse_or(p);
	if (x < 0)
		return -1;
	if (!tok_kw(cur(p), "as"))
		return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
			    "expected AS in cast");
	p->cur++;
	const tok_t *tt = cur(p);
	sv_type_t to;
	if (tt->kind != TK_IDENT)
		return perr(p, SV_ERR_SUBMISSION, tt->pos,
			    "expected a type name");
	if (!parse_type_name(tt, &to))
		return perr(p, SV_ERR_SUBMISSION, tt->pos,
			    "unknown type '%.*s'", tt->len, tt->src);
	p->cur++;
	if (cur(p)->kind != TK_RP)
		return perr(p, SV_ERR_SUBMISSION, cur(p)->pos, "expected ')'");
	p->cur++;
	sv_type_t from = N(p, x)->type;
	if (!sv_cast_allowed(from, to))
		return perr(p, SV_ERR_SUBMISSION, name->pos,
			    "cannot cast %s to %s", sv_type_name(from),
			    sv_type_name(to));
	return mk_cast(p, x, to, name->pos);
}

static int parse_call(parser_t *p, const tok_t *name)
{
	p->cur++; /* '(' */
	if (tok_kw(name, "cast"))
		return parse_cast(p, name);
	/* looked up before the arguments are read, so a function we do not
	 * have is reported as the coverage gap it is, whatever its arguments */
	int fi = sv_func_find(name->src, (size_t)name->len);
	if (fi < 0)
		return perr(p, SV_ERR_COVERAGE, name->pos,
			    "function '%.*s' is not in the registry", name->len,
			    name->src);
	int args[SV_FUNC_MAX_ARGS], n = 0;
	if (cur(p)->kind == TK_RP) {
		p->cur++;
	} else {
		for (;;) {
			if (n == SV_FUNC_MAX_ARGS)
				return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
					    "too many arguments (at most %d)",
					    SV_FUNC_MAX_ARGS);
			if ((args[n++] = parse_or(p)) < 0)
				return -1;
			if (cur(p)->kind == TK_COMMA) {
				p->cur++;
				continue;
			}
			if (cur(p)->kind == TK_RP) {
				p->cur++;
				break;
			}
			return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
				    "expected ',' or ')'");
		}
	}
	const sv_func_t *fn = &sv_funcs[fi];
	if (n < fn->min_args || n > fn->max_args) {
		char want[64];
		if (fn->min_args == fn->max_args)
			snprintf(want, sizeof(want), "%d argument%s",
				 fn->min_args, fn->min_args == 1 ? "" : "s");
		else if (fn->max_args == SV_FUNC_VARIADIC)
			snprintf(want, sizeof(want), "at least %d argument%s",
				 fn->min_args, fn->min_args == 1 ? "" : "s");
		else
			snprintf(want, sizeof(want), "%d to %d arguments",
				 fn->min_args, fn->max_args);
		return perr(p, SV_ERR_SUBMISSION, name->pos,
			    "function '%s' takes %s, got %d", fn->name, want,
			    n);
	}
	sv_fcheck_t fc;
	memset(&fc, 0, sizeof(fc));
	fc.nargs = n;
	for (int i = 0; i < n; i++) {
		fc.arg[i] = fc.want[i] = N(p, args[i])->type;
		fc.nullable[i] = N(p, args[i])->nullable;
		fc.ret_nullable |= fc.nullable[i];
	}
	if (!fn->check(fn, &fc))
		return perr(p, SV_ERR_SUBMISSION, name->pos, "%s", fc.why);
	bool null_arg = false;
	for (int i = 0; i < n; i++) {
		args[i] = mk_cast(p, args[i], fc.want[i], N(p, args[i])->pos);
		if (args[i] < 0)
			return -1;
		null_arg |= is_null_const(p, args[i]);
	}
	bool strict = fn->flags & SV_FN_STRICT;
	if (strict && null_arg)
		return mk_const(p, sv_null(), fc.ret, name->pos);
	return mk_op(p, OP_CALL, strict, (uint32_t)fi, fc.ret, fc.ret_nullable,
		     name->pos, args, n);
}

static int parse_primary(parser_t *p)
{
	tok_t *t = cur(p);
	switch (t->kind) {
	case TK_INT:
		if (t->u > (uint64_t)INT64_MAX)
			return perr(p, SV_ERR_SUBMISSION, t->pos,
				    "integer literal '%.*s' is out of range",
				    t->len, t->src);
		p->cur++;
		return mk_const(p, sv_int((int64_t)t->u), SV_T_INT64, t->pos);
	case TK_FLOAT:
		p->cur++;
		return mk_const(p, sv_float(t->f), SV_T_FLOAT64, t->pos);
	case TK_STR:
		p->cur++;
		return mk_const(p, sv_str(t->s, t->slen), SV_T_STRING, t->pos);
	case TK_QIDENT:
		p->cur++;
		return column_ref(p, t, t->s, t->slen);
	case TK_LP: {
		p->cur++;
		int x = parse_or(p);
		if (x < 0)
			return -1;
		if (cur(p)->kind != TK_RP)
			return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
				    "expected ')'");
		p->cur++;
		return x;
	}
	case TK_IDENT:
		if (tok_kw(t, "true") || tok_kw(t, "false")) {
			p->cur++;
			return mk_const(p, sv_bool(tok_kw(t, "true")),
					SV_T_BOOL, t->pos);
		}
		if (tok_kw(t, "null")) {
			p->cur++;
			return mk_const(p, sv_null(), SV_T_NULL, t->pos);
		}
		/* a keyword is never a function name: "x + in (1)" is a syntax
		 * error, not a call of a function 'in' */
		if (is_reserved(t))
			return expect_operand(p);
		if (peek(p, 1)->kind == TK_LP) {
			p->cur++;
			return parse_call(p, t);
		}
		p->cur++;
		return column_ref(p, t, t->src, (size_t)t->len);
	default:
		return expect_operand(p);
	}
}

static int parse_unary(parser_t *p)
{
	tok_t *t = cur(p);
	if (!tok_op(t, P_MINUS))
		return parse_primary(p);
	if (enter(p) < 0)
		return -1;
	p->cur++;
	tok_t *lit = cur(p);
	int x;
	if (lit->kind == TK_INT) {
		/* so that -9223372036854775808 is a valid literal */
		if (lit->u > (uint64_t)INT64_MAX + 1)
			return perr(p, SV_ERR_SUBMISSION, lit->pos,
				    "integer literal '%.*s' is out of range",
				    lit->len, lit->src);
		p->cur++;
		x = mk_const(p, sv_int((int64_t)(0 - lit->u)), SV_T_INT64,
			     t->pos);
	} else {
		if ((x = parse_unary(p)) < 0)
			return -1;
		sv_type_t tx = N(p, x)->type;
		if (tx == SV_T_INT64)
			x = mk_op(p, OP_NEG_I, 0, 0, tx, true, t->pos, &x, 1);
		else if (tx == SV_T_FLOAT64)
			x = mk_op(p, OP_NEG_F, 0, 0, tx, N(p, x)->nullable,
				  t->pos, &x, 1);
		else if (tx != SV_T_NULL)
			x = perr(p, SV_ERR_SUBMISSION, t->pos,
				 "operator '-' cannot apply to %s",
				 sv_type_name(tx));
	}
	p->depth--;
	return x;
}

static int parse_mul(parser_t *p)
{
	int l = parse_unary(p);
	while (l >= 0 &&
	       (tok_op(cur(p), P_STAR) || tok_op(cur(p), P_SLASH) ||
		tok_op(cur(p), P_PCT))) {
		const tok_t *op = cur(p);
		p->cur++;
		int r = parse_unary(p);
		if (r < 0)
			return -1;
		l = check_height(p, op, mk_arith(p, op, l, r));
	}
	return l;
}

static int parse_add(parser_t *p)
{
	int l = parse_mul(p);
	while (l >= 0 && (tok_op(cur(p), P_PLUS) || tok_op(cur(p), P_MINUS))) {
		const tok_t *op = cur(p);
		p->cur++;
		int r = parse_mul(p);
		if (r < 0)
			return -1;
		l = check_height(p, op, mk_arith(p, op, l, r));
	}
	return l;
}

static int parse_in(parser_t *p, const tok_t *op, int x, bool negated)
{
	if (cur(p)->kind != TK_LP)
		return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
			    "expected '(' after IN");
	p->cur++;
	int items[SV_FUNC_MAX_ARGS + 1], n = 0;
	items[n++] = x;
	for (;;) {
		if (n == SV_FUNC_MAX_ARGS + 1)
			return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
				    "too many items in IN (at most %d)",
				    SV_FUNC_MAX_ARGS);
		if ((items[n++] = parse_or(p)) < 0)
			return -1;
		if (cur(p)->kind == TK_COMMA) {
			p->cur++;
			continue;
		}
		if (cur(p)->kind == TK_RP) {
			p->cur++;
			break;
		}
		return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
			    "expected ',' or ')'");
	}
	sv_type_t t = N(p, x)->type;
	if (t == SV_T_NULL)
		return mk_const(p, sv_null(), SV_T_BOOL, op->pos);
	int kind;
	bool nullable = N(p, x)->nullable;
	for (int i = 1; i < n; i++) {
		if (t == SV_T_TIMESTAMP && is_str_const(p, items[i]) &&
		    (items[i] = ts_literal(p, items[i])) < 0)
			return -1;
		sv_type_t ti = N(p, items[i])->type, common;
		nullable |= N(p, items[i])->nullable;
		if (ti == SV_T_NULL)
			continue;
		int k = cmp_kind(t, ti, &common);
		if (k < 0)
			return perr(p, SV_ERR_SUBMISSION, N(p, items[i])->pos,
				    "operator '%.*s' cannot apply to %s and %s",
				    op->len, op->src, sv_type_name(t),
				    sv_type_name(ti));
		if (k == K_F)
			t = SV_T_FLOAT64;
	}
	/* a float64 item met late widens the comparison to float64: the
	 * items checked before it (a timestamp_ms, say) must take that too */
	for (int i = 1; i < n && t == SV_T_FLOAT64; i++) {
		sv_type_t ti = N(p, items[i])->type, common;
		if (ti != SV_T_NULL && cmp_kind(t, ti, &common) < 0)
			return perr(p, SV_ERR_SUBMISSION, N(p, items[i])->pos,
				    "operator '%.*s' cannot apply to %s and %s",
				    op->len, op->src, sv_type_name(t),
				    sv_type_name(ti));
	}
	kind = t == SV_T_FLOAT64   ? K_F
		: t == SV_T_STRING ? K_S
		: t == SV_T_BOOL   ? K_B
				   : K_I;
	for (int i = 0; i < n; i++) {
		sv_type_t ti = N(p, items[i])->type;
		if (ti == SV_T_NULL || (kind == K_F && ti == SV_T_INT64))
			items[i] = mk_cast(p, items[i],
					   kind == K_F ? SV_T_FLOAT64 : t,
					   N(p, items[i])->pos);
	}
	int id = new_node(p, N_IN, SV_T_BOOL, nullable, op->pos, items, n);
	N(p, id)->k = (uint8_t)(kind | (negated ? IN_NEGATED : 0));
	return fold(p, id);
}

static int parse_cmp(parser_t *p)
{
	int l = parse_add(p);
	if (l < 0)
		return -1;
	const tok_t *t = cur(p);
	if (t->kind == TK_OP && t->op >= P_EQ && t->op <= P_GE) {
		p->cur++;
		int r = parse_add(p);
		if (r < 0)
			return -1;
		return mk_cmp(p, t, l, r);
	}
	if (tok_kw(t, "is")) {
		p->cur++;
		bool neg = false;
		if (tok_kw(cur(p), "not")) {
			neg = true;
			p->cur++;
		}
		if (!tok_kw(cur(p), "null"))
			return perr(p, SV_ERR_SUBMISSION, cur(p)->pos,
				    "expected NULL after IS%s",
				    neg ? " NOT" : "");
		p->cur++;
		if (!N(p, l)->nullable) /* decided at parse time */
			return mk_const(p, sv_bool(neg), SV_T_BOOL, t->pos);
		return mk_op(p, neg ? OP_NOTNULL : OP_ISNULL, 0, 0, SV_T_BOOL,
			     false, t->pos, &l, 1);
	}
	if (tok_kw(t, "in")) {
		p->cur++;
		return parse_in(p, t, l, false);
	}
	if (tok_kw(t, "not") && tok_kw(peek(p, 1), "in")) {
		p->cur += 2;
		return parse_in(p, t, l, true);
	}
	return l;
}

static int parse_not(parser_t *p)
{
	tok_t *t = cur(p);
	if (!tok_op(t, P_NOT) && !tok_kw(t, "not"))
		return parse_cmp(p);
	if (enter(p) < 0)
		return -1;
	p->cur++;
	int x = parse_not(p);
	if (x >= 0) {
		sv_type_t tx = N(p, x)->type;
		if (tx == SV_T_NULL)
			x = mk_const(p, sv_null(), SV_T_BOOL, t->pos);
		else if (tx != SV_T_BOOL)
			x = perr(p, SV_ERR_SUBMISSION, t->pos,
				 "operator '%.*s' cannot apply to %s", t->len,
				 t->src, sv_type_name(tx));
		else
			x = mk_op(p, OP_NOT, 0, 0, SV_T_BOOL, N(p, x)->nullable,
				  t->pos, &x, 1);
	}
	p->depth--;
	return x;
}

static int parse_and(parser_t *p)
{
	int l = parse_not(p);
	while (l >= 0 && (tok_op(cur(p), P_AND) || tok_kw(cur(p), "and"))) {
		const tok_t *op = cur(p);
		p->cur++;
		int r = parse_not(p);
		if (r < 0)
			return -1;
		l = check_height(p, op, mk_logic(p, op, true, l, r));
	}
	return l;
}

static int parse_or(parser_t *p)
{
	if (enter(p) < 0)
		return -1;
	int l = parse_and(p);
	while (l >= 0 && (tok_op(cur(p), P_OR) || tok_kw(cur(p), "or"))) {
		const tok_t *op = cur(p);
		p->cur++;
		int r = parse_and(p);
		if (r < 0)
			return -1;
		l = check_height(p, op, mk_logic(p, op, false, l, r));
	}
	p->depth--;
	return l;
}

sv_error_t *sv_expr_parse(const char *text, const sv_schema_t *schema,
			  sv_expr_t **out)
{
	*out = NULL;
	parser_t p;
	memset(&p, 0, sizeof(p));
	p.text = text ? text : "";
	p.schema = schema;
	p.e = sv_calloc(1, sizeof(sv_expr_t));
	p.e->text = sv_strdup(p.text);
	p.e->column = -1;
	sv_arena_init(&p.e->strings);

	int root = -1;
	if (lex(&p) == 0) {
		root = parse_or(&p);
		if (root >= 0 && cur(&p)->kind != TK_EOF)
			root = perr(&p, SV_ERR_SUBMISSION, cur(&p)->pos,
				    "unexpected '%.*s'", cur(&p)->len,
				    cur(&p)->src);
	}
	if (root >= 0) {
		p.ncode = 0;
		p.sp = p.maxsp = 0;
		emit(&p, root);
		if (p.maxsp > SV_EXPR_STACK)
			root = perr(&p, SV_ERR_SUBMISSION, 1,
				    "expression is too complex");
	}
	sv_error_t *err = p.err;
	if (root >= 0) {
		sv_expr_t *e = p.e;
		const node_t *nd = N(&p, root);
		e->type = (sv_type_t)nd->type;
		e->nullable = nd->nullable;
		e->column = nd->kind == N_COL ? (int)nd->arg : -1;
		e->code = p.code;
		e->ncode = p.ncode;
		p.code = NULL;
		*out = e;
	} else {
		sv_expr_destroy(p.e);
	}
	free(p.code);
	free(p.toks);
	free(p.nodes);
	free(p.kids);
	return err;
}
