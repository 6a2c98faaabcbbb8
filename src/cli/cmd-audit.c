/* bernstein audit verify | show | key | append: the HMAC audit chain
 * (docs/audit-log.md). The chain lives in .bernstein/audit under the working
 * directory (-C DIR, or --dir); the key path comes from the environment. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "cli/audit-setup.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

#define AUDIT_DEFAULT_DIR  AUDIT_SETUP_DEFAULT_DIR
#define SHOW_DEFAULT_LIMIT 20
#define KEY_CREATE_HINT	   AUDIT_SETUP_CREATE_HINT
/* --from reads at most this much (a pipe may never end) */
#define AUDIT_FROM_MAX (1ull << 30)

/* ---- shared helpers ---- */

/* Print s with control characters (C0, DEL and, UTF-8 encoded, C1) as '?',
 * so a record cannot drive the terminal. */
static void put_safe(FILE *f, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	for (; u && *u; u++) {
		if (u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f) {
			(void)fputc('?', f);
			u++;
		} else {
			(void)fputc(*u < 0x20 || *u == 0x7f ? '?' : *u, f);
		}
	}
}

/* ---- audit verify ---- */

struct verify_out {
	struct cli_ctx *ctx;
	json_t *problems; /* --json: collected */
};

static void verify_problem(void *userdata, const char *file, unsigned line, const char *msg)
{
	struct verify_out *vo = userdata;

	if (vo->problems) {
		json_t *p = json_object();

		(void)json_object_set_new(p, "file", cli_jstr(file));
		(void)json_object_set_new(p, "line", json_integer(line));
		(void)json_object_set_new(p, "message", cli_jstr(msg));
		(void)json_array_append_new(vo->problems, p);
		return;
	}
	put_safe(vo->ctx->out, file);
	if (line)
		(void)fprintf(vo->ctx->out, ":%u", line);
	(void)fputs(": ", vo->ctx->out);
	put_safe(vo->ctx->out, msg); /* may quote bytes of the chain (parser errors) */
	(void)fputc('\n', vo->ctx->out);
}

static int cmd_audit_verify(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"dir", required_argument, NULL, 'd'},
		{"key-file", required_argument, NULL, 'k'},
		{"json", no_argument, NULL, 'j'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	const char *dir = AUDIT_DEFAULT_DIR, *key_file = NULL;
	struct verify_out vo = {.ctx = ctx};
	struct audit_verify_stats st;
	struct stat sb;
	struct diag d;
	char *key = NULL;
	size_t keylen = 0;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'k':
			key_file = optarg;
			break;
		case 'j':
			ctx->json = true;
			break;
		case 'h':
			return cli_help(ctx);
		case ':':
			return cli_missing_value(ctx, argv);
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	/* Like Bernstein: no audit directory is a failed verification. */
	if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return cli_error(ctx, BEXIT_FAILED, "audit directory not found: '%s'", dir);
	r = audit_setup_load_key(ctx, key_file, false, &key, &keylen);
	if (r)
		return r;
	if (ctx->json)
		vo.problems = json_array();
	r = audit_verify(dir, key, keylen, verify_problem, &vo, &st, &d);
	key = audit_key_free(key, keylen);
	if (r < 0) {
		json_decref(vo.problems);
		return cli_diag(ctx, r == -ENOENT ? BEXIT_FAILED : BEXIT_ENV, &d);
	}
	if (ctx->json) {
		json_t *o = json_object();

		(void)json_object_set_new(o, "intact", json_boolean(st.problems == 0));
		(void)json_object_set_new(o, "records", json_integer((json_int_t)st.records));
		(void)json_object_set_new(o, "files", json_integer(st.files));
		(void)json_object_set_new(o, "state_checked", json_boolean(st.have_state));
		(void)json_object_set_new(o, "last_hmac", cli_jstr(st.last_hmac));
		(void)json_object_set_new(o, "problems", vo.problems);
		r = cli_print_json(ctx, o);
		if (r)
			return r;
	} else if (st.problems == 0) {
		(void)fprintf(ctx->out, "audit chain intact: %llu record%s in %u file%s%s\n",
			      (unsigned long long)st.records, st.records == 1 ? "" : "s", st.files,
			      st.files == 1 ? "" : "s", st.have_state ? ", end matches state" : "");
	} else {
		(void)fprintf(ctx->out, "audit chain BROKEN: %llu problem%s in %llu record%s\n",
			      (unsigned long long)st.problems, st.problems == 1 ? "" : "s",
			      (unsigned long long)st.records, st.records == 1 ? "" : "s");
	}
	return st.problems ? BEXIT_FAILED : BEXIT_OK;
}

