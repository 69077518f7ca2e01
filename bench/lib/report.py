#!/usr/bin/env python3
"""bench/lib/report.py — the markdown table of bench/run.sh's JSON rows.

usage: report.py ROWS.json [META.json]     print the table (markdown)
       report.py --check ROWS.json         exit 1 unless every contender's
                                           output record count is the
                                           expected one (the CI smoke check;
                                           W4: one record per auction, none
                                           with another seller's name)

One row per workload, delivery and contender. The streamvisor rows carry
the ratios: throughput streamvisor/raw and streamvisor/Flink (>1: faster),
CPU per record streamvisor/Flink and peak RSS streamvisor/Flink (<1: less),
and throughput and CPU per record streamvisor/Kafka Streams.
"""
import json
import sys

ORDER = {"raw-librdkafka": 0, "streamvisor": 1, "kstreams": 2, "flink": 3}


def is_sv(contender):
    """streamvisor at parallelism 1 ("streamvisor") or N ("streamvisor-pN";
    "streamvisor-rp-pN": repartitioned, docs/repartition.md), with a memory
    budget of M MB ("streamvisor[-pN]-mM")"""
    return contender == "streamvisor" or contender.startswith("streamvisor-")


def order(contender):
    if contender.startswith("streamvisor-"):
        par, mem, rp = 1, 0, 0
        for part in contender.split("-")[1:]:
            if part == "rp":
                rp = 0.0005
            elif part.startswith("p"):
                par = int(part[1:])
            elif part.startswith("m"):
                mem = int(part[1:])
        return 1 + par / 1000 + mem / 1e7 + rp
    return ORDER.get(contender, 9)


def fmt(v, nd=0):
    if v is None:
        return "—"
    if isinstance(v, float) and nd:
        return f"{v:.{nd}f}"
    if isinstance(v, (int, float)):
        return f"{v:,.0f}" if abs(v) >= 100 or nd == 0 else f"{v:.{nd}f}"
    return str(v)


def pair(r, a, b, nd=0):
    if r.get(a) is None:
        return "—"
    return f"{fmt(r.get(a), nd)} / {fmt(r.get(b), nd)}"


def ratio(x, y):
    if not x or not y:
        return "—"
    return f"{x / y:.2f}×"


def find(rows, c, w, d):
    for r in rows:
        if r["contender"] == c and r["workload"] == w and r["delivery"] == d:
            return r
    return None


def table(rows, meta):
    out = []
    if meta:
        q = " (QUICK run: --quick, {:,} records)".format(meta["records"]) if meta.get("quick") else ""
        bids = (f"input {meta['input']['records']:,} records, "
                f"{meta['input']['avg_bytes']} bytes on average, {meta['input']['partitions']} partitions"
                if meta['input']['records'] else "no bids loaded (W4 only)")
        out.append(f"Run {meta['date']}{q}, commit {meta['commit']}: {meta['cores']} cores "
                   f"({meta['cpu']}), {meta['memory']}; {bids}; "
                   f"Kafka broker {meta['kafka_broker']}, librdkafka {meta['librdkafka']}, "
                   f"Kafka Streams {meta.get('kafka_streams', '—')}, "
                   f"Flink {meta['flink']} (connector {meta['flink_connector_kafka']}), {meta['java']}, "
                   f"gcc {meta['gcc']}; wall time of the run {meta['wall_seconds']} s; "
                   f"load average at start {meta.get('loadavg_start')}, at end {meta.get('loadavg_end')} "
                   f"(other work on the machine shows here); "
                   f"command `{meta.get('command', 'bench/run.sh')}`.")
        q3 = meta.get("input_w4")
        if q3:
            out.append("")
            out.append(f"W4 (lookup join, Nexmark q3-like): {q3['persons']:,} persons "
                       f"(+{q3['sentinels']} sentinels) in a compacted table topic, then "
                       f"{q3['records']:,} auctions ({q3['avg_bytes']} bytes on average), both "
                       f"{q3['partitions']} partitions keyed by person id; records/s and CPU per "
                       f"record count auctions; raw librdkafka has no join (no W4 row).")
        out.append("")
    out.append("| workload | delivery | contender | records/s | CPU s per M rec | peak RSS MB "
               "| checkpoint p50 / p99 ms | latency p50 / p99 ms (rate) | recovery s | output records "
               "| sv/raw rec/s | sv/Flink rec/s | sv/Flink CPU per rec | sv/Flink RSS "
               "| sv/KStreams rec/s | sv/KStreams CPU per rec |")
    out.append("|" + "---|" * 16)
    rows = sorted(rows, key=lambda r: (r["workload"], r["delivery"] != "at_least_once",
                                       order(r["contender"])))
    for r in rows:
        lat = pair(r, "latency_p50_ms", "latency_p99_ms")
        if r.get("latency_rate_per_s") and r.get("latency_p50_ms") is not None:
            lat += f" ({r['latency_rate_per_s']:,}/s)"
        ck = pair(r, "checkpoint_p50_ms", "checkpoint_p99_ms")
        if r.get("stream_checkpoints"):
            ck += (f" (stream {r['stream_checkpoint_p50_ms']} / "
                   f"{r['stream_checkpoint_p99_ms']}, n={r['stream_checkpoints']})")
        cells = [r["workload"], r["delivery"], r["contender"], fmt(r.get("records_per_s")),
                 fmt(r.get("cpu_s_per_million"), 2), fmt(r.get("peak_rss_mb"), 0),
                 ck, lat,
                 fmt(r.get("recovery_s"), 2), fmt(r.get("output_records"))]
        if is_sv(r["contender"]):
            raw = find(rows, "raw-librdkafka", r["workload"], r["delivery"]) or {}
            fl = find(rows, "flink", r["workload"], r["delivery"]) or {}
            cells += [ratio(r.get("records_per_s"), raw.get("records_per_s")),
                      ratio(r.get("records_per_s"), fl.get("records_per_s")),
                      ratio(r.get("cpu_s_per_million"), fl.get("cpu_s_per_million")),
                      ratio(r.get("peak_rss_mb"), fl.get("peak_rss_mb"))]
            ks = find(rows, "kstreams", r["workload"], r["delivery"]) or {}
            cells += [ratio(r.get("records_per_s"), ks.get("records_per_s")),
                      ratio(r.get("cpu_s_per_million"), ks.get("cpu_s_per_million"))]
        else:
            cells += [""] * 6
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out)


