/* test_client.c — the CLI's HTTP client (cli/client.c): server URLs and
 * TLS settings. The exchange itself (plain and over TLS, mTLS refusals) runs
 * against a real server in tests/e2e/cli.sh and tests/security/tls.sh; here
 * only what needs no server: which URLs parse to what, and which TLS
 * settings are refused before any connection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/client.h"

static void expect_url(const char *url, const char *host, int port,
		       const char *prefix, bool tls)
{
	sv_client_t cl;
	sv_error_t *err = sv_client_init(&cl, url);
	if (err)
		fail_msg("'%s': %s", url, err->message);
	assert_string_equal(cl.host, host);
	assert_int_equal(cl.port, port);
	assert_string_equal(cl.prefix, prefix);
	assert_int_equal(cl.tls, tls);
	sv_client_release(&cl);
}

static void expect_bad_url(const char *url, const char *says)
{
	sv_client_t cl;
	sv_error_t *err = sv_client_init(&cl, url);
	if (!err)
		fail_msg("'%s' was accepted", url);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	if (!strstr(err->message, says))
		fail_msg("'%s': '%s' does not say '%s'", url, err->message,
			 says);
	sv_error_destroy(err);
	sv_client_release(&cl);
}

static void test_urls(void **state)
{
	(void)state;
	expect_url("http://127.0.0.1:8080", "127.0.0.1", 8080, "", false);
	expect_url("127.0.0.1:8080/", "127.0.0.1", 8080, "", false);
	expect_url("http://h", "h", 80, "", false);
	expect_url("https://h", "h", 443, "", true);
	expect_url("HTTPS://sv.example:8443/base//", "sv.example", 8443,
		   "/base", true);
	expect_url("https://[::1]:9443", "::1", 9443, "", true);
	expect_bad_url("ftp://h", "only http:// and https://");
	expect_bad_url("httpsx://h", "unsupported scheme");
	expect_bad_url("https://h:0", "bad port");
	expect_bad_url("https://", "no host");
}

static void test_tls_settings(void **state)
{
	(void)state;
	sv_client_t cl;
	assert_null(sv_client_init(&cl, "https://127.0.0.1:8443"));
	sv_error_t *err = sv_client_set_tls(&cl, NULL, "c.pem", NULL);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "--key"));
	sv_error_destroy(err);
	err = sv_client_set_tls(&cl, NULL, NULL, "c.key");
	assert_non_null(err);
	sv_error_destroy(err);
	assert_null(sv_client_set_tls(&cl, "ca.pem", "c.pem", "c.key"));
	assert_string_equal(cl.ca_file, "ca.pem");
	assert_string_equal(cl.key_file, "c.key");
	/* a second call replaces the first */
	assert_null(sv_client_set_tls(&cl, NULL, NULL, NULL));
	assert_null(cl.ca_file);
	assert_null(cl.cert_file);
	sv_client_release(&cl);

	/* TLS files for a plain URL are a mistake worth naming */
	assert_null(sv_client_init(&cl, "http://127.0.0.1:8080"));
	err = sv_client_set_tls(&cl, "ca.pem", NULL, NULL);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "https://"));
	sv_error_destroy(err);
	assert_null(sv_client_set_tls(&cl, NULL, NULL, NULL));
	sv_client_release(&cl);
}

/* An unreadable CA file is named by the request before it connects
 * (nothing listens on port 1: a connect error would mean the file was not
 * read first). */
static void test_missing_ca_file_named(void **state)
{
	(void)state;
	sv_client_t cl;
	assert_null(sv_client_init(&cl, "https://127.0.0.1:1"));
	assert_null(sv_client_set_tls(&cl, "/nonexistent/ca.pem", NULL, NULL));
	sv_client_resp_t resp;
	sv_error_t *err = sv_client_request(&cl, "GET", "/healthz", NULL, NULL,
					    0, &resp);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	if (!strstr(err->message, "/nonexistent/ca.pem"))
		fail_msg("%s", err->message);
	sv_error_destroy(err);
	sv_client_release(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_tls_settings),
		cmocka_unit_test(test_missing_ca_file_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