/* ---- audit show ---- */

struct show {
	struct cli_ctx *ctx;
	const char *event_type;
	size_t limit; /* 0: all */
	json_t **ring;
	size_t alloc, n, start; /* ring of the last matches */
	unsigned skipped;
};

static void show_keep(struct show *s, json_t *rec)
{
	if (s->limit && s->n == s->limit) {
		json_decref(s->ring[s->start]);
		s->ring[s->start] = rec;
		s->start = (s->start + 1) % s->limit;
		return;
	}
	if (s->n == s->alloc) {
		s->alloc = s->alloc ? st_mult(s->alloc, 2) : 64;
		if (s->limit && s->alloc > s->limit)
			s->alloc = s->limit;
		s->ring = xrealloc(s->ring, st_mult(s->alloc, sizeof(*s->ring)));
	}
	s->ring[s->n++] = rec;
}

static int show_record(void *userdata, const char *file, unsigned line, const char *raw, size_t len,
		       const json_t *record)
{
	struct show *s = userdata;
	const char *et;

	(void)raw;
	(void)len;
	if (!record) {
		if (s->ctx->verbosity >= 0) {
			(void)fputs("bernstein: warning: ", s->ctx->err);
			put_safe(s->ctx->err, file);
			(void)fprintf(s->ctx->err, ":%u: not a JSON object, skipped\n", line);
		}
		s->skipped++;
		return 0;
	}
	et = json_string_value(json_object_get(record, "event_type"));
	if (s->event_type && (!et || strcmp(et, s->event_type) != 0))
		return 0;
	show_keep(s, json_deep_copy(record));
	return 0;
}

static void show_text(FILE *f, const json_t *rec)
{
	static const char *const fields[] = {"timestamp", "event_type", "actor"};
	const json_t *details = json_object_get(rec, "details");
	struct sbuf dj = SBUF_INIT(SIZE_MAX);
	size_t i;

	for (i = 0; i < 3; i++) {
		const char *v = json_string_value(json_object_get(rec, fields[i]));

		put_safe(f, v ? v : "-");
		(void)fputs("  ", f);
	}
	put_safe(f, json_string_value(json_object_get(rec, "resource_type")));
	(void)fputc('/', f);
	put_safe(f, json_string_value(json_object_get(rec, "resource_id")));
	/* As stored: the canonical form is ASCII with escapes. */
	if (details && json_canon_py(details, &dj) == 0) {
		(void)fputs("  ", f);
		put_safe(f, dj.buf);
	}
	sbuf_release(&dj);
	(void)fputc('\n', f);
}

