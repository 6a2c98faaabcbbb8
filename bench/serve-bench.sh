#!/bin/sh
# The HTTP API under load (issue #22): status requests per second that
# `bernstein serve` answers while a 64-agent mock run goes, and what that
# load does to the run. Two runs of the same plan, one after the other, each
# 64 mock tasks 64 wide (each sleeps SERVE_BENCH_SLEEP seconds, default 2,
# writes a file and reports usage):
#   quiet:  the server up, nobody asking;
#   loaded: 4 clients (keep-alive connections) asking GET /api/runs/RUN
#           (the run and its 64 tasks from state.db), together
#           SERVE_BENCH_RATE requests a second (default 200, each client
#           on its own schedule; a late answer is not made up for), for as
#           long as the run lasts.
# Prints the rate the server kept up (target: the asked 200/s), the
# answers' median and 99th percentile, and both runs' wall times with their
# ratio; it does not assert.
#
# usage: bench/serve-bench.sh [BUILD_DIR]     (SERVE_BENCH_SLEEP=S SERVE_BENCH_RATE=N)
set -u

build=${1:-build}
sleep_s=${SERVE_BENCH_SLEEP:-2}
rate=${SERVE_BENCH_RATE:-200}
bin=$(cd "$build" && pwd)/bernstein
serve=$(cd "$build" && pwd)/bernstein-serve
[ -x "$bin" ] && [ -x "$serve" ] || { echo "serve-bench: no $build/bernstein or bernstein-serve (make build first)" >&2; exit 4; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/bernstein-serve-bench.XXXXXX") || exit 4
svpid=
trap '[ -n "$svpid" ] && kill "$svpid" 2>/dev/null; rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
w=$dir/repo
git -C "$dir" init -q -b main repo >/dev/null
printf '.bernstein/\n' >"$w/.gitignore"
printf 'adapter: mock\nparallel: 64\n' >"$w/bernstein.yaml"
{
	echo "name: serve-bench"
	echo "tasks:"
	i=1
	while [ "$i" -le 64 ]; do
		printf '  - title: t%s\n    prompt: |\n      sleep %s\n      write t%s.txt %s\n      usage 100 10\n' \
			"$i" "$sleep_s" "$i" "$i"
		i=$((i + 1))
	done
} >"$w/plan.yaml"
git -C "$w" add -A >/dev/null
git -C "$w" -c user.name=b -c user.email=b@example.invalid commit -q -m base

export BERNSTEIN_AUDIT_KEY_PATH="$dir/audit.key"
(cd "$w" && exec "$serve" --listen 127.0.0.1:0) >"$dir/serve.out" 2>"$dir/serve.err" &
svpid=$!
i=0
while ! grep -q '^bernstein serve: http' "$dir/serve.out" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -gt 200 ] && { echo "serve-bench: the server did not start: $(cat "$dir/serve.err")" >&2; exit 4; }
	sleep 0.05
done
url=$(sed -n 's#^bernstein serve: \(http://127.0.0.1:[0-9]*\)/\#token=.*#\1#p' "$dir/serve.out")
token=$(cat "$w/.bernstein/serve.token")

now_ms() { date +%s%3N; }

# one run of the plan; $1: quiet or loaded. Prints its wall time in ms.
one_run() {
	git -C "$w" reset -q --hard "$(git -C "$w" rev-list --max-parents=0 HEAD)"
	t0=$(now_ms)
	(cd "$w" && exec "$bin" run plan.yaml) >"$dir/run-$1.out" 2>&1 &
	runpid=$!
	if [ "$1" = loaded ]; then
		/usr/bin/python3 - "$url" "$token" "$runpid" "$rate" >"$dir/load.out" <<'EOF'
import http.client, json, os, sys, threading, time
url, token, runpid, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
host, port = url.split('//')[1].split(':')
hdr = {'Authorization': 'Bearer ' + token}
def alive():
    try:
        os.kill(runpid, 0)
        return True
    except OSError:
        return False
def get(c, path):
    c.request('GET', path, headers=hdr)
    r = c.getresponse()
    return r.status, r.read()
c = http.client.HTTPConnection(host, int(port), timeout=30)
run = None
deadline = time.monotonic() + 30
while run is None and time.monotonic() < deadline:
    st, body = get(c, '/api/runs')
    runs = json.loads(body)['runs']
    if runs and runs[0]['state'] == 'running':
        run = runs[0]['id']
    else:
        time.sleep(0.02)
counts = [0, 0, 0, 0]
errors = [0]
lat = []
stop = time.monotonic() + 600
def client(k):
    cc = http.client.HTTPConnection(host, int(port), timeout=30)
    period = 4 / rate
    nxt = time.monotonic() + k * period / 4
    while alive() and time.monotonic() < stop:
        now = time.monotonic()
        if now < nxt:
            time.sleep(nxt - now)
        nxt = max(nxt + period, time.monotonic() - period)
        a = time.monotonic()
        st, _ = get(cc, f'/api/runs/{run}')
        lat.append(time.monotonic() - a)
        if st == 200:
            counts[k] += 1
        else:
            errors[0] += 1
t0 = time.monotonic()
ts = [threading.Thread(target=client, args=(k,)) for k in range(4)]
for t in ts: t.start()
for t in ts: t.join()
dt = time.monotonic() - t0
lat.sort()
p50 = lat[len(lat) // 2] * 1000 if lat else 0
p99 = lat[min(len(lat) - 1, len(lat) * 99 // 100)] * 1000 if lat else 0
print(f'{sum(counts)} {dt:.3f} {errors[0]} {p50:.2f} {p99:.2f}')
EOF
	fi
	wait "$runpid"
	rc=$?
	t1=$(now_ms)
	[ "$rc" -eq 0 ] || echo "serve-bench: the $1 run exited $rc (see $dir/run-$1.out)" >&2
	echo $((t1 - t0))
}

quiet=$(one_run quiet)
loaded=$(one_run loaded)
read -r n secs errs p50 p99 <"$dir/load.out"
awk -v n="$n" -v s="$secs" -v e="$errs" -v q="$quiet" -v l="$loaded" -v r="$rate" -v p50="$p50" -v p99="$p99" 'BEGIN {
	printf "serve: %d status requests in %.1f s: %.0f/s answered of %d/s asked, %d not 200, median %.1f ms, p99 %.1f ms, during a 64-agent mock run\n", n, s, n / s, r, e, p50, p99
	printf "serve: the run took %d ms quiet, %d ms under that load: ratio %.2f (per task %+.1f ms)\n", q, l, l / q, (l - q) / 64
}'
