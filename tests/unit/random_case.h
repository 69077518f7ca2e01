/* random_case.h — the scaffolding of the randomized operator tests
 * (test_window_random.c, test_join_random.c): output rows as text lines
 * compared as multisets, the seeded generator that draws every case, the
 * stable arrival order, and the dump of a mismatch. Each test keeps its own
 * case shape, operator runner and brute-force reference. */
#ifndef SV_TEST_RANDOM_CASE_H
#define SV_TEST_RANDOM_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/record.h"

/* The keys a case draws from ("" included; -1 is the null key). */
#define NKEYS 4
static const char *const KEYS[NKEYS] = {"a", "b", "c", ""};

/* ---- output lines ---- */

typedef struct lines {
	char **v;
	size_t n, cap;
} lines_t;

static inline void lines_add(lines_t *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, l->cap * sizeof(char *));
	}
	l->v[l->n++] = strdup(s);
}

static inline void lines_free(lines_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static inline int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort both and compare: the same multiset of lines. */
static inline bool same_lines(lines_t *a, lines_t *b)
{
	if (a->n)
		qsort(a->v, a->n, sizeof(char *), str_cmp);
	if (b->n)
		qsort(b->v, b->n, sizeof(char *), str_cmp);
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]))
			return false;
	return true;
}

/* One cell as text at *p (null: "~", strings quoted), advancing *p. */
static inline void fmt_value(char **p, char *end, const sv_value_t *v)
{
	size_t room = (size_t)(end - *p);
	int n = 0;
	switch (v->type) {
	case SV_T_NULL:
		n = snprintf(*p, room, "~");
		break;
	case SV_T_BOOL:
		n = snprintf(*p, room, "%d", v->v.b);
		break;
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		n = snprintf(*p, room, "%lld", (long long)v->v.i);
		break;
	case SV_T_FLOAT64:
		n = snprintf(*p, room, "%.17g", v->v.f);
		break;
	case SV_T_STRING:
		n = snprintf(*p, room, "'%.*s'", (int)v->len, v->v.s);
		break;
	default:
		n = snprintf(*p, room, "?");
	}
	*p += n;
}

/* A row's n cells joined by '|' into buf; returns the end of the text. */
static inline char *fmt_cells(char *buf, size_t cap, const sv_value_t *row,
			      size_t n)
{
	char *p = buf, *end = buf + cap;
	*p = '\0';
	for (size_t c = 0; c < n; c++) {
		if (c)
			*p++ = '|';
		fmt_value(&p, end, &row[c]);
	}
	return p;
}

/* At most max lines of l to stderr (a mismatch's evidence). */
static inline void dump(const char *what, const lines_t *l, size_t max)
{
	fprintf(stderr, "%s (%zu rows):\n", what, l->n);
	for (size_t i = 0; i < l->n && i < max; i++)
		fprintf(stderr, "  %s\n", l->v[i]);
}

/* ---- random cases ---- */

/* splitmix64: every case is a pure function of its seed. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline int64_t rnd(uint64_t *s, int64_t lo, int64_t hi) /* [lo, hi] */
{
	return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* Arrival order: records sorted by their drawn arrival time, ties by
 * index (qsort is not stable), so a seed always gives the same order. */
typedef struct order {
	int64_t at;
	size_t i;
} order_t;

static inline int order_cmp(const void *a, const void *b)
{
	const order_t *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

#endif
