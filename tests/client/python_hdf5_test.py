#!/usr/bin/env python3
"""Tests of the HDF5 filter plugin (hdf5_plugin/) and ebzip.hdf5.

Usage:
    python_hdf5_test.py [unittest args...]

with PYTHONPATH pointing at build/python and HDF5_PLUGIN_PATH at the
build's hdf5_plugin directory. Run by ctest as python_hdf5_test.

h5py writes and reads chunked datasets through the filter (edge chunks,
float32 and float64, REL and ABS bounds, fill values given or the
dataset's), checked in float64 per chunk against the bound of that chunk's
own contents (an edge chunk includes HDF5's padding) by
python_client_test's checker; each chunk's stored bytes are compared with
ebzip.compress of that chunk. h5dump and netCDF-C (nccopy writes a netCDF-4
file whose variables use the filter, netCDF4-python reads it) load the
plugin from HDF5_PLUGIN_PATH in their own way. Every single-bit flip of a
stored chunk makes the read fail rather than return other values.
"""

import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import h5py
import netCDF4
import numpy as np

import ebzip
import ebzip.hdf5
from ebzip.hdf5 import Ebzip
import python_client_test as pct

PLUGIN_DIR = os.environ.get('HDF5_PLUGIN_PATH', '')
PLUGIN = os.path.join(PLUGIN_DIR, 'libH5Z_ebzip.so')
LEVITUS = os.path.join(pct.DATA_DIR, 'levitus_climatology.cdf')
FILTER_ID = 491  # hdf5_plugin/cd_values.h


def words(x):
    """A double as cd_values: two 32-bit words, low first."""
    return list(struct.unpack('<II', struct.pack('<d', x)))


def expected_cd_values(dtype, mode, bound, fill, chunks):
    """The complete cd_values of hdf5_plugin/cd_values.h's layout 1."""
    cd = [1, {np.float32: 1, np.float64: 2}[np.dtype(dtype).type],
          {'abs': 1, 'rel': 2}[mode]] + words(bound)
    cd += [2, 0, 0] if fill is None else [1] + words(fill)
    return tuple(cd + [len(chunks)] + list(chunks))


def chunk_grid(shape, chunks):
    """(chunk offset, slices of the dataset it holds) for every chunk."""
    for corner in np.ndindex(*[math.ceil(n / c) for n, c in zip(shape, chunks)]):
        start = tuple(i * c for i, c in zip(corner, chunks))
        yield start, tuple(slice(s, min(s + c, n))
                           for s, c, n in zip(start, chunks, shape))


def padded_chunk(x, sl, chunks, pad):
    """The chunk HDF5 hands the filter: x[sl], padded with the dataset's
    fill value where it runs past the dataset's edge."""
    c = np.full(chunks, pad, dtype=x.dtype)
    c[tuple(slice(0, s.stop - s.start) for s in sl)] = x[sl]
    return c


def h5dump(path, dataset, plugin_path):
    """h5dump's values of a dataset, full precision, and its exit status."""
    env = dict(os.environ)
    env.pop('HDF5_PLUGIN_PATH', None)
    if plugin_path is not None:
        env['HDF5_PLUGIN_PATH'] = plugin_path
    p = subprocess.run(['h5dump', '-m', '%.17g', '-d', dataset, path],
                       capture_output=True, text=True, env=env, check=False)
    m = re.search(r'DATA \{(.*?)\}', p.stdout, re.S)
    values = []
    if m:
        body = re.sub(r'\([0-9,]+\):', ' ', m.group(1))
        values = [float(v) for v in body.replace(',', ' ').split()]
    return p.returncode, np.array(values), p.stdout + p.stderr


class FilterTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def check_dataset(self, x, dataset, chunks, mode, bound, fill, pad):
        """Every chunk of `dataset` read back within the bound of x (and
        fill values and specials exact), and stored as the archive
        ebzip.compress makes of that chunk."""
        y = dataset[...]
        self.assertEqual((y.dtype, y.shape), (x.dtype, x.shape))
        count = 0
        for start, sl in chunk_grid(x.shape, chunks):
            chunk = padded_chunk(x, sl, chunks, pad)
            abs_bound = bound if mode == 'abs' else pct.rel_to_abs(chunk, bound, fill)
            v, s, first, err = pct.bound_violations(x[sl], y[sl], abs_bound, fill)
            self.assertEqual((v, s), (0, 0), f'chunk at {start}: first bad '
                             f'{first}, max error {err} > {abs_bound}')
            mask, stored = dataset.id.read_direct_chunk(start)
            self.assertEqual(mask, 0, 'the chunk was stored without the filter')
            if dataset.fletcher32:
                stored = stored[:-4]
            shape = chunks if len(chunks) <= 4 else (-1,) + tuple(chunks[-3:])
            expected = ebzip.compress(chunk.reshape(shape), fill_value=fill,
                                      **{mode: bound})
            self.assertEqual(stored, expected, f'chunk at {start}')
            count += 1
        return count

    def test_kwargs_for_create_dataset(self):
        self.assertEqual(ebzip.hdf5.FILTER_ID, FILTER_ID)
        self.assertEqual(dict(Ebzip(rel=1e-4)), {
            'compression': FILTER_ID,
            'compression_opts': (1, 0, 2, *words(1e-4), 0, 0, 0)})
        self.assertEqual(dict(Ebzip(abs=0.5, fill_value=-1e10)), {
            'compression': FILTER_ID,
            'compression_opts': (1, 0, 1, *words(0.5), 1, *words(-1e10))})
        self.assertEqual(ebzip.hdf5.PLUGIN_PATH, os.path.normpath(PLUGIN_DIR))

    def test_round_trips_within_bound(self):
        shape, chunks = (37, 50, 45), (10, 24, 20)   # 36 chunks, edges on every axis
        fill = -1e10
        # (dtype, mode, bound, Ebzip's fill_value, h5py's fillvalue)
        cases = [
            (np.float32, 'rel', 1e-3, fill, None),
            (np.float64, 'rel', 1e-5, None, fill),    # the dataset's fill value
            (np.float32, 'abs', 0.05, None, None),    # no fill at all
            (np.float64, 'abs', 1e-4, fill, None),
        ]
        for dtype, mode, bound, codec_fill, dataset_fill in cases:
            with self.subTest(dtype=dtype, mode=mode, codec_fill=codec_fill,
                              dataset_fill=dataset_fill):
                fill = codec_fill if codec_fill is not None else dataset_fill
                x = pct.smooth_field(shape, dtype, seed=3) * 7 + 20
                if fill is not None:
                    x = pct.with_specials(x, fill)
                path = self.path('round_trip.h5')
                with h5py.File(path, 'w') as f:
                    f.create_dataset('x', data=x, chunks=chunks, fillvalue=dataset_fill,
                                     **Ebzip(fill_value=codec_fill, **{mode: bound}))
                with h5py.File(path, 'r') as f:
                    d = f['x']
                    flags, cd, _ = d.id.get_create_plist().get_filter_by_id(FILTER_ID)
                    self.assertEqual(tuple(cd), expected_cd_values(dtype, mode, bound, fill, chunks))
                    self.assertEqual(flags & h5py.h5z.FLAG_OPTIONAL, h5py.h5z.FLAG_OPTIONAL)
                    pad = 0 if dataset_fill is None else dataset_fill
                    self.assertEqual(self.check_dataset(x, d, chunks, mode, bound, fill, pad), 36)
                    self.assertLess(d.id.get_storage_size(), x.nbytes / 2)
                    self.assertEqual(ebzip.hdf5.describe(d), {
                        'dtype': np.dtype(dtype).name, 'mode': mode, 'bound': bound,
                        'fill_value': fill, 'chunks': chunks})

    def test_ranks_one_to_six(self):
        # Beyond four dimensions the leading ones are merged (the codec's
        # limit), as ebzip.numcodecs does.
        for shape, chunks in [((1000,), (300,)), ((40, 30), (16, 30)),
                              ((6, 5, 8, 9, 10), (2, 3, 4, 5, 6)),
                              ((3, 4, 5, 6, 7, 8), (2, 2, 5, 3, 7, 4))]:
            with self.subTest(shape=shape):
                x = pct.smooth_field(shape, np.float32, seed=len(shape))
                path = self.path('ranks.h5')
                with h5py.File(path, 'w') as f:
                    f.create_dataset('x', data=x, chunks=chunks, **Ebzip(abs=1e-3))
                with h5py.File(path, 'r') as f:
                    self.check_dataset(x, f['x'], chunks, 'abs', 1e-3, None, 0)

    def test_compression_argument_and_partial_reads(self):
        x = pct.smooth_field((64, 80), np.float64, seed=5)
        path = self.path('partial.h5')
        with h5py.File(path, 'w') as f:
            # Filters after it (a checksum of the archive) are fine.
            f.create_dataset('x', data=x, chunks=(16, 16), compression=Ebzip(abs=1e-4),
                             fletcher32=True)
            f['x'][20:30, 5:7] = 1.5            # a rewrite of part of some chunks
        x[20:30, 5:7] = 1.5
        with h5py.File(path, 'r') as f:
            d = f['x']
            self.assertEqual(d.id.get_create_plist().get_filter_by_id(FILTER_ID)[1][:3],
                             (1, 2, 1))
            self.check_dataset(x, d, (16, 16), 'abs', 1e-4, None, 0)
            part = d[17:41:3, -9:]
            self.assertLessEqual(np.abs(part - x[17:41:3, -9:]).max(), 1e-4)

    def test_refuses_what_it_cannot_compress(self):
        path = self.path('refused.h5')
        with h5py.File(path, 'w') as f:
            for dtype in ('i4', '>f4', 'f2', '>f8'):
                with self.subTest(dtype=dtype), self.assertRaisesRegex(
                        ValueError, 'little-endian IEEE float32 or float64'):
                    f.create_dataset('d' + dtype.replace('>', 'be'), shape=(10, 10),
                                     dtype=dtype, **Ebzip(rel=1e-3))
            with self.assertRaisesRegex(ValueError, 'must come first in the filter pipeline'):
                f.create_dataset('shuffled', shape=(10, 10), dtype='f4', shuffle=True,
                                 **Ebzip(rel=1e-3))
            bad = {(2, 0, 2, *words(1e-3), 0, 0, 0): 'layout 2',
                   (1, 0, 2, *words(1e-3), 0, 0): 'at least 8',
                   (1, 0, 3, *words(1e-3), 0, 0, 0): 'bound mode 3',
                   (1, 0, 1, *words(-1.0), 0, 0, 0): 'positive finite',
                   (1, 0, 1, *words(math.nan), 0, 0, 0): 'positive finite',
                   (1, 0, 1, *words(1.0), 1, *words(math.inf)): 'fill value must be finite',
                   (1, 0, 1, *words(1.0), 1, *words(1e39)): 'not a finite f32',
                   (1, 0, 1, *words(1.0), 3, 0, 0): 'fill flag 3'}
            for i, (cd, message) in enumerate(bad.items()):
                with self.subTest(cd=cd), self.assertRaisesRegex(ValueError, message):
                    f.create_dataset(f'c{i}', shape=(10, 10), dtype='f4',
                                     compression=FILTER_ID, compression_opts=cd)
        for kwargs in (dict(), dict(rel=1e-3, abs=1.0), dict(rel=0), dict(abs=-1),
                       dict(rel=math.nan), dict(abs=1.0, fill_value=math.inf)):
            with self.subTest(kwargs=kwargs), self.assertRaises(ValueError):
                Ebzip(**kwargs)
        with self.assertRaises(TypeError):
            Ebzip(rel=True)

    def test_every_bit_flip_in_a_chunk_fails_the_read(self):
        x = np.cumsum(np.random.default_rng(1).standard_normal((40, 30)), 1).astype(np.float32)
        path = self.path('flips.h5')
        with h5py.File(path, 'w') as f:
            f.create_dataset('x', data=x, chunks=(20, 30), **Ebzip(rel=1e-3, fill_value=-9))
        with h5py.File(path, 'r') as f:
            good = f['x'][...]
            info = f['x'].id.get_chunk_info_by_coord((20, 0))
        with open(path, 'rb') as fh:
            original = fh.read()
        bad = self.path('flipped.h5')
        flips = 0
        for i in range(info.size):
            for bit in (0x01, 0x80):
                data = bytearray(original)
                data[info.byte_offset + i] ^= bit
                with open(bad, 'wb') as fh:
                    fh.write(data)
                with h5py.File(bad, 'r') as f:
                    self.assertEqual(f['x'][:20].tobytes(), good[:20].tobytes())
                    with self.assertRaisesRegex(OSError, 'ebzip filter', msg=f'byte {i}'):
                        f['x'][20:]
                flips += 1
        self.assertGreater(flips, 100)

    def test_another_chunks_archive_fails_the_read(self):
        # A valid archive, but not one this dataset's parameters made: a
        # chunk of another bound, of another size, or of the other dtype.
        x = pct.smooth_field((32, 32), np.float32)
        path = self.path('swapped.h5')
        with h5py.File(path, 'w') as f:
            d = f.create_dataset('x', data=x, chunks=(16, 32), **Ebzip(abs=1e-3))
            for archive, why in [
                    (ebzip.compress(x[:16], abs=2e-3), 'another bound'),
                    (ebzip.compress(x[:16], abs=1e-3, fill_value=0.5), 'another bound'),
                    (ebzip.compress(x[:8], abs=1e-3), 'f32 8x32 archive'),
                    (ebzip.compress(x[:16].astype(np.float64), abs=1e-3), 'f64 16x32')]:
                with self.subTest(why=why):
                    d.id.write_direct_chunk((16, 0), archive)
                    with self.assertRaisesRegex(OSError, why):
                        d[16:]
                    self.assertLessEqual(np.abs(d[:16] - x[:16]).max(), 1e-3)

    def test_h5dump_decodes_with_the_plugin_path(self):
        path = self.path('dump.h5')
        x64 = pct.smooth_field((30, 41), np.float64, seed=7)
        x32 = pct.with_specials(pct.smooth_field((30, 41), np.float32, seed=8), -1e10)
        with h5py.File(path, 'w') as f:
            f.create_dataset('g/x64', data=x64, chunks=(8, 16), **Ebzip(rel=1e-4))
            f.create_dataset('x32', data=x32, chunks=(30, 10),
                             **Ebzip(abs=1e-2, fill_value=-1e10))
        with h5py.File(path, 'r') as f:
            decoded = {'/g/x64': f['g/x64'][...], '/x32': f['x32'][...]}
        for name, y in decoded.items():
            with self.subTest(dataset=name):
                rc, values, out = h5dump(path, name, PLUGIN_DIR)
                self.assertEqual(rc, 0, out)
                self.assertEqual(values.size, y.size, out[:2000])
                # %.17g prints every value exactly: h5dump's decode is h5py's.
                printed = values.astype(y.dtype).reshape(y.shape)
                self.assertEqual(printed.tobytes(), y.tobytes())
                rc, values, out = h5dump(path, name, None)
                self.assertNotEqual(rc, 0, 'h5dump decoded without the plugin')
                self.assertEqual(values.size, 0)
        v, s, first, err = pct.bound_violations(x32, decoded['/x32'], 1e-2, -1e10)
        self.assertEqual((v, s), (0, 0), f'first bad {first}, max error {err}')

    def test_netcdf4_file_written_by_netcdf_c(self):
        # nccopy -F applies a filter to a variable as netCDF-C writes it
        # (netCDF4-python 1.6 can only name built-in filters);
        # netCDF4-python then reads the file through the same plugin.
        spec = Ebzip(abs=0.01, fill_value=-1e10).filter_spec
        self.assertEqual(spec, ','.join(map(str, [FILTER_ID, 1, 0, 1, *words(0.01), 1,
                                                  *words(-1e10)])))
        path = self.path('levitus.nc')
        subprocess.run(['nccopy', '-k', 'nc4', '-c', 'ZAXLEVITR/5,YAXLEVITR/90,XAXLEVITR/180',
                        '-F', f'SALT,{spec}', '-F', f'TEMP,{spec}', LEVITUS, path],
                       check=True, env=dict(os.environ, HDF5_PLUGIN_PATH=PLUGIN_DIR))
        header = subprocess.run(['ncdump', '-hs', path], capture_output=True, text=True,
                                check=True).stdout
        self.assertIn(f'SALT:_Filter = "{FILTER_ID},1,1,1,', header)
        with netCDF4.Dataset(LEVITUS) as src, netCDF4.Dataset(path) as nc:
            self.assertEqual(nc.data_model, 'NETCDF4')
            for name in ('SALT', 'TEMP'):
                with self.subTest(variable=name):
                    a, b = src[name], nc[name]
                    self.assertEqual(b.dimensions, a.dimensions)
                    self.assertEqual(b.chunking(), [5, 90, 180])
                    self.assertEqual(b.getncattr('units'), a.getncattr('units'))
                    x, y = a[:], b[:]
                    self.assertTrue((x.mask == y.mask).all())
                    self.assertGreater(x.mask.sum(), 0)
                    v, s, first, err = pct.bound_violations(
                        x.filled(), y.filled(), 0.01, -1e10)
                    self.assertEqual((v, s), (0, 0), f'first bad {first}, max error {err}')
        self.assertLess(os.path.getsize(path), os.path.getsize(LEVITUS) / 5)
        # A corrupt chunk: netCDF reports HDF5's failure, never other values.
        with h5py.File(path, 'r') as f:
            info = f['SALT'].id.get_chunk_info(3)
        with open(path, 'r+b') as fh:
            fh.seek(info.byte_offset + info.size // 2)
            byte = fh.read(1)
            fh.seek(-1, os.SEEK_CUR)
            fh.write(bytes([byte[0] ^ 0x20]))
        with netCDF4.Dataset(path) as nc:
            nc['TEMP'][:]
            with self.assertRaisesRegex(RuntimeError, 'HDF error'):
                nc['SALT'][:]

    def test_import_registers_the_plugin_with_h5py(self):
        # Without HDF5_PLUGIN_PATH, importing ebzip.hdf5 is enough for h5py,
        # and for netCDF4 in the same process (one HDF5 library).
        script = (
            'import h5py, numpy as np, ebzip.hdf5\n'
            'x = np.linspace(0, 1, 4000).reshape(40, 100)\n'
            'with h5py.File("r.h5", "w") as f:\n'
            '    f.create_dataset("x", data=x, chunks=(10, 100), **ebzip.hdf5.Ebzip(abs=1e-5))\n'
            'with h5py.File("r.h5") as f:\n'
            '    assert np.abs(f["x"][:] - x).max() <= 1e-5\n'
            'print(ebzip.hdf5.PLUGIN_PATH)\n')
        env = dict(os.environ)
        env.pop('HDF5_PLUGIN_PATH', None)
        p = subprocess.run([sys.executable, '-c', script], cwd=self.tmp, env=env,
                           capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), os.path.normpath(PLUGIN_DIR))
        p = subprocess.run(['h5dump', '-p', '-H', 'r.h5'], cwd=self.tmp, env=env,
                           capture_output=True, text=True, check=False)
        self.assertIn(f'FILTER_ID {FILTER_ID}', p.stdout)


class PluginLibraryTest(unittest.TestCase):

    def test_exports_only_the_plugin_entry_points(self):
        out = subprocess.run(['nm', '-D', '--defined-only', PLUGIN], capture_output=True,
                             text=True, check=True).stdout
        self.assertEqual(sorted(line.split()[-1] for line in out.splitlines()),
                         ['H5PLget_plugin_info', 'H5PLget_plugin_type'])

    def test_needs_no_other_ebzip_library(self):
        out = subprocess.run(['readelf', '-d', PLUGIN], capture_output=True, text=True,
                             check=True).stdout
        needed = re.findall(r'\(NEEDED\).*\[(.*)\]', out)
        self.assertTrue(any(n.startswith('libhdf5') for n in needed), needed)
        self.assertFalse([n for n in needed if 'ebzip' in n], needed)


if __name__ == '__main__':
    if not os.path.isfile(PLUGIN):
        print(f'FAIL: HDF5_PLUGIN_PATH={PLUGIN_DIR!r} has no libH5Z_ebzip.so')
        sys.exit(1)
    unittest.main()
