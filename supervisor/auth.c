/* auth.c — principals and their bearer tokens (auth.h): the role names, the
 * constant-time match of a presented token against the tokens file's
 * SHA-256 entries, and the parse of an Authorization header. The YAML
 * reading of the tokens file is in config.c (the only libfyaml user). A
 * token in clear is never stored: only its hash is, and the presented one
 * lives in the request until the response. */
#include "supervisor/auth.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "core/util.h"

static const char *const role_names[] = {
	[SV_ROLE_NONE] = "none",
	[SV_ROLE_VIEWER] = "viewer",
	[SV_ROLE_OPERATOR] = "operator",
	[SV_ROLE_ADMIN] = "admin",
};

const char *sv_role_name(sv_role_t role)
{
	return (unsigned)role < SV_ARRAY_LEN(role_names) ? role_names[role]
							 : "unknown";
}

bool sv_role_parse(const char *name, sv_role_t *out)
{
	for (size_t i = SV_ROLE_VIEWER; name && i < SV_ARRAY_LEN(role_names);
	     i++)
		if (strcmp(name, role_names[i]) == 0) {
			*out = (sv_role_t)i;
			return true;
		}
	return false;
}

void sv_tokens_destroy(sv_tokens_t *tokens)
{
	if (!tokens)
		return;
	for (size_t i = 0; i < tokens->n; i++)
		free(tokens->v[i].name);
	free(tokens->v);
	free(tokens);
}

const sv_principal_t *sv_tokens_match(const sv_tokens_t *tokens,
				      const char *token, size_t len)
{
	if (!tokens || !token)
		return NULL;
	uint8_t h[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)token, len, h);
	const sv_principal_t *found = NULL;
	for (size_t i = 0; i < tokens->n; i++) {
		/* every entry compared, the first match kept, no branch on
		 * the bytes themselves */
		int differs = CRYPTO_memcmp(h, tokens->v[i].sha256, sizeof(h));
		if (!differs && !found)
			found = &tokens->v[i];
	}
	OPENSSL_cleanse(h, sizeof(h));
	return found;
}

static int token68_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
		c == '~' || c == '+' || c == '/' || c == '=';
}

int sv_auth_bearer(const char *value, const char **token, size_t *len)
{
	*token = NULL;
	*len = 0;
	if (!value || strncasecmp(value, "Bearer", 6) != 0 ||
	    (value[6] != ' ' && value[6] != '\t'))
		return -1;
	const char *p = value + 6;
	while (*p == ' ' || *p == '\t')
		p++;
	const char *start = p;
	while (token68_char(*p))
		p++;
	const char *end = p;
	while (*p == ' ' || *p == '\t')
		p++;
	if (end == start || *p)
		return -1;
	*token = start;
	*len = (size_t)(end - start);
	return 0;
}

void sv_auth_hash_hex(const char *text, size_t len, char out[65])
{
	uint8_t h[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)text, len, h);
	for (size_t i = 0; i < sizeof(h); i++) {
		static const char hex[] = "0123456789abcdef";
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
	out[64] = '\0';
}
