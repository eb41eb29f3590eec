#!/usr/bin/env bash
# The monitoring files for ebzipd are valid and do what they say:
#   deploy/prometheus/rules.yml       promtool check rules, and its unit
#                                     tests (rules_test.yml) pass
#   deploy/prometheus/prometheus.yml  promtool check config
#   deploy/grafana/ebzipd.json        valid JSON; uid set; every panel has a
#                                     datasource and a target with a PromQL
#                                     expression that parses; unique ids
#   deploy/grafana/provisioning/      the datasource uid the dashboard uses
# Every metric the rules and the dashboard name must be one ebzipd declares
# (server/metrics.cc). Then the unit tests are shown to bite: each mutation
# of rules.yml below must make them fail.
#
#   tests/deploy/prometheus_rules_test.sh     (from any directory)
# Exit 77 (skipped) when promtool is not installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prom=$root/deploy/prometheus
graf=$root/deploy/grafana
PY=/usr/bin/python3

if ! command -v promtool >/dev/null; then
  echo "SKIP: promtool not found (Debian package prometheus)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# ---- Prometheus ------------------------------------------------------------
promtool check rules "$prom/rules.yml" || fail "promtool check rules"
# Relative paths in rules_test.yml (rule_files) are resolved from its directory.
promtool test rules "$prom/rules_test.yml" || fail "promtool test rules"
promtool check config "$prom/prometheus.yml" || fail "promtool check config"

if command -v yamllint >/dev/null; then
  if yamllint -s -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable,
                     truthy: {check-keys: false}}}' "$prom"/*.yml "$graf"/provisioning/*/*.yml; then
    echo "ok: yamllint"
  else
    fail "yamllint"
  fi
else
  echo "note: yamllint not installed, YAML style not checked"
fi

# ---- Grafana ---------------------------------------------------------------
# json.load first, on its own, for a plain error message on broken JSON.
"$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$graf/ebzipd.json" \
  || fail "ebzipd.json is not valid JSON"

# Structural checks; writes every expression (Grafana variables replaced) to
# a rule file for promtool to parse, and the metric names used to a list.
"$PY" - "$graf/ebzipd.json" "$graf/provisioning" "$work" <<'PYEOF' || fail "dashboard checks"
import json, os, re, sys

path, prov, work = sys.argv[1:4]
d = json.load(open(path))
errors = []

def err(msg):
    errors.append(msg)

if d.get("uid") != "ebzipd":
    err(f"uid is {d.get('uid')!r}, want 'ebzipd'")
if not d.get("title"):
    err("no title")
if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
    err(f"schemaVersion {d.get('schemaVersion')!r}: want a current one (>= 36)")

variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
ds = variables.get("datasource")
if ds is None or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
    err("no template variable 'datasource' of type datasource for prometheus")
for name in ("instance", "device"):
    v = variables.get(name)
    if v is None or v.get("type") != "query":
        err(f"no query template variable {name!r}")
q = variables.get("instance", {}).get("query")
q = q.get("query") if isinstance(q, dict) else q
if q != "label_values(ebzip_build_info, instance)":
    err(f"instance variable query is {q!r}")

# The datasource variable's default must be the provisioned datasource.
try:
    import yaml
    dsfile = yaml.safe_load(open(os.path.join(prov, "datasources", "prometheus.yml")))
    uids = {x.get("uid"): x for x in dsfile.get("datasources", [])}
    boards = yaml.safe_load(open(os.path.join(prov, "dashboards", "ebzip.yml")))
    paths = [p.get("options", {}).get("path") for p in boards.get("providers", [])]
except ImportError:
    print("note: PyYAML missing, provisioning files not cross-checked")
    uids, paths = None, None
if uids is not None:
    want = (ds or {}).get("current", {}).get("value")
    if want not in uids:
        err(f"datasource variable defaults to {want!r}, provisioned uids: {sorted(map(str, uids))}")
    elif uids[want].get("type") != "prometheus" or uids[want].get("url") != "http://prometheus:9090":
        err(f"provisioned datasource {want!r} is not prometheus at http://prometheus:9090")
    if paths != ["/var/lib/grafana/dashboards"]:
        err(f"dashboard provider paths {paths}, want ['/var/lib/grafana/dashboards']")

