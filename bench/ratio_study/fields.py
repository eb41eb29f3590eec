"""The real fields of the study: exported by the repository's ebzip_export_field from Debian's
ferret-vis NetCDF files, loaded as float32 arrays with their fill mask."""
import os
import subprocess
from types import SimpleNamespace

import numpy as np

# name: FILE:VARIABLE under the data directory
FIELDS = {
    'etopo5_ROSE': 'etopo5.cdf:ROSE',
    'levitus_SALT': 'levitus_climatology.cdf:SALT',
    'ocean_atlas_TEMP': 'ocean_atlas_subset.nc:TEMP',
    'navy_winds_UWND': 'monthly_navy_winds.cdf:UWND',
}


def export(name, data_dir, export_tool, work):
    """Writes WORK/NAME.raw and WORK/NAME.filled.raw (fill replaced by the mean of the non-fill
    values, what SZ3 gets) and returns the field loaded."""
    raw = os.path.join(work, name + '.raw')
    out = subprocess.run([export_tool, os.path.join(data_dir, FIELDS[name]), raw,
                          os.path.join(work, name + '.filled.raw')],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    meta = dict(kv.split('=', 1) for kv in out.split())
    if meta['dtype'] != 'f32':
        raise SystemExit(f'{name}: dtype {meta["dtype"]}, the study handles f32 only')
    with open(os.path.join(work, name + '.meta'), 'w') as f:
        f.write(out)
    return load(name, work)


def load(name, work):
    """The exported field: x (float32, C order), fill (bool mask), fill_value (float or None),
    range (max - min of the non-fill values, what REL is relative to), raw / filled paths."""
    with open(os.path.join(work, name + '.meta')) as f:
        meta = dict(kv.split('=', 1) for kv in f.read().split())
    shape = tuple(int(s) for s in meta['shape'].split(','))
    raw = os.path.join(work, name + '.raw')
    x = np.fromfile(raw, '<f4').reshape(shape)
    fill_value = None if meta['fill'] == 'none' else float(meta['fill'])
    fill = (x == np.float32(fill_value)) if fill_value is not None else np.zeros(shape, bool)
    if not np.isfinite(x).all():  # the predictors have no path for NaN/Inf
        raise SystemExit(f'{name}: non-finite values, not handled by the study')
    v = x[~fill].astype(np.float64)
    return SimpleNamespace(name=name, x=x, fill=fill, fill_value=fill_value,
                           range=float(v.max() - v.min()), raw=raw,
                           filled=os.path.join(work, name + '.filled.raw'))


def error(fld, rec, e):
    """PSNR (dB), max |x - rec| / e and the number of values over e, over the non-fill values,
    in float64."""
    m = ~fld.fill
    d = np.abs(fld.x[m].astype(np.float64) - rec[m].astype(np.float64))
    mse = float(np.mean(d * d))
    psnr = float('inf') if mse == 0 else float(20 * np.log10(fld.range) - 10 * np.log10(mse))
    return dict(psnr=psnr, maxerr_over_e=float(d.max()) / e, viol=int((d > e).sum()))
