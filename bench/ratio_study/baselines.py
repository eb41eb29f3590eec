"""Measured archives at the same absolute bound: ebzip v1 (the repository's CLI) and SZ3.

SZ3 gets the exporter's .filled.raw (fill replaced by the mean of the non-fill values): it has
no fill handling, so it neither pays for nor restores the fill values. Checked in float64 like
every prototype candidate."""
import os
import subprocess

import numpy as np

from fields import error


def _run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)  # errors still reach stderr


def _judge(fld, path, e, nbytes):
    rec = np.fromfile(path, '<f4').reshape(fld.x.shape)
    fill_restored = np.array_equal(rec[fld.fill].view('<u4'), fld.x[fld.fill].view('<u4'))
    return dict(bytes=nbytes, fill_restored=bool(fill_restored), **error(fld, rec, e))


def ebzip_v1(fld, e, ebzip, work):
    arc, out = os.path.join(work, 'v1.ebz'), os.path.join(work, 'v1.out')
    cmd = [ebzip, 'compress', '--quiet', '-f', '--type', 'f32', '--shape', ','.join(map(str, fld.x.shape)),
           '--abs', repr(e), '--predictor', 'lorenzo', '--lossless', 'huffman']
    if fld.fill_value is not None:
        cmd += ['--fill', repr(fld.fill_value)]
    _run(cmd + [fld.raw, '-o', arc])
    _run([ebzip, 'decompress', '-f', arc, '-o', out])
    return _judge(fld, out, e, os.path.getsize(arc))


def sz3(fld, e, sz3_bin, work):
    arc, out = os.path.join(work, 'a.sz'), os.path.join(work, 'a.szout')
    dims = [f'-{fld.x.ndim}'] + [str(d) for d in fld.x.shape[::-1]]  # fastest first
    _run([sz3_bin, '-f', '-i', fld.filled, '-z', arc, *dims, '-M', 'ABS', repr(e)])
    _run([sz3_bin, '-f', '-z', arc, '-o', out, *dims, '-M', 'ABS', repr(e)])
    return _judge(fld, out, e, os.path.getsize(arc))
