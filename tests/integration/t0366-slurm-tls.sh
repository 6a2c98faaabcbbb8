#!/bin/sh
# Issue #23: TLS on the Slurm executor's event connection, on the real
# two-node cluster (tests/integration/slurm-lib.sh).
#  1. tcpdump on both veth links while a plan runs whose agents get a canary
#     key: the canary never appears in the bytes on the wire (the capture
#     does see the plaintext git:// traffic beside it, so it captured).
#  2. a job held in Slurm's queue (sbatch --hold), its relay waiting: with
#     the token and the fingerprint read from Slurm's own copy of the batch
#     script (what a reader of Slurm's state has), a plaintext client gets
#     nothing; agent-exec given another fingerprint refuses the host with a
#     clear error before sending anything; a malformed fingerprint is a
#     usage error; a truncated handshake is dropped. The relay says each in
#     agent.log, and once released the job still gets its invocation (none
#     of them consumed it): the task is merged once.
#  3. a job whose script pins another certificate (slurm.bernstein, a
#     wrapper, changes its fingerprint: what a job dialling an impersonator
#     sees): the job refuses the relay, the attempt fails, nothing merged.
. "$SRCDIR/tests/integration/lib.sh"
. "$SRCDIR/tests/integration/slurm-lib.sh"

test_begin "t0366 executor: slurm: TLS on the event connection"

slurm_test_setup bernstein
if ! command -v tcpdump >/dev/null 2>&1 && [ ! -x /usr/bin/tcpdump ] && [ ! -x /usr/sbin/tcpdump ]; then
	echo "1..0 # SKIP tcpdump is missing (scripts/install-deps.sh --test installs it)"
	exit 0
fi
TCPDUMP=$(command -v tcpdump || echo /usr/bin/tcpdump)
DUMPS=

CANARY=sk-canary-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
CANARY_SHA=$(printf %s "$CANARY" | sha256sum | cut -c1-64)
git_q() { git -C "$W" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }
cat >"$W/plan.yaml" <<'EOF'
name: tls
tasks:
  - title: s1
    adapter: shell
    prompt: 'printf %s "$CANARY_API_KEY" | sha256sum | cut -c1-64 > canary-s1.txt; echo "key $CANARY_API_KEY" >&2'
  - title: s2
    adapter: shell
    prompt: 'printf %s "$CANARY_API_KEY" | sha256sum | cut -c1-64 > canary-s2.txt'
EOF
cat >"$W/held.yaml" <<'EOF'
name: held
tasks:
  - title: held
    adapter: shell
    prompt: 'echo held > held.txt'
EOF
git_q add -A
git_q commit -q -m base
BASE=$(git -C "$W" rev-parse HEAD)

_tls_cleanup()
{
	for p in $DUMPS; do kill "$p" 2>/dev/null; done
	_slurm_test_cleanup
}
trap _tls_cleanup EXIT

# ---- 1. the wire ----
for n in 1 2; do
	"$TCPDUMP" -i "vbsl$n" --immediate-mode -U -s 0 -w "$T/link$n.pcap" tcp or udp \
		>/dev/null 2>"$T/tcpdump$n.err" &
	DUMPS="$DUMPS $!"
done
check "tcpdump listens on both links" \
	wait_until 'grep -q "listening on" "$T/tcpdump1.err" && grep -q "listening on" "$T/tcpdump2.err"'
sleep 0.3
run BERNSTEIN_TEST_PASS_ENV=CANARY_API_KEY CANARY_API_KEY="$CANARY" SLURM_CONF="$SLURM_CONF" \
	"$BERNSTEIN" run plan.yaml
if [ "$RC" = 0 ]; then ok "the run exits 0"; else
	not_ok "the run exits 0 (got $RC)"
	_diag_file stderr "$T/stderr"
	for f in "$W"/.bernstein/runs/*/*/1/agent.log; do _diag_file "$f" "$f"; done
fi
# everything up to a marker sent last is in the capture before it stops
# (tcpdump drops what it has not written yet when killed)
MARK=bsl-capture-end-$$
for n in 1 2; do
	python3 -c 'import socket, sys; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(sys.argv[1].encode(), (sys.argv[2], 9))' \
		"$MARK" "10.215.$n.2"
done
check "the capture of both links is complete (the marker sent last is in it)" \
	wait_until "grep -a -q '$MARK' '$T/link1.pcap' && grep -a -q '$MARK' '$T/link2.pcap'"
