/* test_confine.c — file sink paths confined to the roots (sinks/confine.c).
 *
 * The fixture is a scratch tree: root/ (the one root), root2/ (a second),
 * outside/ (never to be written), and symlinks inside root pointing out.
 * Each test checks the answer and, where something could be created, that
 * outside/ stays empty: a verifier that only looked at return codes would
 * pass vacuously on a sink that wrote and then reported an error. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "sinks/confine.h"

typedef struct fx {
	char dir[64];
	char *root, *root2, *outside;
	char *roots[2];
	sv_fileroots_t fr;
} fx_t;

static char *cat(const char *a, const char *b)
{
	char *s = NULL;
	if (asprintf(&s, "%s/%s", a, b) < 0)
		abort();
	return s;
}

static int setup(void **state)
{
	fx_t *fx = sv_calloc(1, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/sv-test-confine-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx->root = cat(fx->dir, "root");
	fx->root2 = cat(fx->dir, "root2");
	fx->outside = cat(fx->dir, "outside");
	assert_int_equal(mkdir(fx->root, 0755), 0);
	assert_int_equal(mkdir(fx->root2, 0755), 0);
	assert_int_equal(mkdir(fx->outside, 0755), 0);
	char *l = cat(fx->root, "link");
	assert_int_equal(symlink(fx->outside, l), 0);
	free(l);
	fx->roots[0] = fx->root;
	fx->roots[1] = fx->root2;
	fx->fr = (sv_fileroots_t){.roots = fx->roots, .n = 2};
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fx_t *fx = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	assert_int_equal(system(cmd), 0);
	free(fx->root);
	free(fx->root2);
	free(fx->outside);
	free(fx);
	return 0;
}

static bool empty_dir(const char *path)
{
	DIR *d = opendir(path);
	assert_non_null(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n == 0;
}

/* check path, expecting a refusal naming field.path (or success) */
static void expect(fx_t *fx, const char *path, size_t len, bool good)
{
	sv_error_t *err = sv_fileroots_check(&fx->fr, "late_sink", path, len);
	if (good) {
		if (err)
			fail_msg("'%s' refused: %s", path, err->message);
		return;
	}
	if (!err)
		fail_msg("'%s' accepted", path);
	assert_int_equal(err->category, SV_ERR_SUBMISSION);
	assert_string_equal(err->field, "late_sink.path");
	assert_non_null(strstr(err->message, "late_sink.path '"));
	sv_error_destroy(err);
}

static void test_lexical(void **state)
{
	fx_t *fx = *state;
	char buf[512];
	const char *bad[] = {"..",    "../x", "a/../../x",   "a/..",     "./a",
			     "a/./b", "a//b", "a/",          "%2e%2e/x", "a\\b",
			     "a\nb",  "",     "/etc/passwd", "/etc",     "/"};
	for (size_t i = 0; i < SV_ARRAY_LEN(bad); i++)
		expect(fx, bad[i], strlen(bad[i]), false);
	snprintf(buf, sizeof(buf), "%s/../outside", fx->root);
	expect(fx, buf, strlen(buf), false);
	snprintf(buf, sizeof(buf), "%sx/y", fx->root); /* prefix, not under */
	expect(fx, buf, strlen(buf), false);
	snprintf(buf, sizeof(buf), "%s", fx->outside);
	expect(fx, buf, strlen(buf), false);
	/* NUL inside: the length says more than strlen */
	const char nul[] = "ok\0/../../x";
	expect(fx, nul, sizeof(nul) - 1, false);
	/* good: relative, absolute under either root, the root itself */
	expect(fx, "a/b/c", 5, true);
	snprintf(buf, sizeof(buf), "%s/a", fx->root2);
	expect(fx, buf, strlen(buf), true);
	expect(fx, fx->root, strlen(fx->root), true);
	assert_true(empty_dir(fx->outside));
}

static void test_symlinks(void **state)
{
	fx_t *fx = *state;
	char buf[512];
	expect(fx, "link", 4, false);
	expect(fx, "link/x", 6, false);
	snprintf(buf, sizeof(buf), "%s/link/x/y", fx->root);
	expect(fx, buf, strlen(buf), false);
	/* open refuses too, creating nothing */
	assert_int_equal(sv_fileroots_open(&fx->fr, "link/x"), -ELOOP);
	assert_int_equal(sv_fileroots_open(&fx->fr, "../outside/x"), -EACCES);
	assert_true(empty_dir(fx->outside));
}

static void test_open_creates_inside(void **state)
{
	fx_t *fx = *state;
	int fd = sv_fileroots_open(&fx->fr, "a/b/c");
	assert_true(fd >= 0);
	close(fd);
	char *p = cat(fx->root, "a/b/c");
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	free(p);
	assert_true(empty_dir(fx->outside));
}

/* The check passed, then a component became a symlink before the sink
 * opened: the open walks again with O_NOFOLLOW and refuses. */
static void test_swap_after_check(void **state)
{
	fx_t *fx = *state;
	expect(fx, "later/x", 7, true);
	char *p = cat(fx->root, "later");
	assert_int_equal(symlink(fx->outside, p), 0);
	free(p);
	assert_int_equal(sv_fileroots_open(&fx->fr, "later/x"), -ELOOP);
	assert_true(empty_dir(fx->outside));
}

static void test_no_roots_and_unconfined(void **state)
{
	fx_t *fx = *state;
	sv_fileroots_t none = {0};
	sv_error_t *err = sv_fileroots_check(&none, "sink", "/tmp/x", 6);
	assert_non_null(err);
	assert_string_equal(err->field, "sink.path");
	assert_non_null(strstr(err->message, "no file_sink_roots"));
	sv_error_destroy(err);
	assert_int_equal(sv_fileroots_open(&none, "/tmp/x"), -EACCES);
	/* development mode: anywhere, but NUL still refused */
	sv_fileroots_t dev = {.unconfined = true};
	char *p = cat(fx->outside, "dev/x");
	assert_null(sv_fileroots_check(&dev, "sink", p, strlen(p)));
	int fd = sv_fileroots_open(&dev, p);
	assert_true(fd >= 0);
	close(fd);
	free(p);
	err = sv_fileroots_check(&dev, "sink", "a\0b", 3);
	assert_non_null(err);
	sv_error_destroy(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lexical, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_creates_inside, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_swap_after_check, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_roots_and_unconfined,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
