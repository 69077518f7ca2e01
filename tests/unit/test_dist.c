/* test_dist.c — cluster/dist.c: the node id kept in the data dir
 * (docs/cluster.md, distributed.node_id). The registry itself runs against
 * the real broker in tests/integration/it_cluster.c. */
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

#include "cluster/dist.h"

static int setup(void **state)
{
	char *dir = strdup("/tmp/sv-test-dist-XXXXXX");
	if (!dir || !mkdtemp(dir))
		return -1;
	*state = dir;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", (char *)*state);
	free(*state);
	return system(cmd) == 0 ? 0 : -1;
}

static char *file_text(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 256);
	size_t n = fread(buf, 1, 255, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Made once (in a data dir that did not exist yet), then kept. */
static void test_made_and_kept(void **state)
{
	char dd[300], path[320];
	snprintf(dd, sizeof(dd), "%s/data/a", (char *)*state);
	snprintf(path, sizeof(path), "%s/node_id", dd);
	char *id = NULL;
	sv_error_t *err = sv_dist_node_id(dd, NULL, &id);
	assert_null(err);
	assert_non_null(id);
	assert_int_equal(strlen(id), strlen("node-01234567"));
	assert_memory_equal(id, "node-", 5);
	char *kept = file_text(path);
	assert_non_null(kept);
	char want[64];
	snprintf(want, sizeof(want), "%s\n", id);
	assert_string_equal(kept, want);
	free(kept);
	char *again = NULL;
	assert_null(sv_dist_node_id(dd, NULL, &again));
	assert_string_equal(again, id); /* stable across restarts */
	free(again);
	/* the same id configured is fine */
	assert_null(sv_dist_node_id(dd, id, &again));
	assert_string_equal(again, id);
	free(again);
	free(id);
}

/* A configured id is kept; a different one later is refused, naming the
 * field, and the file is untouched. */
static void test_configured_and_refused(void **state)
{
	char dd[300], path[320];
	snprintf(dd, sizeof(dd), "%s/b", (char *)*state);
	snprintf(path, sizeof(path), "%s/node_id", dd);
	char *id = NULL;
	assert_null(sv_dist_node_id(dd, "sv-1", &id));
	assert_string_equal(id, "sv-1");
	free(id);
	id = NULL;
	sv_error_t *err = sv_dist_node_id(dd, "sv-2", &id);
	assert_non_null(err);
	assert_null(id);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	assert_string_equal(err->field, "distributed.node_id");
	assert_non_null(strstr(err->message, "belongs to node 'sv-1'"));
	sv_error_destroy(err);
	char *kept = file_text(path);
	assert_string_equal(kept, "sv-1\n");
	free(kept);
	/* a damaged file is refused, not replaced */
	FILE *f = fopen(path, "w");
	fputs("not/an id\n", f);
	fclose(f);
	err = sv_dist_node_id(dd, NULL, &id);
	assert_non_null(err);
	assert_string_equal(err->field, "distributed.node_id");
	sv_error_destroy(err);
}

static void test_jobs_topic(void **state)
{
	(void)state;
	char t[100];
	sv_dist_jobs_topic("prod", t, sizeof(t));
	assert_string_equal(t, "_streamvisor.prod.jobs");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_made_and_kept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_configured_and_refused,
						setup, teardown),
		cmocka_unit_test(test_jobs_topic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
