/* test_sink_driver.c — a sink kind that exists only in this file: adding a
 * driver touches its own file and the registry, nothing else.
 *
 * The "ledger" sink counts rows into transactions it commits in memory. It
 * declares itself (core/driver.h: transactional, takes a required "topic")
 * and is added with sv_sink_register(), the registry's hook. Nothing else in
 * the tree names it (`git grep -l ledger` lists this file only), yet the job
 * spec parser checks its fields from its descriptor, the coverage check
 * lets it take exactly_once, and a supervisor runs a bounded job into it:
 * exactly the generated rows are committed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingress/coverage.h"
#include "ingress/spec.h"
#include "sinks/sink.h"
#include "supervisor/drivers.h"
#include "tests/unit/local_sv.h"

/* ---- the driver ---- */

typedef struct ledger {
	sv_sink_t base;
	uint64_t open_rows; /* in the open transaction */
} ledger_t;

static atomic_uint_fast64_t committed_rows, commits, opened;

extern const sv_sink_ops_t ledger_ops, ledger_txn_ops;

static sv_error_t *ledger_open(const sv_sink_conf_t *conf, sv_sink_t **out)
{
	ledger_t *t = sv_calloc(1, sizeof(*t));
	t->base.ops = conf->transactional ? &ledger_txn_ops : &ledger_ops;
	atomic_fetch_add(&opened, 1);
	*out = &t->base;
	return NULL;
}

static sv_error_t *ledger_write(sv_sink_t *snk, const sv_batch_t *b)
{
	ledger_t *t = (ledger_t *)snk;
	if (snk->ops == &ledger_txn_ops) {
		t->open_rows += b->nrows;
	} else {
		atomic_fetch_add(&committed_rows, b->nrows);
		snk->records_out += b->nrows;
	}
	return NULL;
}

static sv_error_t *ledger_write_raw(sv_sink_t *snk, const char *p, size_t len,
				    const char *reason)
{
	return sv_error_new(SV_ERR_BINDING,
			    "the ledger sink takes no raw "
			    "payloads");
}

static void ledger_close(sv_sink_t *snk)
{
	free(snk);
}

static sv_error_t *ledger_begin(sv_sink_t *snk)
{
	((ledger_t *)snk)->open_rows = 0;
	return NULL;
}

static sv_error_t *ledger_prepare(sv_sink_t *snk, int64_t ck, sv_buf_t *st)
{
	return NULL;
}

static sv_error_t *ledger_commit(sv_sink_t *snk)
{
	ledger_t *t = (ledger_t *)snk;
	atomic_fetch_add(&committed_rows, t->open_rows);
	atomic_fetch_add(&commits, 1);
	snk->records_out += t->open_rows;
	t->open_rows = 0;
	return NULL;
}

static sv_error_t *ledger_abort(sv_sink_t *snk)
{
	((ledger_t *)snk)->open_rows = 0;
	return NULL;
}

static const sv_driver_t ledger_driver = {
	.kind = "ledger",
	.caps = SV_DRIVER_TRANSACTIONAL,
	.fields =
		(const sv_driver_field_t[]){
			{.name = "topic",
			 .flags = SV_DRIVER_FIELD_REQUIRED,
			 .what = "what the ledger is of"},
			{NULL},
		},
};

const sv_sink_ops_t ledger_ops = {
	.driver = &ledger_driver,
	.open = ledger_open,
	.write = ledger_write,
	.write_raw = ledger_write_raw,
	.close = ledger_close,
};

const sv_sink_ops_t ledger_txn_ops = {
	.driver = &ledger_driver,
	.open = ledger_open,
	.write = ledger_write,
	.write_raw = ledger_write_raw,
	.close = ledger_close,
	.txn_begin = ledger_begin,
	.txn_prepare = ledger_prepare,
	.txn_commit = ledger_commit,
	.txn_abort = ledger_abort,
};

/* ---- tests ---- */

#define DRV sv_registry_drivers()

static const char *const head =
	"{\"name\": \"t\", \"source\": {\"kind\": \"generator\", \"count\": "
	"500}, \"schema\": [{\"name\": \"id\", \"type\": \"int64\"}], ";

