/* Fuzz target for bernstein mcp's protocol (src/cli/mcp-server.h): one
 * line of arbitrary bytes from the client. The reply is nothing (a
 * notification) or one JSON-RPC 2.0 object with exactly one of result and
 * error; a tool call never reaches the runner with an option the client
 * chose: every argv element starting with '-' is one the tool itself puts
 * there, and nothing after "--" starts with '-'. The runner starts
 * nothing. */
#include <stdlib.h>
#include <string.h>

#include "cli/mcp-server.h"
#include "fuzz/fuzz.h"

static bool own_option(const char *s)
{
	static const char *const exact[] = {"--json", "--detach", "--requires", "--", NULL};
	static const char *const prefix[] = {"--parallel=", "--by=", "--run=", "--attempt=", NULL};
	size_t i;

	for (i = 0; exact[i]; i++)
		if (strcmp(s, exact[i]) == 0)
			return true;
	for (i = 0; prefix[i]; i++)
		if (strncmp(s, prefix[i], strlen(prefix[i])) == 0)
			return s[strlen(prefix[i])] != '-' && s[strlen(prefix[i])] != '\0';
	return false;
}

static json_t *run(void *arg, const char *const *argv, bool detaches)
{
	bool after = false;
	size_t i;

	(void)arg;
	(void)detaches;
	if (!argv[0] || argv[0][0] == '-')
		abort();
	for (i = 0; argv[i]; i++) {
		const unsigned char *p;

		for (p = (const unsigned char *)argv[i]; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				abort();
		if (after && argv[i][0] == '-')
			abort();
		if (!after && argv[i][0] == '-' && !own_option(argv[i]))
			abort();
		if (strcmp(argv[i], "--") == 0)
			after = true;
	}
	return json_pack("{s:[], s:b}", "content", "isError", 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *reply = mcp_server_answer((const char *)data, size, run, NULL);

	if (reply) {
		const char *v = json_string_value(json_object_get(reply, "jsonrpc"));

		if (!json_is_object(reply) || !v || strcmp(v, "2.0") != 0 ||
		    !json_object_get(reply, "result") == !json_object_get(reply, "error"))
			abort();
	}
	json_decref(reply);
	return 0;
}
