#!/usr/bin/env python3
"""The Substrait differential test: streamvisor's answers equal DataFusion's.

Run by tests/integration/substrait_diff.sh with the test venv's Python
(deploy/requirements-test.txt pins datafusion and substrait-protobuf):

    diff.py --server URL --bootstrap HOST:PORT --kafka-sh deploy/kafka/kafka.sh
            --work DIR [--isthmus-cp CLASSPATH]

1. Generates ROWS seeded rows (nulls, non-ASCII strings, negative and
   fractional numbers, integer columns, timestamps over two days of minute
   windows, duplicate ids) and loads them into a fresh Kafka topic of the
   real broker (kcat) and into DataFusion (a pyarrow table).
2. For every query of QUERIES DataFusion writes the Substrait plan and
   computes the answer; streamvisor runs the plan as a bounded job (half
   submitted as proto3 JSON, half as binary) and its result must equal
   DataFusion's as a multiset (floats to 1e-9 relative; in order where the
   plan declares an order).
3. The windowed and stateless queries also run as stream jobs into Kafka
   topics over the same rows plus one late sentinel record that moves the
   watermark past the end; their output equals DataFusion's answer.
4. Isthmus (Calcite; upper-case names, URNs, compound function names) plans
   of the filter/project/aggregate queries, when --isthmus-cp is given.
5. IncQL-shaped plans built by its emitter's rules (NOTES-incql.md §1) for a
   filter/project, a date_trunc window and a global aggregate.
Prints one "ok:" line per check and exits 1 on the first difference."""
import argparse
import base64
import datetime
import json
import math
import os
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pyarrow as pa
from datafusion import SessionContext
from datafusion.substrait import Serde
from google.protobuf import json_format
from substrait import plan_pb2

ROWS = 10000
BASE_MS = 1709251200000  # 2024-03-01T00:00:00Z
SPAN_MS = 2 * 86400000
REGIONS = ["eu", "us", "apac", "Zürich", "東京", "São Paulo", "Ελλάδα", None]
STATUSES = ["completed", "pending", "cancelled", " pending ", None]

