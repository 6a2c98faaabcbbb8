#!/usr/bin/python3
"""A scripted ACP agent (Agent Client Protocol over stdio) for bernstein's
tests: fake-acp-agent.py SCENARIO LOG

It answers initialize (loadSession advertised unless the scenario is
'noload'), session/new (session id 'fake-session-1') and session/load, and
on session/prompt plays SCENARIO:

  write      tool_call; permission for TREE/hello.txt; fs/write_text_file of
             it; fs/read_text_file of it; permission for a path outside the
             tree; fs/write_text_file outside the tree; a call of an unknown
             method (terminal/create); a plan; message text; end_turn
  malformed  one line that is not JSON, then waits for stdin's end
  hang       nothing: waits; session/cancel is logged and ignored; SIGTERM
             is logged and ends it
  cancel     waits for session/cancel, then answers stopReason "cancelled"
  fail       answers the prompt with a JSON-RPC error
  noload     as write, without loadSession

Every frame it reads, every answer it gets and every signal is appended to
LOG as one JSON line ({"got": frame} / {"signal": "TERM"}), so a test can
check what bernstein sent. It exits 0 at the end of its stdin.
"""
import json
import os
import signal
import sys

SCENARIO = sys.argv[1]
LOG = sys.argv[2]
TREE = os.getcwd()
OUTSIDE = os.environ.get("FAKE_ACP_OUTSIDE", "/tmp/fake-acp-outside.txt")
next_id = [100]
session = ["fake-session-1"]


def log(obj):
    with open(LOG, "a") as f:
        f.write(json.dumps(obj) + "\n")


def on_term(signum, frame):
    log({"signal": "TERM"})
    sys.exit(143)


signal.signal(signal.SIGTERM, on_term)


def send(obj):
    obj["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        log({"eof": True})
        sys.exit(0)
    msg = json.loads(line)
    log({"got": msg})
    return msg


def call(method, params):
    """A request to the client; returns its answer (other frames are logged)."""
    next_id[0] += 1
    my = next_id[0]
    send({"id": my, "method": method, "params": params})
    while True:
        msg = read()
        if msg.get("id") == my and "method" not in msg:
            return msg


def update(u):
    send({"method": "session/update", "params": {"sessionId": session[0], "update": u}})


def play_write(pid):
    update({"sessionUpdate": "tool_call", "toolCallId": "w1", "title": "WriteFile",
            "kind": "edit", "status": "pending",
            "rawInput": {"file_path": TREE + "/hello.txt"}})
    opts = [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"}]
    call("session/request_permission",
         {"sessionId": session[0], "options": opts,
          "toolCall": {"toolCallId": "w1", "kind": "edit",
                       "locations": [{"path": TREE + "/hello.txt"}]}})
    call("fs/write_text_file", {"sessionId": session[0], "path": TREE + "/hello.txt",
                                "content": "hello from the fake ACP agent\n"})
    call("fs/read_text_file", {"sessionId": session[0], "path": TREE + "/hello.txt"})
    update({"sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "completed",
            "content": [{"type": "content",
                         "content": {"type": "text", "text": "wrote hello.txt"}}]})
    call("session/request_permission",
         {"sessionId": session[0], "options": opts,
          "toolCall": {"toolCallId": "w2", "kind": "edit", "title": "escape",
                       "locations": [{"path": OUTSIDE}]}})
    call("fs/write_text_file", {"sessionId": session[0], "path": OUTSIDE, "content": "x"})
    call("terminal/create", {"sessionId": session[0], "command": "sh"})
    update({"sessionUpdate": "plan", "entries": [
        {"content": "write hello.txt", "priority": "high", "status": "completed"}]})
    update({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Done: I wrote hello.txt."}})
    send({"id": pid, "result": {"stopReason": "end_turn",
                                "usage": {"inputTokens": 21, "outputTokens": 8,
                                          "totalTokens": 29}}})


def main():
    while True:
        msg = read()
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            send({"id": mid, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": SCENARIO != "noload"},
                "agentInfo": {"name": "fake-acp-agent", "version": "1.0"},
                "authMethods": []}})
        elif method == "session/new":
            send({"id": mid, "result": {"sessionId": session[0]}})
        elif method == "session/load":
            session[0] = msg["params"]["sessionId"]
            update({"sessionUpdate": "user_message_chunk",
                    "content": {"type": "text", "text": "the old prompt"}})
            send({"id": mid, "result": None})
        elif method == "session/prompt":
            if SCENARIO in ("write", "noload"):
                play_write(mid)
            elif SCENARIO == "malformed":
                sys.stdout.write("this is not a JSON-RPC frame\n")
                sys.stdout.flush()
            elif SCENARIO == "fail":
                send({"id": mid, "error": {"code": -32603, "message": "model exploded"}})
            elif SCENARIO == "cancel":
                while True:
                    m = read()
                    if m.get("method") == "session/cancel":
                        send({"id": mid, "result": {"stopReason": "cancelled"}})
                        break
            # hang: nothing; session/cancel is read and logged by read()
        elif mid is not None and method:
            send({"id": mid, "error": {"code": -32601, "message": "Method not found"}})


main()
