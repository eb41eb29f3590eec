#!/usr/bin/env python3
"""Tests of the Python client (client/python) against a real ebzipd.

Usage:
    python_client_test.py --ebzipd PATH --ebzip PATH --export_field PATH
                          [unittest arguments...]

with PYTHONPATH pointing at build/python (the copied client and the generated
ebzip.v1 modules). Run by ctest as `python_client_test` (label integration).

The server is started once, on a port picked here, with the CPU backend,
and stopped with SIGTERM at the end; its exit status must be 0. AuthTest,
TlsTest and LimitsTest start servers of their own (--token, --tls_cert and
--tls_key, --max_request_bytes and --message_bytes) and check the same of
each. Every round trip is checked by this file's own float64 comparison
against the bound (given, or recomputed from the data for REL), with NaN,
+-Inf, -0.0, subnormals and the fill value compared bit for bit. Interoperability is checked against the
`ebzip` command line on the same raw files, byte for byte.

ReflectionTest asks the server's reflection service (as grpcurl does) for
its services and the Compressor's descriptor.

The tests in ClientSideTest need no server: argument checks and the request
stream the client builds.

EBZIP_TEST_LARGE=1 adds a round trip of a 2.2 GiB float32 array, which
needs about 6 GiB of memory here and as much in the server.
"""

import argparse
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
import numpy as np

import ebzip
from ebzip import client as ebzip_client
from ebzip.v1 import ebzip_pb2
from ebzip.v1 import ebzip_pb2_grpc

EBZIPD = None  # paths, set from the command line in main()
EBZIP = None
EXPORT_FIELD = None
DATA_DIR = (os.environ.get('EBZIP_FERRET_DATA') or
            '/usr/share/ferret-vis/data')

MIB = 1 << 20


# ---------------------------------------------------------------------------
# The independent checker: float64 numpy, nothing from the code under test.

def _uint_view(a):
    """The raw bit patterns of a float array, in little-endian order."""
    le = a.astype(a.dtype.newbyteorder('<'), copy=False)
    return le.view('<u%d' % a.dtype.itemsize)


def _fill_bits(dtype, fill):
    return _uint_view(np.array([fill], dtype=dtype))[0]


def must_be_exact(x, fill=None):
    """Elements that must come back bit for bit: NaN, +-Inf, -0.0,
    subnormals and the fill value (compared as bits of x's dtype)."""
    tiny = np.finfo(x.dtype).tiny
    exact = ~np.isfinite(x)
    exact |= (x == 0) & np.signbit(x)
    exact |= (x != 0) & (np.abs(x) < tiny)
    if fill is not None:
        exact |= _uint_view(x) == _fill_bits(x.dtype, fill)
    return exact


def rel_to_abs(x, rel, fill=None):
    """rel times the range of the finite values that are not the fill."""
    keep = np.isfinite(x)
    if fill is not None:
        keep &= _uint_view(x) != _fill_bits(x.dtype, fill)
    if not keep.any():
        return 0.0
    v = x[keep].astype(np.float64)
    return rel * (float(v.max()) - float(v.min()))


def bound_violations(x, y, abs_bound, fill=None):
    """(violations, exact-value mismatches, first bad flat index, max error).

    Errors are computed in float64; a NaN error (a finite value decoded as
    NaN) counts as a violation because the test is `not err <= bound`.
    """
    if x.shape != y.shape:
        raise AssertionError('shapes differ: %s vs %s' % (x.shape, y.shape))
    x = x.reshape(-1)
    y = y.reshape(-1)
    exact = must_be_exact(x, fill)
    special_bad = exact & (_uint_view(x) != _uint_view(y))
    with np.errstate(invalid='ignore', over='ignore'):  # Inf - Inf: NaN
        err = np.abs(x.astype(np.float64) - y.astype(np.float64))
    violation = ~exact & ~(err <= abs_bound)
    bad = np.flatnonzero(violation | special_bad)
    finite_err = err[~exact & np.isfinite(err)]
    return (int(violation.sum()), int(special_bad.sum()),
            int(bad[0]) if bad.size else None,
            float(finite_err.max()) if finite_err.size else 0.0)


# ---------------------------------------------------------------------------
# Inputs.

def smooth_field(shape, dtype, seed=0):
    """A smooth field with a little noise, like a simulation output."""
    rng = np.random.default_rng(seed)
    grids = np.meshgrid(*[np.linspace(0, 3, n) for n in shape], indexing='ij')
    f = np.zeros(shape)
    for i, g in enumerate(grids):
        f += np.sin(g * (i + 1.3)) * (10.0 ** i)
    f += rng.normal(scale=1e-3, size=shape)
    return f.astype(dtype)


def with_specials(x, fill):
    """x with NaN, +-Inf, -0.0, subnormals and fill values sprinkled in."""
    x = x.copy()
    flat = x.reshape(-1)
    n = flat.size
    tiny = np.finfo(x.dtype).tiny
    specials = [np.nan, np.inf, -np.inf, -0.0, tiny / 4, -tiny / 8, fill,
                fill]
    rng = np.random.default_rng(7)
    for i, v in zip(rng.choice(n, size=min(n, 40), replace=False),
                    specials * 5):
        flat[i] = v
    flat[:5] = fill  # a run of fill values, as on a land mask
    return x


def _parse_key_values(line):
    return dict(item.split('=', 1) for item in line.split())


