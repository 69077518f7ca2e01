/* test_kafka_client.c — the one librdkafka client module (kafka/client.c):
 * the order of properties (tuning < profile < fixed), errors that name a
 * key but never a value, the scrubbing of secret-bearing values out of
 * librdkafka text, no leak on any failure path (the asan preset), and the
 * queue sizes of a memory budget (tuning < budget < profile). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "kafka/client.h"

#define SECRET "PLANTED-s3cr3t-value"

static sv_kv_t props[] = {
	{"sasl.password", SECRET},
	{"sasl.username", "alice-user"},
	{"security.protocol", "plaintext"},
	{"ssl.key.password", "k"},
};

static sv_cluster_t cluster = {
	.name = "vault",
	.bootstrap = "127.0.0.1:1",
	.nprops = 4,
	.props = props,
};

static void test_client_new_and_opaque(void **state)
{
	SV_UNUSED(state);
	int mine = 7;
	static const sv_kafka_prop_t tuning[] = {{"linger.ms", "5"}};
	static const sv_kafka_prop_t fixed[] = {{"acks", "all"}};
	sv_kafka_client_conf_t kc = {
		.type = RD_KAFKA_PRODUCER,
		.cluster = &cluster,
		.client_id = "t",
		.role = "producer of test",
		.tuning = tuning,
		.ntuning = 1,
		.fixed = fixed,
		.nfixed = 1,
		.opaque = &mine,
	};
	rd_kafka_t *rk = NULL;
	sv_error_t *err = sv_kafka_client_new(&kc, &rk);
	assert_null(err);
	assert_non_null(rk);
	assert_ptr_equal(sv_kafka_client_opaque(rk), &mine);
	sv_kafka_client_destroy(rk);
	sv_kafka_client_destroy(NULL);
}

/* A refused value: the error names the key and the profile, never the
 * value (librdkafka's own text quotes it). Nothing leaks (asan). */
static void test_bad_property_names_key_only(void **state)
{
	SV_UNUSED(state);
	sv_kv_t bad[] = {
		{"ssl.endpoint.identification.algorithm", SECRET},
	};
	sv_cluster_t cl = cluster;
	cl.props = bad;
	cl.nprops = 1;
	sv_kafka_client_conf_t kc = {.type = RD_KAFKA_CONSUMER, .cluster = &cl};
	rd_kafka_t *rk = NULL;
	sv_error_t *err = sv_kafka_client_new(&kc, &rk);
	assert_non_null(err);
	assert_null(rk);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	assert_non_null(
		strstr(err->message, "ssl.endpoint.identification.algorithm"));
	assert_non_null(strstr(err->message, "'vault'"));
	assert_null(strstr(err->message, "PLANTED"));
	assert_null(err->cause);
	sv_error_destroy(err);

	/* a fixed setting the caller got wrong: named too */
	static const sv_kafka_prop_t fixed[] = {{"no.such.property", "x"}};
	kc.cluster = &cluster;
	kc.fixed = fixed;
	kc.nfixed = 1;
	err = sv_kafka_client_new(&kc, &rk);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "no.such.property"));
	sv_error_destroy(err);
}

static void test_no_bootstrap(void **state)
{
	SV_UNUSED(state);
	sv_cluster_t cl = {.name = "empty"};
	sv_kafka_client_conf_t kc = {.type = RD_KAFKA_PRODUCER, .cluster = &cl};
	rd_kafka_t *rk = NULL;
	sv_error_t *err = sv_kafka_client_new(&kc, &rk);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_BINDING);
	assert_non_null(strstr(err->message, "'empty'"));
	sv_error_destroy(err);
}

