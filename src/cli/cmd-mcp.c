/* bernstein mcp: an MCP server over stdio (docs/mcp.md), so an MCP client
 * (Claude Code, Codex, any agent, an IDE) can drive bernstein.
 *
 * JSON-RPC 2.0, one message a line (the runner's framing, runner/mcp.h
 * mcp_wire): initialize (the client's protocol version when it is one of
 * ours, else MCP_SERVER_PROTOCOL), ping, tools/list, tools/call;
 * notifications are read and dropped; any other method is -32601, a line
 * that is not JSON -32700, a message that is not a request -32600, unknown
 * tools and bad arguments an error result (isError), never a hang or a
 * crash. Each tool runs this bernstein binary as a child with the matching
 * command and --json (in the directory bernstein mcp runs in, with its
 * environment), so it behaves, refuses, exits and is audited exactly as the
 * CLI: cancel and retry go through the run's control channel like
 * `bernstein cancel` (src/cli/cmd-control.c). stdout carries protocol
 * messages only; diagnostics go to stderr. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/mcp-server.h"
#include "proc/capture.h"
#include "util/rpcwire.h"
#include "util/json.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* the newest protocol version spoken (runner/mcp.h speaks the same) */
#define MCP_SERVER_PROTOCOL    "2025-06-18"
#define MCP_SERVER_MAX_MESSAGE (4 * 1024 * 1024)
#define TOOL_OUT_MAX	       (4 * 1024 * 1024)
#define TOOL_ERR_MAX	       (64 * 1024)
#define TOOL_TIMEOUT_MS	       (10 * 60 * 1000)
#define ARG_MAX_LEN	       4096

const char cmd_mcp_summary[] = "serve bernstein's commands as MCP tools over stdio";
const char cmd_mcp_usage[] = "";
const char cmd_mcp_help[] =
	"An MCP server (Model Context Protocol, JSON-RPC 2.0, one message a line) on\n"
	"stdin and stdout, for an MCP client to drive bernstein in this repository:\n"
	"\n"
	"  adapters       the adapters of the catalogue ('adapters list --json')\n"
	"  route          the adapter for capability requirements ('route --json')\n"
	"  plan_validate  check a plan file ('plan validate --json')\n"
	"  run_plan       start a plan detached; returns the run id ('run --detach')\n"
	"  status         a run's tasks and states ('status --json')\n"
	"  logs           what a task's agent did ('logs --json')\n"
	"  cancel         cancel tasks of the latest run ('cancel --json')\n"
	"  retry          give tasks of the latest run a new attempt ('retry --json')\n"
	"  cost           a run's tokens and cost ('cost --json')\n"
	"\n"
	"Each tool runs this bernstein with that command, so it is checked, refused,\n"
	"recorded and audited as the CLI is; its exit code decides isError. Register\n"
	"it with a client, e.g. claude mcp add bernstein -- bernstein -C REPO mcp.\n"
	"See docs/mcp.md.\n"
	"\n"
	"Exit: 0 when stdin ends, 1 on a message larger than 4 MiB or a broken\n"
	"stdout.\n";

static const char *const protocol_versions[] = {MCP_SERVER_PROTOCOL, "2025-03-26", "2024-11-05",
						NULL};

/* ---- the tools ---- */

struct tool_call {
	const json_t *args;
	struct strvec argv; /* after the binary */
	char err[512];	    /* a bad argument (the tool is not run) */
};

typedef int tool_build_fn(struct tool_call *tc);

/* A string argument usable on argv: not empty, not starting with '-', no
 * control character, at most ARG_MAX_LEN bytes. NULL when absent (ok unless
 * required), sets tc->err when bad. */
static const char *arg_str(struct tool_call *tc, const char *key, bool required)
{
	const json_t *v = json_object_get(tc->args, key);
	const char *s = json_string_value(v);
	const unsigned char *p;

	if (!v || json_is_null(v)) {
		if (required)
			(void)snprintf(tc->err, sizeof(tc->err), "'%s' is required", key);
		return NULL;
	}
	if (!s || !*s || *s == '-' || strlen(s) > ARG_MAX_LEN) {
		(void)snprintf(tc->err, sizeof(tc->err),
			       "'%s' must be a non-empty string not starting with '-'", key);
		return NULL;
	}
	for (p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f) {
			(void)snprintf(tc->err, sizeof(tc->err), "'%s' holds a control character",
				       key);
			return NULL;
		}
	return s;
}

