/* test_kafka_client.c — the one librdkafka client module (kafka/client.c):
 * the order of properties (tuning < profile < fixed), errors that name a
 * key but never a value, the scrubbing of secret-bearing values out of
 * librdkafka text, and no leak on any failure path (the asan preset). */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_new_and_opaque),
		cmocka_unit_test(test_bad_property_names_key_only),
		cmocka_unit_test(test_no_bootstrap),
		cmocka_unit_test(test_scrub),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
