"""The two predictors, as numpy models of what an encoder would emit.

Both return the quantization symbols: q + RADIUS for a quantized value (1 .. 2*RADIUS-1) and 0,
the escape, where the value is stored verbatim (or, for Lorenzo, an outlier follows). Both
reconstruct as a decoder would (float32 values, float64 arithmetic) and store verbatim whatever
would exceed the bound, so |x - rec| <= e holds by construction; callers check it anyway."""
import numpy as np

RADIUS = 32768
ZERO = RADIUS  # the symbol of a zero residual
EBZ_BLOCK = {1: (256,), 2: (16, 16), 3: (8, 8, 8), 4: (1, 8, 8, 8)}  # ebzip v1's Lorenzo blocks


def lorenzo(x, fill, e):
    """ebzip v1 (FORMAT.md §10): prequantize q = rint(x / 2e), N-D Lorenzo on q inside each
    block; fill and verbatim points take the q of their block's first quantized point (so they
    cost a cheap symbol and do not disturb the differences); symbols in C order."""
    blk = EBZ_BLOCK[x.ndim]
    step = 2 * e
    xd = x.astype(np.float64)
    q = np.rint(xd / step)
    ok = (~fill) & (np.abs(xd / step) < 2**26)
    ok &= np.abs((q * step).astype(np.float32).astype(np.float64) - xd) <= e
    verb = (~fill) & (~ok)
    rec = np.where(ok, (q * step).astype(np.float32), x)
    # pad to whole blocks and view as (blocks..., points of a block) to place the placeholders
    pad = [(0, (-n) % b) for n, b in zip(x.shape, blk)]
    qp = np.pad(np.where(ok, q, 0), pad)
    okp = np.pad(ok, pad)
    nb = [s // b for s, b in zip(qp.shape, blk)]
    split = sum(([a, b] for a, b in zip(nb, blk)), [])
    perm = list(range(0, 2 * x.ndim, 2)) + list(range(1, 2 * x.ndim, 2))
    qb = qp.reshape(split).transpose(perm).reshape(nb + [-1])
    okb = okp.reshape(split).transpose(perm).reshape(nb + [-1])
    first = np.take_along_axis(qb, np.argmax(okb, axis=-1)[..., None], -1)
    qb = np.where(okb, qb, np.where(okb.any(-1, keepdims=True), first, 0))
    qp = qb.reshape(nb + list(blk)).transpose(np.argsort(perm)).reshape(qp.shape)
    # successive differences along each dim; a block's first index along that dim keeps its value
    r = qp.astype(np.int64)
    for ax, b in enumerate(blk):
        d = np.diff(r, axis=ax, prepend=0)
        at_start = [slice(None)] * x.ndim
        at_start[ax] = slice(0, None, b)
        d[tuple(at_start)] = r[tuple(at_start)]
        r = d
    r = r[tuple(slice(0, n) for n in x.shape)]
    outl = np.abs(r) >= RADIUS
    sym = np.where(outl, 0, r + RADIUS).astype(np.int32).ravel()
    # v1 stores a verbatim value or an outlier as index + value, 8 bytes
    return dict(sym=sym, rec=rec, n_verb=int(verb.sum()),
                escape_bytes=8 * int(verb.sum()) + 8 * int(outl.sum()))


def _weights(I, lo, hi, s, order):
    """Weights of the neighbours at offsets (-3s, -s, +s, +3s) of the target indices I, given
    each target's usable window [lo, hi]: cubic where all four exist, else a lower-order or
    one-sided formula (the decoder applies the same rule, it depends only on indices)."""
    m3, m1, p1, p3 = [(I + o >= lo) & (I + o <= hi) for o in (-3 * s, -s, s, 3 * s)]
    assert m1.all()
    W = np.zeros((4, len(I)))
    rest = np.ones(len(I), bool)

    def put(cond, w):
        for k in range(4):
            W[k] = np.where(cond, w[k], W[k])
        return ~cond

    if order == 'cubic':
        rest &= put(rest & m3 & p1 & p3, (-1/16, 9/16, 9/16, -1/16))
        rest &= put(rest & m3 & p1, (-1/8, 6/8, 3/8, 0))
        rest &= put(rest & p1 & p3, (0, 3/8, 6/8, -1/8))
    rest &= put(rest & p1, (0, .5, .5, 0))
    rest &= put(rest & m3, (-.5, 1.5, 0, 0))
    put(rest, (0, 1, 0, 0))
    return W


def interp(x, fill, e, T, order='cubic', mode='self', idims=None, coarse=1.0, coarse_stride=4):
    """Tile-local multilevel interpolation (SZ3 / cuSZ-i family).

    T: tile edge (power of two) on the interpolated dims idims (default all); the other dims are
    batch dims (tile extent 1). Anchors: every T-th point on idims, prequantized and coded by
    N-D Lorenzo over the anchor grid as a separate small stream. Then level by level (stride
    T/2 .. 1), dim by dim, each point is predicted from reconstructed values. Which neighbours a
    tile may use is the mode:
      'self'   only its own points [lo, lo+T-1]: fully independent tiles, the last strip of each
               level is extrapolated;
      'anchor' as self, plus the far neighbour at lo+T where it is a point of the anchor grid
               (shared by the neighbouring tile, known before any tile is decoded);
      'face'   [lo, lo+T]: also the far faces, which belong to the next tile (cuSZ-i);
    'face' with T >= the largest extent is SZ3's global interpolation.
    Fill points emit no symbol (the decoder knows the mask) and take the prediction as value.
    Symbols: the anchor stream first, then tile by tile, level order inside a tile (a region
    decoder can find a tile's symbols); sym_levelmajor is the frame-wide level order instead.
    coarse < 1: the anchors and the levels of stride >= coarse_stride quantize against
    coarse * e (SZ3 halves its bound on such levels, whose errors feed the finer levels'
    predictions); e still bounds every point."""
    nd = x.ndim
    shape = x.shape
    idims = list(range(nd)) if idims is None else list(idims)
    e_fine = e
    e = e_fine * coarse
    step = 2 * e
    xd = x.astype(np.float64)
    rec = np.zeros(shape, np.float32)
    valid = ~fill
    mean = xd[valid].mean() if valid.any() else 0.0
    Td = [T if d in idims else 1 for d in range(nd)]
    tile_stride = np.cumprod([1] + [-(-shape[d] // Td[d]) for d in range(nd - 1, 0, -1)])[::-1]
    syms, tiles, levels = [], [], []
    n_verb = 0

    # anchors: prequantized, Lorenzo over the anchor grid (fill anchors take the mean so they
    # do not disturb the differences; they emit no symbol)
    asl = tuple(slice(0, None, T) if d in idims else slice(None) for d in range(nd))
    xa, va = xd[asl], valid[asl]
    q = np.rint(np.where(va, xa, mean) / step)
    ok = va & (np.abs(xa / step) < 2**26) & (np.abs((q * step).astype(np.float32) - xa) <= e)
    ra = np.where(va & ~ok, x[asl], (q * step).astype(np.float32))
    rec[asl] = ra
    r = np.where(va & ~ok, np.rint(ra.astype(np.float64) / step).clip(-2**26, 2**26), q).astype(np.int64)
    for ax in range(nd):
        r = np.diff(r, axis=ax, prepend=0)
    n_verb += int((va & ~ok).sum())
    n_outl = int((ok & (np.abs(r) >= RADIUS)).sum())
    n_anchor = int(va.sum())
    syms.append(np.where(ok & (np.abs(r) < RADIUS), r + RADIUS, 0)[va])
    tiles.append(np.full(n_anchor, -1))
    levels.append(np.zeros(n_anchor, int))

    s, lev = T // 2, 1
    while s >= 1:
        e = e_fine * (coarse if s >= coarse_stride else 1.0)
        step = 2 * e
        for d in idims:
            # targets: odd multiples of s along d; dims before d in idims are already at stride s
            sl, coords = [], []
            for k in range(nd):
                if k not in idims:
                    sl.append(slice(None)); coords.append(np.arange(shape[k]))
                elif k == d:
                    sl.append(slice(s, None, 2 * s)); coords.append(np.arange(s, shape[k], 2 * s))
                else:
                    st = s if idims.index(k) < idims.index(d) else 2 * s
                    sl.append(slice(0, None, st)); coords.append(np.arange(0, shape[k], st))
            I = coords[d]
            if len(I) == 0:
                continue
            lo = (I // T) * T
            src = list(sl)
            src[d] = slice(None)
            src = rec[tuple(src)].astype(np.float64)
            bshape = [1] * nd
            bshape[d] = len(I)

            def predict(far):
                hi = np.minimum(lo + (T if far else T - 1), shape[d] - 1)
                W = _weights(I, lo, hi, s, order)
                pred = 0
                for k, o in enumerate((-3 * s, -s, s, 3 * s)):
                    if W[k].any():
                        pred = pred + W[k].reshape(bshape) * np.take(src, np.clip(I + o, 0, shape[d] - 1), axis=d)
                return pred

            pred = predict(mode != 'self')
            if mode == 'anchor':  # the far neighbour only where it lies on the anchor grid
                on_grid = True
                for k in idims:
                    if k != d:
                        bs = [1] * nd
                        bs[k] = len(coords[k])
                        on_grid = on_grid & (coords[k] % T == 0).reshape(bs)
                pred = np.where(on_grid, pred, predict(False))
            tsl = tuple(sl)
            X, V = xd[tsl], valid[tsl]
            qq = np.rint((X - pred) / step)
            R = (pred + qq * step).astype(np.float32)
            ok = V & (np.abs(qq) < RADIUS) & (np.abs(R.astype(np.float64) - X) <= e)
            rec[tsl] = np.where(V & ~ok, x[tsl], np.where(V, R, pred.astype(np.float32)))
            n_verb += int((V & ~ok).sum())
            sym = np.where(ok, qq + RADIUS, 0).astype(np.int32)
            tid = 0
            for k in range(nd):
                bs = [1] * nd
                bs[k] = len(coords[k])
                tid = tid + ((coords[k] // Td[k]) * tile_stride[k]).reshape(bs)
            tid = np.broadcast_to(tid, sym.shape)
            syms.append(sym[V]); tiles.append(tid[V]); levels.append(np.full(int(V.sum()), lev))
        s //= 2
        lev += 1
    sym, tile, level = np.concatenate(syms), np.concatenate(tiles), np.concatenate(levels)
    o = np.argsort(tile, kind='stable')
    # a verbatim value is the escape symbol + the raw float32, found in order: no index needed
    return dict(sym=sym[o].astype(np.int32), tiles=tile[o], level=level[o],
                sym_levelmajor=sym.astype(np.int32), rec=rec, n_verb=n_verb, n_anchor=n_anchor,
                escape_bytes=4 * n_verb + 4 * n_outl)
