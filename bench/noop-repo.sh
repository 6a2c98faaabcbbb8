# Sourced by bench/run-bench.sh and bench/tier-bench.sh (POSIX sh).
#
# noop_repo DIR N PARALLEL [SANDBOX]: a git repository at DIR whose agent
# `noop` is /bin/true (every sandbox tier declared, 256 workers, no events),
# with bernstein.yaml running it PARALLEL wide (in SANDBOX when given) and
# plan.yaml of N no-op tasks, committed.
noop_repo()
{
	_w=$1
	mkdir -p "$_w/.bernstein/catalog/profiles"
	git -C "$_w" init -q -b main . >/dev/null
	printf '.bernstein/\n' >"$_w/.gitignore"
	cat >"$_w/.bernstein/catalog/profiles/noop.yaml" <<'EOF_NOOP'
name: noop
display_name: "no-op"
shape: factory
invocation:
  binary: true
  prompt_positional: true
capabilities:
  max_parallel_workers: 256
runtime:
  sandbox: {tiers: [landlock, bwrap, container]}
EOF_NOOP
	cat >"$_w/.bernstein/catalog/strategy-matrix.yaml" <<'EOF_NOOP'
adapters:
  noop:
    resume: unsupported
    dangerous_mode: always-on
    event_channel: none
EOF_NOOP
	printf 'adapter: noop\nparallel: %s\n' "$3" >"$_w/bernstein.yaml"
	[ -z "${4:-}" ] || printf 'sandbox: %s\n' "$4" >>"$_w/bernstein.yaml"
	{
		echo "name: bench"
		echo "tasks:"
		_i=1
		while [ "$_i" -le "$2" ]; do
			echo "  - {title: t$_i, prompt: noop}"
			_i=$((_i + 1))
		done
	} >"$_w/plan.yaml"
	git -C "$_w" add -A >/dev/null
	git -C "$_w" -c user.name=b -c user.email=b@example.invalid commit -q -m base
}
