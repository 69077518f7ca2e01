#!/usr/bin/env python3
"""faultproxy.py — a loopback TCP proxy whose faults a test controls.

    faultproxy.py LISTEN_PORT TARGET_PORT

Forwards 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT (the test's own
Kafka broker, whose advertised listener is LISTEN_PORT, so every client
connection goes through here). Commands, one per line on stdin, each
answered with "ok <command>" on stdout once it is in effect:

    pass          forward normally (the start state)
    cut           reset every open connection (SO_LINGER 0) and reset new
                  ones at once, until the next command
    blackhole     keep connections open but forward nothing, in either
                  direction; new connections are accepted and held
    latency MS    forward, delaying every chunk by MS milliseconds
    restore       same as pass
    quit          exit

EOF on stdin exits too (the test is gone). Standard library only; used by
tests/integration/it_faults.c (docs/reliability.md)."""

import socket
import struct
import sys
import threading
import time

lock = threading.Lock()
state = {"mode": "pass", "latency": 0.0}
pairs = set()


def reset(sock):
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class Pair:
    def __init__(self, client):
        self.client = client
        self.server = None
        self.closed = False

    def close(self):
        with lock:
            if self.closed:
                return
            self.closed = True
            pairs.discard(self)
        reset(self.client)
        if self.server:
            reset(self.server)


def pump(pair, src, dst):
    while not pair.closed:
        while state["mode"] == "blackhole" and not pair.closed:
            time.sleep(0.02)
        try:
            src.settimeout(0.1)
            data = src.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not data:
            break
        # data read just before a blackhole started is held, not sent
        while state["mode"] == "blackhole" and not pair.closed:
            time.sleep(0.02)
        if state["latency"]:
            time.sleep(state["latency"])
        try:
            dst.sendall(data)
        except OSError:
            break
    pair.close()


def serve(pair, target):
    while state["mode"] == "blackhole" and not pair.closed:
        time.sleep(0.02)
    if pair.closed or state["mode"] == "cut":
        pair.close()
        return
    try:
        pair.server = socket.create_connection(("127.0.0.1", target), 5)
    except OSError:
        pair.close()
        return
    pair.server.settimeout(None)
    if pair.closed:
        pair.close()
        return
    threading.Thread(target=pump, args=(pair, pair.client, pair.server),
                     daemon=True).start()
    pump(pair, pair.server, pair.client)


def accept_loop(ls, target):
    while True:
        try:
            c, _ = ls.accept()
        except OSError:
            return
        if state["mode"] == "cut":
            reset(c)
            continue
        p = Pair(c)
        with lock:
            pairs.add(p)
        threading.Thread(target=serve, args=(p, target), daemon=True).start()


def main():
    listen, target = int(sys.argv[1]), int(sys.argv[2])
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", listen))
    ls.listen(128)
    threading.Thread(target=accept_loop, args=(ls, target),
                     daemon=True).start()
    print("ok listening %d -> %d" % (listen, target), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd = words[0]
        if cmd in ("pass", "restore"):
            state["latency"] = 0.0
            state["mode"] = "pass"
        elif cmd == "cut":
            state["mode"] = "cut"
            with lock:
                victims = list(pairs)
            for p in victims:
                p.close()
        elif cmd == "blackhole":
            state["mode"] = "blackhole"
        elif cmd == "latency" and len(words) == 2:
            state["mode"] = "pass"
            state["latency"] = int(words[1]) / 1000.0
        elif cmd == "quit":
            break
        else:
            print("error unknown command %r" % line.strip(), flush=True)
            continue
        print("ok " + line.strip(), flush=True)
    ls.close()


if __name__ == "__main__":
    main()
