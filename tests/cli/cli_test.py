#!/usr/bin/env python3
"""End-to-end tests of the `ebzip` command line, through the real binary.

Usage: cli_test.py PATH/TO/ebzip [unittest arguments...]

Python 3 standard library only. Every result is checked by this script's own
double-precision comparison (and, for NetCDF inputs, against values read by
its own classic-format reader), not only by `ebzip compare`. Exit codes are
the documented ones: 0 success, 1 failure, 2 bad usage; a failed run must
leave neither its -o file nor any `*.partial-*` file behind. An -o that is
a FIFO or a device gets the bytes a regular file gets and stays what it was
(SpecialOutputTest); decompress --max_output_bytes refuses a larger array
before the output exists (MaxOutputBytesTest). NetCDF-4/HDF5 outputs are
read back with Debian's ncdump and h5dump (NetcdfOutputTest); compress's
warnings are checked against the Python package's safety.py where NumPy is
importable (SafetyWarningTest).
"""

import array
import json
import math
import os
import random
import re
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

EBZIP = None  # set from argv in main
DATA_DIR = os.environ.get("EBZIP_FERRET_DATA") or "/usr/share/ferret-vis/data"

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


# --------------------------------------------------------------------------
# Raw arrays: bytes <-> Python floats, and bit patterns for exact checks.

def to_bytes(values, typecode):
    a = array.array(typecode, values)
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def from_bytes(data, typecode):
    a = array.array(typecode)
    a.frombytes(data)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def bits_of(data, typecode):
    """The raw bit patterns of the values, for bit-exact comparisons."""
    return from_bytes(data, "I" if typecode == "f" else "Q")


def is_subnormal(x):
    return x != 0 and math.isfinite(x) and abs(x) < (1.1754943508222875e-38)


def must_be_exact(x, typecode, fill_bits, bits):
    """NaN, +-Inf, -0.0, subnormals and the fill value round-trip bit for bit."""
    if not math.isfinite(x):
        return True
    if x == 0 and math.copysign(1.0, x) < 0:
        return True
    if typecode == "f" and is_subnormal(x):
        return True
    if typecode == "d" and x != 0 and abs(x) < 2.2250738585072014e-308:
        return True
    return fill_bits is not None and bits == fill_bits


def check_bound(original, decoded, typecode, abs_bound, fill=None):
    """Returns (violations, special mismatches, first bad index, max error),
    computed in double precision. `original` and `decoded` are raw bytes."""
    xs, ys = from_bytes(original, typecode), from_bytes(decoded, typecode)
    xb, yb = bits_of(original, typecode), bits_of(decoded, typecode)
    if len(xs) != len(ys):
        raise AssertionError("sizes differ: %d vs %d values" % (len(xs), len(ys)))
    fill_bits = None
    if fill is not None:
        fill_bits = bits_of(to_bytes([fill], typecode), typecode)[0]
    violations = special = 0
    first_bad = None
    max_error = 0.0
    for i in range(len(xs)):
        x, y = xs[i], ys[i]
        if must_be_exact(x, typecode, fill_bits, xb[i]):
            bad = xb[i] != yb[i]
            special += bad
        else:
            err = abs(x - y)
            bad = not (err <= abs_bound)
            if math.isfinite(err):
                max_error = max(max_error, err)
            violations += bad
        if bad and first_bad is None:
            first_bad = i
    return violations, special, first_bad, max_error


def finite_range(values, fill_bits=None, bits=None):
    lo, hi = math.inf, -math.inf
    for i, x in enumerate(values):
        if not math.isfinite(x):
            continue
        if fill_bits is not None and bits[i] == fill_bits:
            continue
        lo = min(lo, x)
        hi = max(hi, x)
    return lo, hi


# --------------------------------------------------------------------------
# A reader for one variable of a classic netCDF file (CDF-1 and CDF-2),
# written from the format specification, independent of ebzip's loaders.

NC_TYPES = {1: ("b", 1), 2: ("c", 1), 3: ("h", 2), 4: ("i", 4), 5: ("f", 4), 6: ("d", 8)}
NC_DIMENSION, NC_VARIABLE, NC_ATTRIBUTE = 0x0A, 0x0B, 0x0C


class CdfVariable:
    def __init__(self, shape, typecode, data, attributes):
        self.shape = shape          # C order, slowest first
        self.typecode = typecode    # "f" or "d"
        self.data = data            # little-endian raw bytes, C order
        self.attributes = attributes

    def attribute_value(self, name):
        if name not in self.attributes:
            return None
        nc_type, values = self.attributes[name]
        return values[0] if nc_type in (5, 6) and values else None


def read_cdf_variable(path, var_name):
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:3] != b"CDF" or buf[3] not in (1, 2):
        raise ValueError("%s: not a classic netCDF file" % path)
    offset_size = 4 if buf[3] == 1 else 8
    pos = 4

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from(">" + fmt, buf, pos)
        pos += struct.calcsize(">" + fmt)
        return values[0] if len(values) == 1 else values

    def name():
        nonlocal pos
        n = take("I")
        s = buf[pos:pos + n].decode("utf-8")
        pos += (n + 3) // 4 * 4
        return s

    def attributes():
        nonlocal pos
        tag, count = take("I"), take("I")
        if tag not in (0, NC_ATTRIBUTE):
            raise ValueError("bad attribute list tag %d" % tag)
        atts = {}
        for _ in range(count):
            att_name = name()
            nc_type, nelems = take("I"), take("I")
            code, size = NC_TYPES[nc_type]
            raw = buf[pos:pos + nelems * size]
            pos += (nelems * size + 3) // 4 * 4
            atts[att_name] = (nc_type, struct.unpack(">%d%s" % (nelems, code), raw))
        return atts

    numrecs = take("I")
    tag, count = take("I"), take("I")
    if tag not in (0, NC_DIMENSION):
        raise ValueError("bad dimension list tag %d" % tag)
    dims = [(name(), take("I")) for _ in range(count)]
    attributes()  # global
    tag, count = take("I"), take("I")
    if tag not in (0, NC_VARIABLE):
        raise ValueError("bad variable list tag %d" % tag)
    variables = []
    for _ in range(count):
        v_name = name()
        dimids = [take("I") for _ in range(take("I"))]
        atts = attributes()
        nc_type, vsize = take("I"), take("I")
        begin = take("I" if offset_size == 4 else "Q")
        is_record = bool(dimids) and dims[dimids[0]][1] == 0
        variables.append((v_name, dimids, atts, nc_type, vsize, begin, is_record))

    record_vars = [v for v in variables if v[6]]
    for v_name, dimids, atts, nc_type, vsize, begin, is_record in variables:
        if v_name != var_name:
            continue
        if nc_type not in (5, 6):
            raise ValueError("%s is not float or double" % var_name)
        code, size = NC_TYPES[nc_type]
        shape = [numrecs if (is_record and i == 0) else dims[d][1]
                 for i, d in enumerate(dimids)]
        slab = size * math.prod(shape[1:] if is_record else shape)
        if is_record:
            # One record holds a slab of every record variable, each padded
            # to 4 bytes, except when there is only one record variable.
            recsize = slab if len(record_vars) == 1 else sum(v[4] for v in record_vars)
            big = b"".join(buf[begin + r * recsize:begin + r * recsize + slab]
                           for r in range(numrecs))
        else:
            big = buf[begin:begin + slab]
        if len(big) != size * math.prod(shape):
            raise ValueError("%s: %s is truncated" % (path, var_name))
        a = array.array(code)
        a.frombytes(big)
        if sys.byteorder == "little":
            a.byteswap()  # netCDF is big-endian
        return CdfVariable(shape, code, to_bytes(a, code), atts)
    raise KeyError("%s has no variable %s" % (path, var_name))


# --------------------------------------------------------------------------

def smooth_field(n, seed, typecode):
    rng = random.Random(seed)
    values = [math.sin(i * 0.003) * 50 + math.cos(i * 0.0007) * 20 + rng.gauss(0, 0.05)
              for i in range(n)]
    if typecode == "f":
        values = list(array.array("f", values))  # representable as float32
    return values


def with_special_values(values, typecode):
    """Plants NaN (with a payload), +-Inf, -0.0 and subnormals into a copy."""
    v = list(values)
    v[0] = math.nan
    v[1] = math.inf
    v[2] = -math.inf
    v[3] = -0.0
    v[4] = 1e-40 if typecode == "f" else 1e-310
    v[5] = -1e-42 if typecode == "f" else -4e-320
    data = bytearray(to_bytes(v, typecode))
    # A NaN with a payload, set bit by bit.
    nan_bits = 0x7FC12345 if typecode == "f" else 0x7FF8000000ABCDEF
    fmt = "<I" if typecode == "f" else "<Q"
    struct.pack_into(fmt, data, struct.calcsize(fmt) * 7, nan_bits)
    return bytes(data)


