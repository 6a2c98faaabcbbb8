#!/bin/sh
# The agent's private HOME outlives its attempt (runs/RUN/SESSION/home, kept
# for a native resume), and the agent controls what is in it. An agent that
# plants symlinks there (its side-file directory -> a directory of the
# user's, its login directory -> another) must not get bernstein, unconfined,
# to write through them when the next attempt starts: the resumed attempt is
# refused with a message naming the planted link, and nothing appears in the
# symlinks' targets. In sandbox: none (agentrun's side files and login links)
# and in bwrap (the confinement's login links) where the host has it.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0186 planted symlinks in the agent's HOME are never followed on resume"

# setup DIR TIER: repository DIR/work; the user's HOME DIR/home with a login
# file; DIR/victim-cfg and DIR/victim-tok the directories the agent aims at.
setup() {
	D=$1
	W=$D/work
	H=$D/home
	mkdir -p "$W/.bernstein/catalog/profiles" "$H/.tok" "$D/victim-cfg" "$D/victim-tok"
	printf '{"token": "t0186-login"}\n' >"$H/.tok/auth.json"
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	cat >"$W/.bernstein/catalog/profiles/planter.yaml" <<'YAML'
name: planter
display_name: "Shell agent that plants symlinks in its HOME"
shape: factory
invocation: {binary: sh, extra_args: [-c], prompt_positional: true}
capabilities: {tool_use: true}
runtime:
  home: isolated
  login: [.tok/auth.json]
  sandbox: {tiers: [landlock, bwrap]}
  files:
    - path: .cfg/settings.json
      mode: "0600"
      content: |
        {"written": "by bernstein"}
YAML
	cat >"$W/.bernstein/catalog/strategy-matrix.yaml" <<'YAML'
adapters:
  planter:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
YAML
	printf 'adapter: planter\nretry_backoff: 0\nmax_retries: 0\nsandbox: %s\n' "$2" >"$W/bernstein.yaml"
	# First attempt: the side file and the login link are there (bernstein
	# made them); the agent swaps their directories for symlinks to the
	# victims, then hangs until its timeout (the task is interrupted and
	# resume runs it again in the same HOME).
	cat >"$W/plan.yaml" <<YAML
name: plant
tasks:
  - title: plants and hangs
    timeout: 2
    prompt: |
      if [ -f "\$HOME/.cfg/settings.json" ]; then echo CFG-SEEN > seen.txt; fi
      rm -rf "\$HOME/.cfg" "\$HOME/.tok"
      ln -s "$D/victim-cfg" "\$HOME/.cfg"
      ln -s "$D/victim-tok" "\$HOME/.tok"
      echo planted > planted.txt
      exec sleep 30
YAML
	git -C "$W" -c user.name=t -c user.email=t@example.com add -A >/dev/null 2>&1
	git -C "$W" -c user.name=t -c user.email=t@example.com commit -q -m base >/dev/null 2>&1
}

bw() { run sh -c "cd '$W' && exec env -i PATH=/usr/bin:/bin HOME='$H' LC_ALL=C.UTF-8 TZ=UTC '$BERNSTEIN' $*"; }

bwrap_ok=
if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / /bin/true >/dev/null 2>&1; then
	run "$BERNSTEIN" shim --landlock-ro / -- /bin/true
	[ "$RC" -eq 0 ] && bwrap_ok=1
fi

for tier in none bwrap; do
	if [ "$tier" = bwrap ] && [ -z "$bwrap_ok" ]; then
		skip "sandbox: bwrap" "bubblewrap (with Landlock) cannot run here"
		continue
	fi
	setup "$T/$tier" "$tier"
	bw run plan.yaml
	check "$tier: the first attempt is interrupted by its timeout (exit $RC)" test "$RC" -ne 0
	home=$(ls -d "$W"/.bernstein/runs/*/*/home 2>/dev/null | head -n 1)
	check "$tier: the agent's HOME is kept for the next attempt" test -d "$home"
	check "$tier: the agent planted its side-file symlink" test -L "$home/.cfg"
	# bwrap binds the login file into the HOME: its directory cannot be
	# replaced from inside (EBUSY); without a sandbox the agent replaces it
	if [ "$tier" = none ]; then
		check "$tier: the agent planted its login symlink" test -L "$home/.tok"
	fi
	bw resume
	check "$tier: the resumed attempt does not succeed (exit $RC)" test "$RC" -ne 0
	check "$tier: the refusal names the planted symlink" \
		sh -c "cat '$T/stderr' '$T/stdout' '$W'/.bernstein/runs/*/*/events.jsonl 2>/dev/null | grep -qi symlink"
	check "$tier: nothing was written into the side file's victim" \
		sh -c "[ -z \"\$(ls -A '$T/$tier/victim-cfg')\" ]"
	check "$tier: no login link was made in the login's victim" \
		sh -c "[ -z \"\$(ls -A '$T/$tier/victim-tok')\" ]"
	check "$tier: the user's login file is untouched" grep -q t0186-login "$H/.tok/auth.json"
done
test_done
