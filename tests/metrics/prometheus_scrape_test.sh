#!/bin/bash
# A real Prometheus server scrapes ebzipd: starts ebzipd (CPU backend) and
# Debian's prometheus with a temporary configuration that scrapes the
# metrics port every second, makes a known set of requests
# (make_requests.py), then polls Prometheus's HTTP API (up to 60 s) until
# the target is up and the request counters it stored match the client's.
#
# usage: prometheus_scrape_test.sh EBZIPD PYTHON_DIR
# Exit 77 (skipped) when prometheus is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -eq 2 ]] || { echo "usage: $0 EBZIPD PYTHON_DIR" >&2; exit 2; }
EBZIPD=$1
export PYTHONPATH=$2${PYTHONPATH:+:$PYTHONPATH}

PROMETHEUS=$(command -v prometheus || true)
if [[ -z $PROMETHEUS ]]; then
  echo "SKIP: prometheus not found (Debian package prometheus)"
  exit 77
fi

WORK=$(mktemp -d)
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
trap 'stop_all; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

start_ebzipd

# Prometheus cannot listen on port 0 and say which port it got: take a free
# port and retry with another if it is taken in the meantime.
start_prometheus() {
  cat > "$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ebzipd
    static_configs:
      - targets: ['127.0.0.1:$METRICS_PORT']
YML
  local attempt
  for attempt in 1 2 3; do
    PROM_PORT=$(free_port)
    "$PROMETHEUS" --config.file="$WORK/prometheus.yml" \
        --storage.tsdb.path="$WORK/tsdb" \
        --web.listen-address="127.0.0.1:$PROM_PORT" \
        > "$WORK/prometheus.log" 2>&1 &
    PROM_PID=$!
    PIDS+=("$PROM_PID")
    for _ in $(seq 300); do
      if ! kill -0 "$PROM_PID" 2>/dev/null; then break; fi
      if http_get "http://127.0.0.1:$PROM_PORT/-/ready" > /dev/null 2>&1; then
        echo "prometheus pid $PROM_PID on 127.0.0.1:$PROM_PORT"
        return 0
      fi
      sleep 0.1
    done
    echo "prometheus did not become ready (attempt $attempt):" >&2
    tail -5 "$WORK/prometheus.log" >&2
    kill -KILL "$PROM_PID" 2>/dev/null || true
    wait "$PROM_PID" 2>/dev/null || true
  done
  return 1
}
start_prometheus

make_requests "$WORK/acct.json"
echo "client: $(cat "$WORK/acct.json")"

# Poll the HTTP API until Prometheus has stored what the client did.
"$PY" - "http://127.0.0.1:$PROM_PORT" "$WORK/acct.json" <<'PYEOF'
import json, sys, time, urllib.parse, urllib.request

base, acct = sys.argv[1], json.load(open(sys.argv[2]))

def query(expr):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    return body["data"]["result"]

def scalar(expr):
    """The value of a query returning one series, or None."""
    result = query(expr)
    return float(result[0]["value"][1]) if len(result) == 1 else None

want = {
    'up{job="ebzipd"}': 1.0,
    'ebzip_requests_total{job="ebzipd",method="compress",code="OK"}': acct["compress_ok"],
    'ebzip_requests_total{job="ebzipd",method="compress",code="INVALID_ARGUMENT"}':
        acct["compress_invalid_argument"],
    'ebzip_requests_total{job="ebzipd",method="decompress",code="OK"}': acct["decompress_ok"],
    'ebzip_requests_total{job="ebzipd",method="decompress",code="DATA_LOSS"}':
        acct["decompress_data_loss"],
    'ebzip_received_bytes_total{job="ebzipd",method="compress"}': acct["compress_bytes_sent"],
    'ebzip_sent_bytes_total{job="ebzipd",method="decompress"}': acct["decompress_bytes_received"],
    'sum(ebzip_inflight_requests{job="ebzipd"})': 0.0,
    'ebzip_queued_bytes{job="ebzipd"}': 0.0,
    'ebzip_build_info{job="ebzipd",backend="cpu"}': 1.0,
}
deadline = time.monotonic() + 60
while True:
    got = {expr: scalar(expr) for expr in want}
    if all(got[e] == w for e, w in want.items()) or time.monotonic() > deadline:
        break
    time.sleep(0.5)
failed = False
for expr, w in want.items():
    ok = got[expr] == w
    failed |= not ok
    print(("ok    " if ok else "FAIL  ") + f"{expr} = {got[expr]} (want {w})")

# Histograms arrive as series Prometheus can compute with.
count = scalar('sum(ebzip_request_duration_seconds_count{job="ebzipd"})')
n = sum(acct[k] for k in ("compress_ok", "compress_invalid_argument",
                          "decompress_ok", "decompress_data_loss"))
ok = count == n
failed |= not ok
print(("ok    " if ok else "FAIL  ") + f"sum of ebzip_request_duration_seconds_count = {count} (want {n})")
p99 = scalar('histogram_quantile(0.99, sum by (le) (ebzip_request_duration_seconds_bucket{job="ebzipd"}))')
ok = p99 is not None and 0 < p99 <= 65.536
failed |= not ok
print(("ok    " if ok else "FAIL  ") + f"histogram_quantile(0.99, request duration) = {p99} s")

# The scrape itself: healthy, no error, samples stored.
with urllib.request.urlopen(f"{base}/api/v1/targets", timeout=10) as r:
    targets = json.load(r)["data"]["activeTargets"]
ebz = [t for t in targets if t["labels"].get("job") == "ebzipd"]
ok = len(ebz) == 1 and ebz[0]["health"] == "up" and not ebz[0]["lastError"]
failed |= not ok
print(("ok    " if ok else "FAIL  ") + "target: " +
      (json.dumps({k: ebz[0][k] for k in ("health", "lastError", "scrapeUrl")}) if ebz else "none"))
samples = scalar('scrape_samples_scraped{job="ebzipd"}')
ok = samples is not None and samples > 100
failed |= not ok
print(("ok    " if ok else "FAIL  ") + f"scrape_samples_scraped = {samples}")
sys.exit(1 if failed else 0)
PYEOF

stop_ebzipd
echo "PASS"
