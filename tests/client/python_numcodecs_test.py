#!/usr/bin/env python3
"""Tests of ebzip.numcodecs.Ebzip with numcodecs, Zarr and xarray.

Usage:
    python_numcodecs_test.py --ebzipd PATH [unittest args...]

with PYTHONPATH pointing at build/python. Run by ctest as
python_numcodecs_test. RemoteTest starts a real ebzipd on loopback (as
python_client_test does, whose Server it uses). Every value read back is
checked in float64 against the bound, per chunk for rel= (each chunk is its
own archive, relative to its own range), by the checker of
python_client_test; the xarray test uses a real ferret field, Levitus
salinity and temperature, with their coordinates and attributes.
"""

import argparse
import json
import os
import pickle
import sys
import tempfile
import unittest
import warnings

import numcodecs
import numpy as np
import xarray as xr
import zarr

import ebzip
from ebzip.numcodecs import Ebzip
import python_client_test as pct

LEVITUS = os.path.join(pct.DATA_DIR, 'levitus_climatology.cdf')


def chunk_slices(shape, chunks):
    """Every chunk's tuple of slices, in C order."""
    grid = [range(0, n, c) for n, c in zip(shape, chunks)]
    for corner in np.ndindex(*[len(g) for g in grid]):
        yield tuple(slice(g[i], min(g[i] + c, n))
                    for g, i, c, n in zip(grid, corner, chunks, shape))


def check_chunks(test, x, y, chunks, rel=None, abs_bound=None, fill=None):
    """y within the bound of x in every chunk; returns the chunk count."""
    count = 0
    for sl in chunk_slices(x.shape, chunks):
        bound = abs_bound if rel is None else pct.rel_to_abs(x[sl], rel, fill)
        v, s, first, err = pct.bound_violations(x[sl], y[sl], bound, fill)
        test.assertEqual((v, s), (0, 0), f'chunk {sl}: first bad {first}, '
                         f'max error {err} > {bound}')
        count += 1
    return count


class CodecTest(unittest.TestCase):

    def test_registered_on_import(self):
        codec = numcodecs.get_codec({'id': 'ebzip', 'rel': 1e-4})
        self.assertIsInstance(codec, Ebzip)
        self.assertEqual(codec.rel, 1e-4)

    def test_config_round_trip(self):
        for codec in (Ebzip(rel=1e-4), Ebzip(abs=0.5, fill_value=-1e10),
                      Ebzip(rel=1e-3, server='host:50051', predictor='interp',
                            lossless='runs', token='secret', tls_ca='ca.pem')):
            with self.subTest(codec=codec):
                config = codec.get_config()
                self.assertEqual(config['id'], 'ebzip')
                json.dumps(config)  # JSON-compatible, as .zarray needs
                again = numcodecs.get_codec(dict(config))
                self.assertEqual(again, codec)
                self.assertEqual(again.get_config(), config)
                self.assertNotIn('secret', json.dumps(config))
                self.assertNotIn('ca.pem', json.dumps(config))
                self.assertEqual(pickle.loads(pickle.dumps(codec)), codec)

    def test_bad_configuration_raises_at_once(self):
        for kwargs in (dict(), dict(rel=1e-3, abs=1.0), dict(rel=0),
                       dict(abs=1.0, predictor='x'),
                       dict(abs=1.0, lossless='x')):
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(ValueError):
                    Ebzip(**kwargs)

    def test_encode_decode_shapes_and_orders(self):
        codec = Ebzip(abs=1e-3)
        base = pct.smooth_field((4, 6, 8, 10, 3), np.float64)
        cases = [base[0, 0, 0, 0, 0], base[0, 0, 0], base[0, 0],
                 base[0], base, np.asfortranarray(base[0, 0]),
                 base[0, 0].astype(np.float32)]
        for x in cases:
            with self.subTest(shape=x.shape, f=x.flags.f_contiguous):
                x = np.asarray(x)
                enc = codec.encode(x)
                dec = numcodecs.compat.ensure_ndarray(codec.decode(enc))
                # Zarr's reading: memory order, then the chunk's shape.
                order = 'F' if not x.flags.c_contiguous else 'C'
                y = dec.view(x.dtype).reshape(-1, order='A').reshape(
                    x.shape, order=order)
                self.assertEqual(pct.bound_violations(x, y, 1e-3)[:2], (0, 0))
                # Into a caller's buffer of the same byte count.
                out = np.empty(x.nbytes, np.uint8)
                self.assertIs(codec.decode(enc, out=out), out)
                np.testing.assert_array_equal(out, dec.view(np.uint8).reshape(-1))
                with self.assertRaises(ValueError):
                    codec.decode(enc, out=np.empty(x.nbytes + 8, np.uint8))

    def test_refuses_what_it_cannot_round_trip(self):
        codec = Ebzip(abs=1e-3)
        with self.assertRaises(TypeError):
            codec.encode(np.arange(10, dtype=np.int32))
        with self.assertRaises(TypeError):
            codec.encode(np.ones(10, '>f4'))
        with self.assertRaises(ebzip.DataLoss):
            codec.decode(b'not an archive')


class ZarrTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_zarr_array_reads_back_within_bound(self):
        x = pct.with_specials(pct.smooth_field((60, 70, 80), np.float32),
                              -1e30)
        for codec, check in [(Ebzip(abs=1e-3, fill_value=-1e30),
                              dict(abs_bound=1e-3)),
                             (Ebzip(rel=1e-4, fill_value=-1e30),
                              dict(rel=1e-4))]:
            with self.subTest(codec=codec):
                path = os.path.join(self.tmp.name, 'a.zarr')
                z = zarr.open(path, mode='w', shape=x.shape, chunks=(16, 35, 40),
                              dtype=x.dtype, compressor=codec)
                z[:] = x
                self.assertEqual(z.nchunks_initialized, z.nchunks)
                back = zarr.open(path, mode='r')
                self.assertEqual(back.compressor, codec)
                y = back[:]
                n = check_chunks(self, x, y, (16, 35, 40), fill=-1e30, **check)
                self.assertEqual(n, 4 * 2 * 2)
                # A partial read decodes its chunks straight into zarr's
                # output array.
                np.testing.assert_array_equal(back[16:32, :35, 40:], y[16:32, :35, 40:])

    def test_xarray_ferret_field(self):
        ds = xr.open_dataset(LEVITUS)
        # The fill goes to both: xarray then writes -1e10 (not NaN) where
        # data is missing, and ebzip keeps it exact and out of the range.
        encoding = {v: {'compressor': Ebzip(rel=1e-4, fill_value=-1e10),
                        '_FillValue': -1e10}
                    for v in ('SALT', 'TEMP')}
        path = os.path.join(self.tmp.name, 'levitus.zarr')
        chunks = (5, 90, 180)
        with warnings.catch_warnings():
            warnings.simplefilter('error', ebzip.EbzipWarning)
            ds.chunk(dict(zip(ds.SALT.dims, chunks))).to_zarr(
                path, encoding=encoding)
        back = xr.open_zarr(path)
        # Coordinates exactly, attributes as they were.
        self.assertEqual(set(back.coords), set(ds.coords))
        for name in ds.coords:
            np.testing.assert_array_equal(back[name].values, ds[name].values)
        self.assertEqual(back.attrs, ds.attrs)
        raw = xr.open_dataset(LEVITUS, mask_and_scale=False)
        for var in ('SALT', 'TEMP'):
            with self.subTest(var=var):
                self.assertEqual(back[var].dims, ds[var].dims)
                self.assertEqual(back[var].attrs, ds[var].attrs)
                self.assertEqual(back[var].encoding['compressor'],
                                 encoding[var]['compressor'])
                # The stored chunks, fill and all, within each chunk's bound
                # of the file's values (float64, the fill exact).
                stored = zarr.open(path, mode='r')[var][:]
                x = raw[var].values
                n = check_chunks(self, x, stored, chunks, rel=1e-4, fill=-1e10)
                self.assertEqual(n, 4 * 2 * 2)
                # Land is NaN again through xarray's decoding, as in ds.
                np.testing.assert_array_equal(np.isnan(back[var].values),
                                              np.isnan(ds[var].values))

    def test_xarray_undeclared_fill_warns(self):
        # A _FillValue xarray writes but ebzip is not told of sets each
        # chunk's range: the warning says so, and what to pass.
        ds = xr.open_dataset(LEVITUS)[['SALT']]
        path = os.path.join(self.tmp.name, 'salt.zarr')
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            ds.to_zarr(path, encoding={'SALT': {'compressor': Ebzip(rel=1e-4),
                                                '_FillValue': -1e10}})
        messages = [str(w.message) for w in caught
                    if w.category is ebzip.DominatedRangeWarning]
        self.assertTrue(messages)
        self.assertIn('fill_value=-1e+10', messages[0])

    def test_xarray_nan_chunks_warn_when_larger(self):
        # Without a _FillValue in the encoding xarray writes NaN where data
        # is missing; NaNs are exact but verbatim, and a chunk of land costs
        # more than raw: the warning says why.
        ds = xr.open_dataset(LEVITUS)[['SALT']]
        path = os.path.join(self.tmp.name, 'nan.zarr')
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            ds.chunk({'ZAXLEVITR': 5}).to_zarr(
                path, encoding={'SALT': {'compressor': Ebzip(rel=1e-4)}})
        messages = [str(w.message) for w in caught
                    if w.category is ebzip.LargerArchiveWarning]
        self.assertTrue(messages)
        self.assertIn('NaN', messages[0])
        back = xr.open_zarr(path)
        np.testing.assert_array_equal(np.isnan(back.SALT.values),
                                      np.isnan(ds.SALT.values))


