#!/usr/bin/python3
"""The study: ebzip v1 and SZ3 measured, the predictor x lossless-stage sweep, written to
WORK_DIR/results.json and summarized in WORK_DIR/tables.md (also printed).

Usage: bench/ratio_study/sweep.py [BUILD_DIR] [WORK_DIR] [--fields NAME ...] [--rels REL ...]
  BUILD_DIR  holds client/cli/ebzip and bench/ebzip_export_field (default: build/ at the
             repository root); nothing is built here.
  WORK_DIR   exported fields, scratch archives and the results (default /tmp/ebzip_ratio_study).
Environment: SZ3 (the SZ3 command line; its rows are skipped when unset or absent), DATA (the
ferret-vis NetCDF files, default /usr/share/ferret-vis/data)."""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

import baselines
import fields
import fillmask
import lossless
import predict
import summary

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELS = (1e-2, 1e-3, 1e-4)


def configs(nd, G):
    """(mode, T, order, idims, pick) per rank. The best of each mode is taken among the pick
    rows only (the rows the recommendation's tables come from); the other rows are ablations:
    shared-anchor tiles, and face tiles over spatial dims only. G: a T covering the whole field
    (global interpolation)."""
    lc = ('linear', 'cubic')
    if nd == 2:
        return ([(m, T, o, None, True) for m in ('self', 'face') for T in (16, 32, 64) for o in lc]
                + [('global', G, o, None, True) for o in lc]
                + [('anchor', T, o, None, False) for T in (16, 32, 64) for o in lc])
    if nd == 3:
        return ([(m, T, o, None, True) for m in ('self', 'face') for T in (8, 16, 32) for o in lc]
                + [('self', T, 'cubic', (1, 2), True) for T in (16, 32, 64)]
                + [('global', G, o, None, True) for o in lc]
                + [('anchor', T, 'cubic', None, False) for T in (8, 16, 32)]
                + [(m, T, 'cubic', (1, 2), False) for m in ('anchor', 'face') for T in (32, 64)])
    if nd == 4:
        return ([('self', T, o, (1, 2, 3), True) for T in (8, 16, 32) for o in lc]
                + [('face', T, 'cubic', (1, 2, 3), True) for T in (8, 16, 32)]
                + [('self', T, 'cubic', None, True) for T in (8, 16)]
                + [('self', T, 'cubic', (2, 3), True) for T in (16, 32, 64)]
                + [('global', G, o, (1, 2, 3), True) for o in lc]
                + [('global', G, 'cubic', None, True)]
                + [('anchor', T, 'cubic', (1, 2, 3), False) for T in (8, 16, 32)])
    raise SystemExit(f'rank {nd}: the study has configurations for 2-D to 4-D fields')


def checked(fld, e, r, what):
    """The bound must hold exactly, as in ebzip (FORMAT.md §10.1): stop on any violation."""
    err = fields.error(fld, r['rec'], e)
    if err['viol'] or err['maxerr_over_e'] > 1:
        raise SystemExit(f'BOUND VIOLATED: {fld.name} e={e!r} {what}: {err}')
    return err