/* An array of such strings (1..64), pushed after a "--". */
static int arg_strs(struct tool_call *tc, const char *key, const char *flag)
{
	const json_t *v = json_object_get(tc->args, key);
	size_t i;

	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 64) {
		(void)snprintf(tc->err, sizeof(tc->err), "'%s' must be an array of 1 to 64 strings",
			       key);
		return -EINVAL;
	}
	for (i = 0; i < json_array_size(v); i++) {
		const json_t *saved = tc->args;
		json_t *wrap = json_pack("{s:O}", key, json_array_get(v, i));
		const char *s;

		tc->args = wrap;
		s = arg_str(tc, key, true);
		if (s) {
			if (flag)
				strvec_push(&tc->argv, flag);
			strvec_push(&tc->argv, s);
		}
		tc->args = saved;
		json_decref(wrap);
		if (!s)
			return -EINVAL;
	}
	return 0;
}

static int t_adapters(struct tool_call *tc)
{
	strvec_push(&tc->argv, "adapters");
	strvec_push(&tc->argv, "list");
	strvec_push(&tc->argv, "--json");
	return 0;
}

static int t_route(struct tool_call *tc)
{
	strvec_push(&tc->argv, "route");
	strvec_push(&tc->argv, "--json");
	return arg_strs(tc, "requires", "--requires");
}

static int t_plan_validate(struct tool_call *tc)
{
	const char *plan = arg_str(tc, "plan", true);

	if (!plan)
		return -EINVAL;
	strvec_push(&tc->argv, "plan");
	strvec_push(&tc->argv, "validate");
	strvec_push(&tc->argv, "--json");
	strvec_push(&tc->argv, "--");
	strvec_push(&tc->argv, plan);
	return 0;
}

static int t_run_plan(struct tool_call *tc)
{
	const char *plan = arg_str(tc, "plan", true);
	const json_t *par = json_object_get(tc->args, "parallel");

	if (!plan)
		return -EINVAL;
	strvec_push(&tc->argv, "run");
	strvec_push(&tc->argv, "--detach");
	strvec_push(&tc->argv, "--json");
	if (par) {
		if (!json_is_integer(par) || json_integer_value(par) < 1 ||
		    json_integer_value(par) > 256) {
			(void)snprintf(tc->err, sizeof(tc->err),
				       "'parallel' must be an integer 1..256");
			return -EINVAL;
		}
		strvec_pushf(&tc->argv, "--parallel=%lld", (long long)json_integer_value(par));
	}
	strvec_push(&tc->argv, "--");
	strvec_push(&tc->argv, plan);
	return 0;
}

/* [COMMAND] --json [-- RUN] (cmd NULL: already pushed, with its options) */
static int run_arg(struct tool_call *tc, const char *cmd)
{
	const char *run = arg_str(tc, "run", false);

	if (tc->err[0])
		return -EINVAL;
	if (cmd)
		strvec_push(&tc->argv, cmd);
	strvec_push(&tc->argv, "--json");
	if (run) {
		strvec_push(&tc->argv, "--");
		strvec_push(&tc->argv, run);
	}
	return 0;
}

static int t_status(struct tool_call *tc)
{
	return run_arg(tc, "status");
}

static int t_cost(struct tool_call *tc)
{
	const char *by = arg_str(tc, "by", false);

	if (tc->err[0])
		return -EINVAL;
	if (by && strcmp(by, "task") != 0 && strcmp(by, "adapter") != 0 &&
	    strcmp(by, "model") != 0 && strcmp(by, "role") != 0) {
		(void)snprintf(tc->err, sizeof(tc->err),
			       "'by' must be one of task, adapter, model, role");
		return -EINVAL;
	}
	strvec_push(&tc->argv, "cost");
	if (by)
		strvec_pushf(&tc->argv, "--by=%s", by);
	return run_arg(tc, NULL);
}