# name -> (sql, modes, ordered). modes: "b" bounded, "s" also as a stream,
# "d" also as a stream with plan.dedup_within_ms (a bound longer than the
# data, so the dedup is exact).
QUERIES = {
    "filter_project": (
        "SELECT id, lower(status) AS st, amount * 2 AS a2 FROM orders "
        "WHERE status = 'completed' AND amount > 0", "bs", False),
    "arith": (
        "SELECT id, amount + qty AS s, amount - 1.5 AS d, qty * 3 AS m, "
        "qty / 3 AS q, qty % 7 AS r, amount / 4 AS f, -amount AS n "
        "FROM orders WHERE qty IS NOT NULL", "bs", False),
    "math": (
        "SELECT id, abs(amount) AS a, ceil(amount) AS c, floor(amount) AS f, "
        "round(amount, 1) AS r, sqrt(abs(amount)) AS s, abs(qty) AS aq "
        "FROM orders", "b", False),
    "strings": (
        "SELECT id, upper(status) AS u, character_length(region) AS l, "
        "substr(region, 2, 3) AS s, trim(status) AS t, ltrim(status) AS lt, "
        "rtrim(status) AS rt, replace(status, 'e', 'E') AS r, "
        "concat(status, '-', region) AS c, status || '/' || region AS cc "
        "FROM orders", "bs", False),
    "like": (
        "SELECT id, region FROM orders WHERE region LIKE 'S%' "
        "OR status LIKE '%ing' OR region LIKE '%ü%' OR region = 'eu'",
        "b", False),
    "starts_ends": (
        "SELECT id FROM orders WHERE starts_with(region, 'a') "
        "OR ends_with(status, 'led')", "b", False),
    "case_coalesce": (
        "SELECT id, CASE WHEN amount > 100 THEN 'big' WHEN amount > 0 "
        "THEN 'small' ELSE 'other' END AS size, coalesce(region, 'none') AS r, "
        "nullif(status, 'pending') AS ns, CASE WHEN qty > 0 THEN qty END AS pq "
        "FROM orders", "bs", False),
    "in_between": (
        "SELECT id, amount FROM orders WHERE region IN ('eu', 'us', 'Zürich') "
        "AND amount BETWEEN -10 AND 50", "bs", False),
    "casts": (
        "SELECT id, CAST(amount AS BIGINT) AS ai, CAST(qty AS DOUBLE) AS qd, "
        "CAST(id AS VARCHAR) AS ids, TRY_CAST(status AS BIGINT) AS sn "
        "FROM orders", "b", False),
    "predicates": (
        "SELECT id, qty FROM orders WHERE qty < 0 OR NOT (region LIKE 'e%') "
        "OR NOT (status IN ('pending', 'completed')) OR qty >= 990",
        "bs", False),
    "not_or_null": (
        "SELECT id FROM orders WHERE NOT (amount > 1) OR region IS NULL "
        "OR status <> 'pending'", "b", False),
    "date_bin": (
        "SELECT date_bin(INTERVAL '1 minute', ts) AS w, region, "
        "sum(amount) AS s, count(*) AS n, count(amount) AS na, "
        "min(amount) AS mn, max(amount) AS mx, avg(amount) AS av "
        "FROM orders GROUP BY date_bin(INTERVAL '1 minute', ts), region",
        "bs", False),
    "date_trunc": (
        "SELECT date_trunc('hour', ts) AS h, status, count(*) AS n, "
        "sum(qty) AS sq, min(ts) AS first_ts, max(region) AS mr, "
        "avg(qty) AS aq, count(qty) AS nq, count(DISTINCT region) AS dr "
        "FROM orders GROUP BY date_trunc('hour', ts), status", "bs", False),
    "date_bin_filtered": (
        "SELECT date_bin(INTERVAL '10 minutes', ts) AS w, sum(amount) AS s, "
        "avg(qty) AS aq FROM orders WHERE status = 'completed' "
        "GROUP BY date_bin(INTERVAL '10 minutes', ts)", "bs", False),
    "date_trunc_day_filter": (
        "SELECT date_trunc('day', ts) AS d, count(*) FILTER (WHERE amount > 0) "
        "AS pos, sum(amount) FILTER (WHERE region = 'eu') AS eu "
        "FROM orders GROUP BY date_trunc('day', ts)", "bs", False),
    "distinct": (
        "SELECT DISTINCT region, status FROM orders", "bd", False),
    "global": (
        "SELECT count(*) AS n, sum(amount) AS s, min(ts) AS first_ts, "
        "max(qty) AS mq, avg(qty) AS aq, count(region) AS nr FROM orders",
        "b", False),
    "count_distinct": (
        "SELECT count(DISTINCT region) AS dr FROM orders", "b", False),
    "group_by": (
        "SELECT region, count(*) AS n, sum(amount) AS s FROM orders "
        "GROUP BY region", "b", False),
    "group_by_expr": (
        "SELECT lower(status) AS st, max(amount) AS m, min(qty) AS q "
        "FROM orders GROUP BY lower(status)", "b", False),
    "having": (
        "SELECT region, count(*) AS n FROM orders GROUP BY region "
        "HAVING count(*) > 1000", "b", False),
    "order_limit": (
        "SELECT id, amount FROM orders WHERE amount IS NOT NULL "
        "ORDER BY amount DESC, id ASC LIMIT 10", "b", True),
    "order_offset": (
        "SELECT id, ts FROM orders ORDER BY ts ASC LIMIT 5 OFFSET 3", "b", True),
    "order_agg": (
        "SELECT region, sum(amount) AS s FROM orders GROUP BY region "
        "ORDER BY s DESC NULLS LAST LIMIT 3", "b", True),
    "row_number": (
        "SELECT id, region, amount, ts FROM (SELECT id, region, amount, ts, "
        "row_number() OVER (PARTITION BY id ORDER BY ts) AS rn FROM orders) "
        "WHERE rn = 1", "bd", False),
}

