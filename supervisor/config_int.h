/* config_int.h — helpers of the server config reader (config.c) shared with
 * main.c and the tests. */
#ifndef SV_CONFIG_INT_H
#define SV_CONFIG_INT_H

#include "core/error.h"

/* Parse "host:port" or "[v6addr]:port" (port 0..65535; 0 = any free port).
 * On success *host is a new string (brackets removed) the caller frees.
 * Errors: SV_ERR_CONFIG naming the value. */
sv_error_t *sv_svconf_parse_listen(const char *s, char **host, int *port);

/* Why a Kafka client property may not appear in the server config (a short
 * reason like "loads code"), or NULL when it is allowed. Refused: properties
 * that load code or run commands (plugin.library.paths, ssl.engine.location,
 * sasl.kerberos.kinit.cmd) and the ones streamvisor sets itself per cluster
 * or per job (bootstrap.servers, metadata.broker.list, group.id,
 * transactional.id). */
const char *sv_svconf_property_refused(const char *key);

#endif
