/* fuzz_config.c — libFuzzer target for the server config parser
 * (supervisor/config.c, YAML through libfyaml): the input is a config file,
 * written to an otherwise empty private directory and handed to
 * sv_svconf_load. Files it names (secrets_file, auth.tokens_file, ...)
 * resolve relative to that directory and do not exist, which must give an
 * error, never a crash. (A memfd's /proc/self/fd/N path made "0" name
 * stdin, which blocks: a harness artifact, not a finding.) stdin is
 * /dev/null for the same reason. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>

#include "supervisor/supervisor.h"
#include "tests/fuzz/fuzz.h"

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char dir[] = "/tmp/sv-fuzz-config-XXXXXX";
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	int null = open("/dev/null", O_RDONLY);
	if (null >= 0) {
		dup2(null, 0);
		close(null);
	}
	return 0;
}

static void load(const uint8_t *data, size_t size)
{
	if (!path[0])
		LLVMFuzzerInitialize(NULL, NULL);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	sv_svconf_t conf;
	sv_svconf_init(&conf);
	sv_error_t *err = sv_svconf_load(&conf, path);
	if (err)
		sv_error_destroy(err);
	sv_svconf_release(&conf);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	load(data, size);
	return 0;
}