static int t_logs(struct tool_call *tc)
{
	const char *task = arg_str(tc, "task", true);
	const char *run = task ? arg_str(tc, "run", false) : NULL;
	const json_t *att = json_object_get(tc->args, "attempt");

	if (!task || tc->err[0])
		return -EINVAL;
	strvec_push(&tc->argv, "logs");
	strvec_push(&tc->argv, "--json");
	if (run)
		strvec_pushf(&tc->argv, "--run=%s", run);
	if (att) {
		if (!json_is_integer(att) || json_integer_value(att) < 1) {
			(void)snprintf(tc->err, sizeof(tc->err),
				       "'attempt' must be an integer >= 1");
			return -EINVAL;
		}
		strvec_pushf(&tc->argv, "--attempt=%lld", (long long)json_integer_value(att));
	}
	strvec_push(&tc->argv, "--");
	strvec_push(&tc->argv, task);
	return 0;
}

static int control(struct tool_call *tc, const char *cmd)
{
	strvec_push(&tc->argv, cmd);
	strvec_push(&tc->argv, "--json");
	strvec_push(&tc->argv, "--");
	return arg_strs(tc, "tasks", NULL);
}

static int t_cancel(struct tool_call *tc)
{
	return control(tc, "cancel");
}

static int t_retry(struct tool_call *tc)
{
	return control(tc, "retry");
}

#define S_RUN                                                                                      \
	"{\"run\": {\"type\": \"string\", \"description\": \"a run id (default: the latest run)\"}}"
#define S_TASKS                                                                                    \
	"{\"tasks\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"minItems\": 1, \"description\": \"task ids of the latest run\"}}"

static const struct tool {
	const char *name, *description, *properties, *required;
	tool_build_fn *build;
	/* it starts something meant to outlive it (run --detach: a session of
	 * its own): contained by process group only, which that leaves */
	bool detaches;
} tools[] = {
	{"adapters", "List the adapters (agent CLIs) of bernstein's catalogue with their strategy.",
	 "{}", NULL, t_adapters, false},
	{"route",
	 "Pick the adapter whose capability profile satisfies every requirement, or the refusal receipt.",
	 "{\"requires\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"minItems\": 1, \"description\": \"requires tokens, e.g. capability:vision\"}}",
	 "requires", t_route, false},
	{"plan_validate",
	 "Check a plan file (plan.yaml) and report every problem at FILE:LINE:COL.",
	 "{\"plan\": {\"type\": \"string\", \"description\": \"the plan's path, relative to the repository\"}}",
	 "plan", t_plan_validate, false},
	{"run_plan",
	 "Start a run of a plan in the background (detached); returns its run id, pid and log.",
	 "{\"plan\": {\"type\": \"string\", \"description\": \"the plan's path, relative to the repository\"}, \"parallel\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 256}}",
	 "plan", t_run_plan, true},
	{"status", "A run's tasks: adapter, state, attempts, reason, tokens and cost.", S_RUN, NULL,
	 t_status, false},
	{"logs", "What the agent of a task's latest (or given) attempt did, as normalized events.",
	 "{\"task\": {\"type\": \"string\"}, \"run\": {\"type\": \"string\"}, \"attempt\": {\"type\": \"integer\", \"minimum\": 1}}",
	 "task", t_logs, false},
	{"cancel", "Cancel tasks of the latest run (a running agent is stopped with its tree).",
	 S_TASKS, "tasks", t_cancel, false},
	{"retry", "Give failed or cancelled tasks of the latest run a new attempt.", S_TASKS,
	 "tasks", t_retry, false},
	{"cost", "The tokens and cost of a run's attempts, and its budget.",
	 "{\"run\": {\"type\": \"string\"}, \"by\": {\"type\": \"string\", \"enum\": [\"task\", \"adapter\", \"model\", \"role\"]}}",
	 NULL, t_cost, false},
};

static json_t *tools_json(void)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		json_t *schema = json_object(), *props = json_loads(tools[i].properties, 0, NULL);

		if (!props)
			BUG("tool '%s': its properties are not JSON", tools[i].name);
		(void)json_object_set_new(schema, "type", json_string("object"));
		(void)json_object_set_new(schema, "properties", props);
		if (tools[i].required)
			(void)json_object_set_new(schema, "required",
						  json_pack("[s]", tools[i].required));
		(void)json_object_set_new(schema, "additionalProperties", json_false());
		(void)json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "name", tools[i].name,
							 "description", tools[i].description,
							 "inputSchema", schema));
	}
	return a;
}