static int cmd_audit_show(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"dir", required_argument, NULL, 'd'},
		{"event-type", required_argument, NULL, 'e'},
		{"limit", required_argument, NULL, 'n'},
		{"json", no_argument, NULL, 'j'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	struct show s = {.ctx = ctx, .limit = SHOW_DEFAULT_LIMIT};
	const char *dir = AUDIT_DEFAULT_DIR;
	struct diag d;
	char *end;
	size_t i;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'e':
			s.event_type = optarg;
			break;
		case 'n': {
			unsigned long long v;

			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v > 1000000000)
				return cli_usage_error(
					ctx, "invalid --limit '%s' (0 to 1000000000)", optarg);
			s.limit = (size_t)v;
			break;
		}
		case 'j':
			ctx->json = true;
			break;
		case 'h':
			return cli_help(ctx);
		case ':':
			return cli_missing_value(ctx, argv);
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	r = audit_read(dir, show_record, &s, &d);
	if (r < 0) {
		r = cli_diag(ctx, r == -ENOENT || r == -ENOTDIR ? BEXIT_FAILED : BEXIT_ENV, &d);
		goto out;
	}
	if (ctx->json) {
		json_t *o = json_object(), *arr = json_array();

		for (i = 0; i < s.n; i++)
			(void)json_array_append(arr, s.ring[(s.start + i) % s.n]);
		(void)json_object_set_new(o, "records", arr);
		r = cli_print_json(ctx, o);
	} else {
		for (i = 0; i < s.n; i++)
			show_text(ctx->out, s.ring[(s.start + i) % s.n]);
		r = 0;
	}
out:
	for (i = 0; i < s.n; i++)
		json_decref(s.ring[i]);
	free((void *)s.ring);
	return r;
}

/* ---- audit key ---- */

static int cmd_audit_key(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"create", no_argument, NULL, 'c'},
		{"key-file", required_argument, NULL, 'k'},
		{"json", no_argument, NULL, 'j'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	enum audit_key_source src = AUDIT_KEY_HOME;
	const char *key_file = NULL;
	bool create = false, created = false, exists;
	char path[PATH_MAX], *key = NULL;
	size_t keylen = 0;
	struct stat sb;
	struct diag d;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			create = true;
			break;
		case 'k':
			key_file = optarg;
			break;
		case 'j':
			ctx->json = true;
			break;
		case 'h':
			return cli_help(ctx);
		case ':':
			return cli_missing_value(ctx, argv);
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	r = audit_setup_key_path(ctx, key_file, path, sizeof(path), &src);
	if (r)
		return r;
	exists = stat(path, &sb) == 0;
	if (exists || create) {
		/* Loading checks the mode and content; the key is dropped at once. */
		r = audit_key_load(path, create, &key, &keylen, &created, &d);
		key = audit_key_free(key, keylen);
		if (r < 0)
			return cli_diag(ctx, BEXIT_ENV, &d);
		exists = stat(path, &sb) == 0;
	}
	if (ctx->json) {
		json_t *o = json_object();
		char mode[8];

		(void)snprintf(mode, sizeof(mode), "%04o",
			       exists ? (unsigned)(sb.st_mode & 07777) : 0);
		(void)json_object_set_new(o, "path", cli_jstr(path));
		(void)json_object_set_new(o, "source", json_string(audit_key_source_name(src)));
		(void)json_object_set_new(o, "exists", json_boolean(exists));
		(void)json_object_set_new(o, "created", json_boolean(created));
		(void)json_object_set_new(o, "mode", exists ? json_string(mode) : json_null());
		return cli_print_json(ctx, o);
	}
	(void)fputs("path: ", ctx->out);
	put_safe(ctx->out, path);
	(void)fprintf(ctx->out, "\nsource: %s\n", audit_key_source_name(src));
	if (created)
		(void)fprintf(ctx->out, "status: created (mode %04o)\n",
			      (unsigned)(sb.st_mode & 07777));
	else if (exists)
		(void)fprintf(ctx->out, "status: present (mode %04o)\n",
			      (unsigned)(sb.st_mode & 07777));
	else
		(void)fprintf(ctx->out, "status: missing (%s)\n", KEY_CREATE_HINT);
	return 0;
}

/* ---- audit append ---- */

/* One line of at most sb's cap (without '\n') into sb: 1, 0 at EOF,
 * -ENOBUFS when longer (the rest is not read: it may never end, like
 * /dev/zero's), -EFBIG when the input's *budget bytes are used up, -EIO on a
 * read error. */
