/* test_auth.c — principals and tokens (supervisor/auth.c, the tokens file
 * reader in config.c) and the request checks of the HTTP layer that use
 * them (the route policy table and the framing rules in http/http.c):
 * Bearer header parsing, the tokens file's rules (mode 600, hex SHA-256,
 * roles), matching, and that the policy table is the role table of
 * docs/security.md. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "http/http_int.h"
#include "supervisor/auth.h"

static char *write_tokens(const char *text, mode_t mode)
{
	char *path = sv_strdup("/tmp/sv-test-tokens-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
	return path;
}

static void test_bearer(void **state)
{
	(void)state;
	const char *t;
	size_t n;
	assert_int_equal(sv_auth_bearer("Bearer abc.DEF-_~+/=", &t, &n), 0);
	assert_int_equal(n, strlen("abc.DEF-_~+/="));
	assert_memory_equal(t, "abc.DEF-_~+/=", n);
	assert_int_equal(sv_auth_bearer("bearer   x  ", &t, &n), 0);
	assert_int_equal(n, 1);
	const char *bad[] = {NULL,         "",           "Bearer",
			     "Bearer ",    "Bearerx",    "Basic abc",
			     "Bearer a b", "Bearer a,b", "Bearer \x01",
			     "Token abc"};
	for (size_t i = 0; i < SV_ARRAY_LEN(bad); i++)
		assert_int_equal(sv_auth_bearer(bad[i], &t, &n), -1);
}

static void test_tokens_file(void **state)
{
	(void)state;
	char a[65], b[65];
	sv_auth_hash_hex("secret-a", 8, a);
	sv_auth_hash_hex("secret-b", 8, b);
	/* the known SHA-256 of "abc" */
	char abc[65];
	sv_auth_hash_hex("abc", 3, abc);
	assert_string_equal(abc,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396"
			    "177a9cb410ff61f20015ad");
	char text[512];
	snprintf(text, sizeof(text),
		 "# who\nalice: {role: viewer, sha256: %s}\n"
		 "ops.bot:\n  role: admin\n  sha256: %s\n",
		 a, b);
	char *path = write_tokens(text, 0600);
	sv_tokens_t *tk = NULL;
	sv_error_t *err = sv_tokens_load(path, &tk);
	assert_null(err);
	assert_int_equal(tk->n, 2);
	const sv_principal_t *p = sv_tokens_match(tk, "secret-a", 8);
	assert_non_null(p);
	assert_string_equal(p->name, "alice");
	assert_int_equal(p->role, SV_ROLE_VIEWER);
	p = sv_tokens_match(tk, "secret-b", 8);
	assert_string_equal(p->name, "ops.bot");
	assert_int_equal(p->role, SV_ROLE_ADMIN);
	assert_null(sv_tokens_match(tk, "secret-", 7));
	assert_null(sv_tokens_match(tk, "secret-a ", 9));
	assert_null(sv_tokens_match(tk, a, 64)); /* the hash is no token */
	sv_tokens_destroy(tk);
	/* readable by others: refused */
	chmod(path, 0644);
	err = sv_tokens_load(path, &tk);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "chmod 600"));
	sv_error_destroy(err);
	unlink(path);
	free(path);
}

