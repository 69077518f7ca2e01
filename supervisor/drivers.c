/* drivers.c — the registries as one catalog (see drivers.h). The supervisor
 * wires sources/ and sinks/ to ingress/ here, so ingress depends on core
 * only and never links a driver. */
#include "supervisor/drivers.h"

#include "sinks/sink.h"
#include "sources/source.h"

static const sv_drivers_t registry = {
	.source = sv_source_driver,
	.sink = sv_sink_driver,
};

const sv_drivers_t *sv_registry_drivers(void)
{
	return &registry;
}