def export_field(spec, out_dir):
    """Writes FILE:VAR as raw little-endian with ebzip_export_field.

    Returns (path, array, fill or None) with the shape and dtype the tool
    printed, so that nothing about the field is written down here.
    """
    path = os.path.join(out_dir, spec.replace(':', '_').replace('.', '_')
                        + '.raw')
    proc = subprocess.run([EXPORT_FIELD, os.path.join(DATA_DIR, spec), path],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError('ebzip_export_field %s failed: %s'
                             % (spec, proc.stderr))
    info = _parse_key_values(proc.stdout)
    dtype = {'f32': '<f4', 'f64': '<f8'}[info['dtype']]
    shape = tuple(int(d) for d in info['shape'].split(','))
    fill = None if info['fill'] == 'none' else float(info['fill'])
    array = np.fromfile(path, dtype=dtype).reshape(shape)
    return path, array, fill


def run_cli(*args):
    proc = subprocess.run([EBZIP, *args], capture_output=True, check=False)
    if proc.returncode != 0:
        raise AssertionError('ebzip %s: exit %d: %s'
                             % (' '.join(args), proc.returncode,
                                proc.stderr.decode(errors='replace')))
    return proc


def cli_type(dtype):
    return {4: 'f32', 8: 'f64'}[np.dtype(dtype).itemsize]


def free_port():
    # The port may be taken again between close() and the server's bind; on
    # a test machine that is rare enough, and avoids depending on the log
    # line the server prints for --listen ...:0.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------
# The server.

class Server:
    """One ebzipd process on a free local port, CPU backend."""

    def __init__(self, *extra_args, **client_kwargs):
        """Starts ebzipd with extra_args and waits until it is SERVING.

        client_kwargs (tls_ca, token) are what the health checks while
        waiting need to get through.
        """
        self.address = '127.0.0.1:%d' % free_port()
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            # --min_frame_elements 1: some tests stream many small frames.
            [EBZIPD, '--listen', self.address, '--metrics_listen=',
             '--backend', 'cpu', '--min_frame_elements', '1', *extra_args],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_serving(30.0, client_kwargs)

    def log_text(self):
        """The end of the server's log, for failure messages."""
        if self.log.closed:
            return self._final_log
        self.log.seek(0)
        return self.log.read().decode(errors='replace')[-8000:]

    def _close_log(self):
        self._final_log = self.log_text()
        self.log.close()

    def _wait_serving(self, seconds, client_kwargs):
        deadline = time.monotonic() + seconds
        last = None
        with ebzip.Client(self.address, **client_kwargs) as c:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    self._close_log()
                    raise AssertionError(
                        'ebzipd exited with %d while starting:\n%s'
                        % (self.proc.returncode, self.log_text()))
                try:
                    last = c.health(timeout=1.0)
                    if last == ebzip.ServingStatus.SERVING:
                        return
                except ebzip.Error as e:
                    last = e
                time.sleep(0.1)
        self.proc.kill()
        self.proc.wait()
        self._close_log()
        raise AssertionError('ebzipd not SERVING after %gs (last: %s):\n%s'
                             % (seconds, last, self.log_text()))

    def stop(self):
        """SIGTERM, then the exit status (killed after 60 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._close_log()
                raise AssertionError('ebzipd ignored SIGTERM for 60 s:\n%s'
                                     % self.log_text()) from None
        if not self.log.closed:
            self._close_log()
        return self.proc.returncode


_shared_server = None
_shared_server_error = None


def shared_server():
    """The server all server tests share, started on first use."""
    global _shared_server, _shared_server_error
    if _shared_server_error is not None:  # fail fast, not 30 s per class
        raise AssertionError('ebzipd did not start: %s' % _shared_server_error)
    if _shared_server is None:
        try:
            _shared_server = Server()
        except AssertionError as e:
            _shared_server_error = e
            raise
    return _shared_server


def tearDownModule():  # pylint: disable=invalid-name
    if _shared_server is not None:
        rc = _shared_server.stop()
        if rc != 0:
            raise AssertionError('ebzipd exited with %d after SIGTERM:\n%s'
                                 % (rc, _shared_server.log_text()))


# ---------------------------------------------------------------------------
# Without a server.

class ClientSideTest(unittest.TestCase):
    """Argument checks and the request stream, with no server running."""

    @classmethod
    def setUpClass(cls):
        # Nothing listens here: if a check were left to the server, the
        # call would fail with ebzip.Unavailable, not ValueError/TypeError.
        cls.client_target = '127.0.0.1:%d' % free_port()
        cls.client = ebzip.Client(cls.client_target, timeout=5)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_bad_arguments_raise_before_any_call(self):
        x = np.ones((4, 4), np.float32)
        cases = [
            (ValueError, dict(abs=0.0)),
            (ValueError, dict(rel=0.0)),
            (ValueError, dict(abs=-1e-3)),
            (ValueError, dict(abs=float('nan'))),
            (ValueError, dict(rel=float('inf'))),
            (ValueError, dict(abs=1e-3, rel=1e-3)),
            (ValueError, dict()),
            (TypeError, dict(abs='0.1')),
            (TypeError, dict(abs=True)),
            (ValueError, dict(abs=1e-3, fill_value=float('nan'))),
        ]
        for exc, kwargs in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(exc):
                    self.client.compress(x, **kwargs)
        arrays = [
            (ValueError, np.ones((2, 2, 2, 2, 2), np.float32)),  # 5-D
            (ValueError, np.float32(1.0)),                       # 0-D
            (ValueError, np.ones((3, 0), np.float32)),           # empty
            (TypeError, np.ones((4, 4), np.int32)),
            (TypeError, np.ones((4, 4), np.float16)),
            (TypeError, np.ones((4, 4), np.complex64)),
        ]
        for exc, a in arrays:
            with self.subTest(shape=a.shape, dtype=a.dtype):
                with self.assertRaises(exc):
                    self.client.compress(a, abs=1e-3)

    def test_unreachable_server_is_an_ebzip_error(self):
        with self.assertRaises(ebzip.Unavailable) as cm:
            self.client.compress(np.ones(8, np.float32), abs=1e-3)
        self.assertEqual(cm.exception.code.name, 'UNAVAILABLE')
        self.assertIsInstance(cm.exception, ebzip.Error)
        with self.assertRaises(ebzip.Unavailable):
            self.client.decompress(b'not an archive')
        with self.assertRaises(ebzip.Unavailable):
            self.client.health(timeout=2)

    def test_only_refused_calls_run_again_and_within_limits(self):
        def script(*failures):
            calls = []

            def attempt(timeout):
                calls.append(timeout)
                if len(calls) <= len(failures):
                    raise failures[len(calls) - 1]
                return 'done'
            return attempt, calls

        refused = ebzip.Unavailable(None, 'the server is draining')
        attempt, calls = script(refused, refused)
        self.assertEqual(self.client._with_retries(attempt), 'done')
        self.assertEqual(len(calls), 3)
        # Each attempt gets what is left of the client's timeout.
        self.assertTrue(5 >= calls[0] >= calls[1] >= calls[2] > 4, calls)

        attempt, calls = script(refused, refused, refused)
        with self.assertRaises(ebzip.Unavailable):
            self.client._with_retries(attempt)
        self.assertEqual(len(calls), ebzip_client.RETRY_ATTEMPTS)

        attempt, calls = script(refused)
        with self.assertRaises(ebzip.Unavailable):
            self.client._with_retries(attempt, replayable=False)
        self.assertEqual(len(calls), 1)

        for other in (ebzip.DataLoss(None, 'corrupt'),
                      ebzip.ResourceExhausted(None, 'full'),
                      ebzip.DeadlineExceeded(None, 'late')):
            attempt, calls = script(other)
            with self.assertRaises(type(other)):
                self.client._with_retries(attempt)
            self.assertEqual(len(calls), 1)

        # No attempt starts past the deadline.
        with ebzip.Client(self.client_target, timeout=0.01) as hurried:
            attempt, calls = script(refused, refused)
            with self.assertRaises(ebzip.Unavailable):
                hurried._with_retries(attempt)
            self.assertEqual(len(calls), 1)

    def test_public_calls_retry_only_what_they_can_send_again(self):
        refused = ebzip.Unavailable(None, 'the server is draining')
        attempts = []

        def refuse(*args):
            attempts.append(args)
            raise refused

        x = np.ones((4, 4), np.float32)
        with ebzip.Client(self.client_target, timeout=5) as c:
            c._compress = refuse  # pylint: disable=protected-access
            c._decompress = refuse  # pylint: disable=protected-access
            cases = [
                (lambda: c.compress(x, abs=1e-3), ebzip_client.RETRY_ATTEMPTS),
                (lambda: c.decompress(b'archive'), ebzip_client.RETRY_ATTEMPTS),
                (lambda: c.compress_chunks('float32', (4, 4), [x.tobytes()],
                                           abs=1e-3),
                 ebzip_client.RETRY_ATTEMPTS),
                # An iterator's pieces can be read once: no second attempt.
                (lambda: c.compress_chunks('float32', (4, 4),
                                           iter([x.tobytes()]), abs=1e-3), 1),
            ]
            for call, expected in cases:
                attempts.clear()
                with self.assertRaises(ebzip.Unavailable):
                    call()
                self.assertEqual(len(attempts), expected)

    def test_request_stream_is_header_then_bounded_data(self):
        x = smooth_field((300, 1001), np.float64)  # 2.29 MiB, not a multiple
        header = ebzip_client.compress_header(
            x.dtype, x.shape, rel=1e-4, fill_value=-1e34, frame_elements=4096,
            gap_array=False, request_id='r1', priority=-3)
        requests = list(ebzip_client.compress_requests(
            header, [x.reshape(-1).view(np.uint8)]))
        self.assertEqual(requests[0].WhichOneof('msg'), 'header')
        h = requests[0].header
        self.assertEqual(h.array.dtype, ebzip_pb2.FLOAT64)
        self.assertEqual(list(h.array.shape), [300, 1001])
        self.assertEqual(h.error_bound.mode, ebzip_pb2.REL)
        self.assertEqual(h.error_bound.value, 1e-4)
        self.assertEqual(h.options.fill_value, -1e34)
        self.assertEqual(h.options.frame_elements, 4096)
        self.assertTrue(h.options.HasField('gap_array'))
        self.assertFalse(h.options.gap_array)
        self.assertEqual((h.request_id, h.priority), ('r1', -3))
        data = requests[1:]
        self.assertTrue(all(r.WhichOneof('msg') == 'data' for r in data))
        self.assertTrue(all(0 < len(r.data) <= MIB for r in data))
        self.assertEqual(b''.join(r.data for r in data), x.tobytes())

    def test_unset_options_stay_unset(self):
        # The server must see "unset" to apply the CLI's defaults.
        h = ebzip_client.compress_header(np.float32, (5,), abs=0.5)
        self.assertFalse(h.options.HasField('gap_array'))
        self.assertFalse(h.options.HasField('fill_value'))
        self.assertEqual(h.options.frame_elements, 0)
        self.assertEqual(h.error_bound.mode, ebzip_pb2.ABS)
        self.assertEqual(h.array.dtype, ebzip_pb2.FLOAT32)

    def test_request_stream_is_lazy(self):
        pulled = []

        def pieces():
            for i in range(100):
                pulled.append(i)
                yield bytes(3 * MIB)

        header = ebzip_client.compress_header(np.float32, (75 * MIB,),
                                              abs=1.0)
        stream = ebzip_client.compress_requests(header, pieces())
        next(stream)  # the header
        self.assertEqual(pulled, [])
        for _ in range(4):  # 3 MiB piece -> 3 messages
            self.assertLessEqual(len(next(stream).data), MIB)
        self.assertEqual(pulled, [0, 1])

    def test_decompress_requests_cover_the_archive(self):
        data = np.random.default_rng(1).bytes(3 * MIB + 17)
        for buf in (data, bytearray(data), memoryview(data)):
            pieces = [r.archive for r in
                      ebzip_client.decompress_requests(buf)]
            self.assertTrue(all(len(p) <= MIB for p in pieces))
            self.assertEqual(b''.join(pieces), data)

    def test_wire_array_copies_only_when_needed(self):
        x = smooth_field((20, 30), np.float32)
        self.assertTrue(np.shares_memory(ebzip_client.as_wire_array(x), x))
        for other in (x.astype('>f4'), np.asfortranarray(x), x[:, ::2]):
            w = ebzip_client.as_wire_array(other)
            self.assertEqual(w.dtype.str, '<f4')
            self.assertTrue(w.flags.c_contiguous)
            self.assertFalse(np.shares_memory(w, other))
            self.assertTrue(np.array_equal(w, other))

    def test_health_wire_format(self):
        parse = ebzip_client._parse_health_response  # pylint: disable=protected-access
        encode = ebzip_client._encode_health_request  # pylint: disable=protected-access
        self.assertEqual(parse(b''), 0)
        self.assertEqual(parse(b'\x08\x01'), 1)
        self.assertEqual(parse(b'\x08\x02'), 2)
        # Unknown fields of each wire type are skipped.
        self.assertEqual(parse(b'\x12\x03abc\x08\x03\x19' + bytes(8)
                               + b'\x25' + bytes(4) + b'\x30\x96\x01'), 3)
        with self.assertRaises(ebzip.ProtocolError):
            parse(b'\x08')
        with self.assertRaises(ebzip.ProtocolError):
            parse(b'\x12\x05ab')
        self.assertEqual(encode(''), b'')
        name = 'x' * 200
        self.assertEqual(encode(name), b'\x0a\xc8\x01' + name.encode())


# ---------------------------------------------------------------------------
# Against the server.

class ServerTestBase(unittest.TestCase):
    """Shares one server and one client; a scratch directory per class."""

    @classmethod
    def setUpClass(cls):
        cls.server = shared_server()
        cls.client = ebzip.Client(cls.server.address, timeout=300)
        cls._tmp = tempfile.TemporaryDirectory(prefix='ebzip_py_')
        cls.tmp = cls._tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def round_trip(self, x, *, abs=None, rel=None, fill=None, **options):  # pylint: disable=redefined-builtin
        """Compresses and decompresses x through the server and checks the
        result and the summary; returns (archive, summary, y)."""
        archive, summary = self.client.compress_with_summary(
            x, abs=abs, rel=rel, fill_value=fill, **options)
        y, header = self.client.decompress_with_header(archive)
        bound = abs if abs is not None else rel_to_abs(x, rel, fill)
        self.assert_within(x, y, bound, fill)
        self.assertEqual(y.dtype, np.dtype(x.dtype).newbyteorder('<'))
        self.assertEqual(summary.input_bytes, x.nbytes)
        self.assertEqual(summary.archive_bytes, len(archive))
        self.assertTrue(summary.backend.startswith('cpu'), summary.backend)
        self.assertGreaterEqual(summary.frames, 1)
        # The bound the server reports is the one the contract defines.
        self.assertAlmostEqual(summary.abs_error_bound, bound,
                               delta=abs_tolerance(bound))
        self.assertEqual(header.abs_error_bound, summary.abs_error_bound)
        self.assertEqual(tuple(header.array.shape), x.shape)
        return archive, summary, y

    def assert_within(self, x, y, bound, fill=None):
        violations, special, first, max_err = bound_violations(x, y, bound,
                                                               fill)
        if violations or special:
            i = np.unravel_index(first, x.shape)
            self.fail('%d bound violations and %d exact-value mismatches '
                      '(bound %r, max error %r); first at %s: %r -> %r'
                      % (violations, special, bound, max_err, i, x[i], y[i]))


def abs_tolerance(bound):
    return 1e-12 * bound


class RoundTripTest(ServerTestBase):
    """Round trips through the server, checked independently."""

    def test_server_info_and_health(self):
        info = self.client.server_info()
        self.assertTrue(info.version)
        self.assertEqual(info.backend, 'cpu')
        self.assertTrue(info.devices)
        self.assertGreater(info.format_version, 0)
        self.assertEqual(self.client.health(), ebzip.ServingStatus.SERVING)
        with self.assertRaises(ebzip.NotFound):
            self.client.health('no.such.Service')

    def _real_field(self, spec):
        if not os.path.isdir(DATA_DIR):
            self.skipTest('%s missing (Debian package ferret-datasets)'
                          % DATA_DIR)
        return export_field(spec, self.tmp)

    def test_etopo5_rel_and_abs(self):
        _, x, _ = self._real_field('etopo5.cdf:ROSE')
        self.assertEqual(x.ndim, 2)
        for kwargs in (dict(rel=1e-4), dict(rel=1e-2), dict(abs=0.5)):
            with self.subTest(**kwargs):
                archive, summary, _ = self.round_trip(x, **kwargs)
                self.assertLess(len(archive), x.nbytes / 2,
                                'relief data should compress')
                # Interpolation stores a handful of values whose residual
                # falls on half a step and whose float32 narrowing then
                # misses the bound (FORMAT.md §15.8); Lorenzo none here.
                self.assertLess(summary.verbatim, x.size // 100000)
                _, lorenzo, _ = self.round_trip(x, predictor='lorenzo', **kwargs)
                self.assertEqual(lorenzo.verbatim, 0)

    def test_ocean_atlas_temp_with_fill(self):
        # 4-D, with land masked by -1e34: fill values must come back exactly
        # and stay out of REL's range (else the bound would be ~1e30).
        _, x, fill = self._real_field('ocean_atlas_subset.nc:TEMP')
        self.assertIsNotNone(fill)
        fills = _uint_view(x) == _fill_bits(x.dtype, fill)
        self.assertTrue(fills.any())
        _, summary, y = self.round_trip(x, rel=1e-3, fill=fill)
        self.assertLess(summary.abs_error_bound, 1.0)
        self.assertTrue(np.array_equal(_uint_view(y)[fills],
                                       _uint_view(x)[fills]))

    def test_smooth_3d_float64(self):
        x = smooth_field((37, 41, 53), np.float64)
        self.round_trip(x, abs=1e-6)
        self.round_trip(x, rel=1e-5)

    def test_smooth_3d_float32(self):
        x = smooth_field((64, 48, 33), np.float32, seed=3)
        self.round_trip(x, rel=1e-4)

    def test_special_values_and_fill(self):
        for dtype in (np.float32, np.float64):
            for kwargs in (dict(rel=1e-3), dict(abs=1e-2)):
                with self.subTest(dtype=dtype, **kwargs):
                    x = with_specials(smooth_field((50, 70), dtype), -1e34)
                    _, summary, y = self.round_trip(x, fill=-1e34, **kwargs)
                    fills = _uint_view(x) == _fill_bits(x.dtype, -1e34)
                    self.assertTrue(np.all(y.reshape(-1)[
                        fills.reshape(-1)] == x.dtype.type(-1e34)))
                    self.assertGreaterEqual(summary.verbatim,
                                            int(must_be_exact(x).sum()))

    def test_summary_counts_verbatim_and_fill_runs_apart(self):
        # ebzip.proto: verbatim counts NaN, Inf, -0.0 and subnormal elements;
        # fill values are stored as runs and counted in fill_runs.
        x = smooth_field((40, 50), np.float32)
        x[:10] = -1e34  # 500 fill elements in one run
        x[30:, 40:] = -1e34  # 10 more runs of 10
        x[20, 7] = np.nan
        _, summary, _ = self.round_trip(x, abs=1e-3, fill=-1e34,
                                        predictor='lorenzo')
        self.assertGreaterEqual(summary.verbatim, 1)
        self.assertLess(summary.verbatim, 500)
        self.assertEqual(summary.fill_runs, 11)
        # Interpolation frames code fill as a mask (FORMAT.md §15.6):
        # fill_runs counts its tokens, the XORed rows' run lengths.
        _, summary, _ = self.round_trip(x, abs=1e-3, fill=-1e34,
                                        predictor='interp')
        self.assertGreaterEqual(summary.verbatim, 1)
        self.assertLess(summary.verbatim, 500)
        self.assertGreater(summary.fill_runs, 0)
        self.assertLess(summary.fill_runs, 500)

    def test_specials_without_fill_are_exact(self):
        # -1e34 here is an ordinary (huge) value: with REL it sets the range,
        # so the bound is loose, but NaN/Inf/-0.0 still come back exactly.
        x = with_specials(smooth_field((33, 17), np.float32), -1e34)
        self.round_trip(x, abs=1e-3)

    def test_odd_shapes(self):
        shapes = [(1,), (1, 1, 1, 1), (13,), (7, 9), (3, 5, 11),
                  (2, 3, 5, 7), (1, 1000), (1000, 1), (9, 1, 17)]
        for shape in shapes:
            for dtype in (np.float32, np.float64):
                with self.subTest(shape=shape, dtype=dtype):
                    x = smooth_field(shape, dtype, seed=len(shape))
                    self.round_trip(x, rel=1e-3)
                    self.round_trip(x, abs=1e-4)

    def test_one_element_rel_is_exact(self):
        # The range of one value is 0, so the bound is 0: it must come back
        # exactly.
        for v in (3.25, -7.1e-3, 1e30):
            x = np.array([v], np.float32)
            _, summary, y = self.round_trip(x, rel=1e-2)
            self.assertEqual(summary.abs_error_bound, 0.0)
            self.assertEqual(_uint_view(y)[0], _uint_view(x)[0])

    def test_many_frames_without_gap_array(self):
        x = smooth_field((300, 211), np.float32, seed=5)
        _, one, _ = self.round_trip(x, rel=1e-4)
        _, many, _ = self.round_trip(x, rel=1e-4, frame_elements=5000,
                                     gap_array=False)
        self.assertEqual(one.frames, 1)
        self.assertGreater(many.frames, 5)

    def test_tuning_options_reach_the_codec(self):
        # No CLI flags for these: check that each changes the archive (so
        # it arrived) and that the result still meets the bound.
        x = smooth_field((48, 40, 36), np.float32, seed=12)
        default, _, _ = self.round_trip(x, rel=1e-4)
        for options in (dict(block=(4, 4, 4)), dict(chunk_group=4),
                        dict(radius=1024), dict(chunk_symbols=2048)):
            with self.subTest(**options):
                archive, _, _ = self.round_trip(x, rel=1e-4, **options)
                self.assertNotEqual(archive, default)

    def test_worst_case_archives_fit_the_reply_bound(self):
        # The client refuses a Compress reply longer than max_archive_bytes:
        # archives as large as a real server makes them must fit. Every
        # element verbatim (random subnormals), every element an outlier
        # with the smallest chunks and subsequences a server takes and tiny
        # frames, and fill runs of one.
        rng = np.random.default_rng(11)
        subnormal32 = ((rng.integers(1, 1 << 23, 1 << 16, dtype=np.uint32)
                        | (rng.integers(0, 2, 1 << 16, dtype=np.uint32) << 31))
                       .view(np.float32))
        subnormal64 = (rng.integers(1, 1 << 52, (256, 256), dtype=np.uint64)
                       .view(np.float64))
        noise = (rng.integers(0, 1 << 20, (64, 64)) - (1 << 19)).astype(
            np.float32)
        fill = rng.integers(0, 1000, (128, 128)).astype(np.float32)
        fill.reshape(-1)[1::2] = -1e34
        cases = [
            ('f32 all verbatim', subnormal32, dict(abs=1e-3)),
            ('f64 all verbatim', subnormal64, dict(abs=1e-3)),
            ('outliers, fine options', noise,
             dict(abs=1e-3, radius=2, chunk_symbols=1024, chunk_group=1,
                  subsequence_bits=256, frame_elements=1)),
            ('fill runs of one', fill, dict(abs=1e-3, fill_value=-1e34)),
        ]
        for what, x, kwargs in cases:
            with self.subTest(what):
                archive = self.client.compress(x, **kwargs)
                header = ebzip_client.compress_header(x.dtype, x.shape,
                                                      **kwargs)
                self.assertLessEqual(len(archive),
                                     ebzip_client.max_archive_bytes(header))
                self.assert_within(x, self.client.decompress(archive), 1e-3,
                                   kwargs.get('fill_value'))

    def test_any_layout_and_byte_order(self):
        x = smooth_field((40, 60), np.float64, seed=9)
        for other in (x.astype('>f8'), np.asfortranarray(x), x[::2, ::3]):
            with self.subTest(strides=other.strides, dtype=other.dtype.str):
                archive = self.client.compress(other, abs=1e-5)
                y = self.client.decompress(archive)
                self.assert_within(np.ascontiguousarray(other), y, 1e-5)

    def test_buffer_types_for_decompress(self):
        x = smooth_field((100, 100), np.float32)
        archive = self.client.compress(x, abs=1e-3)
        ref = self.client.decompress(archive)
        padded = b'pad' + archive + b'pad'
        for buf in (bytearray(archive), memoryview(padded)[3:-3],
                    np.frombuffer(archive, np.uint8)):
            with self.subTest(type=type(buf).__name__):
                y = self.client.decompress(buf)
                self.assertTrue(np.array_equal(_uint_view(y), _uint_view(ref)))

    def test_request_id_is_echoed(self):
        _, summary = self.client.compress_with_summary(
            np.arange(10, dtype=np.float32), abs=0.1, request_id='py-test-42')
        self.assertEqual(summary.request_id, 'py-test-42')
        _, summary = self.client.compress_with_summary(
            np.arange(10, dtype=np.float32), abs=0.1)
        self.assertTrue(summary.request_id)  # made up by the server

    def test_compress_chunks_of_any_size(self):
        x = smooth_field((512, 700), np.float32, seed=11)
        raw = x.tobytes()
        cuts = [0, 1, 7, 1000, 3 * MIB // 2, len(raw)]
        pieces = [raw[a:b] for a, b in zip(cuts, cuts[1:])]
        archive, _ = self.client.compress_chunks(np.float32, x.shape, pieces,
                                                 rel=1e-4)
        self.assertEqual(archive, self.client.compress(x, rel=1e-4))

    def test_failing_chunk_source_raises_its_own_error(self):
        def pieces():
            yield bytes(4096)
            raise OSError('disk on fire')

        with self.assertRaisesRegex(OSError, 'disk on fire'):
            self.client.compress_chunks(np.float32, (4096,), pieces(),
                                        abs=1e-3)
        self.assertEqual(self.client.health(), ebzip.ServingStatus.SERVING)

    def test_module_level_functions(self):
        x = smooth_field((20, 20, 20), np.float32)
        archive = ebzip.compress(x, self.server.address, rel=1e-3)
        y = ebzip.decompress(archive, self.server.address)
        self.assert_within(x, y, rel_to_abs(x, 1e-3))


def _varint(buf, i):
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7f) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(buf):
    """(field number, bytes) of a protobuf message's length-delimited fields,
    in order; fields of other wire types are skipped."""
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 0:
            _, i = _varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = _varint(buf, i)
            out.append((key >> 3, bytes(buf[i:i + n])))
            i += n
        else:
            raise ValueError('wire type %d' % wire)
    return out


class ReflectionTest(ServerTestBase):
    """Server reflection, which grpcurl and grpc_cli use to call ebzipd
    without its proto. Debian's Python has no reflection client, so the
    messages are spelled out here, with the field numbers of
    grpc/reflection/v1alpha/reflection.proto."""

    METHOD = '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo'

    def ask(self, field, text):
        """Sends one ServerReflectionRequest with string `field` set to
        `text`; returns the reply's fields."""
        data = text.encode()
        request = bytes([field << 3 | 2, len(data)]) + data
        with grpc.insecure_channel(self.server.address) as channel:
            call = channel.stream_stream(self.METHOD)
            replies = list(call(iter([request]), timeout=30))
        self.assertEqual(len(replies), 1)
        return _fields(replies[0])

    def test_lists_the_services(self):
        reply = self.ask(7, '*')  # list_services
        lists = [v for f, v in reply if f == 6]  # list_services_response
        self.assertEqual(len(lists), 1, reply)
        names = {dict(_fields(service))[1].decode()
                 for f, service in _fields(lists[0]) if f == 1}
        self.assertLessEqual({'ebzip.v1.Compressor', 'grpc.health.v1.Health'},
                             names)

    def test_describes_the_compressor(self):
        from google.protobuf import descriptor_pb2  # pylint: disable=import-outside-toplevel
        reply = self.ask(4, 'ebzip.v1.Compressor')  # file_containing_symbol
        files = [v for f, v in reply if f == 4]  # file_descriptor_response
        self.assertEqual(len(files), 1, reply)
        methods = {}
        for f, raw in _fields(files[0]):
            if f != 1:
                continue
            proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
            for service in proto.service:
                if proto.package == 'ebzip.v1' and service.name == 'Compressor':
                    methods = {m.name: (m.client_streaming, m.server_streaming)
                               for m in service.method}
        self.assertEqual(methods, {'Compress': (True, True),
                                   'Decompress': (True, True),
                                   'GetServerInfo': (False, False)})
        # An unknown symbol is an error reply, not a broken stream.
        reply = self.ask(4, 'no.such.Symbol')
        self.assertEqual([f for f, _ in reply if f in (4, 7)], [7])


class InteropTest(ServerTestBase):
    """Archives agree byte for byte with the `ebzip` command line."""

    def _cli_compress(self, raw_path, x, *bound_and_options):
        out = raw_path + '.cli.ebz'
        run_cli('compress', '--quiet', '-f', '--type', cli_type(x.dtype), '--shape',
                ','.join(map(str, x.shape)), *bound_and_options, raw_path,
                '-o', out)
        with open(out, 'rb') as f:
            return out, f.read()

    def _check_both_ways(self, raw_path, x, cli_args, **kwargs):
        cli_path, cli_archive = self._cli_compress(raw_path, x, *cli_args)
        py_archive = self.client.compress(x, **kwargs)
        if py_archive != cli_archive:
            first = next((i for i, (a, b) in
                          enumerate(zip(py_archive, cli_archive)) if a != b),
                         min(len(py_archive), len(cli_archive)))
            self.fail('the service\'s archive (%d bytes) differs from the '
                      'CLI\'s (%d bytes) from byte %d on'
                      % (len(py_archive), len(cli_archive), first))
        # The CLI's archive through the server, and the CLI's decoding.
        y = self.client.decompress(cli_archive)
        cli_out = cli_path + '.raw'
        run_cli('decompress', '--quiet', '-f', cli_path, '-o', cli_out)
        y_cli = np.fromfile(cli_out, dtype=y.dtype).reshape(y.shape)
        self.assertTrue(np.array_equal(_uint_view(y), _uint_view(y_cli)))
        return y

    def test_etopo5_rel(self):
        if not os.path.isdir(DATA_DIR):
            self.skipTest('%s missing' % DATA_DIR)
        raw, x, _ = export_field('etopo5.cdf:ROSE', self.tmp)
        for rel in (1e-4, 1e-3):
            with self.subTest(rel=rel):
                y = self._check_both_ways(raw, x, ['--rel', repr(rel)],
                                          rel=rel)
                self.assert_within(x, y, rel_to_abs(x, rel))

    def test_ocean_atlas_temp_fill(self):
        if not os.path.isdir(DATA_DIR):
            self.skipTest('%s missing' % DATA_DIR)
        raw, x, fill = export_field('ocean_atlas_subset.nc:TEMP', self.tmp)
        y = self._check_both_ways(raw, x, ['--rel=1e-4', '--fill=%r' % fill],
                                  rel=1e-4, fill_value=fill)
        self.assert_within(x, y, rel_to_abs(x, 1e-4, fill), fill)

    def test_float64_abs_with_options(self):
        x = with_specials(smooth_field((45, 19, 23), np.float64, seed=4),
                          -1e34)
        raw = self.path('f64.raw')
        x.tofile(raw)
        y = self._check_both_ways(
            raw, x, ['--abs=1e-7', '--fill=-1e34', '--frame_elements=4000',
                     '--gap_array=false', '--radius=512',
                     '--chunk_symbols=4096'],
            abs=1e-7, fill_value=-1e34, frame_elements=4000, gap_array=False,
            radius=512, chunk_symbols=4096)
        self.assert_within(x, y, 1e-7, -1e34)

    def test_subsequence_bits(self):
        x = smooth_field((200, 300), np.float32, seed=8)
        raw = self.path('subseq.raw')
        x.tofile(raw)
        y = self._check_both_ways(raw, x, ['--rel=1e-5',
                                           '--subsequence_bits=256'],
                                  rel=1e-5, subsequence_bits=256)
        self.assert_within(x, y, rel_to_abs(x, 1e-5))

    def test_float32_4d_abs(self):
        x = smooth_field((3, 5, 29, 31), np.float32, seed=6)
        raw = self.path('f32_4d.raw')
        x.tofile(raw)
        self._check_both_ways(raw, x, ['--abs=0.002'], abs=0.002)


class ErrorTest(ServerTestBase):
    """The server's refusals arrive as the right ebzip.Error subclass."""

    def _raw_compress(self, header, chunks):
        # Bypasses the client's own checks, to see the server's.
        return self.client._compress(header, chunks, None)  # pylint: disable=protected-access

    def test_wrong_byte_count_is_invalid_argument(self):
        x = smooth_field((64, 64), np.float32)
        raw = x.tobytes()
        for data in (raw[:-4], raw + b'\0\0\0\0', raw[:-1], b''):
            with self.subTest(bytes=len(data)):
                with self.assertRaises(ebzip.InvalidArgument) as cm:
                    self.client.compress_chunks(np.float32, x.shape, [data],
                                                abs=1e-3)
                self.assertEqual(cm.exception.code.name, 'INVALID_ARGUMENT')
                self.assertTrue(cm.exception.message)

    def test_bad_headers_are_invalid_argument(self):
        data = bytes(4 * 32)
        good = ebzip_client.compress_header(np.float32, (32,), abs=1e-3)
        self._raw_compress(good, [data])  # the baseline is accepted

        def variant(change):
            h = ebzip_pb2.CompressHeader()
            h.CopyFrom(good)
            change(h)
            return h

        bad = {
            'bound 0': lambda h: setattr(h.error_bound, 'value', 0.0),
            'bound NaN': lambda h: setattr(h.error_bound, 'value',
                                           float('nan')),
            'bound -1': lambda h: setattr(h.error_bound, 'value', -1.0),
            'no mode': lambda h: setattr(h.error_bound, 'mode', 0),
            'no dtype': lambda h: setattr(h.array, 'dtype', 0),
            'no shape': lambda h: h.array.ClearField('shape'),
            'zero dim': lambda h: h.array.shape.__setitem__(0, 0),
        }
        for name, change in bad.items():
            with self.subTest(name):
                with self.assertRaises(ebzip.InvalidArgument):
                    self._raw_compress(variant(change), [data])
        five_d = variant(lambda h: h.array.shape.extend([1, 1, 1, 1]))
        with self.assertRaises(ebzip.InvalidArgument):
            self._raw_compress(five_d, [data])

    def test_data_before_header_is_invalid_argument(self):
        # The client cannot send this; the generated stub can.
        requests = iter([ebzip_pb2.CompressRequest(data=bytes(16))])
        with grpc.insecure_channel(self.server.address) as channel:
            stub = ebzip_pb2_grpc.CompressorStub(channel)
            with self.assertRaises(grpc.RpcError) as cm:
                list(stub.Compress(requests, timeout=30))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_corrupt_archive_is_data_loss(self):
        x = smooth_field((200, 300), np.float32)
        archive = self.client.compress(x, rel=1e-4)
        flipped = bytearray(archive)
        flipped[len(flipped) // 2] ^= 0xFF
        with self.assertRaises(ebzip.DataLoss) as cm:
            self.client.decompress(bytes(flipped))
        self.assertEqual(cm.exception.code.name, 'DATA_LOSS')
        for name, bad in (('truncated', archive[:len(archive) // 2]),
                          ('no trailer', archive[:-1]),
                          ('garbage', b'\x89not an ebzip archive' * 50)):
            with self.subTest(name):
                with self.assertRaises(ebzip.DataLoss):
                    self.client.decompress(bad)
        # The server keeps working after refusing them.
        self.assert_within(x, self.client.decompress(archive),
                           rel_to_abs(x, 1e-4))

    def test_short_deadline_is_deadline_exceeded(self):
        x = smooth_field((1024, 1024), np.float32)
        with ebzip.Client(self.server.address, timeout=1e-4) as c:
            with self.assertRaises(ebzip.DeadlineExceeded):
                c.compress(x, rel=1e-4)


class OwnServerTestBase(unittest.TestCase):
    """Tests that need a server with other flags; each stops its own."""

    def start_server(self, *args, **client_kwargs):
        server = Server(*args, **client_kwargs)
        self.addCleanup(self._stop, server)
        return server

    def _stop(self, server):
        rc = server.stop()
        self.assertEqual(rc, 0, 'ebzipd exited with %d after SIGTERM:\n%s'
                         % (rc, server.log_text()))


class LoadBalancingTest(OwnServerTestBase):
    """One client over two replicas, as dns:/// over a headless Service gives.

    The client's service config balances round robin, follows each server's
    health and retries a call a draining server refuses, so taking a replica
    away (a rolling upgrade) loses no call.
    """

    @staticmethod
    def finished(server):
        return server.log_text().count('"request finished"')

    def test_calls_spread_and_a_draining_replica_loses_none(self):
        a = self.start_server('--drain_seconds', '30')
        b = self.start_server()
        x = smooth_field((64, 96), np.float32, seed=3)
        with ebzip.Client('ipv4:%s,%s' % (a.address, b.address)) as c:
            for _ in range(20):
                c.compress(x, abs=1e-3)
            self.assertGreater(self.finished(a), 0, a.log_text())
            self.assertGreater(self.finished(b), 0, b.log_text())

            # Calls keep coming while a drains and exits: none may fail.
            a.proc.send_signal(signal.SIGTERM)
            calls = 0
            deadline = time.monotonic() + 30
            while a.proc.poll() is None or calls < 50:
                self.assertLess(time.monotonic(), deadline, 'a did not exit')
                try:
                    y = c.decompress(c.compress(x, abs=1e-3))
                except ebzip.Error as e:
                    self.fail('call %d failed while a drained: %s\n--- a:\n%s\n--- b:\n%s'
                              % (calls, e, a.log_text()[-3000:], b.log_text()[-3000:]))
                self.assert_within(x, y, 1e-3)
                calls += 1
            self.assertEqual(a.proc.wait(), 0, a.log_text())

    assert_within = ServerTestBase.assert_within


class AuthTest(OwnServerTestBase):
    """--token: every call needs `authorization: Bearer TOKEN`."""

    TOKEN = 'py-client-test-token'

    def test_token_is_required_and_sent(self):
        server = self.start_server('--token', self.TOKEN, token=self.TOKEN)
        x = smooth_field((30, 40), np.float32)
        with ebzip.Client(server.address, token=self.TOKEN) as c:
            y = c.decompress(c.compress(x, abs=1e-3))
            self.assert_round_trip(x, y)
            self.assertEqual(c.server_info().backend, 'cpu')
        for token in (None, 'wrong', self.TOKEN + 'x'):
            with self.subTest(token=token):
                with ebzip.Client(server.address, token=token) as c:
                    with self.assertRaises(ebzip.Unauthenticated) as cm:
                        c.compress(x, abs=1e-3)
                    self.assertEqual(cm.exception.code.name,
                                     'UNAUTHENTICATED')
                    with self.assertRaises(ebzip.Unauthenticated):
                        c.server_info()

    def assert_round_trip(self, x, y):
        violations, special, _, max_err = bound_violations(x, y, 1e-3)
        self.assertEqual((violations, special), (0, 0), max_err)


class TlsTest(OwnServerTestBase):
    """--tls_cert/--tls_key: the client verifies the server with tls_ca."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix='ebzip_tls_')
        self.addCleanup(tmp.cleanup)
        self.cert = os.path.join(tmp.name, 'cert.pem')
        self.key = os.path.join(tmp.name, 'key.pem')
        try:
            proc = subprocess.run(
                ['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes',
                 '-keyout', self.key, '-out', self.cert, '-days', '1',
                 '-subj', '/CN=localhost',
                 '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
                capture_output=True, check=False)
        except FileNotFoundError:
            self.skipTest('openssl not installed')
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_round_trip_over_tls(self):
        server = self.start_server('--tls_cert', self.cert, '--tls_key',
                                   self.key, tls_ca=self.cert)
        x = smooth_field((25, 35), np.float64)
        with open(self.cert, 'rb') as f:
            pem = f.read()
        for ca in (self.cert, pem):  # a path or the PEM bytes
            with ebzip.Client(server.address, tls_ca=ca, timeout=60) as c:
                y = c.decompress(c.compress(x, abs=1e-6))
                violations, special, _, _ = bound_violations(x, y, 1e-6)
                self.assertEqual((violations, special), (0, 0))
        # A plaintext client cannot talk to it.
        with ebzip.Client(server.address, timeout=10) as c:
            with self.assertRaises(ebzip.Error):
                c.server_info()


class LimitsTest(OwnServerTestBase):
    """--max_request_bytes and small, odd-sized response messages."""

    def test_limits_and_message_sizes(self):
        server = self.start_server('--max_request_bytes', '1000000',
                                   '--message_bytes', '4093')
        with ebzip.Client(server.address, timeout=120) as c:
            self.assertEqual(c.server_info().max_request_bytes, 1000000)
            with self.assertRaises(ebzip.ResourceExhausted):
                c.compress(np.zeros(250001, np.float32), abs=1.0)
            # Responses in messages that split elements: reassembled bytes.
            x = with_specials(smooth_field((100, 2000), np.float32), -1e34)
            archive = c.compress(x, rel=1e-4, fill_value=-1e34)
            self.assertGreater(len(archive), 4093)
            y = c.decompress(archive)
            violations, special, _, _ = bound_violations(
                x, y, rel_to_abs(x, 1e-4, -1e34), -1e34)
            self.assertEqual((violations, special), (0, 0))


@unittest.skipUnless(os.environ.get('EBZIP_TEST_LARGE') == '1',
                     'set EBZIP_TEST_LARGE=1 for the 2.2 GiB round trip')
class LargeArrayTest(ServerTestBase):
    """An array over 2 GiB: 32-bit sizes anywhere would break it."""

    ROWS, COLS = 576717, 1024  # 2.2 GiB of float32

    def test_round_trip_over_2_gib(self):
        x = np.empty((self.ROWS, self.COLS), np.float32)
        cols = np.arange(self.COLS, dtype=np.float64) * 1e-3
        step = 8192
        for r in range(0, self.ROWS, step):  # a smooth ramp, built in slabs
            rows = np.arange(r, min(r + step, self.ROWS), dtype=np.float64)
            x[r:r + step] = (np.sin(rows * 1e-4)[:, None] * 100 + cols)
        self.assertGreater(x.nbytes, 2 << 30)
        rel = 1e-4
        lo = hi = None
        for r in range(0, self.ROWS, step):
            s = x[r:r + step]
            lo = s.min() if lo is None else min(lo, s.min())
            hi = s.max() if hi is None else max(hi, s.max())
        bound = rel * (float(hi) - float(lo))

        archive, summary = self.client.compress_with_summary(x, rel=rel)
        self.assertEqual(summary.input_bytes, x.nbytes)
        self.assertAlmostEqual(summary.abs_error_bound, bound,
                               delta=abs_tolerance(bound))
        y = self.client.decompress(archive)
        self.assertEqual(y.shape, x.shape)
        for r in range(0, self.ROWS, step):  # bounded memory for the check
            self.assert_within(x[r:r + step], y[r:r + step], bound)
        # The client's own peak: x, y, the archive (twice while joined) and
        # slack; a whole-array copy on either side would exceed it.
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        sys.stderr.write('\n  %.2f GiB array, archive %.1f MiB, client peak '
                         'RSS %.2f GiB\n' % (x.nbytes / 2**30,
                                             len(archive) / 2**20,
                                             peak / 2**30))
        self.assertLess(peak, x.nbytes + y.nbytes + 2 * len(archive)
                        + (768 << 20), 'client peak RSS %d bytes' % peak)


def main():
    global EBZIPD, EBZIP, EXPORT_FIELD
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--ebzipd', default=os.environ.get('EBZIPD'))
    parser.add_argument('--ebzip', default=os.environ.get('EBZIP'))
    parser.add_argument('--export_field',
                        default=os.environ.get('EBZIP_EXPORT_FIELD'))
    args, rest = parser.parse_known_args()
    for name in ('ebzipd', 'ebzip', 'export_field'):
        path = getattr(args, name)
        if not path or not os.access(path, os.X_OK):
            parser.error('--%s: not an executable: %r' % (name, path))
    EBZIPD = os.path.abspath(args.ebzipd)
    EBZIP = os.path.abspath(args.ebzip)
    EXPORT_FIELD = os.path.abspath(args.export_field)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
