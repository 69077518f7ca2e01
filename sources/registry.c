/* registry.c — the table of source drivers (source.h). A driver is listed
 * here once; everything else finds it by kind through sv_source_find /
 * sv_source_open, or reads its descriptor (core/driver.h) through
 * sv_source_driver. sv_source_register adds drivers after the static ones
 * (tests, out-of-tree drivers) before the process parses its first spec. */
#include <stddef.h>
#include <string.h>

#include "sources/source.h"

extern const sv_source_ops_t sv_source_kafka_ops;
extern const sv_source_ops_t sv_source_generator_ops;

static const sv_source_ops_t *const drivers[] = {
	&sv_source_kafka_ops,
	&sv_source_generator_ops,
};
#define NSTATIC (sizeof(drivers) / sizeof(drivers[0]))
#define NEXTRA 8

static const sv_source_ops_t *extra[NEXTRA];
static size_t nextra;

static const sv_source_ops_t *nth(size_t i)
{
	if (i < NSTATIC)
		return drivers[i];
	return i - NSTATIC < nextra ? extra[i - NSTATIC] : NULL;
}

const sv_source_ops_t *sv_source_find(const char *kind)
{
	const sv_source_ops_t *ops;
	if (!kind)
		return NULL;
	for (size_t i = 0; (ops = nth(i)); i++)
		if (!strcmp(ops->driver->kind, kind))
			return ops;
	return NULL;
}

const sv_driver_t *sv_source_driver(size_t i)
{
	const sv_source_ops_t *ops = nth(i);
	return ops ? ops->driver : NULL;
}

int sv_source_register(const sv_source_ops_t *ops)
{
	if (nextra == NEXTRA || sv_source_find(ops->driver->kind))
		return -1;
	extra[nextra++] = ops;
	return 0;
}

sv_error_t *sv_source_open(const sv_source_conf_t *conf, sv_source_t **out)
{
	const sv_source_ops_t *ops = sv_source_find(conf->kind);
	sv_error_t *err;

	*out = NULL;
	if (!ops) {
		err = sv_error_new(SV_ERR_BINDING, "unknown source kind '%s'",
				   conf->kind ? conf->kind : "");
		sv_error_set_field(err, "source.kind");
		if (conf->job_id)
			sv_error_set_job(err, conf->job_id, conf->attempt);
		return err;
	}
	return ops->open(conf, out);
}