def lorenzo_row(fld, e):
    r = predict.lorenzo(fld.x, fld.fill, e)
    ev = lossless.evaluate(r['sym'])
    bits = lossless.huff_size(r['sym'], lossless.ALPHABET)[0]
    # v1's own framing: gap array (1 B / 1024 bits) and chunk index (4 B / 16384 symbols);
    # its totals take v1's fill runs, so this row calibrates the model against ebzip v1
    ev['huff+v1framing'] = ev['huff'] + bits / 8 / 1024 + 4 * -(-fld.x.size // 16384)
    return dict(ev=ev, esc=r['escape_bytes'], verb=r['n_verb'], full=True,
                zero_frac=float(np.mean(r['sym'] == predict.ZERO)), **checked(fld, e, r, 'lorenzo'))


def interp_row(fld, e, mode, T, order, idims, pick):
    """(key, row, symbols) of one interpolation configuration, histogram-only candidates."""
    key = f'{mode} T{T} {order}' + (f' dims{"".join(map(str, idims))}' if idims else '')
    r = predict.interp(fld.x, fld.fill, e, T=T, order=order,
                       mode='face' if mode == 'global' else mode, idims=idims)
    assert len(r['sym']) == int((~fld.fill).sum())
    row = dict(cfg=(mode, T, order, idims), pick=pick, ev=lossless.evaluate(r['sym'], full=False),
               esc=r['escape_bytes'], verb=r['n_verb'], anchors=r['n_anchor'],
               zero_frac=float(np.mean(r['sym'] == predict.ZERO)), **checked(fld, e, r, key))
    if mode == 'self':  # independent tiles: what a region index costs, and two ablations
        L = lossless.huff_size(r['sym'], lossless.ALPHABET)[2]
        row['index'] = lossless.index_cost(r['sym'], r['tiles'], L)
        per_level = 0  # one Huffman code per level instead of one per frame
        for lv in np.unique(r['level']):
            b, tb = lossless.huff_size(r['sym'][r['level'] == lv])[:2]
            per_level += b / 8 + tb
        row['ev']['huff per level'] = per_level
        # frame-wide level order instead of tile by tile (not region-decodable)
        tok, extra = lossless.zero_run_tokens(r['sym_levelmajor'])
        b, tb = lossless.huff_size(tok)[:2]
        row['ev']['rle0+huff level-major'] = (b + extra) / 8 + tb
    return key, row, r['sym']


def sweep_field(fld, rels, ebzip, sz3, work, log):
    n = fld.x.size
    G = 1 << int(np.ceil(np.log2(max(fld.x.shape))))
    res = dict(name=fld.name, source=fields.FIELDS[fld.name], shape=fld.x.shape, n=n,
               fill_count=int(fld.fill.sum()), fill=fillmask.costs(fld.fill), rels={})
    for rel in rels:
        e = rel * fld.range
        rows = {}
        out = res['rels'][str(rel)] = dict(e=e, rows=rows, ebzip=baselines.ebzip_v1(fld, e, ebzip, work),
                                           sz3=baselines.sz3(fld, e, sz3, work) if sz3 else None)
        log(f'{fld.name} {rel:g}: ebzip v1 {out["ebzip"]["bytes"]} B'
            + (f', SZ3 {out["sz3"]["bytes"]} B' if sz3 else ''))
        t0 = time.time()
        rows['lorenzo'] = lorenzo_row(fld, e)
        log(f'{fld.name} {rel:g} lorenzo {time.time() - t0:.1f} s')
        best = {}  # mode -> (size, key, symbols): each mode's best pick row gets every candidate
        for cfg in configs(fld.x.ndim, G):
            t0 = time.time()
            key, row, sym = interp_row(fld, e, *cfg)
            rows[key] = row
            size = row['ev']['huff'] + row['esc']
            mode, pick = cfg[0], cfg[-1]
            if pick and (mode not in best or size < best[mode][0]):
                best[mode] = (size, key, sym)
            log(f'{fld.name} {rel:g} {key} {time.time() - t0:.1f} s, huff {size * 8 / n:.3f} b/v')
        for _, key, sym in best.values():
            rows[key]['ev'].update(lossless.evaluate(sym, full=True))
            rows[key]['full'] = True
    return res


def main():
    ap = argparse.ArgumentParser(usage='%(prog)s [BUILD_DIR] [WORK_DIR] [--fields NAME ...] [--rels REL ...]',
                                 description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('build', nargs='?', metavar='BUILD_DIR', default=os.path.join(REPO, 'build'))
    ap.add_argument('work', nargs='?', metavar='WORK_DIR', default='/tmp/ebzip_ratio_study')
    ap.add_argument('--fields', nargs='+', metavar='NAME', choices=list(fields.FIELDS),
                    default=list(fields.FIELDS), help=', '.join(fields.FIELDS))
    ap.add_argument('--rels', nargs='+', metavar='REL', type=float, default=list(RELS),
                    help='bounds relative to the value range (default 1e-2 1e-3 1e-4)')
    a = ap.parse_args()
    ebzip = os.path.join(a.build, 'client', 'cli', 'ebzip')
    export = os.path.join(a.build, 'bench', 'ebzip_export_field')
    for tool in (ebzip, export):
        if not os.access(tool, os.X_OK):
            sys.exit(f'missing {tool}: build it first (ninja -C {a.build} ebzip ebzip_export_field)')
    data = os.environ.get('DATA', '/usr/share/ferret-vis/data')
    sz3 = os.environ.get('SZ3', '')
    if not sz3:
        print('SZ3 unset: SZ3 rows skipped (set SZ3 to the SZ3 command line)', file=sys.stderr)
    elif not shutil.which(sz3):
        print(f'SZ3={sz3}: not found or not executable, SZ3 rows skipped', file=sys.stderr)
    sz3 = shutil.which(sz3) if sz3 else None
    os.makedirs(a.work, exist_ok=True)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    results = {}
    for name in a.fields:
        fld = fields.export(name, data, export, a.work)
        results[name] = sweep_field(fld, a.rels, ebzip, sz3, a.work, log)
        with open(os.path.join(a.work, 'results.json'), 'w') as f:
            json.dump(results, f, indent=1)
    tables = summary.render(results)
    with open(os.path.join(a.work, 'tables.md'), 'w') as f:
        f.write(tables)
    print(tables)
    log(f'results: {a.work}/results.json, tables: {a.work}/tables.md')


if __name__ == '__main__':
    main()