static void test_scrub(void **state)
{
	SV_UNUSED(state);
	sv_kafka_client_conf_t kc = {.type = RD_KAFKA_PRODUCER,
				     .cluster = &cluster};
	rd_kafka_t *rk = NULL;
	assert_null(sv_kafka_client_new(&kc, &rk));
	char out[256];

	sv_kafka_client_scrub(rk, "Invalid value \"" SECRET "\" twice " SECRET,
			      out, sizeof(out));
	assert_string_equal(out, "Invalid value \"***\" twice ***");
	/* secret-bearing keys only: the user name and protocol are not
	 * secrets and stay */
	sv_kafka_client_scrub(rk, "user alice-user over plaintext", out,
			      sizeof(out));
	assert_string_equal(out, "user alice-user over plaintext");
	/* a one-letter secret value (ssl.key.password "k") is scrubbed
	 * wherever it stands, the result cut to fit */
	sv_kafka_client_scrub(rk, "kkk", out, 8);
	assert_string_equal(out, "*******");
	sv_kafka_client_scrub(rk, "ab", out, sizeof(out));
	assert_string_equal(out, "ab");
	/* a cut secret never survives: the buffer ends before it */
	sv_kafka_client_scrub(rk, "xx" SECRET, out, 10);
	assert_null(strstr(out, "PLANTED"));
	/* no client, no secrets: plain copy */
	sv_kafka_client_scrub(NULL, SECRET, out, sizeof(out));
	assert_string_equal(out, SECRET);

	sv_error_t *err = sv_kafka_error(rk, NULL, SV_ERR_SINK_COMMIT, 0,
					 "server said " SECRET, "x %d", 1);
	assert_string_equal(err->message, "x 1");
	assert_string_equal(err->cause, "server said ***");
	sv_error_destroy(err);
	sv_logctx_t lc = {"job1", 3};
	err = sv_kafka_error(NULL, &lc, SV_ERR_BINDING,
			     RD_KAFKA_RESP_ERR__TRANSPORT, NULL, "y");
	assert_string_equal(err->job_id, "job1");
	assert_int_equal(err->attempt, 3);
	assert_non_null(err->cause);
	sv_error_destroy(err);
	sv_kafka_client_destroy(rk);
}

static void conf_get(rd_kafka_t *rk, const char *key, char *out, size_t n)
{
	assert_int_equal(rd_kafka_conf_get(rd_kafka_conf(rk), key, out, &n),
			 RD_KAFKA_CONF_OK);
}

/* A budget sets the queue sizes over the tuning's maxima; a profile that
 * names one still wins; librdkafka accepts the sizes of every budget from
 * the smallest side-sink share (512 KiB) up. */
static void test_memory_budget(void **state)
{
	SV_UNUSED(state);
	sv_kafka_budget_t b;
	sv_kafka_budget(RD_KAFKA_CONSUMER, 0, &b);
	assert_int_equal(b.nprops, 0);
	int64_t budget = 24 << 20;
	sv_kafka_budget(RD_KAFKA_CONSUMER, budget, &b);
	assert_true(b.reserved_bytes <= budget + 2 * 1000000);
	sv_kafka_budget(RD_KAFKA_PRODUCER, budget, &b);
	assert_true(b.reserved_bytes <= budget);

	static sv_kv_t over[] = {{"fetch.max.bytes", "2000000"}};
	sv_cluster_t cl = {.name = "c",
			   .bootstrap = "127.0.0.1:1",
			   .nprops = 1,
			   .props = over};
	static const sv_kafka_prop_t tuning[] = {
		{"queued.max.messages.kbytes", "131072"},
		{"fetch.max.bytes", "67108864"},
		{"queue.buffering.max.kbytes", "1048576"},
	};
	sv_kafka_client_conf_t kc = {
		.type = RD_KAFKA_CONSUMER,
		.cluster = &cl,
		.client_id = "t",
		.role = "consumer of test",
		.tuning = tuning,
		.ntuning = 2,
		.memory_budget = budget,
	};
	rd_kafka_t *rk = NULL;
	assert_null(sv_kafka_client_new(&kc, &rk));
	char v[64];
	conf_get(rk, "queued.max.messages.kbytes", v, sizeof(v));
	assert_string_equal(v, "8192");
	conf_get(rk, "fetch.max.bytes", v, sizeof(v));
	assert_string_equal(v, "2000000");
	sv_kafka_client_destroy(rk);

	kc.type = RD_KAFKA_PRODUCER;
	kc.cluster = &cluster;
	kc.tuning = tuning + 2;
	kc.ntuning = 1;
	assert_null(sv_kafka_client_new(&kc, &rk));
	conf_get(rk, "queue.buffering.max.kbytes", v, sizeof(v));
	assert_string_equal(v, "8192");
	conf_get(rk, "batch.size", v, sizeof(v));
	assert_string_equal(v, "1048576");
	sv_kafka_client_destroy(rk);

	for (int64_t small = 512 << 10; small <= (256 << 20); small *= 4) {
		kc.memory_budget = small;
		kc.type = RD_KAFKA_PRODUCER;
		assert_null(sv_kafka_client_new(&kc, &rk));
		sv_kafka_client_destroy(rk);
		kc.type = RD_KAFKA_CONSUMER;
		kc.tuning = NULL;
		kc.ntuning = 0;
		assert_null(sv_kafka_client_new(&kc, &rk));
		sv_kafka_client_destroy(rk);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_new_and_opaque),
		cmocka_unit_test(test_bad_property_names_key_only),
		cmocka_unit_test(test_no_bootstrap),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_memory_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
