#!/bin/sh
# Golden tests of the command line: runs every case in GOLDEN_DIR and compares
# stdout, stderr and the exit status with the recorded files. TAP output, one
# test per case; a mismatch prints a unified diff as TAP comments.
#
# usage: run-golden.sh BERNSTEIN GOLDEN_DIR [NAME...]
#        UPDATE_GOLDEN=1 run-golden.sh ...   rewrite the expected files instead
# With NAMEs, only those cases run (and stale files are not looked for).
# GOLDEN_SHARD=I/N runs every Nth case from the Ith (1 <= I <= N), so N
# tests share the cases; shard 1 also looks for stale files.
#
# A case NAME is a set of files in GOLDEN_DIR:
#   NAME.args    one argv element per line (the arguments after 'bernstein');
#                an empty file means no arguments
#   NAME.env     optional: extra KEY=VALUE lines for the environment ('%TMP%'
#                in a value becomes the scratch directory; '#' lines are
#                comments)
#   NAME.setup   optional: a POSIX sh script run first, in the scratch work
#                directory, with $TMP, $BERNSTEIN and $SRCDIR set; without
#                it, the script that setups/list names for the first pattern
#                matching NAME (one setup shared by many cases, never copied)
#   NAME.stdout, NAME.stderr, NAME.rc (a number): the expected results
#
# Each case runs in a fresh scratch directory $TMP: cwd $TMP/work, under
#   env -i PATH=/usr/bin:/bin HOME=$TMP/home LC_ALL=C.UTF-8 TZ=UTC
#          XDG_CONFIG_HOME=$TMP/config [sanitizer options] [NAME.env]
# and the scratch path is replaced by '%TMP%' in its output before comparing.
set -u

if [ $# -lt 2 ]; then
	echo "usage: $0 BERNSTEIN GOLDEN_DIR [NAME...]" >&2
	exit 2
fi
bernstein=$1
dir=$2
shift 2
only=" $* "
: "${SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${GOLDEN_TIMEOUT:=60}"
: "${GOLDEN_SHARD:=1/1}"
shard_i=${GOLDEN_SHARD%/*}
shard_n=${GOLDEN_SHARD#*/}
case $shard_i$shard_n in
*[!0-9]* | '') shard_i=0 ;;
esac
if [ "$shard_i" -lt 1 ] || [ "$shard_i" -gt "$shard_n" ]; then
	echo "Bail out! GOLDEN_SHARD='$GOLDEN_SHARD' is not I/N with 1 <= I <= N"
	exit 1
fi
update=${UPDATE_GOLDEN:-0}
[ "$update" = 0 ] && update=

if [ ! -x "$bernstein" ]; then
	echo "Bail out! '$bernstein' is not an executable"
	exit 1
fi
if [ ! -d "$dir" ]; then
	echo "Bail out! '$dir' is not a directory"
	exit 1
