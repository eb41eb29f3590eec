#!/usr/bin/env python3
"""The Python client (client/python) against a server that lies.

Usage: python_client_limits_test.py [unittest arguments...]

with PYTHONPATH pointing at build/python. Run by ctest as
`python_client_limits_test`. No ebzipd: a fake Compressor, served by grpc in
this process on 127.0.0.1, replies with whatever each test scripts: headers
that describe arrays far too large to hold or no valid array at all, more or
fewer bytes than announced, data before the header, Compress archives that
never end. Each must raise the right ebzip.Error subclass (never
MemoryError or a numpy error), before anything is allocated from the lie,
and a limit raised by the caller must accept a legitimate large reply.
"""

import concurrent.futures
import os
import threading
import unittest

import grpc
import numpy as np

import ebzip
from ebzip import client as ebzip_client
from ebzip.v1 import ebzip_pb2
from ebzip.v1 import ebzip_pb2_grpc

ENDLESS_MESSAGE_BYTES = 64 << 10
# An "endless" reply stops here if the client never stops it: 256 MiB, far
# beyond what any reply below may legitimately carry.
ENDLESS_CAP = 4096


def header(dtype, shape):
    return ebzip_pb2.DecompressResponse(header=ebzip_pb2.DecompressHeader(
        array=ebzip_pb2.ArraySpec(dtype=dtype, shape=shape),
        abs_error_bound=0.5, backend='fake'))


def data(payload):
    return ebzip_pb2.DecompressResponse(data=payload)


class FakeCompressor(ebzip_pb2_grpc.CompressorServicer):
    """Replies with the scripted messages, then optionally with data (or
    archive) messages until the client cancels or ENDLESS_CAP is reached."""

    def __init__(self):
        self._lock = threading.Lock()
        self._decompress = []
        self._compress = []
        self._endless = False
        self.sent_endless = 0

    def script_decompress(self, messages, endless=False):
        with self._lock:
            self._decompress, self._endless = list(messages), endless
            self.sent_endless = 0

    def script_compress(self, messages, endless=False):
        with self._lock:
            self._compress, self._endless = list(messages), endless
            self.sent_endless = 0

    def _reply(self, request_iterator, context, messages, endless, make):
        for _ in request_iterator:  # the whole request first, as ebzipd may
            pass
        yield from messages
        if endless:
            message = make(bytes(ENDLESS_MESSAGE_BYTES))
            while self.sent_endless < ENDLESS_CAP and context.is_active():
                self.sent_endless += 1
                yield message

    def Decompress(self, request_iterator, context):
        with self._lock:
            messages, endless = self._decompress, self._endless
        return self._reply(request_iterator, context, messages, endless, data)

    def Compress(self, request_iterator, context):
        with self._lock:
            messages, endless = self._compress, self._endless
        return self._reply(
            request_iterator, context, messages, endless,
            lambda b: ebzip_pb2.CompressResponse(archive=b))


class LyingServerTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.fake = FakeCompressor()
        cls.server = grpc.server(
            concurrent.futures.ThreadPoolExecutor(max_workers=4))
        ebzip_pb2_grpc.add_CompressorServicer_to_server(cls.fake, cls.server)
        port = cls.server.add_insecure_port('127.0.0.1:0')
        assert port > 0
        cls.server.start()
        cls.target = '127.0.0.1:%d' % port

    @classmethod
    def tearDownClass(cls):
        cls.server.stop(grace=None)

    def client(self, **kwargs):
        c = ebzip.Client(self.target, timeout=60, **kwargs)
        self.addCleanup(c.close)
        return c

    def assert_raises_exactly(self, cls, call):
        """call() raises cls (an ebzip.Error); returns the exception.

        Anything else, MemoryError and numpy's errors included, fails the
        test as itself.
        """
        with self.assertRaises(ebzip.Error) as cm:
            call()
        self.assertIsInstance(cm.exception, cls, repr(cm.exception))
        return cm.exception

    def test_huge_array_is_resource_exhausted(self):
        # 2**40 x 2**20 float64: 2**63 bytes, a valid shape beyond any
        # machine; numpy would raise ValueError or MemoryError for it.
        self.fake.script_decompress(
            [header(ebzip_pb2.FLOAT64, [2**40, 2**20])], endless=True)
        c = self.client()
        e = self.assert_raises_exactly(ebzip.ResourceExhausted,
                                       lambda: c.decompress(b'archive'))
        self.assertEqual(e.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn('max_output_bytes', e.message)
        self.assertIn(str(2**63), e.message)
        self.assertLess(self.fake.sent_endless, ENDLESS_CAP)
        # The module-level function, and an explicit limit, the same.
        self.fake.script_decompress(
            [header(ebzip_pb2.FLOAT64, [2**40, 2**20])])
        self.assert_raises_exactly(
            ebzip.ResourceExhausted,
            lambda: ebzip.decompress(b'archive', self.target, timeout=60))
        self.assert_raises_exactly(
            ebzip.ResourceExhausted,
            lambda: c.decompress(b'archive', max_output_bytes=2**62))

    def test_allocation_failure_is_resource_exhausted(self):
        # Within a limit raised past the machine: 2**62 bytes pass the check
        # and fail in numpy's allocation, which must not escape as
        # MemoryError.
        self.fake.script_decompress(
            [header(ebzip_pb2.FLOAT64, [2**39, 2**20])])
        c = self.client(max_output_bytes=2**64)
        e = self.assert_raises_exactly(ebzip.ResourceExhausted,
                                       lambda: c.decompress(b'archive'))
        self.assertIn('allocate', e.message)

    def test_malformed_headers_are_protocol_errors(self):
        cases = {
            'no dimensions': header(ebzip_pb2.FLOAT32, []),
            'five dimensions': header(ebzip_pb2.FLOAT32, [2, 2, 2, 2, 2]),
            'a zero dimension': header(ebzip_pb2.FLOAT32, [4, 0]),
            'no dtype': header(ebzip_pb2.DTYPE_UNSPECIFIED, [4]),
            'an unknown dtype': header(7, [4]),
            'a byte count past 64 bits': header(ebzip_pb2.FLOAT64,
                                                [2**40, 2**40]),
        }
        c = self.client(max_output_bytes=2**70)
        for what, h in cases.items():
            with self.subTest(what):
                self.fake.script_decompress([h, data(bytes(16))])
                self.assert_raises_exactly(ebzip.ProtocolError,
                                           lambda: c.decompress(b'archive'))

    def test_more_data_than_the_shape_fails_as_it_arrives(self):
        # A 16-byte array, then data without end: the client must stop the
        # call at the first excess message, not buffer the stream.
        self.fake.script_decompress([header(ebzip_pb2.FLOAT32, [4])],
                                    endless=True)
        c = self.client()
        self.assert_raises_exactly(ebzip.ProtocolError,
                                   lambda: c.decompress(b'archive'))
        self.assertLess(self.fake.sent_endless, ENDLESS_CAP)
        # An exact fit, then one byte more.
        self.fake.script_decompress([header(ebzip_pb2.FLOAT32, [4]),
                                     data(bytes(16)), data(b'\1')])
        self.assert_raises_exactly(ebzip.ProtocolError,
                                   lambda: c.decompress(b'archive'))

    def test_fewer_bytes_than_the_shape_are_a_protocol_error(self):
        c = self.client()
        for reply in ([header(ebzip_pb2.FLOAT32, [4]), data(bytes(15))],
                      [header(ebzip_pb2.FLOAT32, [4])],
                      []):
            with self.subTest(messages=len(reply)):
                self.fake.script_decompress(reply)
                self.assert_raises_exactly(ebzip.ProtocolError,
                                           lambda: c.decompress(b'archive'))

    def test_data_before_the_header_is_a_protocol_error(self):
        c = self.client()
        self.fake.script_decompress([data(bytes(16)),
                                     header(ebzip_pb2.FLOAT32, [4])])
        self.assert_raises_exactly(ebzip.ProtocolError,
                                   lambda: c.decompress(b'archive'))
        self.fake.script_decompress([header(ebzip_pb2.FLOAT32, [4]),
                                     header(ebzip_pb2.FLOAT32, [4]),
                                     data(bytes(16))])
        self.assert_raises_exactly(ebzip.ProtocolError,
                                   lambda: c.decompress(b'archive'))

    def test_endless_compress_reply_is_a_protocol_error(self):
        self.fake.script_compress([], endless=True)
        c = self.client()
        x = np.zeros(16, np.float32)
        self.assert_raises_exactly(ebzip.ProtocolError,
                                   lambda: c.compress(x, abs=0.1))
        # Stopped by the client: how far short of the cap depends on what
        # gRPC buffers, not on the client.
        self.assertLess(self.fake.sent_endless, ENDLESS_CAP)

    def test_the_limit_can_be_raised_to_accept_a_large_reply(self):
        # 512 x 1024 float32 (2 MiB) in 64 KiB messages.
        shape = (512, 1024)
        expected = np.arange(np.prod(shape), dtype='<f4').reshape(shape)
        raw = expected.tobytes()
        reply = [header(ebzip_pb2.FLOAT32, shape)] + [
            data(raw[i:i + ENDLESS_MESSAGE_BYTES])
            for i in range(0, len(raw), ENDLESS_MESSAGE_BYTES)]
        self.fake.script_decompress(reply)
        small = self.client(max_output_bytes=len(raw) - 1)
        e = self.assert_raises_exactly(ebzip.ResourceExhausted,
                                       lambda: small.decompress(b'archive'))
        self.assertIn(str(len(raw)), e.message)
        # Raised for one call, then for the whole client.
        y = small.decompress(b'archive', max_output_bytes=len(raw))
        np.testing.assert_array_equal(y, expected)
        self.assertEqual(y.dtype, np.dtype('<f4'))
        y = self.client(max_output_bytes=len(raw)).decompress(b'archive')
        np.testing.assert_array_equal(y, expected)

    def test_bad_limits_raise_before_any_call(self):
        for bad, exc in ((0, ValueError), (-1, ValueError), (1.5, TypeError),
                         (True, TypeError), ('1', TypeError)):
            with self.subTest(limit=bad):
                with self.assertRaises(exc):
                    ebzip.Client(self.target, max_output_bytes=bad)
                with self.assertRaises(exc):
                    self.client().decompress(b'archive', max_output_bytes=bad)

    def test_default_limit_is_physical_memory(self):
        self.assertEqual(
            ebzip_client.physical_memory_bytes(),
            os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE'))
        # An array just past it is refused without trying to allocate it.
        over = ebzip_client.physical_memory_bytes() // 8 + 1
        self.fake.script_decompress([header(ebzip_pb2.FLOAT64, [over])])
        self.assert_raises_exactly(ebzip.ResourceExhausted,
                                   lambda: self.client().decompress(b'x'))


if __name__ == '__main__':
    unittest.main(verbosity=2)
