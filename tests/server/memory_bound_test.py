#!/usr/bin/env python3
"""ebzipd's memory under hostile load: its peak resident set stays below
--max_queued_bytes plus its fixed overhead (docs/operations.md, "Limits and
abuse").

Usage: memory_bound_test.py --ebzipd PATH --ebzip PATH [unittest args...]

Starts ebzipd (CPU backend) with a budget of 128 MiB and throws at it, all at
once: decompression bombs (valid archives of constant data, 32x smaller than
their arrays) from several clients, archives whose headers claim 16 GiB,
uploads that stall halfway, clients that never read their reply, and large
compressions. The server's peak resident set (VmHWM, /proc/PID/status) must
stay below its resident set at rest, plus the budget, plus the overhead the
docs state; every bomb that is served must decode to its exact array.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
import numpy as np

from ebzip.v1 import ebzip_pb2
from ebzip.v1 import ebzip_pb2_grpc

EBZIPD = None
EBZIP = None
MIB = 1 << 20
BUDGET = 128 * MIB
# docs/operations.md: beyond --max_queued_bytes, the process at rest, one
# message in flight per call, and what malloc keeps of freed memory (up to
# 16 MiB at the top of each arena; a CPU-backend server under this load uses
# a handful of arenas).
OVERHEAD = 128 * MIB
IDLE_TIMEOUT_S = 2


def status_kib(pid, field):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise AssertionError('no %s in /proc/%d/status' % (field, pid))


class Server:
    def __init__(self, log_path, *args):
        self.log = open(log_path, 'wb')
        self.port_file = log_path + '.port'
        self.proc = subprocess.Popen(
            [EBZIPD, '--listen', '127.0.0.1:0', '--metrics_listen=', '--backend', 'cpu',
             '--max_queued_bytes', str(BUDGET),
             '--idle_timeout_seconds', str(IDLE_TIMEOUT_S), '--stream_frames', '2',
             '--drain_seconds', '5', *args],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.address = '127.0.0.1:%d' % self._port(log_path)

    def _port(self, log_path):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(log_path, 'rb') as f:
                for line in f:
                    if b'"ebzipd serving"' in line:
                        return int(line.split(b'"port":')[1].split(b',')[0].strip(b' "'))
            if self.proc.poll() is not None:
                raise AssertionError('ebzipd exited with %d' % self.proc.returncode)
            time.sleep(0.05)
        raise AssertionError('ebzipd did not start')

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


def archive_messages(archive, size=MIB):
    for at in range(0, len(archive), size):
        yield ebzip_pb2.DecompressRequest(archive=archive[at:at + size])


class MemoryBoundTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        # The bomb: 256 MiB of a constant in 1 MiB-element frames.
        np.full((16384, 4096), 3.25, dtype=np.float32).tofile(os.path.join(d, 'const.raw'))
        cls.bomb = cls.cli('compress', '--type', 'f32', '--shape', '16384,4096', '--abs', '1e-3',
                           '--frame_elements', str(1 << 20), 'const.raw', '-o', 'bomb.ebz')
        # A valid file header (its checksum redone) claiming 256 GiB in
        # frames of 16 rows: refused from those 96 bytes alone.
        np.zeros((2, 4096), dtype=np.float32).tofile(os.path.join(d, 'small.raw'))
        small = cls.cli('compress', '--type', 'f32', '--shape', '2,4096', '--abs', '1e-3',
                        'small.raw', '-o', 'small.ebz')
        cls.claim = patch_shape(small[:96], (1 << 20, 1 << 16), frame_rows=16)
        # A large array to compress: 8 MiB, smooth.
        x = np.sin(np.linspace(0, 50, 2 * MIB, dtype=np.float32)).reshape(512, 4096)
        cls.big = x.tobytes()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def cli(cls, *args):
        subprocess.run([EBZIP, *args], check=True, cwd=cls.tmp.name, capture_output=True,
                       timeout=600)
        with open(os.path.join(cls.tmp.name, args[-1]), 'rb') as f:
            return f.read()

    def test_peak_resident_set_stays_within_the_budget(self):
        server = Server(os.path.join(self.tmp.name, 'ebzipd.log'))
        self.addCleanup(server.stop)
        channel = grpc.insecure_channel(server.address, options=[
            ('grpc.max_receive_message_length', 64 * MIB)])
        self.addCleanup(channel.close)
        stub = ebzip_pb2_grpc.CompressorStub(channel)
        # At rest, after one small request of each kind.
        small = np.zeros(1024, dtype=np.float32).tobytes()
        header = ebzip_pb2.CompressHeader(
            array=ebzip_pb2.ArraySpec(dtype=ebzip_pb2.FLOAT32, shape=[1024]),
            error_bound=ebzip_pb2.ErrorBound(mode=ebzip_pb2.ABS, value=1e-3))
        replies = list(stub.Compress(iter([ebzip_pb2.CompressRequest(header=header),
                                           ebzip_pb2.CompressRequest(data=small)])))
        archive = b''.join(r.archive for r in replies)
        list(stub.Decompress(archive_messages(archive)))
        rest = status_kib(server.proc.pid, 'VmRSS') * 1024

        outcomes = {}
        lock = threading.Lock()

        def record(name, what):
            with lock:
                outcomes.setdefault(name, []).append(what)

        def until_served(name, attempt):
            # While the others fill the budget, a call is refused; this
            # client tries again until it goes through.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    record(name, attempt())
                    return
                except grpc.RpcError as e:
                    record(name, e.code())
                    if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                        return
                    time.sleep(0.2)

        def bomb(i):
            def attempt():
                got = 0
                ok = True
                for r in stub.Decompress(archive_messages(self.bomb), timeout=120):
                    if r.data:
                        a = np.frombuffer(r.data, dtype=np.float32)
                        ok = ok and bool(np.all(a == np.float32(3.25)))
                        got += len(r.data)
                return (ok, got)
            until_served('bomb', attempt)

        def claim(i):
            try:
                list(stub.Decompress(iter([ebzip_pb2.DecompressRequest(archive=self.claim)]),
                                     timeout=30))
                record('claim', grpc.StatusCode.OK)
            except grpc.RpcError as e:
                record('claim', e.code())

        def stall(i):
            h = ebzip_pb2.CompressHeader(
                array=ebzip_pb2.ArraySpec(dtype=ebzip_pb2.FLOAT32, shape=[512, 4096]),
                error_bound=ebzip_pb2.ErrorBound(mode=ebzip_pb2.REL, value=1e-3))

            def requests():
                yield ebzip_pb2.CompressRequest(header=h)
                for at in range(0, len(self.big) // 2, MIB):
                    yield ebzip_pb2.CompressRequest(data=self.big[at:at + MIB])
                time.sleep(IDLE_TIMEOUT_S * 3)  # then nothing: the server ends it

            try:
                list(stub.Compress(requests(), timeout=60))
                record('stall', grpc.StatusCode.OK)
            except grpc.RpcError as e:
                record('stall', e.code())

        def no_reader(i):
            call = stub.Decompress(archive_messages(self.bomb), timeout=60)
            time.sleep(IDLE_TIMEOUT_S * 3)  # reads nothing: the server ends it
            try:
                for _ in call:  # what was on its way before the end
                    pass
                record('no_reader', grpc.StatusCode.OK)
            except grpc.RpcError as e:
                record('no_reader', e.code())

        def compress(i):
            h = ebzip_pb2.CompressHeader(
                array=ebzip_pb2.ArraySpec(dtype=ebzip_pb2.FLOAT32, shape=[512, 4096]),
                error_bound=ebzip_pb2.ErrorBound(mode=ebzip_pb2.REL, value=1e-4))

            def attempt():
                msgs = [ebzip_pb2.CompressRequest(header=h)] + [
                    ebzip_pb2.CompressRequest(data=self.big[at:at + MIB])
                    for at in range(0, len(self.big), MIB)]
                list(stub.Compress(iter(msgs), timeout=120))
                return grpc.StatusCode.OK
            until_served('compress', attempt)

        threads = []
        for fn, n in ((bomb, 4), (claim, 2), (stall, 2), (no_reader, 2), (compress, 2)):
            threads += [threading.Thread(target=fn, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        self.assertFalse(any(t.is_alive() for t in threads), 'a client hung')

        peak = status_kib(server.proc.pid, 'VmHWM') * 1024
        print('ebzipd resident: %.1f MiB at rest, %.1f MiB at peak; budget %.0f MiB, '
              'overhead allowed %.0f MiB' % (rest / MIB, peak / MIB, BUDGET / MIB, OVERHEAD / MIB))
        print('outcomes: %s' % {k: {str(o): v.count(o) for o in set(v)}
                                for k, v in outcomes.items()})
        self.assertLessEqual(peak, rest + BUDGET + OVERHEAD)

        # Every bomb was served whole and exact in the end, after refusals
        # while the server was full.
        served = [o for o in outcomes['bomb'] if isinstance(o, tuple)]
        self.assertEqual(len(served), 4, outcomes['bomb'])
        for ok, got in served:
            self.assertTrue(ok, 'a bomb decoded to other values')
            self.assertEqual(got, 16384 * 4096 * 4)
        for o in outcomes['bomb']:
            if not isinstance(o, tuple):
                self.assertEqual(o, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(outcomes['claim'], [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2)
        self.assertTrue(all(o in (grpc.StatusCode.CANCELLED,
                                  grpc.StatusCode.RESOURCE_EXHAUSTED)
                            for o in outcomes['stall']), outcomes['stall'])
        self.assertTrue(all(o in (grpc.StatusCode.CANCELLED, grpc.StatusCode.RESOURCE_EXHAUSTED)
                            for o in outcomes['no_reader']), outcomes['no_reader'])
        self.assertEqual(outcomes['compress'].count(grpc.StatusCode.OK), 2, outcomes['compress'])
        self.assertTrue(all(o in (grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED)
                            for o in outcomes['compress']), outcomes['compress'])


def crc32c(data):
    """CRC-32C (Castagnoli), bitwise: for the one 92-byte header patched."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def patch_shape(header, shape, frame_rows):
    """The 96-byte file header (FORMAT.md) with another 2-D shape and frame
    layout, its checksum recomputed."""
    h = bytearray(header)
    struct.pack_into('<4Q', h, 16, shape[0], shape[1], 0, 0)
    frames = (shape[0] + frame_rows - 1) // frame_rows
    struct.pack_into('<QQ', h, 72, frame_rows, frames)
    struct.pack_into('<I', h, 92, crc32c(bytes(h[:92])))
    return bytes(h)


def main():
    global EBZIPD, EBZIP
    parser = argparse.ArgumentParser()
    parser.add_argument('--ebzipd', required=True)
    parser.add_argument('--ebzip', required=True)
    args, rest = parser.parse_known_args()
    EBZIPD, EBZIP = args.ebzipd, args.ebzip
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == '__main__':
    main()