static json_t *text_result(const char *text, bool is_error)
{
	json_t *s = json_str_lossy(text);

	return json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text", s, "isError",
			 is_error);
}

/* The tool's argv after the binary, from its arguments; the error result
 * when they are refused (NULL: fine). */
static json_t *tool_argv(const struct tool *t, const json_t *args, struct strvec *ret)
{
	struct tool_call tc = {.args = args, .argv = STRVEC_INIT};
	json_t *props, *v, *res = NULL;
	const char *key;

	props = json_loads(t->properties, 0, NULL);
	json_object_foreach((json_t *)(uintptr_t)args, key, v)
	{
		if (!json_object_get(props, key)) {
			(void)snprintf(tc.err, sizeof(tc.err), "unknown argument '%.64s'", key);
			break;
		}
	}
	json_decref(props);
	if (tc.err[0] || t->build(&tc) < 0)
		res = text_result(tc.err[0] ? tc.err : "bad arguments", true);
	else
		strvec_pushv(ret, (const char *const *)tc.argv.v);
	strvec_clear(&tc.argv);
	return res;
}

struct server {
	struct cli_ctx *ctx;
	const char *self;
};

/* Run this bernstein with argv; the result object. */
static json_t *run_tool(void *arg, const char *const *argv, bool detaches)
{
	const struct server *sv = arg;
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture_opts co = {0};
	struct capture c;
	json_t *res, *parsed = NULL;
	struct sbuf text = SBUF_INIT(SIZE_MAX);

	memset(&c, 0, sizeof(c));
	strvec_push(&spec.argv, sv->self);
	strvec_pushv(&spec.argv, argv);
	strvec_pushv(&spec.env, (const char *const *)sv->ctx->envp);
	if (detaches)
		spec.contain = CONTAIN_PGROUP;
	c.spec = &spec;
	c.timeout_ms = TOOL_TIMEOUT_MS;
	c.kill_grace_ms = 5000;
	c.max_out = TOOL_OUT_MAX;
	c.max_err = TOOL_ERR_MAX;
	c.tail_err = true;
	if (proc_capture(&c, 1, &co) < 0 || c.start_result < 0) {
		res = text_result(c.start_error ? c.start_error : "cannot start bernstein", true);
		goto out;
	}
	(void)sbuf_add(&text, c.out.buf, c.out.len);
	if (c.exit_code != 0) {
		(void)sbuf_addf(&text, "%sexit code %d", text.len ? "\n" : "", c.exit_code);
		if (c.err.len)
			(void)sbuf_addf(&text, ":\n%s", c.err.buf);
	}
	if (c.out_dropped)
		(void)sbuf_addf(&text, "\n[%zu bytes more not shown]", c.out_dropped);
	res = text_result(text.buf, c.exit_code != 0);
	/* one JSON object on stdout: also as structured content */
	if (c.out.len && !c.out_dropped)
		parsed = json_loadb(c.out.buf, c.out.len, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_object(parsed))
		(void)json_object_set(res, "structuredContent", parsed);
	json_decref(parsed);
out:
	capture_release(&c);
	proc_spec_release(&spec);
	sbuf_release(&text);
	return res;
}

/* ---- the protocol ---- */

static json_t *rpc_error(const json_t *id, int code, const char *msg)
{
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			 "error", "code", code, "message", msg);
}

