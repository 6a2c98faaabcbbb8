/* The builtin tools (tools.h): workdir-confined file tools over openat2, and
 * run_command through rexec.h. */
#include "runner/tools.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/reaper.h"
#include "runner/rexec.h"
#include "runner/text.h"
#include "util/beneath.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

struct tools {
	struct tools_config cfg;
	char *workdir;	   /* realpath */
	int dirfd;	   /* O_PATH | O_DIRECTORY of workdir */
	struct strvec env; /* copy of cfg.cmd_env */
	char *path_env;
	unsigned bflags; /* names the file tools refuse (util/beneath.h) */
};

/* ---- confinement (util/beneath.h, shared with the mock agent) ------------- */

int tools_check_relpath(const char *path, size_t len, struct diag *reterr)
{
	return beneath_check_relpath(path, len, reterr);
}

int tools_open_beneath(int dirfd, const char *path, size_t len, int flags, mode_t mode,
		       struct diag *reterr)
{
	return beneath_open(dirfd, path, len, flags, mode, 0, reterr);
}

int tools_mkdirs_beneath(int dirfd, const char *path, struct diag *reterr)
{
	return beneath_mkdirs(dirfd, path, 0, reterr);
}

/* ---- set-up -------------------------------------------------------------- */

int tools_open(const struct tools_config *cfg, struct tools **ret, struct diag *reterr)
{
	struct tools *t;
	char *real;
	int fd;

	real = realpath(cfg->workdir, NULL);
	if (!real) {
		int e = errno;

		diag_set(reterr, NULL, 0, 0, "workdir '%s': %s", cfg->workdir, strerror(e));
		return -e;
	}
	fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		diag_set(reterr, NULL, 0, 0, "workdir '%s': %s", real, strerror(e));
		free(real);
		return -e;
	}
	/* what a command leaves behind comes back to this process, to be killed */
	if (cfg->allow_run_command) {
		int r = reaper_enable();

		if (r < 0) {
			diag_set(reterr, NULL, 0, 0, "cannot become a child subreaper: %s",
				 strerror(-r));
			(void)close(fd);
			free(real);
			return r;
		}
	}
	t = xcalloc(1, sizeof(*t));
	t->cfg = *cfg;
	t->workdir = real;
	t->dirfd = fd;
	strvec_init(&t->env);
	if (cfg->cmd_env)
		strvec_pushv(&t->env, cfg->cmd_env);
	t->path_env = xstrdup(cfg->path_env ? cfg->path_env : "");
	t->cfg.workdir = t->workdir;
	t->cfg.cmd_env = t->env.v;
	t->cfg.path_env = t->path_env;
	t->bflags = BENEATH_NO_BERNSTEIN | (cfg->allow_git_dir ? 0 : BENEATH_NO_GIT);
	if (!t->cfg.max_read)
		t->cfg.max_read = TOOLS_DEFAULT_MAX_READ;
	if (!t->cfg.max_list)
		t->cfg.max_list = TOOLS_DEFAULT_MAX_LIST;
	if (!t->cfg.max_write)
		t->cfg.max_write = TOOLS_DEFAULT_MAX_WRITE;
	if (!t->cfg.max_cmd_output)
		t->cfg.max_cmd_output = TOOLS_DEFAULT_CMD_OUTPUT;
	if (!t->cfg.cmd_timeout_ms)
		t->cfg.cmd_timeout_ms = TOOLS_DEFAULT_CMD_MS;
	*ret = t;
	return 0;
}

struct tools *tools_free(struct tools *t)
{
	if (!t)
		return NULL;
	/* nothing a command started outlives the tools (no other child of the
	 * runner is alive: builtin tools and MCP servers never run together) */
	if (t->cfg.allow_run_command)
		(void)reaper_kill_children(NULL, 0, 0);
	close_fdp(&t->dirfd);
	free(t->workdir);
	strvec_clear(&t->env);
	free(t->path_env);
	free(t);
	return NULL;
}

const char *tools_workdir(const struct tools *t)
{
	return t->workdir;
}

bool tools_has(const struct tools *t, const char *name)
{
	if (strcmp(name, "read_file") == 0 || strcmp(name, "write_file") == 0 ||
	    strcmp(name, "list_dir") == 0)
		return true;
	return strcmp(name, "run_command") == 0 && t->cfg.allow_run_command;
}

