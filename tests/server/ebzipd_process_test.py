#!/usr/bin/python3
"""ebzipd as an operator runs it: a second server on a port (or Unix socket)
already in use exits non-zero and says why, instead of sharing the port; a
listen address without a port, or otherwise malformed, is bad usage (exit 2)
with a message naming the flag; and every line ebzipd writes to stderr,
gRPC's own included, is a JSON object whose fields have their JSON types.

usage: ebzipd_process_test.py --ebzipd PATH   (PYTHONPATH=<build>/python)
"""
import argparse
import array
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
from ebzip.v1 import ebzip_pb2, ebzip_pb2_grpc

EBZIPD = None
LEVELS = {"debug", "info", "warning", "error"}


def parse_log(text):
    """Every line as a JSON object with time, level and msg; fails otherwise."""
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            event = json.loads(line)
        except ValueError as e:
            raise AssertionError(f"stderr line {number} is not JSON ({e}): {line!r}")
        if not isinstance(event, dict):
            raise AssertionError(f"stderr line {number} is not a JSON object: {line!r}")
        for key in ("time", "level", "msg"):
            if not isinstance(event.get(key), str):
                raise AssertionError(f"stderr line {number}: {key!r} is not a string: {line!r}")
        if event["level"] not in LEVELS:
            raise AssertionError(f"stderr line {number}: level {event['level']!r}: {line!r}")
        events.append(event)
    return events


