#!/bin/sh
# Issue #26 end to end in the container tier: the real claude (tests/agents,
# pinned) as its interactive TUI (claude_tui, no -p) in an OCI container,
# its terminal the container's console (docs/event-stream.md, "poll-pty in
# a terminal"), against tests/helpers/fake-llm.py reached through the llm
# network's proxy. As t0352: the prompt is typed, claude's Bash tool writes
# hello.txt, the screen says done, /exit ends it; merged into main, its
# events read the screen back. Then: the task ran in the container tier, no
# claude is left and no container is left in the runtime's state. Skipped
# where `bernstein doctor` says the container tier cannot run.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "e2e: claude as a TUI through the pty, in the container tier"

require_landlock
run "$BERNSTEIN" doctor --json
if ! python3 -c "
import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))['sandbox_tiers']['container']['available'] else 1)" "$T/stdout"; then
	echo "1..0 # SKIP the container tier cannot run here"
	exit 0
fi
RUNTIME=$(python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))['sandbox_tiers']['container']['runtime'])" "$T/stdout")
. "$SRCDIR/tests/data/e2e/pty-e2e-lib.sh"
pty_e2e claude claude_tui ANTHROPIC_API_KEY \
	'{"name": "Bash", "id": "toolu_pty_1", "arguments": {"command": "echo hi > hello.txt", "description": "write hello.txt"}}' \
	container
check "it ran in the container tier, with a terminal: the bundle asked for one" python3 -c "
import glob, json, sys
cs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + '/.bernstein/runs/*/hello-*/1/oci-*/config.json')]
assert cs and all(c['process']['terminal'] for c in cs), cs
" "$W"
# the processes whose argv names the repository (the runtime, the proxy, the
# shim that is the container's init and claude's parent); the glob is
# expanded before grep is forked, so grep never lists itself
none_left()
{
	set -- /proc/[0-9]*/cmdline
	[ -z "$(grep -lsF -e "$W/" "$@")" ]
}
check "no process of the task is left (runtime, proxy, the container's init and claude)" none_left
check "no container is left in the runtime's state" sh -c "
for s in '$W'/.bernstein/runs/*/hello-*/1/oci-*/state; do
	[ -d \"\$s\" ] || continue
	[ -z \"\$('$RUNTIME' --root \"\$s\" list -q 2>/dev/null)\" ] || exit 1
done"
test_done
