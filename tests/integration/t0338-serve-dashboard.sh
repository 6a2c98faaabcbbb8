#!/bin/sh
# Issue #22: the dashboard in a real browser. Debian's headless Chromium,
# driven over WebDriver by tests/helpers/dashboard-check.py, opens the page
# of `bernstein serve` on a phone-sized window while a run of mock tasks
# goes: the board shows the tasks move to done, the drawer of a hanging
# task shows its live events and its cancel button cancels it, and the
# audit pill says intact. The screenshots stay in
# BUILDDIR/test-artifacts/t0338/. The page's own files fetch nothing from
# elsewhere. Skipped (with the reason) only where Chromium or its driver is
# not installed.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0338 serve: the dashboard in headless Chromium"

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
	echo "1..0 # SKIP Debian's chromium and chromium-driver are not installed (scripts/install-deps.sh installs them)"
	exit 0
fi

. "$SRCDIR/tests/integration/repo-lib.sh"
ART=${BUILDDIR:-$T}/test-artifacts/t0338
rm -rf "$ART"
mkdir -p "$ART"

repo_init
cat >"$W/bernstein.yaml" <<'EOF'
adapter: mock
parallel: 4
kill_grace: 1
EOF
cat >"$W/plan.yaml" <<'EOF'
name: dashboard
tasks:
  - id: alpha
    title: write alpha
    prompt: |
      say alpha starts
      sleep 5
      write alpha.txt alpha
      usage 1200 300
      say alpha wrote alpha.txt
  - id: beta
    title: write beta
    prompt: |
      say beta starts
      sleep 5.5
      write beta.txt beta
      usage 800 200
  - id: gamma
    title: write gamma after alpha
    depends_on: [alpha]
    prompt: |
      sleep 1
      write gamma.txt gamma
  - id: hanger
    title: wait to be cancelled
    prompt: |
      say waiting-for-cancel
      hang
EOF
commit_base

serve_bg "$SERVE" --listen 127.0.0.1:0
check "the server is up" serve_wait

# the page first, then the run: the board must pick the run up by itself
env HOME="$T/home" /usr/bin/python3 "$SRCDIR/tests/helpers/dashboard-check.py" "$URL" "$TOKEN" "$ART" \
	"$T/chromium-profile" alpha,beta,gamma hanger "$T/ready" >"$T/stdout" 2>"$T/stderr" &
CHECKPID=$!
check "the page is open" wait_until '[ -e "$T/ready" ] || ! kill -0 $CHECKPID 2>/dev/null'
bg run plan.yaml
wait "$CHECKPID"
RC=$?
while IFS= read -r line; do
	case $line in
	ok\ *) ok "${line#ok }" ;;
	FAIL\ *) not_ok "${line#FAIL }" ;;
	esac
done <"$T/stdout"
check "the browser check ran to its end" test "$RC" -eq 0 -a "$(grep -c '^ok ' "$T/stdout")" -ge 10
[ "$RC" -eq 0 ] || diag "$(tail -n 5 "$T/stderr")"
for png in 0-no-runs 1-board-running 2-board-done 3-drawer 4-cancelled; do
	check "screenshot $png.png kept (a PNG)" \
		sh -c "[ \"\$(head -c 8 '$ART/$png.png' | od -An -tx1 | tr -d ' ')\" = 89504e470d0a1a0a ]"
done
wait "$BGPID"
RUNRC=$?
BGPID=
check "the run ends: exit 1 (the cancelled task)" test "$RUNRC" -eq 1
check "hanger is cancelled in state.db" sh -c "cd '$W' && '$BERNSTEIN' status --json | grep -q '\"state\": \"cancelled\"'"
check "the page's files fetch nothing from elsewhere" \
	sh -c "! grep -E -n '(https?:)?//[a-z0-9.-]+\\.[a-z]{2,}/' '$SRCDIR'/src/cli/dashboard/*"
curl -sS -D "$T/h" -o /dev/null "$URL/"
check "the page is served with a Content-Security-Policy of its own origin" \
	grep -qi "^content-security-policy: default-src 'self'" "$T/h"
kill "$SVPID"
wait "$SVPID"
SVPID=
test_done
