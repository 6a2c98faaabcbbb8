#!/usr/bin/python3
"""Run a command as a container's init would be run, on a pty, and poke it
(tests/integration/t0355-shim-init-tty.sh).

    pty-drive.py MODE [--kill-after S] -- COMMAND [ARG...]

COMMAND runs as pid 1 of a new PID namespace (needs root), the leader of a
new session whose controlling terminal is a fresh pty of 30x100 rows and
columns: what an OCI runtime makes of a container with process.terminal.
Once it printed READY:
    signals  types Ctrl-C (the pty in cooked mode), resizes the pty to
             40x120, then sends SIGTERM to COMMAND
    term     sends SIGTERM to COMMAND
    hangup   closes the master
Everything COMMAND wrote is printed, then "exit N" (its exit status),
"exit signal N", or "exit killed" when it was still running --kill-after S
seconds (default 10) after the poke and was killed with SIGKILL."""
import ctypes
import fcntl
import os
import select
import signal
import struct
import sys
import termios
import time

CLONE_NEWPID = 0x20000000


def main():
    args = sys.argv[1:]
    mode = args.pop(0)
    kill_after = 10.0
    if args[0] == "--kill-after":
        kill_after = float(args[1])
        args = args[2:]
    assert args.pop(0) == "--"
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("hhhh", 30, 100, 0, 0))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWPID) != 0:
        print("unshare: %s" % os.strerror(ctypes.get_errno()))
        return 2
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            if slave > 2:
                os.close(slave)
            os.execv(args[0], args)
        finally:
            os._exit(127)
    os.close(slave)
    out = b""

    def pump(until, want=None):
        nonlocal out
        while time.time() < until:
            if want and want in out:
                return True
            r, _, _ = select.select([master], [], [], 0.05)
            if r:
                try:
                    b = os.read(master, 4096)
                except OSError:
                    return False
                if not b:
                    return False
                out += b
        return want is None or want in out

    pump(time.time() + 10, b"READY")
    if mode == "signals":
        os.write(master, b"\x03")
        pump(time.time() + 5, b"GOT INT")
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("hhhh", 40, 120, 0, 0))
        pump(time.time() + 5, b"GOT WINCH")
        os.kill(pid, signal.SIGTERM)
    elif mode == "term":
        os.kill(pid, signal.SIGTERM)
    elif mode == "hangup":
        os.close(master)
        master = -1
    end = time.time() + kill_after
    status = None
    while time.time() < end:
        if master >= 0:
            pump(time.time() + 0.05)
        else:
            time.sleep(0.05)
        p, st = os.waitpid(pid, os.WNOHANG)
        if p == pid:
            status = st
            break
    if master >= 0:
        pump(time.time() + 0.2)
    sys.stdout.write(out.decode("utf-8", "replace").replace("\r", ""))
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print("exit killed")
    elif os.WIFEXITED(status):
        print("exit %d" % os.WEXITSTATUS(status))
    else:
        print("exit signal %d" % os.WTERMSIG(status))
    return 0


if __name__ == "__main__":
    sys.exit(main())