class Ebzipd:
    """An ebzipd child process, its stderr in a file."""

    def __init__(self, work, *flags, listen="127.0.0.1:0", metrics="", wait=True, env=None):
        self.log_path = os.path.join(work, "ebzipd-%d.log" % time.monotonic_ns())
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [EBZIPD, "--listen", listen, "--metrics_listen", metrics, "--backend", "cpu",
             "--drain_seconds", "5", *flags],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log,
            env=None if env is None else {**os.environ, **env})
        try:
            self.serving = self._wait_serving() if wait else None
        except BaseException:
            self.kill()
            raise

    def _wait_serving(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for event in parse_log(self.text()):
                if event["msg"] == "ebzipd serving":
                    return event
            if self.proc.poll() is not None:
                raise AssertionError("ebzipd exited %d: %s" % (self.proc.returncode, self.text()))
            time.sleep(0.05)
        raise AssertionError("ebzipd did not start: " + self.text())

    def text(self):
        with open(self.log_path, encoding="utf-8") as f:
            return f.read()

    def wait(self, timeout=60):
        """The exit status; a process still running after `timeout` is
        killed and fails the test."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("ebzipd still running after %d s: %s" % (timeout, self.text()))
        finally:
            self.log.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        status = self.wait()
        return status

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.wait()


def health(target, service=""):
    """The serving status ebzipd's health service reports for `service`."""
    with grpc.insecure_channel(target) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        # HealthCheckRequest{service}: field 1, length-delimited.
        name = service.encode()
        reply = check(b"\x0a" + bytes([len(name)]) + name if name else b"", timeout=10)
        # HealthCheckResponse{status}: field 1 varint; absent means UNKNOWN.
        return reply[1] if reply[:1] == b"\x08" else 0


SERVING = 1


class PortInUse(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_second_server_on_a_port_in_use_exits_with_a_message(self):
        first = Ebzipd(self.work)
        try:
            port = first.serving["port"]
            address = "127.0.0.1:%d" % port
            second = Ebzipd(self.work, listen=address, wait=False)
            status = second.wait(timeout=60)
            self.assertEqual(status, 1, second.text())
            events = parse_log(second.text())
            self.assertFalse([e for e in events if e["msg"] == "ebzipd serving"])
            failure = [e for e in events if e["msg"] == "cannot start"]
            self.assertEqual(len(failure), 1, second.text())
            self.assertIn("cannot listen on " + address, failure[0]["error"])
            self.assertEqual(failure[0]["level"], "error")
            # gRPC's own line names the cause, as JSON too.
            grpc_lines = [e for e in events if e.get("source") == "grpc"]
            self.assertTrue(any("Address already in use" in e["msg"] for e in grpc_lines),
                            second.text())
            # The first server still has the port to itself and serves.
            self.assertEqual(health(address), SERVING)
            self.assertEqual(first.stop(), 0)
        finally:
            first.kill()

    def test_the_port_is_not_shared_even_when_the_first_server_is_busy_elsewhere(self):
        # Without SO_REUSEPORT a plain socket bound by someone else stops
        # ebzipd as well, whichever program holds the port.
        holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        try:
            address = "127.0.0.1:%d" % holder.getsockname()[1]
            server = Ebzipd(self.work, listen=address, wait=False)
            self.assertEqual(server.wait(timeout=60), 1, server.text())
        finally:
            holder.close()

    def test_a_metrics_port_in_use_stops_the_server_too(self):
        first = Ebzipd(self.work, metrics="127.0.0.1:0")
        try:
            address = "127.0.0.1:%d" % first.serving["metrics_port"]
            second = Ebzipd(self.work, metrics=address, wait=False)
            self.assertEqual(second.wait(timeout=60), 1, second.text())
            failure = [e for e in parse_log(second.text()) if e["msg"] == "cannot start"]
            self.assertIn("cannot serve metrics on " + address, failure[0]["error"])
        finally:
            first.kill()

    def test_a_unix_socket_in_use_is_refused_and_a_stale_one_replaced(self):
        path = os.path.join(self.work, "ebzipd.sock")
        first = Ebzipd(self.work, listen="unix:" + path)
        try:
            self.assertNotIn("port", first.serving)  # a socket has none
            self.assertEqual(health("unix:" + path), SERVING)
            second = Ebzipd(self.work, listen="unix:" + path, wait=False)
            self.assertEqual(second.wait(timeout=60), 1, second.text())
            failure = [e for e in parse_log(second.text()) if e["msg"] == "cannot start"]
            self.assertIn("another process listens there", failure[0]["error"])
            self.assertEqual(health("unix:" + path), SERVING)
        finally:
            first.kill()  # SIGKILL: the socket file stays behind, stale
        self.assertTrue(os.path.exists(path))
        third = Ebzipd(self.work, listen="unix://" + path)
        try:
            self.assertEqual(health("unix:" + path), SERVING)
            self.assertEqual(third.stop(), 0)
        finally:
            third.kill()


class ListenAddresses(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def expect_usage_error(self, flag, address):
        listen, metrics = ("127.0.0.1:0", address) if flag == "metrics_listen" else (address, "")
        server = Ebzipd(self.work, listen=listen, metrics=metrics, wait=False)
        status = server.wait(timeout=30)
        self.assertEqual(status, 2, f"--{flag} {address!r}: {server.text()}")
        events = parse_log(server.text())
        errors = [e for e in events if e["level"] == "error"]
        self.assertEqual(len(errors), 1, server.text())
        self.assertIn(f'--{flag} "{address}"', errors[0]["error"])
        self.assertIn("HOST:PORT", errors[0]["error"])
        return errors[0]["error"]

    def test_an_address_without_a_port_is_bad_usage(self):
        for address in ("localhost", "127.0.0.1", "[::1]", "ebzip.example.org"):
            with self.subTest(address=address):
                self.assertIn("no port", self.expect_usage_error("listen", address))

    def test_malformed_addresses_are_bad_usage(self):
        for address in ("localhost:", "localhost:65536", "localhost:http", "localhost:-1",
                        ":50051", "::1:50051", "[::1", "[not-ipv6]:1", "[::1]50051",
                        "host name:1", "unix:", "", "dns:///localhost:50051"):
            with self.subTest(address=address):
                self.expect_usage_error("listen", address)

    def test_metrics_addresses_are_checked_the_same_way(self):
        for address in ("9464", "localhost", "unix:/tmp/metrics.sock", "[::1]:x"):
            with self.subTest(address=address):
                self.expect_usage_error("metrics_listen", address)

    def test_good_addresses_serve(self):
        for address in ("127.0.0.1:0", "localhost:0", "[::1]:0"):
            with self.subTest(address=address):
                server = Ebzipd(self.work, listen=address)
                try:
                    self.assertIsInstance(server.serving["port"], int)
                    self.assertGreater(server.serving["port"], 0)
                    host = address.rsplit(":", 1)[0]
                    self.assertEqual(health("%s:%d" % (host, server.serving["port"])), SERVING)
                    self.assertEqual(server.stop(), 0)
                finally:
                    server.kill()


def field(rows=32, cols=64):
    values = array.array("f", (math.sin(0.1 * r) * math.cos(0.07 * c)
                               for r in range(rows) for c in range(cols)))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


class JsonLogs(unittest.TestCase):
    """Several kinds of lines, each checked for its fields' types."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def compress(self, stub, request_id, shape, data, metadata=()):
        header = ebzip_pb2.CompressHeader(
            array=ebzip_pb2.ArraySpec(dtype=ebzip_pb2.FLOAT32, shape=shape),
            error_bound=ebzip_pb2.ErrorBound(mode=ebzip_pb2.ABS, value=1e-3),
            request_id=request_id)
        messages = [ebzip_pb2.CompressRequest(header=header), ebzip_pb2.CompressRequest(data=data)]
        return list(stub.Compress(iter(messages), timeout=60, metadata=metadata))

    def test_every_line_is_json_with_typed_values(self):
        server = Ebzipd(self.work, metrics="127.0.0.1:0")
        try:
            target = "127.0.0.1:%d" % server.serving["port"]
            with grpc.insecure_channel(target) as channel:
                stub = ebzip_pb2_grpc.CompressorStub(channel)
                data = field()
                replies = self.compress(stub, "typed-ok", [32, 64], data)
                archive_bytes = sum(len(r.archive) for r in replies)
                with self.assertRaises(grpc.RpcError) as bad:
                    self.compress(stub, "typed-bad", [32, 64], data[:100])
                self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                # What a client sends is logged as given, quoted as JSON.
                awkward = 'quote " backslash \\ brace } ñ ✓'
                self.compress(stub, awkward, [32, 64], data)
                self.compress(stub, "", [32, 64], data,
                              metadata=(("ebzip-request-id", 'meta "id" \\ {}'),))
            self.assertEqual(server.stop(), 0)
        finally:
            server.kill()
        events = parse_log(server.text())
        by_msg = {}
        for e in events:
            by_msg.setdefault(e["msg"], []).append(e)

        serving = by_msg["ebzipd serving"][0]
        for key in ("port", "metrics_port"):
            self.assertIs(type(serving[key]), int, key)
        self.assertGreater(serving["metrics_port"], 0)
        for key in ("tls", "token", "batching"):
            self.assertIs(type(serving[key]), bool, key)
        self.assertIs(serving["tls"], False)
        self.assertIs(serving["batching"], True)
        self.assertIsInstance(serving["backend"], str)

        finished = {e["request_id"]: e for e in by_msg["request finished"]}
        ok = finished["typed-ok"]
        self.assertEqual(ok["code"], "OK")
        self.assertEqual(ok["method"], "compress")
        self.assertIs(type(ok["seconds"]), float)
        self.assertGreaterEqual(ok["seconds"], 0)
        for key in ("bytes_in", "bytes_out"):
            self.assertIs(type(ok[key]), int, key)
        self.assertEqual(ok["bytes_in"], len(data))
        self.assertEqual(ok["bytes_out"], archive_bytes)
        bad = finished["typed-bad"]
        self.assertEqual(bad["code"], "INVALID_ARGUMENT")
        self.assertIsInstance(bad["message"], str)
        self.assertIn(awkward, finished)
        self.assertIn('meta "id" \\ {}', finished)

        draining = by_msg["draining"][0]
        self.assertIs(type(draining["calls_in_progress"]), int)
        self.assertIsInstance(draining["grace_seconds"], (int, float))
        self.assertEqual(draining["grace_seconds"], 5)
        self.assertIs(by_msg["stopped"][0]["all_calls_finished"], True)
        self.assertEqual(by_msg["signal received"][0]["signal"], "SIGTERM")

    def test_grpc_lines_are_json_too(self):
        # A TLS "certificate" gRPC cannot read: its TSI layer logs why.
        bogus = os.path.join(self.work, "bogus.pem")
        with open(bogus, "w") as f:
            f.write("not a certificate\n")
        server = Ebzipd(self.work, "--tls_cert", bogus, "--tls_key", bogus, wait=False)
        self.assertEqual(server.wait(timeout=60), 1, server.text())
        events = parse_log(server.text())
        grpc_lines = [e for e in events if e.get("source") == "grpc"]
        self.assertTrue(grpc_lines, server.text())
        for e in grpc_lines:
            self.assertEqual(e["level"], "error")
            self.assertIsInstance(e["file"], str)
            self.assertIs(type(e["line"]), int)
            self.assertGreater(e["line"], 0)
        self.assertEqual([e["msg"] for e in events][-1], "cannot start")

    def test_gRPC_debug_lines_when_asked_for(self):
        # GRPC_VERBOSITY=debug: gRPC's chatty lines, at level debug or info.
        server = Ebzipd(self.work, env={"GRPC_VERBOSITY": "debug"})
        try:
            self.assertEqual(health("127.0.0.1:%d" % server.serving["port"]), SERVING)
            self.assertEqual(server.stop(), 0)
        finally:
            server.kill()
        events = parse_log(server.text())
        grpc_levels = {e["level"] for e in events if e.get("source") == "grpc"}
        self.assertTrue(grpc_levels & {"debug", "info"}, server.text()[:2000])

    def test_usage_errors_before_start_are_json(self):
        token_file = os.path.join(self.work, "missing-token")
        server = Ebzipd(self.work, "--token_file", token_file, wait=False)
        self.assertEqual(server.wait(timeout=30), 2, server.text())
        events = parse_log(server.text())
        self.assertEqual(events[-1]["msg"], "cannot read --token_file")
        self.assertEqual(events[-1]["path"], token_file)
        server = Ebzipd(self.work, "--max_calls", "0", wait=False)
        self.assertEqual(server.wait(timeout=30), 2, server.text())
        self.assertEqual(parse_log(server.text())[-1]["level"], "error")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ebzipd", required=True)
    args, rest = parser.parse_known_args()
    EBZIPD = args.ebzipd
    unittest.main(argv=[sys.argv[0]] + rest)
