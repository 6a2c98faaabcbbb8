/* Fuzz target for the runner manifest parser: arbitrary bytes in; on success
 * every string field must be a NUL-terminated string, every array
 * NULL-terminated, and the invariants of the parser must hold. Then the
 * transcript-item checker runs on the same bytes when they are an array. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "runner/manifest.h"
#include "runner/wire.h"

static void check_strv(const char *const *v, size_t n)
{
	size_t i;

	if (!v)
		abort();
	for (i = 0; v[i]; i++)
		(void)strlen(v[i]);
	if (n != (size_t)-1 && i != n)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct runner_manifest *m = NULL;
	struct diag d;
	json_error_t e;
	json_t *v;
	int r;

	r = runner_manifest_parse("fuzz.json", (const char *)data, size, &m, &d);
	if (r < 0) {
		if (m || (r != -EBADMSG && r != -EINVAL && r != -EFBIG))
			abort();
	} else {
		if (!m || !m->session_id || !m->prompt || !m->workdir || !m->model || !m->effort ||
		    !m->sandbox_provider || !m->system_addendum)
			abort();
		if (!runner_manifest_session_id_ok(m->session_id))
			abort();
		if (m->timeout_seconds < 1 || (m->has_max_turns && m->max_turns < 1) ||
		    (m->has_max_tokens && m->max_tokens < 1) || (m->has_top_k && m->top_k < 0))
			abort();
		if (m->has_top_p && (m->top_p < 0 || m->top_p > 1))
			abort();
		if (m->base_url && (strncmp(m->base_url, "http", 4) != 0 ||
				    m->base_url[strlen(m->base_url) - 1] == '/'))
			abort();
		check_strv(m->tools, m->ntools);
		for (size_t i = 0; i < m->nmcp_servers; i++) {
			if (!m->mcp_servers[i].name || !m->mcp_servers[i].command)
				abort();
			check_strv(m->mcp_servers[i].args, (size_t)-1);
			check_strv(m->mcp_servers[i].env, (size_t)-1);
		}
		runner_manifest_free(m);
	}
	v = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
	if (v) {
		(void)wire_items_check(v, &d);
		json_decref(v);
	}
	return 0;
}
