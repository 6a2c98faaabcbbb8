/* Upstream CLI contracts: the pinned, always-passed surface of each agent CLI
 * (catalog/contracts/NAME.yaml) and the drift check against the real binary.
 *
 * A contract names the binary, the flags and subcommands the adapter always
 * passes, and the argv that prints the help listing them. contract_check()
 * runs that help command in a minimal environment (no credentials), strips
 * ANSI escapes and matches:
 *   - flags case-insensitively, token-bounded at both ends: a match counts
 *     only when neither the byte before nor the byte after it is one of
 *     [A-Za-z0-9_-], so '-m' is not found inside '--model' and '--instruction'
 *     not inside '--instructions';
 *   - subcommands case-insensitively, surrounded by whitespace or the start or
 *     end of the text: (^|\s)SUB(\s|$).
 * Case folding and whitespace are ASCII. See docs/contracts.md.
 *
 * Results are data: nothing the CLI under test does makes contract_check()
 * fail. A missing binary is "skipped"; missing tokens are "capability
 * failures" (drift); a help command that prints nothing, times out, cannot be
 * started, or exits non-zero advertising none of >= 2 required tokens is a
 * "runtime failure" (a broken CLI, not drift). */
#ifndef BERNSTEIN_ADAPTER_CONTRACT_H
#define BERNSTEIN_ADAPTER_CONTRACT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/clock.h"
#include "util/diag.h"
#include "util/strvec.h"

/* Directory of contract files inside a catalogue directory (and inside the
 * embedded catalogue): <catalog>/contracts/NAME.yaml. */
#define CONTRACT_DIR	"contracts"
#define CONTRACT_SUFFIX ".yaml"
/* Largest contract file accepted. */
#define CONTRACT_MAX_FILE_BYTES (256 * 1024)
/* Contract names (file stems): [a-z0-9][a-z0-9_-]*, at most this many bytes. */
#define CONTRACT_MAX_NAME 64

#define CONTRACT_DEFAULT_HELP_TIMEOUT_MS   30000
#define CONTRACT_DEFAULT_MODELS_TIMEOUT_MS 60000
#define CONTRACT_DEFAULT_MAX_OUTPUT	   (1024 * 1024)
/* Characters of the help output quoted in a runtime-failure message. */
#define CONTRACT_SNIPPET_CHARS 300
/* Fewest required tokens for "advertises none of them" to mean a broken
 * probe rather than drift (a one-token contract losing its token is drift). */
#define CONTRACT_BROKEN_PROBE_MIN_REQUIRED 2

enum contract_install_method {
	CONTRACT_INSTALL_UNSPECIFIED, /* "" or absent */
	CONTRACT_INSTALL_NPM,	      /* "npm" */
	CONTRACT_INSTALL_PIPX,	      /* "pipx" */
	CONTRACT_INSTALL_CURL,	      /* "curl" */
	CONTRACT_INSTALL_CARGO,	      /* "cargo" */
	CONTRACT_INSTALL_SHELL,	      /* "shell" */
	CONTRACT_INSTALL_MANUAL,      /* "manual" */
	_CONTRACT_INSTALL_MAX,
	_CONTRACT_INSTALL_INVALID = -EINVAL,
};

enum contract_auth_basis {
	CONTRACT_AUTH_UNKNOWN,		  /* "unknown" (the default) */
	CONTRACT_AUTH_API_KEY,		  /* "api_key" */
	CONTRACT_AUTH_LOCAL,		  /* "local" */
	CONTRACT_AUTH_SUBSCRIPTION_OAUTH, /* "subscription_oauth" */
	_CONTRACT_AUTH_MAX,
	_CONTRACT_AUTH_INVALID = -EINVAL,
};

/* A loaded contract. Every string and array lives in ->arena; arrays are
 * NULL-terminated and never NULL (possibly empty). */
struct contract {
	struct arena arena;
	const char *name;    /* the file stem: the lookup key */
	const char *source;  /* the file name used in diagnostics */
	const char *adapter; /* 'adapter:', default name */
	const char *binary;  /* 'binary:', default name; "" = no binary (always skipped) */
	enum contract_install_method install_method;
	const char *install_spec; /* "" when absent */
	bool auth_required_for_help;
	bool auth_required_for_models;
	const char **secret_env; /* highest precedence first; a string is a 1-list */
	size_t n_secret_env;
	enum contract_auth_basis auth_basis;
	const char **required_flags;
	size_t n_required_flags;
	const char **required_subcommands;
	size_t n_required_subcommands;
	/* 'help_command:', or {binary, "--help"} when absent or empty. Empty
	 * only when binary is "". */
	const char **help_command;
	size_t n_help_command;
	const char **models_command; /* expected_models.command */
	size_t n_models_command;
	const char **models_required; /* expected_models.required_present */
	size_t n_models_required;
	const char *session_id_flag; /* NULL when absent, null or "" */
};