fi
# Absolute paths: cases run from their own scratch directory.
dir=$(cd "$dir" && pwd) || exit 1
case $bernstein in
/*) ;;
*) bernstein=$(pwd)/$bernstein ;;
esac

n=0
failed=0
k=0
scratch_root=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-golden.XXXXXX") || {
	echo "Bail out! cannot create a temp directory"
	exit 1
}
trap 'rm -rf "$scratch_root"' EXIT
trap 'exit 130' INT TERM HUP

[ -n "$update" ] && echo "# UPDATE_GOLDEN=1: rewriting expected files in $dir, not comparing"

# Escapes a string for use as a basic regular expression in sed s|...|.
bre_escape()
{
	printf '%s\n' "$1" | sed 's/[].[^$\\*|/]/\\&/g'
}

# Escapes a string for the replacement part of sed s|...|...|.
repl_escape()
{
	printf '%s\n' "$1" | sed 's/[&|\\]/\\&/g'
}

# normalize FILE TMP: replace the scratch path (and its resolved form) by %TMP%.
normalize()
{
	_e1=$(bre_escape "$2")
	_real=$(cd "$2" && pwd -P)
	_e2=$(bre_escape "$_real")
	sed -e "s|$_e2|%TMP%|g" -e "s|$_e1|%TMP%|g" "$1" >"$1.norm" && mv "$1.norm" "$1"
}

# show_diff EXPECTED ACTUAL LABEL: a unified diff as TAP comments.
show_diff()
{
	diff -u --label "expected $3" --label "actual $3" "$1" "$2" | head -n 60 | sed 's/^/# /'
}

# setups/list: "PATTERN SCRIPT" lines (an sh case pattern, a script in
# setups/; '#' lines are comments).
setups=$dir/setups

# setup_of NAME: the setup script of case NAME, or nothing.
setup_of()
{
	if [ -f "$dir/$1.setup" ]; then
		printf '%s\n' "$dir/$1.setup"
		return 0
	fi
	[ -f "$setups/list" ] || return 0
	while read -r _pat _script; do
		case $_pat in '' | '#'*) continue ;; esac
		# shellcheck disable=SC2254 # the pattern is meant to match
		case $1 in $_pat)
			printf '%s\n' "$setups/$_script"
			return 0
			;;
		esac
	done <"$setups/list"
}

# run_case NAME: sets $case_rc; output in $TMP/stdout, $TMP/stderr.
run_case()
{
	name=$1
	TMP=$scratch_root/$name
	mkdir -p "$TMP/work" "$TMP/home" "$TMP/config" || return 1

	# The environment: fixed part, sanitizer options, then NAME.env.
	envfile=$TMP/env
	{
		echo "PATH=/usr/bin:/bin"
		echo "HOME=$TMP/home"
		echo "LC_ALL=C.UTF-8"
		echo "TZ=UTC"
		echo "XDG_CONFIG_HOME=$TMP/config"
		[ -n "${ASAN_OPTIONS:-}" ] && echo "ASAN_OPTIONS=$ASAN_OPTIONS"
		[ -n "${UBSAN_OPTIONS:-}" ] && echo "UBSAN_OPTIONS=$UBSAN_OPTIONS"
		[ -n "${LSAN_OPTIONS:-}" ] && echo "LSAN_OPTIONS=$LSAN_OPTIONS"
		if [ -f "$dir/$name.env" ]; then
			_t=$(repl_escape "$TMP")
			grep -v -e '^#' -e '^[[:space:]]*$' "$dir/$name.env" | sed "s|%TMP%|$_t|g"
		fi
	} >"$envfile"
	if grep -qv '^[A-Za-z_][A-Za-z0-9_]*=' "$envfile"; then
		echo "# $name.env: every line must be KEY=VALUE"
		return 1
	fi

	setup=$(setup_of "$name")
	if [ -n "$setup" ]; then
		if ! (cd "$TMP/work" && exec env -i PATH=/usr/bin:/bin HOME="$TMP/home" \
			LC_ALL=C.UTF-8 TZ=UTC XDG_CONFIG_HOME="$TMP/config" TMP="$TMP" \
			BERNSTEIN="$bernstein" SRCDIR="$SRCDIR" sh "$setup") \
			</dev/null >"$TMP/setup.out" 2>&1; then
			echo "# $name: its setup ${setup#"$dir"/} failed:"
			sed 's/^/#   /' "$TMP/setup.out"
			return 1
		fi
	fi

	# env -i KEY=VALUE... BERNSTEIN ARGS...: one word each, built as the
	# positional parameters so values and arguments may hold spaces.
	set --
	while IFS= read -r kv; do
		set -- "$@" "$kv"
	done <"$envfile"
	set -- "$@" "$bernstein"
	while IFS= read -r arg || [ -n "$arg" ]; do
		set -- "$@" "$arg"
	done <"$dir/$name.args"
	(cd "$TMP/work" && exec timeout -k 5 "$GOLDEN_TIMEOUT" env -i "$@") \
		</dev/null >"$TMP/stdout" 2>"$TMP/stderr"
	case_rc=$?
	normalize "$TMP/stdout" "$TMP"
	normalize "$TMP/stderr" "$TMP"
	return 0
}

for args in "$dir"/*.args; do
	[ -f "$args" ] || continue
	name=${args##*/}
	name=${name%.args}
	case $only in
	"  " | *" $name "*) ;;
	*) continue ;;
	esac
	k=$((k + 1))
	[ $(((k - 1) % shard_n + 1)) -eq "$shard_i" ] || continue
	n=$((n + 1))

	if ! run_case "$name"; then
		failed=$((failed + 1))
		echo "not ok $n - $name: setup failed"
		continue
	fi

	if [ -n "$update" ]; then
		cp "$TMP/stdout" "$dir/$name.stdout"
		cp "$TMP/stderr" "$dir/$name.stderr"
		echo "$case_rc" >"$dir/$name.rc"
		echo "ok $n - $name # updated (exit $case_rc)"
		continue
	fi

	bad=""
	for f in stdout stderr rc; do
		[ -f "$dir/$name.$f" ] || bad="$bad missing-$f"
	done
	if [ -n "$bad" ]; then
		failed=$((failed + 1))
		echo "not ok $n - $name: no expected files (${bad# }); record with UPDATE_GOLDEN=1"
		continue
	fi
	want_rc=$(tr -d ' \t\n' <"$dir/$name.rc")
	msg=""
	[ "$case_rc" = "$want_rc" ] || msg="$msg exit $case_rc, expected $want_rc;"
	cmp -s "$dir/$name.stdout" "$TMP/stdout" || msg="$msg stdout differs;"
	cmp -s "$dir/$name.stderr" "$TMP/stderr" || msg="$msg stderr differs;"
	if [ -z "$msg" ]; then
		echo "ok $n - $name"
		continue
	fi
	failed=$((failed + 1))
	echo "not ok $n - $name:${msg%;}"
	echo "# argv: bernstein$(while IFS= read -r a || [ -n "$a" ]; do printf " '%s'" "$a"; done <"$args")"
	cmp -s "$dir/$name.stdout" "$TMP/stdout" || show_diff "$dir/$name.stdout" "$TMP/stdout" stdout
	cmp -s "$dir/$name.stderr" "$TMP/stderr" || show_diff "$dir/$name.stderr" "$TMP/stderr" stderr
