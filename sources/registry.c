/* registry.c — the static table of source drivers (source.h). A driver is
 * listed here once; everything else finds it by kind through
 * sv_source_find / sv_source_open. */
#include <stddef.h>
#include <string.h>

#include "sources/source.h"

extern const sv_source_ops_t sv_source_kafka_ops;
extern const sv_source_ops_t sv_source_generator_ops;

static const sv_source_ops_t *const drivers[] = {
	&sv_source_kafka_ops,
	&sv_source_generator_ops,
};

const sv_source_ops_t *sv_source_find(const char *kind)
{
	if (!kind)
		return NULL;
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (!strcmp(drivers[i]->name, kind))
			return drivers[i];
	return NULL;
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
