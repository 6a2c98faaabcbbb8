/* cli/cmd-control.c: cli_control_args(), the one option parser of the
 * control commands (cancel, stop, retry, add-task, approve, reject). */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/commands.h"
#include "orch/control.h"

enum {
	OPT_FRESH = CLI_CTL_OWN,
	OPT_TITLE,
};

static const struct option all_options[] = {
	{"fresh", no_argument, NULL, OPT_FRESH},
	{"title", required_argument, NULL, OPT_TITLE},
	{"detach", no_argument, NULL, CLI_CTL_DETACH},
	{"no-wait", no_argument, NULL, CLI_CTL_NO_WAIT},
	{"json", no_argument, NULL, CLI_CTL_JSON},
	{"key-file", required_argument, NULL, CLI_CTL_KEY_FILE},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

/* Only --json: --detach, --key-file... are not this command's. */
static const struct option json_options[] = {
	{"json", no_argument, NULL, CLI_CTL_JSON},
	CLI_OPT_HELP,
	{NULL, 0, NULL, 0},
};

static const struct cmd test_cmd = {
	.name = "ctl",
	.usage = "TASK... [--fresh]",
	.help = "the help text\n",
};

struct fixture {
	struct cli_ctx ctx;
	char *out, *err;
	size_t out_len, err_len;
	struct control_request req;
	struct cli_control_args a;
	int calls; /* own() calls */
	char title[64];
};

static struct fixture *F;

static int own(struct cli_ctx *ctx, int opt, const char *arg, struct control_request *req)
{
	F->calls++;
	if (opt == OPT_FRESH) {
		req->fresh = true;
		return 0;
	}
	assert_int_equal(opt, OPT_TITLE);
	assert_non_null(arg);
	if (strcmp(arg, "bad") == 0)
		return cli_usage_error(ctx, "--title: bad");
	(void)snprintf(F->title, sizeof(F->title), "%s", arg);
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->ctx.progname = "bernstein";
	f->ctx.out = open_memstream(&f->out, &f->out_len);
	f->ctx.err = open_memstream(&f->err, &f->err_len);
	f->ctx.cmd = &test_cmd;
	(void)snprintf(f->ctx.cmd_path, sizeof(f->ctx.cmd_path), "ctl");
	control_request_init(&f->req);
	f->a.key_file = "untouched";
	F = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	(void)fclose(f->ctx.out);
	(void)fclose(f->ctx.err);
	free(f->out);
	free(f->err);
	control_request_release(&f->req);
	free(f);
	return 0;
}

/* Parse the NULL-ended words (argv[0] is the command's name). */
/* ids an int: a bool before the ... would undergo promotion (va_start UB) */
static int parse(struct fixture *f, const struct option *opts, int ids, ...)
{
	char *argv[16];
	int argc = 0, r;
	va_list ap;
	const char *w;

	argv[argc++] = (char *)(uintptr_t) "ctl";
	va_start(ap, ids);
	while ((w = va_arg(ap, const char *)))
		argv[argc++] = (char *)(uintptr_t)w;
	va_end(ap);
	argv[argc] = NULL;
	r = cli_control_args(&f->ctx, argc, argv, opts, opts == all_options ? own : NULL, ids != 0,
			     &f->req, &f->a);
	(void)fflush(f->ctx.out);
	(void)fflush(f->ctx.err);
	return r;
}

static void test_every_shared_option(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, true, "--json", "--key-file", "k.key", "--detach",
			       "--fresh", "--title", "T", "a", "b", NULL),
			 CLI_CONTINUE);
	assert_true(f->ctx.json);
	assert_string_equal(f->a.key_file, "k.key");
	assert_true(f->a.detach);
	assert_true(f->a.wait);
	assert_true(f->req.fresh);
	assert_string_equal(f->title, "T");
	assert_int_equal(f->calls, 2);
	assert_int_equal(f->req.n_tasks, 2);
	assert_string_equal(f->req.tasks[0], "a");
	assert_string_equal(f->req.tasks[1], "b");
	assert_int_equal(f->err_len, 0);
}

static void test_defaults_and_no_wait(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, true, "a", NULL), CLI_CONTINUE);
	assert_false(f->ctx.json);
	assert_null(f->a.key_file);
	assert_false(f->a.detach);
	assert_true(f->a.wait);
	assert_int_equal(parse(f, all_options, false, "--no-wait", NULL), CLI_CONTINUE);
	assert_false(f->a.wait);
}

static void test_help(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, true, "--fresh", "-h", "a", NULL), 0);
	assert_string_equal(f->out, "usage: bernstein ctl TASK... [--fresh]\n\nthe help text\n");
	assert_string_equal(f->a.key_file, "untouched"); /* *ret written only on success */
	assert_int_equal(f->req.n_tasks, 0);
}

/* The first problem ends it: the options after it are not read. */
static void test_own_error_stops(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, true, "--title", "bad", "--fresh", "a", NULL), 2);
	assert_int_equal(f->calls, 1);
	assert_false(f->req.fresh);
	assert_string_equal(f->err, "bernstein: --title: bad\nsee 'bernstein ctl -h'\n");
	assert_string_equal(f->a.key_file, "untouched");
}

static void test_not_this_commands_option(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, json_options, true, "--detach", "a", NULL), 2);
	assert_string_equal(f->err,
			    "bernstein: unknown option '--detach'\nsee 'bernstein ctl -h'\n");
	assert_false(f->a.detach);
}

/* glibc names a long option whose value is missing by its code (>= 256),
 * which once came out as a control byte: "unknown option '-\x03'". */
static void test_missing_value(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, true, "a", "--key-file", NULL), 2);
	assert_string_equal(
		f->err,
		"bernstein: option '--key-file' requires a value\nsee 'bernstein ctl -h'\n");
}

static void test_value_on_a_flag(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, true, "--json=yes", "a", NULL), 2);
	assert_string_equal(f->err,
			    "bernstein: unknown option '--json=yes'\nsee 'bernstein ctl -h'\n");
}

static void test_operands(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, false, "--json", "a", NULL), 2);
	assert_string_equal(f->err, "bernstein: unexpected argument 'a'\nsee 'bernstein ctl -h'\n");
}

static void test_ids_checked(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, true, "--json", NULL), 2);
	assert_string_equal(f->err, "bernstein: missing the task id\nsee 'bernstein ctl -h'\n");
}

static void test_id_twice(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, all_options, true, "a", "a", NULL), 2);
	assert_string_equal(f->err, "bernstein: task 'a' given twice\nsee 'bernstein ctl -h'\n");
	assert_string_equal(f->a.key_file, "untouched");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_shared_option, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaults_and_no_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_help, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_error_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_this_commands_option, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_on_a_flag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_operands, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ids_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_id_twice, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
