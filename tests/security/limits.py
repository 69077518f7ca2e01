"""limits.py — request limits of the HTTP API (docs/security.md "Limits").

Usage: limits.py HOST PORT SERVER_PID SMALL_PORT   (token in $TOK_admin)

The server at PORT runs with max_connections 2048,
max_connections_per_client 1100, request_timeout_s 3, max_header_bytes
8192, max_body_bytes 65536; the one at SMALL_PORT with
max_connections_per_client 8. Checks, each printing one line:
  - 1,000 idle connections, all accepted by the server (its thread count
    shows them), do not stop GET /healthz from answering within 1 s;
  - a request trickled a byte at a time (slowloris) is cut off after
    request_timeout_s, although each byte comes well within the idle
    timeout;
  - a header block over the cap and a body over the cap (declared, and
    chunked) are refused (431/413);
  - smuggling: duplicate Content-Length (equal or not), Content-Length with
    Transfer-Encoding, a Transfer-Encoding other than chunked, a signed
    Content-Length: 400, and the bytes after it are never served as a
    second request;
  - the per-client cap: the 9th connection of one client is closed unserved,
    and once the others close the client is served again.
Exits 1 at the first failure.
"""
import os
import resource
import socket
import sys
import time

HOST, PORT, PID, SMALL = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
TOKEN = os.environ["TOK_admin"]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def conn(port=PORT, timeout=10):
    s = socket.create_connection((HOST, port), timeout=timeout)
    return s


def exchange(raw, port=PORT, timeout=10):
    """Send raw bytes, read until the server closes (or timeout)."""
    s = conn(port, timeout)
    s.sendall(raw)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return out


def status_of(resp):
    if not resp.startswith(b"HTTP/1."):
        return None
    return int(resp.split(b" ", 2)[1])


def healthz(port=PORT):
    t0 = time.monotonic()
    r = exchange(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port, 5)
    return status_of(r), time.monotonic() - t0


def threads(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


# ---- 1,000 idle connections ----
base = threads(PID)
idle = [conn() for _ in range(1000)]
deadline = time.monotonic() + 20
while threads(PID) < base + 1000 and time.monotonic() < deadline:
    time.sleep(0.05)
if threads(PID) < base + 1000:
    fail(f"server has {threads(PID) - base} connection threads, not 1000")
worst = 0.0
for _ in range(5):
    st, took = healthz()
    if st != 200:
        fail(f"healthz with 1000 idle connections: {st}")
    worst = max(worst, took)
if worst >= 1.0:
    fail(f"healthz took {worst:.3f} s with 1000 idle connections")
print(f"ok 1000 idle connections accepted (threads {base} -> {threads(PID)}); "
      f"/healthz answered 5 times, slowest {worst * 1000:.1f} ms")
for s in idle:
    s.close()

# ---- slowloris: a byte every 0.4 s, the idle timeout (30 s) never trips ----
s = conn(timeout=1)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
t0 = time.monotonic()
closed = None
i = 0
while time.monotonic() - t0 < 12:
    try:
        s.sendall(b"a")
    except (BrokenPipeError, ConnectionResetError):
        closed = time.monotonic() - t0
        break
    s.settimeout(0.4)
    try:
        b = s.recv(4096)
        if b == b"":
            closed = time.monotonic() - t0
            break
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = time.monotonic() - t0
        break
    i += 1
s.close()
if closed is None:
    fail("a trickled request was never cut off")
if not 2.5 <= closed <= 5.5:
    fail(f"trickled request cut off after {closed:.1f} s (want ~3 s)")
print(f"ok slowloris request cut off after {closed:.1f} s (request_timeout_s 3)")

# ---- oversized ----
auth = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
big_hdr = b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth + \
    b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 100) for i in range(120)) + b"\r\n"
st = status_of(exchange(big_hdr))
if st not in (413, 431):
    fail(f"12 KB of headers: {st}")
print(f"ok 12 KB of headers over max_header_bytes 8192: {st}")
r = exchange(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth +
             b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
if status_of(r) != 413:
    fail(f"declared 100000-byte body: {r[:200]!r}")
chunk = b"{" + b" " * 20000
body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(5)) + b"0\r\n\r\n"
r = exchange(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth +
             b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
if status_of(r) != 413:
    fail(f"chunked 100 KB body: {r[:200]!r}")
# a chunked body going on far past the cap: the connection is closed
# before it ends (no answer), rather than read to the end
huge = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(40))
s = conn(timeout=10)
s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth +
          b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
closed = False
try:
    for _ in range(10):
        s.sendall(huge)  # 800 KB each, never a last chunk
except (BrokenPipeError, ConnectionResetError):
    closed = True
if not closed:
    try:
        closed = s.recv(1) == b""
    except (ConnectionResetError, socket.timeout):
        closed = True
s.close()
if not closed:
    fail("an endless chunked body was read on")
print("ok body over max_body_bytes 65536: 413 declared and chunked; an endless chunked body closed past 4x the cap")

# ---- smuggling ----
second = b"GET /v1/info HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"
cases = {
    "duplicate Content-Length (equal)": b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
    "duplicate Content-Length (different)": b"Content-Length: 2\r\nContent-Length: 60\r\n\r\n{}",
    "Content-Length with Transfer-Encoding": b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "Transfer-Encoding with Content-Length": b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
    "Transfer-Encoding: chunked, identity": b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
    "Transfer-Encoding: xchunked": b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
    "two Transfer-Encoding headers": b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "Content-Length: +2": b"Content-Length: +2\r\n\r\n{}",
}
for what, tail in cases.items():
    for method in (b"POST /v1/jobs/x/cancel", b"GET /healthz"):
        r = exchange(method + b" HTTP/1.1\r\nHost: x\r\n" + auth + tail + second)
        st = status_of(r)
        if st not in (400, 411, 413, 501):
            fail(f"{what} on {method.decode()}: {r[:200]!r}")
        # (libmicrohttpd's own 400 for a bad Content-Length repeats its
        # status line; what matters is that nothing after it is served)
        if b"HTTP/1.1 2" in r or b"backend_kind" in r:
            fail(f"{what}: the bytes after it were served: {r[:400]!r}")
    print(f"ok {what}: {st}, connection closed, nothing after it served")

# ---- per-client cap on the small server ----
held = [conn(SMALL) for _ in range(8)]
time.sleep(0.3)
extra = exchange(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", SMALL, 3)
if status_of(extra) is not None:
    fail(f"9th connection of one client was served: {extra[:100]!r}")
for s in held:
    s.close()
deadline = time.monotonic() + 5
st = None
while time.monotonic() < deadline:
    st, _ = healthz(SMALL)
    if st == 200:
        break
    time.sleep(0.1)
if st != 200:
    fail("client not served again after closing its connections")
print("ok per-client cap 8: the 9th connection closed unserved, served again after")
