/* The runner command's help, shared by the command table (bernstein help
 * runner) and the bernstein-runner executable (bernstein runner -h). */
#ifndef BERNSTEIN_CLI_RUNNER_HELP_H
#define BERNSTEIN_CLI_RUNNER_HELP_H

#define RUNNER_SUMMARY "run the built-in agent (OpenAI-compatible endpoints)"
#define RUNNER_USAGE                                                                               \
	"--manifest FILE [--resume SESSION] [--session-dir DIR] [--proxy URL] [--max-retries N]"
#define RUNNER_HELP                                                                                \
	"The built-in agent runner: an agent loop over an OpenAI-compatible endpoint\n"            \
	"(Chat Completions at the manifest's base_url, else the Responses API at the\n"            \
	"default endpoint) with builtin or MCP gateway tools. It is normally spawned by\n"         \
	"bernstein itself (the openai_agents adapter writes the manifest into the session\n"       \
	"directory), but it is usable by hand. One JSON event per line on stdout: start,\n"        \
	"progress, tool_call, tool_result, usage, completion, error. See docs/runner.md.\n"        \
	"\n"                                                                                       \
	"options:\n"                                                                               \
	"  --manifest FILE      the runner manifest (JSON)\n"                                      \
	"  --resume SESSION     continue SESSION's saved transcript with this prompt\n"            \
	"  --session-dir DIR    where transcripts live (default: the manifest's directory)\n"      \
	"  --proxy URL          use this HTTP proxy (default: none; proxy variables in the\n"      \
	"                       environment are ignored)\n"                                        \
	"  --max-retries N      retries of a model request on 429/5xx (default 5)\n"               \
	"\n"                                                                                       \
	"environment: the manifest's api_key_env (default OPENAI_API_KEY) holds the key;\n"        \
	"BERNSTEIN_ALLOWED_API_KEY_ENVS admits more key variable names;\n"                         \
	"BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1 offers run_command without an OS sandbox.\n"        \
	"\n"                                                                                       \
	"Exit codes: 0 done, 1 runtime error, 2 manifest missing or invalid, or\n"                 \
	"config_invalid, 4 rate limited.\n"

#endif