static int read_line_capped(FILE *f, struct sbuf *sb, uint64_t *budget)
{
	bool any = false;
	int ch;

	sbuf_reset(sb);
	while ((ch = getc_unlocked(f)) != EOF) {
		if (*budget == 0)
			return -EFBIG;
		--*budget;
		any = true;
		if (ch == '\n')
			return 1;
		if (sbuf_addc(sb, (char)ch) < 0)
			return -ENOBUFS;
	}
	if (ferror(f))
		return -EIO;
	return any ? 1 : 0;
}

static bool string_or_absent(const json_t *o, const char *key, const char **ret)
{
	const json_t *v = json_object_get(o, key);

	if (!v) {
		*ret = NULL;
		return true;
	}
	*ret = json_string_value(v);
	return json_is_string(v);
}

/* Append every line of f ({"event_type": .., "actor": .., "resource_type": ..,
 * "resource_id": .., "details": {..}}) in one batch. */
static int append_from(struct cli_ctx *ctx, struct audit_chain *chain, FILE *f, const char *name,
		       unsigned long *ret_n)
{
	struct sbuf line = SBUF_INIT(AUDIT_LINE_MAX);
	uint64_t budget = AUDIT_FROM_MAX;
	unsigned long n = 0;
	unsigned lineno = 0;
	json_t *o = NULL;
	struct diag d;
	int r, rr;

	audit_batch_begin(chain);
	for (;;) {
		const char *et, *actor, *rtype, *rid, *key;
		json_t *details, *v;

		r = read_line_capped(f, &line, &budget);
		if (r == 0)
			break;
		lineno++;
		if (r == -ENOBUFS) {
			r = cli_error(ctx, BEXIT_USAGE, "%s:%u: line longer than %d bytes", name,
				      lineno, AUDIT_LINE_MAX);
			goto out;
		}
		if (r == -EFBIG) {
			r = cli_error(ctx, BEXIT_USAGE, "%s:%u: input longer than %llu bytes", name,
				      lineno, (unsigned long long)AUDIT_FROM_MAX);
			goto out;
		}
		if (r < 0) {
			r = cli_error(ctx, BEXIT_ENV, "cannot read '%s': %s", name, strerror(-r));
			goto out;
		}
		if (line.len == 0)
			continue;
		o = json_loadb(line.buf, line.len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
		if (!json_is_object(o)) {
			r = cli_error(ctx, BEXIT_USAGE, "%s:%u: not a JSON object", name, lineno);
			goto out;
		}
		json_object_foreach(o, key, v)
		{
			if (strcmp(key, "event_type") && strcmp(key, "actor") &&
			    strcmp(key, "resource_type") && strcmp(key, "resource_id") &&
			    strcmp(key, "details")) {
				r = cli_error(
					ctx, BEXIT_USAGE,
					"%s:%u: unknown key '%s' (expected event_type, actor, resource_type, resource_id, details)",
					name, lineno, key);
				goto out;
			}
		}
		details = json_object_get(o, "details");
		if (!string_or_absent(o, "event_type", &et) || !et || !et[0] ||
		    !string_or_absent(o, "actor", &actor) ||
		    !string_or_absent(o, "resource_type", &rtype) ||
		    !string_or_absent(o, "resource_id", &rid) ||
		    (details && !json_is_object(details))) {
			r = cli_error(
				ctx, BEXIT_USAGE,
				"%s:%u: event_type must be a non-empty string, actor, resource_type and resource_id strings, details an object",
				name, lineno);
			goto out;
		}
		r = audit_append(chain, et, actor, rtype, rid, details, &d);
		if (r < 0) {
			r = audit_setup_chain_error(ctx, r, &d);
			goto out;
		}
		json_decref(o);
		o = NULL;
		n++;
	}
	r = 0;
out:
	json_decref(o);
	sbuf_release(&line);
	/* What was appended is made durable even when a later line failed. */
	rr = audit_batch_end(chain, &d);
	if (rr < 0 && r == 0)
		r = audit_setup_chain_error(ctx, rr, &d);
	*ret_n = n;
	return r;
}

static int cmd_audit_append(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"event-type", required_argument, NULL, 'e'},
		{"actor", required_argument, NULL, 'a'},
		{"resource-type", required_argument, NULL, 't'},
		{"resource-id", required_argument, NULL, 'i'},
		{"details", required_argument, NULL, 'D'},
		{"from", required_argument, NULL, 'f'},
		{"dir", required_argument, NULL, 'd'},
		{"key-file", required_argument, NULL, 'k'},
		{"json", no_argument, NULL, 'j'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	const char *dir = AUDIT_DEFAULT_DIR, *key_file = NULL, *from = NULL;
	const char *et = NULL, *actor = "operator", *rtype = "", *rid = "", *details_s = NULL;
	struct audit_chain *chain = NULL;
	json_t *details = NULL;
	json_error_t jerr;
	unsigned long n = 0;
	FILE *f = NULL;
	struct diag d;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			et = optarg;
			break;
		case 'a':
			actor = optarg;
			break;
		case 't':
			rtype = optarg;
			break;
		case 'i':
			rid = optarg;
			break;
		case 'D':
			details_s = optarg;
			break;
		case 'f':
			from = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			key_file = optarg;
			break;
		case 'j':
			ctx->json = true;
			break;
		case 'h':
			return cli_help(ctx);
		case ':':
			return cli_missing_value(ctx, argv);
		default:
			return cli_unknown_option(ctx, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	if (from && (et || details_s))
		return cli_usage_error(
			ctx,
			"--from takes the records from a file: no --event-type or --details with it");
	if (!from && (!et || !et[0]))
		return cli_usage_error(ctx, "--event-type is required");
	if (details_s) {
		details = json_loads(details_s, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
		if (!json_is_object(details)) {
			json_decref(details);
			return cli_usage_error(ctx, "--details must be a JSON object%s%s",
					       details ? "" : ": ", details ? "" : jerr.text);
		}
	}
	if (from && strcmp(from, "-") == 0) {
		f = stdin; /* a pipe, legitimately: capped while read */
	} else if (from) {
		/* a file: a FIFO or a device is refused unopened */
		int fd = open_regular(from, O_RDONLY, 0);

		f = fd >= 0 ? fdopen(fd, "re") : NULL;
		if (!f) {
			r = fd >= 0 ? -errno : fd;
			if (fd >= 0)
				(void)close(fd);
			r = cli_error(ctx, BEXIT_ENV, "cannot read '%s': %s", from,
				      file_strerror(r));
			goto out;
		}
	}
	r = audit_setup_open(ctx, dir, key_file, &chain);
	if (r)
		goto out;
	if (f) {
		r = append_from(ctx, chain, f, strcmp(from, "-") == 0 ? "<stdin>" : from, &n);
	} else {
		r = audit_append(chain, et, actor, rtype, rid, details, &d);
		if (r < 0)
			r = audit_setup_chain_error(ctx, r, &d);
		else
			n = 1;
	}
	if (r == 0 && ctx->json) {
		json_t *o = json_object();

		(void)json_object_set_new(o, "appended", json_integer((json_int_t)n));
		(void)json_object_set_new(o, "count",
					  json_integer((json_int_t)audit_chain_count(chain)));
		(void)json_object_set_new(o, "last_hmac",
					  json_string(audit_chain_last_hmac(chain)));
		r = cli_print_json(ctx, o);
	}
out:
	audit_close(chain);
	if (f && f != stdin)
		(void)fclose(f);
	json_decref(details);
	return r;
}

/* ---- the group ---- */

const struct cmd audit_cmds[] = {
	{"verify", cmd_audit_verify, NULL, 0, "verify the HMAC chain from genesis",
	 "[--dir DIR] [--key-file PATH] [--json]",
	 "Replays every .bernstein/audit/YYYY-MM-DD.jsonl in name order from genesis and\n"
	 "checks each line: valid JSON, an object, canonical bytes, prev_hmac chaining\n"
	 "and HMAC-SHA256; then the chain's end against state.json (a truncated tail).\n"
	 "Every problem is printed as FILE:LINE: WHAT. An entry named like a chain\n"
	 "file that is not a regular file (a FIFO, a symlink...) is a problem, unread.\n"
	 "\n"
	 "options:\n"
	 "  --dir DIR        the chain directory (default .bernstein/audit)\n"
	 "  --key-file PATH  the key (default: $BERNSTEIN_AUDIT_KEY_PATH, else\n"
	 "                   $XDG_STATE_HOME/bernstein/audit.key, else\n"
	 "                   ~/.local/state/bernstein/audit.key)\n"
	 "  --json           {\"intact\", \"records\", \"files\", \"problems\": [...]}\n"
	 "\n"
	 "Exit: 0 intact, 1 broken or no audit directory, 4 key or I/O problem.\n"},
	{"show", cmd_audit_show, NULL, 0, "print the latest audit records",
	 "[--dir DIR] [--event-type TYPE] [--limit N] [--json]",
	 "Prints the last N records (default 20, 0 for all), oldest first, as\n"
	 "TIMESTAMP  EVENT_TYPE  ACTOR  RESOURCE_TYPE/RESOURCE_ID  DETAILS.\n"
	 "MACs are not checked (see 'bernstein audit verify').\n"
	 "\n"
	 "options:\n"
	 "  --dir DIR          the chain directory (default .bernstein/audit)\n"
	 "  --event-type TYPE  only records of this event type\n"
	 "  -n, --limit N      at most N records (0: all)\n"
	 "  --json             {\"records\": [...]} with the records as stored\n"},
	{"key", cmd_audit_key, NULL, 0, "show where the audit key is, or create it",
	 "[--create] [--key-file PATH] [--json]",
	 "Prints the key's path, which setting chose it and whether it exists; never\n"
	 "the key itself. The key is looked up in $BERNSTEIN_AUDIT_KEY_PATH, else\n"
	 "$XDG_STATE_HOME/bernstein/audit.key, else ~/.local/state/bernstein/audit.key.\n"
	 "It must not be accessible by group or others (exit 4 otherwise).\n"
	 "\n"
	 "options:\n"
	 "  --create         create it if missing (32 random bytes as 64 hex digits,\n"
	 "                   mode 0600, directory 0700)\n"
	 "  --key-file PATH  use this path instead\n"
	 "  --json           {\"path\", \"source\", \"exists\", \"created\", \"mode\"}\n"},
	{"append", cmd_audit_append, NULL, 0, "record an event in the audit chain",
	 "(--event-type TYPE [RECORD OPTIONS] | --from FILE) [--dir DIR] [--key-file PATH] [--json]",
	 "Appends one record, for events an operator wants on the record. The key and\n"
	 "the chain directory are created when the first record is written (not when\n"
	 "the command fails before that).\n"
	 "\n"
	 "options:\n"
	 "  --event-type TYPE     the record's event_type (required without --from)\n"
	 "  --actor A             who (default 'operator')\n"
	 "  --resource-type T     what kind of thing (default '')\n"
	 "  --resource-id I       which one (default '')\n"
	 "  --details JSON        a JSON object (default {})\n"
	 "  --from FILE           every line of FILE (a regular file; - for stdin, at most\n"
	 "                        1 GiB) is one record\n"
	 "                        {\"event_type\": .., \"actor\": .., \"resource_type\": ..,\n"
	 "                        \"resource_id\": .., \"details\": {..}}, appended in one batch\n"
	 "                        (one fsync and state.json write at the end)\n"
	 "  --dir DIR             the chain directory (default .bernstein/audit)\n"
	 "  --key-file PATH       the key (see 'bernstein audit key')\n"
	 "  --json                {\"appended\", \"count\", \"last_hmac\"}\n"
	 "\n"
	 "Before the first record the end of the chain is checked (the newest file,\n"
	 "record by record, and the count in state.json): a broken chain is refused.\n"
	 "\n"
	 "Exit: 0 ok, 2 bad arguments, 4 key (or a chain of another key) or I/O\n"
	 "problem, 5 the chain is broken at its end or does not match its state\n"
	 "(run 'bernstein audit verify').\n"},
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
