#!/usr/bin/env python3
"""Checks the Kubernetes deployment under deploy/k8s.

Renders every variant with `kubectl kustomize` (offline) and checks what the
manifests promise: the expected objects, GPU versus CPU scheduling, probes on
the real gRPC port (or `ebzip health` over TLS), a termination grace period
that covers preStop plus ebzipd's drain, a memory limit above the admission
budget, selectors that select the pods, an HPA whose metric is the one the
prometheus-adapter rule produces, and ports that match the listen flags.

    python3 tests/deploy/k8s_test.py [-v]

Needs PyYAML and kubectl (with its built-in kustomize); exits 77 (skipped)
when either is missing, 1 when a check fails.
"""

import collections
import functools
import os
import re
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

try:
    import yaml
except ImportError:  # pragma: no cover
    print("k8s_test: PyYAML is not installed; skipping", file=sys.stderr)
    sys.exit(77)

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
ADAPTER = K8S / "prometheus-adapter"
KUBECTL = shutil.which(os.environ.get("KUBECTL") or "kubectl")

GIB = 1 << 30
MIB = 1 << 20

# Every variant under deploy/k8s and what it must be. A new overlay must be
# added here (test_every_overlay_is_checked fails until it is).
VARIANTS = {
    ".": {"backend": "gpu", "tls": False, "token": False, "monitor": False},
    "base": {"backend": "gpu", "tls": False, "token": False, "monitor": False},
    "overlays/cpu": {"backend": "cpu", "tls": False, "token": False, "monitor": False},
    "overlays/tls-token": {"backend": "gpu", "tls": True, "token": True, "monitor": False},
    "overlays/monitoring": {"backend": "gpu", "tls": False, "token": False, "monitor": True},
}

# Built-in kinds only: a variant without the ServiceMonitor component applies
# to a cluster that has no CRDs.
EXPECTED_KINDS = collections.Counter({
    ("v1", "Namespace"): 1,
    ("apps/v1", "Deployment"): 1,
    ("v1", "Service"): 2,
    ("policy/v1", "PodDisruptionBudget"): 1,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): 1,
})
SERVICE_MONITOR = ("monitoring.coreos.com/v1", "ServiceMonitor")
NAMESPACE = "ebzip"

# ebzipd's defaults (server/main.cc), for flags a variant leaves unset.
DEFAULTS = {
    "EBZIPD_LISTEN": "0.0.0.0:50051",
    "EBZIPD_METRICS_LISTEN": "0.0.0.0:9464",
    "EBZIPD_MAX_REQUEST_BYTES": str(4 * GIB),
    "EBZIPD_MAX_BATCH_BYTES": str(64 * MIB),
    "EBZIPD_CPU_WORKERS": "2",
    "EBZIPD_GPU_PINNED_BYTES": str(256 * MIB),
    "EBZIPD_GPU_HOST_POOL_BYTES": str(256 * MIB),
    "EBZIPD_GPU_WORKERS": "2",
    "EBZIPD_DRAIN_SECONDS": "30",
}
# Host memory per request at work, in multiples of the request (codes,
# symbols, masks, the archive built twice), and the process's own overhead.
# Admission now counts the codec's working memory inside
# EBZIPD_MAX_QUEUED_BYTES (docs/operations.md, "Limits and abuse"), so this
# term double-counts it: the limits checked here keep that headroom. The
# deployment comments derive the memory limits from the same numbers.
SCRATCH_PER_REQUEST = 4
RUNTIME_BYTES = 1 * GIB

_SUFFIXES = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1,
    "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
}


def quantity(value):
    """A Kubernetes resource quantity ("20Gi", "500m", 8) as a number."""
    if isinstance(value, (int, float)):
        return value
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?", str(value))
    if not m:
        raise ValueError(f"not a quantity: {value!r}")
    number = float(m.group(1))
    factor = _SUFFIXES[m.group(2) or ""]
    result = number * factor
    return int(result) if result == int(result) else result