json_t *tools_specs(const struct tools *t)
{
	json_t *a = json_array();

	(void)json_array_append_new(
		a,
		json_pack(
			"{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}}", "name", "read_file",
			"description",
			"Read a UTF-8 text file inside the working directory. Paths are relative to the working directory.",
			"parameters", "type", "object", "properties", "path", "type", "string",
			"description", "file path relative to the working directory", "required",
			"path", "additionalProperties", 0));
	(void)json_array_append_new(
		a,
		json_pack(
			"{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:[s, s], s:b}}",
			"name", "write_file", "description",
			"Create or overwrite a file inside the working directory with the given content; missing parent directories are created.",
			"parameters", "type", "object", "properties", "path", "type", "string",
			"description", "file path relative to the working directory", "content",
			"type", "string", "description", "the complete new content", "required",
			"path", "content", "additionalProperties", 0));
	(void)json_array_append_new(
		a,
		json_pack(
			"{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:b}}", "name", "list_dir",
			"description",
			"List a directory inside the working directory: one name a line, sorted, directories end in '/'.",
			"parameters", "type", "object", "properties", "path", "type", "string",
			"description", "directory relative to the working directory (default '.')",
			"additionalProperties", 0));
	if (t->cfg.allow_run_command)
		(void)json_array_append_new(
			a,
			json_pack(
				"{s:s, s:s, s:{s:s, s:{s:{s:s, s:{s:s}, s:s}}, s:[s], s:b}}",
				"name", "run_command", "description",
				"Run a program in the working directory, without a shell: argv[0] is a bare command name looked up on PATH (shells and interpreters are refused). Returns the exit code, stdout and stderr.",
				"parameters", "type", "object", "properties", "argv", "type",
				"array", "items", "type", "string", "description",
				"the program and its arguments, e.g. [\"ls\", \"-l\"]", "required",
				"argv", "additionalProperties", 0));
	return a;
}

/* ---- the tools ----------------------------------------------------------- */

static void outcome_error(struct tool_outcome *o, const char *msg)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	o->ok = false;
	(void)sbuf_adds(&sb, "error: ");
	(void)text_add_utf8(&sb, msg, strlen(msg));
	o->output = sbuf_detach(&sb, NULL);
	if (!o->details)
		o->details = json_object();
	(void)json_object_set_new(o->details, "error", json_string(o->output + 7));
}

void tool_outcome_release(struct tool_outcome *o)
{
	if (!o)
		return;
	free(o->output);
	json_decref(o->details);
	json_decref(o->args);
	memset(o, 0, sizeof(*o));
}

/* A string argument, with its length (JSON strings may hold \u0000). */
static const char *arg_str(const json_t *args, const char *key, size_t *ret_len)
{
	json_t *v = json_object_get(args, key);

	if (!json_is_string(v))
		return NULL;
	*ret_len = json_string_length(v);
	return json_string_value(v);
}