static sv_error_t *parse(const char *tail, sv_jobspec_t **spec)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s%s}", head, tail);
	return sv_jobspec_parse_json(buf, strlen(buf), DRV, spec);
}

/* The submit-time coverage check (plan not built: the plan target is
 * IncQL's unavailable one). */
static sv_error_t *coverage(const sv_jobspec_t *spec)
{
	sv_coverage_env_t env = {false, true, DRV};
	json_t *pt = sv_coverage_plan_target(spec, NULL);
	sv_error_t *err = sv_coverage_check(spec, NULL, pt, &env, NULL);
	json_decref(pt);
	return err;
}

static void expect_refused(const char *tail, const char *field,
			   const char *message)
{
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = parse(tail, &spec);
	if (!err)
		fail_msg("accepted: %s", tail);
	assert_string_equal(err->field, field);
	assert_string_equal(err->message, message);
	sv_error_destroy(err);
}

static void test_register(void **state)
{
	(void)state;
	assert_null(sv_sink_find("ledger"));
	assert_int_equal(sv_sink_register(&ledger_ops), 0);
	assert_ptr_equal(sv_sink_find("ledger"), &ledger_ops);
	assert_ptr_equal(sv_drivers_find(DRV, SV_DRIVER_SINK, "ledger"),
			 &ledger_driver);
	/* a kind is registered once; a built-in kind cannot be replaced */
	assert_int_equal(sv_sink_register(&ledger_ops), -1);
	static const sv_driver_t fake_null = {.kind = "null"};
	static const sv_sink_ops_t fake_null_ops = {.driver = &fake_null};
	assert_int_equal(sv_sink_register(&fake_null_ops), -1);
	/* the source registry did not learn it */
	assert_null(sv_drivers_find(DRV, SV_DRIVER_SOURCE, "ledger"));
}

/* The spec parser knows the new kind and its fields from its descriptor. */
static void test_spec_checks_its_fields(void **state)
{
	(void)state;
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = parse("\"sink\": {\"kind\": \"ledger\", \"topic\": "
				"\"rows\"}",
				&spec);
	if (err)
		fail_msg("%s", err->message);
	assert_string_equal(spec->msg->sink->kind, "ledger");
	/* no cluster default: the driver takes none */
	assert_string_equal(spec->msg->sink->cluster, "");
	sv_jobspec_destroy(spec);
	expect_refused("\"sink\": {\"kind\": \"ledger\"}", "sink.topic",
		       "field 'sink.topic': is required for a ledger sink "
		       "(what the ledger is of)");
	expect_refused("\"sink\": {\"kind\": \"ledger\", \"topic\": \"x\", "
		       "\"path\": \"/tmp\"}",
		       "sink.path",
		       "field 'sink.path': a ledger sink has no path (file "
		       "sinks do)");
	expect_refused("\"sink\": {\"kind\": \"ledger\", \"topic\": \"x\", "
		       "\"cluster\": \"default\"}",
		       "sink.cluster",
		       "field 'sink.cluster': a ledger sink has no cluster "
		       "(kafka sinks do)");
	expect_refused("\"sink\": {\"kind\": \"ledgre\"}", "sink.kind",
		       "field 'sink.kind': unknown sink kind 'ledgre' "
		       "(expected kafka, file, null, memory or ledger)");
	/* a dead_letter sink must take raw payloads (SV_DRIVER_RAW) */
	expect_refused("\"sink\": {\"kind\": \"null\"}, \"dead_letter\": "
		       "{\"kind\": \"ledger\", \"topic\": \"x\"}",
		       "dead_letter.kind",
		       "field 'dead_letter.kind': a ledger sink takes no dead "
		       "letters (raw payloads; kafka, null or memory sinks "
		       "do)");
	expect_refused("\"sink\": {\"kind\": \"null\"}, \"dead_letter\": "
		       "{\"kind\": \"file\", \"path\": \"/tmp/x\"}",
		       "dead_letter.kind",
		       "field 'dead_letter.kind': a file sink takes no dead "
		       "letters (raw payloads; kafka, null or memory sinks "
		       "do)");
	assert_null(parse("\"sink\": {\"kind\": \"null\"}, \"dead_letter\": "
			  "{\"kind\": \"memory\"}",
			  &spec));
	assert_string_equal(spec->msg->on_invalid, "dead_letter");
	sv_jobspec_destroy(spec);
	/* the built-in kinds, from their own descriptors */
	expect_refused("\"sink\": {\"kind\": \"null\", \"path\": \"/x\"}",
		       "sink.path",
		       "field 'sink.path': a null sink has no path (file sinks "
		       "do)");
	expect_refused("\"sink\": {\"kind\": \"file\"}", "sink.path",
		       "field 'sink.path': is required for a file sink (the "
		       "output directory)");
	expect_refused("\"sink\": {\"kind\": \"file\", \"path\": \"/x\", "
		       "\"transaction_timeout_ms\": 5}",
		       "sink.transaction_timeout_ms",
		       "field 'sink.transaction_timeout_ms': a file sink has "
		       "no transaction_timeout_ms (kafka sinks do)");
	/* exactly_once: the coverage check reads the capabilities */
	assert_null(parse("\"sink\": {\"kind\": \"ledger\", \"topic\": \"x\"}, "
			  "\"delivery\": \"exactly_once\"",
			  &spec));
	assert_null(coverage(spec));
	sv_jobspec_destroy(spec);
	assert_null(parse("\"sink\": {\"kind\": \"memory\"}, \"delivery\": "
			  "\"exactly_once\"",
			  &spec));
	err = coverage(spec);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_COVERAGE);
	assert_string_equal(err->field, "sink.kind");
	if (!strstr(err->message,
		    "delivery 'exactly_once' needs a "
		    "transactional sink (kafka, file or ledger)"))
		fail_msg("%s", err->message);
	sv_error_destroy(err);
	sv_jobspec_destroy(spec);
	/* kafka's transactions carry the offsets: a generator has none */
	assert_null(parse("\"sink\": {\"kind\": \"kafka\", \"topic\": \"x\"}, "
			  "\"delivery\": \"exactly_once\"",
			  &spec));
	err = coverage(spec);
	assert_non_null(err);
	assert_string_equal(err->field, "source.kind");
	if (!strstr(err->message,
		    "delivery 'exactly_once' into a kafka sink "
		    "needs a source with a consumer group "
		    "(kafka)"))
		fail_msg("%s", err->message);
	sv_error_destroy(err);
	sv_jobspec_destroy(spec);
}

