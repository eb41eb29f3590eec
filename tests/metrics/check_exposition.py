#!/usr/bin/python3
"""Scrapes ebzipd's /metrics and checks it against what make_requests.py did.

The server counts a request as finished when gRPC reports the call done,
which may come a moment after the client has seen the status, so the scrape
is repeated (up to --settle seconds) until the request counters reach the
client's numbers and nothing is in flight; then every check runs on that
last scrape, which is also saved (--save) for promtool.

usage: check_exposition.py --url URL --acct ACCOUNT.json --save FILE
                           [--queued_limit BYTES] [--settle SECONDS]
Exit 0 when every check passes; otherwise prints each failure and exits 1.
"""
import argparse
import json
import math
import re
import sys
import time
import urllib.request

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')

EXPECTED_TYPES = {
    "ebzip_requests_total": "counter",
    "ebzip_inflight_requests": "gauge",
    "ebzip_received_bytes_total": "counter",
    "ebzip_sent_bytes_total": "counter",
    "ebzip_request_duration_seconds": "histogram",
    "ebzip_queue_duration_seconds": "histogram",
    "ebzip_compute_duration_seconds": "histogram",
    "ebzip_batch_requests": "histogram",
    "ebzip_batch_bytes": "histogram",
    "ebzip_compression_ratio": "histogram",
    "ebzip_queued_bytes": "gauge",
    "ebzip_queued_bytes_limit": "gauge",
    "ebzip_queued_requests": "gauge",
    "ebzip_device_memory_used_bytes": "gauge",
    "ebzip_device_memory_total_bytes": "gauge",
    "ebzip_device_busy_seconds_total": "counter",
    "ebzip_build_info": "gauge",
    "ebzip_region_requests_total": "counter",
    "ebzip_region_saved_bytes_total": "counter",
}


def parse(text):
    """Returns ({family: type}, [(name, {label: value}, float)])."""
    types, samples = {}, []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == "TYPE":
                types[parts[2]] = parts[3].strip()
            continue
        m = SAMPLE.match(line)
        if m is None:
            raise ValueError(f"line {number} is not a sample: {line!r}")
        labels = {}
        rest = m.group(2) or ""
        pos = 0
        while pos < len(rest):
            lm = LABEL.match(rest, pos)
            if lm is None:
                raise ValueError(f"line {number}: bad labels {rest!r}")
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        samples.append((m.group(1), labels, float(m.group(3))))
    return types, samples


class Exposition:
    def __init__(self, text):
        self.text = text
        self.types, self.samples = parse(text)

    def select(self, name, **labels):
        return [(l, v) for n, l, v in self.samples
                if n == name and all(l.get(k) == w for k, w in labels.items())]

    def value(self, name, **labels):
        """The one sample matching exactly these labels (others ignored but 'le'), or None."""
        hits = [v for l, v in self.select(name, **labels)
                if set(l) - {"le"} == set(labels) - {"le"}]
        if len(hits) > 1:
            raise ValueError(f"{name}{labels} matches {len(hits)} samples")
        return hits[0] if hits else None

    def total(self, name, **labels):
        return sum(v for _, v in self.select(name, **labels))


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode("utf-8")