static void tool_read(struct tools *t, const json_t *args, struct tool_outcome *o)
{
	struct diag d = {0};
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	struct stat st;
	const char *path;
	size_t plen = 0, total = 0;
	char *buf = NULL;
	bool truncated = false;
	int fd = -1;
	ssize_t n;

	path = arg_str(args, "path", &plen);
	if (!path) {
		outcome_error(o, "read_file needs a string 'path'");
		return;
	}
	fd = beneath_open(t->dirfd, path, plen, O_RDONLY | O_NONBLOCK, 0, t->bflags, &d);
	if (fd < 0) {
		outcome_error(o, d.msg);
		return;
	}
	if (fstat(fd, &st) < 0) {
		outcome_error(o, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		outcome_error(o, S_ISDIR(st.st_mode) ? "is a directory (use list_dir)"
						     : "not a regular file");
		goto out;
	}
	/* another name of the file may lie outside the workdir (or in .git) */
	if (st.st_nlink > 1) {
		outcome_error(o, "refusing to read a file with more than one hard link");
		goto out;
	}
	buf = xmalloc(t->cfg.max_read + 1);
	while (total <= t->cfg.max_read) {
		n = read(fd, buf + total, t->cfg.max_read + 1 - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			outcome_error(o, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		total += (size_t)n;
	}
	if (total > t->cfg.max_read) {
		truncated = true;
		total = t->cfg.max_read;
	}
	(void)text_add_utf8(&out, buf, total);
	if (truncated)
		(void)sbuf_addf(&out, "\n[truncated: the file is larger than %zu bytes]",
				t->cfg.max_read);
	o->ok = true;
	o->output = sbuf_detach(&out, NULL);
	o->details = json_pack("{s:I, s:b}", "bytes", (json_int_t)total, "truncated", truncated);
out:
	sbuf_release(&out);
	free(buf);
	close_fdp(&fd);
}

static void tool_write(struct tools *t, const json_t *args, struct tool_outcome *o)
{
	struct diag d = {0};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	const char *path, *content;
	size_t plen = 0, clen = 0;
	char msg[PATH_MAX + 64];

	path = arg_str(args, "path", &plen);
	content = arg_str(args, "content", &clen);
	if (!path || !content) {
		outcome_error(o, "write_file needs string 'path' and 'content'");
		return;
	}
	if (clen > t->cfg.max_write) {
		(void)snprintf(msg, sizeof(msg), "content is larger than %zu bytes",
			       t->cfg.max_write);
		outcome_error(o, msg);
		return;
	}
	/* beneath_write() wants a NUL-terminated path: one holding a NUL fails
	 * the lexical check on its full length first */
	if (tools_check_relpath(path, plen, &d) < 0 ||
	    beneath_write(t->dirfd, path, content, clen, t->bflags, &d) < 0) {
		outcome_error(o, d.msg);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "wrote %zu bytes to %.*s", clen, (int)plen, path);
	o->ok = true;
	(void)text_add_utf8(&sb, msg, strlen(msg));
	o->output = sbuf_detach(&sb, NULL);
	o->details = json_pack("{s:I}", "bytes", (json_int_t)clen);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void tool_list(struct tools *t, const json_t *args, struct tool_outcome *o)
{
	struct diag d = {0};
	struct strvec names = STRVEC_INIT;
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	const char *path = ".";
	size_t plen = 1, i, count = 0;
	bool truncated = false;
	struct dirent *de;
	DIR *dir = NULL;
	int fd;

	if (json_object_get(args, "path") && !json_is_null(json_object_get(args, "path"))) {
		path = arg_str(args, "path", &plen);
		if (!path) {
			outcome_error(o, "list_dir: 'path' must be a string");
			return;
		}
		if (plen == 0) {
			path = ".";
			plen = 1;
		}
	}
	fd = beneath_open(t->dirfd, path, plen, O_RDONLY | O_DIRECTORY, 0, t->bflags, &d);
	if (fd < 0) {
		outcome_error(o, d.msg);
		return;
	}
	dir = fdopendir(fd);
	if (!dir) {
		outcome_error(o, strerror(errno));
		(void)close(fd);
		return;
	}
	while ((de = readdir(dir)) != NULL) {
		bool isdir = de->d_type == DT_DIR;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* what the tools refuse is not shown */
		if (beneath_check_names(de->d_name, strlen(de->d_name), t->bflags, NULL) < 0)
			continue;
		if (count >= t->cfg.max_list) {
			truncated = true;
			break;
		}
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			isdir = fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				S_ISDIR(st.st_mode);
		}
		strvec_pushf(&names, "%s%s", de->d_name, isdir ? "/" : "");
		count++;
	}
	(void)closedir(dir);
	qsort(names.v, names.nr, sizeof(*names.v), cmp_str);
	for (i = 0; i < names.nr; i++) {
		(void)text_add_utf8(&out, names.v[i], strlen(names.v[i]));
		(void)sbuf_addc(&out, '\n');
	}
	if (truncated)
		(void)sbuf_addf(&out, "[truncated: more than %zu entries]\n", t->cfg.max_list);
	o->ok = true;
	o->output = sbuf_detach(&out, NULL);
	o->details = json_pack("{s:I, s:b}", "count", (json_int_t)count, "truncated", truncated);
	strvec_clear(&names);
}

static void add_stream(struct sbuf *sb, const char *label, const char *buf, size_t len,
		       size_t dropped)
{
	(void)sbuf_addf(sb, "%s:\n", label);
	(void)text_add_utf8(sb, buf, len);
	if (len > 0 && buf[len - 1] != '\n')
		(void)sbuf_addc(sb, '\n');
	if (dropped)
		(void)sbuf_addf(sb, "[truncated: %zu more bytes]\n", dropped);
}

static void tool_run(struct tools *t, const json_t *args, struct tool_outcome *o)
{
	struct diag d = {0};
	struct strvec argv = STRVEC_INIT;
	struct rexec_result res = {0};
	struct rexec_opts ro;
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	json_t *a = json_object_get(args, "argv"), *v;
	char *resolved = NULL;
	size_t i;
	int r;

	if (json_is_string(a) || json_is_string(json_object_get(args, "command"))) {
		outcome_error(o, "run_command takes an argv list, never a shell string");
		return;
	}
	if (!json_is_array(a) || json_array_size(a) == 0) {
		outcome_error(o, "run_command needs 'argv', a non-empty list of strings");
		return;
	}
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
			outcome_error(o, "every argv element must be a string without NUL bytes");
			goto out;
		}
	}
	r = rexec_resolve(json_string_value(json_array_get(a, 0)), t->path_env, t->workdir,
			  &resolved, &d);
	if (r < 0) {
		outcome_error(o, d.msg);
		goto out;
	}
	strvec_push(&argv, resolved);
	for (i = 1; i < json_array_size(a); i++)
		strvec_push(&argv, json_string_value(json_array_get(a, i)));
	ro = (struct rexec_opts){
		.cwd = t->workdir,
		.env = t->env.v,
		.timeout_ms = t->cfg.cmd_timeout_ms,
		.max_output = t->cfg.max_cmd_output,
		.landlock = t->cfg.landlock,
		.kill_orphans = true,
	};
	r = rexec_run(argv.v, &ro, &res, &d);
	if (r < 0) {
		outcome_error(o, d.msg);
		goto out;
	}
	if (res.start_error) {
		outcome_error(o, res.start_error);
		(void)json_object_set_new(o->details, "exit_code", json_integer(res.exit_code));
		goto out;
	}
	(void)sbuf_addf(&out, "exit_code=%d\n", res.exit_code);
	if (res.timed_out)
		(void)sbuf_addf(&out, "timed out after %llu ms; killed\n",
				(unsigned long long)t->cfg.cmd_timeout_ms);
	add_stream(&out, "stdout", res.out, res.out_len, res.out_dropped);
	add_stream(&out, "stderr", res.err, res.err_len, res.err_dropped);
	o->ok = !res.timed_out && res.exit_code == 0;
	o->output = sbuf_detach(&out, NULL);
	o->details = json_pack("{s:i, s:b, s:s}", "exit_code", res.exit_code, "timed_out",
			       res.timed_out, "resolved", resolved);
out:
	rexec_result_release(&res);
	strvec_clear(&argv);
	sbuf_release(&out);
	free(resolved);
}

/* The arguments as events show them: write_file's content is replaced by its
 * size (the file itself is the record). */
static json_t *event_args(const char *name, const json_t *args)
{
	json_t *e;

	if (!json_is_object(args))
		return json_object();
	if (strcmp(name, "write_file") != 0)
		return json_deep_copy(args);
	e = json_object();
	if (json_object_get(args, "path"))
		(void)json_object_set(e, "path", json_object_get(args, "path"));
	if (json_is_string(json_object_get(args, "content")))
		(void)json_object_set_new(e, "bytes",
					  json_integer((json_int_t)json_string_length(
						  json_object_get(args, "content"))));
	return e;
}

int tools_call(struct tools *t, const char *name, const char *args_json, struct tool_outcome *ret)
{
	struct tool_outcome o = {0};
	struct diag d = {0};
	json_t *args = NULL;

	if (!tools_has(t, name))
		return -ENOENT;
	if (!args_json || !*args_json)
		args_json = "{}";
	if (json_parse_strict("arguments", args_json, strlen(args_json), &args, &d) < 0 ||
	    !json_is_object(args)) {
		char msg[700];

		(void)snprintf(msg, sizeof(msg), "the arguments are not a JSON object%s%s",
			       d.msg[0] ? ": " : "", d.msg);
		o.args = json_pack("{s:s}", "raw", "(unparsable)");
		outcome_error(&o, msg);
		json_decref(args);
		*ret = o;
		return 0;
	}
	o.args = event_args(name, args);
	if (strcmp(name, "read_file") == 0)
		tool_read(t, args, &o);
	else if (strcmp(name, "write_file") == 0)
		tool_write(t, args, &o);
	else if (strcmp(name, "list_dir") == 0)
		tool_list(t, args, &o);
	else
		tool_run(t, args, &o);
	if (!o.output)
		o.output = xstrdup("");
	if (!o.details)
		o.details = json_object();
	json_decref(args);
	*ret = o;
	return 0;
}
