/* The api_key_env allow-list (credential.h). */
#include "adapter/credential.h"

#include <errno.h>
#include <string.h>

#include "util/redact.h"
#include "util/banned.h"

const char *const credential_env_builtin[] = {
	"OPENAI_API_KEY",     "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY",	 "TOGETHER_API_KEY",
	"GROQ_API_KEY",	      "MISTRAL_API_KEY",    "FIREWORKS_API_KEY", "XAI_API_KEY",
	"GEMINI_API_KEY",     "GOOGLE_API_KEY",	    "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY",
	"CEREBRAS_API_KEY",   "MOONSHOT_API_KEY",   "MINIMAX_API_KEY",	 "NVIDIA_API_KEY",
	"PERPLEXITY_API_KEY", "HF_TOKEN",	    "LLM_API_KEY",	 NULL,
};

bool credential_env_wellformed(const char *name)
{
	const char *p;

	if (!name || !(*name >= 'A' && *name <= 'Z'))
		return false;
	for (p = name + 1; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* s[0, len) equals name[0, n). */
static bool span_equals(const char *s, size_t len, const char *name, size_t n)
{
	return len == n && memcmp(s, name, n) == 0;
}

bool credential_env_listed(const char *name, const char *list)
{
	size_t n, i = 0;

	if (!name || !list)
		return false;
	n = strlen(name);
	if (n == 0)
		return false;
	for (;;) {
		/* the entry list[start, stop), blanks stripped */
		size_t start = i, stop;

		while (list[i] && list[i] != ',')
			i++;
		stop = i;
		while (start < stop && is_blank(list[start]))
			start++;
		while (stop > start && is_blank(list[stop - 1]))
			stop--;
		if (span_equals(list + start, stop - start, name, n))
			return true;
		if (!list[i])
			return false;
		i++; /* past the comma */
	}
}

int credential_env_check(const char *name, const char *host_allowed, struct diag *reterr)
{
	size_t i;

	if (!credential_env_wellformed(name)) {
		diag_set(
			reterr, NULL, 0, 0,
			"api_key_env '%s' is not an allowed credential variable name: it must match ^[A-Z][A-Z0-9_]*$",
			name ? name : "");
		return -EPERM;
	}
	for (i = 0; credential_env_builtin[i]; i++)
		if (strcmp(name, credential_env_builtin[i]) == 0)
			return 0;
	if (credential_env_listed(name, host_allowed))
		return 0;
	diag_set(
		reterr, NULL, 0, 0,
		"api_key_env '%s' is not an allowed credential variable name: it is not a known LLM provider key; an operator can allow it with " CREDENTIAL_HOST_ALLOW_ENV
		" on the host",
		name);
	return -EPERM;
}

/* Words in a variable's name that make its value a secret. */
static const char *const secret_words[] = {
	"KEY",	      "TOKEN",	"SECRET",  "PASSWORD",	    "PASSWD", "PASSPHRASE",
	"CREDENTIAL", "COOKIE", "PRIVATE", "AUTHORIZATION", NULL,
};

/* name[0, n) holds word (ASCII, any case). */
static bool has_word(const char *name, size_t n, const char *word)
{
	size_t wl = strlen(word), i, j;

	for (i = 0; i + wl <= n; i++) {
		for (j = 0; j < wl; j++) {
			char c = name[i + j];

			if (c >= 'a' && c <= 'z')
				c = (char)(c - 'a' + 'A');
			if (c != word[j])
				break;
		}
		if (j == wl)
			return true;
	}
	return false;
}

/* credential_env_secret() for the name name[0, n). */
static bool secret_name(const char *name, size_t n, const char *host_allowed)
{
	char buf[256];
	size_t i;

	for (i = 0; secret_words[i]; i++)
		if (has_word(name, n, secret_words[i]))
			return true;
	for (i = 0; credential_env_builtin[i]; i++)
		if (strlen(credential_env_builtin[i]) == n &&
		    memcmp(name, credential_env_builtin[i], n) == 0)
			return true;
	if (!host_allowed || n >= sizeof(buf))
		return false;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return credential_env_listed(buf, host_allowed);
}

bool credential_env_secret(const char *name, const char *host_allowed)
{
	return name && secret_name(name, strlen(name), host_allowed);
}

void credential_env_secrets(const char *const *env, const char *host_allowed, struct strvec *ret,
			    struct strvec *ret_short)
{
	size_t i;

	for (i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '='), *v;

		if (!eq || !secret_name(env[i], (size_t)(eq - env[i]), host_allowed))
			continue;
		v = eq + 1;
		if (!*v)
			continue;
		if (strlen(v) < REDACT_MIN) {
			if (ret_short)
				strvec_pushf(ret_short, "%.*s", (int)(eq - env[i]), env[i]);
			continue;
		}
		if (strvec_find(ret, v) < 0)
			strvec_push(ret, v);
	}
}
