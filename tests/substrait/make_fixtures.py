#!/usr/bin/env python3
"""Regenerate the DataFusion plan fixtures of tests/unit/test_substrait.c.

Run with the test venv (deploy/requirements-test.txt):
    build/venv/bin/python tests/substrait/make_fixtures.py
Each plan is written in the proto3 JSON mapping (substrait-protobuf 0.85,
the classes matching DataFusion 55's protos, so the JSON is lossless)."""
import os
from datafusion import SessionContext
from datafusion.substrait import Serde
from google.protobuf import json_format
from substrait import plan_pb2

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plans")
QUERIES = {
    "df_filter_project": "SELECT id, lower(region) AS region, amount * 2 AS a2 "
                         "FROM orders WHERE status = 'completed' AND amount > 0",
    "df_group_by": "SELECT region, sum(amount), count(*) FROM orders GROUP BY region",
    "df_date_bin": "SELECT date_bin(INTERVAL '1 minute', ts) AS window_start, region, "
                   "sum(amount) AS total, count(*) AS n FROM orders "
                   "GROUP BY date_bin(INTERVAL '1 minute', ts), region",
    "df_date_trunc": "SELECT date_trunc('minute', ts) AS w, region, max(amount) AS mx "
                     "FROM orders GROUP BY date_trunc('minute', ts), region",
    "df_distinct": "SELECT DISTINCT id, region FROM orders",
    "df_row_number": "SELECT id, region, amount, ts FROM (SELECT id, region, amount, ts, "
                     "row_number() OVER (PARTITION BY id ORDER BY ts) AS rn FROM orders) "
                     "WHERE rn = 1",
    "df_order_limit": "SELECT id, amount FROM orders ORDER BY amount DESC LIMIT 5",
    "df_join": "SELECT o.id, o.amount, r.manager FROM orders o JOIN regions r "
               "ON o.region = r.region",
    "df_md5": "SELECT md5(region) AS h FROM orders",
    "df_global": "SELECT sum(amount) AS s, count(*) AS n, avg(amount) AS a FROM orders",
}


def main():
    ctx = SessionContext()
    ctx.sql("CREATE TABLE orders (id BIGINT, region VARCHAR, amount DOUBLE, "
            "status VARCHAR, ts TIMESTAMP)").collect()
    ctx.sql("CREATE TABLE regions (region VARCHAR, manager VARCHAR)").collect()
    for name, sql in QUERIES.items():
        plan = plan_pb2.Plan.FromString(Serde.serialize_bytes(sql, ctx))
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            f.write(json_format.MessageToJson(plan, indent=1))
            f.write("\n")


if __name__ == "__main__":
    main()
