/* confine.h — where file sinks may write: the directories of the server
 * config's file_sink_roots (docs/security.md).
 *
 * A sink path is either absolute, and then must lie under one of the roots,
 * or relative, and then is taken under the first root. It is checked twice:
 * at submit time (sv_fileroots_check: a 400 naming the field) and when the
 * sink opens (sv_fileroots_open). Both resolve it component by component
 * from a descriptor of the root with openat(O_NOFOLLOW | O_DIRECTORY), never
 * by a string prefix, so a symlink anywhere below the root (to /etc, to
 * "..") is refused rather than followed, and a directory renamed or
 * replaced between the check and the open cannot lead out of the root. */
#ifndef SV_CONFINE_H
#define SV_CONFINE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

typedef struct sv_fileroots {
	char *const *roots; /* absolute, normalized; borrowed */
	size_t n;
	bool unconfined; /* embedded development mode: any path */
} sv_fileroots_t;

/* Check path (len bytes: a NUL inside is refused) of the sink at field
 * ("sink", "dead_letter", "late_sink"). Refused, as SV_ERR_SUBMISSION with
 * err->field = "<field>.path": no roots configured, a NUL or control byte,
 * '%' or '\' (encoded traversal), an empty, "." or ".." component, an
 * absolute path under no root, an existing component that is a symlink or
 * not a directory. Nothing is created. fr NULL = unconfined. */
sv_error_t *sv_fileroots_check(const sv_fileroots_t *fr, const char *field,
			       const char *path, size_t len);

/* Open the directory of path under the roots, creating missing components
 * (mode 0755) with mkdirat, never following a symlink. Returns a
 * descriptor (O_DIRECTORY, O_CLOEXEC) or -errno: -EACCES when the path is
 * not allowed (what sv_fileroots_check refuses), -ELOOP for a symlink on
 * the way. fr NULL or unconfined: the path is opened as given (parents
 * created). */
int sv_fileroots_open(const sv_fileroots_t *fr, const char *path);

#endif
