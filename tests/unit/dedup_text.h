/* dedup_text.h — a dedup snapshot as text independent of its state
 * map's order (the watermark, then "key=first" sorted), for tests that
 * compare a restored dedup with the original (test_dedup,
 * test_ckpt_tasks). Include after <cmocka.h>. */
#ifndef SV_TESTS_DEDUP_TEXT_H
#define SV_TESTS_DEDUP_TEXT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/window_int.h"

static inline int dedup_text_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The dedup's state as text, entries sorted (its map order differs after
 * a restore). */
static inline void dedup_text(const char *data, size_t len, char *txt,
			      size_t cap)
{
	sv_deser_t d = {.p = data, .len = len};
	sv_deser_u8(&d);
	sv_deser_u8(&d);
	sv_deser_u32(&d);
	sv_deser_i64(&d);
	int64_t wm = sv_deser_i64(&d);
	uint64_t n = sv_deser_u64(&d);
	assert_true(n < 100000);
	char **e = calloc(n + 1, sizeof(char *));
	for (uint64_t i = 0; i < n; i++) {
		sv_value_t k;
		sv_deser_value(&d, &k);
		int64_t first = sv_deser_i64(&d);
		e[i] = malloc(48);
		snprintf(e[i], 48, "%.*s=%lld", k.type ? (int)k.len : 1,
			 k.type ? k.v.s : "-", (long long)first);
	}
	assert_false(d.bad);
	assert_int_equal(d.off, d.len);
	qsort(e, n, sizeof(char *), dedup_text_cmp);
	size_t off = (size_t)snprintf(txt, cap, "wm %lld:", (long long)wm);
	for (uint64_t i = 0; i < n; i++) {
		off += (size_t)snprintf(txt + off, off < cap ? cap - off : 0,
					" %s", e[i]);
		free(e[i]);
	}
	free(e);
	assert_true(off < cap);
}

#endif