static void test_tokens_file_errors(void **state)
{
	(void)state;
	struct {
		const char *text, *want;
	} cases[] = {
		{"", "must be a mapping"},
		{"{}\n", "holds no principal"},
		{"- a\n- b\n", "must be a mapping"},
		{"x: {role: root, sha256: "
		 "0000000000000000000000000000000000000000000000000000000000000"
		 "000}\n",
		 "role must be viewer, operator or admin"},
		{"x: {role: viewer, sha256: my-clear-token}\n",
		 "sha256 must be 64 hex digits"},
		{"x: {role: viewer}\n", "needs both role and sha256"},
		{"x: {role: viewer, sha256: "
		 "0000000000000000000000000000000000000000000000000000000000000"
		 "000, token: y}\n",
		 "unknown key 'token'"},
		{"'a b': {role: viewer}\n", "may only hold"},
		{"x: [\n", "invalid YAML"},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(cases); i++) {
		char *path = write_tokens(cases[i].text, 0600);
		sv_tokens_t *tk = NULL;
		sv_error_t *err = sv_tokens_load(path, &tk);
		if (!err)
			fail_msg("case %zu accepted", i);
		if (!strstr(err->message, cases[i].want))
			fail_msg("case %zu: '%s'", i, err->message);
		/* a clear token in the wrong place is never echoed */
		assert_null(strstr(err->message, "my-clear-token"));
		assert_null(tk);
		sv_error_destroy(err);
		unlink(path);
		free(path);
	}
}

static void test_policy_table(void **state)
{
	(void)state;
	assert_int_equal(sv_http_op_role(SV_HTTP_OP_HEALTHZ), SV_ROLE_NONE);
	sv_http_op_t viewer[] = {SV_HTTP_OP_INFO,     SV_HTTP_OP_METRICS,
				 SV_HTTP_OP_OPENAPI,  SV_HTTP_OP_LIST,
				 SV_HTTP_OP_STATUS,   SV_HTTP_OP_GET_SUB,
				 SV_HTTP_OP_NOT_FOUND};
	for (size_t i = 0; i < SV_ARRAY_LEN(viewer); i++) {
		assert_int_equal(sv_http_op_role(viewer[i]), SV_ROLE_VIEWER);
		assert_false(sv_http_op_acts(viewer[i]));
	}
	assert_int_equal(sv_http_op_role(SV_HTTP_OP_SUBMIT), SV_ROLE_OPERATOR);
	assert_int_equal(sv_http_op_role(SV_HTTP_OP_ACTION), SV_ROLE_OPERATOR);
	assert_int_equal(sv_http_op_role(SV_HTTP_OP_DELETE), SV_ROLE_ADMIN);
	assert_true(sv_http_op_acts(SV_HTTP_OP_SUBMIT));
	assert_true(sv_http_op_acts(SV_HTTP_OP_ACTION));
	assert_true(sv_http_op_acts(SV_HTTP_OP_DELETE));
	/* an op outside the table needs the most */
	assert_int_equal(sv_http_op_role(SV_HTTP_OP__COUNT), SV_ROLE_ADMIN);
	/* routing of the new route */
	sv_http_route_t r;
	assert_int_equal(sv_http_route("GET", "/v1/openapi.json", &r),
			 SV_HTTP_OP_OPENAPI);
	assert_int_equal(sv_http_route("POST", "/v1/openapi.json", &r),
			 SV_HTTP_OP_NOT_ALLOWED);
}

static void test_framing(void **state)
{
	(void)state;
	assert_null(sv_http_framing_error(0, NULL, 0, NULL));
	assert_null(sv_http_framing_error(1, "12", 0, NULL));
	assert_null(sv_http_framing_error(0, NULL, 1, "chunked"));
	assert_null(sv_http_framing_error(0, NULL, 1, "Chunked"));
	assert_non_null(sv_http_framing_error(2, "12", 0, NULL));
	assert_non_null(sv_http_framing_error(1, "12", 1, "chunked"));
	assert_non_null(sv_http_framing_error(0, NULL, 2, "chunked"));
	assert_non_null(sv_http_framing_error(0, NULL, 1, "chunked, gzip"));
	assert_non_null(sv_http_framing_error(1, "+1", 0, NULL));
	assert_non_null(sv_http_framing_error(1, "1 2", 0, NULL));
	assert_non_null(sv_http_framing_error(1, "", 0, NULL));
	assert_non_null(
		sv_http_framing_error(1, "99999999999999999999", 0, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bearer),
		cmocka_unit_test(test_tokens_file),
		cmocka_unit_test(test_tokens_file_errors),
		cmocka_unit_test(test_policy_table),
		cmocka_unit_test(test_framing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
