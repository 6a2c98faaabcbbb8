/* The five strategy axes: exact strings, round trips, rejection of unknown
 * strings, the generic accessors and the legacy two-state resume view. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/axes.h"
#include "adapter/strategy.h"

/* The contract's values, in enum order, exactly as the seed spells them. */
static const char *const want_resume[] = {"flag", "flag-pair", "subcommand", "unsupported", NULL};
static const char *const want_dangerous[] = {"cli-flag", "env-var", "always-on", "unsupported",
					     NULL};
static const char *const want_event[] = {"stream-json", "text-signals", "hooks", "poll-pty",
					 "none",	"acp",		NULL};
static const char *const want_output[] = {"git-diff", "artifact", NULL};
static const char *const want_session[] = {"stateless", "persistent-agent", NULL};

static const char *const *const want[_AXIS_MAX] = {
	[AXIS_RESUME] = want_resume,	     [AXIS_DANGEROUS_MODE] = want_dangerous,
	[AXIS_EVENT_CHANNEL] = want_event,   [AXIS_OUTPUT_MODE] = want_output,
	[AXIS_SESSION_STATE] = want_session,
};

static size_t count(const char *const *v)
{
	size_t n = 0;

	while (v[n])
		n++;
	return n;
}

static void test_exact_value_tables(void **state)
{
	int a;
	size_t i;

	(void)state;
	for (a = 0; a < _AXIS_MAX; a++) {
		const char *const *v = axis_values((enum axis)a);

		assert_non_null(v);
		assert_int_equal(count(v), count(want[a]));
		assert_int_equal(axis_count((enum axis)a), (int)count(want[a]));
		for (i = 0; want[a][i]; i++)
			assert_string_equal(v[i], want[a][i]);
		assert_null(v[i]);
	}
	/* and the enum values sit where the header says */
	assert_string_equal(axis_to_string(AXIS_RESUME, RESUME_FLAG_PAIR), "flag-pair");
	assert_string_equal(axis_to_string(AXIS_DANGEROUS_MODE, DANGEROUS_MODE_ENV_VAR), "env-var");
	assert_string_equal(axis_to_string(AXIS_EVENT_CHANNEL, EVENT_CHANNEL_POLL_PTY), "poll-pty");
	assert_string_equal(axis_to_string(AXIS_EVENT_CHANNEL, EVENT_CHANNEL_ACP), "acp");
	assert_string_equal(axis_to_string(AXIS_OUTPUT_MODE, OUTPUT_MODE_ARTIFACT), "artifact");
	assert_string_equal(axis_to_string(AXIS_SESSION_STATE, SESSION_STATE_PERSISTENT_AGENT),
			    "persistent-agent");
	assert_int_equal(_RESUME_STRATEGY_MAX, 4);
	assert_int_equal(_DANGEROUS_MODE_MAX, 4);
	assert_int_equal(_EVENT_CHANNEL_MAX, 6);
	assert_int_equal(_OUTPUT_MODE_MAX, 2);
	assert_int_equal(_SESSION_STATE_MAX, 2);
}

static void test_round_trip(void **state)
{
	int a, v;

	(void)state;
	for (a = 0; a < _AXIS_MAX; a++) {
		for (v = 0; v < axis_count((enum axis)a); v++) {
			const char *s = axis_to_string((enum axis)a, v);

			assert_non_null(s);
			assert_int_equal(axis_from_string((enum axis)a, s), v);
		}
	}
	/* the typed wrappers agree with the generic ones */
	for (v = 0; v < _RESUME_STRATEGY_MAX; v++)
		assert_int_equal(resume_strategy_from_string(resume_strategy_to_string(v)), v);
	for (v = 0; v < _DANGEROUS_MODE_MAX; v++)
		assert_int_equal(dangerous_mode_from_string(dangerous_mode_to_string(v)), v);
	for (v = 0; v < _EVENT_CHANNEL_MAX; v++)
		assert_int_equal(event_channel_from_string(event_channel_to_string(v)), v);
	for (v = 0; v < _OUTPUT_MODE_MAX; v++)
		assert_int_equal(output_mode_from_string(output_mode_to_string(v)), v);
	for (v = 0; v < _SESSION_STATE_MAX; v++)
		assert_int_equal(session_state_from_string(session_state_to_string(v)), v);
}

static void test_unknown_strings_rejected(void **state)
{
	static const char *const bad[] = {
		"",
		"Flag",
		"FLAG",
		" flag",
		"flag ",
		"flag_pair",
		"flagpair",
		"native",
		"fallback-fresh",
		"stream_json",
		"text_signals",
		"git_diff",
		"persistent_agent",
		"cli_flag",
		"env_var",
		"always_on",
		"poll_pty",
		"unsupported\n",
		"yes",
		"true",
	};
	size_t i;
	int a;

	(void)state;
	for (a = 0; a < _AXIS_MAX; a++) {
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(axis_from_string((enum axis)a, bad[i]), -EINVAL);
		assert_int_equal(axis_from_string((enum axis)a, NULL), -EINVAL);
		/* a value of one axis is not a value of another */
		if (a != AXIS_EVENT_CHANNEL)
			assert_int_equal(axis_from_string((enum axis)a, "stream-json"), -EINVAL);
		if (a != AXIS_OUTPUT_MODE)
			assert_int_equal(axis_from_string((enum axis)a, "git-diff"), -EINVAL);
	}
	assert_int_equal(resume_strategy_from_string("sometimes"), _RESUME_STRATEGY_INVALID);
	assert_int_equal(dangerous_mode_from_string("yolo"), _DANGEROUS_MODE_INVALID);
	assert_int_equal(event_channel_from_string("sse"), _EVENT_CHANNEL_INVALID);
	assert_int_equal(output_mode_from_string("commit"), _OUTPUT_MODE_INVALID);
	assert_int_equal(session_state_from_string("stateful"), _SESSION_STATE_INVALID);
}

