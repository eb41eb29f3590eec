#!/usr/bin/env python3
"""Tests of the in-process codec (ebzip.compress/decompress without server=).

Usage:
    python_local_test.py --ebzip PATH --export_field PATH [unittest args...]

with PYTHONPATH pointing at build/python. Run by ctest as python_local_test.

Round trips are checked by python_client_test's float64 checker (nothing
from the code under test); archives are compared byte for byte with what the
`ebzip` command line writes for the same input and options, on real ferret
fields both as raw files and as NetCDF variables (read here with
netCDF4-python, which returns masked arrays). The masked-array test is the
one issue 26 reports: salinity masked at -1e10 with rel=1e-4.
"""

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
import unittest
import warnings

import numpy as np

import ebzip
from ebzip import _ebzip
import python_client_test as pct

LEVITUS = os.path.join(pct.DATA_DIR, 'levitus_climatology.cdf')


def check_round_trip(test, x, archive, y, fill=None):
    """y within the archive's bound of x, specials exact (pct's checker)."""
    abs_bound = ebzip.info(archive)['abs_bound']
    v, s, first, err = pct.bound_violations(x, y, abs_bound, fill)
    test.assertEqual((v, s), (0, 0),
                     f'first bad index {first}, max error {err} > {abs_bound}')
    return abs_bound


class RoundTripTest(unittest.TestCase):

    def test_ranks_dtypes_and_bounds(self):
        for dtype in (np.float32, np.float64):
            for shape in ((5000,), (60, 70), (9, 20, 30), (3, 4, 20, 25)):
                x = pct.with_specials(pct.smooth_field(shape, dtype), -1e30)
                for kwargs in (dict(abs=1e-3), dict(rel=1e-4)):
                    with self.subTest(dtype=dtype, shape=shape, **kwargs):
                        a = ebzip.compress(x, fill_value=-1e30, **kwargs)
                        self.assertIsInstance(a, bytes)
                        y = ebzip.decompress(a)
                        self.assertEqual(y.dtype, np.dtype(dtype))
                        self.assertEqual(y.shape, shape)
                        bound = check_round_trip(self, x, a, y, -1e30)
                        if 'rel' in kwargs:
                            self.assertAlmostEqual(
                                bound, pct.rel_to_abs(x, 1e-4, -1e30),
                                delta=1e-12 * bound)

    def test_any_layout_and_byte_order(self):
        x = pct.smooth_field((40, 50), np.float64)
        reference = ebzip.compress(x, abs=1e-4)
        for variant in (x.astype('>f8'), np.asfortranarray(x),
                        x.T.copy().T, x.tolist()):
            self.assertEqual(ebzip.compress(variant, abs=1e-4), reference)
        # A non-contiguous view compresses the values it shows.
        self.assertEqual(ebzip.compress(x[:, ::2], abs=1e-4),
                         ebzip.compress(x[:, ::2].copy(), abs=1e-4))

    def test_decompress_into_out(self):
        x = pct.smooth_field((30, 40), np.float32)
        a = ebzip.compress(x, rel=1e-3)
        out = np.full((30, 40), np.nan, np.float32)
        self.assertIs(ebzip.decompress(a, out=out), out)
        np.testing.assert_array_equal(out, ebzip.decompress(a))
        bad = [
            (ValueError, np.empty((40, 30), np.float32)),
            (ValueError, np.empty((30, 40), np.float64)),
            (ValueError, np.empty((30, 80), np.float32)[:, ::2]),
            (ValueError, np.empty((30, 40), np.float32).T.copy().T),
            (TypeError, bytearray(4800)),
        ]
        readonly = np.empty((30, 40), np.float32)
        readonly.flags.writeable = False
        bad.append((ValueError, readonly))
        for exc, o in bad:
            with self.subTest(out=getattr(o, 'shape', type(o))):
                with self.assertRaises(exc):
                    ebzip.decompress(a, out=o)

    def test_archive_from_any_buffer(self):
        x = pct.smooth_field((64, 64), np.float32)
        a = ebzip.compress(x, abs=1e-3)
        y = ebzip.decompress(a)
        for data in (bytearray(a), memoryview(a),
                     np.frombuffer(a, np.uint8)):
            np.testing.assert_array_equal(ebzip.decompress(data), y)
        with tempfile.NamedTemporaryFile() as f:
            f.write(a)
            f.flush()
            mapped = np.memmap(f.name, np.uint8, mode='r')
            np.testing.assert_array_equal(ebzip.decompress(mapped), y)

    def test_gpu_codec_gives_the_same_bytes(self):
        # gpu=True: the GPU codec where this build has it and a GPU is
        # visible, the CPU one otherwise; the archive and array must be the
        # CPU codec's either way (tests/gpu/host_codec_test.cc checks on a
        # GPU that it really ran there).
        self.assertIsInstance(ebzip.gpu_available(), bool)
        rng = np.random.default_rng(5)
        for dtype in (np.float32, np.float64):
            x = (np.sin(np.linspace(0, 40, 64 * 50 * 40)).reshape(64, 50, 40)
                 + rng.normal(0, 0.01, (64, 50, 40))).astype(dtype)
            for options in (dict(rel=1e-4), dict(abs=1e-3, predictor='lorenzo',
                                                  lossless='huffman')):
                cpu = ebzip.compress(x, **options)
                gpu = ebzip.compress(x, **options, gpu=True)
                self.assertEqual(gpu, cpu)
                np.testing.assert_array_equal(ebzip.decompress(cpu, gpu=True),
                                              ebzip.decompress(cpu))
        with self.assertRaisesRegex(TypeError, 'gpu='):
            ebzip.compress(x, rel=1e-3, server='127.0.0.1:1', gpu=True)
        with self.assertRaisesRegex(TypeError, 'gpu='):
            ebzip.decompress(cpu, server='127.0.0.1:1', gpu=True)

    def test_version(self):
        self.assertRegex(ebzip.__version__, r'^\d+\.\d+\.\d+$')
        self.assertEqual(ebzip.__version__, _ebzip.__version__)