# Panels, rows' nested panels included.
def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels", []))

ids = []
exprs = []
for p in all_panels(d.get("panels", [])):
    title = p.get("title", "?")
    ids.append(p.get("id"))
    if not isinstance(p.get("id"), int):
        err(f"panel {title!r}: no integer id")
    if not all(k in p.get("gridPos", {}) for k in ("h", "w", "x", "y")):
        err(f"panel {title!r}: no gridPos")
    if p.get("type") == "row":  # layout only: no query
        continue
    dsref = p.get("datasource")
    if not isinstance(dsref, dict) or dsref.get("uid") != "${datasource}":
        err(f"panel {title!r}: datasource is {dsref!r}, want uid ${{datasource}}")
    targets = p.get("targets") or []
    if not any(str(t.get("expr", "")).strip() for t in targets):
        err(f"panel {title!r}: no target with an expression")
    for t in targets:
        if not str(t.get("expr", "")).strip():
            err(f"panel {title!r}: target {t.get('refId')} has no expression")
            continue
        if t.get("datasource", dsref) != dsref:
            err(f"panel {title!r}: target {t.get('refId')} has another datasource")
        exprs.append((title, t["expr"]))
dups = sorted({i for i in ids if ids.count(i) > 1}, key=str)
if dups:
    err(f"duplicate panel ids: {dups}")
if len(exprs) < 10:
    err(f"only {len(exprs)} queries: panels missing?")

# Grafana's variables replaced by values PromQL accepts, for promtool.
def concrete(e):
    return (e.replace("$__rate_interval", "1m").replace("$__interval", "1m")
             .replace("$instance", ".*").replace("$device", ".*"))

