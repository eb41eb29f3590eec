#!/usr/bin/env python3
"""ebzip.open(...)[key]: partial reads of an archive in process.

Usage: python_region_test.py [unittest args...] with PYTHONPATH at build/python.

Every selection must equal NumPy's indexing of a full decode
(ebzip.decompress), bit for bit (NaN, -0.0 and fill values included), from
bytes and from a memory-mapped path, over archives of several frames;
unsupported keys raise ValueError, out-of-range integers IndexError.
"""

import os
import random
import sys
import tempfile
import unittest

import numpy as np

import ebzip


def field(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    x = (np.sin(np.arange(n) * 0.01) + 0.01 * rng.standard_normal(n)).astype(dtype)
    x[rng.integers(0, n, 5)] = -9999
    x[rng.integers(0, n)] = np.nan
    x[rng.integers(0, n)] = -0.0
    x[rng.integers(0, n)] = np.inf
    return x.reshape(shape)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint64)


def random_key(shape, rng):
    key = []
    for extent in shape:
        kind = rng.random()
        if kind < 0.25:
            key.append(rng.randrange(-extent, extent))
        elif kind < 0.35:
            key.append(slice(None))
        else:
            a = rng.randrange(-extent - 2, extent + 2)
            b = rng.randrange(-extent - 2, extent + 2)
            key.append(slice(a if rng.random() < 0.8 else None,
                             b if rng.random() < 0.8 else None, rng.choice([None, 1, 2, 3, 7])))
    if rng.random() < 0.2 and len(key) > 1:
        key = key[:rng.randrange(1, len(key))]  # trailing dimensions whole
    if rng.random() < 0.2:
        cut = rng.randrange(0, len(key) + 1)
        key = key[:cut] + [Ellipsis]
    return tuple(key)


class RegionTest(unittest.TestCase):

    def check(self, archive, full, key):
        with self.subTest(key=key):
            got = ebzip.open(archive)[key]
            want = full[key]
            self.assertEqual(got.shape, want.shape)
            self.assertEqual(got.dtype, want.dtype)
            np.testing.assert_array_equal(bits(got), bits(want))

    def test_selections_equal_numpy_indexing_of_a_full_decode(self):
        rng = random.Random(25)
        for dtype in (np.float32, np.float64):
            for shape in ((3000,), (40, 70), (24, 18, 20), (5, 6, 14, 16)):
                x = field(shape, dtype, len(shape))
                # Small frames: several per archive.
                archive = ebzip.compress(x, rel=1e-3, fill_value=-9999, frame_elements=800)
                full = ebzip.decompress(archive)
                self.assertGreater(ebzip.info(archive)['frame_count'], 1)
                for key in [Ellipsis, (0,), (-1,), (slice(1, 1),)] + \
                        [random_key(shape, rng) for _ in range(25)]:
                    self.check(archive, full, key)

    def test_a_path_is_read_in_place(self):
        x = field((30, 40, 50), np.float32, 7)
        archive = ebzip.compress(x, abs=1e-3, frame_elements=4000)
        full = ebzip.decompress(archive)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'a.ebz')
            with open(path, 'wb') as f:
                f.write(archive)
            with ebzip.open(path) as a:
                self.assertEqual(a.shape, (30, 40, 50))
                self.assertEqual(a.dtype, np.dtype('<f4'))
                self.assertEqual(len(a), 30)
                self.assertAlmostEqual(a.bound, 1e-3)
                np.testing.assert_array_equal(bits(a[7, 10:20, ::3]), bits(full[7, 10:20, ::3]))
                np.testing.assert_array_equal(bits(np.asarray(a)), bits(full))
                out = np.empty_like(full)
                self.assertIs(a.read(out=out), out)
                np.testing.assert_array_equal(bits(out), bits(full))
            with self.assertRaises(ValueError):
                a[0]  # closed

    def test_unsupported_keys(self):
        a = ebzip.open(ebzip.compress(field((10, 12), np.float64, 3), rel=1e-4))
        for key in [(slice(None, None, -1),), (slice(0, 5, 0),), ([1, 2],), (1.5,), (None,)]:
            with self.subTest(key=key), self.assertRaises(ValueError):
                a[key]
        for key in [(10,), (-11,), (0, 12), (0, 0, 0)]:
            with self.subTest(key=key), self.assertRaises(IndexError):
                a[key]
        with self.assertRaises(IndexError):
            a[..., ...]

    def test_a_corrupt_frame_fails_only_the_selections_that_meet_it(self):
        x = field((64, 50), np.float32, 11)
        archive = bytearray(ebzip.compress(x, abs=1e-3, frame_elements=800))
        full = ebzip.decompress(bytes(archive))
        info = ebzip.info(bytes(archive))
        self.assertEqual(info['frame_count'], 4)  # 16 rows each
        # A byte near the end of the last frame: before the frame index
        # (16 + 16 per frame bytes) and the trailer (16 bytes), FORMAT.md.
        index_bytes = 16 + 16 * 4 + 16
        archive[len(archive) - index_bytes - 24] ^= 0x10
        a = ebzip.open(bytes(archive))
        np.testing.assert_array_equal(bits(a[0:16]), bits(full[0:16]))
        with self.assertRaises(ebzip.DataLoss):
            a[60]


if __name__ == '__main__':
    unittest.main(argv=sys.argv, verbosity=2)
