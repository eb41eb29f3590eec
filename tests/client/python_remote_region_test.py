#!/usr/bin/env python3
"""ebzip.open(..., server=...)[key] and Client.decompress(region=, remote_path=)
against a real ebzipd (CPU backend) with --archive_root.

Usage: python_remote_region_test.py --ebzipd PATH [unittest args...] with
PYTHONPATH at build/python.

Every remote selection must equal NumPy's indexing of a full local decode,
bit for bit, for archives sent with each call and archives the server reads
under its root; each indexing is one region request (counted by the
server's metrics); bad regions and paths raise the documented errors;
compress(metadata=) writes the local codec's archive.
"""

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import unittest
import urllib.request

import numpy as np

import ebzip
import python_client_test as pct
from python_region_test import bits, field, random_key


def metric(address, name):
    with urllib.request.urlopen('http://%s/metrics' % address, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + ' '):
                return float(line.split()[1])
    return None


class RemoteRegionTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix='ebzip_remote_region_')
        cls.metrics_address = '127.0.0.1:%d' % pct.free_port()
        cls.server = pct.Server('--archive_root', cls.root,
                                '--metrics_listen', cls.metrics_address)
        cls.plain = pct.Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.plain.stop()
        shutil.rmtree(cls.root)

    def put(self, name, archive):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(archive)
        return name

    def test_selections_equal_numpy_indexing_of_a_full_decode(self):
        rng = random.Random(26)
        with ebzip.Client(self.server.address) as c:
            for dtype in (np.float32, np.float64):
                for shape in ((3000,), (40, 70), (24, 18, 20), (5, 6, 14, 16)):
                    x = field(shape, dtype, len(shape))
                    archive = ebzip.compress(x, rel=1e-3, fill_value=-9999, frame_elements=800)
                    full = ebzip.decompress(archive)
                    name = self.put('%s/%d.ebz' % (np.dtype(dtype).name, len(shape)), archive)
                    uploaded = ebzip.open(archive, client=c)
                    by_path = ebzip.open(server=self.server.address, remote_path=name)
                    self.assertEqual(by_path.shape, shape)
                    self.assertEqual(by_path.dtype, np.dtype(dtype).newbyteorder('<'))
                    self.assertEqual(by_path.bound, uploaded.bound)
                    keys = [Ellipsis, (0,), (-1,), (slice(1, 1),)] + \
                        [random_key(shape, rng) for _ in range(12)]
                    for key in keys:
                        want = full[key]
                        for what, a in (('uploaded', uploaded), ('path', by_path)):
                            with self.subTest(dtype=dtype, shape=shape, key=key, source=what):
                                got = a[key]
                                self.assertEqual(got.shape, want.shape)
                                np.testing.assert_array_equal(bits(got), bits(want))
                    by_path.close()
                    with self.assertRaises(ValueError):
                        by_path[0]  # closed

    def test_each_indexing_is_one_region_request(self):
        x = field((30, 40, 50), np.float32, 7)
        archive = ebzip.compress(x, abs=1e-3, frame_elements=4000)
        name = self.put('count/a.ebz', archive)
        before = metric(self.metrics_address, 'ebzip_region_requests_total')
        saved = metric(self.metrics_address, 'ebzip_region_saved_bytes_total')
        with ebzip.open(server=self.server.address, remote_path=name) as a:
            a[3]
            a[4:6, :, 10]
        self.assertEqual(metric(self.metrics_address, 'ebzip_region_requests_total'),
                         before + 2)
        self.assertEqual(metric(self.metrics_address, 'ebzip_region_saved_bytes_total'),
                         saved + 2 * x.nbytes - 40 * 50 * 4 - 2 * 40 * 4)

    def test_client_region_and_header(self):
        x = field((24, 18, 20), np.float64, 3)
        archive = ebzip.compress(x, rel=1e-4, fill_value=-9999, frame_elements=18 * 20 * 4)
        full = ebzip.decompress(archive)
        name = self.put('client/a.ebz', archive)
        with ebzip.Client(self.server.address) as c:
            got = c.decompress(archive, region=([2, 0, 5], [3, 18, 4], [5, 1, 2]))
            np.testing.assert_array_equal(bits(got), bits(full[2:13:5, :, 5:12:2]))
            got = c.decompress(remote_path=name, region=([23, 17, 19], [1, 1, 1]))
            np.testing.assert_array_equal(bits(got), bits(full[23:, 17:, 19:]))
            np.testing.assert_array_equal(bits(c.decompress(remote_path=name)), bits(full))
            empty = c.decompress(remote_path=name, region=([5, 0, 0], [0, 18, 20]))
            self.assertEqual(empty.shape, (0, 18, 20))
            header = c.archive_header(remote_path=name)
            self.assertEqual(list(header.archive_array.shape), [24, 18, 20])
            self.assertEqual(list(header.array.shape), [24, 18, 20])
            with self.assertRaises(ebzip.InvalidArgument):
                c.decompress(archive, region=([0, 0, 0], [25, 1, 1]))
            with self.assertRaises(ebzip.InvalidArgument):
                c.decompress(archive, region=([0, 0], [1, 1]))
            with self.assertRaises(ValueError):  # checked before the call
                c.decompress(archive, region=([0, 0, 0], [1, 1, 1], [1, 0, 1]))
            with self.assertRaises(ValueError):
                c.decompress(archive, remote_path=name)
            with self.assertRaises(TypeError):
                c.decompress()

    def test_paths_that_leave_the_root_are_refused(self):
        outside = tempfile.NamedTemporaryFile(suffix='.ebz', delete=False)
        self.addCleanup(os.unlink, outside.name)
        outside.write(ebzip.compress(field((10, 10), np.float32, 1), rel=1e-3, fill_value=-9999))
        outside.close()
        link = os.path.join(self.root, 'link.ebz')
        if not os.path.lexists(link):
            os.symlink(outside.name, link)
        os.makedirs(os.path.join(self.root, 'dir'), exist_ok=True)
        cases = [('../x.ebz', ebzip.InvalidArgument), (outside.name, ebzip.InvalidArgument),
                 ('dir/../link.ebz', ebzip.InvalidArgument), ('link.ebz', ebzip.PermissionDenied),
                 ('dir', ebzip.PermissionDenied), ('missing.ebz', ebzip.NotFound)]
        with ebzip.Client(self.server.address) as c:
            for path, error in cases:
                with self.subTest(path=path), self.assertRaises(error):
                    c.decompress(remote_path=path)
        with ebzip.Client(self.plain.address) as c, \
                self.assertRaises(ebzip.FailedPrecondition):
            c.decompress(remote_path='anything.ebz')

    def test_compress_with_metadata(self):
        # Byte identity with the local codec's archive is checked in C++
        # (tests/server/region_test.cc); here, that the argument arrives.
        x = field((20, 30, 40), np.float32, 9)
        document = json.dumps({'name': 'TEMP', 'dimensions': ['z', 'y', 'x']})
        with ebzip.Client(self.server.address) as c:
            remote = c.compress(x, rel=1e-4, fill_value=-9999, metadata=document)
            plain = c.compress(x, rel=1e-4, fill_value=-9999)
            with self.assertRaises(ebzip.InvalidArgument):
                c.compress(x, rel=1e-4, fill_value=-9999, metadata="[1]")
        self.assertEqual(ebzip.info(remote)['metadata'], document)
        self.assertEqual(ebzip.info(plain)['metadata'], '')
        self.assertEqual(plain, ebzip.compress(x, rel=1e-4, fill_value=-9999))
        np.testing.assert_array_equal(bits(ebzip.decompress(remote)),
                                      bits(ebzip.decompress(plain)))


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
