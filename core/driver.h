/* driver.h — what a source or sink driver declares about itself: its kind,
 * its capabilities and the job-spec fields it takes.
 *
 * The descriptors belong to the drivers: each vtable (sources/source.h,
 * sinks/sink.h) points at its own, and the registries list them. Code that
 * must know what a kind can do (the job spec parser and the coverage check
 * in ingress/, the supervisor's submit) asks the descriptor, never compares
 * kind names. ingress/ depends on core only, so it reads the descriptors
 * through an sv_drivers_t catalog its caller hands in (the supervisor's is
 * the two registries, supervisor/drivers.h); adding a driver touches its own
 * file and its registry, nothing else. */
#ifndef SV_DRIVER_H
#define SV_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

/* Capabilities (bits of sv_driver_t.caps). */
enum {
	/* Reaches a cluster profile of the server config: the spec's
	 * "cluster" names it, resolved at submit (SV_ERR_BINDING when the
	 * profile is unknown). */
	SV_DRIVER_CLUSTER = 1u << 0,
	/* Source: keeps its positions in the job's consumer group (commit,
	 * committed_checkpoint), so a sink can commit them in a
	 * transaction. */
	SV_DRIVER_GROUP = 1u << 1,
	/* Source: can run a bounded job (reads to an end, then eof). */
	SV_DRIVER_BOUNDED = 1u << 2,
	/* Sink: exactly-once through transactions (txn_begin ... commit). */
	SV_DRIVER_TRANSACTIONAL = 1u << 3,
	/* Sink: its transactions carry the source positions (txn_offsets),
	 * so exactly_once needs an SV_DRIVER_GROUP source. */
	SV_DRIVER_TXN_OFFSETS = 1u << 4,
	/* Sink: takes raw payloads (write_raw), so it can be a job's
	 * dead_letter sink. */
	SV_DRIVER_RAW = 1u << 5,
	/* Sink: writes under a file-system path (the spec's "path"), so the
	 * path is confined to the server's file_sink_roots, at submit and
	 * again at open (sinks/confine.h). */
	SV_DRIVER_PATH = 1u << 6,
};

/* Field flags (sv_driver_field_t.flags). */
enum {
	SV_DRIVER_FIELD_REQUIRED = 1u << 0, /* must be given */
	SV_DRIVER_FIELD_BOUNDED = 1u << 1, /* must be given in a bounded job */
};

/* A kind-specific field of the spec's source or sink section ("topic",
 * "path", "start", ...). The common fields (kind, format, key) are not
 * listed. A field given to a driver that does not list it is refused. */
typedef struct sv_driver_field {
	const char *name; /* key under source / sink */
	unsigned flags;
	const char *def; /* string field: the default, or NULL */
	const char *const *values; /* string field: allowed values, NULL-
				    * terminated; NULL: any */
	const char *what; /* said with "is required": "the output
				    * directory"; may be NULL */
} sv_driver_field_t;

typedef struct sv_driver {
	const char *kind; /* "kafka", "file", ... */
	unsigned caps; /* SV_DRIVER_* */
	const sv_driver_field_t *fields; /* ends with {NULL} */
} sv_driver_t;

static inline bool sv_driver_has(const sv_driver_t *drv, unsigned cap)
{
	return drv && (drv->caps & cap) == cap;
}

/* The field `name` of the driver, or NULL when it takes none. */
const sv_driver_field_t *sv_driver_field(const sv_driver_t *drv,
					 const char *name);

/* A catalog of drivers: the i-th source and sink driver, NULL past the
 * last. The functions are the caller's (the registries); the catalog does
 * not own what they return. */
typedef struct sv_drivers {
	const sv_driver_t *(*source)(size_t i);
	const sv_driver_t *(*sink)(size_t i);
} sv_drivers_t;

typedef enum sv_driver_role {
	SV_DRIVER_SOURCE = 0,
	SV_DRIVER_SINK,
} sv_driver_role_t;

/* The driver of kind for role, or NULL. */
const sv_driver_t *sv_drivers_find(const sv_drivers_t *cat,
				   sv_driver_role_t role, const char *kind);

/* The kinds of role that have every bit of caps (0: all) and, when field
 * is not NULL, take that field, written as a list for a message into buf:
 * "kafka, file, null or memory". Returns buf. */
char *sv_drivers_list(const sv_drivers_t *cat, sv_driver_role_t role,
		      unsigned caps, const char *field, char *buf, size_t len);

#endif
