#!/usr/bin/env python3
"""Builds the ebzipd image from the Dockerfile with podman on a Debian 12 base
made here (scripts/container_base.sh), runs it, and checks it as an operator
would: the image's user, health check and ports; health SERVING; real
ferret-datasets fields compressed and decompressed through the container's
port by the host's `ebzip --server`, each archive identical to the one the
host's local mode makes and each decompressed field within its bound; the
process running as the non-root user; and a SIGTERM drain (`podman stop`)
that ends with exit code 0 within the grace period, a call in flight
finishing.

Usage (as root; Debian's python3):
  tests/deploy/container_test.py PATH/TO/ebzip

Environment:
  EBZIP_CONTAINER_CUDA=DIR   build the GPU image with the CUDA toolkit in DIR
                             (--build-context cuda=DIR); default: the CPU image
                             (CUDA_IMAGE=scratch)
  EBZIP_CONTAINER_BASE=IMG   the Debian 12 base (default localhost/debian:bookworm,
                             built by scripts/container_base.sh when missing)
  EBZIP_CONTAINER_LOGS=DIR   keep the build and server logs there (default: a
                             temporary directory, removed on success)
  EBZIP_CONTAINER_KEEP=1     keep the image (tagged localhost/ebzipd:test-PID)

ctest runs it as deploy_container (tests/deploy/CMakeLists.txt): about 6
minutes on 2 cores with an empty podman cache, 3 once the layer with the
build packages is cached. docs/operations.md ("Container") records the last
runs. Exit 0 pass, 1 fail, 77 skipped (not root, or no podman).
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from cli_test import (DATA_DIR, bits_of, check_bound, finite_range, from_bytes,  # noqa: E402
                      read_cdf_variable, to_bytes)

RUNTIME = ["--runtime", "runc"]
USER_ID = 10001           # the Dockerfile's USER
DRAIN_SECONDS = 10        # EBZIPD_DRAIN_SECONDS in the container
STOP_GRACE_SECONDS = 30   # podman stop -t: SIGKILL after this
# (file, variable, relative bound): a 2-D relief field and a 4-D record
# variable with land points as fill values.
FIELDS = [("etopo20.cdf", "ROSE", 1e-4), ("ocean_atlas_subset.nc", "TEMP", 1e-4)]
# A larger field, compressed while the container is stopped.
DRAIN_FIELD = ("etopo5.cdf", "ROSE", 1e-5)

failures = []


def ok(message):
    print("ok: " + message, flush=True)


def fail(message):
    print("FAIL: " + message, flush=True)
    failures.append(message)


def run(args, check=True, **kwargs):
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    p = subprocess.run(args, text=True, **kwargs)
    if check and p.returncode != 0:
        raise RuntimeError("%s exited %d:\n%s%s" % (" ".join(args), p.returncode,
                                                    p.stdout or "", p.stderr or ""))
    return p


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def podman_env(work):
    """podman's environment. Where no containers.conf exists, one without
    default rlimits: podman's defaults are refused inside some sandboxes
    (runc: "error setting rlimits"), and the container then keeps the
    limits podman runs with."""
    env = dict(os.environ)
    if "CONTAINERS_CONF" not in env and not os.path.exists("/etc/containers/containers.conf"):
        conf = os.path.join(work, "containers.conf")
        with open(conf, "w") as f:
            f.write("[containers]\ndefault_ulimits = []\n")
        env["CONTAINERS_CONF"] = conf
    return env


def build_image(env, logs, base, toolkit):
    # A tag of its own, removed at the end: runs side by side do not collide.
    tag = "localhost/ebzipd:test-%s%d" % ("gpu-" if toolkit else "", os.getpid())
    args = ["podman", "build", *RUNTIME, "--network", "host",
            # Docker's image format keeps HEALTHCHECK (OCI's has no field for it).
            "--format", "docker",
            "--build-arg", "BASE=" + base, "-t", tag, "-f", "Dockerfile"]
    if toolkit:
        # CUDA_IMAGE names the toolkit so that podman's cache, which does not
        # hash a mounted context, tells this build from others.
        args += ["--build-context", "cuda=" + toolkit,
                 "--build-arg", "CUDA_IMAGE=local-toolkit" + os.path.realpath(toolkit)]
    else:
        args += ["--build-arg", "CUDA_IMAGE=scratch"]
    log_path = os.path.join(logs, "build.log")
    start = time.monotonic()
    with open(log_path, "w") as log:
        p = subprocess.run(args + ["."], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    minutes = (time.monotonic() - start) / 60
    if p.returncode != 0:
        raise RuntimeError("podman build failed after %.1f min; see %s" % (minutes, log_path))
    ok("built %s in %.1f min (log: %s)" % (tag, minutes, log_path))
    return tag


def check_image(env, image, toolkit):
    inspected = json.loads(run(["podman", "image", "inspect", image], env=env).stdout)[0]
    config = inspected["Config"]
    if config.get("User", "").split(":")[0] == str(USER_ID):
        ok("image user %s" % config["User"])
    else:
        fail("image user is %r, want %d" % (config.get("User"), USER_ID))
    # podman keeps the health check beside the OCI config, Docker inside it.
    health = (inspected.get("Healthcheck") or config.get("Healthcheck") or {}).get("Test") or []
    if any("ebzip health" in t for t in health):
        ok("image health check: %s" % " ".join(health))
    else:
        fail("image has no `ebzip health` check: %r" % health)
    ports = set(config.get("ExposedPorts") or {})
    if {"50051/tcp", "9464/tcp"} <= ports:
        ok("image exposes %s" % " ".join(sorted(ports)))
    else:
        fail("image exposes %s, want 50051/tcp and 9464/tcp" % sorted(ports))

    def in_image(*args):
        return run(["podman", "run", "--rm", *RUNTIME, "--network", "none",
                    "--entrypoint", args[0], image, *args[1:]], env=env, check=False)

    version = in_image("/usr/local/bin/ebzip", "--version")
    want = "CUDA on" if toolkit else "CUDA off"
    if version.returncode == 0 and want in version.stdout:
        ok("ebzip --version in the image: %s" % version.stdout.strip().replace("\n", ", "))
    else:
        fail("ebzip --version in the image (want %r): %s%s" % (want, version.stdout, version.stderr))
    # Plain Debian at run time: every library resolves, and no CUDA runtime
    # is loaded (it is linked in; only the driver comes from the host).
    ldd = in_image("/usr/bin/ldd", "/usr/local/bin/ebzipd", "/usr/local/bin/ebzip")
    if ldd.returncode != 0 or "not found" in ldd.stdout or "libcudart" in ldd.stdout:
        fail("ldd in the image:\n%s%s" % (ldd.stdout, ldd.stderr))
    else:
        ok("every library of ebzipd and ebzip resolves in the image, none is libcudart")


class Container:
    def __init__(self, env, image, logs):
        self.env = env
        self.name = "ebzipd-test-%d" % os.getpid()
        self.port = free_port()
        self.metrics_port = free_port()
        self.log_path = os.path.join(logs, "ebzipd.log")
        run(["podman", "rm", "-f", "--ignore", self.name], env=env, check=False)
        # The image's default listen address (all addresses) on free ports.
        run(["podman", "run", "-d", *RUNTIME, "--network", "host", "--name", self.name,
             "-e", "EBZIPD_LISTEN=0.0.0.0:%d" % self.port,
             "-e", "EBZIPD_METRICS_LISTEN=0.0.0.0:%d" % self.metrics_port,
             "-e", "EBZIPD_DRAIN_SECONDS=%d" % DRAIN_SECONDS, image], env=env)
        self.address = "127.0.0.1:%d" % self.port

    def podman(self, *args, check=True):
        return run(["podman", *args], env=self.env, check=check)

    def logs(self):
        return self.podman("logs", self.name, check=False).stderr

    def events(self):
        events = []
        for line in self.logs().splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return events

    def remove(self):
        with open(self.log_path, "w") as f:
            f.write(self.logs())
        self.podman("rm", "-f", "--ignore", self.name, check=False)


def ebzip(binary, *args, check=True):
    return run([binary, *args], check=check)


def wait_serving(binary, c):
    deadline = time.monotonic() + 60
    while True:
        p = ebzip(binary, "health", "--server", c.address, "--timeout", "2", check=False)
        if p.returncode == 0:
            ok("health through the container's port: %s" % p.stdout.strip().replace("\n", ", "))
            return True
        state = c.podman("inspect", "--format", "{{.State.Status}}", c.name, check=False).stdout
        if time.monotonic() > deadline or state.strip() not in ("running", "created"):
            fail("ebzipd in the container never became SERVING (state %s): %s\n%s"
                 % (state.strip(), p.stdout + p.stderr, c.logs()[-3000:]))
            return False
        time.sleep(0.5)


def check_running(c):
    # The image's own HEALTHCHECK, run as the runtime would run it.
    p = c.podman("healthcheck", "run", c.name, check=False)
    if p.returncode == 0:
        ok("podman healthcheck run: healthy")
    else:
        fail("podman healthcheck run exited %d: %s%s" % (p.returncode, p.stdout, p.stderr))
    uid = c.podman("exec", c.name, "id", "-u", check=False).stdout.strip()
    top = c.podman("top", c.name, "huser", "user", "args", check=False).stdout
    # ebzipd is the container's process 1 and runs as the image's user.
    if uid == str(USER_ID) and "ebzipd" in top and " root " not in " %s " % top:
        ok("runs as uid %s:\n%s" % (uid, top.rstrip()))
    else:
        fail("not running as uid %d: id -u %r, podman top:\n%s" % (USER_ID, uid, top))
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % c.metrics_port,
                                    timeout=10) as r:
            text = r.read().decode()
        if "ebzip_requests_total" in text or "ebzip_build_info" in text:
            ok("metrics served on the container's metrics port")
        else:
            fail("metrics port answered without ebzip metrics")
    except OSError as e:
        fail("metrics port: %s" % e)


def field(file_name, var_name):
    path = os.path.join(DATA_DIR, file_name)
    if not os.path.isfile(path):
        raise RuntimeError("%s missing: install Debian's ferret-datasets "
                           "(scripts/install_deps.sh) or set EBZIP_FERRET_DATA" % path)
    return path, read_cdf_variable(path, var_name)


def abs_bound_of(var, rel):
    fill = var.attribute_value("_FillValue")
    values = from_bytes(var.data, var.typecode)
    bits = bits_of(var.data, var.typecode)
    fill_bits = bits_of(to_bytes([fill], var.typecode), var.typecode)[0] if fill is not None else None
    lo, hi = finite_range(values, fill_bits, bits)
    return rel * (hi - lo), fill


def round_trip(binary, c, work, file_name, var_name, rel):
    path, var = field(file_name, var_name)
    stem = os.path.join(work, var_name.lower())
    source = "%s:%s" % (path, var_name)
    ebzip(binary, "compress", "--rel", repr(rel), source, "-o", stem + ".remote.ebz",
          "--server", c.address)
    # Both with the variable's metadata (the default), which the command line
    # sends to ebzipd (CompressHeader.metadata).
    ebzip(binary, "compress", "--rel", repr(rel), source, "-o", stem + ".local.ebz")
    with open(stem + ".remote.ebz", "rb") as f:
        remote = f.read()
    with open(stem + ".local.ebz", "rb") as f:
        local = f.read()
    if remote != local:
        fail("%s: the container's archive (%d bytes) differs from local mode's (%d bytes)"
             % (source, len(remote), len(local)))
    ebzip(binary, "decompress", stem + ".remote.ebz", "-o", stem + ".raw", "--server", c.address)
    with open(stem + ".raw", "rb") as f:
        decoded = f.read()
    bound, fill = abs_bound_of(var, rel)
    violations, special, first, max_error = check_bound(var.data, decoded, var.typecode, bound,
                                                        fill)
    if (violations, special) != (0, 0) or len(decoded) != len(var.data):
        fail("%s: %d violations of bound %r, %d special mismatches (first at %s), %d of %d bytes"
             % (source, violations, bound, special, first, len(decoded), len(var.data)))
    else:
        ok("%s %s: %d -> %d bytes through the container, max error %.3g <= bound %.3g"
           % (file_name, var_name, len(var.data), len(remote), max_error, bound))


def stop_draining(binary, c, work):
    """podman stop while a large compress call is in flight: the call must
    finish, ebzipd log its drain and exit 0 well within the grace period."""
    file_name, var_name, rel = DRAIN_FIELD
    path, _ = field(file_name, var_name)
    archive = os.path.join(work, "drain.ebz")
    call = subprocess.Popen([binary, "compress", "--rel", repr(rel), "%s:%s" % (path, var_name),
                             "-o", archive, "--server", c.address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Stop once the call has reached ebzipd (its "request" log line or the
    # in-flight gauge), or after a second whatever happened.
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline and call.poll() is None:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % c.metrics_port,
                                        timeout=1) as r:
                if any(line.startswith("ebzip_inflight_requests") and not line.endswith(" 0")
                       for line in r.read().decode().splitlines()):
                    break
        except OSError:
            pass
        time.sleep(0.02)
    in_flight_at_stop = call.poll() is None
    start = time.monotonic()
    stop = c.podman("stop", "-t", str(STOP_GRACE_SECONDS), c.name, check=False)
    seconds = time.monotonic() - start
    out, err = call.communicate(timeout=120)
    code = c.podman("inspect", "--format", "{{.State.ExitCode}}", c.name).stdout.strip()
    events = c.events()
    msgs = [e.get("msg") for e in events]
    stopped = [e for e in events if e.get("msg") == "stopped"]
    if stop.returncode != 0:
        fail("podman stop: %s%s" % (stop.stdout, stop.stderr))
    if code != "0":
        fail("ebzipd exited %s after SIGTERM (137: killed at the end of the grace period)" % code)
    elif seconds >= STOP_GRACE_SECONDS:
        fail("podman stop took %.1f s, the whole grace period" % seconds)
    elif "draining" not in msgs or not stopped:
        fail("no drain in the logs: %s" % msgs)
    elif str(stopped[-1].get("all_calls_finished")).lower() != "true":
        fail("the drain cancelled calls: %s" % stopped[-1])
    else:
        ok("SIGTERM: exit code 0 after %.1f s (grace %d s), log: %s"
           % (seconds, STOP_GRACE_SECONDS, " -> ".join(m for m in msgs[-3:] if m)))
    if call.returncode != 0:
        fail("the call in flight at SIGTERM failed (%d): %s" % (call.returncode, err))
    elif in_flight_at_stop:
        ok("the call in flight at SIGTERM finished (%d bytes)" % os.path.getsize(archive))
    else:
        print("note: the drain call had finished before SIGTERM; nothing was in flight")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0 or shutil.which("podman") is None:
        print("SKIP: needs root and podman (scripts/container_base.sh installs it)")
        return 77
    base = os.environ.get("EBZIP_CONTAINER_BASE", "localhost/debian:bookworm")
    toolkit = os.environ.get("EBZIP_CONTAINER_CUDA")
    if toolkit and not os.access(os.path.join(toolkit, "bin", "nvcc"), os.X_OK):
        print("EBZIP_CONTAINER_CUDA=%s has no bin/nvcc" % toolkit, file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="ebzip-container-")
    logs = os.environ.get("EBZIP_CONTAINER_LOGS") or work
    os.makedirs(logs, exist_ok=True)
    env = podman_env(work)
    container = None
    image = None
    try:
        if run(["podman", "image", "exists", base], env=env, check=False).returncode != 0:
            if base != "localhost/debian:bookworm":
                raise RuntimeError("base image %s missing" % base)
            run([os.path.join(ROOT, "scripts", "container_base.sh"), base], env=env,
                stdout=None, stderr=None)
        image = build_image(env, logs, base, toolkit)
        check_image(env, image, toolkit)
        container = Container(env, image, logs)
        if wait_serving(binary, container):
            check_running(container)
            for file_name, var_name, rel in FIELDS:
                round_trip(binary, container, work, file_name, var_name, rel)
            stop_draining(binary, container, work)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        fail(str(e))
    finally:
        if container is not None:
            container.remove()
        # The layers stay in podman's cache for the next build.
        if image is not None and not os.environ.get("EBZIP_CONTAINER_KEEP"):
            run(["podman", "rmi", image], env=env, check=False)
    if failures:
        print("%d failure(s); logs in %s" % (len(failures), logs))
        return 1
    print("PASS")
    if logs == work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
