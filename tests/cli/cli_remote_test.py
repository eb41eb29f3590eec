#!/usr/bin/env python3
"""End-to-end tests of the `ebzip` command line's remote mode (--server),
through the real binaries, against real ebzipd servers on loopback.

Usage: cli_remote_test.py PATH/TO/ebzip PATH/TO/ebzipd [unittest arguments...]

Python 3 standard library only. The README promises that `--server` produces
the same files as local mode, so every archive and every decompressed array
made through a server is compared byte for byte with what local mode makes
of the same input, and archives cross over (made locally, decompressed
remotely, and the other way round). Each server runs with the CPU backend on
a port the kernel picks (--listen 127.0.0.1:0), read back from its
"ebzipd serving" log line, and must exit 0 after SIGTERM. One server is
configured only through EBZIPD_* environment variables. A failed run must
leave neither its -o file nor a `*.partial-*` file behind, and an existing
-o file must survive it unchanged, as in local mode (cli_test.py).
"""

import json
import math
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import cli_test
from cli_test import (EXIT_FAILURE, EXIT_OK, EXIT_USAGE, DATA_DIR, from_bytes, finite_range,
                      read_cdf_variable, smooth_field, to_bytes, with_special_values)

EBZIP = None  # set from argv in main
EBZIPD = None

TOKEN = "s3cret-token"
SERVING_TIMEOUT_S = 60
STOP_TIMEOUT_S = 60


def clean_environment(extra=None):
    """os.environ without the variables that configure ebzip and ebzipd, so
    that nothing from the caller's environment changes what a test asks for,
    plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("EBZIPD_") and k != "EBZIP_TOKEN"}
    env.update(extra or {})
    return env


class Ebzipd:
    """One ebzipd process. Its stderr (JSON lines) goes to a log file, from
    which the port it chose and the outcome of each request are read."""

    def __init__(self, log_path, args=(), env=None):
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen([EBZIPD, *args], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, env=clean_environment(env))
        self.serving = self._wait_serving()
        self.port = int(self.serving["port"])
        self.address = "127.0.0.1:%d" % self.port

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-8000:]

    def events(self):
        """The JSON log events so far (a half-written last line is skipped)."""
        events = []
        with open(self.log_path, "rb") as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    continue
        return events

    def _wait_serving(self):
        deadline = time.monotonic() + SERVING_TIMEOUT_S
        while time.monotonic() < deadline:
            for event in self.events():
                if event.get("msg") == "ebzipd serving":
                    return event
            if self.proc.poll() is not None:
                raise AssertionError("ebzipd exited with %d while starting:\n%s" %
                                     (self.proc.returncode, self.log_text()))
            time.sleep(0.05)
        self.proc.kill()
        self.proc.wait()
        raise AssertionError("ebzipd not serving after %d s:\n%s" %
                             (SERVING_TIMEOUT_S, self.log_text()))

    def finished_requests(self, since=0):
        """The "request finished" events after the first `since` events."""
        return [e for e in self.events()[since:] if e.get("msg") == "request finished"]

    def stop(self):
        """SIGTERM, as an orchestrator stops it; it must drain and exit 0."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("ebzipd ignored SIGTERM for %d s:\n%s" %
                                     (STOP_TIMEOUT_S, self.log_text())) from None
        if self.proc.returncode != 0:
            raise AssertionError("ebzipd exited with %d after SIGTERM:\n%s" %
                                 (self.proc.returncode, self.log_text()))


def server_flags(*extra):
    # --drain_seconds keeps a stuck call from holding up the test for the
    # default 30 s; an idle server stops at once either way.
    # --min_frame_elements 1: the tests stream arrays of many small frames.
    return ["--listen", "127.0.0.1:0", "--metrics_listen", "127.0.0.1:0", "--backend", "cpu",
            "--drain_seconds", "5", "--min_frame_elements", "1", *extra]


def frame_count(info):
    """The number of frames `ebzip info` reports."""
    m = re.search(r"frames\s+(\d+) of", info)
    if m is None:
        raise AssertionError("ebzip info prints no frame count:\n" + info)
    return int(m.group(1))


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


