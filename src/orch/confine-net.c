/* The network of a sandboxed task (confine.h, "the network"). */
#include "orch/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/events.h"
#include "orch/agentrun.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* the bridge's proxy port inside the sandbox, unless a tunnel has it */
#define CONFINE_NET_PROXY_PORT 3128

bool confine_tier_has_netns(enum sandbox_kind k)
{
	return k == SANDBOX_KIND_BWRAP || k == SANDBOX_KIND_CONTAINER;
}

enum net_mode confine_net_default(int wanted, enum sandbox_kind k, const char *endpoint)
{
	struct netproxy_addr a;

	if (wanted >= 0 && wanted < _NET_MODE_MAX)
		return (enum net_mode)wanted;
	if (confine_tier_has_netns(k) && endpoint && netproxy_url_addr(endpoint, &a) == 0)
		return NET_MODE_LLM;
	return NET_MODE_FULL;
}

const char *confine_net_refusal(enum net_mode mode, enum sandbox_kind k, const char *endpoint,
				const struct profile_strv *hosts, char *why, size_t size)
{
	struct netproxy_addr a;

	if (mode == NET_MODE_FULL)
		return NULL;
	if (!confine_tier_has_netns(k)) {
		(void)snprintf(
			why, size,
			"network: %s needs a sandbox tier with a network namespace of its own (bwrap or container); %s has none (the task is not run with the host's network)",
			net_mode_to_string(mode), sandbox_kind_to_string(k));
		return why;
	}
	if (mode == NET_MODE_LLM && !endpoint && hosts && hosts->n)
		return NULL; /* its provider's hosts (runtime.sandbox.hosts) */
	if (mode == NET_MODE_LLM && (!endpoint || netproxy_url_addr(endpoint, &a) < 0)) {
		if (endpoint)
			(void)snprintf(
				why, size,
				"network: llm: the endpoint '%s' is not an http(s) URL with a host the proxy can allow",
				endpoint);
		else
			(void)snprintf(
				why, size,
				"network: llm needs the agent's endpoint, to allow only its host: set sampling.base_url (or role_model_policy's, or the adapter's endpoints: entry's base_url), declare its provider's hosts in its profile (runtime.sandbox.hosts), or use network: full or none");
		return why;
	}
	return NULL;
}

static bool covered(const struct strvec *v, const char *x)
{
	size_t i, n;

	for (i = 0; i < v->nr; i++) {
		n = strlen(v->v[i]);
		if (strcmp(v->v[i], "/") == 0 ||
		    (strncmp(v->v[i], x, n) == 0 && (x[n] == '\0' || x[n] == '/')))
			return true;
	}
	return false;
}

/* a into p's allowed hosts; a loopback one tunnelled too */
static void net_allow(struct confine_policy *p, const struct netproxy_addr *a)
{
	char buf[NETPROXY_HOST_MAX + 16];
	size_t i;

	netproxy_addr_format(a, buf, sizeof(buf));
	for (i = 0; i < p->net_allow.nr; i++)
		if (strcmp(p->net_allow.v[i], buf) == 0)
			return;
	strvec_push(&p->net_allow, buf);
	if (netproxy_is_loopback(a))
		strvec_push(&p->net_tunnel, buf);
}

int confine_net_build(const struct confine_input *in, struct confine_policy *p, struct diag *reterr)
{
	const struct profile_strv *hosts = in->decl ? &in->decl->hosts : NULL;
	struct netproxy_addr a;
	char why[512], dir[PATH_MAX], real[PATH_MAX];
	size_t i;

	p->network = in->network;
	if (confine_net_refusal(in->network, in->kind, in->endpoint, hosts, why, sizeof(why))) {
		diag_set(reterr, NULL, 0, 0, "%s", why);
		return in->network == NET_MODE_LLM && confine_tier_has_netns(in->kind)
			       ? -EINVAL
			       : -EOPNOTSUPP;
	}
	if (in->network != NET_MODE_LLM)
		return 0;
	if (in->endpoint) {
		/* the endpoint's host:port alone */
		(void)netproxy_url_addr(in->endpoint, &a);
		net_allow(p, &a);
	} else {
		/* no base_url: its provider's hosts, as the profile declares them */
		for (i = 0; i < hosts->n; i++)
			if (netproxy_addr_parse(hosts->v[i], strlen(hosts->v[i]), &a) == 0)
				net_allow(p, &a);
	}
	p->net_proxy_port = CONFINE_NET_PROXY_PORT;
	for (i = 0; i < p->net_tunnel.nr; i++)
		if (netproxy_addr_parse(p->net_tunnel.v[i], strlen(p->net_tunnel.v[i]), &a) == 0 &&
		    a.port == p->net_proxy_port)
			p->net_proxy_port++;
	if (in->net_socket) {
		free(p->net_socket);
		p->net_socket = xstrdup(in->net_socket);
		/* its directory, read-only (the task's session directory) */
		path_dirname(in->net_socket, dir, sizeof(dir));
		if (realpath(dir, real) && !covered(&p->ro_bind, real) && !covered(&p->rw, real)) {
			strvec_push(&p->ro, real);
			strvec_push(&p->ro_bind, real);
		}
	}
	return 0;
}

