#!/usr/bin/python3
"""Markdown tables from the sweep's results: bench/ratio_study/summary.py WORK_DIR/results.json

Sizes are whole-archive estimates: candidate + escapes (verbatim values) + the fill mask
(fillmask.IN_TOTALS; v1's fill runs for the v1-framing row) + HDR. b/v = bits per value over
all elements, fill included; ratio = 32 / b/v."""
import json
import sys

import fillmask

HDR = 400  # v1's file header (96) + frame header (256) + frame index (32) + trailer (16)
MAIN = ('huff', 'rle0+huff', 'huff+zstd3/64K')
ALL = ('H0', 'huff', 'rle0+huff', 'H1ctx(rle0)', 'rv+huff', 'zblk64+huff', 'zblk256+huff', 'zblk1024+huff', 'huff+zlib1',
       'huff+zlib6', 'huff+zstd3', 'huff+zstd3/64K', 'huff+zstd19', 'huff+lzma', 'rle0+huff+zstd3',
       'zstd3(sym u16)')
MODES = (('self', 'interp, independent tiles'), ('face', 'interp, tiles + far faces'),
         ('global', 'interp, global (SZ3-like)'))


def rel_label(r):
    m, ex = f'{float(r):e}'.split('e')
    return f'{float(m):g}e{int(ex)}'


def table(head, rows):
    return ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)] + ['| ' + ' | '.join(r) + ' |' for r in rows]


