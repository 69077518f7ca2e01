/* replay.c — the corpus replayer: a main() for a fuzz target built without
 * libFuzzer (gcc, the dev and asan presets). Every argument is a file or a
 * directory of files; each file is read whole and handed once to
 * LLVMFuzzerTestOneInput, so ctest replays the committed corpora under the
 * sanitizers on every `make test`. A crash or a sanitizer report fails the
 * test; the file being replayed is printed first, so it names the input. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "tests/fuzz/fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = sv_malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap)
			buf = sv_realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf)
		return -1;
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	/* an exact-size copy, so ASan sees reads past the end */
	uint8_t *exact = sv_malloc(len ? len : 1);
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	LLVMFuzzerInitialize(&argc, &argv);
	int files = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]))
				return 1;
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		char **names = NULL;
		size_t nn = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			names = sv_realloc(names, (nn + 1) * sizeof(*names));
			if (asprintf(&names[nn++], "%s/%s", argv[i],
				     e->d_name) < 0)
				return 1;
		}
		closedir(d);
		if (nn)
			qsort(names, nn, sizeof(*names), cmp_str);
		for (size_t k = 0; k < nn; k++) {
			if (replay_file(names[k]))
				return 1;
			free(names[k]);
			files++;
		}
		free(names);
	}
	if (files == 0) {
		fprintf(stderr, "replay: no input files\n");
		return 1;
	}
	printf("replay: %d inputs, no finding\n", files);
	return 0;
}