/* Load one contract from memory. name is the contract name (the file stem,
 * checked with contract_name_valid()); source names the file in diagnostics
 * ("catalog/contracts/x.yaml", "<embedded>/contracts/x.yaml"). Errors, with
 * FILE:LINE:COL in reterr: -EINVAL (YAML or schema), -EFBIG (too large). */
int contract_load_buf(const char *name, const char *source, const char *buf, size_t len,
		      struct contract **ret, struct diag *reterr);
/* Load DIR/NAME.yaml; the name is the file's stem. -ENOENT etc. for I/O. */
int contract_load_file(const char *path, struct contract **ret, struct diag *reterr);
struct contract *contract_free(struct contract *c);

/* [a-z0-9][a-z0-9_-]*, at most CONTRACT_MAX_NAME bytes. */
bool contract_name_valid(const char *name);
const char *contract_install_method_to_string(enum contract_install_method m);
const char *contract_auth_basis_to_string(enum contract_auth_basis b);

/* ---- matching (pure; used by the live check and on stored help texts) ---- */

/* Is flag advertised in text[0..len) (already ANSI-stripped)? Token-bounded,
 * ASCII case-insensitive. An empty flag is never advertised. */
bool contract_flag_advertised(const char *text, size_t len, const char *flag);
/* Is sub advertised as a whitespace-delimited token (ASCII case-insensitive)? */
bool contract_subcommand_advertised(const char *text, size_t len, const char *sub);
/* Match every required flag and subcommand of c against help_text (raw: ANSI
 * escapes are stripped here; it may contain NUL bytes). Appends one message
 * per missing token to failures (may be NULL):
 *   missing required flag '--json' in `codex exec --help`
 *   missing required subcommand 'run' in `opencode run --help`
 * and returns the number of missing tokens. */
size_t contract_match_help(const struct contract *c, const char *help_text, size_t len,
			   struct strvec *failures);
/* Classify a help run as a broken probe rather than drift. Returns NULL (not
 * broken: match normally), "no output" (it printed nothing but whitespace and
 * the contract requires something), or "no required tokens advertised" (it
 * exited non-zero and none of >= CONTRACT_BROKEN_PROBE_MIN_REQUIRED required
 * tokens appears). help_text is raw, as for contract_match_help(). */
const char *contract_probe_failure(const struct contract *c, const char *help_text, size_t len,
				   int exit_code);

/* ---- the live check ---- */

struct contract_check_opts {
	/* The caller's environment (NULL-terminated "K=V" strings). Only PATH,
	 * HOME, LANG, LC_ALL, USER and LOGNAME are passed to the help command,
	 * plus CI=1 NO_COLOR=1 DO_NOT_TRACK=1 TERM=dumb; secrets named by
	 * auth.secret_env are only looked up (and passed to the model-list
	 * command). PATH is also where the binary is searched. */
	const char *const *envp;
	uint64_t help_timeout_ms;   /* 0 = CONTRACT_DEFAULT_HELP_TIMEOUT_MS */
	uint64_t models_timeout_ms; /* 0 = CONTRACT_DEFAULT_MODELS_TIMEOUT_MS */
	size_t max_output;	    /* 0 = CONTRACT_DEFAULT_MAX_OUTPUT */
	unsigned max_parallel;	    /* help commands run at once; 0 = the probe default */
	const struct clock *clock;  /* NULL = the system clock */
};

/* The outcome for one contract; the fields of Bernstein's ContractResult. */
struct contract_result {
	char *adapter; /* owned copies */
	char *binary;
	bool binary_installed;
	int help_exit_code; /* 0 when not run; 124 timed out; 126 could not start;
			       127 not found; 128+N killed by signal N */
	bool timed_out;
	bool help_checked; /* the help output was matched against the contract */
	struct strvec capability_failures;
	struct strvec model_failures;
	bool models_checked;   /* the model-list command ran and exited 0 */
	char *skipped_reason;  /* NULL = not skipped */
	char *runtime_failure; /* NULL = none */
};

