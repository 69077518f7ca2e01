/* registry.c — the table of sink drivers (sink.h). A driver is listed here
 * once; everything else finds it by kind through sv_sink_find /
 * sv_sink_open, or reads its descriptor (core/driver.h) through
 * sv_sink_driver. sv_sink_register adds drivers after the static ones
 * (tests, out-of-tree drivers) before the process parses its first spec. */
#include <stddef.h>
#include <string.h>

#include "sinks/sink.h"

extern const sv_sink_ops_t sv_sink_file_ops;
extern const sv_sink_ops_t sv_sink_kafka_ops;
extern const sv_sink_ops_t sv_sink_memory_ops;
extern const sv_sink_ops_t sv_sink_null_ops;

static const sv_sink_ops_t *const drivers[] = {
	&sv_sink_kafka_ops,
	&sv_sink_file_ops,
	&sv_sink_null_ops,
	&sv_sink_memory_ops,
};
#define NSTATIC (sizeof(drivers) / sizeof(drivers[0]))
#define NEXTRA 8

static const sv_sink_ops_t *extra[NEXTRA];
static size_t nextra;

static const sv_sink_ops_t *nth(size_t i)
{
	if (i < NSTATIC)
		return drivers[i];
	return i - NSTATIC < nextra ? extra[i - NSTATIC] : NULL;
}

const sv_sink_ops_t *sv_sink_find(const char *kind)
{
	const sv_sink_ops_t *ops;
	if (!kind)
		return NULL;
	for (size_t i = 0; (ops = nth(i)); i++)
		if (!strcmp(ops->driver->kind, kind))
			return ops;
	return NULL;
}

const sv_driver_t *sv_sink_driver(size_t i)
{
	const sv_sink_ops_t *ops = nth(i);
	return ops ? ops->driver : NULL;
}

int sv_sink_register(const sv_sink_ops_t *ops)
{
	if (nextra == NEXTRA || sv_sink_find(ops->driver->kind))
		return -1;
	extra[nextra++] = ops;
	return 0;
}

sv_error_t *sv_sink_open(const sv_sink_conf_t *conf, sv_sink_t **out)
{
	const sv_sink_ops_t *ops = sv_sink_find(conf->kind);
	sv_error_t *err;

	*out = NULL;
	if (!ops) {
		err = sv_error_new(SV_ERR_BINDING, "unknown sink kind '%s'",
				   conf->kind ? conf->kind : "");
		sv_error_set_field(err, "sink.kind");
		if (conf->job_id)
			sv_error_set_job(err, conf->job_id, conf->attempt);
		return err;
	}
	return ops->open(conf, out);
}
