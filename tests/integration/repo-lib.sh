# The set-up the tests of a run in a scratch repository share (the control
# channel, the stall watchdog, bernstein serve...). Sourced after lib.sh and
# test_begin:
#
#   . "$SRCDIR/tests/integration/repo-lib.sh"
#   shell_repo <<'EOF'           # $W: git, .bernstein/ ignored, the shell agent
#   adapter: shell               # ... and this bernstein.yaml
#   EOF
#   cat >"$W/plan.yaml" <<EOF ... EOF
#   commit_base
#   bg run plan.yaml             # lib.sh: $BGPID
#   serve_bg "$SERVE" --listen 127.0.0.1:0     # $SVPID
#   check "the server is up" serve_wait        # $URL, $TOKEN
#
# On exit (the trap this file sets) the server(s) get SIGTERM, the
# background bernstein SIGKILL, and every process whose command line holds
# $KILL_MARK (a flag file a task's agent polls, a grandchild's marker)
# SIGKILL; then lib.sh's clean-up. A test with more to clean defines its own
# trap and calls repo_cleanup from it.

W=$T/work
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"
BGPID=
SVPID=
SV2PID=
KILL_MARK=
# shellcheck disable=SC2034 # the tests name it
SERVE=$(dirname "$BERNSTEIN")/bernstein-serve

# kill_marked MARK: SIGKILL to every process whose command line holds MARK.
kill_marked()
{
	for _p in $(grep -lsF -e "$1" /proc/[0-9]*/cmdline | sed -e 's#^/proc/##' -e 's#/cmdline$##'); do
		kill -9 "$_p" 2>/dev/null
	done
}

repo_cleanup()
{
	[ -n "$SVPID" ] && kill "$SVPID" 2>/dev/null
	[ -n "$SV2PID" ] && kill "$SV2PID" 2>/dev/null
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	[ -n "$KILL_MARK" ] && kill_marked "$KILL_MARK"
	_lib_cleanup
}
trap repo_cleanup EXIT

# git_q ARGS...: git in $W, with an identity, quiet.
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

# repo_init: $W a git repository on branch main that ignores .bernstein/.
repo_init()
{
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
}

# shell_repo: repo_init, the shell agent (lib.sh shell_agent), and
# bernstein.yaml from stdin.
shell_repo()
{
	repo_init
	shell_agent "$W"
	cat >"$W/bernstein.yaml"
}

# commit_base: all of $W as its first commit.
commit_base()
{
	git_q add -A
	git_q commit -q -m base
}

# serve_bg PROGRAM ARGS...: a server started in $W as bg() starts bernstein
# (the clean environment, $KEY): its pid in $SVPID, its output in
# $T/serve.out and $T/serve.err.
serve_bg()
{
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC "$KEY" \
		"$@") </dev/null >"$T/serve.out" 2>"$T/serve.err" &
	SVPID=$!
}

# serve_wait [FILE]: until FILE ($T/serve.out) holds the line
# "bernstein serve: http://127.0.0.1:PORT/#token=<64 hex>"; then $URL
# (without the token) and $TOKEN (.bernstein/serve.token). 1 when the line
# never comes.
serve_wait()
{
	_out=${1:-$T/serve.out}
	wait_until "grep -q '^bernstein serve: http://127.0.0.1:[0-9]*/#token=[0-9a-f]\{64\}\$' '$_out'" ||
		return 1
	URL=$(sed -n 's#^bernstein serve: \(http://127.0.0.1:[0-9]*\)/\#token=.*#\1#p' "$_out")
	TOKEN=$(cat "$W/.bernstein/serve.token")
}

# authget PATH: GET $URL$PATH with the token, the body on stdout.
authget() { curl -s -H "Authorization: Bearer $TOKEN" "$URL$1"; }