void confine_net_shim_args(const struct confine_policy *p, struct strvec *ret)
{
	size_t i;

	if (p->network != NET_MODE_LLM || !p->net_socket)
		return;
	strvec_pushv(ret, (const char *const[]){"--net-socket", p->net_socket, NULL});
	strvec_push(ret, "--net-proxy-port");
	strvec_pushf(ret, "%u", p->net_proxy_port);
	for (i = 0; i < p->net_tunnel.nr; i++)
		strvec_pushv(ret, (const char *const[]){"--net-tunnel", p->net_tunnel.v[i], NULL});
}

void confine_net_env(const struct confine_policy *p, struct strvec *env)
{
	static const char *const names[] = {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
					    "http_proxy",  "ALL_PROXY",	 "all_proxy",
					    "NO_PROXY",	   "no_proxy",	 NULL};
	struct strvec out = STRVEC_INIT;
	size_t i, j;

	if (p->network != NET_MODE_LLM)
		return;
	for (i = 0; i < env->nr; i++) {
		bool drop = false;

		for (j = 0; names[j]; j++) {
			size_t n = strlen(names[j]);

			if (strncmp(env->v[i], names[j], n) == 0 && env->v[i][n] == '=')
				drop = true;
		}
		if (!drop)
			strvec_push(&out, env->v[i]);
	}
	for (j = 0; names[j]; j++) {
		if (strncmp(names[j], "NO_", 3) == 0 || strncmp(names[j], "no_", 3) == 0)
			strvec_pushf(&out, "%s=", names[j]);
		else
			strvec_pushf(&out, "%s=http://127.0.0.1:%u", names[j], p->net_proxy_port);
	}
	strvec_sort(&out);
	strvec_clear(env);
	*env = out;
}

void confine_net_wrap(const struct confine_policy *p, const char *self_exe, const char *log,
		      const char *const *argv, struct strvec *ret)
{
	size_t i;

	if (p->network == NET_MODE_LLM && p->net_socket) {
		strvec_pushv(ret, (const char *const[]){self_exe, "netproxy", "--socket",
							p->net_socket, NULL});
		for (i = 0; i < p->net_allow.nr; i++)
			strvec_pushv(ret,
				     (const char *const[]){"--allow", p->net_allow.v[i], NULL});
		if (log)
			strvec_pushv(ret, (const char *const[]){"--log", log, NULL});
		strvec_push(ret, "--");
	}
	strvec_pushv(ret, argv);
}

json_t *confine_net_json(const struct confine_policy *p)
{
	json_t *o = json_object();

	json_obj_set(o, "mode", json_string(net_mode_to_string(p->network)));
	if (p->network == NET_MODE_LLM) {
		char buf[64];

		json_obj_set(o, "allow", json_strvec(&p->net_allow));
		json_obj_set(o, "tunnel", json_strvec(&p->net_tunnel));
		(void)snprintf(buf, sizeof(buf), "http://127.0.0.1:%u", p->net_proxy_port);
		json_obj_set(o, "proxy", json_string(buf));
	}
	return o;
}

