/* drivers.h — the driver catalog of this process: the source and sink
 * registries (sources/registry.c, sinks/registry.c) behind the
 * sv_drivers_t that ingress/ reads descriptors through (core/driver.h). */
#ifndef SV_DRIVERS_H
#define SV_DRIVERS_H

#include "core/driver.h"

/* Static; thread: any (the registries are filled before it is read). */
const sv_drivers_t *sv_registry_drivers(void);

#endif