def render(directory):
    """The documents `kubectl kustomize directory` renders."""
    proc = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory} failed:\n{proc.stderr}")
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def known_env_flags():
    """EBZIPD_* names ebzipd reads, from server/main.cc (None if unreadable)."""
    try:
        source = (ROOT / "server" / "main.cc").read_text()
    except OSError:
        return None
    m = re.search(r"kFlags\[\]\s*=\s*\{(.*?)\};", source, re.S)
    names = re.findall(r'"([a-z0-9_]+)"', m.group(1)) if m else \
        re.findall(r"ABSL_FLAG\(\s*[^,]+,\s*([a-z0-9_]+)\s*,", source)
    return {"EBZIPD_" + n.upper() for n in names} or None


def selects(selector, labels):
    """Whether a label selector (matchLabels form or a plain map) selects labels."""
    if selector is None:
        return False
    match_labels = selector.get("matchLabels", {}) if (
        "matchLabels" in selector or "matchExpressions" in selector) else selector
    if not match_labels and not selector.get("matchExpressions"):
        return False  # an empty selector selects everything: never what we mean
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for e in selector.get("matchExpressions") or []:
        op, key, values = e["operator"], e["key"], e.get("values", [])
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def host_port(address):
    return int(address.rsplit(":", 1)[1])


def flag_value(command, flag):
    """--flag=value or --flag value in an argv list."""
    for i, arg in enumerate(command):
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
        if arg == flag and i + 1 < len(command):
            return command[i + 1]
    return None


class Variant:
    """One rendered variant with accessors for what the checks look at."""

    def __init__(self, name, docs):
        self.name = name
        self.docs = docs
        self.kinds = collections.Counter((d.get("apiVersion"), d.get("kind")) for d in docs)

    def all(self, kind):
        return [d for d in self.docs if d.get("kind") == kind]

    def one(self, kind):
        found = self.all(kind)
        if len(found) != 1:
            raise AssertionError(f"{self.name}: expected one {kind}, found {len(found)}")
        return found[0]

    @property
    def deployment(self):
        return self.one("Deployment")

    @property
    def pod(self):
        return self.deployment["spec"]["template"]["spec"]

    @property
    def pod_labels(self):
        return self.deployment["spec"]["template"]["metadata"].get("labels", {})

    @property
    def container(self):
        containers = [c for c in self.pod["containers"] if c["name"] == "ebzipd"]
        if len(containers) != 1:
            raise AssertionError(f"{self.name}: expected one container named ebzipd")
        return containers[0]

    @property
    def env(self):
        """Environment of the ebzipd container: name -> value (None for valueFrom)."""
        return {e["name"]: e.get("value") for e in self.container.get("env", [])}

    def flag(self, name):
        return self.env.get(name) or DEFAULTS.get(name)

    def container_port(self, name):
        ports = [p for p in self.container.get("ports", []) if p.get("name") == name]
        if len(ports) != 1:
            raise AssertionError(f"{self.name}: expected one container port named {name}")
        return ports[0]["containerPort"]

    def service(self, name):
        found = [s for s in self.all("Service") if s["metadata"]["name"] == name]
        if len(found) != 1:
            raise AssertionError(f"{self.name}: expected one Service named {name}")
        return found[0]

    def mounted_volume(self, path):
        """(volume, mount) holding file `path` in the ebzipd container, or (None, None)."""
        best = (None, None)
        for mount in self.container.get("volumeMounts", []):
            root = mount["mountPath"].rstrip("/") + "/"
            if path.startswith(root) and (best[1] is None or len(root) > len(best[1]["mountPath"])):
                volumes = [v for v in self.pod.get("volumes", []) if v["name"] == mount["name"]]
                best = (volumes[0] if volumes else None, mount)
        return best

    def limits(self):
        return self.container.get("resources", {}).get("limits", {})

    def requests(self):
        return self.container.get("resources", {}).get("requests", {})


RENDERED = {}


def variant(name):
    if name not in RENDERED:
        RENDERED[name] = Variant(name, render(K8S / name))
    return RENDERED[name]


