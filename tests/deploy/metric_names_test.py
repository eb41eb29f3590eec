"""Every metric the dashboard, the rules and the autoscaler use is one a
running ebzipd exports, with the labels they match on.

Starts ebzipd (CPU backend), sends a compression, a decompression and a
corrupt archive through the CLI so every family has series, reads /metrics,
then reads every PromQL expression under deploy/ (rule exprs, dashboard
targets and variables, prometheus-adapter queries): each `ebzip_*` series
must be one ebzipd exports, each label matched on it must exist on it, and
each recording rule (level:metric:op) used must be recorded in
deploy/prometheus/rules.yml. The HPA's metric must be one the adapter serves.

    python3 tests/deploy/metric_names_test.py EBZIPD EBZIP
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Labels Prometheus (or the operator's relabelling) adds to every series.
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "container", "endpoint"}
NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
SELECTOR = re.compile(r"\b(ebzip_[a-z0-9_]+)\s*\{([^}]*)\}")
MATCHER_LABEL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")


def start_ebzipd(ebzipd, log):
    proc = subprocess.Popen(
        [ebzipd, "--listen", "127.0.0.1:0", "--metrics_listen", "127.0.0.1:0", "--backend", "cpu"],
        stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(log.name) as f:
            for line in f:
                event = json.loads(line)
                if "metrics_port" in event:
                    return proc, event["port"], event["metrics_port"]
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    sys.exit("ebzipd did not start: " + open(log.name).read())


def exported(ebzipd, ebzip):
    """{series name: set of label names} from a live ebzipd's /metrics."""
    with tempfile.TemporaryDirectory() as work, open(os.path.join(work, "log"), "w") as log:
        proc, port, metrics_port = start_ebzipd(ebzipd, log)
        try:
            raw = os.path.join(work, "a.raw")
            with open(raw, "wb") as f:
                f.write(os.urandom(4096))
            server = ["--server", f"127.0.0.1:{port}", "--quiet"]
            run = lambda *args, ok=True: subprocess.run([ebzip, *args, *server], check=ok,
                                                       capture_output=True)
            run("compress", "--type", "f32", "--shape", "1024", "--abs", "0.01", raw, "-o",
                os.path.join(work, "a.ebz"))
            run("decompress", os.path.join(work, "a.ebz"), "-o", os.path.join(work, "b.raw"))
            run("decompress", raw, "-o", os.path.join(work, "c.raw"), ok=False)  # DATA_LOSS
            url = f"http://127.0.0.1:{metrics_port}/metrics"
            text = urllib.request.urlopen(url, timeout=10).read().decode()
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = NAME.match(line).group(0)
        labels = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=\"", line[len(name):]))
        series.setdefault(name, set()).update(labels - {"le", "quantile"})
    return series


def values(node, keys):
    """Every string under one of `keys` in a parsed YAML/JSON document."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in keys and isinstance(v, str):
                yield v
            else:
                yield from values(v, keys)
    elif isinstance(node, list):
        for v in node:
            yield from values(v, keys)


def load_all(path):
    with open(path) as f:
        if path.suffix == ".json":
            return [json.load(f)]
        return [d for d in yaml.safe_load_all(f) if d is not None]


def expressions():
    """(file, PromQL expression) for every query under deploy/: rule exprs,
    dashboard targets and variables, prometheus-adapter queries."""
    out = []
    for d in load_all(ROOT / "deploy/prometheus/rules.yml"):
        out += [("deploy/prometheus/rules.yml", e) for e in values(d, {"expr"})]
    for path in sorted((ROOT / "deploy/grafana").glob("*.json")):
        for d in load_all(path):
            out += [(path.relative_to(ROOT), e) for e in values(d, {"expr", "query", "definition"})]
    for path in sorted((ROOT / "deploy/k8s").rglob("*.yaml")):
        for d in load_all(path):
            docs = [d]
            # A ConfigMap carries the adapter's config as a YAML string.
            for text in values(d, {"config.yaml"}):
                docs += [c for c in yaml.safe_load_all(text) if c]
            for doc in docs:
                out += [(path.relative_to(ROOT), e)
                        for e in values(doc, {"seriesQuery", "metricsQuery"})]
    return out


def adapter_metric_names():
    """Names prometheus-adapter serves (rules[].name.as)."""
    config = load_all(ROOT / "deploy/k8s/prometheus-adapter/config.yaml")[0]
    return {r["name"]["as"] for r in config["rules"]}


def hpa_metric_names():
    names = set()
    for path in (ROOT / "deploy/k8s").rglob("*.yaml"):
        for d in load_all(path):
            if isinstance(d, dict) and d.get("kind") == "HorizontalPodAutoscaler":
                for m in d["spec"].get("metrics", []):
                    names.add(m[m["type"].lower()]["metric"]["name"])
    return names


RECORDED = re.compile(r"\b[a-z_]+:[a-z0-9_]*ebzip[a-z0-9_]*:[a-z0-9_]+\b")


def main():
    series = exported(sys.argv[1], sys.argv[2])
    rules = load_all(ROOT / "deploy/prometheus/rules.yml")[0]
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    exprs = expressions()
    problems, used = [], set()
    for where, expr in exprs:
        for name in set(RECORDED.findall(expr)):
            if name not in recorded:
                problems.append(f"{where}: {name} is not recorded in rules.yml")
        for name in set(re.findall(r"(?<![A-Za-z0-9_:])ebzip_[a-z0-9_]+\b", expr)):
            used.add(name)
            if name not in series:
                problems.append(f"{where}: ebzipd exports no {name}")
        for name, matchers in SELECTOR.findall(expr):
            for label in MATCHER_LABEL.findall(matchers):
                if name in series and label not in series[name] | TARGET_LABELS:
                    problems.append(f"{where}: {name} has no label {label!r} "
                                    f"(has {sorted(series[name])})")
    missing = hpa_metric_names() - adapter_metric_names()
    if missing:
        problems.append(f"the HPA uses {sorted(missing)}, which the adapter does not serve")
    for p in sorted(set(problems)):
        print("FAIL:", p)
    print(f"checked {len(exprs)} expressions: {len(used)} ebzipd series and "
          f"{len(recorded)} recording rules, {len(set(problems))} problems")
    if len(used) < 10 or len(exprs) < 20:
        print("FAIL: too few expressions or series found under deploy/ (the scan is broken)")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
