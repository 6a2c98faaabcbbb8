#!/usr/bin/env python3
"""A webhook receiver on loopback for the notification tests (t0272, t0273).

usage: webhook-server.py --port-file F --log L [--status S,S,...]
                         [--hold FILE] [--max-seconds N]

Listens on 127.0.0.1 (a free port, written to F once bound) and answers
every request. Each request is appended to L as one JSON line, before it is
answered:
  {"n": 1, "method": "POST", "path": "/hook/SECRET?token=x",
   "authorization": "Basic ..." or null, "content_type": "...",
   "user_agent": "...", "body": {...} (the parsed JSON body, or the text)}
--status gives the status of the 1st, 2nd... request (the last one repeats;
default 200). --hold FILE: each answer waits until FILE exists (a slow
webhook: the test creates FILE when it has seen what it waits for), then a
line {"n": N, "answered": STATUS} is appended. It exits by itself after
--max-seconds (default 120).
"""
import argparse
import http.server
import json
import os
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--status", default="200")
    ap.add_argument("--hold")
    ap.add_argument("--max-seconds", type=float, default=120)
    a = ap.parse_args()
    statuses = [int(s) for s in a.status.split(",")]
    lock = threading.Lock()
    count = [0]

    def log(obj):
        with lock, open(a.log, "a") as f:
            f.write(json.dumps(obj, sort_keys=True) + "\n")

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n_bytes = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n_bytes).decode("utf-8", "replace")
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
            with lock:
                count[0] += 1
                n = count[0]
            status = statuses[min(n, len(statuses)) - 1]
            log({"n": n, "method": "POST", "path": self.path,
                 "authorization": self.headers.get("Authorization"),
                 "content_type": self.headers.get("Content-Type"),
                 "user_agent": self.headers.get("User-Agent"), "body": body})
            if a.hold:
                while not os.path.exists(a.hold):
                    time.sleep(0.05)
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            if a.hold:
                log({"n": n, "answered": status})

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    threading.Timer(a.max_seconds, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
