#!/usr/bin/python3
"""Bound check of both predictors on synthetic 2-, 3- and 4-D fields with 10 % fill:
|x - rec| <= e on every non-fill value, one symbol per non-fill value. Exits 1 on any
violation. Run: bench/ratio_study/check_bound.py"""
import sys

import numpy as np

import predict

MODES = [dict(T=8, mode='self', order='cubic'), dict(T=8, mode='self', order='linear'),
         dict(T=16, mode='self', order='cubic'), dict(T=8, mode='anchor', order='cubic'),
         dict(T=16, mode='anchor', order='linear'), dict(T=8, mode='face', order='cubic'),
         dict(T=64, mode='face', order='cubic'),  # T past every extent: global interpolation
         dict(T=8, mode='face', order='linear', batch_dim0=True),
         dict(T=16, mode='face', order='cubic', coarse=0.5)]  # coarse levels' tighter bound

rng = np.random.default_rng(0)
failures = 0
for shape in [(37, 50), (9, 17, 20), (3, 5, 18, 20)]:
    g = np.meshgrid(*[np.linspace(0, 3, n) for n in shape], indexing='ij')
    x = (sum(np.sin(a * (i + 1)) for i, a in enumerate(g)) + 0.01 * rng.standard_normal(shape)).astype(np.float32)
    fill = rng.random(shape) < 0.1
    for e in (1e-1, 1e-3):
        for kw in MODES:
            kw = dict(kw)
            idims = range(1, len(shape)) if kw.pop('batch_dim0', False) else None
            r = predict.interp(x, fill, e, idims=idims, **kw)
            err = np.abs(r['rec'].astype(np.float64) - x)[~fill].max()
            ok = err <= e and len(r['sym']) == (~fill).sum()
            failures += not ok
            print(f'{"ok  " if ok else "FAIL"} {shape} e={e:g} interp {kw} idims={idims}: max err / e '
                  f'{err / e:.4f}, verbatim {r["n_verb"]}, symbols {len(r["sym"])} of {(~fill).sum()}')
        r = predict.lorenzo(x, fill, e)
        err = np.abs(r['rec'].astype(np.float64) - x)[~fill].max()
        failures += not err <= e
        print(f'{"ok  " if err <= e else "FAIL"} {shape} e={e:g} lorenzo: max err / e {err / e:.4f}')
if failures:
    sys.exit(f'BOUND CHECK FAILED: {failures} configuration(s) violated the bound')
print('bound check: no violations')
