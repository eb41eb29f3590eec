"""docker-compose.yml fits together with the files it mounts.

Docker cannot run here, so this checks what `docker compose up` relies on:
every mounted path exists; Prometheus's config is where its command says,
scrapes ebzipd's service name on the metrics port the ebzipd service sets,
and loads the rules; Grafana's provisioning points at the datasource and at
the folder the dashboard is mounted in; the CPU override drops the GPU.

    python3 tests/deploy/compose_test.py
"""

import os
import pathlib
import sys
import unittest

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


class ComposeLoader(yaml.SafeLoader):
    """Understands Compose's merge tags (!reset, !override)."""


def _tagged(loader, node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


ComposeLoader.add_constructor("!reset", _tagged)
ComposeLoader.add_constructor("!override", _tagged)


def load(path):
    with open(path) as f:
        return yaml.load(f, Loader=ComposeLoader)


def mounts(service):
    """(host path, container path) of each bind mount of a service."""
    out = []
    for v in service.get("volumes", []):
        host, container = v.split(":")[:2]
        if host.startswith("."):
            out.append((ROOT / host, container))
    return out


def host_path(service, container_path):
    """The repository file a container path of the service comes from."""
    for host, container in mounts(service):
        if container_path == container or container_path.startswith(container.rstrip("/") + "/"):
            return host / os.path.relpath(container_path, container)
    raise AssertionError(f"{container_path} is not mounted from the repository")


class ComposeTest(unittest.TestCase):
    def setUp(self):
        self.compose = load(ROOT / "docker-compose.yml")
        self.services = self.compose["services"]

    def test_services(self):
        self.assertEqual(set(self.services), {"ebzipd", "prometheus", "grafana"})

    def test_mounted_paths_exist(self):
        for name, service in self.services.items():
            for host, _ in mounts(service):
                self.assertTrue(host.exists(), f"{name} mounts {host}, which does not exist")

    def test_ebzipd_ports_match_its_listen_addresses(self):
        ebzipd = self.services["ebzipd"]
        published = {p.split(":")[-1] for p in ebzipd["ports"]}
        self.assertEqual(published, {"50051", "9464"})
        gpu = ebzipd["deploy"]["resources"]["reservations"]["devices"][0]
        self.assertIn("gpu", gpu["capabilities"])
        self.assertGreater(self.grace_seconds(ebzipd), int(ebzipd["environment"]["EBZIPD_DRAIN_SECONDS"]))

    @staticmethod
    def grace_seconds(service):
        value = service["stop_grace_period"]
        assert value.endswith("s"), value
        return int(value[:-1])

    def test_prometheus_scrapes_ebzipd_and_loads_the_rules(self):
        prometheus = self.services["prometheus"]
        flag = next(a for a in prometheus["command"] if a.startswith("--config.file="))
        config_path = host_path(prometheus, flag.split("=", 1)[1])
        config = load(config_path)
        jobs = {j["job_name"]: j for j in config["scrape_configs"]}
        self.assertIn("ebzipd", jobs, "the alert rules assume job=\"ebzipd\"")
        targets = [t for sc in jobs["ebzipd"]["static_configs"] for t in sc["targets"]]
        metrics_port = self.services["ebzipd"]["environment"].get("EBZIPD_METRICS_LISTEN", ":9464")
        self.assertIn(f"ebzipd:{metrics_port.rsplit(':', 1)[1]}", targets)
        for rule_file in config["rule_files"]:
            self.assertTrue((config_path.parent / rule_file).exists(), rule_file)

    def test_grafana_provisions_datasource_and_dashboard(self):
        grafana = self.services["grafana"]
        provisioning = host_path(grafana, "/etc/grafana/provisioning")
        sources = load(provisioning / "datasources" / "prometheus.yml")["datasources"]
        self.assertTrue(any(s["url"] == "http://prometheus:9090" for s in sources), sources)
        providers = load(provisioning / "dashboards" / "ebzip.yml")["providers"]
        for p in providers:
            folder = host_path(grafana, p["options"]["path"])
            self.assertTrue(list(folder.glob("*.json")), f"no dashboard in {folder}")
        home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
        self.assertTrue(host_path(grafana, home).exists(), home)

    def test_cpu_override_drops_the_gpu(self):
        override = load(ROOT / "docker-compose.cpu.yml")["services"]["ebzipd"]
        self.assertEqual(override["environment"]["EBZIPD_BACKEND"], "cpu")
        self.assertNotIn("reservations", override["deploy"].get("resources", {}))
        with open(ROOT / "docker-compose.cpu.yml") as f:
            self.assertIn("deploy: !override", f.read(), "without !override Compose merges the GPU back in")


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
