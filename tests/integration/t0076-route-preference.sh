#!/bin/sh
# bernstein route and bernstein.yaml's preference: (docs/routing.md): the
# repository's bernstein.yaml found from a subdirectory, its preference
# ordering the candidates (not restricting them) and named with its source
# in the text and --json output, --candidates winning (bernstein.yaml not
# read at all then), and a broken bernstein.yaml refused with exit 3 and
# FILE:LINE:COL as 'bernstein config validate' reports it (4 when it cannot
# be read).
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0071 route honours bernstein.yaml's preference"

W=$T/work
mkdir -p "$W/.bernstein/catalog/profiles" "$W/sub/deeper"
(cd "$W" && git init -q .) || exit 1
WP=$(cd "$W" && pwd -P) # the repository root as bernstein sees it
CFG=$WP/bernstein.yaml

# Two profiles only these tests' requirements select: no shipped profile
# declares a microvm sandbox. zz_a sorts first in catalogue order.
profile()
{
	_f=$W/.bernstein/catalog/profiles/$1.yaml
	{
		printf 'name: %s\ndisplay_name: "%s"\nshape: module\n' "$1" "$1"
		printf 'invocation:\n  binary: %s\n  prompt_positional: true\n' "$1"
		printf 'capabilities:\n'
		shift
		for c in "$@"; do
			printf '  %s\n' "$c"
		done
	} >"$_f"
}
profile zz_a "sandbox: microvm"
profile zz_b "sandbox: microvm" "tool_use: true"
profile zz_c "tool_use: true"

# ---- no bernstein.yaml: catalogue order, no preference ----
expect_exit 0 "$BERNSTEIN" -C sub/deeper route --requires capability:sandbox=microvm
expect_stdout_contains "adapter: zz_a"
expect_stdout_contains "order: catalogue"
check "no preference line without bernstein.yaml" sh -c "! grep -q '^preference:' '$T/stdout'"
expect_exit 0 "$BERNSTEIN" --json route --requires capability:sandbox=microvm
check "--json: preference null without bernstein.yaml" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['adapter'] == 'zz_a' and d['order'] == 'catalogue' and d['preference'] is None, d
" "$T/stdout"

# ---- bernstein.yaml without a preference: the same ----
printf 'parallel: 2\n' >"$W/bernstein.yaml"
expect_exit 0 "$BERNSTEIN" --json route --requires capability:sandbox=microvm
check "--json: preference null when bernstein.yaml sets none" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['adapter'] == 'zz_a' and d['order'] == 'catalogue' and d['preference'] is None, d
" "$T/stdout"

# ---- a preference, found from a subdirectory ----
printf 'preference: [zz_b]\n' >"$W/bernstein.yaml"
expect_exit 0 "$BERNSTEIN" -C sub/deeper route --requires capability:sandbox=microvm
expect_stdout_contains "adapter: zz_b"
expect_stdout_contains "order: preference (1 considered)"
expect_stdout_contains "preference: zz_b (from $CFG)"
expect_stderr_empty
expect_exit 0 "$BERNSTEIN" -C sub --json route --requires capability:sandbox=microvm
check "--json names the preference and its source" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['selected'] is True and d['adapter'] == 'zz_b', d
assert d['order'] == 'preference', d
assert d['preference'] == {'adapters': ['zz_b'], 'source': sys.argv[2]}, d
assert [c['adapter'] for c in d['considered']] == ['zz_b'], d
" "$T/stdout" "$CFG"

# a preference orders, it does not restrict: zz_c is first but lacks the
# sandbox, zz_b is next; with nothing preferred that fits, catalogue order
printf 'preference: [zz_c, zz_b]\n' >"$W/bernstein.yaml"
expect_exit 0 "$BERNSTEIN" route --requires capability:sandbox=microvm
expect_stdout_contains "adapter: zz_b"
expect_stdout_contains "order: preference (2 considered)"
expect_stdout_contains "preference: zz_c, zz_b (from $CFG)"
printf 'preference: [zz_c]\n' >"$W/bernstein.yaml"
expect_exit 0 "$BERNSTEIN" --json route --requires capability:sandbox=microvm
check "the preferred adapters first, then the others in catalogue order" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
names = [c['adapter'] for c in d['considered']]
assert d['adapter'] == 'zz_a' and names[0] == 'zz_c' and names[-1] == 'zz_a', names
assert names[1:] == sorted(names[1:]), names
" "$T/stdout"