static int setup_sv(void **state)
{
	*state = local_sv_start();
	return *state ? 0 : -1;
}

static int teardown_sv(void **state)
{
	local_sv_stop(*state);
	return 0;
}

/* A bounded exactly_once job into the ledger sink completes with every
 * generated row committed once. */
static void test_job_runs(void **state)
{
	local_sv_t *l = *state;
	const char *spec =
		"{\"name\": \"ledger-job\", \"mode\": \"bounded\", \"source\": "
		"{\"kind\": \"generator\", \"count\": 5000}, \"schema\": "
		"[{\"name\": \"id\", \"type\": \"int64\"}], \"pipeline\": "
		"[{\"filter\": \"id >= 0\"}], \"sink\": {\"kind\": \"ledger\", "
		"\"topic\": \"rows\"}, \"delivery\": \"exactly_once\", "
		"\"checkpoint\": {\"interval_ms\": 50}}";
	atomic_store(&committed_rows, 0);
	sv_error_t *err;
	char *id = local_sv_submit(l, spec, &err);
	if (!id)
		fail_msg("submit: %s", err->message);
	if (!local_sv_wait_state(l, id, "completed", 30000)) {
		json_t *st = local_sv_status(l, id);
		char *s = json_dumps(st, JSON_COMPACT);
		fail_msg("not completed: %s", s);
	}
	assert_int_equal(atomic_load(&committed_rows), 5000);
	assert_true(atomic_load(&commits) >= 1);
	assert_true(atomic_load(&opened) >= 1);
	json_t *st = local_sv_status(l, id);
	assert_int_equal(json_integer_value(json_object_get(st, "records_out")),
			 5000);
	json_decref(st);
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_spec_checks_its_fields),
		cmocka_unit_test_setup_teardown(test_job_runs, setup_sv,
						teardown_sv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