class FieldResults:
    def __init__(self, R):
        self.R, self.n, self.rels = R, R['n'], list(R['rels'])
        self.fill = R['fill'].get(fillmask.IN_TOTALS, 0)

    def rows(self, r):
        return self.R['rels'][r]['rows']

    def bv(self, nbytes):
        return nbytes * 8 / self.n

    def total(self, r, key, cand):
        row = self.rows(r)[key]
        fill = self.R['fill'].get('v1 runs (8 B/run)', 0) if cand == 'huff+v1framing' else self.fill
        return row['ev'][cand] + row['esc'] + fill + HDR

    def picks(self, mode):
        """{rel: key} of the fully evaluated row of this mode."""
        return {r: next(k for k, v in self.rows(r).items()
                        if v.get('full') and (v.get('cfg') or ['lorenzo'])[0] == mode) for r in self.rels}

    def pick_label(self, keys):
        mid = self.rels[len(self.rels) // 2]
        other = [f'{rel_label(r)}: {keys[r]}' for r in self.rels if keys[r] != keys[mid]]
        return keys[mid] + (f' ({"; ".join(other)})' if other else '')

    def baseline(self, r, who, extra=0):
        b = self.R['rels'][r][who]
        return f'{self.bv(b["bytes"] + extra):.3f}' if b else 'n/a'


def main_table(F):
    """Per field: the measured baselines and the main candidates, b/v (README)."""
    R = F.R
    out = [f'### {R["name"]} {tuple(R["shape"])}, {100 * R["fill_count"] / F.n:.0f} % fill\n']
    head = ['method'] + [f'REL {rel_label(r)}' for r in F.rels]
    rows = [['ebzip v1, measured'] + [F.baseline(r, 'ebzip') for r in F.rels],
            ['SZ3, measured (mean-filled input, fill not restored)'] + [F.baseline(r, 'sz3') for r in F.rels]]
    if F.fill:
        rows.append([f'SZ3 + fill mask ({fillmask.IN_TOTALS})'] + [F.baseline(r, 'sz3', F.fill) for r in F.rels])
    for mode, label in (('lorenzo', 'Lorenzo (v1 model)'),) + MODES:
        keys = F.picks(mode)
        name = label if mode == 'lorenzo' else f'{label}: {F.pick_label(keys)}'
        rows.append([name] + [' / '.join(f'{F.bv(F.total(r, keys[r], c)):.3f}' for c in MAIN) for r in F.rels])
    return out + table(head, rows)


def fill_table(fs):
    fs = [F for F in fs if F.R['fill']]
    if not fs:
        return []
    cands = list(fs[0].R['fill'])
    head = ['fill mask coding'] + [f'{F.R["name"]} B (b/v)' for F in fs]
    return table(head, [[c] + [f'{F.R["fill"][c]:,} ({F.bv(F.R["fill"][c]):.3f})' for F in fs] for c in cands])


def index_table(fs):
    """Region index of the independent-tile rows, one row per tiling, as % of the rle0+huff archive."""
    last = fs[0].rels[-1]  # the grouped widths grow as the bound tightens: show the largest
    head = ['field', 'tiling', 'symbols/tile', 'u32/tile b/v', f'grouped b/v at {rel_label(last)}'] + \
           [f'% at {rel_label(r)} (u32 / grouped)' for r in fs[0].rels]
    rows = []
    for F in fs:
        seen = set()
        for key, row in F.rows(F.rels[0]).items():
            if 'index' not in row:
                continue
            mode, T, order, idims = row['cfg']
            tiling = f'T{T}' + (f' dims{"".join(map(str, idims))}' if idims else '')
            if tiling in seen:
                continue
            seen.add(tiling)
            ix = row['index']
            pct = [f'{100 * F.rows(r)[key]["index"]["u32"] / F.total(r, key, "rle0+huff"):.1f} / '
                   f'{100 * F.rows(r)[key]["index"]["grouped"] / F.total(r, key, "rle0+huff"):.1f}' for r in F.rels]
            rows.append([F.R['name'], tiling, f'{ix["syms_per_tile"]:.0f}', f'{F.bv(ix["u32"]):.4f}',
                         f'{F.bv(F.rows(last)[key]["index"]["grouped"]):.4f}'] + pct)
    return table(head, rows)


def detail(F):
    """Every candidate for each mode's pick, then the whole sweep and its ablations."""
    R = F.R
    out = [f'\n### {R["name"]}: every candidate, b/v (ratio); PSNR in dB\n']
    head = ['method'] + [f'REL {rel_label(r)}' for r in F.rels]
    rows = []
    for who, label in (('ebzip', 'ebzip v1, measured'), ('sz3', 'SZ3, measured')):
        rows.append([f'**{label}**'] + [
            (lambda b: f'{F.bv(b["bytes"]):.3f} ({32 / F.bv(b["bytes"]):.1f}), {b["psnr"]:.1f} dB, '
                       f'max err {b["maxerr_over_e"]:.4f} e, {b["viol"]} viol'
                       + ('' if b['fill_restored'] or not R['fill_count'] else ', fill not restored'))(R['rels'][r][who])
            if R['rels'][r][who] else 'n/a' for r in F.rels])
    for mode, label in (('lorenzo', 'Lorenzo (v1 model)'),) + MODES:
        keys = F.picks(mode)
        rows.append([f'*{label}*'] + [f'{keys[r]}, {F.rows(r)[keys[r]]["psnr"]:.1f} dB, verbatim '
                                      f'{F.rows(r)[keys[r]]["verb"]}' for r in F.rels])
        for c in ALL + (('huff+v1framing',) if mode == 'lorenzo' else ()):
            rows.append([f'&nbsp;&nbsp;+ {c}'] + [
                (lambda t: f'{F.bv(t):.3f} ({32 / F.bv(t):.1f})')(F.total(r, keys[r], c)) for r in F.rels])
    out += table(head, rows)
    out.append(f'\nSweep ({R["name"]}): b/v with huff / rle0+huff, zero-symbol share; independent '
               'tiles also: one Huffman code per level / rle0+huff in frame-wide level order. '
               '`*` = not a pick row (ablation)\n')
    rows = []
    for key, row in F.rows(F.rels[0]).items():
        cells = []
        for r in F.rels:
            w = F.rows(r)[key]
            c = f'{F.bv(F.total(r, key, "huff")):.3f} / {F.bv(F.total(r, key, "rle0+huff")):.3f}; z {w["zero_frac"]:.2f}'
            if 'huff per level' in w['ev']:
                c += (f'; {F.bv(F.total(r, key, "huff per level")):.3f} / '
                      f'{F.bv(F.total(r, key, "rle0+huff level-major")):.3f}')
            cells.append(c)
        rows.append([key + ('' if row.get('pick', True) else ' *')] + cells)
    return out + table(['config'] + head[1:], rows)


def render(results):
    fs = [FieldResults(R) for R in results.values()]
    out = ['## Main candidates, whole archive, bits/value\n',
           'Cells: huff / rle0+huff / huff+zstd3/64K. Fill mask as '
           f'{fillmask.IN_TOTALS} in every candidate; SZ3 got the mean-filled array.\n']
    for F in fs:
        out += main_table(F) + ['']
    out += ['## Fill mask\n'] + fill_table(fs) + ['', '## Region index\n'] + index_table(fs)
    out += ['', '## Detail'] + sum((detail(F) for F in fs), [])
    return '\n'.join(out) + '\n'


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        print(render(json.load(f)), end='')
