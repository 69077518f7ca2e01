/* fuzz_config.c — libFuzzer target for the server config parser
 * (supervisor/config.c, YAML through libfyaml): the input is a config file,
 * handed to sv_svconf_load through a memfd so nothing touches the disk.
 * Files it names (secrets_file, auth.tokens_file) resolve to paths that do
 * not exist, which must give an error, never a crash. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "supervisor/supervisor.h"
#include "tests/fuzz/fuzz.h"

static void load(const uint8_t *data, size_t size)
{
	int fd = memfd_create("sv-fuzz-config", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
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