with open(os.path.join(work, "dashboard_exprs.yml"), "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for n, (title, e) in enumerate(exprs):
        f.write(f"      - record: dashboard_expr_{n}\n        expr: {json.dumps(concrete(e))}\n")
        if "$" in concrete(e):
            err(f"panel {title!r}: unknown variable in {e!r}")
with open(os.path.join(work, "dashboard_exprs.txt"), "w") as f:
    f.write("\n".join(e for _, e in exprs) + "\n")

for e in errors:
    print("  " + e)
print(f"dashboard: {len(ids)} panels, {len(exprs)} queries" + ("" if errors else ", ok"))
sys.exit(1 if errors else 0)
PYEOF
if [[ -f $work/dashboard_exprs.yml ]]; then
  if promtool check rules "$work/dashboard_exprs.yml" > "$work/exprs.log" 2>&1; then
    echo "ok: every dashboard expression parses"
  else
    cat "$work/exprs.log"
    fail "dashboard PromQL does not parse"
  fi
fi

# ---- metric names ----------------------------------------------------------
# Every ebzip_* series the rules and the dashboard read must be declared in
# server/metrics.cc (histograms through their _bucket/_sum/_count series).
declared=$(grep -o '"ebzip_[a-z_]*"' "$root/server/metrics.cc" | tr -d '"' | sort -u || true)
if [[ -z $declared ]]; then
  fail "found no metric names in server/metrics.cc"
else
  # Recording rules' own names (level:metric:op) are not metrics ebzipd exports.
  used=$(cat "$prom/rules.yml" "$work/dashboard_exprs.txt" 2>/dev/null | sed 's/#.*//' \
         | grep -oE '(^|[^:a-z_])ebzip_[a-z_]+' | grep -oE 'ebzip_[a-z_]+' | sort -u)
  for m in $used; do
    base=$(sed -E 's/_(bucket|sum|count)$//' <<<"$m")
    if ! grep -qxF "$m" <<<"$declared" && ! grep -qxF "$base" <<<"$declared"; then
      fail "$m is not a metric ebzipd exports (server/metrics.cc)"
    fi
  done
  echo "metrics used: $(tr '\n' ' ' <<<"$used")"
fi

# The dashboard's server-error panels count the same codes as the rules.
codes=$(grep -oE 'code=~"[A-Z_|]+"' "$prom/rules.yml" | sort -u || true)
if [[ $(wc -l <<<"$codes") -ne 1 ]]; then
  fail "rules.yml uses more than one server-error code list: $(tr '\n' ' ' <<<"$codes")"
elif ! grep -qF "${codes//\"/\\\"}" "$graf/ebzipd.json"; then
  fail "ebzipd.json does not count the server errors of rules.yml ($codes)"
else
  echo "ok: rules and dashboard agree on server errors: $codes"
fi

# ---- the unit tests bite ---------------------------------------------------
# mutate NAME OLD NEW: rules.yml with the first OLD replaced by NEW must
# fail rules_test.yml.
mutate() {
  local name=$1
  mkdir -p "$work/mut"
  cp "$prom/rules_test.yml" "$work/mut/"
  if ! "$PY" - "$prom/rules.yml" "$work/mut/rules.yml" "$2" "$3" <<'PYEOF'; then
import sys
src, dst, old, new = sys.argv[1:5]
text = open(src).read()
if old not in text:
    sys.exit(1)
open(dst, "w").write(text.replace(old, new, 1))
PYEOF
    fail "mutation '$name' found nothing to change (the test is stale)"; return
  fi
  if promtool test rules "$work/mut/rules_test.yml" > "$work/mut/out" 2>&1; then
    fail "the unit tests pass rules.yml with '$name'"
  else
    echo "ok: '$name' caught"
  fi
}
errs='INTERNAL|UNKNOWN|UNAVAILABLE|DEADLINE_EXCEEDED'
mutate "DEADLINE_EXCEEDED not a server error" "$errs" 'INTERNAL|UNKNOWN|UNAVAILABLE'
mutate "DATA_LOSS counted as a server error" "$errs" "$errs|DATA_LOSS"
mutate "error ratio absent, not 0, without errors" \
  '            or
              0 * job_method:ebzip_requests:rate5m' ''
mutate "error threshold 30%" 'job_method:ebzip_requests_server_errors:ratio_rate5m > 0.05' \
  'job_method:ebzip_requests_server_errors:ratio_rate5m > 0.3'
mutate "no traffic floor (errors)" 'job_method:ebzip_requests:rate5m >= 1/60' 'job_method:ebzip_requests:rate5m >= 0'
mutate "no traffic floor (shed)" 'instance:ebzip_requests:rate5m >= 1/60' 'instance:ebzip_requests:rate5m >= 0'
mutate "RESOURCE_EXHAUSTED not counted" 'code="RESOURCE_EXHAUSTED"' 'code="UNAVAILABLE"'
mutate "queue saturation not averaged" 'avg_over_time(ebzip_queued_bytes[5m])' 'ebzip_queued_bytes'
mutate "CPU 0/0 memory not filtered" \
  'ebzip_device_memory_used_bytes / (ebzip_device_memory_total_bytes > 0)' \
  'ebzip_device_memory_used_bytes / ebzip_device_memory_total_bytes'
mutate "memory alert at 99%" 'instance_device:ebzip_device_memory_used:ratio > 0.95' \
  'instance_device:ebzip_device_memory_used:ratio > 0.99'
mutate "GPU fallback alert on CPU servers" 'ebzip_build_info{backend="gpu"}' 'ebzip_build_info'
mutate "latency from p50" 'histogram_quantile(0.99, sum by (job, method, le) (rate(ebzip_request_duration' \
  'histogram_quantile(0.5, sum by (job, method, le) (rate(ebzip_request_duration'
mutate "target down without for" 'expr: up{job="ebzipd"} == 0
        for: 5m' 'expr: up{job="ebzipd"} == 0
        for: 0m'
mutate "absent() on any job" 'absent(up{job="ebzipd"})' 'absent(up)'

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all ok"