def settled(e, acct):
    try:
        return (e.value("ebzip_requests_total", method="compress", code="OK") == acct["compress_ok"]
                and e.value("ebzip_requests_total", method="compress", code="INVALID_ARGUMENT")
                == acct["compress_invalid_argument"]
                and e.value("ebzip_requests_total", method="decompress", code="OK")
                == acct["decompress_ok"]
                and e.value("ebzip_requests_total", method="decompress", code="DATA_LOSS")
                == acct["decompress_data_loss"]
                and e.total("ebzip_inflight_requests") == 0
                and e.value("ebzip_queued_bytes") == 0)
    except ValueError:
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--acct", required=True)
    p.add_argument("--save", required=True)
    p.add_argument("--queued_limit", type=float, default=None)
    p.add_argument("--settle", type=float, default=10)
    p.add_argument("--elapsed", type=float, default=3600,
                   help="an upper bound on the seconds the server has run")
    args = p.parse_args()
    with open(args.acct) as f:
        acct = json.load(f)

    deadline = time.monotonic() + args.settle
    while True:
        e = Exposition(fetch(args.url))
        if settled(e, acct) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    with open(args.save, "w") as f:
        f.write(e.text)

    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    def equal(got, want, what):
        check(got is not None and got == want, f"{what} = {got} (want {want})")

    # Types, as the design names the series.
    for family, kind in EXPECTED_TYPES.items():
        equal(e.types.get(family), kind, f"TYPE of {family}")

    # Every sample is a number; counters and histogram parts never negative.
    for name, labels, v in e.samples:
        if not name.startswith("ebzip_"):
            continue
        if math.isnan(v) or v < 0:
            check(False, f"{name}{labels} = {v}: every ebzip_ sample is a non-negative number")

    # Requests by method and status.
    n_compress = acct["compress_ok"] + acct["compress_invalid_argument"]
    n_decompress = acct["decompress_ok"] + acct["decompress_data_loss"]
    for method, code, key in [("compress", "OK", "compress_ok"),
                              ("compress", "INVALID_ARGUMENT", "compress_invalid_argument"),
                              ("decompress", "OK", "decompress_ok"),
                              ("decompress", "DATA_LOSS", "decompress_data_loss")]:
        equal(e.value("ebzip_requests_total", method=method, code=code), acct[key],
              f'ebzip_requests_total{{method="{method}",code="{code}"}}')
    equal(e.total("ebzip_requests_total"), n_compress + n_decompress,
          "sum of ebzip_requests_total (no request counted under another code)")

    # Payload bytes, as the client counted them.
    equal(e.value("ebzip_received_bytes_total", method="compress"), acct["compress_bytes_sent"],
          'ebzip_received_bytes_total{method="compress"}')
    equal(e.value("ebzip_sent_bytes_total", method="compress"), acct["compress_bytes_received"],
          'ebzip_sent_bytes_total{method="compress"}')
    equal(e.value("ebzip_received_bytes_total", method="decompress"),
          acct["decompress_bytes_sent"], 'ebzip_received_bytes_total{method="decompress"}')
    equal(e.value("ebzip_sent_bytes_total", method="decompress"),
          acct["decompress_bytes_received"], 'ebzip_sent_bytes_total{method="decompress"}')

    # Histograms: buckets cumulative, +Inf = _count, counts as expected.
    def histogram(family, want_count, **labels):
        what = f"{family}{labels}"
        buckets = sorted(((float(l["le"]), v) for l, v in e.select(family + "_bucket", **labels)
                          if set(l) - {"le"} == set(labels)), key=lambda b: b[0])
        count = e.value(family + "_count", **labels)
        total = e.value(family + "_sum", **labels)
        check(len(buckets) >= 2 and buckets[-1][0] == math.inf,
              f"{what}: {len(buckets)} buckets ending in +Inf")
        check(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])),
              f"{what}: bucket counts are cumulative")
        if buckets:
            equal(buckets[-1][1], count, f"{what}: le=+Inf bucket vs _count")
        if want_count is not None:
            equal(count, want_count, f"{what}_count")
        check(total is not None and (total > 0) == (count is not None and count > 0),
              f"{what}_sum = {total} is positive exactly when there are observations")
        return count, total

    for method, n in [("compress", n_compress), ("decompress", n_decompress)]:
        _, s = histogram("ebzip_request_duration_seconds", n, method=method)
        check(s is not None and s <= args.elapsed,
              f"ebzip_request_duration_seconds_sum{{method={method}}} = {s} <= {args.elapsed} s")
    # Only admitted work is queued: the refused and the corrupt requests never are.
    histogram("ebzip_queue_duration_seconds", acct["compress_ok"], method="compress")
    histogram("ebzip_queue_duration_seconds", acct["decompress_ok"], method="decompress")
    backend = acct.get("backend", "cpu").split()[0]
    histogram("ebzip_compute_duration_seconds", acct["compress_ok"],
              method="compress", device=backend)
    histogram("ebzip_compute_duration_seconds", acct["decompress_ok"],
              method="decompress", device=backend)

    # Every successful request ran in exactly one batch.
    ok_requests = acct["compress_ok"] + acct["decompress_ok"]
    histogram("ebzip_batch_requests", None, device=backend)
    equal(e.value("ebzip_batch_requests_sum", device=backend), ok_requests,
          "ebzip_batch_requests_sum (requests run in batches)")
    batches = e.value("ebzip_batch_requests_count", device=backend)
    check(batches is not None and 1 <= batches <= ok_requests,
          f"ebzip_batch_requests_count = {batches} in [1, {ok_requests}]")
    histogram("ebzip_batch_bytes", batches, device=backend)
    array_bytes = acct["compress_bytes_sent"] + acct["decompress_bytes_received"]
    equal(e.value("ebzip_batch_bytes_sum", device=backend), array_bytes,
          "ebzip_batch_bytes_sum (array bytes of the successful requests)")

    _, ratio_sum = histogram("ebzip_compression_ratio", acct["compress_ok"])
    want = sum(acct["ratios"])
    check(ratio_sum is not None and abs(ratio_sum - want) <= 1e-9 * want,
          f"ebzip_compression_ratio_sum = {ratio_sum} (client saw {want})")

    # State after the work: nothing held, queued or in flight.
    equal(e.value("ebzip_queued_bytes"), 0.0, "ebzip_queued_bytes after the requests")
    equal(e.value("ebzip_queued_requests"), 0.0, "ebzip_queued_requests after the requests")
    for method in ("compress", "decompress"):
        equal(e.value("ebzip_inflight_requests", method=method), 0.0,
              f'ebzip_inflight_requests{{method="{method}"}}')
    if args.queued_limit is not None:
        equal(e.value("ebzip_queued_bytes_limit"), args.queued_limit, "ebzip_queued_bytes_limit")
    busy = e.value("ebzip_device_busy_seconds_total", device=backend)
    check(busy is not None and 0 < busy <= args.elapsed,
          f'ebzip_device_busy_seconds_total{{device="{backend}"}} = {busy} in (0, {args.elapsed}]')
    check(e.value("ebzip_device_memory_used_bytes", device=backend) is not None,
          f'ebzip_device_memory_used_bytes{{device="{backend}"}} present')
    info = e.select("ebzip_build_info")
    check(len(info) == 1 and info[0][1] == 1 and info[0][0].get("backend") == backend.split(":")[0]
          and info[0][0].get("version"),
          f"ebzip_build_info = {info}: one series, value 1, backend and version labels")

    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("all exposition checks passed")


if __name__ == "__main__":
    main()
