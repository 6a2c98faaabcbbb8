#!/usr/bin/env python3
"""Loopback listeners for the network-policy tests (t0157..t0160).

usage: tcp-listen.py --ports-file F --log L [--max-seconds N]

Listens on three loopback addresses and writes their ports to F as
"ENDPOINT OTHER" (one line, when all are bound):
  127.0.0.1:ENDPOINT  the task's endpoint
  127.0.0.1:OTHER     another port of the endpoint's host
  127.0.0.2:ENDPOINT  the endpoint's port on another loopback address
Each connection is answered "HTTP/1.0 200 OK" with the body "ok NAME" and
logged to L as one line "NAME" (endpoint, other, other-address). Only
loopback addresses are used; it exits by itself after --max-seconds
(default 120).
"""
import argparse
import os
import selectors
import socket
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--max-seconds", type=float, default=120)
    a = ap.parse_args()
    sel = selectors.DefaultSelector()
    socks = []

    def listen(host, port, name):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(16)
        sel.register(s, selectors.EVENT_READ, name)
        socks.append(s)
        return s.getsockname()[1]

    ep = listen("127.0.0.1", 0, "endpoint")
    other = listen("127.0.0.1", 0, "other")
    listen("127.0.0.2", ep, "other-address")
    tmp = a.ports_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (ep, other))
    os.rename(tmp, a.ports_file)
    deadline = time.monotonic() + a.max_seconds
    while time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.5):
            c, _ = key.fileobj.accept()
            with open(a.log, "a") as f:
                f.write(key.data + "\n")
            c.settimeout(2)
            try:
                c.recv(65536)
                body = ("ok %s\n" % key.data).encode()
                c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                          % len(body) + body)
            except OSError:
                pass
            c.close()


if __name__ == "__main__":
    main()
