#!/bin/sh
# Libraries loaded on first use (issue #24, src/util/lazy.h): `--version` and
# `adapters list --json` load none of SQLite, libcrypto, libssl, libvterm and libyaml
# (the dynamic loader's own LD_DEBUG=libs trace: a library it never searches
# for is never mapped); `status` of a run does load SQLite. A library that
# cannot be loaded (LD_LIBRARY_PATH to a directory holding a broken stub under
# its soname) is one error naming the library and the command, exit 127
# (docs/exit-codes.md); `serve` stops as it starts, and `run` before it
# starts anything.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0379 libraries loaded on first use"

# The build's options (meson's introspection): -Dlazy_deps=false links the
# four libraries as before, -Dstatic_deps=true links SQLite and libcrypto in.
opt() {
	python3 -c "
import json, sys
o = {x['name']: x['value'] for x in json.load(open(sys.argv[1]))}
print(str(o.get(sys.argv[2], sys.argv[3])).lower())" \
		"$BUILDDIR/meson-info/intro-buildoptions.json" "$1" "$2" 2>/dev/null || echo "$2"
}
if [ "$(opt lazy_deps true)" = false ]; then
	skip "libraries loaded on first use" "this build links them (-Dlazy_deps=false)"
	test_done
	exit 0
fi
# The sonames the shims open: read from the libraries at configure time and
# kept as strings in the binary (a binary that links them has them too, as
# DT_NEEDED: then the checks below fail, as they should).
lazy=""
for _l in $(grep -aoE 'lib(sqlite3|crypto|ssl|vterm|yaml-0|jansson)\.so\.[0-9]+' "$BERNSTEIN" | sort -u); do
	case $_l in libsqlite3* | libcrypto* | libssl* | libjansson*) [ "$(opt static_deps false)" = true ] && continue ;; esac
	lazy="$lazy $_l"
done
check "the binary names the libraries it loads on first use" test -n "$lazy"
lazy_one() { for _l in $lazy; do case $_l in "$1"*) echo "$_l" ;; esac; done; }
sqlite=$(lazy_one libsqlite3)
jansson_so=$(lazy_one libjansson)

# none of the lazily loaded libraries in the loader's trace of CMD
loads_none() {
	_what=$1
	shift
	run LD_DEBUG=libs "$@"
	if [ "$RC" -ne 0 ]; then
		not_ok "$_what: exit 0 (got $RC)"
		_diag_file stderr "$T/stderr"
		return
	fi
	_found=""
	for _l in $lazy; do
		grep -qF "$_l" "$T/stderr" && _found="$_found $_l"
	done
	if grep -q 'calling init: .*libc\.so' "$T/stderr" && [ -z "$_found" ]; then
		ok "$_what loads none of:" $lazy
	else
		not_ok "$_what loaded:$_found (or the trace is missing)"
		_diag_file stderr "$T/stderr"
	fi
}

loads_none "--version" "$BERNSTEIN" --version
loads_none "help" "$BERNSTEIN" help
loads_none "adapters list --json" "$BERNSTEIN" adapters list --json
check "adapters list --json printed the catalogue" python3 -c "
import json
assert len(json.load(open('$T/stdout'))['adapters']) > 10"

W=$T/work
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
git -C "$W" init -q -b main . >/dev/null 2>&1
printf '.bernstein/\n' >"$W/.gitignore"
shell_agent "$W"
printf 'adapter: shell\nretry_backoff: 0\nmax_retries: 0\n' >"$W/bernstein.yaml"
printf 'name: p\ntasks:\n  - title: ok\n    prompt: "echo hi > a.txt"\n' >"$W/ok.yaml"
printf 'name: p\ntasks:\n  - title: two\n    prompt: "echo two > b.txt"\n' >"$W/two.yaml"
git_q add -A && git_q commit -q -m base
KEY="BERNSTEIN_AUDIT_KEY_PATH=$T/audit.key"

expect_exit 0 "$BERNSTEIN" run ok.yaml
if [ -n "$jansson_so" ]; then
	run LD_DEBUG=libs "$BERNSTEIN" status --json
	check "status --json loads jansson ($jansson_so) when it reads the state" \
		grep -q "calling init: .*$jansson_so" "$T/stderr"
	# a broken jansson: the error, and with --json an error object written
	# without it (no recursion into the library that failed)
	mkdir -p "$T/nojansson"
	printf 'not a shared library\n' >"$T/nojansson/$jansson_so"
	expect_exit 127 LD_LIBRARY_PATH="$T/nojansson" "$BERNSTEIN" status
	expect_stderr_contains "bernstein: status: cannot load jansson ($jansson_so): " \
		"a broken jansson: the error names it"
	expect_exit 127 LD_LIBRARY_PATH="$T/nojansson" "$BERNSTEIN" status --json
	check "a broken jansson with --json: one JSON error object, exit_code 127" python3 -c "
