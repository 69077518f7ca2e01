"""walk_routes.py — every route of the OpenAPI document, as every principal.

Usage: walk_routes.py BASE_URL  (tokens in $TOK_viewer, $TOK_operator,
$TOK_admin)

Reads GET /v1/openapi.json (as the viewer), then for every path and method
in it sends the request with no token, with a wrong token, with a wrong
scheme (Basic) and as each role. Before each call the state the route
needs is set up as admin (a running stream for cancel, drain, restart and
checkpoints; a checkpointed one for resume; a cancelled one for delete; a
completed bounded one for result), so an allowed role must get exactly a
2xx, a role below the route's x-streamvisor-role exactly 403, and every
unauthenticated attempt exactly 401 (GET /healthz: 200 for everyone).
Also checks that every route of the document is walked and that each
action's observations name the principal that asked for it. Prints one
line per request; exits 1 at the first mismatch.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

BASE = sys.argv[1].rstrip("/")
TOK = {r: os.environ["TOK_" + r] for r in ("viewer", "operator", "admin")}
NAME = {"viewer": "alice", "operator": "bob", "admin": "carol"}
RANK = {"none": 0, "viewer": 1, "operator": 2, "admin": 3}
seq = [0]


def call(method, path, auth=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if auth:
        req.add_header("Authorization", auth)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    elif method == "POST":
        req.data = b""
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, raw, dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def admin(method, path, body=None, want=(200, 201)):
    st, raw, _ = call(method, path, "Bearer " + TOK["admin"], body)
    if st not in want:
        sys.exit(f"FAIL setup {method} {path}: {st} {raw[:300]!r}")
    return json.loads(raw) if raw else None


def spec(bounded=False):
    seq[0] += 1
    s = {"name": f"walk-{seq[0]}", "source": {"kind": "generator"},
         "schema": [{"name": "seq", "type": "int64"}],
         "sink": {"kind": "null"}, "checkpoint": {"interval_ms": 60000}}
    if bounded:
        s["mode"] = "bounded"
        s["source"]["count"] = 50
    else:
        s["source"]["rate_per_s"] = 200
    return s


def wait_state(jid, states, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = admin("GET", f"/v1/jobs/{jid}")["state"]
        if st in states:
            return st
        time.sleep(0.05)
    sys.exit(f"FAIL setup: job {jid} never reached {states}")


def job(kind):
    """A job in the state a route needs; its id."""
    if kind == "completed":
        jid = admin("POST", "/v1/jobs", spec(bounded=True))["id"]
        wait_state(jid, ("completed",))
        return jid
    jid = admin("POST", "/v1/jobs", spec())["id"]
    wait_state(jid, ("running",))
    if kind == "checkpointed":
        admin("POST", f"/v1/jobs/{jid}/drain", {"final_watermark": False})
        wait_state(jid, ("checkpointed",))
    elif kind == "cancelled":
        admin("POST", f"/v1/jobs/{jid}/cancel")
        wait_state(jid, ("cancelled",))
    return jid


# what each templated route needs before it is called
NEEDS = {
    ("post", "/v1/jobs/{id}/cancel"): "running",
    ("post", "/v1/jobs/{id}/drain"): "running",
    ("post", "/v1/jobs/{id}/restart"): "running",
    ("post", "/v1/jobs/{id}/checkpoints"): "running",
    ("post", "/v1/jobs/{id}/resume"): "checkpointed",
    ("delete", "/v1/jobs/{id}"): "cancelled",
    ("get", "/v1/jobs/{id}/result"): "completed",
}

st, raw, _ = call("GET", "/v1/openapi.json", "Bearer " + TOK["viewer"])
if st != 200:
    sys.exit(f"FAIL GET /v1/openapi.json as viewer: {st}")
doc = json.loads(raw)
shared = job("running")  # for the read-only routes
walked = 0
for path, item in sorted(doc["paths"].items()):
    for method, op in sorted(item.items()):
        role = op.get("x-streamvisor-role")
        if role not in RANK:
            sys.exit(f"FAIL {method.upper()} {path}: no x-streamvisor-role")
        public = role == "none" or op.get("security") == []
        attempts = [("no token", None), ("wrong token", "Bearer x" + TOK["admin"]),
                    ("wrong scheme", "Basic " + TOK["admin"]),
                    ("empty bearer", "Bearer ")]
        attempts += [(r, "Bearer " + TOK[r]) for r in ("viewer", "operator", "admin")]
        for who, auth in attempts:
            need = NEEDS.get((method, path))
            jid = job(need) if need and who in TOK and RANK[who] >= RANK[role] else shared
            url = path.replace("{id}", jid).replace("{file}", "app.js")
            body = None
            if path == "/v1/jobs" and method == "post":
                body = spec()
            elif path.endswith("/drain"):
                body = {"final_watermark": False}
            elif path.endswith("/restart"):
                body = {"from_checkpoint": "latest"}
            st, raw, hdr = call(method.upper(), url, auth, body)
            if public:
                want = "2xx"
                good = 200 <= st < 300
            elif who not in TOK:
                want = "401"
                good = st == 401 and "Bearer" in hdr.get("WWW-Authenticate", "")
            elif RANK[who] < RANK[role]:
                want = "403"
                good = st == 403
            else:
                want = "2xx"
                good = 200 <= st < 300
            print(f"{method.upper():6} {url:45} {who:12} -> {st} (want {want})")
            if not good:
                sys.exit(f"FAIL {method.upper()} {url} as {who}: {st} "
                         f"{raw[:300]!r}")
            if TOK["admin"] in raw.decode("utf-8", "replace") or \
                    TOK["viewer"] in raw.decode("utf-8", "replace"):
                sys.exit(f"FAIL {method.upper()} {url}: a token in the body")
            if op.get("tags") == ["actions"] and who in TOK and \
                    RANK[who] >= RANK[role]:
                obs = admin("GET", f"/v1/jobs/{jid}/observations?limit=1000")
                names = {o.get("principal") for o in obs["observations"]}
                if NAME[who] not in names:
                    sys.exit(f"FAIL {method.upper()} {url} by {who}: no "
                             f"observation names '{NAME[who]}': {names}")
                for o in obs["observations"]:
                    if any(t in json.dumps(o) for t in TOK.values()):
                        sys.exit("FAIL a token in an observation")
            walked += 1
if walked < 17 * 7:
    sys.exit(f"FAIL only {walked} requests: the document lost routes?")
print(f"walked {walked} requests over every route of the document")
