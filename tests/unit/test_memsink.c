/* test_memsink.c — the memory sink (JSON lines, bounded ring, raw payloads,
 * threads) and the null sink (counts, discards). Calls the ops directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include <cmocka.h>

#include "sinks/memory.h"

extern const sv_sink_ops_t sv_sink_null_ops;

typedef struct fx {
	sv_schema_t *schema;
	sv_sink_conf_t conf;
	sv_sink_t *snk;
	sv_batch_t b;
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	f->schema = sv_schema_new();
	sv_schema_add(f->schema, "id", SV_T_INT64, true);
	sv_schema_add(f->schema, "name", SV_T_STRING, true);
	sv_schema_add(f->schema, "ok", SV_T_BOOL, true);
	f->conf.kind = "memory";
	f->conf.schema = f->schema;
	f->conf.key_column = -1;
	sv_batch_init(&f->b, f->schema);
	assert_null(sv_sink_memory_ops.open(&f->conf, &f->snk));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	sv_sink_memory_ops.close(f->snk);
	sv_batch_release(&f->b);
	sv_schema_destroy(f->schema);
	free(f);
	return 0;
}

/* Rows id = from..to-1, name "n<id>" (null for multiples of 5), ok = even. */
static void add_rows(sv_batch_t *b, int from, int to)
{
	for (int i = from; i < to; i++) {
		sv_value_t *row = sv_batch_add_row(b, NULL);
		row[0] = sv_int(i);
		if (i % 5) {
			char tmp[16];
			int n = snprintf(tmp, sizeof(tmp), "n%d", i);
			row[1] = sv_str(sv_batch_strdup(b, tmp, (size_t)n),
					(uint32_t)n);
		}
		row[2] = sv_bool(i % 2 == 0);
	}
}

static void want_line(char *buf, size_t len, int i)
{
	if (i % 5)
		snprintf(buf, len, "{\"id\":%d,\"name\":\"n%d\",\"ok\":%s}", i,
			 i, i % 2 == 0 ? "true" : "false");
	else
		snprintf(buf, len, "{\"id\":%d,\"name\":null,\"ok\":%s}", i,
			 i % 2 == 0 ? "true" : "false");
}

static void test_lines_exact(void **state)
{
	fx_t *f = *state;
	add_rows(&f->b, 0, 3);
	assert_null(sv_sink_memory_ops.write(f->snk, &f->b));
	assert_null(sv_sink_memory_ops.flush(f->snk, 100));
	assert_int_equal(sv_sink_memory_count(f->snk), 3);
	assert_int_equal(f->snk->records_out, 3);
	char *all = sv_sink_memory_lines(f->snk, 0);
	assert_string_equal(all,
			    "{\"id\":0,\"name\":null,\"ok\":true}\n"
			    "{\"id\":1,\"name\":\"n1\",\"ok\":false}\n"
			    "{\"id\":2,\"name\":\"n2\",\"ok\":true}");
	free(all);
	char *two = sv_sink_memory_lines(f->snk, 2);
	assert_string_equal(two,
			    "{\"id\":0,\"name\":null,\"ok\":true}\n"
			    "{\"id\":1,\"name\":\"n1\",\"ok\":false}");
	free(two);
}

static void test_empty(void **state)
{
	fx_t *f = *state;
	assert_null(sv_sink_memory_ops.write(f->snk, &f->b)); /* no rows */
	assert_int_equal(sv_sink_memory_count(f->snk), 0);
	char *s = sv_sink_memory_lines(f->snk, 10);
	assert_string_equal(s, "");
	free(s);
}

typedef struct collect {
	int n;
	int next;
	bool bad;
} collect_t;

static void collect_cb(const char *line, size_t len, void *opaque)
{
	collect_t *c = opaque;
	char want[128];
	want_line(want, sizeof(want), c->next++);
	if (strlen(want) != len || strcmp(want, line))
		c->bad = true;
	c->n++;
}

static void test_each_in_order_many_batches(void **state)
{
	fx_t *f = *state;
	for (int k = 0; k < 20; k++) {
		sv_batch_reset(&f->b);
		add_rows(&f->b, k * 100, k * 100 + 100);
		assert_null(sv_sink_memory_ops.write(f->snk, &f->b));
	}
	collect_t c = {0};
	sv_sink_memory_each(f->snk, collect_cb, &c);
	assert_int_equal(c.n, 2000);
	assert_false(c.bad);
	assert_int_equal(f->snk->records_out, 2000);
	assert_int_equal(sv_sink_memory_dropped(f->snk), 0);
}

