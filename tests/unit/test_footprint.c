/* test_footprint.c — sv_mem_release_code (core/util.c): the resident code
 * pages of the libraries go, the libraries still work afterwards, and a
 * read-only private mapping that holds a written page keeps what was
 * written (dropping it would bring back the file's bytes). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <rocksdb/c.h>

#include "core/util.h"

static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	long kb = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kb = atol(line + n + 1);
	fclose(f);
	return kb;
}

static int twice(int x)
{
	return 2 * x;
}
static int thrice(int x)
{
	return 3 * x;
}
/* relocated at load: lives in a written, then read-only, mapping */
static int (*const table[])(int) = {twice, thrice};
static int counter = 41;

static void test_code_pages_go(void **state)
{
	(void)state;
	/* touch some library code first */
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_options_destroy(o);
	long before = status_kb("RssFile");
	size_t rel = sv_mem_release_code();
	long after = status_kb("RssFile");
	printf("RssFile %ld kB -> %ld kB, released %zu kB\n", before, after,
	       rel / 1024);
	assert_true(rel > 0);
	assert_true(after < before);
}

static void test_still_works(void **state)
{
	(void)state;
	counter++;
	sv_mem_release_code();
	assert_int_equal(counter, 42);
	assert_int_equal(table[0](21), 42);
	assert_int_equal(table[1](14), 42);
	json_t *j = json_pack("{s:i}", "n", 42);
	char *s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(s, "{\"n\":42}");
	free(s);
	json_decref(j);
	char dir[] = "/tmp/sv-footprint-XXXXXX";
	assert_non_null(mkdtemp(dir));
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(o, 1);
	char *err = NULL;
	rocksdb_t *db = rocksdb_open(o, dir, &err);
	assert_null(err);
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_put(db, wo, "k", 1, "v", 1, &err);
	assert_null(err);
	sv_mem_release_code();
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	size_t vl = 0;
	char *v = rocksdb_get(db, ro, "k", 1, &vl, &err);
	assert_null(err);
	assert_int_equal(vl, 1);
	assert_memory_equal(v, "v", 1);
	rocksdb_free(v);
	rocksdb_readoptions_destroy(ro);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_close(db);
	rocksdb_options_destroy(o);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_written_mapping_kept(void **state)
{
	(void)state;
	char path[] = "/tmp/sv-footprint-map-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	long pg = sysconf(_SC_PAGESIZE);
	char *file = calloc(1, (size_t)pg);
	memset(file, 'f', (size_t)pg);
	assert_int_equal(write(fd, file, (size_t)pg), pg);
	char *m = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		       fd, 0);
	assert_true(m != MAP_FAILED);
	m[0] = 'w'; /* a private copy of the page */
	assert_int_equal(mprotect(m, (size_t)pg, PROT_READ), 0);
	sv_mem_release_code();
	assert_int_equal(m[0], 'w');
	assert_int_equal(m[1], 'f');
	munmap(m, (size_t)pg);
	close(fd);
	unlink(path);
	free(file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_code_pages_go),
		cmocka_unit_test(test_still_works),
		cmocka_unit_test(test_written_mapping_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
