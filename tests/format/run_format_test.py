#!/usr/bin/env python3
"""Driver of the FORMAT.md conformance test (ctest: format_read_by_spec).

usage: run_format_test.py MAKE_ARCHIVES READ_BY_SPEC WORKDIR [FORMAT.md]

1. MAKE_ARCHIVES writes small archives and the C++ decoder's output for each.
2. READ_BY_SPEC (the independent decoder written from FORMAT.md) decodes each
   archive as a separate process; its output must equal the C++ output byte
   for byte.
3. Every single-byte change to a small archive (a sample of them in larger
   ones), truncations, a format version from the future (in the file header
   and in frame 0's header), and a wrong gap array entry with valid CRCs must
   be rejected by the spec decoder.
4. The *_runvalues_* archives have lossless = 2 (run-value tokens, §15.4.1)
   in every frame, and the writer's own choice picks it in some *_auto* one.
5. With FORMAT.md given, its §14 example hex dump must be byte for byte the
   archive MAKE_ARCHIVES writes for the same input (d3_f32_single).
Exits non-zero on any difference or acceptance of a corrupt archive.
"""
import importlib.util
import os
import random
import shutil
import struct
import subprocess
import sys


def load_module(path):
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    spec = importlib.util.spec_from_file_location("read_by_spec", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare_outputs(reader, workdir, names):
    failures = 0
    for name in names:
        archive = os.path.join(workdir, name + ".ebz")
        out = os.path.join(workdir, name + ".spec.raw")
        run = subprocess.run([sys.executable, reader, archive, out], capture_output=True,
                             text=True)
        if run.returncode != 0:
            print("FAIL %s: read_by_spec.py exited %d: %s" % (name, run.returncode,
                                                               run.stderr.strip()))
            failures += 1
            continue
        with open(out, "rb") as f:
            spec_bytes = f.read()
        with open(os.path.join(workdir, name + ".cpp.raw"), "rb") as f:
            cpp_bytes = f.read()
        if spec_bytes != cpp_bytes:
            first = next((i for i, (a, b) in enumerate(zip(spec_bytes, cpp_bytes)) if a != b),
                         min(len(spec_bytes), len(cpp_bytes)))
            print("FAIL %s: outputs differ (%d vs %d bytes, first difference at byte %d)" %
                  (name, len(spec_bytes), len(cpp_bytes), first))
            failures += 1
            continue
        print("ok   %-32s %s" % (name, run.stdout.strip()))
    return failures


def rejected(module, buf):
    try:
        module.decode(bytes(buf))
    except module.Corrupt:
        return True
    return False


def check_corruptions(module, workdir, names):
    failures = 0
    rng = random.Random(1)
    for name in names:
        with open(os.path.join(workdir, name + ".ebz"), "rb") as f:
            good = f.read()
        # Every byte of small archives, a sample of bytes of larger ones.
        positions = range(len(good)) if len(good) <= 600 else rng.sample(range(len(good)), 150)
        bad = [p for p in positions
               if not rejected(module, good[:p] + bytes([good[p] ^ rng.randrange(1, 256)]) +
                               good[p + 1:])]
        cuts = sorted(set([0, 1, 95, 96, len(good) - 16, len(good) - 1] +
                          rng.sample(range(len(good)), 20)))
        bad_cuts = [n for n in cuts if not rejected(module, good[:n])]
        # A format version newer than the reader's, in the file header or frame 0's
        # header (frame 0 follows the version-2 metadata block, §15.1).
        newer = getattr(module, "NEWEST_VERSION", 1) + 1
        future_ok = True
        for at in (4, 96 + struct.unpack_from("<I", good, 12)[0] + 4):
            future = bytearray(good)
            struct.pack_into("<H", future, at, newer)
            try:
                module.decode(bytes(future))
                future_ok = False
            except module.Corrupt as e:
                future_ok = future_ok and "version %d" % newer in str(e)
        if bad or bad_cuts or not future_ok:
            print("FAIL %s: accepted corrupt archives: changed bytes %s, truncations %s, "
                  "future version rejected properly: %s" % (name, bad[:10], bad_cuts[:10],
                                                            future_ok))
            failures += 1
        else:
            print("ok   %-32s %d byte changes, %d truncations and a future version rejected" %
                  (name, len(positions), len(cuts)))
    return failures


def check_gap_array_consistency(module, workdir, names):
    """A gap array entry changed with every CRC fixed up must still be
    rejected (FORMAT.md §5.4): the CRCs are not what catches it. Checked on
    the first version-1 archive with a gap array, and on the first version-2
    ones whose frame 0 also has zero-run tokens (§15.4: entries point at
    token starts) and run-value tokens (§15.4.1)."""
    wanted = {"version 1": lambda version, lossless: version == 1,
              "version 2 with zero-run tokens": lambda version, lossless: lossless == 1,
              "version 2 with run-value tokens": lambda version, lossless: lossless == 2}
    failures = 0
    for kind, fits in wanted.items():
        for name in names:
            with open(os.path.join(workdir, name + ".ebz"), "rb") as f:
                buf = bytearray(f.read())
            off = 96 + struct.unpack_from("<I", buf, 12)[0]  # frame 0, after any metadata
            version, = struct.unpack_from("<H", buf, off + 4)
            flags, lossless = buf[off + 11], buf[off + 14]
            lengths = [struct.unpack_from("<Q", buf, off + 136 + 16 * s)[0] for s in range(7)]
            if not fits(version, lossless) or not flags & 1 or lengths[2] < 2:
                continue
            gap_at = off + 256 + sum((x + 7) // 8 * 8 for x in lengths[:2])
            buf[gap_at + 1] ^= 1  # chunk 0, subsequence 1 (or chunk 1's first entry)
            struct.pack_into("<I", buf, off + 136 + 16 * 2 + 8,
                             module.crc32c(bytes(buf[gap_at:gap_at + lengths[2]])))
            struct.pack_into("<I", buf, off + 252, module.crc32c(bytes(buf[off:off + 252])))
            if rejected(module, buf):
                print("ok   %-32s a wrong gap with valid CRCs rejected (%s)" % (name, kind))
            else:
                print("FAIL %s: a wrong gap array entry with valid CRCs was accepted" % name)
                failures += 1
            break
        else:
            print("FAIL: no %s archive has a gap array with two entries" % kind)
            failures += 1
    return failures


def check_lossless_stages(module, workdir, names):
    """Cases named *_runvalues_* are forced to run-value tokens (§15.4.1): every frame
    must say lossless = 2, or they test nothing of it; and at least one archive the
    writer chose for itself (kAuto) should pick them too."""
    failures, chosen = 0, []
    for name in names:
        with open(os.path.join(workdir, name + ".ebz"), "rb") as f:
            buf = f.read()
        fh = module.parse_file_header(buf)
        stages = sorted({buf[off + 14] for off, _ in module.parse_index(buf, fh)})
        if "_runvalues_" in name and stages != [2]:
            print("FAIL %s: frames' lossless stages %s, expected only 2" % (name, stages))
            failures += 1
        elif "_auto" in name and 2 in stages:
            chosen.append(name)
    if not chosen:
        print("FAIL: no archive of the writer's own choice (*_auto*) picked run-value tokens")
        failures += 1
    if not failures:
        print("ok   lossless 2 in every frame of the *_runvalues_* archives; chosen in %s"
              % ", ".join(chosen))
    return failures


def check_spec_example(format_md, workdir):
    """The hex dump in FORMAT.md §14 must still be what the codec writes."""
    with open(format_md, encoding="utf-8") as f:
        text = f.read()
    dump = text[text.index("## 14. Example"):]
    dump = dump[dump.index("```") + 3:]
    dump = dump[:dump.index("```")]
    example = bytes.fromhex("".join("".join(line.split()[1:9]) for line in dump.splitlines()
                                    if line[:9].endswith(":")))
    with open(os.path.join(workdir, "d3_f32_single.ebz"), "rb") as f:
        written = f.read()
    if example != written:
        print("FAIL FORMAT.md §14: the example (%d bytes) is not what the codec writes (%d bytes)"
              % (len(example), len(written)))
        return 1
    print("ok   FORMAT.md §14 example matches d3_f32_single.ebz (%d bytes)" % len(example))
    return 0


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__)
    make_archives, reader, workdir = argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    made = subprocess.run([make_archives, workdir])
    if made.returncode != 0:
        print("FAIL: %s exited %d" % (make_archives, made.returncode))
        return 1
    with open(os.path.join(workdir, "cases.txt")) as f:
        names = f.read().split()
    if not names:
        print("FAIL: no archives were written")
        return 1
    failures = compare_outputs(reader, workdir, names)
    module = load_module(reader)
    small = [n for n in names if os.path.getsize(os.path.join(workdir, n + ".ebz")) <= 6000]
    failures += check_corruptions(module, workdir, small)
    failures += check_gap_array_consistency(module, workdir, names)
    failures += check_lossless_stages(module, workdir, names)
    if len(argv) == 5:
        failures += check_spec_example(argv[4], workdir)
    print("%d failure(s) in %d archives" % (failures, len(names)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
