/* orch/executor.h and orch/remote.h: executor: parsed at the top level, per
 * role and per plan task (the task's over its role's over bernstein.yaml's),
 * kept in a task's recorded spec; the slurm: section and its refusals; what
 * sbatch is given (limits, options, nothing secret) and the batch script;
 * the node's messages as the relay parses them; the job token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/x509.h>
#include "orch/config.h"
#include "orch/executor.h"
#include "orch/plan.h"
#include "orch/remote.h"
#include "orch/remote-tls.h"
#include "orch/spec.h"
#include "util/strvec.h"

static struct orch_config *load(const char *text)
{
	struct orch_config *c = NULL;
	struct diag d;

	diag_clear(&d);
	if (orch_config_load_buf("mem.yaml", text, strlen(text), NULL, &c, &d) < 0)
		fail_msg("mem.yaml:%u:%u: %s", d.line, d.col, d.msg);
	return c;
}

static struct diag load_fail(const char *text)
{
	struct orch_config *c = NULL;
	struct diag d;

	diag_clear(&d);
	assert_int_equal(orch_config_load_buf("mem.yaml", text, strlen(text), NULL, &c, &d),
			 -EINVAL);
	assert_null(c);
	return d;
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(executor_kind_to_string(EXECUTOR_LOCAL), "local");
	assert_string_equal(executor_kind_to_string(EXECUTOR_SLURM), "slurm");
	assert_null(executor_kind_to_string(_EXECUTOR_KIND_MAX));
	assert_int_equal(executor_kind_from_string("slurm"), EXECUTOR_SLURM);
	assert_int_equal(executor_kind_from_string("kubernetes"), _EXECUTOR_KIND_INVALID);
	assert_int_equal(executor_kind_from_string(NULL), _EXECUTOR_KIND_INVALID);
}

static void test_config(void **state)
{
	struct orch_config *c;
	struct diag d;

	(void)state;
	/* nothing said: local, everywhere */
	c = load("adapter: mock\n");
	assert_int_equal(c->executor, EXECUTOR_LOCAL);
	assert_false(c->slurm.set);
	assert_int_equal(orch_config_executor(c, "backend", false, EXECUTOR_LOCAL), EXECUTOR_LOCAL);
	orch_config_free(c);

	c = load("executor: slurm\n"
		 "slurm:\n"
		 "  hub: /shared/hub.git\n"
		 "  hub_url: git://10.0.0.1/hub.git\n"
		 "  listen: 10.0.0.1\n"
		 "  partition: gpu\n"
		 "  account: team\n"
		 "  qos: high\n"
		 "  sbatch: [--reservation=r1, --constraint=ssd]\n"
		 "  start_timeout: 90\n"
		 "  git_daemon: 10.0.0.1:9500\n"
		 "  ssh_command: ssh -i /k/id -o UserKnownHostsFile=/k/known\n"
		 "role_model_policy:\n"
		 "  docs: {executor: local}\n");
	assert_int_equal(c->executor, EXECUTOR_SLURM);
	assert_true(c->slurm.set);
	assert_string_equal(c->slurm.hub, "/shared/hub.git");
	assert_string_equal(c->slurm.hub_url, "git://10.0.0.1/hub.git");
	assert_string_equal(c->slurm.partition, "gpu");
	assert_int_equal(c->slurm.n_sbatch, 2);
	assert_string_equal(c->slurm.sbatch[1], "--constraint=ssd");
	assert_true(c->slurm.start_timeout_s == 90);
	assert_string_equal(c->slurm.git_daemon, "10.0.0.1:9500");
	assert_string_equal(c->slurm.ssh_command, "ssh -i /k/id -o UserKnownHostsFile=/k/known");
	/* the task's, else its role's, else bernstein.yaml's */
	assert_int_equal(orch_config_executor(c, "backend", false, EXECUTOR_LOCAL), EXECUTOR_SLURM);
	assert_int_equal(orch_config_executor(c, "docs", false, EXECUTOR_LOCAL), EXECUTOR_LOCAL);
	assert_int_equal(orch_config_executor(c, "docs", true, EXECUTOR_SLURM), EXECUTOR_SLURM);
	orch_config_free(c);

	d = load_fail("executor: kubernetes\n");
	assert_non_null(strstr(d.msg, "'executor'"));
	assert_int_equal(d.line, 1);
	d = load_fail("slurm: {hub: relative/hub.git}\n");
	assert_non_null(strstr(d.msg, "absolute path"));
	d = load_fail("slurm: {listen: 10.0.0.1, nodes: 3}\n");
	assert_non_null(strstr(d.msg, "nodes"));
	/* nothing that a batch script or a command line could be made to run */
	d = load_fail("slurm: {partition: \"p'; rm -rf ~; '\"}\n");
	assert_non_null(strstr(d.msg, "slurm.partition"));
	d = load_fail("slurm: {ssh_command: \"ssh -i $HOME/id\"}\n");
	assert_non_null(strstr(d.msg, "slurm.ssh_command"));
	d = load_fail("slurm: {sbatch: [\"reservation=x\"]}\n");
	assert_non_null(strstr(d.msg, "not an option"));
	d = load_fail("role_model_policy:\n  backend: {executor: cloud}\n");
	assert_int_equal(d.line, 2);
}