class CliTestCase(unittest.TestCase):

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ebzip_cli_test_")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, data):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def read(self, name):
        with open(self.path(name) if not os.path.isabs(name) else name, "rb") as f:
            return f.read()

    def ebzip(self, *args, expect=EXIT_OK):
        """Runs ebzip, asserts its exit code, returns the CompletedProcess."""
        proc = subprocess.run([EBZIP] + [str(a) for a in args], capture_output=True,
                              text=True, cwd=self.dir, timeout=120)
        self.assertEqual(
            proc.returncode, expect,
            "ebzip %s: exit %d, expected %d\nstdout: %s\nstderr: %s" %
            (" ".join(map(str, args)), proc.returncode, expect, proc.stdout, proc.stderr))
        if expect != EXIT_OK:
            self.assertTrue(proc.stderr.strip(),
                            "ebzip %s failed without a message on stderr" % " ".join(args))
        return proc

    def partials(self):
        return [f for f in os.listdir(self.dir) if ".partial-" in f]

    def assert_failed_cleanly(self, output, expect, *args):
        """Runs ebzip expecting failure; checks no output and no partial files."""
        existed = os.path.exists(output)
        before = self.read(output) if existed else None
        proc = self.ebzip(*args, expect=expect)
        if existed:
            self.assertEqual(self.read(output), before, "failed run changed " + output)
        else:
            self.assertFalse(os.path.exists(output), "failed run left " + output)
        self.assertEqual(self.partials(), [], "failed run left partial files")
        return proc

    def compress_raw(self, raw_name, typecode, shape, bound_flag, bound, out_name, *extra):
        return self.ebzip("compress", "--type", "f32" if typecode == "f" else "f64",
                          "--shape", ",".join(map(str, shape)), bound_flag, repr(bound),
                          raw_name, "-o", out_name, *extra)

    def assert_within(self, original, decoded, typecode, abs_bound, fill=None):
        violations, special, first, max_error = check_bound(
            original, decoded, typecode, abs_bound, fill)
        self.assertEqual(
            (violations, special), (0, 0),
            "bound %r: %d violations, %d special mismatches, first bad index %s, "
            "max error %r" % (abs_bound, violations, special, first, max_error))
        return max_error

    def info(self, archive):
        return self.ebzip("info", archive).stdout

    def archive_abs_bound(self, archive):
        m = re.search(r"-> absolute ([0-9.eE+-]+)", self.info(archive))
        self.assertIsNotNone(m, "ebzip info prints no absolute bound")
        return float(m.group(1))


class RawRoundTripTest(CliTestCase):
    SHAPE = (20, 30, 40)

    def round_trip(self, typecode, bound_flag, bound):
        n = math.prod(self.SHAPE)
        original = with_special_values(smooth_field(n, 7, typecode), typecode)
        self.write("in.raw", original)
        self.compress_raw("in.raw", typecode, self.SHAPE, bound_flag, bound, "a.ebz")
        self.ebzip("decompress", "a.ebz", "-o", "out.raw")
        decoded = self.read("out.raw")
        self.assertEqual(len(decoded), len(original))
        if bound_flag == "--abs":
            abs_bound = bound
        else:
            values = from_bytes(original, typecode)
            lo, hi = finite_range(values)
            abs_bound = bound * (hi - lo)
        # The archive may promise a tighter bound than asked, never a looser.
        self.assertLessEqual(self.archive_abs_bound("a.ebz"), abs_bound * (1 + 1e-8))
        max_error = self.assert_within(original, decoded, typecode, abs_bound)
        self.assertGreater(max_error, 0, "lossy codec returned the input unchanged?")
        # ebzip compare agrees with the independent check.
        self.ebzip("compare", "--type", "f32" if typecode == "f" else "f64", "in.raw",
                   "out.raw", "--abs", repr(abs_bound))
        self.assertEqual(self.partials(), [])

    def test_f32_abs(self):
        self.round_trip("f", "--abs", 1e-3)

    def test_f32_rel(self):
        self.round_trip("f", "--rel", 1e-4)

    def test_f64_abs(self):
        self.round_trip("d", "--abs", 1e-6)

    def test_f64_rel(self):
        self.round_trip("d", "--rel", 1e-5)

    def test_f32_many_frames_without_gap_array(self):
        n = math.prod(self.SHAPE)
        original = to_bytes(smooth_field(n, 11, "f"), "f")
        self.write("in.raw", original)
        self.compress_raw("in.raw", "f", self.SHAPE, "--abs", 0.01, "a.ebz",
                          "--frame_elements", str(30 * 40 * 4), "--gap_array=false")
        info = self.info("a.ebz")
        m = re.search(r"frames\s+(\d+) of", info)
        self.assertIsNotNone(m, info)
        self.assertGreater(int(m.group(1)), 1, info)
        self.assertRegex(info, r"gap array no")
        self.ebzip("decompress", "a.ebz", "-o", "out.raw", "--decoder", "selfsync")
        self.assert_within(original, self.read("out.raw"), "f", 0.01)


class NetcdfTest(CliTestCase):

    def source(self, file_name):
        path = os.path.join(DATA_DIR, file_name)
        self.assertTrue(os.path.isfile(path),
                        "%s missing: install Debian's ferret-datasets "
                        "(scripts/install_deps.sh) or set EBZIP_FERRET_DATA" % path)
        return path

    def test_etopo20_rose_rel(self):
        path = self.source("etopo20.cdf")
        var = read_cdf_variable(path, "ROSE")
        self.assertEqual(var.shape, [540, 1081])  # ncdump -h etopo20.cdf
        self.assertEqual(var.typecode, "f")
        fill = var.attribute_value("_FillValue")
        values = from_bytes(var.data, "f")
        lo, hi = finite_range(values, bits_of(to_bytes([fill], "f"), "f")[0],
                              bits_of(var.data, "f"))
        self.assertLess(lo, -1000)  # relief in metres: ocean floor and mountains
        self.assertGreater(hi, 1000)
        rel = 1e-4
        abs_bound = rel * (hi - lo)

        self.ebzip("compress", "--rel", repr(rel), path + ":ROSE", "-o", "rose.ebz")
        info = self.info("rose.ebz")
        self.assertIn("f32 540x1081", info)
        self.assertLessEqual(self.archive_abs_bound("rose.ebz"), abs_bound * (1 + 1e-8))
        self.ebzip("decompress", "rose.ebz", "-o", "rose.raw")
        self.assert_within(var.data, self.read("rose.raw"), "f", abs_bound, fill)

    def test_ocean_atlas_temp_auto_fill(self):
        path = self.source("ocean_atlas_subset.nc")
        var = read_cdf_variable(path, "TEMP")
        self.assertEqual(var.shape, [12, 19, 90, 180])  # a record variable
        fill = var.attribute_value("_FillValue")
        self.assertEqual(fill, array.array("f", [-1e34])[0])
        fill_bits = bits_of(to_bytes([fill], "f"), "f")[0]
        bits = bits_of(var.data, "f")
        fills = sum(1 for b in bits if b == fill_bits)
        self.assertGreater(fills, 0, "TEMP was expected to hold land (fill) points")
        values = from_bytes(var.data, "f")
        lo, hi = finite_range(values, fill_bits, bits)
        self.assertLess(hi - lo, 100, "temperatures in degrees C")

        # REL with the fill left out of the range (--fill auto is the default):
        # were -1e34 counted, the bound would be about 1e30.
        rel = 1e-4
        abs_bound = rel * (hi - lo)
        self.ebzip("compress", "--rel", repr(rel), path + ":TEMP", "-o", "temp.ebz")
        info = self.info("temp.ebz")
        self.assertIn("f32 12x19x90x180", info)
        self.assertRegex(info, r"fill value\s+-9\.99999979e\+33")
        self.assertLessEqual(self.archive_abs_bound("temp.ebz"), abs_bound * (1 + 1e-8))
        self.ebzip("decompress", "temp.ebz", "-o", "temp.raw")
        decoded = self.read("temp.raw")
        self.assert_within(var.data, decoded, "f", abs_bound, fill)
        # And ebzip compare, told the fill, agrees.
        self.write("temp_orig.raw", var.data)
        self.ebzip("compare", "--type", "f32", "--fill", repr(fill), "temp_orig.raw",
                   "temp.raw", "--abs", repr(abs_bound))


class InfoTest(CliTestCase):

    def test_prints_shape_and_ratio(self):
        shape = (16, 25, 30)
        original = to_bytes(smooth_field(math.prod(shape), 3, "f"), "f")
        self.write("in.raw", original)
        self.compress_raw("in.raw", "f", shape, "--abs", 0.01, "a.ebz")
        info = self.info("a.ebz")
        self.assertIn("16x25x30", info)
        m = re.search(r"ratio ([0-9.]+)", info)
        self.assertIsNotNone(m, info)
        expected = len(original) / os.path.getsize(self.path("a.ebz"))
        self.assertGreater(expected, 1)
        self.assertAlmostEqual(float(m.group(1)), expected, delta=0.0015)


class CompareTest(CliTestCase):

    def setUp(self):
        super().setUp()
        self.a = smooth_field(5000, 5, "f")
        self.write("a.raw", to_bytes(self.a, "f"))

    def test_within_bound_exits_0(self):
        b = list(array.array("f", [x + 0.004 for x in self.a]))
        self.write("b.raw", to_bytes(b, "f"))
        self.ebzip("compare", "--type", "f32", "a.raw", "b.raw", "--abs", "0.005")

    def test_violation_exits_1(self):
        b = list(self.a)
        b[1234] += 0.02  # one point beyond the bound
        self.write("b.raw", to_bytes(b, "f"))
        proc = self.ebzip("compare", "--type", "f32", "a.raw", "b.raw", "--abs", "0.01",
                          expect=EXIT_FAILURE)
        self.assertIn("1 values exceed", proc.stderr)
        self.ebzip("compare", "--type", "f32", "a.raw", "b.raw", "--abs", "0.03")

    def test_special_value_mismatch_exits_1(self):
        a = list(self.a)
        a[10] = math.nan
        self.write("a.raw", to_bytes(a, "f"))
        self.write("b.raw", to_bytes(self.a, "f"))
        self.ebzip("compare", "--type", "f32", "a.raw", "b.raw", "--abs", "1e9",
                   expect=EXIT_FAILURE)

    def test_f64(self):
        a = smooth_field(3000, 9, "d")
        self.write("a64.raw", to_bytes(a, "d"))
        b = list(a)
        b[7] += 1e-6
        self.write("b64.raw", to_bytes(b, "d"))
        self.ebzip("compare", "--type", "f64", "a64.raw", "b64.raw", "--abs", "2e-6")
        self.ebzip("compare", "--type", "f64", "a64.raw", "b64.raw", "--abs", "5e-7",
                   expect=EXIT_FAILURE)