static json_t *rpc_result(const json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

static json_t *initialize(const json_t *params)
{
	const char *want = json_string_value(json_object_get(params, "protocolVersion"));
	const char *ver = MCP_SERVER_PROTOCOL;
	size_t i;

	for (i = 0; want && protocol_versions[i]; i++)
		if (strcmp(want, protocol_versions[i]) == 0)
			ver = protocol_versions[i];
	return json_pack(
		"{s:s, s:{s:{s:b}}, s:{s:s, s:s}, s:s}", "protocolVersion", ver, "capabilities",
		"tools", "listChanged", 0, "serverInfo", "name", "bernstein", "version",
		BERNSTEIN_VERSION, "instructions",
		"bernstein runs plans of coding tasks on CLI agents in this repository: validate a plan, run it (detached), follow its status and logs, cancel or retry its tasks, see its cost.");
}

/* The answer to one message (NULL: none, a notification). */
static json_t *handle(const json_t *m, mcp_server_run_fn *run, void *arg)
{
	const json_t *id = json_object_get(m, "id");
	const char *method = json_string_value(json_object_get(m, "method"));
	const json_t *params = json_object_get(m, "params");
	const char *name;
	size_t i;

	if (!json_is_object(m) || !method || !json_is_string(json_object_get(m, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0") != 0 ||
	    (id && !json_is_integer(id) && !json_is_string(id)))
		return json_is_object(m) && !id && method
			       ? NULL
			       : rpc_error(id, -32600, "invalid request");
	if (!id)
		return NULL; /* notifications/initialized, cancelled, ... */
	if (params && !json_is_object(params))
		return rpc_error(id, -32602, "params must be an object");
	if (strcmp(method, "initialize") == 0)
		return rpc_result(id, initialize(params));
	if (strcmp(method, "ping") == 0)
		return rpc_result(id, json_object());
	if (strcmp(method, "tools/list") == 0)
		return rpc_result(id, json_pack("{s:o}", "tools", tools_json()));
	if (strcmp(method, "tools/call") != 0)
		return rpc_error(id, -32601, "method not found");
	name = json_string_value(json_object_get(params, "name"));
	if (!name)
		return rpc_error(id, -32602, "tools/call needs a tool name");
	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (strcmp(tools[i].name, name) == 0) {
			const json_t *args = json_object_get(params, "arguments");
			struct strvec argv = STRVEC_INIT;
			json_t *empty = json_object(), *res;

			if (args && !json_is_object(args)) {
				json_decref(empty);
				return rpc_error(id, -32602, "arguments must be an object");
			}
			res = tool_argv(&tools[i], args ? args : empty, &argv);
			if (!res)
				res = run(arg, (const char *const *)argv.v, tools[i].detaches);
			strvec_clear(&argv);
			json_decref(empty);
			return rpc_result(id, res);
		}
	return rpc_error(id, -32602, "unknown tool");
}

json_t *mcp_server_answer(const char *line, size_t len, mcp_server_run_fn *run, void *arg)
{
	json_t *m = NULL, *reply;
	struct diag d;

	diag_clear(&d);
	if (json_parse_strict("mcp", line, len, &m, &d) < 0)
		return rpc_error(NULL, -32700, "parse error");
	reply = handle(m, run, arg);
	json_decref(m);
	return reply;
}

int cmd_mcp(int argc, char **argv, struct cli_ctx *ctx)
{
	struct rpcwire w;
	char self[4096];
	struct server sv = {.ctx = ctx, .self = self};
	ssize_t n;
	int r, code = BEXIT_OK;

	(void)argv;
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
		return cli_help(ctx);
	if (argc > 1)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[1]);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return cli_error(ctx, BEXIT_ENV, "cannot find the bernstein binary: %s",
				 strerror(n < 0 ? errno : ENOENT));
	self[n] = '\0';
	(void)fflush(ctx->out);
	rpcwire_init(&w, STDIN_FILENO, STDOUT_FILENO, MCP_SERVER_MAX_MESSAGE);
	for (;;) {
		char *line = NULL;
		size_t len = 0;
		json_t *reply;

		r = rpcwire_read_line(&w, &line, &len, UINT64_MAX);
		if (r == -EPIPE)
			break; /* stdin ended */
		if (r < 0) {
			reply = rpc_error(NULL, -32600,
					  r == -ENOBUFS ? "message larger than 4 MiB"
							: "read error");
			(void)rpcwire_send(&w, reply, UINT64_MAX);
			json_decref(reply);
			cli_warn(ctx, "mcp: %s",
				 r == -ENOBUFS ? "a message larger than 4 MiB" : strerror(-r));
			code = BEXIT_FAILED;
			break;
		}
		if (len == 0 || (len == 1 && line[0] == '\r')) {
			free(line);
			continue;
		}
		reply = mcp_server_answer(line, len, run_tool, &sv);
		free(line);
		if (reply) {
			r = rpcwire_send(&w, reply, UINT64_MAX);
			json_decref(reply);
			if (r < 0) {
				cli_warn(ctx, "mcp: cannot write: %s", strerror(-r));
				code = BEXIT_FAILED;
				break;
			}
		}
	}
	rpcwire_release(&w);
	return code;
}