# a refusal carries the preference too, and its receipt the order it gave
printf 'preference: [zz_c, zz_b]\n' >"$W/bernstein.yaml"
expect_exit 6 "$BERNSTEIN" route --requires capability:sandbox=microvm --requires capability:vision
expect_stdout_contains "preference: zz_c, zz_b (from $CFG)"
expect_exit 6 "$BERNSTEIN" --json route --requires capability:sandbox=microvm \
	--requires capability:vision
check "--json refusal: preference and the receipt's candidate order" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['selected'] is False and d['order'] == 'preference', d
assert d['preference'] == {'adapters': ['zz_c', 'zz_b'], 'source': sys.argv[2]}, d
names = [c['adapter'] for c in d['receipt']['candidates']]
assert names[:2] == ['zz_c', 'zz_b'] and 'zz_a' in names, names
" "$T/stdout" "$CFG"

# ---- --candidates wins ----
expect_exit 0 "$BERNSTEIN" route --candidates zz_a --requires capability:sandbox=microvm
expect_stdout_contains "adapter: zz_a"
expect_stdout_contains "order: explicit (1 considered)"
check "no preference line with --candidates" sh -c "! grep -q '^preference:' '$T/stdout'"
expect_exit 0 "$BERNSTEIN" --json route --candidates zz_a,zz_b
check "--json: preference null with --candidates" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['adapter'] == 'zz_a' and d['order'] == 'explicit' and d['preference'] is None, d
" "$T/stdout"

# ---- a broken bernstein.yaml: exit 3 at FILE:LINE:COL ----
printf 'parallel: 2\npreference: zz_b\n' >"$W/bernstein.yaml"
expect_exit 3 "$BERNSTEIN" -C sub route --requires capability:sandbox=microvm
expect_stderr_contains "bernstein: $CFG:2:13: field 'preference': expected a list of strings, got a string"
expect_stdout_empty
sed "s|$CFG|bernstein.yaml|" "$T/stderr" >"$T/route.err"
expect_exit 3 "$BERNSTEIN" config validate
expect_same_file "$T/route.err" "$T/stderr" "the same message as 'bernstein config validate'"
printf 'preference: [zz_b, zz_b]\n' >"$W/bernstein.yaml"
expect_exit 3 "$BERNSTEIN" route
expect_stderr_contains "$CFG:1:20: field 'preference[1]': duplicate adapter 'zz_b'"
# ... which --candidates never reads
expect_exit 0 "$BERNSTEIN" route --candidates zz_b
expect_stdout_contains "adapter: zz_b"

# a name the catalogue does not have (a run would fail every task on it)
printf 'preference: [zz_b, nosuch]\n' >"$W/bernstein.yaml"
expect_exit 3 "$BERNSTEIN" route
expect_stderr_contains "bernstein: $CFG: field 'preference[1]': unknown adapter 'nosuch' (not in the catalogue"
expect_exit 3 "$BERNSTEIN" --json route
check "--json: the error as a JSON object on stderr" python3 -c "
import json, sys
e = json.load(open(sys.argv[1]))['error']
assert e['exit_code'] == 3 and \"field 'preference[1]': unknown adapter 'nosuch'\" in e['message'], e
" "$T/stderr"

# a bernstein.yaml that cannot be read: exit 4
rm -f "$W/bernstein.yaml"
mkdir "$W/bernstein.yaml"
expect_exit 4 "$BERNSTEIN" route
expect_stderr_contains "$CFG: cannot read file: "

test_done
