#!/bin/sh
# `bernstein shim --init` (issue #26: a poll-pty agent in the container
# tier): the shim is the init of a PID namespace (pid 1, as in a container)
# and the leader of the session whose controlling terminal is the pty (as an
# OCI runtime makes the container's console), and the program runs as its
# child. Driven through that pty by tests/helpers/pty-drive.py:
#   - the program sees a terminal: isatty, the size set on the pty, its own
#     session (it is the leader) with the pty as its controlling terminal
#     (/dev/tty opens), in the foreground;
#   - Ctrl-C typed on the pty (cooked mode) is a SIGINT for the program;
#     a resize of the pty a SIGWINCH with the new size;
#   - SIGTERM to the init (what a runtime forwards) reaches the program,
#     whose default action ends it: the init exits 143 (128+15);
#   - the master closed: the hangup's SIGHUP ends the program (default
#     action); the init exits 129;
#   - without --init the program as pid 1 ignores SIGTERM (why --init
#     exists): it runs on until killed.
# Needs root (a PID namespace); skipped otherwise.
. "$SRCDIR/tests/integration/lib.sh"

test_begin "t0355 shim --init: a program behind a container's init keeps its terminal and signals"

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP a PID namespace needs root here"
	exit 0
fi
DRIVE=$SRCDIR/tests/helpers/pty-drive.py
PROBE=$T/probe.py
cat >"$PROBE" <<'EOF'
import fcntl, os, signal, struct, sys, termios, time
def say(s):
    os.write(1, (s + "\r\n").encode())
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    ctty = True
except OSError:
    ctty = False
rows, cols = struct.unpack("hhhh", fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8))[:2]
say("PROBE tty=%s ctty=%s leader=%s fg=%s size=%dx%d pid1=%s" % (
    os.isatty(0), ctty, os.getsid(0) == os.getpid(), os.tcgetpgrp(0) == os.getpgrp(),
    rows, cols, os.getpid() == 1))
if sys.argv[1] == "signals":
    got = []
    signal.signal(signal.SIGINT, lambda *a: got.append("INT"))
    signal.signal(signal.SIGWINCH, lambda *a: got.append("WINCH %dx%d" % struct.unpack(
        "hhhh", fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8))[:2]))
say("READY")
end = time.time() + 20
while time.time() < end:
    time.sleep(0.05)
    if sys.argv[1] == "signals":
        while got:
            say("GOT " + got.pop(0))
say("TIMEOUT")
EOF

# drive MODE [--no-init]: the probe behind the shim in a new PID namespace
drive()
{
	_mode=$1
	shift
	run python3 "$DRIVE" "$_mode" "$@" -- "$BERNSTEIN" shim --init -- /usr/bin/python3 "$PROBE" "$_mode"
}

drive signals
check "the program: a terminal of the pty's size, its session's leader, the pty its controlling terminal, in the foreground" \
	grep -q 'PROBE tty=True ctty=True leader=True fg=True size=30x100 pid1=False' "$T/stdout"
check "Ctrl-C on the pty: a SIGINT for the program" grep -q 'GOT INT' "$T/stdout"
check "a resize of the pty: a SIGWINCH with the new size" grep -q 'GOT WINCH 40x120' "$T/stdout"
check "the program ran on after them (handled)" grep -q 'exit 143' "$T/stdout"

drive term
check "SIGTERM to the init reaches the program, which it ends: the init exits 143" \
	grep -q 'exit 143' "$T/stdout"
check "SIGTERM: not by a timeout" sh -c "! grep -q TIMEOUT '$T/stdout'"

drive hangup
check "the master closed: the hangup ends the program, the init exits 129" grep -q 'exit 129' "$T/stdout"

# without --init the program is pid 1, where SIGTERM without a handler is dropped
run python3 "$DRIVE" term --kill-after 1 -- /usr/bin/python3 "$PROBE" term
check "without --init: the program is pid 1 and SIGTERM does not end it" \
	sh -c "grep -q 'pid1=True' '$T/stdout' && grep -q 'exit killed' '$T/stdout'"

test_done
