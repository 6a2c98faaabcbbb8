#include "adapter/axes.h"

#include <string.h>

static const char *const resume_values[] = {
	[RESUME_FLAG] = "flag",
	[RESUME_FLAG_PAIR] = "flag-pair",
	[RESUME_SUBCOMMAND] = "subcommand",
	[RESUME_UNSUPPORTED] = "unsupported",
	[_RESUME_STRATEGY_MAX] = NULL,
};

static const char *const dangerous_values[] = {
	[DANGEROUS_MODE_CLI_FLAG] = "cli-flag",
	[DANGEROUS_MODE_ENV_VAR] = "env-var",
	[DANGEROUS_MODE_ALWAYS_ON] = "always-on",
	[DANGEROUS_MODE_UNSUPPORTED] = "unsupported",
	[_DANGEROUS_MODE_MAX] = NULL,
};

static const char *const event_values[] = {
	[EVENT_CHANNEL_STREAM_JSON] = "stream-json",
	[EVENT_CHANNEL_TEXT_SIGNALS] = "text-signals",
	[EVENT_CHANNEL_HOOKS] = "hooks",
	[EVENT_CHANNEL_POLL_PTY] = "poll-pty",
	[EVENT_CHANNEL_NONE] = "none",
	[EVENT_CHANNEL_ACP] = "acp",
	[_EVENT_CHANNEL_MAX] = NULL,
};

static const char *const output_values[] = {
	[OUTPUT_MODE_GIT_DIFF] = "git-diff",
	[OUTPUT_MODE_ARTIFACT] = "artifact",
	[_OUTPUT_MODE_MAX] = NULL,
};

static const char *const session_values[] = {
	[SESSION_STATE_STATELESS] = "stateless",
	[SESSION_STATE_PERSISTENT_AGENT] = "persistent-agent",
	[_SESSION_STATE_MAX] = NULL,
};

struct axis_desc {
	const char *name;
	const char *title;
	const char *const *values;
	int count;
};

static const struct axis_desc axes[_AXIS_MAX] = {
	[AXIS_RESUME] = {"resume", "resume", resume_values, _RESUME_STRATEGY_MAX},
	[AXIS_DANGEROUS_MODE] = {"dangerous_mode", "dangerous mode", dangerous_values,
				 _DANGEROUS_MODE_MAX},
	[AXIS_EVENT_CHANNEL] = {"event_channel", "event channel", event_values, _EVENT_CHANNEL_MAX},
	[AXIS_OUTPUT_MODE] = {"output_mode", "output mode", output_values, _OUTPUT_MODE_MAX},
	[AXIS_SESSION_STATE] = {"session_state", "session state", session_values,
				_SESSION_STATE_MAX},
};

static const struct axis_desc *axis_desc(enum axis a)
{
	if ((int)a < 0 || a >= _AXIS_MAX)
		return NULL;
	return &axes[a];
}

const char *axis_name(enum axis a)
{
	const struct axis_desc *d = axis_desc(a);

	return d ? d->name : NULL;
}

const char *axis_title(enum axis a)
{
	const struct axis_desc *d = axis_desc(a);

	return d ? d->title : NULL;
}

const char *const *axis_values(enum axis a)
{
	const struct axis_desc *d = axis_desc(a);

	return d ? d->values : NULL;
}

int axis_count(enum axis a)
{
	const struct axis_desc *d = axis_desc(a);

	return d ? d->count : 0;
}

int axis_from_string(enum axis a, const char *s)
{
	const struct axis_desc *d = axis_desc(a);
	int i;

	if (!d || !s)
		return -EINVAL;
	for (i = 0; i < d->count; i++)
		if (strcmp(d->values[i], s) == 0)
			return i;
	return -EINVAL;
}

const char *axis_to_string(enum axis a, int v)
{
	const struct axis_desc *d = axis_desc(a);

	if (!d || v < 0 || v >= d->count)
		return NULL;
	return d->values[v];
}

int axis_from_name(const char *name)
{
	int i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < _AXIS_MAX; i++)
		if (strcmp(axes[i].name, name) == 0)
			return i;
	return -EINVAL;
}

int axis_get(const struct adapter_strategy *s, enum axis a)
{
	switch (a) {
	case AXIS_RESUME:
		return (int)s->resume;
	case AXIS_DANGEROUS_MODE:
		return (int)s->dangerous_mode;
	case AXIS_EVENT_CHANNEL:
		return (int)s->event_channel;
	case AXIS_OUTPUT_MODE:
		return (int)s->output_mode;
	case AXIS_SESSION_STATE:
		return (int)s->session_state;
	default:
		return -EINVAL;
	}
}

int axis_set(struct adapter_strategy *s, enum axis a, int v)
{
	if (!axis_to_string(a, v))
		return -EINVAL;
	switch (a) {
	case AXIS_RESUME:
		s->resume = (enum resume_strategy)v;
		break;
	case AXIS_DANGEROUS_MODE:
		s->dangerous_mode = (enum dangerous_mode)v;
		break;
	case AXIS_EVENT_CHANNEL:
		s->event_channel = (enum event_channel)v;
		break;
	case AXIS_OUTPUT_MODE:
		s->output_mode = (enum output_mode)v;
		break;
	case AXIS_SESSION_STATE:
		s->session_state = (enum session_state)v;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

const char *resume_strategy_to_string(enum resume_strategy v)
{
	return axis_to_string(AXIS_RESUME, (int)v);
}

enum resume_strategy resume_strategy_from_string(const char *s)
{
	return (enum resume_strategy)axis_from_string(AXIS_RESUME, s);
}

const char *dangerous_mode_to_string(enum dangerous_mode v)
{
	return axis_to_string(AXIS_DANGEROUS_MODE, (int)v);
}

enum dangerous_mode dangerous_mode_from_string(const char *s)
{
	return (enum dangerous_mode)axis_from_string(AXIS_DANGEROUS_MODE, s);
}

const char *event_channel_to_string(enum event_channel v)
{
	return axis_to_string(AXIS_EVENT_CHANNEL, (int)v);
}

enum event_channel event_channel_from_string(const char *s)
{
	return (enum event_channel)axis_from_string(AXIS_EVENT_CHANNEL, s);
}

const char *output_mode_to_string(enum output_mode v)
{
	return axis_to_string(AXIS_OUTPUT_MODE, (int)v);
}

enum output_mode output_mode_from_string(const char *s)
{
	return (enum output_mode)axis_from_string(AXIS_OUTPUT_MODE, s);
}

const char *session_state_to_string(enum session_state v)
{
	return axis_to_string(AXIS_SESSION_STATE, (int)v);
}

enum session_state session_state_from_string(const char *s)
{
	return (enum session_state)axis_from_string(AXIS_SESSION_STATE, s);
}
