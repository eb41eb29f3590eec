"""Lossless candidates for the symbol stream, each as a size in bytes (code tables included).

Huffman sizes are exact from the histogram (code lengths as ebzip builds them); the byte-level
passes run on a real bit-exact Huffman bitstream. zlib, zstd and lzma stand in for any byte-LZ
pass after Huffman; zstd is the real thing, through Debian's python3-zstandard."""
import heapq
import lzma
import sys
import zlib

import numpy as np

from predict import ZERO

ALPHABET = 2 * ZERO
RUN_BASE = ALPHABET  # rle0 run tokens follow the quantization symbols
RV_BASE = RUN_BASE + 64  # run-value tokens after them (room for every rle0 class)


def huff_lengths(counts, maxlen=20):
    """Huffman code lengths; like ebzip, halve the counts until the longest code fits maxlen."""
    used = np.nonzero(counts)[0]
    L = np.zeros(len(counts), np.int64)
    if len(used) == 1:
        L[used] = 1
        return L
    w = counts[used].astype(np.int64)
    while True:
        h = [(int(c), i) for i, c in enumerate(w)]
        heapq.heapify(h)
        parent, nid = {}, len(w)
        while len(h) > 1:
            a, b = heapq.heappop(h), heapq.heappop(h)
            parent[a[1]] = parent[b[1]] = nid
            heapq.heappush(h, (a[0] + b[0], nid))
            nid += 1
        depth = np.zeros(nid, np.int64)
        for node in range(nid - 2, -1, -1):
            depth[node] = depth[parent[node]] + 1
        if depth[:len(w)].max() <= maxlen:
            L[used] = depth[:len(w)]
            return L
        w = (w + 1) // 2


