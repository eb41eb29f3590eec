#!/bin/bash
# Checks ebzipd's Prometheus exposition: starts the server (CPU backend),
# makes a known set of requests (tests/metrics/make_requests.py: compress,
# decompress, a bad header, a corrupt archive), scrapes /metrics, runs
# `promtool check metrics` on it and checks each series the design names
# against the client's own accounting (check_exposition.py).
#
# usage: metrics_test.sh EBZIPD PYTHON_DIR
#   EBZIPD      the ebzipd binary
#   PYTHON_DIR  build/python (the generated ebzip.v1 stubs)
# Exit 77 (skipped) when promtool is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -eq 2 ]] || { echo "usage: $0 EBZIPD PYTHON_DIR" >&2; exit 2; }
EBZIPD=$1
export PYTHONPATH=$2${PYTHONPATH:+:$PYTHONPATH}

PROMTOOL=$(command -v promtool || true)
if [[ -z $PROMTOOL ]]; then
  echo "SKIP: promtool not found (Debian package prometheus)"
  exit 77
fi

WORK=$(mktemp -d)
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
trap 'stop_all; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

limit=$((1 << 30))
start=$(date +%s)
start_ebzipd --max_queued_bytes=$limit

# Before any request: the exposition is already valid (series exist at 0).
http_get "http://127.0.0.1:$METRICS_PORT/metrics" > "$WORK/before.txt"
"$PROMTOOL" check metrics < "$WORK/before.txt" > "$WORK/promtool_before.txt" 2>&1 || {
  echo "FAIL: promtool (exit $?) before any request:"; cat "$WORK/promtool_before.txt"; exit 1; }

make_requests "$WORK/acct.json"
echo "client: $(cat "$WORK/acct.json")"

"$PY" "$here/check_exposition.py" --url "http://127.0.0.1:$METRICS_PORT/metrics" \
    --acct "$WORK/acct.json" --save "$WORK/metrics.txt" --queued_limit $limit \
    --elapsed $(($(date +%s) - start + 1))

# promtool: exit 1 means the exposition does not parse (or cannot be read),
# 3 that it parses with lint problems (a counter without _total, a unit
# missing from a name): both fail, so names stay as Prometheus wants them.
rc=0
"$PROMTOOL" check metrics < "$WORK/metrics.txt" > "$WORK/promtool.txt" 2>&1 || rc=$?
if [[ $rc != 0 ]]; then
  echo "FAIL  promtool check metrics exited $rc:"; cat "$WORK/promtool.txt"
  echo "--- exposition ---"; cat "$WORK/metrics.txt"; exit 1
fi
echo "ok    promtool check metrics: no problems"
# The exposition counted above must be one ebzipd produced under load too,
# not only when idle: a parse error there would have exited 1.

stop_ebzipd
echo "PASS"