static void test_check(void **state)
{
	struct executor_slurm s = {0};
	char why[256];

	(void)state;
	assert_int_equal(executor_slurm_check(&s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "slurm: section"));
	s.set = true;
	s.hub = "/h.git";
	assert_int_equal(executor_slurm_check(&s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "slurm.listen"));
	s.listen = "10.0.0.1";
	assert_int_equal(executor_slurm_check(&s, why, sizeof(why)), 0);
}

static bool has(const struct strvec *v, const char *s)
{
	return strvec_find(v, s) >= 0;
}

static void test_sbatch(void **state)
{
	static const char *const extra[] = {"--reservation=r1", NULL};
	struct executor_slurm s = {
		.set = true, .partition = "gpu", .qos = "hi", .sbatch = extra, .n_sbatch = 1};
	struct contain_limits lim = {.memory = (512ull << 20) + 1, .cpu_milli = 1500};
	struct strvec v = STRVEC_INIT;
	size_t i;

	(void)state;
	executor_slurm_sbatch_args(&s, "t1-abc", &lim, 90, &v);
	assert_true(has(&v, "--parsable"));
	assert_true(has(&v, "--job-name=t1-abc"));
	assert_true(has(&v, "--export=NONE"));
	assert_true(has(&v, "--no-requeue"));
	assert_true(has(&v, "--mem=513M"));	   /* MiB, rounded up */
	assert_true(has(&v, "--cpus-per-task=2")); /* whole CPUs, rounded up */
	assert_true(has(&v, "--time=3"));	   /* 90 s + a minute, in minutes */
	assert_true(has(&v, "--partition=gpu"));
	assert_true(has(&v, "--qos=hi"));
	assert_false(has(&v, "--account="));
	/* the user's options come last: they win */
	assert_string_equal(v.v[v.nr - 1], "--reservation=r1");
	for (i = 0; i < v.nr; i++)
		assert_null(strstr(v.v[i], "KEY"));
	strvec_clear(&v);
	/* no limits, no timeout: none given */
	executor_slurm_sbatch_args(&s, "t", NULL, 0, &v);
	for (i = 0; i < v.nr; i++) {
		assert_true(strncmp(v.v[i], "--mem", 5) != 0);
		assert_true(strncmp(v.v[i], "--time", 6) != 0);
	}
	strvec_clear(&v);
}

static void test_script(void **state)
{
	char *s;

	(void)state;
	s = executor_slurm_script("/opt/bernstein", "10.0.0.1:4000", "ab12", "f00d");
	assert_non_null(s);
	assert_non_null(strstr(s, "#!/bin/sh\n"));
	assert_non_null(strstr(s, "BERNSTEIN_EXEC_CONNECT='10.0.0.1:4000'"));
	assert_non_null(strstr(s, "BERNSTEIN_EXEC_FINGERPRINT='f00d'"));
	assert_non_null(strstr(s, "exec '/opt/bernstein' agent-exec\n"));
	free(s);
	assert_null(executor_slurm_script("/opt/b'in", "a:1", "t", "f"));
	assert_null(executor_slurm_script("/b", "a:1\nrm -rf /", "t", "f"));
	assert_null(executor_slurm_script("/b", "$(id):1", "t", "f"));
	assert_null(executor_slurm_script("/b", "a:1", "t", "f'; id; '"));
}