ISTHMUS_QUERIES = ["filter_project", "in_between", "group_by"]


def log(msg):
    print(msg, flush=True)


def fail(msg):
    print("substrait_diff: FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


# ---- data ----

def make_rows(seed=11):
    rnd = random.Random(seed)
    rows = []
    ts = BASE_MS
    step = SPAN_MS // ROWS
    for i in range(ROWS):
        ts += rnd.randint(1, 2 * step - 1)  # increasing, many windows
        amount = None if rnd.random() < 0.05 else round(
            rnd.uniform(-50, 500), rnd.choice([0, 1, 2, 3]))
        qty = None if rnd.random() < 0.05 else rnd.randint(-20, 1000)
        rows.append({
            "id": None if rnd.random() < 0.02 else rnd.randint(1, 3000),
            "region": rnd.choice(REGIONS),
            "amount": amount,
            "status": rnd.choice(STATUSES),
            "qty": qty,
            "ts": ts,
        })
    return rows


ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()),
                          ("amount", pa.float64()), ("status", pa.string()),
                          ("qty", pa.int64()), ("ts", pa.timestamp("ms"))])


def datafusion_ctx(rows):
    ctx = SessionContext()
    cols = {k: [r[k] for r in rows] for k in ARROW_SCHEMA.names}
    batch = pa.RecordBatch.from_pydict(cols, schema=ARROW_SCHEMA)
    ctx.register_record_batches("orders", [[batch]])
    return ctx


