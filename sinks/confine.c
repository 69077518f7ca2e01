/* confine.c — file sink paths confined to the configured roots
 * (confine.h). The path is split into components and validated lexically
 * first (no "", ".", "..", NUL, control bytes, '%' or '\'); the root it
 * falls under is opened, and each component is then opened relative to the
 * previous one with openat(O_NOFOLLOW | O_DIRECTORY), so the kernel, not a
 * string comparison, decides what each name is: a symlink gives ELOOP and
 * is refused, whatever it points at. Creation uses mkdirat on the same
 * descriptors. The unconfined mode (embedded development only) keeps the
 * old behaviour: the path as given, parents created. */
#define _GNU_SOURCE
#include "sinks/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC)

/* Whether path lies under root (component-wise; root itself too) and, if
 * so, where its remainder starts. */
static bool under_root(const char *root, const char *path, const char **rest)
{
	size_t rl = strlen(root);
	if (rl == 1 && root[0] == '/') {
		*rest = path + 1;
		return true;
	}
	if (strncmp(path, root, rl) != 0 || (path[rl] && path[rl] != '/'))
		return false;
	*rest = path[rl] ? path + rl + 1 : path + rl;
	return true;
}

/* Lexical checks of the part below the root: NULL when fine, else why. */
static const char *bad_rest(const char *rest)
{
	if (!*rest)
		return NULL; /* the root itself */
	const char *p = rest;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0)
			return "has an empty component ('//' or a trailing "
			       "'/')";
		if (n == 1 && p[0] == '.')
			return "has a '.' component";
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return "has a '..' component";
		if (n > 255)
			return "has a component longer than 255 bytes";
		p += n;
		if (*p == '/')
			p++;
		if (e && !*p)
			return "has an empty component ('//' or a trailing "
			       "'/')";
	}
	return NULL;
}

/* Which root and what remains below it; -1 when none. */
static int pick_root(const sv_fileroots_t *fr, const char *path,
		     const char **rest)
{
	if (path[0] != '/') {
		*rest = path;
		return 0;
	}
	for (size_t i = 0; i < fr->n; i++)
		if (under_root(fr->roots[i], path, rest))
			return (int)i;
	return -1;
}

/* Walk rest from dirfd (taken). create: mkdirat missing components. On
 * success returns the last descriptor; else -errno (and *stop names the
 * component, a pointer into rest). */
static int walk(int dirfd, const char *rest, bool create, const char **stop)
{
	const char *p = rest;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char comp[256];
		memcpy(comp, p, n);
		comp[n] = '\0';
		*stop = p;
		int fd = openat(dirfd, comp, DIR_FLAGS | O_NOFOLLOW);
		if (fd < 0 && errno == ENOENT && create) {
			if (mkdirat(dirfd, comp, 0755) != 0 &&
			    errno != EEXIST) {
				int e2 = errno;
				close(dirfd);
				return -e2;
			}
			fd = openat(dirfd, comp, DIR_FLAGS | O_NOFOLLOW);
		}
		if (fd < 0) {
			int e2 = errno;
			close(dirfd);
			/* O_NOFOLLOW on a symlink: ELOOP (or ENOTDIR with
			 * O_DIRECTORY on some kernels); both refuse it */
			return -e2;
		}
		close(dirfd);
		dirfd = fd;
		p += n;
		if (*p == '/')
			p++;
	}
	return dirfd;
}

static int mkdir_parents(const char *path)
{
	char *copy = sv_strdup(path);
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
			int e = errno;
			free(copy);
			return -e;
		}
		*p = '/';
	}
	int rc = mkdir(copy, 0755) != 0 && errno != EEXIST ? -errno : 0;
	free(copy);
	return rc;
}

/* The whole resolution: lexical checks, the root, the walk. Returns a
 * descriptor (create) or 0 (check only; a missing tail is fine), or
 * -errno with *why saying what was refused: -EACCES for the lexical rules
 * and roots, -ELOOP for a symlink or non-directory on the way. */
static int resolve(const sv_fileroots_t *fr, const char *path, size_t len,
		   bool create, const char **why)
{
	*why = NULL;
	if (!path || !len) {
		*why = "is empty";
		return -EACCES;
	}
	if (strlen(path) != len) {
		*why = "holds a NUL byte";
		return -EACCES;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c < 0x20 || c == 0x7f) {
			*why = "holds a control character";
			return -EACCES;
		}
		if (c == '%' || c == '\\') {
			*why = "holds '%' or '\\' (no encoded or Windows-style "
			       "paths)";
			return -EACCES;
		}
	}
	if (!fr || fr->unconfined) {
		if (!create)
			return 0;
		int rc = mkdir_parents(path);
		if (rc)
			return rc;
		int fd = open(path, DIR_FLAGS);
		return fd < 0 ? -errno : fd;
	}
	if (fr->n == 0) {
		*why = "is refused: file sinks are disabled because the server "
		       "config sets no file_sink_roots";
		return -EACCES;
	}
	const char *rest = NULL;
	int r = pick_root(fr, path, &rest);
	if (r < 0) {
		*why = "is outside every file_sink_roots directory";
		return -EACCES;
	}
	if ((*why = bad_rest(rest)))
		return -EACCES;
	int dirfd = open(fr->roots[r], DIR_FLAGS);
	if (dirfd < 0)
		return -errno;
	const char *stop = rest;
	int fd = walk(dirfd, rest, create, &stop);
	if (fd == -ELOOP || fd == -ENOTDIR) {
		*why = "goes through a symlink or a non-directory below its "
		       "root (symlinks are not followed)";
		return -ELOOP;
	}
	if (!create) {
		if (fd >= 0)
			close(fd);
		return fd >= 0 || fd == -ENOENT ? 0 : fd;
	}
	return fd;
}

sv_error_t *sv_fileroots_check(const sv_fileroots_t *fr, const char *field,
			       const char *path, size_t len)
{
	const char *why = NULL;
	int rc = resolve(fr, path, len, false, &why);
	if (rc >= 0)
		return NULL;
	char f[64];
	snprintf(f, sizeof(f), "%s.path", field);
	if (why)
		return sv_error_set_field(sv_error_new(SV_ERR_SUBMISSION,
						       "%s '%s' %s", f,
						       path ? path : "", why),
					  f);
	return sv_error_set_field(
		sv_error_set_cause(sv_error_new(SV_ERR_BINDING,
						"%s '%s' cannot be resolved "
						"below its root: %s",
						f, path, strerror(-rc)),
				   -rc, strerror(-rc)),
		f);
}

int sv_fileroots_open(const sv_fileroots_t *fr, const char *path)
{
	const char *why = NULL;
	return resolve(fr, path, path ? strlen(path) : 0, true, &why);
}