def check(rows):
    bad = []
    for r in rows:
        w, d = r["workload"], r["delivery"]
        # W4: every auction's seller is in the table, so every contender
        # writes one record per auction, each with its seller's name
        if w == "W4" and r.get("output_records") != r.get("records"):
            bad.append(f"{r['contender']} {w} {d}: {r.get('output_records')} joined records "
                       f"out of {r.get('records')} auctions")
        if w == "W4" and r.get("output_wrong", 0) != 0:
            bad.append(f"{r['contender']} {w} {d}: {r.get('output_wrong')} records with "
                       f"another seller's name")
        if r["contender"] == "raw-librdkafka" and r.get("output_records") != r.get("records"):
            bad.append(f"raw {w} {d}: {r.get('output_records')} out of {r.get('records')}")
        if is_sv(r["contender"]):
            raw = find(rows, "raw-librdkafka", w, d)
            if raw and r.get("records") != raw.get("records"):
                bad.append(f"{r['contender']} {w} {d}: read {r.get('records')}, input {raw.get('records')}")
        # W1 at parallelism N reads the same topic as at 1 (W2 and W3 read
        # a copy keyed by their window key, loaded later: other event times)
        if r["contender"].startswith("streamvisor-p") and w == "W1":
            sv = find(rows, "streamvisor", w, d)
            if sv and sv.get("output_records") != r.get("output_records"):
                bad.append(f"{w} {d}: {r['contender']} wrote {r.get('output_records')} records, "
                           f"streamvisor at parallelism 1 {sv.get('output_records')}")
        # a repartitioned run reads the same unkeyed topic as parallelism 1
        if r["contender"].startswith("streamvisor-rp-p"):
            sv = find(rows, "streamvisor", w, d)
            if sv and sv.get("output_records") != r.get("output_records"):
                bad.append(f"{w} {d}: {r['contender']} wrote {r.get('output_records')} records, "
                           f"streamvisor at parallelism 1 {sv.get('output_records')}")
        if (is_sv(r["contender"]) or r["contender"] in ("flink", "kstreams")) and not r.get("output_records"):
            bad.append(f"{r['contender']} {w} {d}: no output")
        if r["contender"] == "flink":
            sv = find(rows, "streamvisor", w, d)
            if sv and sv.get("output_records") != r.get("output_records"):
                bad.append(f"{w} {d}: streamvisor wrote {sv.get('output_records')} records, "
                           f"Flink {r.get('output_records')}")
        if r["contender"] == "kstreams":
            if r.get("records_read", 0) < r.get("records", 0):
                bad.append(f"kstreams {w} {d}: read {r.get('records_read')}, input {r.get('records')}")
            sv = find(rows, "streamvisor", w, d)
            if sv and sv.get("output_records") != r.get("output_records"):
                bad.append(f"{w} {d}: streamvisor wrote {sv.get('output_records')} records, "
                           f"Kafka Streams {r.get('output_records')}")
    for b in bad:
        print("run.sh check: " + b, file=sys.stderr)
    return 1 if bad else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--check":
        sys.exit(check(json.load(open(sys.argv[2]))))
    rows = json.load(open(sys.argv[1]))
    meta = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else None
    print(table(rows, meta))


if __name__ == "__main__":
    main()