size_t confine_net_report(const char *session_dir, struct agentrun *ar)
{
	char *path = agentrun_path(session_dir, CONFINE_NET_LOG), *text = NULL, *line, *nl;
	json_t *seen = json_object();
	const char *host;
	json_t *n;
	size_t len = 0, count = 0;

	/* written by the proxy alone (outside the sandbox), capped there */
	if (read_file_capped(path, 2 * NETPROXY_LOG_MAX, &text, &len) < 0)
		goto out;
	for (line = text; line < text + len; line = nl + 1) {
		json_t *o;

		nl = memchr(line, '\n', (size_t)(text + len - line));
		if (!nl)
			break;
		o = json_loadb(line, (size_t)(nl - line), JSON_REJECT_DUPLICATES, NULL);
		host = json_string_value(json_object_get(o, "refused"));
		if (host) {
			n = json_object_get(seen, host);
			json_obj_set(seen, host, json_integer(n ? json_integer_value(n) + 1 : 1));
		}
		json_decref(o);
	}
	json_object_foreach(seen, host, n)
	{
		char msg[NETPROXY_HOST_MAX + 128];
		json_int_t k = json_integer_value(n);

		(void)snprintf(msg, sizeof(msg),
			       "network: the proxy refused '%s' (%lld time%s): not an allowed host",
			       host, (long long)k, k == 1 ? "" : "s");
		agentrun_warning(ar, msg);
		count++;
	}
out:
	json_decref(seen);
	free(text);
	free(path);
	return count;
}

/* ---- refusals as they happen ---- */

/* the refused hosts of the log's complete lines in buf[0..len) */
static void watch_lines(struct confine_net_watch *w, const char *buf, size_t len, const char *who,
			confine_net_emit_fn *emit, void *userdata, size_t *count)
{
	const char *line, *nl;

	for (line = buf; line < buf + len; line = nl + 1) {
		const char *host;
		json_t *o;
		size_t i;

		nl = memchr(line, '\n', (size_t)(buf + len - line));
		if (!nl)
			break;
		o = json_loadb(line, (size_t)(nl - line), JSON_REJECT_DUPLICATES, NULL);
		host = json_string_value(json_object_get(o, "refused"));
		for (i = 0; host && i < w->seen.nr; i++)
			if (strcmp(w->seen.v[i], host) == 0)
				host = NULL;
		if (host && w->seen.nr < CONFINE_NET_WATCH_MAX) {
			char msg[NETPROXY_HOST_MAX + 160];

			strvec_push(&w->seen, host);
			(void)snprintf(
				msg, sizeof(msg),
				"%s%snetwork: the proxy refused '%s': not an allowed host (reported as it happened; each refused host is counted when the %s exits)",
				who ? who : "", who ? ": " : "", host, who ? "gate" : "agent");
			emit(userdata, msg);
			(*count)++;
		}
		json_decref(o);
	}
}

size_t confine_net_watch_poll(struct confine_net_watch *w, const char *log, const char *who,
			      confine_net_emit_fn *emit, void *userdata)
{
	char buf[8192];
	size_t count = 0;
	int fd;

	/* written by the proxy alone (outside the sandbox), capped there */
	fd = open_regular(log, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return 0;
	while (w->off < 2 * NETPROXY_LOG_MAX) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)w->off);
		const char *end;

		if (n <= 0)
			break;
		end = memrchr(buf, '\n', (size_t)n);
		if (!end) {
			if ((size_t)n == sizeof(buf))
				w->off += (uint64_t)n; /* a line no proxy writes: skipped */
			break;
		}
		watch_lines(w, buf, (size_t)(end - buf + 1), who, emit, userdata, &count);
		w->off += (uint64_t)(end - buf + 1);
	}
	close(fd);
	return count;
}

void confine_net_watch_skip(struct confine_net_watch *w, const char *log)
{
	struct stat st;

	w->off = stat(log, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
	strvec_clear(&w->seen);
}

void confine_net_watch_release(struct confine_net_watch *w)
{
	strvec_clear(&w->seen);
	w->off = 0;
}

int confine_event_append(const char *events, const char *msg)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct event ev;
	int fd, r;

	event_init(&ev, EVENT_WARNING);
	ev.dialect = AGENTRUN_DIALECT;
	ev.message = msg;
	r = event_to_json(&ev, clock_system()->now_ns(clock_system()), &sb);
	if (r < 0)
		goto out;
	fd = open_regular(events, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	r = write_all(fd, sb.buf, sb.len);
	if (close(fd) < 0 && r >= 0)
		r = -errno;
out:
	sbuf_release(&sb);
	return r;
}

void confine_net_emit_agent(void *userdata, const char *msg)
{
	agentrun_warning(userdata, msg);
}

void confine_net_emit_file(void *userdata, const char *msg)
{
	(void)confine_event_append(userdata, msg);
}
