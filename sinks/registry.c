/* registry.c — the static table of sink drivers (sink.h). A driver is
 * listed here once; everything else finds it by kind through sv_sink_find /
 * sv_sink_open. */
#include <stddef.h>
#include <string.h>

#include "sinks/sink.h"

extern const sv_sink_ops_t sv_sink_file_ops;
extern const sv_sink_ops_t sv_sink_kafka_ops;
extern const sv_sink_ops_t sv_sink_memory_ops;
extern const sv_sink_ops_t sv_sink_null_ops;

static const sv_sink_ops_t *const drivers[] = {
	&sv_sink_file_ops,
	&sv_sink_kafka_ops,
	&sv_sink_memory_ops,
	&sv_sink_null_ops,
};

const sv_sink_ops_t *sv_sink_find(const char *kind)
{
	if (!kind)
		return NULL;
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (!strcmp(drivers[i]->name, kind))
			return drivers[i];
	return NULL;
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