#define CONTRACT_RESULT_INIT                                                                       \
	{                                                                                          \
		.adapter = NULL, .binary = NULL, .capability_failures = STRVEC_INIT,               \
		.model_failures = STRVEC_INIT, .skipped_reason = NULL, .runtime_failure = NULL     \
	}

/* Run the check. *ret must be CONTRACT_RESULT_INIT (or released); it is filled
 * in every case. Returns 0, or a negative errno only when the check itself
 * could not run (the process loop failed); the result then holds what was
 * known. */
int contract_check(const struct contract *c, const struct contract_check_opts *opts,
		   struct contract_result *ret);
/* Check n contracts, their help commands running in parallel (each bounded
 * by the timeout); rets[0..n) as for contract_check(). Model-list commands
 * run afterwards, one at a time. */
int contract_check_all(const struct contract *const *cs, size_t n,
		       const struct contract_check_opts *opts, struct contract_result *rets);
void contract_result_release(struct contract_result *r);
/* installed, help checked, no runtime failure, no capability or model
 * failures (unlike Bernstein, a help check skipped for missing auth is not a
 * pass) */
bool contract_result_passed(const struct contract_result *r);
/* capability or model failures: the contract drifted */
bool contract_result_drifted(const struct contract_result *r);

/* The one classification of a result, used by `adapters contract-check` (its
 * summary and exit code) and by the contract column of `adapters check`.
 * Tested in this order: passed, drifted (drift wins), runtime failure,
 * not installed (binary, or help_command[0], not on PATH), skipped (no binary
 * in the contract, a secret the help needs is unset, or the check could not
 * run). */
enum contract_verdict {
	CONTRACT_VERDICT_PASSED,	  /* "passed" */
	CONTRACT_VERDICT_DRIFTED,	  /* "drifted" */
	CONTRACT_VERDICT_RUNTIME_FAILURE, /* "runtime-failure": a broken CLI, not drift */
	CONTRACT_VERDICT_NOT_INSTALLED,	  /* "not-installed" */
	CONTRACT_VERDICT_SKIPPED,	  /* "skipped" */
	_CONTRACT_VERDICT_MAX,
	_CONTRACT_VERDICT_INVALID = -EINVAL,
};
enum contract_verdict contract_result_verdict(const struct contract_result *r);
const char *contract_verdict_to_string(enum contract_verdict v);

/* The help command's environment built from envp (see contract_check_opts),
 * plus the variables named in extra (NULL-terminated, may be NULL) that are
 * set in envp. Sorted. Appended to *ret. */
void contract_sandbox_env(const char *const *envp, const char *const *extra, struct strvec *ret);

/* ---- the set of contracts: embedded < user catalogue < repo catalogue ---- */

struct contract_entry {
	const char *name;   /* file stem */
	const char *source; /* file path, or "<embedded>/contracts/NAME.yaml" */
	const char *data;   /* embedded bytes, or NULL: read source */
	size_t len;
};

struct contract_index {
	struct arena arena;
	struct contract_entry *v; /* sorted by name */
	size_t n, alloc;
};

/* Collect the contract files: the embedded catalogue's contracts/NAME.yaml,
 * then USER_DIR/contracts/NAME.yaml, then REPO_DIR/contracts/NAME.yaml (either dir may be
 * NULL or missing); a later layer replaces an earlier file of the same name.
 * Hidden files and names not ending in .yaml are ignored; a .yaml file whose
 * stem is not a valid name is an error (-EINVAL). */
int contract_index_build(const char *user_dir, const char *repo_dir, struct contract_index **ret,
			 struct diag *reterr);
/* The same with dirs (NULL-terminated, NULL: none) in ascending precedence. */
int contract_index_build_dirs(const char *const *dirs, struct contract_index **ret,
			      struct diag *reterr);
const struct contract_entry *contract_index_find(const struct contract_index *idx,
						 const char *name);
/* Load e's contract. Unlike contract_load_buf(), a contract of the catalogue
 * must pin something: one with no required_flags and no
 * required_subcommands (an empty override file) is -EINVAL. */
int contract_index_load(const struct contract_entry *e, struct contract **ret, struct diag *reterr);
struct contract_index *contract_index_free(struct contract_index *idx);

#endif