class RemoteTestCase(cli_test.CliTestCase):
    """CliTestCase with ebzip run in a clean environment, and a server per
    class (started by setUpClass through start_class_server)."""

    server = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tmp = tempfile.TemporaryDirectory(prefix="ebzip_cli_remote_test_")
        cls.addClassCleanup(tmp.cleanup)
        cls.class_dir = tmp.name

    @classmethod
    def start_class_server(cls, name, args=(), env=None):
        server = Ebzipd(os.path.join(cls.class_dir, name + ".log"), args, env)
        # Registered after the temp dir's cleanup, so it runs before it.
        cls.addClassCleanup(server.stop)
        return server

    def start_server(self, name, args=(), env=None):
        server = Ebzipd(self.path(name + ".log"), args, env)
        self.addCleanup(server.stop)
        return server

    def ebzip(self, *args, expect=EXIT_OK, env=None):
        """Runs ebzip, asserts its exit code, returns the CompletedProcess."""
        args = [str(a) for a in args]
        proc = subprocess.run([EBZIP] + args, capture_output=True, text=True, cwd=self.dir,
                              env=clean_environment(env), timeout=120)
        self.assertEqual(
            proc.returncode, expect,
            "ebzip %s: exit %d, expected %d\nstdout: %s\nstderr: %s" %
            (" ".join(args), proc.returncode, expect, proc.stdout, proc.stderr))
        if expect != EXIT_OK:
            self.assertTrue(proc.stderr.strip(),
                            "ebzip %s failed without a message on stderr" % " ".join(args))
        return proc

    def remote(self, *extra, server=None):
        return ["--server", (server or self.server).address, *extra]

    def assert_same_file(self, expected_name, actual_name):
        expected, actual = self.read(expected_name), self.read(actual_name)
        self.assertGreater(len(expected), 0, expected_name + " is empty")
        if expected != actual:
            self.fail("%s (%d bytes) and %s (%d bytes) differ, first at byte %d" %
                      (expected_name, len(expected), actual_name, len(actual),
                       first_difference(expected, actual)))

    def assert_went_remote(self, proc, server=None):
        # Without this, a CLI that ignored --server would pass every
        # byte-identity check trivially.
        self.assertIn("on %s (cpu)" % (server or self.server).address, proc.stdout)

    def compress_both_ways(self, compress_args, server=None, remote_extra=()):
        """Compresses locally into local.ebz and through the server into
        remote.ebz (replacing them: -f); asserts the archives are identical."""
        self.ebzip("compress", *compress_args, "-o", "local.ebz", "-f")
        proc = self.ebzip("compress", *compress_args, "-o", "remote.ebz", "-f",
                          *self.remote(*remote_extra, server=server))
        self.assert_went_remote(proc, server)
        self.assert_same_file("local.ebz", "remote.ebz")

    def decompress_both_ways(self, server=None, remote_extra=()):
        """Decompresses local.ebz and remote.ebz both locally and through the
        server (replacing them: -f); asserts all four arrays are identical and
        returns it."""
        self.ebzip("decompress", "local.ebz", "-o", "local.raw", "-f")
        self.ebzip("decompress", "remote.ebz", "-o", "local_of_remote.raw", "-f")
        for archive in ("local", "remote"):
            out = "remote_of_%s.raw" % archive
            proc = self.ebzip("decompress", archive + ".ebz", "-o", out, "-f",
                              *self.remote(*remote_extra, server=server))
            self.assert_went_remote(proc, server)
            self.assert_same_file("local.raw", out)
        self.assert_same_file("local.raw", "local_of_remote.raw")
        self.assertEqual(self.partials(), [])
        return self.read("local.raw")


# --------------------------------------------------------------------------