static void test_plan_and_spec(void **state)
{
	static const char plan[] = "name: p\n"
				   "executor: slurm\n"
				   "tasks:\n"
				   "  - title: a\n"
				   "    prompt: x\n"
				   "  - title: b\n"
				   "    prompt: y\n"
				   "    executor: local\n";
	static const char bad[] =
		"name: p\ntasks:\n  - title: a\n    prompt: x\n    executor: k8s\n";
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = NULL;
	struct task_spec s, back;
	struct diag d;
	char *dump;

	(void)state;
	if (plan_load_buf("p.yaml", plan, strlen(plan), NULL, &p, &is) < 0)
		fail_msg("%u:%u: %s", is.v[0].line, is.v[0].col, is.v[0].msg);
	spec_init(&s);
	spec_from_plan(p, 0, &s); /* the plan's */
	assert_true(s.has_executor);
	assert_int_equal(s.executor, EXECUTOR_SLURM);
	spec_release(&s);
	spec_init(&s);
	spec_from_plan(p, 1, &s); /* its own */
	assert_true(s.has_executor);
	assert_int_equal(s.executor, EXECUTOR_LOCAL);
	/* recorded and read back (resume) */
	s.executor = EXECUTOR_SLURM;
	dump = spec_dump(&s);
	assert_non_null(strstr(dump, "\"executor\":\"slurm\""));
	spec_init(&back);
	assert_int_equal(spec_parse_text(dump, strlen(dump), &back, &d), 0);
	assert_true(back.has_executor);
	assert_int_equal(back.executor, EXECUTOR_SLURM);
	spec_release(&back);
	free(dump);
	spec_release(&s);
	plan_free(p);

	diag_clear(&d);
	p = NULL;
	assert_int_equal(plan_load_buf("p.yaml", bad, strlen(bad), NULL, &p, &is), -EINVAL);
	assert_true(is.n >= 1);
	assert_non_null(strstr(is.v[0].msg, "executor"));
	diag_list_release(&is);
	plan_free(p);
}

static void msg_ok(const char *line, enum remote_msg_kind kind, struct remote_msg *m)
{
	struct diag d;

	diag_clear(&d);
	if (remote_msg_parse(line, strlen(line), m, &d) < 0)
		fail_msg("'%s': %s", line, d.msg);
	assert_int_equal(m->kind, kind);
}

static void msg_bad(const char *line)
{
	struct remote_msg m = {0};
	struct diag d;

	diag_clear(&d);
	assert_int_equal(remote_msg_parse(line, strlen(line), &m, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "bad message"));
	assert_null(m.text);
}

static void test_messages(void **state)
{
	char hello[200];
	struct remote_msg m = {0};

	(void)state;
	(void)snprintf(hello, sizeof(hello), "{\"token\":\"%064d\",\"node\":\"node1\"}", 7);
	msg_ok(hello, REMOTE_MSG_HELLO, &m);
	assert_string_equal(m.node, "node1");
	assert_int_equal(strlen(m.text), REMOTE_TOKEN_HEX);
	remote_msg_release(&m);
	msg_ok("{\"out\":\"{\\\"type\\\":\\\"start\\\"}\"}", REMOTE_MSG_OUT, &m);
	assert_string_equal(m.text, "{\"type\":\"start\"}");
	remote_msg_release(&m);
	msg_ok("{\"err\":\"\"}", REMOTE_MSG_ERR, &m);
	remote_msg_release(&m);
	msg_ok("{\"error\":\"clone failed\"}", REMOTE_MSG_ERROR, &m);
	remote_msg_release(&m);
	msg_ok("{\"pushed\":null}", REMOTE_MSG_PUSHED, &m);
	assert_null(m.text);
	msg_ok("{\"pushed\":\"0123456789abcdef0123456789abcdef01234567\"}", REMOTE_MSG_PUSHED, &m);
	remote_msg_release(&m);
	msg_ok("{\"exit\":255}", REMOTE_MSG_EXIT, &m);
	assert_int_equal(m.code, 255);

	msg_bad("");
	msg_bad("[]");
	msg_bad("{}");
	msg_bad("{\"out\":1}");
	msg_bad("{\"out\":\"a\",\"err\":\"b\"}");
	msg_bad("{\"out\":\"a\",\"out\":\"b\"}");
	msg_bad("{\"exit\":256}");
	msg_bad("{\"exit\":-1}");
	msg_bad("{\"exit\":1.5}");
	msg_bad("{\"pushed\":\"HEAD\"}");
	msg_bad("{\"shell\":\"rm -rf /\"}");
	msg_bad("{\"token\":\"short\",\"node\":\"n\"}");
	(void)snprintf(hello, sizeof(hello), "{\"token\":\"%064d\",\"node\":\"a\\u0007b\"}", 7);
	msg_bad(hello);
	(void)snprintf(hello, sizeof(hello), "{\"token\":\"%064d\",\"node\":\"a\\u0000b\"}", 7);
	msg_bad(hello);
}

/* the HOME files the relay sends: only paths that stay beneath the node's
 * HOME are written */
