#!/usr/bin/env python3
"""ebzip.Client(streams=): one array or archive split over several calls.

Usage: python_split_calls_test.py --ebzipd PATH [unittest args...] with
PYTHONPATH at build/python.

Against a real ebzipd (CPU backend): a split Compress gives the one-call
archive and the local codec's, byte for byte, for both bound modes, both
dtypes, 1 to 4 dimensions, with and without a fill value, over several part
counts; a split Decompress gives the one-call array, written into the
caller's out; the server's log shows one call per part, each from a
connection of its own; regions, remote paths and header-only requests stay
one call; a failing part raises what one call raises; one call with a
relative bound sends the array's range, so the server streams it within a
request limit it would otherwise exceed. Against a fake server
in this process: a failing part cancels the parts still running.
"""

import argparse
import concurrent.futures
import json
import os
import sys
import threading
import time
import unittest
import warnings
from unittest import mock

import grpc
import numpy as np

import ebzip
from ebzip import client as ebzip_client
from ebzip.v1 import ebzip_pb2_grpc
import python_client_test as pct
from python_region_test import bits, field

# (shape, frame_elements): several frames each, of uneven counts.
SHAPES = (((20000,), 2048), ((120, 90), 16 * 90), ((30, 20, 24), 4 * 20 * 24),
          ((7, 10, 12, 14), 10 * 12 * 14))


def finished_calls(server, request_id):
    """The server's "request finished" log lines of request_id, once their
    count has stopped growing (a line may follow the call's status)."""
    lines, last, deadline = [], -1, time.monotonic() + 10
    while time.monotonic() < deadline:
        server.log.seek(0)
        lines = []
        for raw in server.log.read().decode(errors='replace').splitlines():
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if event.get('msg') == 'request finished' and event.get('request_id') == request_id:
                lines.append(event)
        if len(lines) == last:
            return lines
        last = len(lines)
        time.sleep(0.2)
    return lines


def setUpModule():  # pylint: disable=invalid-name
    # Some fields carry an undeclared -9999 on purpose (a relative bound
    # without fill_value): the warning about it is not under test here.
    warnings.simplefilter('ignore', ebzip.DominatedRangeWarning)


class SplitCallsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = pct.Server('--drain_seconds', '1')

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def request_id(self):
        SplitCallsTest.counter = getattr(SplitCallsTest, 'counter', 0) + 1
        return 'split-%s-%d' % (self._testMethodName, SplitCallsTest.counter)

    def client(self, **kwargs):
        c = ebzip.Client(self.server.address, **kwargs)
        self.addCleanup(c.close)
        return c

    def assert_calls(self, request_id, method, count, distinct_peers=True):
        calls = finished_calls(self.server, request_id)
        self.assertEqual([(e['method'], e['code']) for e in calls], [(method, 'OK')] * count,
                         calls)
        if distinct_peers:
            # Each part on a connection of its own.
            self.assertEqual(len({e['peer'] for e in calls}), count, calls)

    def test_split_compress_is_the_one_call_archive(self):
        one = self.client(streams=1)
        for dtype in (np.float32, np.float64):
            for shape, frame_elements in SHAPES:
                x = field(shape, dtype, len(shape))
                for bound in ({'abs': 1e-3}, {'rel': 1e-4}):
                    for fill in (None, -9999):
                        options = dict(bound, fill_value=fill, frame_elements=frame_elements)
                        local = ebzip.compress(x, **options)
                        frames = ebzip.info(local)['frame_count']
                        self.assertGreater(frames, 2)
                        whole = one.compress(x, **options)
                        self.assertEqual(whole, local)
                        for streams in (2, 3, 5):
                            with self.subTest(dtype=dtype, shape=shape, bound=bound, fill=fill,
                                              streams=streams):
                                rid = self.request_id()
                                split = self.client(streams=streams).compress(
                                    x, request_id=rid, **options)
                                self.assertEqual(split, whole)
                                self.assert_calls(rid, 'compress', min(streams, frames))

    def test_per_call_streams_and_summary(self):
        x = field((400, 50), np.float64, 3)
        options = dict(rel=1e-5, fill_value=-9999, frame_elements=16 * 50,
                       predictor='lorenzo', lossless='runs',
                       metadata=json.dumps({'name': 'T'}))
        c = self.client(streams=1)
        whole, one = c.compress_with_summary(x, **options)
        rid = self.request_id()
        split, summary = c.compress_with_summary(x, streams=4, request_id=rid, **options)
        self.assertEqual(split, whole)
        self.assert_calls(rid, 'compress', 4)
        self.assertEqual(ebzip.info(split)['metadata'], options['metadata'])
        for name in ('input_bytes', 'archive_bytes', 'abs_error_bound', 'outliers', 'verbatim',
                     'frames', 'fill_runs', 'backend'):
            self.assertEqual(getattr(summary, name), getattr(one, name), name)

    def test_split_decompress_is_the_one_call_array(self):
        one = self.client(streams=1)
        for dtype in (np.float32, np.float64):
            for shape, frame_elements in SHAPES:
                x = field(shape, dtype, len(shape) + 10)
                archive = ebzip.compress(x, rel=1e-4, fill_value=-9999,
                                         frame_elements=frame_elements)
                frames = ebzip.info(archive)['frame_count']
                want, want_header = one.decompress_with_header(archive)
                for streams in (2, 3, 5):
                    with self.subTest(dtype=dtype, shape=shape, streams=streams):
                        c = self.client(streams=streams)
                        rid = self.request_id()
                        got, header = c.decompress_with_header(archive, request_id=rid)
                        self.assertEqual(got.shape, shape)
                        self.assertEqual(got.dtype, want.dtype)
                        np.testing.assert_array_equal(bits(got), bits(want))
                        self.assertEqual(header.abs_error_bound, want_header.abs_error_bound)
                        self.assertEqual(header.array, want_header.array)
                        self.assert_calls(rid, 'decompress', min(streams, frames))
                        # Into the caller's array: the parts write their rows there.
                        out = np.full(shape, 7, dtype)
                        self.assertIs(c.decompress(memoryview(archive), out=out), out)
                        np.testing.assert_array_equal(bits(out), bits(want))

    def test_automatic_streams_follow_the_array_size(self):
        x = field((128, 1000), np.float32, 5)  # 512000 bytes
        archive = ebzip.compress(x, abs=1e-3, frame_elements=16000)
        self.assertEqual(ebzip.info(archive)['frame_count'], 8)
        c = self.client()
        for per_stream, calls in ((1 << 30, 1), (200000, 2), (1000, 8)):
            with self.subTest(per_stream=per_stream), \
                    mock.patch.object(ebzip_client, 'AUTO_STREAM_BYTES', per_stream):
                rid = self.request_id()
                self.assertEqual(c.compress(x, abs=1e-3, frame_elements=16000, request_id=rid),
                                 archive)
                self.assert_calls(rid, 'compress', calls, distinct_peers=False)

    def test_options_and_one_frame_stay_one_call(self):
        x = field((24, 18, 20), np.float64, 3)
        archive = ebzip.compress(x, rel=1e-4, frame_elements=18 * 20 * 4)
        full = ebzip.decompress(archive)
        c = self.client(streams=4)
        rid = self.request_id()
        got = c.decompress(archive, region=([2, 0, 5], [3, 18, 4]), request_id=rid)
        np.testing.assert_array_equal(bits(got), bits(full[2:5, :, 5:9]))
        header = c.archive_header(archive, request_id=rid)
        self.assertEqual(list(header.archive_array.shape), [24, 18, 20])
        self.assert_calls(rid, 'decompress', 2, distinct_peers=False)
        # One frame: nothing to split.
        rid = self.request_id()
        single = ebzip.compress(x, rel=1e-4)
        self.assertEqual(ebzip.info(single)['frame_count'], 1)
        self.assertEqual(c.compress(x, rel=1e-4, request_id=rid), single)
        self.assert_calls(rid, 'compress', 1)

    def test_without_the_codec_one_call(self):
        x = field((120, 90), np.float32, 2)
        archive = ebzip.compress(x, rel=1e-4, frame_elements=16 * 90)
        c = self.client(streams=4)
        with mock.patch.object(ebzip_client, '_ebzip', None):
            rid = self.request_id()
            self.assertEqual(c.compress(x, rel=1e-4, frame_elements=16 * 90, request_id=rid),
                             archive)
            self.assert_calls(rid, 'compress', 1)
            rid = self.request_id()
            got = c.decompress(archive, request_id=rid)
        np.testing.assert_array_equal(bits(got), bits(ebzip.decompress(archive)))
        self.assert_calls(rid, 'decompress', 1)

    def test_a_corrupt_part_raises_data_loss(self):
        x = field((200, 100), np.float32, 8)
        archive = ebzip.compress(x, abs=1e-3, frame_elements=16 * 100)
        frames = ebzip.info(archive)['frame_count']
        self.assertGreater(frames, 4)
        # A flipped byte inside a frame's sections: the structure still
        # reads (the split goes ahead), the frame's CRC does not.
        for at in range(len(archive) // 2, len(archive)):
            bad = bytearray(archive)
            bad[at] ^= 0x5a
            try:
                ebzip.info(bytes(bad))
            except ebzip.DataLoss:
                continue
            with self.assertRaises(ebzip.DataLoss):
                ebzip.decompress(bytes(bad))
            break
        else:
            self.fail('no byte of a frame section found')
        with self.assertRaises(ebzip.DataLoss):
            self.client(streams=1).decompress(bytes(bad))
        with self.assertRaises(ebzip.DataLoss):
            self.client(streams=4).decompress(bytes(bad))

    def test_a_part_over_the_servers_limit_raises_resource_exhausted(self):
        x = field((3 * 64, 1000), np.float32, 9)  # 3 frames of 64 rows
        limited = pct.Server('--drain_seconds', '1', '--max_output_bytes', str(100 * 1000 * 4))
        self.addCleanup(limited.stop)
        # Parts of 2 and 1 frames: the first is over the limit, the second not.
        for streams in (1, 2):
            with ebzip.Client(limited.address, streams=streams) as c:
                with self.assertRaises(ebzip.ResourceExhausted):
                    c.compress(x, abs=1e-3, frame_elements=64 * 1000)
        with ebzip.Client(limited.address, streams=3) as c:
            self.assertEqual(c.compress(x, abs=1e-3, frame_elements=64 * 1000),
                             ebzip.compress(x, abs=1e-3, frame_elements=64 * 1000))

    def test_one_call_with_a_relative_bound_streams_past_the_request_limit(self):
        # 4 MB in 64 frames: over a 1 MB request limit were the server to
        # hold the array for its range, within it frame by frame.
        x = field((64 * 16, 1000), np.float32, 11)
        limited = pct.Server('--drain_seconds', '1', '--max_request_bytes', '1000000')
        self.addCleanup(limited.stop)
        options = dict(rel=1e-4, frame_elements=16 * 1000)
        with ebzip.Client(limited.address, streams=1) as c:
            self.assertEqual(c.compress(x, **options), ebzip.compress(x, **options))
            # Without the in-process codec no range goes: the server must
            # hold the array, and its limit refuses it.
            with mock.patch.object(ebzip_client, '_ebzip', None):
                with self.assertRaises(ebzip.ResourceExhausted):
                    c.compress(x, **options)

    def test_bad_streams(self):
        for bad in (-1, ebzip_client.MAX_STREAMS + 1):
            with self.assertRaises(ValueError):
                ebzip.Client(self.server.address, streams=bad)
        for bad in (1.5, '2', True):
            with self.assertRaises(TypeError):
                ebzip.Client(self.server.address, streams=bad)
        c = self.client()
        x = np.zeros(10, np.float32)
        with self.assertRaises(ValueError):
            c.compress(x, abs=1, streams=ebzip_client.MAX_STREAMS + 1)
        with self.assertRaises(ValueError):
            c.decompress(ebzip.compress(x, abs=1), streams=-1)
        with self.assertRaises(TypeError):
            ebzip.decompress(ebzip.compress(x, abs=1), streams=2)  # no server=
        with self.assertRaises(ValueError):
            ebzip.compress(x, self.server.address, abs=1, streams=-1)

    def test_module_functions_take_streams(self):
        x = field((120, 90), np.float64, 4)
        archive = ebzip.compress(x, abs=1e-4, frame_elements=16 * 90)
        rid = self.request_id()
        self.assertEqual(ebzip.compress(x, self.server.address, abs=1e-4,
                                        frame_elements=16 * 90, streams=3, request_id=rid),
                         archive)
        self.assert_calls(rid, 'compress', 3)
        np.testing.assert_array_equal(
            bits(ebzip.decompress(archive, self.server.address, streams=3)),
            bits(ebzip.decompress(archive)))


class StallingCompressor(ebzip_pb2_grpc.CompressorServicer):
    """Fails the second call to arrive; the others wait until cancelled."""

    def __init__(self):
        self.lock = threading.Lock()
        self.arrived = 0
        self.cancelled = 0

    def _stall_or_fail(self, request_iterator, context):
        for _ in request_iterator:
            pass
        with self.lock:
            self.arrived += 1
            fail = self.arrived == 2
        if fail:
            time.sleep(0.2)  # the others are waiting by now
            context.abort(grpc.StatusCode.DATA_LOSS, 'this part is broken')
        deadline = time.monotonic() + 30
        while context.is_active() and time.monotonic() < deadline:
            time.sleep(0.01)
        with self.lock:
            self.cancelled += not context.is_active()
        return iter(())

    def Compress(self, request_iterator, context):
        yield from self._stall_or_fail(request_iterator, context)

    def Decompress(self, request_iterator, context):
        yield from self._stall_or_fail(request_iterator, context)


class CancellationTest(unittest.TestCase):

    def setUp(self):
        self.fake = StallingCompressor()
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8))
        ebzip_pb2_grpc.add_CompressorServicer_to_server(self.fake, self.server)
        port = self.server.add_insecure_port('127.0.0.1:0')
        self.server.start()
        self.addCleanup(self.server.stop, None)
        self.target = '127.0.0.1:%d' % port

    def wait_cancelled(self, count):
        deadline = time.monotonic() + 10
        while self.fake.cancelled < count and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.fake.cancelled, count)

    def test_a_failing_compress_part_cancels_the_others(self):
        x = field((200, 100), np.float32, 1)
        with ebzip.Client(self.target, streams=4, timeout=60) as c:
            start = time.monotonic()
            with self.assertRaises(ebzip.DataLoss):
                c.compress(x, abs=1e-3, frame_elements=16 * 100)
            self.assertLess(time.monotonic() - start, 20)
        self.assertEqual(self.fake.arrived, 4)
        self.wait_cancelled(3)

    def test_a_failing_decompress_part_cancels_the_others(self):
        archive = ebzip.compress(field((200, 100), np.float32, 1), abs=1e-3,
                                 frame_elements=16 * 100)
        with ebzip.Client(self.target, streams=3, timeout=60) as c:
            with self.assertRaises(ebzip.DataLoss):
                c.decompress(archive)
        self.assertEqual(self.fake.arrived, 3)
        self.wait_cancelled(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--ebzipd', default=os.environ.get('EBZIPD'))
    args, rest = parser.parse_known_args()
    if not args.ebzipd or not os.access(args.ebzipd, os.X_OK):
        parser.error('--ebzipd: not an executable: %r' % args.ebzipd)
    pct.EBZIPD = os.path.abspath(args.ebzipd)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