done

# Expected files without a case are stale: a renamed or deleted case.
for f in "$dir"/*.stdout "$dir"/*.stderr "$dir"/*.rc "$dir"/*.env "$dir"/*.setup; do
	if [ ! -f "$f" ] || [ "$only" != "  " ] || [ "$shard_i" -ne 1 ]; then
		continue
	fi
	base=${f%.*}
	if [ ! -f "$base.args" ]; then
		n=$((n + 1))
		failed=$((failed + 1))
		echo "not ok $n - ${f##*/}: no ${base##*/}.args (stale golden file)"
	fi
done

# A shared setup no case uses, or a pattern no case matches, is stale too.
if [ -f "$setups/list" ] && [ "$only" = "  " ] && [ "$shard_i" -eq 1 ]; then
	for f in "$setups"/*; do
		case ${f##*/} in list) continue ;; esac
		if ! grep -q "[[:space:]]${f##*/}\$" "$setups/list"; then
			n=$((n + 1))
			failed=$((failed + 1))
			echo "not ok $n - setups/${f##*/}: no line of setups/list names it (stale)"
		fi
	done
	while read -r _pat _script; do
		case $_pat in '' | '#'*) continue ;; esac
		_used=
		for f in "$dir"/*.args; do
			_c=${f##*/}
			_c=${_c%.args}
			# shellcheck disable=SC2254 # the pattern is meant to match
			case $_c in $_pat) [ -f "$dir/$_c.setup" ] || _used=1 ;; esac
		done
		if [ -z "$_used" ] || [ ! -f "$setups/$_script" ]; then
			n=$((n + 1))
			failed=$((failed + 1))
			echo "not ok $n - setups/list: '$_pat $_script' serves no case (stale) or names no script"
		fi
	done <"$setups/list"
fi

if [ "$n" -eq 0 ]; then
	echo "1..0 # SKIP no cases in $dir"
	exit 0
fi
echo "1..$n"
[ "$failed" -eq 0 ]