class RemoteTest(unittest.TestCase):
    """server=: the chunks are compressed by a real ebzipd."""

    @classmethod
    def setUpClass(cls):
        cls.server = pct.Server('--drain_seconds', '1')

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        if rc != 0:
            raise AssertionError(f'ebzipd exited with {rc}:\n'
                                 f'{cls.server.log_text()}')

    def test_remote_codec_same_bytes_and_zarr_round_trip(self):
        remote = Ebzip(rel=1e-4, server=self.server.address)
        local = Ebzip(rel=1e-4)
        x = pct.smooth_field((50, 60), np.float32)
        self.assertEqual(remote.encode(x), local.encode(x))
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, 'r.zarr')
        z = zarr.open(path, mode='w', shape=x.shape, chunks=(25, 30),
                      dtype=x.dtype, compressor=remote)
        z[:] = x
        back = zarr.open(path, mode='r')
        self.assertEqual(back.compressor.server, self.server.address)
        check_chunks(self, x, back[:], (25, 30), rel=1e-4)

    def test_remote_codec_really_calls_the_server(self):
        nobody = '127.0.0.1:%d' % pct.free_port()
        codec = Ebzip(abs=1e-3, server=nobody, timeout=5)
        with self.assertRaises(ebzip.Unavailable):
            codec.encode(np.ones(100, np.float32))

    def test_remote_masked_array_and_old_call_form(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        pct.EXPORT_FIELD = EXPORT_FIELD
        _, salt, _ = pct.export_field('levitus_climatology.cdf:SALT', tmp.name)
        masked = np.ma.masked_equal(salt, -1e10)
        # ebzip.compress(array, server, ...) as earlier releases took it.
        remote = ebzip.compress(masked, self.server.address, rel=1e-4)
        self.assertEqual(remote, ebzip.compress(masked, rel=1e-4))
        back = ebzip.decompress(remote, self.server.address, masked=True)
        np.testing.assert_array_equal(back.mask, masked.mask)
        out = np.empty_like(salt)
        self.assertIs(ebzip.decompress(remote, self.server.address, out=out),
                      out)
        np.testing.assert_array_equal(out, back.data)
        with ebzip.Client(self.server.address) as c:
            self.assertIs(c.decompress(remote, out=out), out)
            for bad in (np.empty(salt.shape[::-1], salt.dtype),
                        np.empty(salt.shape, np.float64),
                        np.empty(salt.shape, salt.dtype).T):
                with self.assertRaises(ValueError):
                    c.decompress(remote, out=bad)
        with self.assertWarns(ebzip.DominatedRangeWarning):
            ebzip.compress(salt, self.server.address, rel=1e-4)


EXPORT_FIELD = None


def main():
    global EXPORT_FIELD
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--ebzipd', default=os.environ.get('EBZIPD'))
    parser.add_argument('--export_field',
                        default=os.environ.get('EBZIP_EXPORT_FIELD'))
    args, rest = parser.parse_known_args()
    for name in ('ebzipd', 'export_field'):
        path = getattr(args, name)
        if not path or not os.access(path, os.X_OK):
            parser.error('--%s: not an executable: %r' % (name, path))
    pct.EBZIPD = os.path.abspath(args.ebzipd)
    EXPORT_FIELD = os.path.abspath(args.export_field)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