class SameFilesTest(RemoteTestCase):
    """Archives and arrays made through ebzipd equal local mode's, byte for
    byte, for raw and NetCDF inputs and for non-default options."""

    SHAPE = (20, 30, 40)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = cls.start_class_server("ebzipd", server_flags())

    def raw_same_files(self, typecode, shape, bound_flag, bound, *extra, seed=7,
                       remote_extra=()):
        n = math.prod(shape)
        original = with_special_values(smooth_field(n, seed, typecode), typecode)
        self.write("in.raw", original)
        args = ["--type", "f32" if typecode == "f" else "f64",
                "--shape", ",".join(map(str, shape)), bound_flag, repr(bound), *extra, "in.raw"]
        self.compress_both_ways(args, remote_extra=remote_extra)
        decoded = self.decompress_both_ways(remote_extra=remote_extra)
        # Identical files could still both be wrong: check the bound too.
        if bound_flag == "--abs":
            abs_bound = bound
        else:
            lo, hi = finite_range(from_bytes(original, typecode))
            abs_bound = bound * (hi - lo)
        self.assert_within(original, decoded, typecode, abs_bound)

    def test_f32_abs(self):
        self.raw_same_files("f", self.SHAPE, "--abs", 1e-3)

    def test_json_summaries(self):
        original = to_bytes(smooth_field(math.prod(self.SHAPE), 4, "f"), "f")
        self.write("in.raw", original)
        args = ["--type", "f32", "--shape", "20,30,40", "--abs", "1e-3", "in.raw"]
        self.ebzip("compress", *args, "-o", "local.ebz")
        c = json.loads(self.ebzip("compress", *args, "-o", "remote.ebz", "--json",
                                  *self.remote()).stdout)
        self.assert_same_file("local.ebz", "remote.ebz")
        self.assertEqual(c["server"], self.server.address)
        self.assertEqual(c["backend"], "cpu")
        self.assertEqual(c["shape"], list(self.SHAPE))
        self.assertEqual(c["input_bytes"], len(original))
        self.assertEqual(c["output_bytes"], os.path.getsize(self.path("remote.ebz")))
        self.assertEqual(c["abs_bound"], 1e-3)
        d = json.loads(self.ebzip("decompress", "remote.ebz", "-o", "remote.raw", "--json",
                                  *self.remote()).stdout)
        self.assertEqual(d["server"], self.server.address)
        self.assertEqual(d["backend"], "cpu")
        self.assertEqual(d["output_bytes"], len(original))
        self.assertEqual(d["output_bytes"], os.path.getsize(self.path("remote.raw")))
        self.assert_within(original, self.read("remote.raw"), "f", 1e-3)

    def test_standard_streams(self):
        original = to_bytes(smooth_field(math.prod(self.SHAPE), 5, "f"), "f")
        args = ["--type", "f32", "--shape", "20,30,40", "--rel", "1e-4"]
        self.write("in.raw", original)
        self.ebzip("compress", *args, "in.raw", "-o", "local.ebz")
        proc = subprocess.run([EBZIP, "compress", *args, "-", "-o", "-", *self.remote()],
                              input=original, capture_output=True, timeout=120,
                              env=clean_environment())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, b"")
        self.assertEqual(proc.stdout, self.read("local.ebz"))
        self.ebzip("decompress", "local.ebz", "-o", "local.raw")
        proc = subprocess.run([EBZIP, "decompress", "-", "-o", "-", *self.remote()],
                              input=self.read("local.ebz"), capture_output=True, timeout=120,
                              env=clean_environment())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, b"")
        self.assertEqual(proc.stdout, self.read("local.raw"))

    def test_existing_output_needs_force(self):
        self.write("in.raw", to_bytes(smooth_field(math.prod(self.SHAPE), 6, "f"), "f"))
        self.write("out.ebz", b"precious")
        since = len(self.server.events())
        proc = self.assert_failed_cleanly(
            self.path("out.ebz"), EXIT_FAILURE, "compress", "--type", "f32", "--shape",
            "20,30,40", "--abs", "1e-3", "in.raw", "-o", "out.ebz", *self.remote())
        self.assertIn("-f", proc.stderr)
        # Refused before the server was asked.
        self.assertEqual(self.server.finished_requests(since), [])
        self.ebzip("compress", "--type", "f32", "--shape", "20,30,40", "--abs", "1e-3",
                   "in.raw", "-o", "out.ebz", "-f", *self.remote())
        self.assertNotEqual(self.read("out.ebz"), b"precious")

    def test_f32_rel(self):
        self.raw_same_files("f", self.SHAPE, "--rel", 1e-4)

    def test_f64_abs(self):
        self.raw_same_files("d", self.SHAPE, "--abs", 1e-6)

    def test_f64_rel(self):
        self.raw_same_files("d", self.SHAPE, "--rel", 1e-5)

    def test_f32_abs_many_frames_streamed(self):
        # An absolute bound with several frames takes the server's streaming
        # path (frame by frame as the array arrives), and 1.5 MiB crosses
        # the 1 MiB messages both ways.
        shape = (64, 96, 64)
        self.raw_same_files("f", shape, "--abs", 1e-2, "--frame_elements", str(96 * 64 * 8),
                            seed=3)
        self.assertEqual(frame_count(self.info("remote.ebz")), 8)

    def test_split_over_streams(self):
        # --streams 3: the array goes out as three calls of whole frames on
        # three connections, and the archive (relative bound: the range is
        # the client's) and the array come back the same as in one call.
        shape = (64, 96, 64)
        since = len(self.server.events())
        self.raw_same_files("f", shape, "--rel", 1e-4, "--frame_elements", str(96 * 64 * 8),
                            seed=4, remote_extra=("--streams", "3"))
        self.assertEqual(frame_count(self.info("remote.ebz")), 8)
        finished = self.server.finished_requests(since)
        # Compress and decompress of two archives, three calls each.
        self.assertEqual(len(finished), 9, finished)
        self.write("tiny.raw", bytes(16))
        for bad in ("-1", "17", "x"):
            proc = self.ebzip("compress", "--type", "f32", "--shape", "4", "--abs", "1",
                              "tiny.raw", "-o", "bad.ebz", "--streams", bad, *self.remote(),
                              expect=EXIT_USAGE)
            self.assertIn("--streams", proc.stderr)

    def test_f64_rel_many_frames_non_default_options(self):
        # Every codec option must reach the server, or its archive differs.
        self.raw_same_files("d", self.SHAPE, "--rel", 1e-5, "--frame_elements",
                            str(30 * 40 * 4), "--gap_array=false", "--radius", "512",
                            "--chunk_symbols", "4096", "--subsequence_bits", "256", seed=5)
        info = self.info("remote.ebz")
        self.assertGreater(frame_count(info), 1, info)
        self.assertRegex(info, r"radius 512, chunk 4096 symbols, subsequence 256 bits")
        self.assertRegex(info, r"gap array no")

    def test_f32_rel_explicit_fill(self):
        fill = -9999.0
        values = smooth_field(math.prod(self.SHAPE), 9, "f")
        for i in range(0, len(values), 37):
            values[i] = fill
        original = to_bytes(values, "f")
        self.write("in.raw", original)
        args = ["--type", "f32", "--shape", "20,30,40", "--rel", "1e-4", "--fill", "-9999",
                "in.raw"]
        self.compress_both_ways(args)
        decoded = self.decompress_both_ways()
        lo, hi = finite_range([x for x in values if x != fill])
        self.assert_within(original, decoded, "f", 1e-4 * (hi - lo), fill)

    def netcdf_source(self, file_name):
        path = os.path.join(DATA_DIR, file_name)
        if not os.path.isfile(path):
            self.skipTest("%s missing (Debian's ferret-datasets, or EBZIP_FERRET_DATA)" % path)
        return path

    def test_netcdf_etopo20_rose_rel(self):
        path = self.netcdf_source("etopo20.cdf")
        # The variable's description (metadata, stored by default) travels
        # to the server too: the same archive, without a warning.
        self.compress_both_ways(["--rel", "1e-4", path + ":ROSE"])
        proc = self.ebzip("compress", "--rel", "1e-4", path + ":ROSE", "-o", "remote.ebz",
                          "-f", *self.remote())
        self.assertNotIn("warning", proc.stderr)
        info = json.loads(self.ebzip("info", "remote.ebz", "--json").stdout)
        self.assertIn("ROSE", json.dumps(info))
        decoded = self.decompress_both_ways()
        var = read_cdf_variable(path, "ROSE")
        self.assertEqual(len(decoded), len(var.data))

    def test_netcdf_ocean_atlas_temp_auto_fill(self):
        # The variable's _FillValue is found by the client and must travel
        # to the server, or the REL range (and so the archive) changes.
        path = self.netcdf_source("ocean_atlas_subset.nc")
        self.compress_both_ways(["--rel", "1e-4", path + ":TEMP", "--nometadata"])
        self.assertRegex(self.info("remote.ebz"), r"fill value\s+-9\.99999979e\+33")
        decoded = self.decompress_both_ways()
        var = read_cdf_variable(path, "TEMP")
        fill = var.attribute_value("_FillValue")
        values = from_bytes(var.data, "f")
        lo, hi = finite_range([x for x in values if x != fill])
        self.assert_within(var.data, decoded, "f", 1e-4 * (hi - lo), fill)


