/* cli.h — the CLI: subcommands that are clients of the HTTP API
 * (DESIGN.md §5, docs/cli.md). main.c holds the dispatch table (one entry
 * per subcommand, serve included); cli.c parses a CLI command's options,
 * sends its request (cli/client.h) and prints the answer. */
#ifndef SV_CLI_H
#define SV_CLI_H

#include <stdbool.h>

#include "cli/client.h"

/* CLI exit codes (docs/cli.md) */
#define EXIT_CLI_USAGE 1 /* bad command line, unusable --server URL */
#define EXIT_CLI_CONNECT 2 /* no HTTP answer: connect, timeout, garbage */
#define EXIT_CLI_4XX 3 /* the server refused the request (HTTP 4xx) */
#define EXIT_CLI_5XX \
	4 /* the server failed (HTTP 5xx, other status,
			     * or a body the CLI cannot read) */
/* `wait`: how the job ended (0: completed) */
#define EXIT_CLI_FAILED 5 /* the job failed */
#define EXIT_CLI_CANCELLED 6 /* the job was cancelled */
#define EXIT_CLI_CHECKPOINTED 7 /* the job was drained (checkpointed) */
#define EXIT_CLI_WAIT_TIMEOUT 8 /* --timeout-ms passed, job still going */

#define DEFAULT_SERVER "http://127.0.0.1:8080"
#define SERVER_ENV "STREAMVISOR_URL"
#define TOKEN_ENV "STREAMVISOR_TOKEN" /* the bearer token itself */
#define TOKEN_FILE_ENV "STREAMVISOR_TOKEN_FILE" /* a file holding it */
#define TIMEOUT_ENV "STREAMVISOR_TIMEOUT_MS" /* request deadline */
#define CACERT_ENV "STREAMVISOR_CACERT" /* CA file for https:// */
#define CERT_ENV "STREAMVISOR_CERT" /* client certificate (mTLS) */
#define KEY_ENV "STREAMVISOR_KEY" /* its key */

/* Options a CLI command may accept (command_t.opts); --server and --help
 * go with every CLI command. */
enum {
	OPT_JSON = 1u << 0, /* --json */
	OPT_FINAL_WM = 1u << 1, /* --final-watermark */
	OPT_TIMEOUT = 1u << 2, /* --timeout-ms N */
	OPT_FROM_CK = 1u << 3, /* --from-checkpoint ID|latest */
	OPT_IGNORE_STATE = 1u << 4, /* --ignore-state */
	OPT_LIMIT = 1u << 5, /* -n, --limit N */
	OPT_AFTER = 1u << 6, /* --after SEQ */
	OPT_PURGE = 1u << 7, /* --purge */
	OPT_PLAN = 1u << 8, /* --plan FILE (a Substrait plan) */
	OPT_DRY_RUN = 1u << 9, /* --dry-run */
	OPT_PARALLELISM = 1u << 10, /* --parallelism N */
};

typedef struct command command_t;

/* One CLI invocation, parsed. */
typedef struct cli {
	const command_t *cmd;
	const char *server; /* the URL in use */
	sv_client_t client;
	bool json;
	bool final_watermark;
	bool ignore_state;
	bool purge;
	long long timeout_ms; /* -1: not given */
	const char *token_file; /* --token-file, or NULL */
	const char *cacert, *cert, *key; /* --cacert, --cert, --key */
	long long limit; /* -1: not given */
	long long after; /* -1: not given */
	long long parallelism; /* -1: not given */
	const char *from_checkpoint; /* NULL: not given */
	const char *plan; /* --plan FILE, or NULL */
	bool dry_run;
	const char *arg; /* the ID or FILE argument */
} cli_t;

struct command {
	const char *name;
	int (*run)(int argc, char **argv); /* serve, help, version */
	int (*client)(cli_t *cli); /* CLI commands */
	unsigned opts; /* CLI: OPT_* it accepts */
	const char *arg; /* CLI: "ID", "FILE" or NULL */
	const char *usage; /* arguments, for the help text */
	const char *summary;
};


int cli_submit(cli_t *cli);
int cli_jobs(cli_t *cli);
int cli_status(cli_t *cli);
int cli_lag(cli_t *cli);
int cli_cancel(cli_t *cli);
int cli_drain(cli_t *cli);
int cli_resume(cli_t *cli);
int cli_restart(cli_t *cli);
int cli_checkpoint(cli_t *cli);
int cli_checkpoints(cli_t *cli);
int cli_observations(cli_t *cli);
int cli_preview(cli_t *cli);
int cli_result(cli_t *cli);
int cli_delete(cli_t *cli);
int cli_info(cli_t *cli);
int cli_metrics(cli_t *cli);
int cli_wait(cli_t *cli);

/* Parse argv (after the command name) for cmd, send, print; returns the
 * process exit code (EXIT_CLI_*). server: a --server given before the
 * command name, or NULL. */
int cli_run(const command_t *cmd, int argc, char **argv, const char *server);

#endif