def topic_create(kafka_sh, topic):
    subprocess.run([kafka_sh, "topic-create", topic, "1"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def produce(kafka_sh, bootstrap, topic, rows, work):
    topic_create(kafka_sh, topic)
    path = os.path.join(work, topic + ".jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-l", path],
                   check=True)


# ---- HTTP ----

def http(server, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def job_spec(name, plan_bytes, topic, mode, as_json, sink, extra=None,
             columns=None):
    plan = {"bindings": {"orders": {"topic": topic}}}
    if columns:
        plan["bindings"]["orders"]["columns"] = columns
    if as_json:
        plan["substrait"] = json.loads(json_format.MessageToJson(
            plan_pb2.Plan.FromString(plan_bytes)))
    else:
        plan["substrait_base64"] = base64.b64encode(plan_bytes).decode()
    spec = {"name": name, "mode": mode, "plan": plan, "sink": sink,
            "event_time": {"field": "ts", "max_out_of_orderness_ms": 0}}
    spec.update(extra or {})
    return spec


def submit(server, spec):
    st, body = http(server, "POST", "/v1/jobs", spec)
    if st != 201:
        fail("%s: submit answered %d: %s" % (spec["name"], st,
                                             json.dumps(body)))
    return body["id"]


def wait_result(server, job, name, deadline_s=120):
    end = time.time() + deadline_s
    while time.time() < end:
        st, body = http(server, "GET", "/v1/jobs/" + job)
        state = body.get("state")
        if state == "completed":
            st, res = http(server, "GET",
                           "/v1/jobs/%s/result?limit=100000" % job)
            if st != 200:
                fail("%s: result answered %d" % (name, st))
            return res["rows"]
        if state in ("failed", "cancelled"):
            fail("%s: job %s is %s: %s" % (name, job, state,
                                           json.dumps(body.get("error"))))
        time.sleep(0.1)
    fail("%s: job %s did not complete in %d s" % (name, job, deadline_s))


# ---- comparison ----

def norm(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return int(round(v.timestamp() * 1000))
    if isinstance(v, bool):
        return v
    return v


def df_rows(ctx, sql):
    df = ctx.sql(sql)
    names = df.schema().names
    rows = []
    for b in df.collect():
        for r in b.to_pylist():
            rows.append(tuple(norm(r[n]) for n in names))
    return rows, names


def sv_rows(rows, names):
    out = []
    for r in rows:
        if set(r.keys()) != set(names):
            fail("columns differ: streamvisor %s, DataFusion %s" %
                 (sorted(r.keys()), sorted(names)))
        out.append(tuple(r[n] for n in names))
    return out


def key(t):
    """Sort key equal for values equal within the tolerance (floats to 9
    significant digits, integers exactly)."""
    def one(v):
        if v is None:
            return (0, 0, "")
        if isinstance(v, bool):
            return (1, int(v), "")
        if isinstance(v, int):
            return (1, v, "")
        if isinstance(v, float):
            return (1, float("%.9g" % v), "")
        return (2, 0, str(v))
    return tuple(one(v) for v in t)


def same_value(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def compare(name, want, got, ordered):
    if len(want) != len(got):
        fail("%s: DataFusion has %d rows, streamvisor %d\n  first DF: %s\n"
             "  first SV: %s" % (name, len(want), len(got), want[:3], got[:3]))
    if not ordered:
        want = sorted(want, key=key)
        got = sorted(got, key=key)
    for w, g in zip(want, got):
        if len(w) != len(g) or not all(same_value(a, b) for a, b in zip(w, g)):
            fail("%s: rows differ: DataFusion %r, streamvisor %r" % (name, w, g))


# ---- stream runs ----

def consume(bootstrap, topic):
    p = subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", topic, "-e",
                        "-q", "-o", "beginning", "-X",
                        "isolation.level=read_committed"],
                       capture_output=True, text=True, check=True)
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


# ---- IncQL-shaped plans (NOTES-incql.md §1) ----

INCQL_URN = "https://incql.io/extensions/v0.1/functions.yaml"
INCQL_ANCHORS = {"sum": 0, "count": 1, "equal": 2, "gt": 3, "add": 4,
                 "multiply": 5, "and": 11, "date_trunc": 138}


def incql_field(i):
    return {"selection": {"directReference": {"structField": {"field": i}},
                          "rootReference": {}}}


def incql_call(name, *args):
    return {"scalarFunction": {"functionReference": INCQL_ANCHORS[name],
                               "arguments": [{"value": a} for a in args]}}


def incql_read():
    nul = {"nullability": "NULLABILITY_NULLABLE"}
    return {"read": {"common": {"direct": {}},
                     "namedTable": {"names": ["orders"]},
                     "baseSchema": {
                         "names": ["id", "region", "amount", "status", "qty",
                                   "ts"],
                         "struct": {"nullability": "NULLABILITY_REQUIRED",
                                    "types": [{"i64": nul}, {"string": nul},
                                              {"fp64": nul}, {"string": nul},
                                              {"i64": nul},
                                              {"precisionTimestamp": dict(
                                                  nul, precision=6)}]}}}}


def incql_plan(names, rel, used):
    ext = [{"extensionFunction": {"extensionUrnReference": 0,
                                  "functionAnchor": INCQL_ANCHORS[n],
                                  "name": n}} for n in used]
    return {"version": {"minorNumber": 63, "producer": "incql-rfc002"},
            "extensionUrns": [{"extensionUrnAnchor": 0, "urn": INCQL_URN}],
            "extensions": ext,
            "relations": [{"root": {"names": names, "input": rel}}]}


def incql_plans():
    lit = lambda k, v: {"literal": {k: v, "nullable": False}}
    # SELECT id, amount * 2.0 AS a2 FROM orders WHERE amount > 100.0 AND status = 'completed'
    flt = {"filter": {"common": {"direct": {}}, "input": incql_read(),
                      "condition": incql_call(
                          "and", incql_call("gt", incql_field(2), lit("fp64", 100.0)),
                          incql_call("equal", incql_field(3),
                                     lit("string", "completed")))}}
    proj = {"project": {"common": {"emit": {"outputMapping": [6, 7]}},
                        "input": flt,
                        "expressions": [incql_field(0),
                                        incql_call("multiply", incql_field(2),
                                                   lit("fp64", 2.0))]}}
    p1 = incql_plan(["id", "a2"], proj, ["and", "gt", "equal", "multiply"])
    q1 = ("SELECT id, amount * 2.0 AS a2 FROM orders WHERE amount > 100.0 "
          "AND status = 'completed'")
    # SELECT date_trunc('hour', ts) AS h, region, sum(amount), count(*) GROUP BY 1, 2
    gk = [incql_call("date_trunc", lit("string", "hour"), incql_field(5)),
          incql_field(1)]
    agg = {"aggregate": {
        "common": {"direct": {}}, "input": incql_read(),
        "groupings": [{"groupingExpressions": gk,
                       "expressionReferences": [0, 1]}],
        "groupingExpressions": gk,
        "measures": [
            {"measure": {"functionReference": INCQL_ANCHORS["sum"],
                         "invocation": "AGGREGATION_INVOCATION_ALL",
                         "arguments": [{"value": incql_field(2)}]}},
            {"measure": {"functionReference": INCQL_ANCHORS["count"],
                         "invocation": "AGGREGATION_INVOCATION_ALL"}}]}}
    p2 = incql_plan(["h", "region", "s", "n"], agg,
                    ["sum", "count", "date_trunc"])
    q2 = ("SELECT date_trunc('hour', ts) AS h, region, sum(amount) AS s, "
          "count(*) AS n FROM orders GROUP BY date_trunc('hour', ts), region")
    # SELECT sum(amount), count(*) FROM orders (global)
    gl = {"aggregate": {
        "common": {"direct": {}}, "input": incql_read(),
        "measures": [
            {"measure": {"functionReference": INCQL_ANCHORS["sum"],
                         "invocation": "AGGREGATION_INVOCATION_ALL",
                         "arguments": [{"value": incql_field(2)}]}},
            {"measure": {"functionReference": INCQL_ANCHORS["count"],
                         "invocation": "AGGREGATION_INVOCATION_ALL"}}]}}
    p3 = incql_plan(["s", "n"], gl, ["sum", "count"])
    q3 = "SELECT sum(amount) AS s, count(*) AS n FROM orders"
    return [("incql_filter_project", p1, q1), ("incql_date_trunc", p2, q2),
            ("incql_global", p3, q3)]


# ---- refusals and hostile plans over HTTP ----

def deep_plan(depth):
    """Plan{relations: PlanRel{root: RelRoot{input: Rel{filter: FilterRel{
    input: ...}}}}} nested depth filters, as wire bytes."""
    def varint(n):
        out = bytearray()
        while True:
            b = n & 0x7f
            n >>= 7
            out.append(b | (0x80 if n else 0))
            if not n:
                return bytes(out)

    def msg(field, body):
        return bytes([(field << 3) | 2]) + varint(len(body)) + body
    rel = b""
    for _ in range(depth):
        rel = msg(2, msg(2, rel))  # Rel.filter{FilterRel.input}
    return msg(3, msg(2, msg(1, rel)))


def pb_field(num, payload):
    """A length-delimited protobuf field."""
    n, out = len(payload), bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            break
    return bytes([(num << 3) | 2]) + bytes(out) + payload


def jobspec_pb(name, plan, topic):
    """streamvisor.JobSpec (proto/spec.proto) by hand: name=1, mode=2,
    sink=7 {kind=1}, plan=15 {substrait=1, bindings=2 {name=1, source=2
    {topic=3}}}."""
    binding = pb_field(1, b"orders") + pb_field(2, pb_field(3, topic.encode()))
    ingress = pb_field(1, plan) + pb_field(2, binding)
    return (pb_field(1, name.encode()) + pb_field(2, b"bounded") +
            pb_field(7, pb_field(1, b"memory")) + pb_field(15, ingress))


def expect_refusal(server, what, spec, status, field=None, capability=None):
    st, body = http(server, "POST", "/v1/jobs?dry_run=true", spec)
    err = (body or {}).get("error", {})
    if st != status:
        fail("%s: expected %d, got %d: %s" % (what, status, st,
                                              json.dumps(body)))
    if field and err.get("field") != field:
        fail("%s: expected field %s, got %s" % (what, field,
                                                 json.dumps(err)))
    if capability:
        # RFC 033 records: the row's name is its requirement's target
        caps = [d.get("requirement", {}).get("target", {}).get("name")
                for d in err.get("details") or []]
        if capability not in caps:
            fail("%s: expected coverage record %s, got %s" %
                 (what, capability, json.dumps(err)))
    log("ok: refused %s: %d %s" % (what, st, err.get("message", "")[:90]))


def refusals(server, ctx, topic):
    def spec_for(sql, mode="bounded", plan_extra=None, bindings=None,
                 plan_bytes=None):
        b = plan_bytes if plan_bytes is not None else \
            Serde.serialize_bytes(sql, ctx)
        s = job_spec("sbd-refusal", b, topic, mode, plan_bytes is None,
                     {"kind": "memory"})
        if bindings is not None:
            s["plan"]["bindings"] = bindings
        s["plan"].update(plan_extra or {})
        return s
    expect_refusal(server, "an unknown function (md5)",
                   spec_for("SELECT md5(region) AS h FROM orders"), 422,
                   capability="substrait_function:md5")
    expect_refusal(server, "a non-windowed aggregate in stream mode",
                   spec_for("SELECT region, count(*) AS n FROM orders "
                            "GROUP BY region", "stream"), 422,
                   capability="stateful_window_support")
    expect_refusal(server, "DISTINCT without a state bound in stream mode",
                   spec_for("SELECT DISTINCT region FROM orders", "stream"),
                   422, capability="stateful_window_support")
    expect_refusal(server, "a read root without a binding",
                   spec_for("SELECT id FROM orders",
                            bindings={"other": {"topic": topic}}), 400,
                   field="plan.bindings")
    expect_refusal(server, "a binding no read root uses",
                   spec_for("SELECT id FROM orders",
                            bindings={"orders": {"topic": topic},
                                      "extra": {"topic": topic}}), 400,
                   field="plan.bindings.extra")
    dctx = SessionContext()
    dctx.sql("CREATE TABLE orders (id BIGINT, price DECIMAL(10, 2))").collect()
    expect_refusal(server, "an unsupported type (decimal)",
                   spec_for(None, plan_bytes=Serde.serialize_bytes(
                       "SELECT id, price FROM orders", dctx)), 422,
                   capability="substrait_type:decimal")
    jctx = datafusion_ctx(make_rows()[:10])
    jctx.sql("CREATE TABLE regions (region VARCHAR, manager VARCHAR)").collect()
    both = {"orders": {"topic": topic}, "regions": {"topic": topic}}
    expect_refusal(server, "a join of two streams (JoinRel, no time bound)",
                   spec_for(None, "stream", bindings=both,
                            plan_bytes=Serde.serialize_bytes(
                                "SELECT o.id, r.manager FROM orders o "
                                "JOIN regions r ON o.region = r.region",
                                jctx)), 422,
                   capability="stateful_join_support")
    expect_refusal(server, "a right join (JoinRel)",
                   spec_for(None, bindings=both,
                            plan_bytes=Serde.serialize_bytes(
                                "SELECT o.id, r.manager FROM orders o "
                                "RIGHT JOIN regions r ON o.region = r.region",
                                jctx)), 422,
                   capability="substrait_rel:join")
    expect_refusal(server, "a non-equi join (JoinRel)",
                   spec_for(None, bindings=both,
                            plan_bytes=Serde.serialize_bytes(
                                "SELECT o.id, r.manager FROM orders o "
                                "JOIN regions r ON o.region < r.region",
                                jctx)), 422,
                   capability="substrait_rel:join")
    expect_refusal(server, "a plan nested 20,000 deep",
                   spec_for(None, plan_bytes=deep_plan(20000)), 400,
                   field="plan.substrait")
    junk = random.Random(5).randbytes(4096)
    expect_refusal(server, "random bytes", spec_for(None, plan_bytes=junk),
                   400)
    good = Serde.serialize_bytes("SELECT id FROM orders", ctx)
    expect_refusal(server, "a truncated plan",
                   spec_for(None, plan_bytes=good[:len(good) // 2]), 400)
    # nearly 1 MiB of plan (the HTTP body limit is 1 MiB: base64 of 760 KB)
    big = bytes([(3 << 3) | 2, 4, (1 << 3) | 2, 2, (1 << 3) | 2, 0]) * 130000
    expect_refusal(server, "a %d KB plan" % (len(big) // 1024),
                   spec_for(None, plan_bytes=big), 422)
    # the protobuf form: the JobSpec carries the binary plan as bytes
    pb = jobspec_pb("sbd-protobuf", good, topic)
    req = urllib.request.Request(server + "/v1/jobs?dry_run=true", data=pb,
                                 method="POST", headers={
                                     "Content-Type": "application/x-protobuf"})
    with urllib.request.urlopen(req, timeout=30) as r:
        ans = json.loads(r.read())
    if (ans["spec"]["source"]["topic"] != topic or
            ans["substrait"]["encoding"] != "binary" or
            ans["spec"]["pipeline"][-1] != {"select": {"id": "`id`"}}):
        fail("protobuf submission: %s" % json.dumps(ans))
    log("ok: a protobuf JobSpec with the plan as bytes (%d bytes) translates "
        "the same" % len(pb))
    st, _ = http(server, "GET", "/healthz")
    if st != 200:
        fail("the supervisor is not healthy after the hostile plans")
    log("ok: the supervisor stays up after the hostile plans")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--kafka-sh", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--isthmus", help="command that turns SQL into plans "
                    "(arguments separated by \\x1f)")
    ap.add_argument("--only", help="comma-separated query names")
    args = ap.parse_args()
    t0 = time.time()
    rows = make_rows()
    nulls = sum(1 for r in rows for v in r.values() if v is None)
    windows = len({r["ts"] // 60000 for r in rows})
    log("ok: %d rows generated (%d nulls, %d minute windows, non-ASCII "
        "regions)" % (len(rows), nulls, windows))
    ctx = datafusion_ctx(rows)
    tag = "%d-%d" % (os.getpid(), random.randrange(1 << 30))
    topic = "sbd-orders-" + tag
    produce(args.kafka_sh, args.bootstrap, topic, rows, args.work)
    sentinel = {"id": -1, "region": "eu", "amount": 1.0, "status": "completed",
                "qty": 1, "ts": rows[-1]["ts"] + 86400000}
    stopic = "sbd-stream-" + tag
    produce(args.kafka_sh, args.bootstrap, stopic, rows + [sentinel], args.work)
    sctx = datafusion_ctx(rows + [sentinel])
    log("ok: rows loaded into topics %s, %s and into DataFusion" % (topic, stopic))

    only = set(args.only.split(",")) if args.only else None
    if not only or "refusals" in only:
        refusals(args.server, ctx, topic)
    jobs = []
    for i, (name, (sql, modes, ordered)) in enumerate(QUERIES.items()):
        if only and name not in only:
            continue
        plan = Serde.serialize_bytes(sql, ctx)
        want, names = df_rows(ctx, sql)
        spec = job_spec("sbd-%s-%s" % (name, tag), plan, topic, "bounded",
                        i % 2 == 0, {"kind": "memory"})
        jobs.append((name, submit(args.server, spec), want, names, ordered))
        if "s" in modes or "d" in modes:
            windowed = "GROUP BY" in sql
            swant = want if windowed else df_rows(sctx, sql)[0]
            out = "sbd-out-%s-%s" % (name.replace("_", "-"), tag)
            topic_create(args.kafka_sh, out)
            sspec = job_spec("sbd-s-%s-%s" % (name, tag), plan, stopic,
                             "stream", i % 2 == 1,
                             {"kind": "kafka", "topic": out})
            if "d" in modes:
                sspec["plan"]["dedup_within_ms"] = 4 * SPAN_MS
            jobs.append((name + " (stream)", submit(args.server, sspec), swant,
                         names, ("stream", out)))
    for name, p, sql in incql_plans():
        if only and name not in only:
            continue
        want, names = df_rows(ctx, sql)
        spec = {"name": "sbd-%s-%s" % (name, tag), "mode": "bounded",
                "plan": {"substrait": p,
                         "bindings": {"orders": {"topic": topic}},
                         "registry": {"urn": INCQL_URN,
                                      "anchors": INCQL_ANCHORS}},
                "sink": {"kind": "memory"}, "event_time": {"field": "ts"}}
        jid = submit(args.server, spec)
        # identity and registry kept with the job: status and observation
        _, st = http(args.server, "GET", "/v1/jobs/" + jid)
        sub = st.get("substrait") or {}
        _, obs = http(args.server, "GET", "/v1/jobs/%s/observations" % jid)
        first = (obs.get("observations") or [{}])[0]
        if (sub.get("producer") != "incql-rfc002" or
                sub.get("wire_version") != "0.85.0" or
                (sub.get("registry") or {}).get("urn") != INCQL_URN or
                len(sub.get("sha256", "")) != 64 or
                first.get("kind") != "job_submitted" or
                (first.get("substrait") or {}).get("sha256") != sub["sha256"]):
            fail("%s: status/observation identity: %s / %s" %
                 (name, json.dumps(sub), json.dumps(first)))
        log("ok: %s: status and job_submitted carry sha256 %s..., producer "
            "%s, version %s (wire %s), the registry" % (
                name, sub["sha256"][:12], sub["producer"], sub["version"],
                sub["wire_version"]))
        jobs.append((name, jid, want, names, False))
    if args.isthmus:
        names_i = [n for n in ISTHMUS_QUERIES if not only or n in only]
        paths = {n: os.path.join(args.work, "isthmus-%s.bin" % n)
                 for n in names_i}
        cmd = args.isthmus.split("\x1f")
        for n in names_i:
            cmd += [QUERIES[n][0], paths[n]]
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        for name in names_i:
            sql = QUERIES[name][0]
            path = paths[name]
            with open(path, "rb") as f:
                plan = f.read()
            want, names = df_rows(ctx, sql)
            ip = plan_pb2.Plan.FromString(plan)
            log("ok: isthmus %s: producer %s, URNs %s, functions %s" % (
                name, ip.version.producer,
                [u.urn for u in ip.extension_urns],
                [e.extension_function.name for e in ip.extensions]))
            cols = {n.upper(): n for n in ARROW_SCHEMA.names}
            spec = job_spec("sbd-isthmus-%s-%s" % (name, tag), plan, topic,
                            "bounded", False, {"kind": "memory"},
                            columns=cols)
            jid = submit(args.server, spec)
            jobs.append(("isthmus " + name, jid, want,
                         [n.upper() for n in names], False))
    log("ok: %d jobs submitted" % len(jobs))
    for name, jid, want, names, how in jobs:
        if isinstance(how, tuple):
            end = time.time() + 120
            got = []
            while time.time() < end:
                got = consume(args.bootstrap, how[1])
                if len(got) >= len(want):
                    break
                time.sleep(0.3)
            http(args.server, "POST", "/v1/jobs/%s/cancel" % jid, {})
            compare(name, want, sv_rows(got, names), False)
        else:
            got = wait_result(args.server, jid, name)
            if names and names[0] != names[0].lower() and got:
                # Isthmus: RelRoot names are upper case (EXPR$n for
                # unnamed columns): compare by position
                names = list(got[0].keys())
            compare(name, want, sv_rows(got, names), how)
        log("ok: %s: %d rows equal DataFusion's" % (name, len(want)))
    log("ok: all in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