static void test_max_drops_oldest(void **state)
{
	fx_t *f = *state;
	sv_sink_memory_set_max(f->snk, 10);
	for (int k = 0; k < 7; k++) {
		sv_batch_reset(&f->b);
		add_rows(&f->b, k * 3, k * 3 + 3);
		assert_null(sv_sink_memory_ops.write(f->snk, &f->b));
	}
	/* 21 rows written, the last 10 (11..20) kept */
	assert_int_equal(sv_sink_memory_count(f->snk), 10);
	assert_int_equal(sv_sink_memory_dropped(f->snk), 11);
	assert_int_equal(f->snk->records_out, 21);
	collect_t c = {.next = 11};
	sv_sink_memory_each(f->snk, collect_cb, &c);
	assert_int_equal(c.n, 10);
	assert_false(c.bad);

	/* lowering the maximum drops the excess at once, oldest first */
	sv_sink_memory_set_max(f->snk, 4);
	assert_int_equal(sv_sink_memory_count(f->snk), 4);
	c = (collect_t){.next = 17};
	sv_sink_memory_each(f->snk, collect_cb, &c);
	assert_int_equal(c.n, 4);
	assert_false(c.bad);

	/* and the ring keeps wrapping correctly below its allocated size */
	sv_batch_reset(&f->b);
	add_rows(&f->b, 21, 27);
	assert_null(sv_sink_memory_ops.write(f->snk, &f->b));
	c = (collect_t){.next = 23};
	sv_sink_memory_each(f->snk, collect_cb, &c);
	assert_int_equal(c.n, 4);
	assert_false(c.bad);

	/* raising it again lets it grow */
	sv_sink_memory_set_max(f->snk, 0);
	sv_batch_reset(&f->b);
	add_rows(&f->b, 27, 127);
	assert_null(sv_sink_memory_ops.write(f->snk, &f->b));
	assert_int_equal(sv_sink_memory_count(f->snk), 104);
	c = (collect_t){.next = 23};
	sv_sink_memory_each(f->snk, collect_cb, &c);
	assert_int_equal(c.n, 104);
	assert_false(c.bad);
}

typedef struct rawc {
	int n;
	char seen[256];
} rawc_t;

static void raw_cb(const char *p, size_t len, const char *reason, void *o)
{
	rawc_t *c = o;
	size_t at = strlen(c->seen);
	snprintf(c->seen + at, sizeof(c->seen) - at, "%.*s|%s;", (int)len, p,
		 reason ? reason : "-");
	c->n++;
}

static void test_raw(void **state)
{
	fx_t *f = *state;
	assert_null(sv_sink_memory_ops.write_raw(f->snk, "{bad", 4,
						 "field 'id': expected int64"));
	assert_null(sv_sink_memory_ops.write_raw(f->snk, "x\0y", 3, NULL));
	assert_int_equal(sv_sink_memory_raw_count(f->snk), 2);
	assert_int_equal(sv_sink_memory_count(f->snk), 0); /* kept apart */
	assert_int_equal(f->snk->records_out, 2);
	rawc_t c = {0};
	sv_sink_memory_raw_each(f->snk, raw_cb, &c);
	assert_int_equal(c.n, 2);
	/* the payload is kept byte for byte (printed up to the NUL) */
	assert_string_equal(c.seen, "{bad|field 'id': expected int64;x|-;");
	sv_sink_memory_clear(f->snk);
	assert_int_equal(sv_sink_memory_raw_count(f->snk), 0);
	assert_int_equal(f->snk->records_out, 2);
}

typedef struct writer {
	sv_sink_t *snk;
	const sv_schema_t *schema;
	int base;
} writer_t;

static void *writer_main(void *arg)
{
	writer_t *w = arg;
	sv_batch_t b;
	sv_batch_init(&b, w->schema);
	for (int k = 0; k < 50; k++) {
		sv_batch_reset(&b);
		add_rows(&b, w->base + k * 20, w->base + k * 20 + 20);
		sv_error_t *err = sv_sink_memory_ops.write(w->snk, &b);
		if (err)
			abort();
	}
	sv_batch_release(&b);
	return NULL;
}

static void count_ids(const char *line, size_t len, void *opaque)
{
	int id = atoi(line + strlen("{\"id\":"));
	unsigned char *seen = opaque;
	if (id >= 0 && id < 4000)
		seen[id]++;
}

static void test_threads(void **state)
{
	fx_t *f = *state;
	pthread_t th[4];
	writer_t w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (writer_t){f->snk, f->schema, i * 1000};
		assert_int_equal(
			pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(sv_sink_memory_count(f->snk), 4000);
	assert_int_equal(f->snk->records_out, 4000);
	static unsigned char seen[4000];
	memset(seen, 0, sizeof(seen));
	sv_sink_memory_each(f->snk, count_ids, seen);
	for (int i = 0; i < 4000; i++)
		assert_int_equal(seen[i], 1);
}

static void test_null_sink(void **state)
{
	fx_t *f = *state;
	sv_sink_t *snk = NULL;
	sv_sink_conf_t conf = f->conf;
	conf.kind = "null";
	assert_null(sv_sink_null_ops.open(&conf, &snk));
	assert_string_equal(sv_sink_null_ops.driver->kind, "null");
	add_rows(&f->b, 0, 123);
	assert_null(sv_sink_null_ops.write(snk, &f->b));
	assert_null(sv_sink_null_ops.write(snk, &f->b));
	assert_null(sv_sink_null_ops.write_raw(snk, "x", 1, "r"));
	assert_null(sv_sink_null_ops.flush(snk, 0));
	assert_int_equal(snk->records_out, 247);
	sv_sink_null_ops.close(snk);
	assert_string_equal(sv_sink_memory_ops.driver->kind, "memory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lines_exact, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_each_in_order_many_batches,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_drops_oldest, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_raw, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_sink, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