@functools.lru_cache(maxsize=None)
def adapter_rules():
    """The rules of the prometheus-adapter ConfigMap deploy/k8s/prometheus-adapter renders."""
    docs = render(ADAPTER)
    maps = [d for d in docs if d.get("kind") == "ConfigMap"]
    if len(maps) != 1 or len(docs) != 1:
        raise AssertionError(f"prometheus-adapter: expected one ConfigMap, got {[d.get('kind') for d in docs]}")
    data = maps[0].get("data", {})
    if "config.yaml" not in data:
        raise AssertionError("prometheus-adapter: the ConfigMap has no config.yaml")
    return maps[0], yaml.safe_load(data["config.yaml"]).get("rules", [])


class DeployTest(unittest.TestCase):
    """check_X(variant, expectations) runs on every variant as test_X (below the class)."""

    def test_every_overlay_is_checked(self):
        overlays = {str(p.parent.relative_to(K8S)) for p in (K8S / "overlays").glob("*/kustomization.yaml")}
        listed = {n for n in VARIANTS if n.startswith("overlays/")}
        self.assertEqual(overlays, listed, "overlays on disk and VARIANTS in this test differ")

    def test_default_is_base(self):
        self.assertEqual(variant(".").docs, variant("base").docs,
                         "deploy/k8s should render the GPU base unchanged")

    def check_kinds(self, v, expect):
        want = EXPECTED_KINDS.copy()
        if expect["monitor"]:
            want[SERVICE_MONITOR] = 1
        self.assertEqual(v.kinds, want)

    def check_namespace(self, v, _expect):
        self.assertEqual(v.one("Namespace")["metadata"]["name"], NAMESPACE)
        for d in v.docs:
            if d["kind"] != "Namespace":
                self.assertEqual(d["metadata"].get("namespace"), NAMESPACE,
                                 f"{d['kind']} {d['metadata']['name']} outside the namespace")

    def check_image_from_the_one_entry(self, v, _expect):
        # The image is the base kustomization's images entry, in every
        # variant (README: "Deploying" says to edit that entry).
        base = yaml.safe_load((K8S / "base" / "kustomization.yaml").read_text())
        entries = base.get("images") or []
        self.assertEqual(len(entries), 1, "one images entry in base/kustomization.yaml")
        entry = entries[0]
        self.assertEqual(v.container["image"], f"{entry['newName']}:{entry['newTag']}")
        self.assertIn(entry["name"], (K8S / "base" / "deployment.yaml").read_text())

    def check_gpu_or_cpu(self, v, expect):
        limits, requests, env, pod = v.limits(), v.requests(), v.env, v.pod
        gpu_tolerations = [t for t in pod.get("tolerations") or [] if t.get("key") == "nvidia.com/gpu"]
        if expect["backend"] == "gpu":
            self.assertEqual(quantity(limits.get("nvidia.com/gpu", 0)), 1)
            if "nvidia.com/gpu" in requests:  # extended resources: request == limit
                self.assertEqual(quantity(requests["nvidia.com/gpu"]), 1)
            self.assertEqual((pod.get("nodeSelector") or {}).get("nvidia.com/gpu.present"), "true")
            self.assertTrue(any(t.get("effect") == "NoSchedule" and
                                (t.get("operator") == "Exists" or "value" in t)
                                for t in gpu_tolerations), "no toleration for the nvidia.com/gpu taint")
            self.assertIn(env.get("EBZIPD_BACKEND", "auto"), ("gpu", "auto"))
        else:
            self.assertNotIn("nvidia.com/gpu", limits)
            self.assertNotIn("nvidia.com/gpu", requests)
            self.assertFalse(any("nvidia" in k for k in pod.get("nodeSelector") or {}))
            self.assertEqual(gpu_tolerations, [])
            self.assertEqual(env.get("EBZIPD_BACKEND"), "cpu")
            workers = int(v.flag("EBZIPD_CPU_WORKERS"))
            self.assertGreater(workers, int(DEFAULTS["EBZIPD_CPU_WORKERS"]))
            # Each worker's batch runs over all cores: at least a core each.
            self.assertGreaterEqual(quantity(requests.get("cpu", 0)), workers)
            self.assertEqual([n for n in env if n.startswith("EBZIPD_GPU_")], [],
                             "GPU flags left in the CPU variant")

    def check_probes(self, v, expect):
        grpc_port = v.container_port("grpc")
        tls = "EBZIPD_TLS_CERT" in v.env
        self.assertEqual(tls, expect["tls"])
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            probe = v.container.get(kind)
            self.assertIsNotNone(probe, f"no {kind}")
            handlers = [h for h in ("exec", "grpc", "httpGet", "tcpSocket") if h in probe]
            self.assertEqual(len(handlers), 1, f"{kind} has handlers {handlers}")
            if not tls:
                self.assertEqual(handlers, ["grpc"], f"{kind} is not a native gRPC probe")
                self.assertEqual(probe["grpc"]["port"], grpc_port)
                self.assertIn(probe["grpc"].get("service", ""), ("", None),
                              "probe the overall health status")
                continue
            # Native gRPC probes cannot do TLS: `ebzip health` over TLS.
            self.assertEqual(handlers, ["exec"], f"{kind} cannot be native gRPC with TLS on")
            command = probe["exec"]["command"]
            self.assertEqual(command[:2], ["/usr/local/bin/ebzip", "health"])
            self.assertEqual(host_port(flag_value(command, "--server")), grpc_port)
            ca = flag_value(command, "--tls")
            self.assertIsNotNone(ca, f"{kind} does not turn TLS on")
            volume, _ = v.mounted_volume(ca)
            self.assertIsNotNone(volume, f"{kind}: {ca} is on no mounted volume")
            # The probe dials 127.0.0.1, which a certificate does not name.
            self.assertIsNotNone(flag_value(command, "--tls_server_name"))
            # Probes have no token: GetServerInfo would be refused.
            self.assertIn("--quiet", command)
            timeout = flag_value(command, "--timeout")
            self.assertIsNotNone(timeout, f"{kind}: no --timeout")
            self.assertLess(float(timeout), probe.get("timeoutSeconds", 1))

    def check_secret_files(self, v, expect):
        env = v.env
        self.assertEqual("EBZIPD_TOKEN_FILE" in env or "EBZIPD_TOKEN" in env, expect["token"])
        self.assertNotIn("EBZIPD_TOKEN", env, "use EBZIPD_TOKEN_FILE, not the token in the environment")
        self.assertEqual("EBZIPD_TLS_CERT" in env, "EBZIPD_TLS_KEY" in env,
                         "--tls_cert and --tls_key go together")
        for name in ("EBZIPD_TLS_CERT", "EBZIPD_TLS_KEY", "EBZIPD_TOKEN_FILE"):
            if name not in env:
                continue
            path = env[name]
            volume, mount = v.mounted_volume(path)
            self.assertIsNotNone(volume, f"{name}={path} is on no mounted volume")
            self.assertIn("secret", volume, f"{name} should come from a Secret")
            secret = volume["secret"]
            # ebzipd exits when the file is missing: an optional Secret
            # would turn "not created yet" into a crash loop.
            self.assertFalse(secret.get("optional", False), f"{name}: optional Secret")
            file_name = path[len(mount["mountPath"].rstrip("/")) + 1:]
            if "items" in secret:
                self.assertIn(file_name, [i["path"] for i in secret["items"]])
            # Secret files belong to root: ebzipd (uid 10001) reads them
            # through the group, which fsGroup sets.
            mode = secret.get("defaultMode", 0o644)
            self.assertEqual(mode & 0o007, 0, f"{name}: world-readable secret files")
            self.assertTrue(mode & 0o040, f"{name}: not group-readable")
            self.assertIsNotNone(v.pod.get("securityContext", {}).get("fsGroup"),
                                 f"{name}: no fsGroup, so ebzipd cannot read the file")

    def check_termination_covers_drain(self, v, _expect):
        pre_stop = v.container.get("lifecycle", {}).get("preStop")
        self.assertIsNotNone(pre_stop, "no preStop hook")
        if "sleep" in pre_stop:
            sleep = int(pre_stop["sleep"]["seconds"])
        else:
            command = pre_stop["exec"]["command"]
            numbers = re.findall(r"\bsleep\s+([0-9]+)\b", " ".join(command))
            self.assertEqual(len(numbers), 1, f"cannot read the sleep from {command}")
            sleep = int(numbers[0])
        self.assertGreater(sleep, 0)
        self.assertIn("EBZIPD_DRAIN_SECONDS", v.env, "set the drain time explicitly")
        drain = int(v.env["EBZIPD_DRAIN_SECONDS"])
        grace = v.pod.get("terminationGracePeriodSeconds", 30)
        self.assertGreater(grace, sleep + drain,
                           f"grace {grace}s <= preStop {sleep}s + drain {drain}s")

    def check_memory_covers_admission(self, v, expect):
        self.assertIn("EBZIPD_MAX_QUEUED_BYTES", v.env, "set the admission limit explicitly")
        queued = int(v.env["EBZIPD_MAX_QUEUED_BYTES"])
        limit = quantity(v.limits().get("memory", 0))
        self.assertGreater(limit, queued)
        self.assertIn("memory", v.requests())
        self.assertLessEqual(quantity(v.requests()["memory"]), limit)
        for r in ("cpu", "memory"):
            self.assertIn(r, v.limits())
            self.assertIn(r, v.requests())
        largest = max(int(v.flag("EBZIPD_MAX_REQUEST_BYTES")), int(v.flag("EBZIPD_MAX_BATCH_BYTES")))
        self.assertLessEqual(int(v.flag("EBZIPD_MAX_REQUEST_BYTES")), queued,
                             "a largest request could never be admitted")
        if expect["backend"] == "gpu":
            gpus = int(quantity(v.limits()["nvidia.com/gpu"]))
            # --gpu_workers per GPU, each with its pinned buffer and its
            # one request at a time on the CPU codec when it falls back.
            workers = gpus * int(v.flag("EBZIPD_GPU_WORKERS"))
            # Plus the pinned pool small arrays live in: resident from the
            # start, whether or not admission counts bytes in it.
            budget = queued + workers * (int(v.flag("EBZIPD_GPU_PINNED_BYTES"))
                                         + SCRATCH_PER_REQUEST * largest)
            budget += int(v.flag("EBZIPD_GPU_HOST_POOL_BYTES"))
        else:
            budget = queued + int(v.flag("EBZIPD_CPU_WORKERS")) * SCRATCH_PER_REQUEST * largest
        budget += RUNTIME_BYTES
        self.assertGreaterEqual(limit, budget,
                                f"memory limit {limit / GIB:.2f} GiB < budget {budget / GIB:.2f} GiB")

    def check_ports_match_listen_flags(self, v, _expect):
        self.assertEqual(v.container_port("grpc"), host_port(v.flag("EBZIPD_LISTEN")))
        self.assertEqual(v.container_port("metrics"), host_port(v.flag("EBZIPD_METRICS_LISTEN")))

    def check_env_names_are_flags(self, v, _expect):
        flags = known_env_flags()
        if flags is None:
            self.skipTest("cannot read ebzipd's flag list from server/main.cc")
        unknown = sorted(n for n in v.env if n.startswith("EBZIPD_") and n not in flags)
        self.assertEqual(unknown, [], "ebzipd reads no such variables")

    def check_security(self, v, _expect):
        pod_sc = v.pod.get("securityContext", {})
        sc = v.container.get("securityContext", {})

        def effective(key):
            return sc.get(key, pod_sc.get(key))
        self.assertIs(effective("runAsNonRoot"), True)
        self.assertEqual(effective("runAsUser"), 10001)
        self.assertIs(sc.get("readOnlyRootFilesystem"), True)
        self.assertIs(sc.get("allowPrivilegeEscalation"), False)
        self.assertIn("ALL", sc.get("capabilities", {}).get("drop", []))
        self.assertEqual((effective("seccompProfile") or {}).get("type"), "RuntimeDefault")
        self.assertIs(v.pod.get("automountServiceAccountToken"), False)
        # Service links would add EBZIPD_SERVICE_HOST, EBZIPD_PORT, ... to
        # the namespace ebzipd reads flags from.
        self.assertIs(v.pod.get("enableServiceLinks"), False)

    def check_rollout_and_spread(self, v, _expect):
        spec = v.deployment["spec"]
        self.assertNotIn("replicas", spec, "the HPA owns replicas")
        self.assertEqual(spec["strategy"]["type"], "RollingUpdate")
        self.assertEqual(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0)
        self.assertEqual(spec["strategy"]["rollingUpdate"]["maxSurge"], 1)
        spread = [c for c in v.pod.get("topologySpreadConstraints", [])
                  if c["topologyKey"] == "kubernetes.io/hostname"
                  and selects(c.get("labelSelector"), v.pod_labels)]
        anti = (v.pod.get("affinity", {}).get("podAntiAffinity", {}))
        anti_terms = [t.get("podAffinityTerm", t) for key in anti.values() for t in key]
        anti_terms = [t for t in anti_terms if t.get("topologyKey") == "kubernetes.io/hostname"
                      and selects(t.get("labelSelector"), v.pod_labels)]
        self.assertTrue(spread or anti_terms, "pods are not spread across nodes")

    def check_selectors_select_the_pods(self, v, _expect):
        labels = v.pod_labels
        self.assertTrue(selects(v.deployment["spec"]["selector"], labels), "Deployment")
        for s in v.all("Service"):
            self.assertTrue(selects(s["spec"]["selector"], labels), s["metadata"]["name"])
            for port in s["spec"]["ports"]:
                target = port.get("targetPort", port["port"])
                if isinstance(target, str):
                    v.container_port(target)  # raises when no such named port
                else:
                    self.assertIn(target, [p["containerPort"] for p in v.container["ports"]])
        self.assertTrue(selects(v.one("PodDisruptionBudget")["spec"]["selector"], labels), "PDB")
        pdb = v.one("PodDisruptionBudget")["spec"]
        self.assertEqual(len({"minAvailable", "maxUnavailable"} & set(pdb)), 1)

    def check_services(self, v, _expect):
        svc = v.service("ebzipd")
        self.assertIn(svc["spec"].get("type", "ClusterIP"), ("ClusterIP",))
        self.assertNotEqual(svc["spec"].get("clusterIP"), "None")
        ports = {p["name"]: p for p in svc["spec"]["ports"]}
        self.assertEqual(ports["grpc"]["port"], 50051)
        self.assertEqual(ports["grpc"].get("appProtocol"), "grpc")
        self.assertEqual(ports["metrics"]["port"], 9464)
        headless = v.service("ebzipd-headless")
        self.assertEqual(headless["spec"].get("clusterIP"), "None")
        self.assertIn("grpc", [p["name"] for p in headless["spec"]["ports"]])
        self.assertFalse(headless["spec"].get("publishNotReadyAddresses", False),
                         "draining pods must leave DNS")

    def check_service_monitor(self, v, expect):
        if not expect["monitor"]:
            self.assertEqual(v.all("ServiceMonitor"), [])
            return
        sm = v.one("ServiceMonitor")
        chosen = [s for s in v.all("Service")
                  if selects(sm["spec"]["selector"], s["metadata"].get("labels", {}))]
        # Exactly one: the headless Service too would scrape every pod twice.
        self.assertEqual([s["metadata"]["name"] for s in chosen], ["ebzipd"])
        port_names = [p.get("name") for p in chosen[0]["spec"]["ports"]]
        for endpoint in sm["spec"]["endpoints"]:
            self.assertIn(endpoint["port"], port_names)
            self.assertEqual(endpoint.get("interval"), "15s")
        # The Prometheus Operator's job label: the Service's jobLabel
        # label if set, else the Service's name. Alerts assume ebzipd.
        job_label = sm["spec"].get("jobLabel")
        service_labels = chosen[0]["metadata"].get("labels", {})
        job = service_labels.get(job_label) if job_label and job_label in service_labels \
            else chosen[0]["metadata"]["name"]
        self.assertEqual(job, "ebzipd")

    def check_hpa_metric_is_the_adapters(self, v, _expect):
        _, rules = adapter_rules()
        produced = {r.get("name", {}).get("as") for r in rules}
        hpa = v.one("HorizontalPodAutoscaler")["spec"]
        self.assertEqual(hpa["scaleTargetRef"],
                         {"apiVersion": "apps/v1", "kind": "Deployment",
                          "name": v.deployment["metadata"]["name"]})
        self.assertGreaterEqual(hpa.get("minReplicas", 1), 1)
        self.assertLessEqual(hpa.get("minReplicas", 1), hpa["maxReplicas"])
        pods = [m["pods"] for m in hpa["metrics"] if m["type"] == "Pods"]
        self.assertEqual(len(pods), 1)
        self.assertIn(pods[0]["metric"]["name"], produced)
        self.assertEqual(pods[0]["target"]["type"], "AverageValue")
        self.assertGreater(quantity(pods[0]["target"]["averageValue"]), 0)
        down = hpa.get("behavior", {}).get("scaleDown", {})
        self.assertGreaterEqual(down.get("stabilizationWindowSeconds", 0), 300,
                                "scale down slowly: pods start slowly")

    def test_adapter_rule(self):
        config_map, rules = adapter_rules()
        self.assertTrue(config_map["metadata"].get("namespace"), "the adapter's namespace")
        rule = [r for r in rules if r.get("name", {}).get("as") == "ebzip_queue_seconds_per_request"]
        self.assertEqual(len(rule), 1)
        rule = rule[0]
        series = rule["seriesQuery"]
        self.assertTrue(series.startswith("ebzip_queue_duration_seconds_sum{"), series)
        self.assertIn('namespace!=""', series)
        self.assertIn('pod!=""', series)
        self.assertEqual(rule["resources"]["overrides"],
                         {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}})
        self.assertTrue(re.search(rule["name"]["matches"], "ebzip_queue_duration_seconds_sum"))
        query = rule["metricsQuery"]
        for needle in ("ebzip_queue_duration_seconds_sum{<<.LabelMatchers>>}",
                       "ebzip_queue_duration_seconds_count{<<.LabelMatchers>>}"):
            self.assertIn(needle, query)
        # Both sums grouped by what the HPA asks for (the pod), or the ratio
        # would mix pods.
        self.assertEqual(query.count("<<.GroupBy>>"), 2, query)
        # The series must exist: the histogram ebzipd exports.
        metrics_source = ROOT / "server" / "metrics.cc"
        if metrics_source.exists():
            self.assertIn('"ebzip_queue_duration_seconds"', metrics_source.read_text())

    def test_variants_share_the_selector(self):
        # A Deployment's selector is immutable: switching variants in place
        # (kubectl apply -k overlays/cpu over the GPU one) needs the same one.
        selectors = {name: variant(name).deployment["spec"]["selector"] for name in VARIANTS}
        self.assertEqual(len({repr(s) for s in selectors.values()}), 1, selectors)


def _each_variant(check):
    def test(self):
        for name, expect in VARIANTS.items():
            with self.subTest(variant=name):
                check(self, variant(name), expect)
    test.__doc__ = check.__doc__
    return test


for _name in [n for n in vars(DeployTest) if n.startswith("check_")]:
    setattr(DeployTest, "test_" + _name[len("check_"):], _each_variant(getattr(DeployTest, _name)))


def main():
    if KUBECTL is None:
        print("k8s_test: kubectl not found; skipping", file=sys.stderr)
        return 77
    result = unittest.main(module=__name__, exit=False,
                           verbosity=2 if "-v" in sys.argv else 1).result
    return 0 if result.wasSuccessful() and result.testsRun else 1


if __name__ == "__main__":
    sys.exit(main())