import json
e = json.load(open('$T/stderr'))['error']
assert e['exit_code'] == 127 and 'cannot load jansson' in e['message'], e"
	expect_exit 0 LD_LIBRARY_PATH="$T/nojansson" "$BERNSTEIN" --version
fi
if [ -n "$sqlite" ]; then
	run LD_DEBUG=libs "$BERNSTEIN" status
	check "status exits 0" test "$RC" -eq 0
	check "status loads SQLite ($sqlite) when it reads state.db" \
		grep -q "calling init: .*$sqlite" "$T/stderr"

	# a file that is no library under SQLite's soname
	mkdir -p "$T/broken"
	printf 'not a shared library\n' >"$T/broken/$sqlite"
	expect_exit 127 LD_LIBRARY_PATH="$T/broken" "$BERNSTEIN" status
	expect_stderr_contains "bernstein: status: cannot load SQLite ($sqlite): $T/broken/$sqlite: " \
		"the error names the library, the command and the file"
	expect_lines stderr 1 "one line"
	check "no crash, no sanitizer report" sh -c "! grep -qiE 'sanitizer|BUG|abort' '$T/stderr'"
	expect_exit 127 LD_LIBRARY_PATH="$T/broken" "$BERNSTEIN" status --json
	check "with --json: one JSON error object with exit_code 127" python3 -c "
import json
e = json.load(open('$T/stderr'))['error']
assert e['exit_code'] == 127 and 'cannot load SQLite' in e['message'], e"

	# a real ELF library, but not SQLite: dlopen succeeds, a function is missing
	jansson=$(ldconfig -p 2>/dev/null | awk '/libjansson\.so\./ { print $NF; exit }')
	[ -n "$jansson" ] || jansson=$(ls /usr/lib/*/libjansson.so.* /usr/lib/libjansson.so.* 2>/dev/null | head -n 1)
	mkdir -p "$T/wrong"
	cp "$jansson" "$T/wrong/$sqlite"
	expect_exit 127 LD_LIBRARY_PATH="$T/wrong" "$BERNSTEIN" status
	expect_stderr_contains "bernstein: status: cannot load SQLite ($sqlite): " \
		"a library without SQLite's functions: the same error"
	expect_stderr_contains "undefined symbol: sqlite3_" "naming the missing function"

	# the server loads SQLite as it starts, not at its first request
	expect_exit 127 LD_LIBRARY_PATH="$T/broken" "$BERNSTEIN" serve --listen 127.0.0.1:0
	expect_stderr_contains "bernstein: serve: cannot load SQLite ($sqlite): "

	# run loads every library before it starts anything
	expect_exit 127 LD_LIBRARY_PATH="$T/broken" "$BERNSTEIN" run two.yaml
	expect_stderr_contains "bernstein: run: cannot load SQLite ($sqlite): "
	check "no task ran" test ! -e "$W/b.txt"
	check "no branch was made for it" sh -c "[ \$(git -C '$W' branch --list 'bernstein/*' | wc -l) -le 1 ]"
	expect_exit 0 "$BERNSTEIN" status
	expect_stdout_contains "): done, exit 0" "status still shows the one run, finished"
else
	skip "SQLite loaded on first use" "linked in (-Dstatic_deps=true)"
fi

# run loads even the libraries this plan would never call (libvterm: no
# pty agent), before it starts anything
vterm=$(lazy_one libvterm)
if [ -n "$vterm" ]; then
	mkdir -p "$T/novterm"
	printf 'not a shared library\n' >"$T/novterm/$vterm"
	expect_exit 127 LD_LIBRARY_PATH="$T/novterm" "$BERNSTEIN" run two.yaml
	expect_stderr_contains "bernstein: run: cannot load libvterm ($vterm): "
	check "no task ran" test ! -e "$W/b.txt"
	expect_exit 0 LD_LIBRARY_PATH="$T/novterm" "$BERNSTEIN" status
fi

# a library every build loads lazily (libyaml): plan validate needs it
yaml=$(lazy_one libyaml)
if [ -n "$yaml" ]; then
	mkdir -p "$T/broken"
	printf 'not a shared library\n' >"$T/broken/$yaml"
	expect_exit 127 LD_LIBRARY_PATH="$T/broken" "$BERNSTEIN" plan validate ok.yaml
	expect_stderr_contains "bernstein: plan validate: cannot load libyaml ($yaml): "
	# the embedded catalogue is compiled: adapters list needs libyaml only
	# for a repository's catalogue files (the work tree has one: shell.yaml)
	expect_exit 127 LD_LIBRARY_PATH="$T/broken" "$BERNSTEIN" adapters list --json
	expect_stderr_contains '"exit_code":127'
	mkdir -p "$T/plain"
	expect_exit 0 LD_LIBRARY_PATH="$T/broken" "$BERNSTEIN" -C "$T/plain" adapters list --json
fi
test_done