class ErrorsTest(CliTestCase):
    SHAPE = (32, 50)

    def setUp(self):
        super().setUp()
        self.original = to_bytes(smooth_field(math.prod(self.SHAPE), 1, "f"), "f")
        self.write("in.raw", self.original)
        self.compress_raw("in.raw", "f", self.SHAPE, "--abs", 0.001, "good.ebz")
        self.archive = self.read("good.ebz")
        self.ebzip("decompress", "good.ebz", "-o", "good.raw")
        self.decoded = self.read("good.raw")
        self.out = self.path("out")

    def compress_args(self, *flags):
        return ["compress", "--type", "f32", "--shape", "32,50", *flags, "in.raw"]

    def test_usage_errors_exit_2(self):
        o = ["-o", self.out]
        # (arguments, a word the message must contain so the user knows why)
        cases = {
            "missing -o": (self.compress_args("--abs", "1e-3"), "-o"),
            "both --abs and --rel": (
                self.compress_args("--abs", "1e-3", "--rel", "1e-3") + o, "--rel"),
            "neither --abs nor --rel": (self.compress_args() + o, "--abs"),
            "--abs 0": (self.compress_args("--abs", "0") + o, "bound"),
            "--abs nan": (self.compress_args("--abs", "nan") + o, "bound"),
            "--abs -1": (self.compress_args("--abs", "-1") + o, "bound"),
            "--rel inf": (self.compress_args("--rel", "inf") + o, "bound"),
            "wrong --shape": (["compress", "--type", "f32", "--shape", "32,51", "--abs", "1",
                               "in.raw"] + o, "--shape"),
            "--shape of the wrong type size": (["compress", "--type", "f64", "--shape",
                                                "32,50", "--abs", "1", "in.raw"] + o,
                                               "--shape"),
            "unknown --type": (["compress", "--type", "f16", "--shape", "32,50", "--abs", "1",
                                "in.raw"] + o, "f16"),
            "unknown command": (["squeeze", "in.raw"] + o, "squeeze"),
            "no command": ([], "usage"),
            "decompress without -o": (["decompress", "good.ebz"], "-o"),
            "decompress, two inputs": (["decompress", "good.ebz", "good.ebz"] + o, "usage"),
        }
        for what, (args, word) in cases.items():
            with self.subTest(what):
                proc = self.assert_failed_cleanly(self.out, EXIT_USAGE, *args)
                self.assertIn(word.lower(), proc.stderr.lower())

    def test_failures_exit_1(self):
        self.write("truncated_half.ebz", self.archive[:len(self.archive) // 2])
        self.write("truncated_tail.ebz", self.archive[:-1])
        self.write("truncated_header.ebz", self.archive[:10])
        self.write("empty.ebz", b"")
        flipped = bytearray(self.archive)
        flipped[len(flipped) // 2] ^= 0x04
        self.write("flipped.ebz", bytes(flipped))
        o = ["-o", self.out]
        missing_nc = self.path("missing.nc")
        cases = {
            "missing raw input": (["compress", "--type", "f32", "--shape", "32,50", "--abs",
                                   "1", "missing.raw"] + o, "missing.raw"),
            "missing NetCDF input": (["compress", "--abs", "1", missing_nc + ":ROSE"] + o,
                                     missing_nc),
            "missing archive": (["decompress", "missing.ebz"] + o, "missing.ebz"),
            "truncated archive (half)": (["decompress", "truncated_half.ebz"] + o, "corrupt"),
            "truncated archive (last byte)": (["decompress", "truncated_tail.ebz"] + o,
                                              "corrupt"),
            "truncated archive (header)": (["decompress", "truncated_header.ebz"] + o,
                                           "corrupt"),
            "empty archive": (["decompress", "empty.ebz"] + o, "corrupt"),
            "bit-flipped archive": (["decompress", "flipped.ebz"] + o, "corrupt"),
            "not an archive": (["decompress", "in.raw"] + o, "not an ebzip archive"),
            "info on a truncated archive": (["info", "truncated_half.ebz"], "corrupt"),
            "info on not an archive": (["info", "in.raw"], "not an ebzip archive"),
        }
        for what, (args, word) in cases.items():
            with self.subTest(what):
                proc = self.assert_failed_cleanly(self.out, EXIT_FAILURE, *args)
                self.assertIn(word.lower(), proc.stderr.lower())

    def test_existing_output_replaced_only_on_success(self):
        # With -f (without it the run would stop before trying).
        self.write("out", b"precious")
        self.write("flipped.ebz", self.archive[:100] + bytes([self.archive[100] ^ 1]) +
                   self.archive[101:])
        proc = self.assert_failed_cleanly(self.out, EXIT_FAILURE, "decompress", "flipped.ebz",
                                          "-o", self.out, "-f")
        self.assertNotIn("exists", proc.stderr)
        self.assertEqual(self.read("out"), b"precious")
        self.assert_failed_cleanly(self.out, EXIT_USAGE, *self.compress_args("--abs", "0"),
                                   "-o", self.out, "-f")
        self.assertEqual(self.read("out"), b"precious")
        self.ebzip("decompress", "good.ebz", "-o", self.out, "-f")
        self.assertEqual(self.read("out"), self.decoded)
        self.assertEqual(self.partials(), [])

    def test_existing_output_needs_force(self):
        """An existing regular file (or a link to one) is kept, exit 1, unless
        -f / --force; a new name needs neither."""
        self.write("out", b"precious")
        os.symlink(self.out, self.path("link"))
        runs = {
            "decompress": ["decompress", "good.ebz"],
            "compress": self.compress_args("--abs", "1e-3"),
        }
        for what, args in runs.items():
            for target in (self.out, self.path("link")):
                with self.subTest(what, target=target):
                    proc = self.assert_failed_cleanly(self.out, EXIT_FAILURE, *args, "-o", target)
                    self.assertIn("exists", proc.stderr)
                    self.assertIn("-f", proc.stderr)
                    self.assertEqual(self.read("out"), b"precious")
                    self.assertTrue(os.path.islink(self.path("link")))
        self.ebzip("decompress", "good.ebz", "-o", self.out, "--force")
        self.assertEqual(self.read("out"), self.decoded)
        self.ebzip(*self.compress_args("--abs", "1e-3"), "-o", "link", "-f")
        self.assertTrue(os.path.islink(self.path("link")))
        self.assertEqual(self.read("out"), self.archive)
        self.assertEqual(self.partials(), [])

    def test_every_single_bit_flip_is_rejected_or_harmless(self):
        # Flipping one bit anywhere must give a clean failure (exit 1, no
        # output) or, where the bit is padding no checksum covers, exactly
        # the original decoding. Never a crash, never different values.
        # Every 13th byte (a prime stride, so offsets fall on every alignment)
        # and all of the last 64 (trailer and frame index): ~200 runs.
        offsets = sorted(set(range(0, len(self.archive), 13)) |
                         set(range(max(0, len(self.archive) - 64), len(self.archive))))
        rejected = 0
        for offset in offsets:
            data = bytearray(self.archive)
            data[offset] ^= 1 << (offset % 8)
            self.write("bad.ebz", bytes(data))
            if os.path.exists(self.out):
                os.remove(self.out)
            proc = subprocess.run([EBZIP, "decompress", "bad.ebz", "-o", self.out],
                                  capture_output=True, cwd=self.dir, timeout=60)
            with self.subTest(offset=offset):
                self.assertIn(proc.returncode, (EXIT_OK, EXIT_FAILURE),
                              "offset %d: exit %d, stderr %s" %
                              (offset, proc.returncode, proc.stderr))
                if proc.returncode == EXIT_OK:
                    self.assertEqual(self.read("out"), self.decoded,
                                     "offset %d decoded into different values" % offset)
                else:
                    rejected += 1
                    self.assertTrue(proc.stderr.strip())
                    self.assertFalse(os.path.exists(self.out))
                self.assertEqual(self.partials(), [])
        sys.stderr.write("\n  %d of %d bit flips rejected, the rest decoded identically "
                         "(archive %d bytes)\n" % (rejected, len(offsets), len(self.archive)))
        self.assertGreater(rejected, len(offsets) // 2)

    def test_malformed_number_is_a_usage_error(self):
        self.assert_failed_cleanly(self.out, EXIT_USAGE, *self.compress_args("--abs", "abc"),
                                   "-o", self.out)


class FifoReader:
    """Reads a FIFO to its end on a thread of its own, as the other end of a
    pipe would; `data` holds what was read once `finish` has returned."""

    def __init__(self, path):
        self.path = path
        self.data = None
        self.error = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        try:
            with open(self.path, "rb") as f:  # waits for a writer
                self.data = f.read()
        except OSError as e:
            self.error = e

    def finish(self, timeout=60):
        """Waits for the end of the data. A writer that never opened the FIFO
        leaves the reader waiting in open: opening it for writing here (and
        closing it at once) lets the reader see an empty stream."""
        self._thread.join(1)
        if self._thread.is_alive():
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass  # the reader has opened it meanwhile
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError("the FIFO's reader did not finish")
        if self.error is not None:
            raise self.error
        return self.data


class SpecialOutputTest(CliTestCase):
    """-o on something other than a regular file: written in place, never
    replaced; and symbolic links, whose target is replaced, not the link."""

    SHAPE = (24, 40)

    def setUp(self):
        super().setUp()
        self.write("in.raw", to_bytes(smooth_field(math.prod(self.SHAPE), 4, "f"), "f"))
        self.compress_args = ["compress", "--type", "f32", "--shape", "24,40", "--abs", "0.01",
                              "in.raw"]
        # What a regular file gets; a special file must get the same bytes.
        self.ebzip(*self.compress_args, "-o", "ref.ebz")
        self.ebzip("decompress", "ref.ebz", "-o", "ref.raw")

    def through_fifo(self, *args):
        """Runs ebzip ARGS -o FIFO with a reader on the FIFO; returns what the
        reader got, after checking the FIFO is still one."""
        fifo = self.path("fifo")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        reader = FifoReader(fifo)
        try:
            self.ebzip(*args, "-o", fifo)
        finally:
            received = reader.finish()
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")
        self.assertEqual(self.partials(), [])
        return received

    def test_fifo_output_is_written_in_place(self):
        self.assertEqual(self.through_fifo(*self.compress_args), self.read("ref.ebz"))
        self.assertEqual(self.through_fifo("decompress", "ref.ebz"), self.read("ref.raw"))

    def test_char_device_output_is_written_in_place(self):
        if os.geteuid() != 0:
            self.skipTest("making a device node needs root")
        dev = self.path("null")
        try:
            os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            os.close(os.open(dev, os.O_WRONLY))  # a nodev mount refuses this
        except OSError as e:
            self.skipTest("cannot make or open a device node here: %s" % e)
        for args in (self.compress_args, ["decompress", "ref.ebz"]):
            with self.subTest(args[0]):
                self.ebzip(*args, "-o", dev)
                st = os.lstat(dev)
                self.assertTrue(stat.S_ISCHR(st.st_mode), "the device node was replaced")
                self.assertEqual(st.st_rdev, os.makedev(1, 3))
                self.assertEqual(self.partials(), [])

    def test_symlink_to_a_regular_file_replaces_the_target(self):
        os.mkdir(self.path("elsewhere"))
        target = self.path(os.path.join("elsewhere", "target.raw"))
        with open(target, "wb") as f:
            f.write(b"old contents, longer than nothing")
        os.chmod(target, 0o600)
        os.symlink(target, self.path("link.raw"))
        self.ebzip("decompress", "ref.ebz", "-o", "link.raw", "-f")
        self.assertTrue(os.path.islink(self.path("link.raw")), "the link was replaced")
        self.assertEqual(os.readlink(self.path("link.raw")), target)
        self.assertEqual(self.read(target), self.read("ref.raw"))
        self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o600)
        self.assertEqual(os.listdir(self.path("elsewhere")), ["target.raw"])
        self.assertEqual(self.partials(), [])

    def test_dangling_symlink_and_directory_are_refused(self):
        os.symlink(self.path("nowhere.raw"), self.path("dangling.raw"))
        proc = self.ebzip("decompress", "ref.ebz", "-o", "dangling.raw", expect=EXIT_FAILURE)
        self.assertIn("dangling.raw", proc.stderr)
        self.assertTrue(os.path.islink(self.path("dangling.raw")))
        self.assertFalse(os.path.exists(self.path("nowhere.raw")))
        os.mkdir(self.path("dir"))
        proc = self.ebzip("decompress", "ref.ebz", "-o", "dir", expect=EXIT_FAILURE)
        self.assertIn("directory", proc.stderr)
        self.assertEqual(os.listdir(self.path("dir")), [])
        self.assertEqual(self.partials(), [])


class MaxOutputBytesTest(CliTestCase):
    """decompress --max_output_bytes: checked from the archive's header before
    the output is created."""

    SHAPE = (30, 70)

    def setUp(self):
        super().setUp()
        self.original = to_bytes(smooth_field(math.prod(self.SHAPE), 6, "d"), "d")
        self.write("in.raw", self.original)
        self.ebzip("compress", "--type", "f64", "--shape", "30,70", "--abs", "1e-4", "in.raw",
                   "-o", "a.ebz", "--frame_elements", "700")
        self.out = self.path("out.raw")

    def test_smaller_than_the_array_fails_without_output(self):
        size = len(self.original)
        proc = self.assert_failed_cleanly(self.out, EXIT_FAILURE, "decompress", "a.ebz",
                                          "-o", self.out, "--max_output_bytes", str(size - 1))
        self.assertIn("--max_output_bytes", proc.stderr)
        self.assertIn(str(size), proc.stderr)
        # An existing output is left alone, even with -f.
        self.write("out.raw", b"precious")
        proc = self.assert_failed_cleanly(self.out, EXIT_FAILURE, "decompress", "a.ebz", "-f",
                                          "-o", self.out, "--max_output_bytes", "1")
        self.assertIn("--max_output_bytes", proc.stderr)
        # A FIFO nobody reads is not even opened (opening it would wait).
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        proc = self.ebzip("decompress", "a.ebz", "-o", fifo, "--max_output_bytes",
                          str(size - 1), expect=EXIT_FAILURE)
        self.assertIn("--max_output_bytes", proc.stderr)

    def test_equal_to_the_array_succeeds(self):
        self.ebzip("decompress", "a.ebz", "-o", self.out, "--max_output_bytes",
                   str(len(self.original)))
        self.assert_within(self.original, self.read(self.out), "d", 1e-4)

    def test_bad_values_are_usage_errors(self):
        for bad in ("0", "-5", "abc", "1.5"):
            with self.subTest(value=bad):
                proc = self.assert_failed_cleanly(self.out, EXIT_USAGE, "decompress", "a.ebz",
                                                  "-o", self.out, "--max_output_bytes", bad)
                self.assertIn("--max_output_bytes", proc.stderr)


COMMANDS = ("compress", "decompress", "info", "compare", "health")
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def help_flags(text):
    """The long flag names a --help text lists, from its "flags:" lines."""
    names = []
    for line in text.split("flags:\n", 1)[1].splitlines():
        m = re.match(r"^\s+(?:-\w, )?--(\w+)(?: \S+)?\s{2,}\S", line)
        if m is None:
            raise AssertionError("not a one-line flag description: %r" % line)
        names.append(m.group(1))
    return names


class HelpAndVersionTest(CliTestCase):
    """ebzip --help lists the commands; ebzip COMMAND --help lists exactly
    the flags the command accepts; --version describes the build."""

    def assert_clean_help(self, text):
        # Nothing of Abseil's flags library, and no build path.
        for leak in ("absl", "helpfull", "flagfile", "fromenv", SOURCE_DIR, ".cc"):
            self.assertNotIn(leak, text)

    def test_top_level_help_lists_the_commands(self):
        for args in (["--help"], ["-h"], ["help"]):
            with self.subTest(args=args):
                proc = self.ebzip(*args)
                for command in COMMANDS:
                    self.assertRegex(proc.stdout, r"(?m)^\s+%s\s" % command)
                self.assertIn("Exit codes", proc.stdout)
                self.assert_clean_help(proc.stdout + proc.stderr)
        # No arguments at all: the same list, as a usage error.
        proc = self.ebzip(expect=EXIT_USAGE)
        for command in COMMANDS:
            self.assertIn(command, proc.stderr)

    def command_help(self, command):
        proc = self.ebzip(command, "--help")
        self.assertEqual(proc.stdout, self.ebzip(command, "-h").stdout)
        self.assertEqual(proc.stdout, self.ebzip("help", command).stdout)
        self.assertTrue(proc.stdout.startswith("usage: ebzip " + command), proc.stdout)
        self.assert_clean_help(proc.stdout)
        return help_flags(proc.stdout)

    def test_command_help_lists_its_own_flags(self):
        flags = {command: self.command_help(command) for command in COMMANDS}
        # What each command must offer, and what it must not.
        expected = {
            "compress": {"output", "force", "json", "type", "shape", "abs", "rel", "fill",
                         "server", "deadline", "frame_elements"},
            "decompress": {"output", "force", "json", "max_output_bytes", "decoder", "server",
                           "deadline"},
            "info": {"json"},
            "compare": {"json", "type", "abs", "fill"},
            "health": {"server", "deadline", "tls", "token"},
        }
        absent = {
            "compress": {"max_output_bytes", "decoder"},
            "decompress": {"abs", "rel", "type", "shape"},
            "info": {"output", "abs", "server"},
            "compare": {"rel", "shape", "output", "server"},
            "health": {"output", "abs"},
        }
        for command in COMMANDS:
            with self.subTest(command):
                self.assertEqual(len(flags[command]), len(set(flags[command])))
                self.assertLessEqual(expected[command] | {"help"}, set(flags[command]))
                self.assertFalse(absent[command] & set(flags[command]))
        # Every flag a command lists, it accepts; every other command's flag
        # it refuses as a usage error naming the flag.
        every = set().union(*flags.values())
        value_of = {"help": None, "force": None, "quiet": None, "json": None,
                    "gap_array": None}
        for command in COMMANDS:
            # health needs no argument: an extra one makes it stop at the
            # usage check (before connecting anywhere), as the others do
            # without their arguments.
            rest = ["extra"] if command == "health" else []
            for flag in sorted(every - {"help"}):
                value = value_of.get(flag, "1")
                args = [command, "--" + flag] + ([] if value is None else [value]) + rest
                with self.subTest(command=command, flag=flag):
                    proc = self.ebzip(*args, expect=EXIT_USAGE)
                    refused = "does not apply" in proc.stderr or "unknown flag" in proc.stderr
                    self.assertEqual(refused, flag not in flags[command], proc.stderr)
                    if refused:
                        self.assertIn("--" + flag, proc.stderr)

    def test_version(self):
        with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
            m = re.search(r"project\(ebzip VERSION ([0-9.]+)", f.read())
        self.assertIsNotNone(m)
        proc = self.ebzip("--version")
        lines = proc.stdout.splitlines()
        self.assertEqual(lines[0], "ebzip " + m.group(1))
        fields = dict(line.split(" ", 1) for line in lines[1:] if line.startswith(("commit",
                                                                                 "CUDA")))
        self.assertIn(fields.get("CUDA"), ("on", "off"))
        self.assertRegex(proc.stdout, r"(?m)^build type \S+$")
        self.assertNotIn("NDEBUG", proc.stdout)
        self.assertNotIn("Debug build", proc.stdout)
        try:
            head = subprocess.run(["git", "-C", SOURCE_DIR, "rev-parse", "HEAD"],
                                  capture_output=True, text=True, check=False)
        except FileNotFoundError:  # no git
            head = None
        if head is not None and head.returncode == 0:
            # The commit built: HEAD, or one HEAD contains when the binary
            # was built before the latest commits.
            commit = fields.get("commit", "").replace("-dirty", "")
            self.assertRegex(commit, r"^[0-9a-f]{7,40}$", proc.stdout)
            contained = subprocess.run(["git", "-C", SOURCE_DIR, "merge-base", "--is-ancestor",
                                        commit, "HEAD"], capture_output=True, check=False)
            self.assertEqual(contained.returncode, 0,
                             "%s is not HEAD (%s) or before it" % (commit, head.stdout.strip()))
        else:
            self.assertEqual(fields.get("commit"), "unknown")


class UsageTest(CliTestCase):
    """Every mistake on the command line is exit 2 with a message, whichever
    command it is."""

    def setUp(self):
        super().setUp()
        self.write("in.raw", to_bytes(smooth_field(600, 2, "f"), "f"))
        self.ebzip("compress", "--type", "f32", "--shape", "600", "--abs", "0.01", "in.raw",
                   "-o", "a.ebz")
        self.out = self.path("out")

    def test_usage_errors_exit_2(self):
        raw = ["--type", "f32", "--shape", "600"]
        cases = {
            "unknown long flag": (["info", "a.ebz", "--bogus"], "--bogus"),
            "unknown short flag": (["info", "a.ebz", "-x"], "-x"),
            "single-dash long flag": (["compress", *raw, "-abs", "1", "in.raw", "-o", "out"],
                                      "--abs"),
            "compare --rel": (["compare", "--type", "f32", "in.raw", "in.raw", "--rel", "0.1"],
                              "--rel"),
            "decompress --abs": (["decompress", "a.ebz", "-o", "out", "--abs", "1"], "--abs"),
            "info -o": (["info", "a.ebz", "-o", "out"], "-o"),
            "missing value": (["compress", *raw, "in.raw", "-o", "out", "--abs"], "--abs"),
            "switch with a value": (["compress", *raw, "--abs", "1", "in.raw", "-o", "out",
                                     "--gap_array=maybe"], "--gap_array"),
            "flag before the command": (["--quiet", "info", "a.ebz"], "--quiet"),
            "version with arguments": (["--version", "info"], "--version"),
            "bad size suffix": (["compress", *raw, "--abs", "1", "in.raw", "-o", "out",
                                 "--frame_elements", "4X"], "--frame_elements"),
            "radius too large": (["compress", *raw, "--abs", "1", "in.raw", "-o", "out",
                                  "--radius", "8G"], "--radius"),
            "negative deadline": (["decompress", "a.ebz", "-o", "out", "--server", "127.0.0.1:1",
                                   "--deadline", "-1"], "--deadline"),
            "bad timeout": (["decompress", "a.ebz", "-o", "out", "--server", "127.0.0.1:1",
                             "--timeout", "soon"], "--timeout"),
            "json and quiet": (["decompress", "a.ebz", "-o", "out", "--json", "-q"], "--json"),
            "both inputs standard input": (["compare", "--type", "f32", "-", "-"], "standard input"),
        }
        for what, (args, word) in cases.items():
            with self.subTest(what):
                proc = self.assert_failed_cleanly(self.out, EXIT_USAGE, *args)
                self.assertIn(word, proc.stderr)

    def test_flag_spellings(self):
        # --name=value, --name value, dashes for underscores, --noswitch.
        ref = self.ebzip("info", "a.ebz").stdout
        for flags in (["--frame_elements=100"], ["--frame-elements", "100"],
                      ["--gap_array=false"], ["--nogap_array"], ["--no-gap-array"],
                      ["--gap_array", "--gap_array=0"]):
            with self.subTest(flags=flags):
                self.ebzip("compress", "--type", "f32", "--shape", "600", "--abs", "0.01",
                           "in.raw", "-o", "b.ebz", "-f", *flags)
                info = self.ebzip("info", "b.ebz").stdout
                self.assertNotEqual(info.replace("b.ebz", "a.ebz"), ref)
        # "--" ends the flags: a file named like one is an argument.
        self.write("--json", self.read("a.ebz"))
        proc = self.ebzip("info", "--", "--json")
        self.assertEqual(proc.stdout.replace("--json", "a.ebz"), ref)


class SizeSuffixTest(CliTestCase):
    """Sizes and counts take K, M, G, T as powers of 1024."""

    SHAPE = (30, 70)

    def setUp(self):
        super().setUp()
        self.original = to_bytes(smooth_field(math.prod(self.SHAPE), 6, "d"), "d")
        self.write("in.raw", self.original)
        self.compress = ["compress", "--type", "f64", "--shape", "30,70", "--abs", "1e-4",
                         "in.raw"]

    def test_max_output_bytes(self):
        size = len(self.original)  # 16800 bytes: 16.4 KiB
        self.assertTrue(16 * 1024 < size < 17 * 1024)
        self.ebzip(*self.compress, "-o", "a.ebz")
        out = self.path("out.raw")
        for limit in ("16K", "16KiB", "16k"):
            with self.subTest(limit=limit):
                proc = self.assert_failed_cleanly(out, EXIT_FAILURE, "decompress", "a.ebz",
                                                  "-o", out, "--max_output_bytes", limit)
                self.assertIn(str(16 * 1024), proc.stderr)
        for limit in ("17K", "1M", "1MiB", "4G", "1T"):
            with self.subTest(limit=limit):
                self.ebzip("decompress", "a.ebz", "-o", out, "-f", "--max_output_bytes", limit)
                self.assert_within(self.original, self.read(out), "d", 1e-4)
        for bad in ("1.5G", "K", "4X", "4GB", "-1K", "99999999999T"):
            with self.subTest(bad=bad):
                proc = self.assert_failed_cleanly(out + "2", EXIT_USAGE, "decompress", "a.ebz",
                                                  "-o", out + "2", "--max_output_bytes", bad)
                self.assertIn("--max_output_bytes", proc.stderr)

    def test_counts(self):
        # 1K elements is 1024 elements: the same archive, several frames.
        self.ebzip(*self.compress, "-o", "k.ebz", "--frame_elements", "1K", "--chunk_symbols",
                   "4K", "--radius", "1K")
        self.ebzip(*self.compress, "-o", "n.ebz", "--frame_elements", "1024", "--chunk_symbols",
                   "4096", "--radius", "1024")
        self.assertEqual(self.read("k.ebz"), self.read("n.ebz"))
        self.assertGreater(frames_of(self.info("k.ebz")), 1)
        self.assertIn("radius 1024, chunk 4096 symbols", self.info("k.ebz"))


def frames_of(info):
    m = re.search(r"frames\s+(\d+) of", info)
    if m is None:
        raise AssertionError("ebzip info prints no frame count:\n" + info)
    return int(m.group(1))


class StandardStreamsTest(CliTestCase):
    """'-' reads standard input and -o - writes standard output, giving the
    bytes files give, with nothing on standard error."""

    SHAPE = (20, 30, 40)

    def setUp(self):
        super().setUp()
        self.original = with_special_values(smooth_field(math.prod(self.SHAPE), 8, "f"), "f")
        self.write("in.raw", self.original)
        self.raw = ["--type", "f32", "--shape", "20,30,40"]
        self.ebzip("compress", *self.raw, "--abs", "1e-3", "in.raw", "-o", "ref.ebz")
        self.ebzip("decompress", "ref.ebz", "-o", "ref.raw")

    def pipe(self, args, data, expect=EXIT_OK):
        proc = subprocess.run([EBZIP, *args], input=data, capture_output=True, cwd=self.dir,
                              timeout=120)
        self.assertEqual(proc.returncode, expect,
                         "ebzip %s: exit %d\nstderr: %s" % (" ".join(args), proc.returncode,
                                                            proc.stderr.decode()))
        return proc

    def test_compress_and_decompress_through_pipes(self):
        proc = self.pipe(["compress", *self.raw, "--abs", "1e-3", "-", "-o", "-"],
                         self.original)
        self.assertEqual(proc.stdout, self.read("ref.ebz"))
        self.assertEqual(proc.stderr, b"")
        proc = self.pipe(["decompress", "-", "-o", "-"], self.read("ref.ebz"))
        self.assertEqual(proc.stdout, self.read("ref.raw"))
        self.assertEqual(proc.stderr, b"")
        self.assert_within(self.original, proc.stdout, "f", 1e-3)
        # Mixed: a file in, standard output out, and the other way round.
        proc = self.pipe(["decompress", "ref.ebz", "-o", "-"], b"")
        self.assertEqual(proc.stdout, self.read("ref.raw"))
        self.pipe(["compress", *self.raw, "--abs", "1e-3", "-", "-o", "piped.ebz"],
                  self.original)
        self.assertEqual(self.read("piped.ebz"), self.read("ref.ebz"))
        self.assertEqual(self.partials(), [])

    def test_standard_input_of_the_wrong_size(self):
        for what, data in (("short", self.original[:-1]), ("long", self.original + b"\0"),
                           ("empty", b"")):
            with self.subTest(what):
                proc = self.pipe(["compress", *self.raw, "--abs", "1e-3", "-", "-o", "x.ebz"],
                                 data, expect=EXIT_USAGE)
                self.assertIn(b"standard input", proc.stderr)
                self.assertIn(str(len(self.original)).encode(), proc.stderr)
                self.assertFalse(os.path.exists(self.path("x.ebz")))
        self.assertEqual(self.partials(), [])

    def test_decompress_standard_input_is_bounded(self):
        size = len(self.original)
        # The header's array is refused before the rest is read.
        proc = self.pipe(["decompress", "-", "-o", "x.raw", "--max_output_bytes",
                          str(size - 1)], self.read("ref.ebz"), expect=EXIT_FAILURE)
        self.assertIn(b"--max_output_bytes", proc.stderr)
        # An archive longer than the limit (junk after a small header's
        # array) is refused once the limit is passed.
        archive = self.read("ref.ebz")
        proc = self.pipe(["decompress", "-", "-o", "x.raw", "--max_output_bytes", str(size)],
                         archive + b"\0" * (size - len(archive) + 1), expect=EXIT_FAILURE)
        self.assertIn(b"--max_output_bytes", proc.stderr)
        for what, data in (("empty", b""), ("not an archive", self.original),
                           ("truncated", archive[:-1])):
            with self.subTest(what):
                proc = self.pipe(["decompress", "-", "-o", "x.raw"], data, expect=EXIT_FAILURE)
                self.assertTrue(proc.stderr.strip())
        self.assertFalse(os.path.exists(self.path("x.raw")))
        self.assertEqual(self.partials(), [])

    def test_info_and_compare_read_standard_input(self):
        proc = self.pipe(["info", "-"], self.read("ref.ebz"))
        self.assertEqual(proc.stdout.decode().replace("standard input", "ref.ebz"),
                         self.info("ref.ebz"))
        self.pipe(["compare", "--type", "f32", "in.raw", "-", "--abs", "1e-3"],
                  self.read("ref.raw"))
        self.pipe(["compare", "--type", "f32", "-", "in.raw", "--abs", "1e-3"],
                  self.read("ref.raw"))
        self.pipe(["compare", "--type", "f32", "in.raw", "-", "--abs", "1e-5"],
                  self.read("ref.raw"), expect=EXIT_FAILURE)
        proc = self.pipe(["compare", "--type", "f32", "in.raw", "-"], self.read("ref.raw") + b"1",
                         expect=EXIT_USAGE)
        self.assertIn(b"standard input", proc.stderr)

    def test_json_summary_goes_to_stderr_when_stdout_is_the_output(self):
        proc = self.pipe(["compress", *self.raw, "--abs", "1e-3", "in.raw", "-o", "-",
                          "--json"], b"")
        self.assertEqual(proc.stdout, self.read("ref.ebz"))
        summary = json.loads(proc.stderr)
        self.assertEqual(summary["output_bytes"], len(self.read("ref.ebz")))
        proc = self.pipe(["decompress", "-", "-o", "-", "--json"], self.read("ref.ebz"))
        self.assertEqual(proc.stdout, self.read("ref.raw"))
        self.assertEqual(json.loads(proc.stderr)["output_bytes"], len(self.original))


class JsonTest(CliTestCase):
    """--json: one object, typed values, checked against what the test
    itself knows (its shapes and bounds, file sizes, its own error sums)."""

    SHAPE = (16, 25, 30)

    def setUp(self):
        super().setUp()
        self.values = smooth_field(math.prod(self.SHAPE), 12, "f")
        self.values[5] = -9999.0
        self.original = to_bytes(self.values, "f")
        self.write("in.raw", self.original)

    def json_of(self, *args, expect=EXIT_OK):
        proc = self.ebzip(*args, "--json", expect=expect)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 1, proc.stdout)
        return json.loads(lines[0])

    def test_compress_decompress_info(self):
        c = self.json_of("compress", "--type", "f32", "--shape", "16,25,30", "--rel", "1e-3",
                         "--fill", "-9999", "--frame_elements", "3000", "in.raw", "-o", "a.ebz")
        size = os.path.getsize(self.path("a.ebz"))
        lo, hi = finite_range([x for x in self.values if x != -9999.0])
        self.assertEqual(c["input"], "in.raw")
        self.assertEqual(c["output"], "a.ebz")
        self.assertEqual(c["dtype"], "f32")
        self.assertEqual(c["shape"], list(self.SHAPE))
        self.assertEqual(c["input_bytes"], len(self.original))
        self.assertEqual(c["output_bytes"], size)
        self.assertAlmostEqual(c["ratio"], len(self.original) / size)
        self.assertEqual(c["bound_mode"], "rel")
        self.assertEqual(c["bound"], 1e-3)
        self.assertLessEqual(c["abs_bound"], 1e-3 * (hi - lo) * (1 + 1e-9))
        self.assertGreater(c["abs_bound"], 0)
        self.assertIsInstance(c["outliers"], int)
        self.assertGreater(c["frames"], 1)
        self.assertIsNone(c["server"])

        i = self.json_of("info", "a.ebz")
        self.assertEqual(i["shape"], list(self.SHAPE))
        self.assertEqual(i["dtype"], "f32")
        self.assertEqual(i["archive_bytes"], size)
        self.assertEqual(i["array_bytes"], len(self.original))
        self.assertEqual(i["abs_bound"], c["abs_bound"])
        self.assertEqual(i["bound_mode"], "rel")
        self.assertEqual(i["fill_value"], -9999.0)
        self.assertEqual(i["frames"], c["frames"])
        self.assertEqual(sum(p["frames"] for p in i["predictors"]), i["frames"])
        self.assertLessEqual(sum(i["sections"].values()), size)
        self.assertIn(i["format_version"], (1, 2))
        self.assertIsInstance(i["gap_array"], bool)

        d = self.json_of("decompress", "a.ebz", "-o", "a.raw")
        self.assertEqual(d["shape"], list(self.SHAPE))
        self.assertEqual(d["input_bytes"], size)
        self.assertEqual(d["output_bytes"], os.path.getsize(self.path("a.raw")))
        self.assertEqual(d["output_bytes"], len(self.original))
        self.assert_within(self.original, self.read("a.raw"), "f", d["abs_bound"], -9999.0)

    def test_compare(self):
        b = list(array.array("f", [x + 0.001 * (i % 7) for i, x in enumerate(self.values)]))
        self.write("b.raw", to_bytes(b, "f"))
        errors = [abs(x - y) for x, y in zip(self.values, b)]
        max_error = max(errors)
        bound = sorted(errors)[len(errors) // 2]  # about half the values exceed it
        violations = sum(1 for e in errors if e > bound)
        r = self.json_of("compare", "--type", "f32", "in.raw", "b.raw")
        self.assertEqual(r["values"], len(self.values))
        self.assertEqual(r["compared"], len(self.values))
        self.assertEqual(r["max_error"], max_error)
        self.assertAlmostEqual(r["rmse"], math.sqrt(sum(e * e for e in errors) / len(errors)))
        self.assertIsNone(r["bound"])
        self.assertIsNone(r["violations"])
        self.assertTrue(r["ok"])
        r = self.json_of("compare", "--type", "f32", "in.raw", "b.raw", "--abs", repr(bound),
                         expect=EXIT_FAILURE)
        self.assertEqual(r["violations"], violations)
        self.assertFalse(r["ok"])
        # Identical arrays: no error, and an infinite PSNR as null.
        r = self.json_of("compare", "--type", "f32", "in.raw", "in.raw")
        self.assertEqual(r["max_error"], 0)
        self.assertIsNone(r["psnr"])


class RegionTest(CliTestCase):
    """decompress --region: the region's values, exactly the slice of a full
    decode (sliced here element by element), from an archive of many
    frames; malformed regions are usage errors."""
    SHAPE = (24, 18, 20)

    def setUp(self):
        super().setUp()
        n = math.prod(self.SHAPE)
        original = with_special_values(smooth_field(n, 5, "f"), "f")
        self.write("in.raw", original)
        self.compress_raw("in.raw", "f", self.SHAPE, "--rel", 1e-3, "a.ebz",
                          "--frame_elements", str(18 * 20 * 8))
        self.ebzip("decompress", "a.ebz", "-o", "full.raw")
        self.full = self.read("full.raw")

    def slice_of(self, starts, stops, steps):
        rows = []
        d0, d1, d2 = self.SHAPE
        for i in range(starts[0], stops[0], steps[0]):
            for j in range(starts[1], stops[1], steps[1]):
                for k in range(starts[2], stops[2], steps[2]):
                    at = ((i * d1) + j) * d2 + k
                    rows.append(self.full[4 * at:4 * at + 4])
        return b"".join(rows)

    def test_regions_equal_the_slice(self):
        cases = [
            ("10:20,0:18,5:17", (10, 0, 5), (20, 18, 17), (1, 1, 1)),
            (":,:,:", (0, 0, 0), (24, 18, 20), (1, 1, 1)),
            ("23,17,19", (23, 17, 19), (24, 18, 20), (1, 1, 1)),
            ("1:24:7,::5,3:4", (1, 0, 3), (24, 18, 4), (7, 5, 1)),
            ("5:5,:,:", (5, 0, 0), (5, 18, 20), (1, 1, 1)),
        ]
        for text, starts, stops, steps in cases:
            with self.subTest(region=text):
                self.ebzip("decompress", "a.ebz", "--region", text, "-o", "r.raw", "-f")
                self.assertEqual(self.read("r.raw"), self.slice_of(starts, stops, steps))

    def test_json_names_the_region(self):
        proc = self.ebzip("decompress", "a.ebz", "--region", "2:9:3,1:4,:", "-o", "r.raw",
                          "--json")
        r = json.loads(proc.stdout)
        self.assertEqual(r["shape"], [3, 3, 20])
        self.assertEqual(r["region"], "2:9:3,1:4,0:20")
        self.assertEqual(r["output_bytes"], 3 * 3 * 20 * 4)
        grid = json.loads(self.ebzip("info", "a.ebz", "--json").stdout)["grid"]
        self.assertEqual(grid["frame_rows"], 8)
        self.assertEqual(grid["frames"], 3)

    def test_malformed_regions_are_usage_errors(self):
        for text in ["0:25,:,:", "-1:3,:,:", "0:5:0,:,:", "1:2,3", "x,:,:", "9:3,:,:"]:
            with self.subTest(region=text):
                proc = self.assert_failed_cleanly(self.path("r.raw"), EXIT_USAGE, "decompress",
                                                  "a.ebz", "--region", text, "-o", "r.raw")
                self.assertIn("region", proc.stderr)

    def test_the_limit_applies_to_the_region(self):
        # The whole array (34,560 bytes) exceeds the limit; a region under it passes.
        self.assert_failed_cleanly(self.path("r.raw"), EXIT_FAILURE, "decompress", "a.ebz",
                                   "--max_output_bytes", "16K", "-o", "r.raw")
        self.ebzip("decompress", "a.ebz", "--region", "0:8,:,:", "--max_output_bytes", "16K",
                   "-o", "r.raw")
        self.assertEqual(len(self.read("r.raw")), 8 * 18 * 20 * 4)


def tool(name):
    """The path of a Debian tool the NetCDF output tests read files back with."""
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin"]:
        candidate = os.path.join(d, name)
        if os.access(candidate, os.X_OK):
            return candidate
    raise AssertionError("%s missing: install Debian's %s (scripts/install_deps.sh)" %
                         (name, {"ncdump": "netcdf-bin", "h5dump": "hdf5-tools"}[name]))


def ncdump_values(text, name):
    """The values of variable `name` in `ncdump -v name` output, None for '_'."""
    m = re.search(r"\n\s*%s\s*=(.*?);" % re.escape(name), text.split("data:", 1)[1], re.S)
    return [None if v == "_" else float(v) for v in re.findall(r"[^\s,]+", m.group(1))]


class NetcdfOutputTest(CliTestCase):
    """decompress -o OUT.nc / OUT.h5 writes the variable back with its name,
    dimensions and attributes (the archive's metadata), read back by Debian's
    ncdump and h5dump, not by ebzip."""

    REL = 1e-4

    def setUp(self):
        super().setUp()
        self.src = os.path.join(DATA_DIR, "levitus_climatology.cdf")
        self.assertTrue(os.path.isfile(self.src),
                        "%s missing: install Debian's ferret-datasets" % self.src)
        self.salt = read_cdf_variable(self.src, "SALT")
        self.fill = self.salt.attribute_value("_FillValue")
        fill_bits = bits_of(to_bytes([self.fill], "f"), "f")[0]
        lo, hi = finite_range(from_bytes(self.salt.data, "f"), fill_bits,
                              bits_of(self.salt.data, "f"))
        self.abs_bound = self.REL * (hi - lo)
        c = json.loads(self.ebzip("compress", "--rel", repr(self.REL), self.src + ":SALT",
                                  "-o", "salt.ebz", "--json").stdout)
        self.assertGreater(c["metadata_bytes"], 0)
        self.assertEqual(c["warnings"], [])

    def assert_same_floats(self, expected, printed):
        """`printed` (9 significant digits) are exactly the float32 `expected`."""
        self.assertEqual(len(printed), len(expected))
        as_float32 = array.array("f", printed)
        bad = next((i for i, (x, y) in enumerate(zip(expected, as_float32)) if x != y), None)
        self.assertIsNone(bad, "first difference at %s" % bad)

    def test_netcdf_round_trip(self):
        out = json.loads(self.ebzip("decompress", "salt.ebz", "-o", "salt.nc", "--json").stdout)
        self.assertEqual(out["format"], "netcdf4")
        self.assertEqual(out["output_bytes"], os.path.getsize(self.path("salt.nc")))
        ncdump = tool("ncdump")
        header = subprocess.run([ncdump, "-h", self.path("salt.nc")], capture_output=True,
                                text=True, check=True).stdout
        # The source's header, as ncdump shows it (ncdump -h levitus_climatology.cdf).
        for line in ["ZAXLEVITR = 20 ;", "YAXLEVITR = 180 ;", "XAXLEVITR = 360 ;",
                     "float SALT(ZAXLEVITR, YAXLEVITR, XAXLEVITR) ;",
                     'SALT:long_name = "SALINITY" ;', 'SALT:units = "PPT" ;',
                     "SALT:_FillValue = -1.e+10f ;", "SALT:missing_value = -1.e+10f ;",
                     'SALT:history = "From levitus_climatology" ;',
                     "double XAXLEVITR(XAXLEVITR) ;", 'XAXLEVITR:units = "degrees_east" ;',
                     'ZAXLEVITR:positive = "down" ;',
                     ':history = "FERRET V4.45 (GUI) 22-May-97" ;']:
            self.assertIn(line, header)
        self.assertIn("_Format", subprocess.run(
            [ncdump, "-hs", self.path("salt.nc")], capture_output=True, text=True,
            check=True).stdout)
        # Values: -p 9 prints every float32 exactly; fill points print as _.
        dump = subprocess.run([ncdump, "-p", "9,17", "-v", "SALT,ZAXLEVITR",
                               self.path("salt.nc")],
                              capture_output=True, text=True, check=True).stdout
        self.assertEqual(ncdump_values(dump, "ZAXLEVITR")[:4], [0.0, 10.0, 20.0, 30.0])
        values = ncdump_values(dump, "SALT")
        self.assertEqual(len(values), 20 * 180 * 360)
        original = from_bytes(self.salt.data, "f")
        fills = 0
        for x, y in zip(original, values):
            if x == self.fill:
                self.assertIsNone(y)
                fills += 1
            else:
                self.assertIsNotNone(y)
                self.assertLessEqual(abs(x - y), self.abs_bound)
        self.assertGreater(fills, 0)
        # The same values a raw decompress gives.
        self.ebzip("decompress", "salt.ebz", "-o", "salt.raw")
        raw = from_bytes(self.read("salt.raw"), "f")
        self.assert_same_floats([v for v in raw if v != self.fill],
                                [v for v in values if v is not None])

    def test_hdf5_round_trip(self):
        self.ebzip("decompress", "salt.ebz", "-o", "salt.h5")
        h5dump = tool("h5dump")
        header = subprocess.run([h5dump, "-H", self.path("salt.h5")], capture_output=True,
                                text=True, check=True).stdout
        self.assertIn('DATASET "SALT"', header)
        self.assertIn("DATASPACE  SIMPLE { ( 20, 180, 360 ) / ( 20, 180, 360 ) }", header)
        for attribute in ["units", "long_name", "_FillValue", "missing_value",
                          "DIMENSION_LIST"]:
            self.assertIn('ATTRIBUTE "%s"' % attribute, header)
        self.assertIn('DATASET "XAXLEVITR"', header)
        # The dimension scales, in order, and an attribute's value.
        dims = subprocess.run([h5dump, "-a", "/SALT/DIMENSION_LIST", self.path("salt.h5")],
                              capture_output=True, text=True, check=True).stdout
        self.assertEqual(re.findall(r'DATASET \d+ "?(/\w+)', dims),
                         ["/ZAXLEVITR", "/YAXLEVITR", "/XAXLEVITR"])
        units = subprocess.run([h5dump, "-a", "/SALT/units", self.path("salt.h5")],
                               capture_output=True, text=True, check=True).stdout
        self.assertIn('"PPT"', units)
        data = subprocess.run([h5dump, "-d", "/SALT", "-y", "-w", "0", "-m", "%.9g",
                               self.path("salt.h5")],
                              capture_output=True, text=True, check=True).stdout
        body = data.split("DATA {", 1)[1].split("}", 1)[0]
        values = [float(v) for v in re.findall(r"-?[0-9][0-9.e+-]*", body)]
        self.assertEqual(len(values), 20 * 180 * 360)
        self.ebzip("decompress", "salt.ebz", "-o", "salt.raw")
        self.assert_same_floats(list(from_bytes(self.read("salt.raw"), "f")), values)
        # And back in: the HDF5 file's dataset carries the same description.
        self.ebzip("compress", "--rel", repr(self.REL), "salt.h5:/SALT", "-o", "again.ebz")
        meta = json.loads(self.ebzip("info", "again.ebz", "--json").stdout)["metadata"]
        self.assertEqual(meta["name"], "SALT")
        self.assertEqual(meta["dimensions"], ["ZAXLEVITR", "YAXLEVITR", "XAXLEVITR"])
        self.assertEqual(meta["attributes"]["units"], {"type": "char", "value": "PPT"})
        self.assertEqual(meta["coordinates"]["ZAXLEVITR"]["values"][:3], [0.0, 10.0, 20.0])

    def test_metadata_document(self):
        meta = json.loads(self.ebzip("info", "salt.ebz", "--json").stdout)["metadata"]
        self.assertEqual(meta["name"], "SALT")
        self.assertEqual(meta["type"], "float")
        self.assertEqual(meta["dimensions"], ["ZAXLEVITR", "YAXLEVITR", "XAXLEVITR"])
        self.assertEqual(meta["attributes"]["_FillValue"],
                         {"type": "float", "value": [self.fill]})
        self.assertEqual(meta["attributes"]["long_name"], {"type": "char", "value": "SALINITY"})
        # A regular axis is its start, step and count; the decompressed
        # file's values are the source's, bit for bit.
        x = meta["coordinates"]["XAXLEVITR"]
        self.assertNotIn("values", x)
        self.assertEqual(x["count"], 360)
        self.ebzip("decompress", "salt.ebz", "-o", "back.nc")
        dump = subprocess.run([tool("ncdump"), "-p", "9,17", "-v", "XAXLEVITR",
                               self.path("back.nc")],
                              capture_output=True, text=True, check=True).stdout
        self.assertEqual(ncdump_values(dump, "XAXLEVITR"),
                         list(from_bytes(read_cdf_variable(self.src, "XAXLEVITR").data, "d")))
        # --nometadata stores none (and lets Lorenzo + Huffman write version 1).
        self.ebzip("compress", "--rel", "1e-4", self.src + ":SALT", "-o", "bare.ebz",
                   "--nometadata", "--predictor", "lorenzo", "--lossless", "huffman")
        info = json.loads(self.ebzip("info", "bare.ebz", "--json").stdout)
        self.assertEqual(info["format_version"], 1)
        self.assertIsNone(info["metadata"])

    def test_region_slices_the_coordinates(self):
        self.ebzip("decompress", "salt.ebz", "--region", "2:5,10:20:3,:", "-o", "r.nc")
        dump = subprocess.run([tool("ncdump"), "-v", "YAXLEVITR,ZAXLEVITR", self.path("r.nc")],
                              capture_output=True, text=True, check=True).stdout
        self.assertIn("YAXLEVITR = 4 ;", dump)
        y = read_cdf_variable(self.src, "YAXLEVITR")
        self.assertEqual(ncdump_values(dump, "YAXLEVITR"),
                         list(from_bytes(y.data, "d"))[10:20:3])
        self.assertEqual(ncdump_values(dump, "ZAXLEVITR"), [20.0, 30.0, 50.0])

    def test_without_metadata_defaults(self):
        values = smooth_field(12 * 34, 3, "f")
        self.write("in.raw", to_bytes(values, "f"))
        self.ebzip("compress", "--type", "f32", "--shape", "12,34", "--abs", "1e-3",
                   "--fill", "-5", "in.raw", "-o", "a.ebz")
        self.ebzip("decompress", "a.ebz", "-o", "a.nc")
        header = subprocess.run([tool("ncdump"), "-h", self.path("a.nc")], capture_output=True,
                                text=True, check=True).stdout
        self.assertIn("float data(dim0, dim1) ;", header)
        self.assertIn("dim0 = 12 ;", header)
        self.assertRegex(header, r"data ?:_FillValue = -5.f ;")
        # Raw stays the default for .raw and any other name.
        self.ebzip("decompress", "a.ebz", "-o", "a.out")
        self.assertEqual(os.path.getsize(self.path("a.out")), 12 * 34 * 4)

    def test_netcdf_output_follows_the_output_rules(self):
        self.write("exists.nc", b"keep")
        self.assert_failed_cleanly(self.path("exists.nc"), EXIT_FAILURE,
                                   "decompress", "salt.ebz", "-o", "exists.nc")
        self.ebzip("decompress", "salt.ebz", "-o", "exists.nc", "-f")
        self.assertEqual(self.read("exists.nc")[:4], b"\x89HDF")
        self.assertEqual(self.partials(), [])
        # NetCDF is written by name and renamed into place: not into a FIFO
        # (refused before it is opened, which would wait for a reader).
        os.mkfifo(self.path("fifo.nc"))
        proc = self.ebzip("decompress", "salt.ebz", "-o", "fifo.nc", expect=EXIT_FAILURE)
        self.assertIn("regular file", proc.stderr)

    def test_listing_variables(self):
        for arg in [self.src, self.src + ":"]:
            proc = self.ebzip("compress", "--rel", "1e-4", arg, "-o", "x.ebz",
                              expect=EXIT_USAGE)
            self.assertFalse(os.path.exists(self.path("x.ebz")))
            self.assertIn("no variable chosen", proc.stderr)
            lines = {l.split()[0]: l for l in proc.stderr.splitlines()[1:] if l.strip()}
            self.assertIn("20x180x360", lines["SALT"])
            self.assertIn("(ZAXLEVITR, YAXLEVITR, XAXLEVITR)", lines["SALT"])
            self.assertIn("float", lines["SALT"])
            self.assertIn("double", lines["XAXLEVITR"])
            self.assertEqual(set(lines), {"XAXLEVITR", "YAXLEVITR", "ZAXLEVITR",
                                          "ZAXLEVITRedges", "TEMP", "SALT"})
        # Without -o too: the listing is what the user needs first.
        proc = self.ebzip("compress", self.src, expect=EXIT_USAGE)
        self.assertIn("TEMP", proc.stderr)
        self.ebzip("decompress", "salt.ebz", "-o", "salt.h5")
        proc = self.ebzip("compress", "salt.h5", expect=EXIT_USAGE)
        self.assertRegex(proc.stderr, r"/SALT\s+float\s+20x180x360\s+\(ZAXLEVITR, YAXLEVITR")


class SafetyWarningTest(CliTestCase):
    """compress warns on stderr (and in --json's "warnings") when a REL bound
    is set by values far off the rest, and when the archive is larger than
    its input: the rule of the Python package's ebzip/safety.py."""

    def warnings_of(self, *args):
        proc = self.ebzip("compress", *args, "-o", "a.ebz", "-f", "--json")
        summary = self.last_summary = json.loads(proc.stdout)
        on_stderr = [l for l in proc.stderr.splitlines() if "warning:" in l]
        self.assertEqual(len(on_stderr), len(summary["warnings"]), proc.stderr)
        for line, w in zip(on_stderr, summary["warnings"]):
            self.assertTrue(line.endswith(w["message"]))
        return [w["kind"] for w in summary["warnings"]], summary["warnings"]

    def smooth(self):
        return smooth_field(200 * 300, 7, "f")

    def test_undeclared_fill_in_salt_warns(self):
        src = os.path.join(DATA_DIR, "levitus_climatology.cdf") + ":SALT"
        kinds, warnings = self.warnings_of("--rel", "1e-4", "--fill", "none", src)
        self.assertEqual(kinds, ["dominated_range"])
        self.assertIn("-1e+10", warnings[0]["message"])
        self.assertIn("--fill -1e+10", warnings[0]["message"])
        # Declared (the file's _FillValue, the default) it is quiet, and an
        # absolute bound does not depend on the range.
        self.assertEqual(self.warnings_of("--rel", "1e-4", src)[0], [])
        self.assertEqual(self.warnings_of("--abs", "1e-3", "--fill", "none", src)[0], [])
        # The same array as raw, the fill undeclared.
        salt = read_cdf_variable(src.rsplit(":", 1)[0], "SALT")
        self.write("salt.raw", salt.data)
        self.assertEqual(self.warnings_of("--rel", "1e-4", "--type", "f32", "--shape",
                                          "20,180,360", "salt.raw")[0], ["dominated_range"])
        self.assertEqual(self.warnings_of("--rel", "1e-4", "--type", "f32", "--shape",
                                          "20,180,360", "--fill", "-1e10", "salt.raw")[0], [])

    def test_one_spike_warns(self):
        values = self.smooth()
        values[17 * 300 + 23] = 1e30
        self.write("spike.raw", to_bytes(values, "f"))
        kinds, warnings = self.warnings_of("--rel", "1e-4", "--type", "f32", "--shape",
                                           "200,300", "spike.raw")
        self.assertEqual(kinds, ["dominated_range"])
        self.assertIn("99.8 %", warnings[0]["message"])
        self.assertEqual(self.warnings_of("--abs", "1e-3", "--type", "f32", "--shape",
                                          "200,300", "spike.raw")[0], [])

    def test_smooth_data_is_quiet(self):
        self.write("smooth.raw", to_bytes(self.smooth(), "f"))
        for bound in (["--rel", "1e-3"], ["--rel", "1e-6"], ["--abs", "1e-2"]):
            self.assertEqual(self.warnings_of(*bound, "--type", "f32", "--shape", "200,300",
                                              "smooth.raw")[0], [])
        self.write("constant.raw", to_bytes([7.0] * 2500, "f"))
        self.assertEqual(self.warnings_of("--rel", "1e-3", "--type", "f32", "--shape", "50,50",
                                          "constant.raw")[0], [])

    def test_larger_archive_warns(self):
        rng = random.Random(5)
        self.write("noise.raw", to_bytes([rng.gauss(0, 1) for _ in range(100000)], "f"))
        kinds, warnings = self.warnings_of("--abs", "1e-9", "--type", "f32", "--shape",
                                           "100000", "noise.raw")
        self.assertEqual(kinds, ["larger_archive"])
        self.assertIn("larger than the array (400000 bytes)", warnings[0]["message"])
        # Text mode, and --quiet: still on stderr.
        for extra in ([], ["-q"]):
            proc = self.ebzip("compress", "--abs", "1e-9", "--type", "f32", "--shape", "100000",
                              "noise.raw", "-o", "b.ebz", "-f", *extra)
            self.assertIn("ebzip compress: warning: the archive", proc.stderr)
            self.assertNotIn("warning", proc.stdout)

    def test_the_python_package_agrees(self):
        """The same verdict and numbers as ebzip/safety.py (skipped without
        NumPy), on arrays near the thresholds too, where only the same sample
        gives the same answer."""
        try:
            import importlib.util
            import numpy as np
        except ImportError:
            self.skipTest("NumPy not available to this interpreter")
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location(
            "ebzip_safety", os.path.join(here, "..", "..", "client", "python", "ebzip",
                                         "safety.py"))
        safety = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(safety)
        rng = np.random.default_rng(11)
        base = rng.standard_normal(300000).astype(np.float32)
        cases = {"normal": base}
        for count in (1, 2, 3, 30, 300, 3000):  # a few to many far values
            x = base.copy()
            x[rng.integers(0, x.size, count)] = 500.0
            cases["%d far" % count] = x
        for name, x in cases.items():
            with self.subTest(name):
                x.tofile(self.path("x.raw"))
                _, warnings = self.warnings_of("--rel", "1e-4", "--type", "f32", "--shape",
                                               str(x.size), "x.raw")
                reason = safety.dominated_range(x, None, self.last_summary["abs_bound"] / 1e-4)
                ours = [w["message"] for w in warnings if w["kind"] == "dominated_range"]
                self.assertEqual(len(ours), 0 if reason is None else 1)
                if reason is not None:
                    # The same numbers, told to the command line's user.
                    py = re.findall(r"[-0-9.e+]+ ", reason.split(";")[0])
                    self.assertEqual(re.findall(r"[-0-9.e+]+ ", ours[0].split(": ", 1)[1]
                                                .split(";")[0]), py)


def main():
    global EBZIP
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.stderr.write("usage: cli_test.py PATH/TO/ebzip [unittest arguments]\n")
        sys.exit(2)
    EBZIP = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)


if __name__ == "__main__":
    main()