def table_bytes(L):
    """ebzip's code-length section (FORMAT.md §5.1): a byte per used symbol, 0 + LEB128 per
    run of unused ones."""
    nz = L > 0
    edges = np.diff(np.concatenate([[0], (~nz).astype(np.int8), [0]]))
    runs = np.nonzero(edges == -1)[0] - np.nonzero(edges == 1)[0]
    return int(nz.sum()) + sum(1 + max(1, (int(r).bit_length() + 6) // 7) for r in runs)


def huff_size(sym, alphabet=None):
    """(payload bits, table bytes, code lengths, histogram) of one Huffman code for sym."""
    counts = np.bincount(sym, minlength=alphabet or 0)
    L = huff_lengths(counts)
    return int((counts * L).sum()), table_bytes(L), L, counts


def order0_bits(counts):
    """Order-0 entropy: the floor of any static per-symbol code for this histogram."""
    p = counts[counts > 0] / counts.sum()
    return float(-(counts[counts > 0] * np.log2(p)).sum())


def huff_encode(sym, L):
    """The canonical Huffman bitstream (MSB first) as bytes, to feed a byte-level pass."""
    codes = np.zeros(len(L), np.int64)
    bl = np.bincount(L, minlength=L.max() + 1)
    bl[0] = 0
    code, nxt = 0, {}
    for ln in range(1, L.max() + 1):
        code = (code + bl[ln - 1]) << 1
        nxt[ln] = code
    for s in np.nonzero(L)[0]:
        codes[s] = nxt[L[s]]
        nxt[L[s]] += 1
    out = []
    for c0 in range(0, len(sym), 1 << 20):
        s = sym[c0:c0 + (1 << 20)]
        ln, cd = L[s], codes[s]
        start = np.concatenate([[0], np.cumsum(ln)[:-1]])
        bits = np.zeros(int(ln.sum()), np.uint8)
        for b in range(int(ln.max())):
            m = ln > b
            bits[start[m] + b] = (cd[m] >> (ln[m] - 1 - b)) & 1
        out.append(bits)
    return np.packbits(np.concatenate(out)).tobytes()


def zero_run_tokens(sym):
    """cuSZ+-style rle0: each run of k >= 2 zero-residual symbols becomes one token
    RUN_BASE + c, c = floor(log2 k), followed by c extra bits (k - 2^c). A GPU finds the runs
    with a scan. Returns (token stream, total extra bits)."""
    z = sym == ZERO
    dz = np.diff(np.concatenate([[0], z.astype(np.int8), [0]]))
    st = np.nonzero(dz == 1)[0]
    ln = np.nonzero(dz == -1)[0] - st
    long_ = ln >= 2
    st, ln = st[long_], ln[long_]
    keep = np.ones(len(sym), bool)
    # every zero of a long run but the first goes; the first becomes the token
    drop = np.repeat(st + 1, ln - 1) + (np.arange(int((ln - 1).sum()))
                                        - np.repeat(np.concatenate([[0], np.cumsum(ln - 1)[:-1]]), ln - 1))
    keep[drop] = False
    c = np.floor(np.log2(ln)).astype(np.int64)
    tok = sym.copy()
    tok[st] = RUN_BASE + c
    return tok[keep], int(c.sum())


def run_value_tokens(sym):
    """rle0 with run-value tokens (format v2's lossless 2): a run of k >= 1 zero residuals
    followed by a residual of -2, -1, +1 or +2 becomes one token RV_BASE + 4c + j (c = floor(log2
    k), j the residual's index) with c extra bits; other runs as rle0. After a run the next
    residual is never zero and mostly small, which a static code over single tokens cannot
    exploit. Returns (token stream, total extra bits)."""
    z = sym == ZERO
    dz = np.diff(np.concatenate([[0], z.astype(np.int8), [0]]))
    st = np.nonzero(dz == 1)[0]
    ln = np.nonzero(dz == -1)[0] - st
    after = st + ln
    nxt = np.where(after < len(sym), sym[np.minimum(after, len(sym) - 1)].astype(np.int64) - ZERO, 0)
    j = np.select([nxt == -2, nxt == -1, nxt == 1, nxt == 2], [0, 1, 2, 3], -1)
    merge = (after < len(sym)) & (j >= 0)
    c = np.floor(np.log2(ln)).astype(np.int64)
    keep = np.ones(len(sym), bool)
    tok = sym.astype(np.int64).copy()
    coded = merge | (ln >= 2)
    cs, cl = st[coded], ln[coded]
    keep[np.repeat(cs + 1, cl - 1) + (np.arange(int((cl - 1).sum()))
                                      - np.repeat(np.concatenate([[0], np.cumsum(cl - 1)[:-1]]),
                                                  cl - 1))] = False
    keep[after[merge]] = False
    tok[st[merge]] = RV_BASE + 4 * c[merge] + j[merge]
    plain = ~merge & (ln >= 2)
    tok[st[plain]] = RUN_BASE + c[plain]
    return tok[keep], int(c[coded].sum())


def zstd(b, level=3):
    # Imported here: the histogram-only candidates (and stretch.py) do without it.
    try:
        import zstandard
    except ImportError:
        sys.exit('ratio_study needs zstd for Python: apt-get install python3-zstandard '
                 '(Debian package, for /usr/bin/python3)')
    return len(zstandard.ZstdCompressor(level=level).compress(b))


def evaluate(sym, full=True):
    """Every candidate on one stream. Histogram-only ones always (cheap, exact); with full, the
    byte-level passes over the real Huffman bitstream too."""
    r = {}
    bits, tb, L, counts = huff_size(sym, ALPHABET)
    r['H0'] = order0_bits(counts) / 8
    r['huff'] = bits / 8 + tb
    tok, extra = zero_run_tokens(sym)
    b2, tb2, L2, _ = huff_size(tok)
    r['rle0+huff'] = (b2 + extra) / 8 + tb2
    # The rle0 tokens' entropy given the previous token's kind (a residual,
    # a run token, a lone zero): what a code that knew the context could
    # reach; run-value tokens take part of the difference with one code.
    kind = np.where(tok >= RUN_BASE, 1, np.where(tok == ZERO, 2, 0))
    prev = np.concatenate([[0], kind[:-1]])
    h_ctx = 0.0
    for k in range(3):
        _, cnt = np.unique(tok[prev == k], return_counts=True)
        h_ctx += float(-(cnt * np.log2(cnt / cnt.sum())).sum()) if len(cnt) else 0.0
    r['H1ctx(rle0)'] = (h_ctx + extra) / 8
    tok3, extra3 = run_value_tokens(sym)
    b3, tb3, _, _ = huff_size(tok3)
    r['rv+huff'] = (b3 + extra3) / 8 + tb3
    for B in (64, 256, 1024):  # zero-block elision: a bitmap of all-zero blocks, the rest Huffman
        nb = -(-len(sym) // B)
        padding = nb * B - len(sym)
        blocks = np.concatenate([sym, np.full(padding, ZERO, sym.dtype)]).reshape(nb, B)
        zero = (blocks == ZERO).all(1)
        rest = blocks[~zero].ravel()
        if not zero[-1]:  # the padding of the last block is not coded
            rest = rest[:len(rest) - padding]
        rb, rtb = huff_size(rest)[:2] if len(rest) else (0, 0)
        r[f'zblk{B}+huff'] = rb / 8 + rtb + nb / 8
    if full:
        hb = huff_encode(sym, L)
        r['huff+zlib1'] = len(zlib.compress(hb, 1)) + tb
        r['huff+zlib6'] = len(zlib.compress(hb, 6)) + tb
        r['huff+zstd3'] = zstd(hb, 3) + tb
        r['huff+zstd19'] = zstd(hb, 19) + tb
        r['huff+lzma'] = len(lzma.compress(hb, preset=6)) + tb
        # independent 64 KiB frames: what a GPU (or a region decoder) can decode in parallel
        r['huff+zstd3/64K'] = sum(zstd(hb[i:i + 65536]) for i in range(0, len(hb), 65536)) + tb
        r['rle0+huff+zstd3'] = zstd(huff_encode(tok, L2), 3) + tb2 + extra / 8
        r['zstd3(sym u16)'] = zstd(sym.astype('<u2').tobytes(), 3)  # LZ without Huffman
    return r


def index_cost(sym, tiles, L):
    """Region index: where each tile's symbols start in the Huffman bitstream, either a u32 per
    tile or grouped (a u64 per 16 tiles + each tile's bit length in w bits)."""
    t = tiles[tiles >= 0]
    nt = int(t.max()) + 1
    tile_bits = np.bincount(t, weights=L[sym[tiles >= 0]], minlength=nt)
    w = max(1, int(tile_bits.max()).bit_length())
    return dict(tiles=nt, syms_per_tile=float(len(t) / nt), width=w,
                u32=4 * nt, grouped=8 * -(-nt // 16) + nt * w / 8)