class CommandLineTest(unittest.TestCase):
    """The same bytes as `ebzip compress`, on real fields."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def cli_archive(self, *args):
        out = os.path.join(self.tmp.name, 'cli.ebz')
        pct.run_cli('compress', '--quiet', '-f', *args, '-o', out)
        with open(out, 'rb') as f:
            return f.read()

    def test_raw_fields_same_bytes_as_cli(self):
        for spec in ('etopo20.cdf:ROSE', 'levitus_climatology.cdf:SALT',
                     'levitus_climatology.cdf:TEMP'):
            path, x, fill = pct.export_field(spec, self.tmp.name)
            cases = [('--rel', '1e-4', {}),
                     ('--abs', '0.01', {'predictor': 'lorenzo'}),
                     ('--rel', '1e-3', {'predictor': 'interp',
                                        'lossless': 'runs'}),
                     ('--rel', '1e-2', {'predictor': 'interp',
                                        'lossless': 'run-values'}),
                     ('--rel', '1e-3', {'predictor': 'lorenzo',
                                        'lossless': 'huffman'})]
            for flag, value, options in cases:
                with self.subTest(spec=spec, bound=flag + value, **options):
                    args = ['--type', pct.cli_type(x.dtype), '--shape',
                            ','.join(map(str, x.shape)), flag, value]
                    if fill is not None:
                        args += ['--fill', repr(fill)]
                    for k, v in options.items():
                        args += [f'--{k}', v]
                    cli = self.cli_archive(*args, path)
                    kw = {flag[2:]: float(value)}
                    with warnings.catch_warnings():
                        warnings.simplefilter('ignore', ebzip.EbzipWarning)
                        local = ebzip.compress(x, fill_value=fill, **kw,
                                               **options)
                    self.assertEqual(local, cli)
                    # And the command line's archive decodes here to what
                    # the command line decodes it to.
                    raw = os.path.join(self.tmp.name, 'cli.raw')
                    ebz = os.path.join(self.tmp.name, 'cli.ebz')
                    pct.run_cli('decompress', '--quiet', '-f', ebz, '-o', raw)
                    expected = np.fromfile(raw, x.dtype).reshape(x.shape)
                    np.testing.assert_array_equal(
                        ebzip.decompress(cli).view(np.uint8),
                        expected.view(np.uint8))

    def test_netcdf_masked_variable_same_bytes_as_cli(self):
        # netCDF4-python masks SALT's _FillValue; the CLI takes it as --fill
        # auto. The mask must end up as that same fill value.
        import netCDF4  # pylint: disable=import-outside-toplevel
        with netCDF4.Dataset(LEVITUS) as ds:
            salt = ds['SALT'][:]
        self.assertIsInstance(salt, np.ma.MaskedArray)
        self.assertTrue(salt.mask.any())
        # The CLI also stores the variable's description (metadata), which
        # the array alone does not have.
        cli = self.cli_archive('--rel', '1e-4', LEVITUS + ':SALT', '--nometadata')
        self.assertEqual(ebzip.compress(salt, rel=1e-4), cli)


class MaskedArrayTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        _, cls.salt, fill = pct.export_field('levitus_climatology.cdf:SALT',
                                             cls.tmp.name)
        assert fill == -1e10, fill

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_issue_26_salt_masked_at_fill(self):
        masked = np.ma.masked_equal(self.salt, -1e10)
        self.assertGreater(masked.mask.sum(), 0)
        with warnings.catch_warnings():
            warnings.simplefilter('error', ebzip.EbzipWarning)
            archive = ebzip.compress(masked, rel=1e-4)
        # Independent: the bound over the ocean points only, in float64.
        ocean = self.salt[~masked.mask].astype(np.float64)
        bound = 1e-4 * (ocean.max() - ocean.min())
        y = ebzip.decompress(archive)
        err = np.abs(y[~masked.mask].astype(np.float64) - ocean)
        self.assertLessEqual(err.max(), bound)
        self.assertLess(bound, 0.01)  # not the 1e6 of a bound over -1e10
        # Masked points come back as the fill, and masked with masked=True.
        self.assertTrue(np.all(y[masked.mask] == np.float32(masked.fill_value)))
        back = ebzip.decompress(archive, masked=True)
        self.assertIsInstance(back, np.ma.MaskedArray)
        np.testing.assert_array_equal(back.mask, masked.mask)

    def test_masked_array_fill_value_choice(self):
        x = pct.smooth_field((50, 60), np.float32)
        mask = np.zeros(x.shape, bool)
        mask[10:20, 5:50] = True
        # Default fill_value (1e20): absent from the data, so it is used,
        # in a copy: the caller's array is not changed.
        m = np.ma.MaskedArray(x.copy(), mask=mask)
        before = m.data.copy()
        a = ebzip.compress(m, abs=1e-3)
        np.testing.assert_array_equal(m.data, before)
        self.assertEqual(ebzip.info(a)['fill_value'], float(np.float32(1e20)))
        back = ebzip.decompress(a, masked=True)
        np.testing.assert_array_equal(back.mask, mask)
        pct_v = pct.bound_violations(x[~mask], back.data[~mask], 1e-3)
        self.assertEqual(pct_v[:2], (0, 0))
        # An explicit fill_value wins over the array's.
        a = ebzip.compress(m, abs=1e-3, fill_value=-5e30)
        self.assertEqual(ebzip.info(a)['fill_value'], float(np.float32(-5e30)))
        # A fill value that unmasked data holds is refused, saying how.
        m.fill_value = float(x[0, 0])
        with self.assertRaisesRegex(ValueError, 'fill_value='):
            ebzip.compress(m, abs=1e-3)
        with self.assertRaisesRegex(ValueError, 'fill_value='):
            ebzip.compress(np.ma.MaskedArray(x, mask=mask), abs=1e-3,
                           fill_value=float(x[1, 1]))
        # One beyond float32's range is refused too.
        with self.assertRaisesRegex(ValueError, 'fill_value='):
            ebzip.compress(np.ma.MaskedArray(x, mask=mask), abs=1e-3,
                           fill_value=1e300)
        # Nothing masked: the data as it is.
        plain = np.ma.MaskedArray(x, mask=np.zeros(x.shape, bool))
        self.assertEqual(ebzip.compress(plain, abs=1e-3),
                         ebzip.compress(x, abs=1e-3))


class ErrorTest(unittest.TestCase):

    def test_bad_arguments(self):
        x = np.ones((4, 4), np.float32)
        cases = [
            (ValueError, dict(abs=0.0)), (ValueError, dict(rel=-1.0)),
            (ValueError, dict(abs=float('nan'))), (ValueError, dict()),
            (ValueError, dict(abs=1, rel=1)), (TypeError, dict(abs='1')),
            (TypeError, dict(abs=True)),
            (ValueError, dict(abs=1, fill_value=float('inf'))),
            (ValueError, dict(abs=1, predictor='bogus')),
            (ValueError, dict(abs=1, lossless='bogus')),
            (ValueError, dict(abs=1, interp_order=2)),
            (ValueError, dict(abs=1, radius=-1)),
            (TypeError, dict(abs=1, radius=1.5)),
            (ValueError, dict(abs=1, block=[0, 0])),  # the codec's check
            (TypeError, dict(abs=1, token='t')),  # remote only
        ]
        for exc, kwargs in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(exc):
                    ebzip.compress(x, **kwargs)
        for exc, a in [(ValueError, np.ones((2,) * 5, np.float32)),
                       (ValueError, np.ones((3, 0), np.float32)),
                       (TypeError, np.ones(4, np.int32))]:
            with self.subTest(shape=a.shape, dtype=a.dtype):
                with self.assertRaises(exc):
                    ebzip.compress(a, abs=1)

    def test_codec_message_reaches_python(self):
        with self.assertRaisesRegex(ValueError, 'block'):
            ebzip.compress(np.ones((8, 8), np.float32), abs=1, block=[0, 0])

    def test_corrupt_archives_raise_data_loss(self):
        x = pct.smooth_field((100, 100), np.float32)
        a = ebzip.compress(x, rel=1e-3)
        flipped = bytearray(a)
        flipped[len(a) // 2] ^= 0x10
        for name, data in [('truncated', a[:-9]), ('flipped', flipped),
                           ('empty', b''), ('noise', os.urandom(1000))]:
            with self.subTest(name):
                with self.assertRaises(ebzip.DataLoss) as cm:
                    ebzip.decompress(data)
                self.assertEqual(cm.exception.code.name, 'DATA_LOSS')
                self.assertTrue(cm.exception.message)
        with self.assertRaisesRegex(ebzip.DataLoss, 'CRC|checksum|crc'):
            ebzip.decompress(flipped)

    def test_max_output_bytes(self):
        a = ebzip.compress(np.zeros((100, 100), np.float32), abs=1)
        with self.assertRaises(ebzip.ResourceExhausted):
            ebzip.decompress(a, max_output_bytes=39999)
        self.assertEqual(ebzip.decompress(a, max_output_bytes=40000).shape,
                         (100, 100))


class SafetyWarningTest(unittest.TestCase):
    """ebzip.safety's rule: warn on an undeclared fill, not on real data."""

    def warnings_of(self, x, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            ebzip.compress(x, **kwargs)
        return [w for w in caught if issubclass(w.category, ebzip.EbzipWarning)]

    def test_undeclared_fill_warns(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        _, salt, _ = pct.export_field('levitus_climatology.cdf:SALT', tmp.name)
        smooth = pct.smooth_field((200, 300), np.float32)
        spike = smooth.copy()
        spike[17, 23] = 1e30          # one wild value
        sentinel = smooth.copy()
        sentinel[:20] = -9999.0       # a sentinel fill on 10 % of the rows
        for name, x in [('salt -1e10', salt), ('one spike', spike),
                        ('-9999 rows', sentinel)]:
            with self.subTest(name):
                caught = self.warnings_of(x, rel=1e-4)
                self.assertEqual([w.category for w in caught],
                                 [ebzip.DominatedRangeWarning])
                # It points at this file, the caller's line.
                self.assertEqual(caught[0].filename, __file__)
        # Declared, it is quiet; an absolute bound does not depend on it.
        self.assertEqual(self.warnings_of(salt, rel=1e-4, fill_value=-1e10), [])
        self.assertEqual(self.warnings_of(salt, abs=1e-3), [])

    def test_real_data_does_not_warn(self):
        rng = np.random.default_rng(3)
        rain = np.where(rng.random((300, 300)) < 0.8, 0.0,
                        rng.gamma(0.5, 4.0, (300, 300))).astype(np.float32)
        cases = [
            ('smooth', pct.smooth_field((200, 300), np.float32)),
            ('lognormal', rng.lognormal(0, 2, 200000).astype(np.float32)),
            ('binary', (rng.random((200, 300)) < 0.3).astype(np.float32)),
            ('rain, mostly 0', rain),
            ('kelvin', 273 + 30 * pct.smooth_field((100, 100), np.float32)),
            ('constant', np.full((50, 50), 7.0, np.float32)),
        ]
        for name, x in cases:
            with self.subTest(name):
                caught = self.warnings_of(x, rel=1e-3)
                self.assertEqual([str(w.message) for w in caught
                                  if w.category is ebzip.DominatedRangeWarning],
                                 [])

    def test_larger_archive_warns(self):
        noise = np.random.default_rng(5).standard_normal(100000)
        caught = self.warnings_of(noise.astype(np.float32), abs=1e-9)
        self.assertEqual([w.category for w in caught],
                         [ebzip.LargerArchiveWarning])
        self.assertIn('larger', str(caught[0].message))
        smooth = pct.smooth_field((200, 300), np.float32)
        self.assertEqual(self.warnings_of(smooth, abs=1e-2), [])

    def test_warnings_can_be_errors(self):
        noise = np.random.default_rng(5).standard_normal(10000)
        with warnings.catch_warnings():
            warnings.simplefilter('error', ebzip.EbzipWarning)
            with self.assertRaises(ebzip.LargerArchiveWarning):
                ebzip.compress(noise, abs=1e-12)


class ThreadTest(unittest.TestCase):

    def test_gil_is_released_while_the_codec_runs(self):
        # An array large enough that one compression takes a while here,
        # however fast or busy the machine.
        n = 1 << 20
        while True:
            x = np.sin(np.arange(n) * 1e-3) + 1e-3 * np.cos(np.arange(n) * 0.37)
            start = time.monotonic()
            ebzip.compress(x, abs=1e-7)
            if time.monotonic() - start >= 0.2 or n >= 1 << 26:
                break
            n *= 4
        done = threading.Event()
        ticks = 0

        def work():
            ebzip.compress(x, abs=1e-7)
            done.set()

        t = threading.Thread(target=work)
        t.start()
        time.sleep(0.01)
        # While the codec runs this thread must keep executing Python code;
        # with the GIL held it would stall until the compression ended.
        while not done.is_set():
            ticks += 1
        t.join()
        self.assertGreater(ticks, 10000)

    def test_threads_give_identical_archives(self):
        x = pct.smooth_field((256, 512), np.float32)
        expected = ebzip.compress(x, rel=1e-4)
        results = [None] * 4

        def work(i):
            results[i] = ebzip.compress(x, rel=1e-4)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [expected] * 4)


class RemoteTimeoutTest(unittest.TestCase):
    """Issue 27: the remote client has a deadline by default."""

    def test_default_and_explicit_deadline(self):
        self.assertEqual(ebzip.DEFAULT_TIMEOUT, 300.0)
        with ebzip.Client('127.0.0.1:1') as c:
            self.assertEqual(c._timeout, 300.0)  # pylint: disable=protected-access
        with ebzip.Client('127.0.0.1:1', timeout=None) as c:
            self.assertIsNone(c._timeout)  # pylint: disable=protected-access
        # A server that accepts connections and never answers: the call ends
        # at its deadline rather than hanging.
        with socket.socket() as silent:
            silent.bind(('127.0.0.1', 0))
            silent.listen(8)
            address = '127.0.0.1:%d' % silent.getsockname()[1]
            start = time.monotonic()
            with self.assertRaises((ebzip.DeadlineExceeded, ebzip.Unavailable)):
                ebzip.compress(np.ones(10, np.float32), address, abs=1,
                               timeout=1.0)
            self.assertLess(time.monotonic() - start, 30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--ebzip', default=os.environ.get('EBZIP'))
    parser.add_argument('--export_field',
                        default=os.environ.get('EBZIP_EXPORT_FIELD'))
    args, rest = parser.parse_known_args()
    for name in ('ebzip', 'export_field'):
        path = getattr(args, name)
        if not path or not os.access(path, os.X_OK):
            parser.error('--%s: not an executable: %r' % (name, path))
    pct.EBZIP = os.path.abspath(args.ebzip)
    pct.EXPORT_FIELD = os.path.abspath(args.export_field)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
