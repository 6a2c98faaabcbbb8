#!/bin/sh
# Static checks run by `make lint`: formatting, cppcheck, the layering rule and
# the banned-function greps of STYLE.md §1, §4 and §12.8, and the size and
# complexity of functions (pmccabe, scripts/complexity-allow). Quiet when clean;
# every finding is printed as file:line: message and the exit status is 1.
#
# usage: scripts/lint.sh [BUILD_DIR]
# BUILD_DIR (default: build) is only used to find the generated config.h.
set -u

build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd) || exit 4
cd "$top" || exit 4

for tool in clang-format cppcheck pmccabe python3 git; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "lint: '$tool' not found (scripts/install-deps.sh --lint installs it)" >&2
		exit 4
	fi
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-lint.XXXXXX") || exit 4
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM

status=0

# Every C file git knows or would know about (tracked plus untracked that are
# not ignored), so a new file is checked before it is added.
git ls-files -co --exclude-standard -- '*.c' '*.h' | sort -u >"$scratch/files"
# Files listed by git but deleted from the work tree are not checked.
while IFS= read -r f; do
	[ -f "$f" ] && printf '%s\n' "$f"
done <"$scratch/files" >"$scratch/cfiles"

# 1. Formatting (.clang-format in the repo root).
if [ -s "$scratch/cfiles" ]; then
	# shellcheck disable=SC2046
	if ! tr '\n' '\0' <"$scratch/cfiles" |
		xargs -0 clang-format --dry-run --Werror >"$scratch/fmt" 2>&1; then
		# One line per offending spot, at most 5 per file.
		awk -F: '/: error: code should be clang-formatted/ {
				n[$1]++
				if (n[$1] <= 5) print $1 ":" $2 ":" $3 ": not clang-formatted"
				else if (n[$1] == 6) print $1 ": ... (more)"
				next
			}
			/^[^ ].*: error: / { print }' "$scratch/fmt"
		echo "lint: formatting differs from .clang-format (make fmt fixes it)"
		status=1
	fi
fi

# 2. cppcheck. Suppressions for false positives live in .cppcheck-suppressions,
# each with a comment saying why.
supp=""
[ -f .cppcheck-suppressions ] && supp="--suppressions-list=.cppcheck-suppressions"
incs="-I src"
[ -d "$build" ] && incs="$incs -I $build"
dirs=""
for d in src tests fuzz bench; do
	[ -d "$d" ] && dirs="$dirs $d"
done
# shellcheck disable=SC2086
if ! cppcheck -q --enable=warning,style,performance,portability --std=c11 --inline-suppr \
	--error-exitcode=1 --suppress=missingIncludeSystem $supp $incs -D_GNU_SOURCE \
	--template='{file}:{line}:{column}: cppcheck {severity}: {message} [{id}]' \
	$dirs >"$scratch/cppcheck" 2>&1; then
	cat "$scratch/cppcheck"
	[ -s "$scratch/cppcheck" ] || echo "lint: cppcheck failed"
	status=1
fi

# 3. Source rules. Comments are blanked first (line numbers kept) so prose in
# a comment never counts; string literals are blanked for the call greps but
# kept for the fopen mode check.
python3 - "$scratch/cfiles" <<'EOF' || status=1
import re
import sys

# Which layers each layer may include: scripts/layers.py (shared with
# scripts/check-layers.py, which checks the linked symbols).
sys.path.insert(0, 'scripts')
from layers import ALLOWED  # noqa: E402

BANNED = re.compile(r'\b(strcpy|strcat|strncpy|strncat|sprintf|vsprintf|strtok|atoi|atol|gets|'
                    r'tmpnam|mktemp|system|popen)\s*\(')
PIPE = re.compile(r'\bpipe\s*\(')
OPEN = re.compile(r'\b(open|openat|open64)\s*\(')
OPEN_MODE = re.compile(r'\bO_(RDONLY|WRONLY|RDWR)\b')
FOPEN = re.compile(r'\bfopen\s*\(')
GETENV = re.compile(r'\b(getenv|secure_getenv)\s*\(')
PRINT = re.compile(r'\b(printf|fprintf|vprintf|vfprintf|puts|fputs|putchar|perror|exit)\s*\(')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/')

findings = []