class RemoteRegionTest(RemoteTestCase):
    """decompress --region through a server, of an uploaded archive and of
    one under the server's --archive_root (--remote_path): the same bytes
    as a local --region; malformed regions and paths are refused; without
    --archive_root the server reads no files of its own."""

    SHAPE = (24, 18, 20)
    REGIONS = ["10:20,0:18,5:17", ":,:,:", "23,17,19", "1:24:7,::5,3:4", "5:5,:,:"]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = os.path.join(cls.class_dir, "root")
        os.makedirs(os.path.join(cls.root, "runs"))
        # Configured through the environment, as containers configure it.
        cls.server = cls.start_class_server("rooted", server_flags(),
                                            env={"EBZIPD_ARCHIVE_ROOT": cls.root})
        cls.plain = cls.start_class_server("plain", server_flags())

    def setUp(self):
        super().setUp()
        n = math.prod(self.SHAPE)
        self.write("in.raw", with_special_values(smooth_field(n, 5, "f"), "f"))
        self.compress_raw("in.raw", "f", self.SHAPE, "--rel", 1e-3, "a.ebz",
                          "--frame_elements", str(18 * 20 * 8))
        shutil.copy(self.path("a.ebz"), os.path.join(self.root, "runs", "a.ebz"))

    def test_regions_equal_the_local_region(self):
        for text in self.REGIONS:
            with self.subTest(region=text):
                self.ebzip("decompress", "a.ebz", "--region", text, "-o", "local.raw", "-f")
                proc = self.ebzip("decompress", "a.ebz", "--region", text, "-o", "up.raw", "-f",
                                  *self.remote())
                self.assert_went_remote(proc)
                proc = self.ebzip("decompress", "--remote_path", "runs/a.ebz", "--region", text,
                                  "-o", "path.raw", "-f", *self.remote())
                self.assert_went_remote(proc)
                if text != "5:5,:,:":  # an empty region: empty files all
                    self.assert_same_file("local.raw", "up.raw")
                    self.assert_same_file("local.raw", "path.raw")
                else:
                    self.assertEqual(self.read("up.raw"), b"")
                    self.assertEqual(self.read("path.raw"), b"")

    def test_whole_archive_by_path(self):
        self.ebzip("decompress", "a.ebz", "-o", "local.raw")
        proc = self.ebzip("decompress", "--remote_path", "runs/a.ebz", "-o", "path.raw",
                          "--json", *self.remote())
        self.assert_same_file("local.raw", "path.raw")
        r = json.loads(proc.stdout)
        self.assertEqual(r["input"], "runs/a.ebz")
        self.assertEqual(r["shape"], list(self.SHAPE))

    def test_malformed_regions_are_usage_errors(self):
        for text in ["0:25,:,:", "0:5:0,:,:", "1:2,3", "x,:,:", "9:3,:,:"]:
            for source in (["a.ebz"], ["--remote_path", "runs/a.ebz"]):
                with self.subTest(region=text, source=source[0]):
                    proc = self.assert_failed_cleanly(self.path("r.raw"), EXIT_USAGE,
                                                      "decompress", *source, "--region", text,
                                                      "-o", "r.raw", *self.remote())
                    self.assertIn("region", proc.stderr)

    def test_paths_that_leave_the_root_are_refused(self):
        outside = os.path.join(self.class_dir, "outside.ebz")
        shutil.copy(self.path("a.ebz"), outside)
        link = os.path.join(self.root, "link.ebz")
        if not os.path.lexists(link):
            os.symlink(outside, link)
        for path, code, text in [("../outside.ebz", EXIT_USAGE, '".." component'),
                                 ("runs/../../outside.ebz", EXIT_USAGE, '".." component'),
                                 (outside, EXIT_USAGE, "absolute"),
                                 ("link.ebz", EXIT_FAILURE, "symbolic link"),
                                 ("runs", EXIT_FAILURE, "not a regular file"),
                                 ("runs/missing.ebz", EXIT_FAILURE, "no such file")]:
            with self.subTest(path=path):
                proc = self.assert_failed_cleanly(self.path("r.raw"), code, "decompress",
                                                  "--remote_path", path, "-o", "r.raw",
                                                  *self.remote())
                self.assertIn(text, proc.stderr)

    def test_off_without_archive_root(self):
        proc = self.assert_failed_cleanly(self.path("r.raw"), EXIT_FAILURE, "decompress",
                                          "--remote_path", "runs/a.ebz", "-o", "r.raw",
                                          *self.remote(server=self.plain))
        self.assertIn("--archive_root", proc.stderr)

    def test_remote_path_needs_server_and_no_input(self):
        self.assert_failed_cleanly(self.path("r.raw"), EXIT_USAGE, "decompress",
                                   "--remote_path", "runs/a.ebz", "-o", "r.raw")
        self.assert_failed_cleanly(self.path("r.raw"), EXIT_USAGE, "decompress", "a.ebz",
                                   "--remote_path", "runs/a.ebz", "-o", "r.raw", *self.remote())