for p in $DUMPS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
DUMPS=
for f in s1 s2; do
	check "the agent of $f on a node got the canary (its hash merged)" \
		test "$(git -C "$W" show "main:canary-$f.txt" 2>/dev/null)" = "$CANARY_SHA"
done
check "the agent's stderr line with the canary came back (redacted or not, it crossed)" \
	sh -c "cat '$W'/.bernstein/runs/*/s1-*/1/agent.log | grep -q '^key '"
if cat "$T"/link1.pcap "$T"/link2.pcap | grep -a -q -e 'git-upload-pack /hub.git' \
	-e 'git-receive-pack /hub.git'; then
	ok "the capture saw the nodes' plaintext git:// traffic (it captured)"
else
	not_ok "the capture saw the nodes' plaintext git:// traffic (it captured)"
	for n in 1 2; do
		"$TCPDUMP" -nn -r "$T/link$n.pcap" >"$T/dump$n.txt" 2>&1
		_diag_file "link$n" "$T/dump$n.txt"
		_diag_file "tcpdump$n" "$T/tcpdump$n.err"
	done
fi
check "the canary key is nowhere in the bytes on either link" \
	sh -c "! cat '$T'/link1.pcap '$T'/link2.pcap | grep -a -q -F '$CANARY'"
check "nor is the agent's environment (its variable's name) on the wire" \
	sh -c "! cat '$T'/link1.pcap '$T'/link2.pcap | grep -a -q 'CANARY_API_KEY'"

# ---- 2. a held job: who else may talk to its relay ----
printf '  sbatch: [--hold]\n' >>"$W/bernstein.yaml"
git_q commit -q -a -m "hold the jobs"
slurm_bg run held.yaml
if wait_until 'test -s "$(ls "$W"/.bernstein/runs/*/held-*/slurm-job 2>/dev/null | head -n 1)"'; then
	ok "the held task's job is submitted and recorded"
else
	not_ok "the held task's job is submitted and recorded"
	_diag_file stderr "$T/bg.err"
	_diag_file stdout "$T/bg.out"
	test_done
fi
JOBF=$(ls "$W"/.bernstein/runs/*/held-*/slurm-job | head -n 1)
JOB=$(cut -d' ' -f1 "$JOBF")
LOG=$(dirname "$JOBF")/1/agent.log
check "its TLS key is kept beside the job file, 0600" \
	test "$(stat -c %a "$JOBF.tls" 2>/dev/null)" = 600
SCRIPT=$(ls "$T"/cluster/state/hash.*/job."$JOB"/script 2>/dev/null | head -n 1)
check "Slurm keeps the batch script (what a reader of its state has)" test -n "$SCRIPT"
TOKEN=$(sed -n "s/.*BERNSTEIN_EXEC_TOKEN='\([0-9a-f]*\)'.*/\1/p" "$SCRIPT")
FP=$(sed -n "s/.*BERNSTEIN_EXEC_FINGERPRINT='\([0-9a-f]*\)'.*/\1/p" "$SCRIPT")
ADDR=$(sed -n "s/.*BERNSTEIN_EXEC_CONNECT='\([0-9.:]*\)'.*/\1/p" "$SCRIPT")
check "the script names the relay, the token and a SHA-256 fingerprint" \
	sh -c "[ ${#TOKEN} = 64 ] && [ ${#FP} = 64 ] && [ -n '$ADDR' ]"
check "the fingerprint is the kept certificate's" \
	sh -c "openssl x509 -in '$JOBF.tls' -outform DER | sha256sum | grep -q '^$FP '"

# a plaintext client with the right token
python3 - "$ADDR" "$TOKEN" "$T/plain.got" <<'EOF'
import socket, sys
host, port = sys.argv[1].rsplit(':', 1)
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(b'{"token": "%s", "node": "evil"}\n' % sys.argv[2].encode())
s.settimeout(3)
got = b''
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
except OSError:
    pass
open(sys.argv[3], 'wb').write(got)
EOF
check "a plaintext client with the token gets no invocation" \
	sh -c "! grep -a -q -e invocation -e argv '$T/plain.got'"
check "(at most a TLS alert: fewer than 16 bytes)" test "$(wc -c <"$T/plain.got")" -lt 16

# agent-exec given another fingerprint: it refuses this host
WRONG=$(printf 'another certificate' | sha256sum | cut -c1-64)
expect_exit 4 env BERNSTEIN_EXEC_CONNECT="$ADDR" BERNSTEIN_EXEC_TOKEN="$TOKEN" \
	BERNSTEIN_EXEC_FINGERPRINT="$WRONG" "$BERNSTEIN" agent-exec
