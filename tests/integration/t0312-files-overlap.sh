#!/bin/sh
# Issue #20, "Task context": files: (paths or globs a task expects to
# touch). Two tasks whose files overlap (a glob and a path it matches) do not
# run at the same time even with parallel: 2: the second starts only once
# the other is finished (asserted by the order of their start/end marks,
# never by time), and is held from the moment the other's tree is being
# prepared (its worktree_setup running, before its agent is dispatched).
# Two tasks with disjoint files still run together.
# Each agent waits (bounded) for another task to start, so running together
# shows as interleaved marks.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0312 files: overlapping tasks are serialised"

W=$T/work
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
cat >"$W/bernstein.yaml" <<'EOF'
adapter: shell
parallel: 2
sandbox: none
EOF
# agent NAME LOG: mark its start, wait up to ~3 s for a second start, mark
# its end, write a file of its own
agent()
{
	printf 'echo "start %s" >> %s; i=0; while [ $i -lt 60 ] && [ "$(grep -c ^start %s)" -lt 2 ]; do sleep 0.05; i=$((i+1)); done; echo "end %s" >> %s; echo %s > %s.txt' \
		"$1" "$2" "$2" "$1" "$2" "$1" "$1"
}
# a setup command that takes a while: a task is in flight (its tree made,
# its setup running) before its agent is "dispatched", and must hold the
# other from then on
cat >"$W/overlap.yaml" <<EOF
name: overlap
worktree_setup: {setup_command: "sleep 0.3"}
tasks:
  - title: one
    files: ["src/*.c"]
    prompt: '$(agent one "$T/order1")'
  - title: two
    files: [docs/readme.md, src/auth.c]
    prompt: '$(agent two "$T/order1")'
EOF
cat >"$W/disjoint.yaml" <<EOF
name: disjoint
tasks:
  - title: three
    files: [src/a.c]
    prompt: '$(agent three "$T/order2")'
  - title: four
    files: [src/b.c]
    prompt: '$(agent four "$T/order2")'
EOF
git_q add -A
git_q commit -q -m base

expect_exit 0 "$BERNSTEIN" run overlap.yaml
# either may go first (their trees are made at once); never both at once
ORDER1=$(tr '\n' ' ' <"$T/order1")
check "overlapping files: one after the other, never both at once" \
	test "$ORDER1" = 'start one end one start two end two ' -o \
	"$ORDER1" = 'start two end two start one end one '
case $ORDER1 in "start one end one "* | "start two end two "*) ;; *) _diag_file order "$T/order1" ;; esac

expect_exit 0 "$BERNSTEIN" run disjoint.yaml
check "disjoint files: both ran at once (interleaved marks)" \
	sh -c "head -n2 '$T/order2' | grep -c ^start | grep -qx 2"
test_done