class HealthTest(RemoteTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = cls.start_class_server("ebzipd", server_flags())

    def test_serving_server_exits_0(self):
        proc = self.ebzip("health", *self.remote())
        self.assertIn("%s: SERVING" % self.server.address, proc.stdout)
        self.assertIn("backend cpu", proc.stdout)

    def test_quiet_prints_nothing(self):
        proc = self.ebzip("health", "--quiet", *self.remote())
        self.assertEqual(proc.stdout, "")

    def test_nothing_listening_fails(self):
        # A socket bound but not listening: connections to it are refused,
        # and no other process can take the port while the test runs.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            address = "127.0.0.1:%d" % s.getsockname()[1]
            proc = self.ebzip("health", "--server", address, expect=EXIT_FAILURE)
            self.assertIn("ebzip health:", proc.stderr)
            self.assertIn("Connection refused", proc.stderr)
            self.assertNotIn("SERVING", proc.stdout)
            # compress and decompress fail the same way, leaving no file.
            self.write("in.raw", to_bytes(smooth_field(1000, 1, "f"), "f"))
            proc = self.assert_failed_cleanly(
                self.path("out.ebz"), EXIT_FAILURE, "compress", "--type", "f32", "--shape",
                "1000", "--abs", "0.1", "in.raw", "-o", "out.ebz", "--server", address)
            self.assertIn("Connection refused", proc.stderr)

    def test_without_server_is_a_usage_error(self):
        proc = self.ebzip("health", expect=EXIT_USAGE)
        self.assertIn("--server", proc.stderr)

    def test_json(self):
        proc = self.ebzip("health", "--json", *self.remote())
        health = json.loads(proc.stdout)
        self.assertEqual(health["server"], self.server.address)
        self.assertEqual(health["status"], "SERVING")
        self.assertEqual(health["backend"], "cpu")
        self.assertIsInstance(health["format_version"], int)
        self.assertIsInstance(health["devices"], list)

    def test_deadline_ends_a_call_to_a_silent_server(self):
        # A listening socket nobody accepts from: the connection opens (the
        # kernel's backlog) but the server never says a word.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            s.listen(8)
            address = "127.0.0.1:%d" % s.getsockname()[1]
            self.write("in.raw", to_bytes(smooth_field(1000, 1, "f"), "f"))
            for flag in ("--deadline", "--timeout"):
                with self.subTest(flag):
                    start = time.monotonic()
                    proc = self.ebzip("health", "--server", address, flag, "1.5",
                                      expect=EXIT_FAILURE)
                    elapsed = time.monotonic() - start
                    self.assertGreaterEqual(elapsed, 1.4)
                    self.assertLess(elapsed, 30)
                    self.assertIn("eadline", proc.stderr)
            start = time.monotonic()
            proc = self.assert_failed_cleanly(
                self.path("out.ebz"), EXIT_FAILURE, "compress", "--type", "f32", "--shape",
                "1000", "--abs", "0.1", "in.raw", "-o", "out.ebz", "--server", address,
                "--deadline", "1")
            self.assertLess(time.monotonic() - start, 30)
            self.assertIn("eadline", proc.stderr)


class TokenFromEnvironmentTest(RemoteTestCase):
    """A server configured only through EBZIPD_* variables (no arguments at
    all), requiring a bearer token."""

    ENV = {
        "EBZIPD_LISTEN": "127.0.0.1:0",
        "EBZIPD_METRICS_LISTEN": "127.0.0.1:0",
        "EBZIPD_BACKEND": "cpu",
        "EBZIPD_TOKEN": TOKEN,
        "EBZIPD_DRAIN_SECONDS": "5",
    }

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = cls.start_class_server("ebzipd", env=cls.ENV)

    def setUp(self):
        super().setUp()
        self.original = to_bytes(smooth_field(32 * 50, 1, "f"), "f")
        self.write("in.raw", self.original)
        self.compress_args = ["--type", "f32", "--shape", "32,50", "--abs", "0.001", "in.raw"]
        self.ebzip("compress", *self.compress_args, "-o", "local.ebz")
        self.ebzip("decompress", "local.ebz", "-o", "local.raw")

    def test_configured_from_environment(self):
        # The defaults are 0.0.0.0:50051, 0.0.0.0:9464 and no token.
        serving = self.server.serving
        self.assertEqual(serving["listen"], "127.0.0.1:0")
        self.assertNotEqual(serving["port"], 50051)
        self.assertNotEqual(serving["metrics_port"], 9464)
        self.assertEqual(serving["backend"], "cpu")
        self.assertIs(serving["token"], True)

    def assert_unauthenticated(self, since, method):
        # The command line prints the status message only; the server's log
        # names the status code.
        codes = [e.get("code") for e in self.server.finished_requests(since)
                 if e.get("method") == method]
        self.assertIn("UNAUTHENTICATED", codes, self.server.log_text())

    def test_without_token_fails(self):
        for token_args in ([], ["--token", "wrong-" + TOKEN]):
            with self.subTest(token_args=token_args):
                since = len(self.server.events())
                proc = self.assert_failed_cleanly(
                    self.path("out.ebz"), EXIT_FAILURE, "compress", *self.compress_args,
                    "-o", "out.ebz", *self.remote(*token_args))
                self.assertIn("missing or wrong bearer token", proc.stderr)
                self.assert_unauthenticated(since, "compress")

                since = len(self.server.events())
                proc = self.assert_failed_cleanly(
                    self.path("out.raw"), EXIT_FAILURE, "decompress", "local.ebz",
                    "-o", "out.raw", *self.remote(*token_args))
                self.assertIn("missing or wrong bearer token", proc.stderr)
                self.assert_unauthenticated(since, "decompress")

    def test_with_token_succeeds(self):
        self.compress_both_ways(self.compress_args, remote_extra=["--token", TOKEN])
        self.decompress_both_ways(remote_extra=["--token", TOKEN])
        # With the token, health also gets the server's description.
        proc = self.ebzip("health", *self.remote("--token", TOKEN))
        self.assertIn("SERVING", proc.stdout)
        self.assertIn("backend cpu", proc.stdout)

    def test_token_from_client_environment(self):
        env = {"EBZIP_TOKEN": TOKEN}
        proc = self.ebzip("compress", *self.compress_args, "-o", "remote.ebz", *self.remote(),
                          env=env)
        self.assert_went_remote(proc)
        self.assert_same_file("local.ebz", "remote.ebz")
        self.ebzip("decompress", "remote.ebz", "-o", "remote.raw", *self.remote(), env=env)
        self.assert_same_file("local.raw", "remote.raw")

    def test_health_needs_no_token(self):
        # Probes (Docker HEALTHCHECK, Kubernetes) carry no token: the health
        # check passes without one, but the description needs it.
        proc = self.ebzip("health", *self.remote())
        self.assertIn("SERVING", proc.stdout)
        self.assertNotIn("backend", proc.stdout)

    def test_command_line_overrides_environment(self):
        server = self.start_server(
            "override", ["--token", "flag-" + TOKEN],
            env=dict(self.ENV, EBZIPD_TOKEN="environment-" + TOKEN))
        self.assertEqual(server.serving["listen"], "127.0.0.1:0")  # still from the environment
        proc = self.assert_failed_cleanly(
            self.path("out.ebz"), EXIT_FAILURE, "compress", *self.compress_args, "-o", "out.ebz",
            *self.remote("--token", "environment-" + TOKEN, server=server))
        self.assertIn("bearer token", proc.stderr)
        self.ebzip("compress", *self.compress_args, "-o", "out.ebz",
                   *self.remote("--token", "flag-" + TOKEN, server=server))
        self.assert_same_file("local.ebz", "out.ebz")


class TlsTest(RemoteTestCase):
    """--tls_cert/--tls_key on the server; the command line verifies it with
    --tls CA."""

    @classmethod
    def make_certificate(cls, name):
        cert = os.path.join(cls.class_dir, name + ".pem")
        key = os.path.join(cls.class_dir, name + ".key")
        proc = subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise AssertionError("openssl req failed:\n" + proc.stderr)
        return cert, key

    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise unittest.SkipTest("openssl not installed")
        super().setUpClass()
        cls.cert, key = cls.make_certificate("server")
        # Also for CN=localhost, but another key: a client trusting it must
        # refuse the server.
        cls.other_cert, _ = cls.make_certificate("other")
        cls.server = cls.start_class_server(
            "ebzipd", server_flags("--tls_cert", cls.cert, "--tls_key", key))
        cls.localhost = "localhost:%d" % cls.server.port

    def setUp(self):
        super().setUp()
        self.write("in.raw", to_bytes(smooth_field(32 * 50, 1, "f"), "f"))
        self.compress_args = ["--type", "f32", "--shape", "32,50", "--rel", "1e-4", "in.raw"]
        self.ebzip("compress", *self.compress_args, "-o", "local.ebz")

    def test_serving_tls(self):
        self.assertIs(self.server.serving["tls"], True)

    def test_with_ca_succeeds(self):
        proc = self.ebzip("compress", *self.compress_args, "-o", "remote.ebz",
                          "--server", self.localhost, "--tls", self.cert)
        self.assertIn("on %s (cpu)" % self.localhost, proc.stdout)
        self.assert_same_file("local.ebz", "remote.ebz")
        self.ebzip("decompress", "local.ebz", "-o", "local.raw")
        self.ebzip("decompress", "remote.ebz", "-o", "remote.raw",
                   "--server", self.localhost, "--tls", self.cert)
        self.assert_same_file("local.raw", "remote.raw")
        proc = self.ebzip("health", "--server", self.localhost, "--tls", self.cert)
        self.assertIn("backend cpu", proc.stdout)

    def test_server_name_is_checked(self):
        # The certificate names localhost, not 127.0.0.1.
        proc = self.ebzip("health", *self.remote(), "--tls", self.cert, expect=EXIT_FAILURE)
        self.assertNotIn("SERVING", proc.stdout)
        proc = self.ebzip("health", *self.remote(), "--tls", self.cert,
                          "--tls_server_name", "localhost")
        self.assertIn("SERVING", proc.stdout)

    def test_without_tls_fails(self):
        proc = self.ebzip("health", "--server", self.localhost, expect=EXIT_FAILURE)
        self.assertNotIn("SERVING", proc.stdout)
        self.assert_failed_cleanly(self.path("out.ebz"), EXIT_FAILURE, "compress",
                                   *self.compress_args, "-o", "out.ebz",
                                   "--server", self.localhost)
        self.assert_failed_cleanly(self.path("out.raw"), EXIT_FAILURE, "decompress",
                                   "local.ebz", "-o", "out.raw", "--server", self.localhost)

    def test_untrusted_certificate_fails(self):
        proc = self.ebzip("health", "--server", self.localhost, "--tls", self.other_cert,
                          expect=EXIT_FAILURE)
        self.assertNotIn("SERVING", proc.stdout)
        self.assert_failed_cleanly(self.path("out.ebz"), EXIT_FAILURE, "compress",
                                   *self.compress_args, "-o", "out.ebz",
                                   "--server", self.localhost, "--tls", self.other_cert)

    def test_missing_ca_file_fails(self):
        missing = self.path("missing.pem")
        proc = self.assert_failed_cleanly(self.path("out.ebz"), EXIT_FAILURE, "compress",
                                          *self.compress_args, "-o", "out.ebz",
                                          "--server", self.localhost, "--tls", missing)
        self.assertIn(missing, proc.stderr)


class BadArchiveTest(RemoteTestCase):
    """Corrupt archives sent to the server: DATA_LOSS, exit 1, no output and
    an existing output left alone, as in local mode."""

    # Several frames, so that the server can have streamed rows of the
    # frames before a bad one when it finds the damage.
    SHAPE = (128, 50)
    FRAME_ELEMENTS = 16 * 50  # frames are whole 16-row blocks

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = cls.start_class_server("ebzipd", server_flags())

    def setUp(self):
        super().setUp()
        self.write("in.raw", to_bytes(smooth_field(math.prod(self.SHAPE), 1, "f"), "f"))
        self.ebzip("compress", "--type", "f32", "--shape", "128,50", "--abs", "0.001",
                   "--frame_elements", str(self.FRAME_ELEMENTS), "in.raw", "-o", "good.ebz")
        self.assertEqual(frame_count(self.info("good.ebz")), 8)
        self.archive = self.read("good.ebz")
        self.ebzip("decompress", "good.ebz", "-o", "good.raw")
        self.decoded = self.read("good.raw")
        self.out = self.path("out")

    def assert_data_loss(self, since):
        codes = [e.get("code") for e in self.server.finished_requests(since)
                 if e.get("method") == "decompress"]
        self.assertEqual(codes, ["DATA_LOSS"], self.server.log_text())

    def test_failures_exit_1(self):
        flipped = bytearray(self.archive)
        flipped[len(flipped) * 3 // 4] ^= 0x04  # in a late frame
        cases = {
            "truncated (half)": (self.archive[:len(self.archive) // 2], "corrupt"),
            "truncated (last byte)": (self.archive[:-1], "corrupt"),
            "truncated (header)": (self.archive[:10], "corrupt"),
            "bit-flipped in a late frame": (bytes(flipped), "corrupt"),
            "empty": (b"", "empty archive"),
            "not an archive": (self.read("in.raw"), "not an ebzip archive"),
        }
        for what, (data, word) in cases.items():
            with self.subTest(what):
                self.write("bad.ebz", data)
                # Local mode refuses it too (in its own words, for "empty").
                self.assert_failed_cleanly(self.out, EXIT_FAILURE, "decompress", "bad.ebz",
                                           "-o", self.out)
                since = len(self.server.events())
                proc = self.assert_failed_cleanly(self.out, EXIT_FAILURE, "decompress",
                                                  "bad.ebz", "-o", self.out, *self.remote())
                self.assertIn(word, proc.stderr)
                self.assert_data_loss(since)

    def test_existing_output_replaced_only_on_success(self):
        self.write("out", b"precious")
        flipped = bytearray(self.archive)
        flipped[len(flipped) * 3 // 4] ^= 0x01
        self.write("flipped.ebz", bytes(flipped))
        proc = self.assert_failed_cleanly(self.out, EXIT_FAILURE, "decompress", "flipped.ebz",
                                          "-o", self.out, "-f", *self.remote())
        self.assertNotIn("exists", proc.stderr)
        self.assertEqual(self.read("out"), b"precious")
        # Every frame is whole but the index is cut short: the server streams
        # rows of the first frames before it finds that, so the command line
        # has written some of the output when the call fails.
        self.write("truncated.ebz", self.archive[:-1])
        since = len(self.server.events())
        self.assert_failed_cleanly(self.out, EXIT_FAILURE, "decompress", "truncated.ebz",
                                   "-o", self.out, "-f", *self.remote())
        self.assertEqual(self.read("out"), b"precious")
        sent = [int(e.get("bytes_out", 0)) for e in self.server.finished_requests(since)]
        self.assertEqual(len(sent), 1, self.server.log_text())
        self.assertGreater(sent[0], 0, "the server sent no rows before failing, so this "
                           "no longer tests a failure after output was written")
        self.ebzip("decompress", "good.ebz", "-o", self.out, "-f", *self.remote())
        self.assertEqual(self.read("out"), self.decoded)
        self.assertEqual(self.partials(), [])

class RemoteOutputTest(RemoteTestCase):
    """--max_output_bytes and special outputs with --server, as in local
    mode (cli_test.py's MaxOutputBytesTest and SpecialOutputTest)."""

    SHAPE = (40, 60)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = cls.start_class_server("ebzipd", server_flags())

    def setUp(self):
        super().setUp()
        self.original = to_bytes(smooth_field(math.prod(self.SHAPE), 2, "f"), "f")
        self.write("in.raw", self.original)
        self.compress_args = ["compress", "--type", "f32", "--shape", "40,60", "--abs", "0.001",
                              "in.raw"]
        self.ebzip(*self.compress_args, "-o", "local.ebz")
        self.ebzip("decompress", "local.ebz", "-o", "local.raw")
        self.out = self.path("out.raw")

    def decompress_calls(self, since):
        return [e for e in self.server.finished_requests(since)
                if e.get("method") == "decompress"]

    def test_max_output_bytes(self):
        size = len(self.original)
        since = len(self.server.events())
        proc = self.assert_failed_cleanly(self.out, EXIT_FAILURE, "decompress", "local.ebz",
                                          "-o", self.out, "--max_output_bytes", str(size - 1),
                                          *self.remote())
        self.assertIn("--max_output_bytes", proc.stderr)
        # Refused from the archive's own header: the server was not asked.
        self.assertEqual(self.decompress_calls(since), [], self.server.log_text())
        proc = self.ebzip("decompress", "local.ebz", "-o", self.out, "--max_output_bytes",
                          str(size), *self.remote())
        self.assert_went_remote(proc)
        self.assert_same_file("local.raw", self.out)

    def test_fifo_output(self):
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        for args, expected in ((self.compress_args, "local.ebz"),
                               (["decompress", "local.ebz"], "local.raw")):
            with self.subTest(args[0]):
                reader = cli_test.FifoReader(fifo)
                try:
                    proc = self.ebzip(*args, "-o", fifo, *self.remote())
                finally:
                    received = reader.finish()
                self.assert_went_remote(proc)
                self.assertEqual(received, self.read(expected))
                self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")
        self.assertEqual(self.partials(), [])


def main():
    global EBZIP, EBZIPD
    if len(sys.argv) < 3 or not all(os.access(p, os.X_OK) for p in sys.argv[1:3]):
        sys.stderr.write("usage: cli_remote_test.py PATH/TO/ebzip PATH/TO/ebzipd "
                         "[unittest arguments]\n")
        sys.exit(2)
    EBZIP = os.path.abspath(sys.argv[1])
    EBZIPD = os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)


if __name__ == "__main__":
    main()