def blank(text, keep_strings):
    """Replace comments (and, unless keep_strings, string/char literal
    contents) with spaces, keeping newlines so line numbers stay right."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            if keep_strings:
                out.append(text[i:j])
            else:
                out.append(c + ' ' * max(0, j - i - 2) + (c if j - i >= 2 else ''))
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def call_args(text, start):
    """The text from the '(' at or after start to its matching ')'."""
    i = text.index('(', start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == '(':
            depth += 1
        elif text[j] == ')':
            depth -= 1
            if depth == 0:
                return text[i:j + 1]
    return text[i:]


def lineno(text, pos):
    return text.count('\n', 0, pos) + 1


def report(path, line, msg):
    findings.append((path, line, msg))


with open(sys.argv[1], encoding='utf-8') as f:
    files = [l.rstrip('\n') for l in f if l.strip()]

for path in files:
    parts = path.split('/')
    top = parts[0]
    in_src = top == 'src'
    # A file directly in src/ (main.c) is the program's front: treat it as cli.
    layer = (parts[1] if len(parts) > 2 else 'cli') if in_src else None
    if top == 'tests':
        continue  # tests may do anything
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            raw = f.read()
    except OSError as e:
        report(path, 0, f'cannot read: {e.strerror}')
        continue
    code = blank(raw, keep_strings=True)
    bare = blank(raw, keep_strings=False)

    # A message is whole on one line, so grep finds it (issue #16): no literal
    # continued on the next line unless it ends in \n (a help text's lines)
    # or in a hex or octal escape the next literal starts like a digit of.
    lines = code.split('\n')
    for no in range(1, len(lines)):
        a, b = lines[no - 1].rstrip(), lines[no].lstrip()
        if (a.endswith('"') and b.startswith('"') and not a.endswith('\\n"')
                and not a.lstrip().startswith('#')
                and not (re.search(r'\\(x[0-9A-Fa-f]+|[0-7]{1,3})"$', a)
                         and re.match(r'"[0-9A-Fa-f]', b))):
            report(path, no, 'a string split across lines: keep the message whole on one '
                   'line (BreakStringLiterals is off)')

    # Layering: src/<layer>/... may include only the layers allowed above.
    if in_src and layer is not None:
        allowed = ALLOWED.get(layer, [])
        if layer not in ALLOWED:
            report(path, 1, f"unknown layer '{layer}' (add it to scripts/lint.sh and STYLE.md)")
        for no, line in enumerate(code.split('\n'), 1):
            m = INCLUDE.match(line)
            if m and allowed is not None and m.group(1) not in allowed:
                report(path, no, f"'{layer}' may not include '{m.group(1)}/...'")

    # Banned calls: src, fuzz and bench (tests are exempt). banned.h itself
    # names every banned function.
    if path != 'src/util/banned.h':
        for m in BANNED.finditer(bare):
            report(path, lineno(bare, m.start()), f"banned function '{m.group(1)}'")
    for m in PIPE.finditer(bare):
        report(path, lineno(bare, m.start()), "'pipe' without O_CLOEXEC: use pipe2(fds, O_CLOEXEC)")
    for m in OPEN.finditer(bare):
        args = call_args(bare, m.start())
        if OPEN_MODE.search(args) and 'O_CLOEXEC' not in args:
            report(path, lineno(bare, m.start()), f"'{m.group(1)}' without O_CLOEXEC")
    for m in FOPEN.finditer(code):
        args = call_args(code, m.start())
        lits = re.findall(r'"((?:[^"\\]|\\.)*)"', args)
        if not lits:
            report(path, lineno(code, m.start()),
                   "'fopen' mode is not a literal (cannot check for 'e')")
        elif 'e' not in lits[-1]:
            report(path, lineno(code, m.start()),
                   f"'fopen' mode \"{lits[-1]}\" lacks 'e' (O_CLOEXEC)")

    # Only cli/ reads the environment, prints or exits (xalloc.c: OOM/BUG).
    if in_src and layer != 'cli':
        for m in GETENV.finditer(bare):
            report(path, lineno(bare, m.start()), f"'{m.group(1)}' outside src/cli/")
        if path != 'src/util/xalloc.c':
            for m in PRINT.finditer(bare):
                report(path, lineno(bare, m.start()), f"'{m.group(1)}' outside src/cli/")

for path, line, msg in sorted(findings, key=lambda f: (f[0], f[1])):
    print(f'{path}:{line}: {msg}')
sys.exit(1 if findings else 0)
EOF

# 4. Function size and complexity (issue #16): no function of src/ over a
# modified McCabe complexity of 30 or 150 lines, except those listed in
# scripts/complexity-allow with today's figures, which may only shrink.
grep '^src/.*\.c$' "$scratch/cfiles" | tr '\n' '\0' | xargs -0 -r pmccabe >"$scratch/pmccabe" 2>/dev/null
python3 - "$scratch/pmccabe" scripts/complexity-allow <<'EOF' || status=1
import re
import sys

MAX_CCN, MAX_LINES = 30, 150
allow = {}
for n, line in enumerate(open(sys.argv[2], encoding='utf-8'), 1):
    line = line.split('#', 1)[0].split()
    if not line:
        continue
    f, fn, ccn, lines = line
    allow[(f, fn)] = (int(ccn), int(lines), n)
bad = 0
seen = set()
for line in open(sys.argv[1], encoding='utf-8'):
    m = re.match(r'(\d+)\t\d+\t\d+\t\d+\t(\d+)\t(.+)\((\d+)\): (\S+)', line)
    if not m:
        continue
    ccn, lines, f, at, fn = int(m[1]), int(m[2]), m[3], m[4], m[5]
    key = (f, fn)
    seen.add(key)
    if key in allow:
        a_ccn, a_lines, n = allow[key]
        if ccn > a_ccn or lines > a_lines:
            print(f'{f}:{at}: {fn}: complexity {ccn}, {lines} lines: grew past '
                  f'scripts/complexity-allow:{n} ({a_ccn}, {a_lines}): split it')
            bad = 1
        elif ccn <= MAX_CCN and lines <= MAX_LINES:
            print(f'{f}:{at}: {fn} is within the limits now: remove '
                  f'scripts/complexity-allow:{n}')
            bad = 1
    elif ccn > MAX_CCN or lines > MAX_LINES:
        print(f'{f}:{at}: {fn}: complexity {ccn}, {lines} lines (limits {MAX_CCN}, '
              f'{MAX_LINES}): split it')
        bad = 1
for key, (_, _, n) in allow.items():
    if key not in seen:
        print(f'scripts/complexity-allow:{n}: {key[1]} is no longer in {key[0]}: remove the line')
        bad = 1
sys.exit(bad)
EOF

exit $status