static void test_home_paths(void **state)
{
	static const char *const good[] = {".pi/agent/models.json", "a", "..a", "a..", "a/.b/c"};
	static const char *const bad[] = {"",	 "/etc/passwd", "..",	"../x", "a/../b", "a/..",
					  "./a", "a/./b",	"a//b", "a/",	NULL};
	char big[REMOTE_HOME_PATH_MAX + 1];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(remote_home_path_ok(good[i]));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(remote_home_path_ok(bad[i]));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_false(remote_home_path_ok(big));
	big[REMOTE_HOME_PATH_MAX - 1] = '\0';
	assert_true(remote_home_path_ok(big));
}

static void test_token(void **state)
{
	char a[REMOTE_TOKEN_HEX + 1], b[REMOTE_TOKEN_HEX + 1];
	size_t i;

	(void)state;
	assert_int_equal(remote_token(a), 0);
	assert_int_equal(remote_token(b), 0);
	assert_int_equal(strlen(a), REMOTE_TOKEN_HEX);
	for (i = 0; i < REMOTE_TOKEN_HEX; i++)
		assert_non_null(strchr("0123456789abcdef", a[i]));
	assert_string_not_equal(a, b);
	assert_true(remote_token_equal(a, a));
	assert_false(remote_token_equal(a, b));
	memcpy(b, a, sizeof(a));
	b[REMOTE_TOKEN_HEX - 1] ^= 1;
	assert_false(remote_token_equal(a, b));
	assert_false(remote_token_equal(a, ""));
	b[10] = '\0';
	assert_false(remote_token_equal(a, b));
}

static void test_fingerprint(void **state)
{
	static const char ok[] = "3B5D0C1F9A7E2B4C6D8E0F1A2B3C4D5E6F708192a3b4c5d6e7f8091a2b3c4d5e";
	uint8_t fp[REMOTE_FP_LEN];
	struct diag d;

	(void)state;
	diag_clear(&d);
	assert_int_equal(remote_fp_parse(ok, strlen(ok), fp, &d), 0);
	assert_int_equal(fp[0], 0x3b);
	assert_int_equal(fp[31], 0x5e);
	assert_int_equal(remote_fp_parse(ok, 63, fp, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "63 characters"));
	assert_int_equal(remote_fp_parse("3b:5d", 5, fp, &d), -EINVAL);
	{
		char bad[sizeof(ok)];

		memcpy(bad, ok, sizeof(ok));
		bad[40] = 'g';
		assert_int_equal(remote_fp_parse(bad, strlen(bad), fp, &d), -EINVAL);
		assert_non_null(strstr(d.msg, "at 41"));
	}
}

/* A bundle chunk: base64 both ways, strict; the bundle's refs: exactly
 * the task's branch. */
static void test_bundle(void **state)
{
	static const char id[] = "3b5d0c1f9a7e2b4c6d8e0f1a2b3c4d5e6f708192";
	struct remote_msg m = {0};
	char *b64, *line, sha[65];
	struct diag d;
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		const char raw[] = "\0\1binary\xff";
		size_t n = sizeof(raw) - 1 - (size_t)i;

		b64 = remote_b64_encode(raw, n);
		line = malloc(strlen(b64) + 16);
		assert_non_null(line);
		sprintf(line, "{\"bundle\":\"%s\"}", b64);
		diag_clear(&d);
		assert_int_equal(remote_msg_parse(line, strlen(line), &m, &d), 0);
		assert_int_equal(m.kind, REMOTE_MSG_BUNDLE);
		assert_int_equal(m.len, n);
		assert_memory_equal(m.text, raw, n);
		remote_msg_release(&m);
		free(line);
		free(b64);
	}
	assert_string_equal((b64 = remote_b64_encode("ab", 2)), "YWI=");
	free(b64);
	/* not padded, not canonical, not base64 */
	assert_int_equal(remote_msg_parse("{\"bundle\":\"YWI\"}", 16, &m, &d), -EBADMSG);
	assert_int_equal(remote_msg_parse("{\"bundle\":\"YWJ=\"}", 17, &m, &d), -EBADMSG);
	assert_int_equal(remote_msg_parse("{\"bundle\":\"Y WI\"}", 17, &m, &d), -EBADMSG);
	assert_int_equal(remote_msg_parse("{\"bundle\":\"\"}", 13, &m, &d), -EBADMSG);

	line = malloc(256);
	assert_non_null(line);
	sprintf(line, "%s refs/heads/bernstein/t-1\n", id);
	assert_int_equal(remote_bundle_heads(line, "bernstein/t-1", sha, &d), 0);
	assert_string_equal(sha, id);
	/* another task's branch, a prefix of it, main beside it, nothing */
	assert_int_equal(remote_bundle_heads(line, "bernstein/t-2", sha, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "not only refs/heads/bernstein/t-2"));
	assert_int_equal(remote_bundle_heads(line, "bernstein/t-", sha, &d), -EBADMSG);
	sprintf(line, "%s refs/heads/bernstein/t-1\n%s refs/heads/main\n", id, id);
	assert_int_equal(remote_bundle_heads(line, "bernstein/t-1", sha, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "refs/heads/main"));
	sprintf(line, "%s refs/heads/bernstein/t-1\n%s refs/heads/bernstein/t-1\n", id, id);
	assert_int_equal(remote_bundle_heads(line, "bernstein/t-1", sha, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "2 refs"));
	assert_int_equal(remote_bundle_heads("", "bernstein/t-1", sha, &d), -EBADMSG);
	assert_int_equal(
		remote_bundle_heads("zz refs/heads/bernstein/t-1\n", "bernstein/t-1", sha, &d),
		-EBADMSG);
	free(line);
}