expect_stderr_contains "is not the one this job was given" "it says the certificate is not the pinned one"
expect_stderr_contains "nothing sent" "and that it sent nothing"

# a malformed fingerprint
expect_exit 2 env BERNSTEIN_EXEC_CONNECT="$ADDR" BERNSTEIN_EXEC_TOKEN="$TOKEN" \
	BERNSTEIN_EXEC_FINGERPRINT="${FP%??}zz" "$BERNSTEIN" agent-exec
expect_stderr_contains "non-hex character at 63" "named by its position"
expect_exit 2 env BERNSTEIN_EXEC_CONNECT="$ADDR" BERNSTEIN_EXEC_TOKEN="$TOKEN" \
	BERNSTEIN_EXEC_FINGERPRINT="$FP:" "$BERNSTEIN" agent-exec
expect_stderr_contains "65 characters, not 64 hex digits" "the length named"

# a truncated handshake (a ClientHello's first bytes, then the end)
python3 - "$ADDR" <<'EOF'
import socket, sys
host, port = sys.argv[1].rsplit(':', 1)
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(bytes.fromhex('1603010200010001fc0303'))
s.close()
EOF
sleep 0.5
check "the relay is still waiting for its job" kill -0 "$BGPID"

scontrol release "$JOB" >/dev/null 2>&1
check "released, the job gets its invocation: the run ends" \
	wait_until '! kill -0 "$BGPID" 2>/dev/null'
wait "$BGPID"
BRC=$?
BGPID=
if [ "$BRC" = 0 ]; then ok "the held run exits 0"; else
	not_ok "the held run exits 0 (got $BRC)"
	_diag_file stderr "$T/bg.err"
	_diag_file agent.log "$LOG"
	ls -la "$(dirname "$JOBF")" "$(dirname "$JOBF")/1" >"$T/ls.out" 2>&1
	_diag_file ls "$T/ls.out"
fi
# agent.log is complete once the attempt ended
check "the relay said it refused the plaintext client and the truncated handshake" \
	test "$(grep -c 'refused a connection without a TLS handshake' "$LOG")" = 2
check "the relay said a job refused its certificate (the other fingerprint)" \
	grep -q "a job refused this host's TLS certificate" "$LOG"
check "the held task is merged once" \
	test "$(git -C "$W" log --format=%s "$BASE..main" -- held.txt | wc -l)" -ge 1
check "its job file and TLS key are gone" sh -c "[ ! -e '$JOBF' ] && [ ! -e '$JOBF.tls' ]"

# ---- 3. a job pinned to another certificate: the attempt fails ----
# the binary on the nodes (slurm.bernstein) is a wrapper that gives
# agent-exec another fingerprint, as a job dialling an impersonator would see
WRONG2=$(printf 'an impersonator' | sha256sum | cut -c1-64)
printf '#!/bin/sh\nBERNSTEIN_EXEC_FINGERPRINT=%s exec %s "$@"\n' "$WRONG2" "$BERNSTEIN" >"$T/wrap.sh"
chmod 755 "$T/wrap.sh"
sed -i '/sbatch: \[--hold\]/d' "$W/bernstein.yaml"
printf '  bernstein: %s\n' "$T/wrap.sh" >>"$W/bernstein.yaml"
cat >"$W/pinned.yaml" <<'EOF'
name: pinned
tasks:
  - title: pinned
    adapter: shell
    prompt: 'echo pinned > pinned.txt'
EOF
git_q add -A
git_q commit -q -m "another pin"
run BERNSTEIN_TEST_PASS_ENV=CANARY_API_KEY CANARY_API_KEY="$CANARY" SLURM_CONF="$SLURM_CONF" \
	"$BERNSTEIN" run pinned.yaml
check "the run fails (its only task failed)" test "$RC" != 0
PLOG=$(ls "$W"/.bernstein/runs/*/pinned-*/1/agent.log 2>/dev/null | head -n 1)
check "the relay says the job refused its certificate" \
	grep -q "a job refused this host's TLS certificate" "$PLOG"
check "and that the job ended before its agent connected (the attempt failed)" \
	grep -q "before its agent connected" "$PLOG"
check "the task is not merged" sh -c "! git -C '$W' show main:pinned.txt >/dev/null 2>&1"
check "the canary is nowhere in Slurm's state, spool or logs" \
	sh -c "! grep -r -a -q -F '$CANARY' '$T/cluster'"
check "no job is left in the queue" sh -c "[ -z \"\$(SLURM_CONF='$SLURM_CONF' squeue -h)\" ]"
test_done
