#!/usr/bin/python3
"""A scripted fake TUI agent for the poll-pty channel's tests (docs/event-stream.md).

It insists on a terminal (exit 9 without one), asks it for the cursor position
(exit 5 when no answer comes: a real terminal answers), turns bracketed paste
on, and draws like an ink TUI: the transcript scrolls, an input box and a
footer are redrawn below it.

    ready footer:    "? for shortcuts"
    working footer:  "esc to interrupt"
    done line:       "* Cooked for 1s"

What it does with a prompt depends on its words:
    write NAME   write NAME ("hello from the fake TUI"), say "Done: I wrote NAME."
    ask          first ask "Do you want to create NAME?" (1/Enter: yes, 2/Esc: no)
    long         answer with 60 numbered lines (more than a screen)
    hang         stay "working" forever, the screen still
    spin         never settle: the screen changes every 100 ms, no working footer
    crash        print a line and exit 3
Typing /exit leaves with 0.

Options: --no-ready never draws the input box (a TUI stuck before its prompt);
--log FILE appends what it was given (the prompt as typed, the terminal size,
TERM, whether it is the session leader with a controlling terminal); a FILE
beginning with ~/ is in its HOME (a sandboxed agent can write there only)."""
import os
import re
import select
import sys
import termios
import time
import tty

LOG = None


def log(msg):
    if LOG:
        try:
            with open(LOG, "a") as f:
                f.write(msg + "\n")
        except OSError:
            pass  # sandboxed where the log is not writable: the tests that read it fail


def w(s):
    os.write(1, s.encode())


def read_some(timeout):
    r, _, _ = select.select([0], [], [], timeout)
    if not r:
        return b""
    b = os.read(0, 4096)
    if not b:
        sys.exit(0)
    return b


class Tui:
    def __init__(self):
        self.rows, self.cols = os.get_terminal_size(0)
        self.box = False
        self.input = ""

    def area(self, footer):
        rule = "-" * min(self.cols, 60)
        return "%s\r\n> %s\r\n%s\r\n  %s" % (rule, self.input, rule, footer)

    def draw(self, footer):
        if self.box:
            w("\r\x1b[3A\x1b[J")
        w(self.area(footer))
        self.box = True

    def say(self, lines, footer):
        if self.box:
            w("\r\x1b[3A\x1b[J")
        for ln in lines:
            w(ln + "\r\n")
        self.box = False
        self.draw(footer)


READY = "? for shortcuts"
WORKING = "* Thinking... (esc to interrupt)"


def main():
    global LOG
    args = sys.argv[1:]
    no_ready = "--no-ready" in args
    if "--log" in args:
        LOG = os.path.expanduser(args[args.index("--log") + 1])
    if not os.isatty(0) or not os.isatty(1):
        sys.stderr.write("fake-tui: not a terminal\n")
        return 9
    try:
        ctty = os.open("/dev/tty", os.O_RDWR)
        os.close(ctty)
        has_ctty = True
    except OSError:
        has_ctty = False
    log("size %dx%d TERM=%s leader=%s ctty=%s" % (
        os.get_terminal_size(0).lines, os.get_terminal_size(0).columns,
        os.environ.get("TERM", ""), os.getsid(0) == os.getpid(), has_ctty))
    tty.setraw(0)
    # a real terminal answers a cursor position report
    w("\x1b[6n")
    buf = b""
    deadline = time.time() + 5
    while b"R" not in buf and time.time() < deadline:
        buf += read_some(0.2)
    if not re.search(rb"\x1b\[\d+;\d+R", buf):
        w("fake-tui: the terminal did not answer\r\n")
        return 5
    w("\x1b[?2004h")
    w("\x1b[2J\x1b[H")
    t = Tui()
    if no_ready:
        # never a ready screen, not even for a moment (a slow driver would
        # catch it): the header, then "loading..." for ever
        w("Fake TUI 1.0 (%dx%d)\r\n  loading..." % (t.rows, t.cols))
        while True:
            read_some(1)
    t.say(["Fake TUI 1.0 (%dx%d)" % (t.rows, t.cols), ""], READY)
    pending = b""
    while True:
        pending += read_some(1)
        pending = pending.replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b"")
        while b"\r" in pending:
            line, pending = pending.split(b"\r", 1)
            text = line.decode("utf-8", "replace")
            log("prompt " + repr(text))
            t.input = ""
            if text.strip() == "/exit":
                t.say(["bye"], READY)
                w("\r\n")
                return 0
            act(t, text)
        t.input = pending.decode("utf-8", "replace")
        t.draw(READY)


def act(t, text):
    t.say(["> " + text, ""], WORKING)
    if "crash" in text:
        t.say(["* Crashing now"], WORKING)
        time.sleep(0.2)
        sys.exit(3)
    if "hang" in text:
        while True:
            read_some(1)
    if "spin" in text:
        n = 0
        while True:
            n += 1
            t.draw("%s spinning %d" % ("|/-\\"[n % 4], n))
            read_some(0.1)
    time.sleep(0.5)
    m = re.search(r"write (\S+)", text)
    name = m.group(1) if m else "hello.txt"
    if "ask" in text:
        t.say(["* Write(%s)" % name], "Do you want to create %s?  1. Yes  2. No" % name)
        while True:
            k = read_some(10)
            if k in (b"1", b"\r"):
                break
            if k in (b"2", b"\x1b", b"n"):
                log("denied")
                t.say(["* Permission denied; nothing written.", "* Cooked for 1s"], READY)
                return
    if "long" in text:
        t.say(["line %d of the answer" % i for i in range(1, 61)] + ["* Cooked for 1s"], READY)
        return
    with open(name, "w") as f:
        f.write("hello from the fake TUI\n")
    t.say(["* Write(%s)" % name, "  Wrote 1 line to %s" % name, "",
           "* Done: I wrote %s." % name, "* Cooked for 1s"], READY)


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        try:
            termios.tcsetattr(0, termios.TCSANOW, termios.tcgetattr(0))
        except termios.error:
            pass
