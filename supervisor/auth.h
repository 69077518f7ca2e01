/* auth.h — API principals: the bearer tokens of the tokens file
 * (auth.tokens_file in the server config, docs/security.md) and their roles.
 *
 * The file holds, per principal name, a role and the hex SHA-256 of its
 * token, never a token in clear. A presented token is hashed and compared
 * with every entry in constant time (no early exit, CRYPTO_memcmp), so the
 * time taken says nothing about which entry, or how much of one, matched.
 * Roles are ordered: viewer < operator < admin; each route of the HTTP API
 * names the least role it needs (http/http.c). */
#ifndef SV_AUTH_H
#define SV_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef enum sv_role {
	SV_ROLE_NONE = 0, /* no token needed (GET /healthz) */
	SV_ROLE_VIEWER, /* may GET */
	SV_ROLE_OPERATOR, /* also submit and act on jobs */
	SV_ROLE_ADMIN, /* everything, delete and purge included */
} sv_role_t;

const char *sv_role_name(sv_role_t role);
/* "viewer" / "operator" / "admin"; false for anything else. */
bool sv_role_parse(const char *name, sv_role_t *out);

typedef struct sv_principal {
	char *name; /* the entry's key in the tokens file */
	sv_role_t role;
	uint8_t sha256[32]; /* of the token */
} sv_principal_t;

typedef struct sv_tokens {
	size_t n;
	sv_principal_t *v;
} sv_tokens_t;

/* Read a tokens file (YAML; supervisor/config.c). The file must not be
 * readable or writable by group or others (chmod 600). Errors: SV_ERR_CONFIG
 * naming the file, the entry and the key. *out is the caller's
 * (sv_tokens_destroy). */
sv_error_t *sv_tokens_load(const char *path, sv_tokens_t **out);
void sv_tokens_destroy(sv_tokens_t *tokens);

/* The principal whose token is token[0..len), or NULL. Constant time in
 * the entries: every entry is compared. thread: any (tokens immutable). */
const sv_principal_t *sv_tokens_match(const sv_tokens_t *tokens,
				      const char *token, size_t len);

/* Parse an Authorization header value of the Bearer scheme (RFC 6750:
 * scheme case-insensitive, one or more spaces, then the token68). Sets
 * *token and *len into value. Returns 0, or -1 when the value is absent,
 * of another scheme or malformed. */
int sv_auth_bearer(const char *value, const char **token, size_t *len);

/* Hex SHA-256 of text (for tests and `streamvisor token`); out has 65. */
void sv_auth_hash_hex(const char *text, size_t len, char out[65]);

#endif