static void test_out_of_range(void **state)
{
	(void)state;
	assert_null(axis_to_string(AXIS_RESUME, -1));
	assert_null(axis_to_string(AXIS_RESUME, _RESUME_STRATEGY_MAX));
	assert_null(axis_to_string(AXIS_EVENT_CHANNEL, _EVENT_CHANNEL_MAX));
	assert_null(axis_to_string(_AXIS_MAX, 0));
	assert_null(axis_to_string(_AXIS_INVALID, 0));
	assert_null(axis_values(_AXIS_MAX));
	assert_null(axis_name(_AXIS_MAX));
	assert_int_equal(axis_count(_AXIS_MAX), 0);
	assert_int_equal(axis_from_string(_AXIS_MAX, "flag"), -EINVAL);
	assert_null(resume_strategy_to_string(_RESUME_STRATEGY_INVALID));
}

static void test_axis_names(void **state)
{
	static const char *const names[_AXIS_MAX] = {"resume", "dangerous_mode", "event_channel",
						     "output_mode", "session_state"};
	static const char *const titles[_AXIS_MAX] = {"resume", "dangerous mode", "event channel",
						      "output mode", "session state"};
	int a;

	(void)state;
	for (a = 0; a < _AXIS_MAX; a++) {
		assert_string_equal(axis_name((enum axis)a), names[a]);
		assert_string_equal(axis_title((enum axis)a), titles[a]);
		assert_int_equal(axis_from_name(names[a]), a);
	}
	assert_int_equal(axis_from_name("dangerous-mode"), -EINVAL);
	assert_int_equal(axis_from_name(NULL), -EINVAL);
}

static void test_get_set(void **state)
{
	struct adapter_strategy s = strategy_default;
	int a, v;

	(void)state;
	for (a = 0; a < _AXIS_MAX; a++) {
		for (v = 0; v < axis_count((enum axis)a); v++) {
			assert_int_equal(axis_set(&s, (enum axis)a, v), 0);
			assert_int_equal(axis_get(&s, (enum axis)a), v);
		}
		/* an invalid value leaves the strategy unchanged */
		assert_int_equal(axis_set(&s, (enum axis)a, axis_count((enum axis)a)), -EINVAL);
		assert_int_equal(axis_set(&s, (enum axis)a, -1), -EINVAL);
		assert_int_equal(axis_get(&s, (enum axis)a), axis_count((enum axis)a) - 1);
	}
	assert_int_equal(s.resume, RESUME_UNSUPPORTED);
	assert_int_equal(s.event_channel, EVENT_CHANNEL_ACP);
	assert_int_equal(s.session_state, SESSION_STATE_PERSISTENT_AGENT);
	assert_int_equal(axis_get(&s, _AXIS_MAX), -EINVAL);
	assert_int_equal(axis_set(&s, _AXIS_MAX, 0), -EINVAL);
}

static void test_default_is_conservative(void **state)
{
	(void)state;
	/* the seed: no native resume, dangerous mode unsupported, text-signal
	 * channel, git-diff output mode, stateless session state */
	assert_int_equal(strategy_default.resume, RESUME_UNSUPPORTED);
	assert_int_equal(strategy_default.dangerous_mode, DANGEROUS_MODE_UNSUPPORTED);
	assert_int_equal(strategy_default.event_channel, EVENT_CHANNEL_TEXT_SIGNALS);
	assert_int_equal(strategy_default.output_mode, OUTPUT_MODE_GIT_DIFF);
	assert_int_equal(strategy_default.session_state, SESSION_STATE_STATELESS);
}

static void test_legacy_resume_view(void **state)
{
	struct adapter_strategy s = strategy_default;
	int v;

	(void)state;
	for (v = 0; v < _RESUME_STRATEGY_MAX; v++) {
		s.resume = (enum resume_strategy)v;
		assert_string_equal(strategy_resume_capability(&s),
				    v == RESUME_UNSUPPORTED ? "fallback-fresh" : "native");
	}
	assert_string_equal(strategy_resume_capability(&strategy_default), "fallback-fresh");
	/* only the resume axis decides */
	s = strategy_default;
	s.dangerous_mode = DANGEROUS_MODE_ALWAYS_ON;
	s.event_channel = EVENT_CHANNEL_STREAM_JSON;
	assert_string_equal(strategy_resume_capability(&s), "fallback-fresh");
	s.resume = RESUME_SUBCOMMAND;
	assert_string_equal(strategy_resume_capability(&s), "native");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_value_tables),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_unknown_strings_rejected),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_axis_names),
		cmocka_unit_test(test_get_set),
		cmocka_unit_test(test_default_is_conservative),
		cmocka_unit_test(test_legacy_resume_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