/* Both ends of a handshake over a socket pair (non-blocking, in turns):
 * whether both completed. */
static bool handshake(SSL_CTX *server, SSL_CTX *client, SSL **ret_c)
{
	int sv[2], i, rs = 0, rc = 0;
	SSL *s, *c;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	(void)fcntl(sv[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(sv[1], F_SETFL, O_NONBLOCK);
	s = SSL_new(server);
	c = SSL_new(client);
	SSL_set_fd(s, sv[0]);
	SSL_set_fd(c, sv[1]);
	SSL_set_accept_state(s);
	SSL_set_connect_state(c);
	for (i = 0; i < 100 && (rs != 1 || rc != 1); i++) {
		if (rc != 1) {
			rc = SSL_do_handshake(c);
			if (rc != 1 && SSL_get_error(c, rc) != SSL_ERROR_WANT_READ)
				break;
		}
		if (rs != 1) {
			rs = SSL_do_handshake(s);
			if (rs != 1 && SSL_get_error(s, rs) != SSL_ERROR_WANT_READ)
				break;
		}
	}
	SSL_free(s);
	*ret_c = c;
	(void)close(sv[0]);
	(void)close(sv[1]);
	return rs == 1 && rc == 1;
}

/* The relay's identity: its fingerprint is its certificate's; a job
 * pinned to it completes the handshake, a job pinned to anything else
 * refuses it (the certificate rejected, not a chain error let through). */
static void test_tls_pinning(void **state)
{
	char *pem = NULL, fp_hex[REMOTE_FP_HEX + 1], again[REMOTE_FP_HEX + 1];
	uint8_t fp[REMOTE_FP_LEN], other[REMOTE_FP_LEN];
	SSL_CTX *server, *good, *bad;
	struct diag d;
	SSL *c = NULL;

	(void)state;
	diag_clear(&d);
	assert_int_equal(remote_tls_identity(&pem, fp_hex, &d), 0);
	assert_non_null(strstr(pem, "PRIVATE KEY"));
	assert_non_null(strstr(pem, "CERTIFICATE"));
	server = remote_tls_server(pem, again, &d);
	assert_non_null(server);
	assert_string_equal(fp_hex, again);
	assert_int_equal(remote_fp_parse(fp_hex, strlen(fp_hex), fp, &d), 0);
	memcpy(other, fp, sizeof(fp));
	other[7] ^= 1;
	good = remote_tls_client(fp, &d);
	bad = remote_tls_client(other, &d);
	assert_non_null(good);
	assert_non_null(bad);

	assert_true(handshake(server, good, &c));
	assert_true(remote_tls_peer_is(c, fp));
	assert_false(remote_tls_peer_is(c, other));
	SSL_free(c);
	assert_false(handshake(server, bad, &c));
	assert_int_equal(SSL_get_verify_result(c), X509_V_ERR_CERT_REJECTED);
	SSL_free(c);

	/* a key file that is not one */
	assert_null(remote_tls_server("-----BEGIN PRIVATE KEY-----\nAAAA\n", NULL, &d));
	assert_non_null(strstr(d.msg, "no TLS key and certificate"));
	SSL_CTX_free(server);
	SSL_CTX_free(good);
	SSL_CTX_free(bad);
	free(pem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_names),  cmocka_unit_test(test_config),
		cmocka_unit_test(test_check),	    cmocka_unit_test(test_sbatch),
		cmocka_unit_test(test_script),	    cmocka_unit_test(test_plan_and_spec),
		cmocka_unit_test(test_messages),    cmocka_unit_test(test_token),
		cmocka_unit_test(test_home_paths),  cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_tls_pinning), cmocka_unit_test(test_bundle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
