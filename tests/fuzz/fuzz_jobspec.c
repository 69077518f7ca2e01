/* fuzz_jobspec.c — libFuzzer target for the job-spec parser
 * (ingress/spec.c) and what submit does next with a spec that parses: the
 * input is tried as a JSON spec and as a protobuf JobSpec; a spec that
 * parses is shown back as JSON (sv_jobspec_to_json), parsed again from that
 * JSON (the round trip must give the same plan id) and built into a plan,
 * which parses and type-checks every expression (ingress/plan.c). */
#include <stdlib.h>
#include <string.h>

#include "supervisor/drivers.h"
#include "ingress/plan.h"
#include "ingress/spec.h"
#include "tests/fuzz/fuzz.h"

static void exercise(sv_jobspec_t *spec)
{
	char *json = sv_jobspec_to_json(spec);
	sv_jobspec_t *again = NULL;
	sv_error_t *err = sv_jobspec_parse_json(json, strlen(json),
						sv_registry_drivers(), &again);
	if (err) /* what we print back must parse */
		abort();
	if (strcmp(again->plan_id, spec->plan_id) != 0)
		abort();
	sv_jobspec_destroy(again);
	free(json);
	sv_plan_t *plan = NULL;
	err = sv_plan_build(spec, &plan);
	if (err)
		sv_error_destroy(err);
	else
		sv_plan_destroy(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = sv_jobspec_parse_json((const char *)data, size,
						sv_registry_drivers(), &spec);
	if (err)
		sv_error_destroy(err);
	else {
		exercise(spec);
		sv_jobspec_destroy(spec);
	}
	spec = NULL;
	err = sv_jobspec_parse_proto(data, size, sv_registry_drivers(), &spec);
	if (err)
		sv_error_destroy(err);
	else {
		exercise(spec);
		sv_jobspec_destroy(spec);
	}
	return 0;
}
