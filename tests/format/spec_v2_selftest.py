#!/usr/bin/env python3
"""Self-test of read_by_spec.py's version-2 decoding (FORMAT.md §15).

usage: spec_v2_selftest.py [READ_BY_SPEC.py]

Builds small version-2 archives by hand, with a minimal encoder of its own
written from FORMAT.md (§10, §15.8: interpolation with anchors and passes,
zero-run and run-value tokens, the fill mask, the metadata block), decodes them with
read_by_spec.py and checks the output against what this encoder says the
decoder must produce (its working values, then fill and verbatim values) and
against the input and the error bound. Then checks that read_by_spec.py
rejects, with its Corrupt error and never another exception, every
single-byte change and truncation of the small archives and a list of
semantic violations of §15 whose CRCs are made valid, and that random edits
with valid CRCs never raise anything but Corrupt. Pure standard library.
Exits non-zero on any failure."""
import importlib.util
import json
import math
import os
import random
import struct
import sys

FLT_MAX = 3.4028234663852886e38
RADIUS_TOKENS = 12  # §15.4
RUN_VALUES = (-2, -1, 1, 2)  # §15.4.1: v_0 .. v_3
TOKENS = (0, RADIUS_TOKENS, RADIUS_TOKENS + 13 * 4)  # tokens after 2 radius, per lossless


# ---------------------------------------------------------------- primitives

def crc32c(data):  # §1, bit by bit (the reader uses a table)
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF


def pad8(b):
    return bytes(b) + bytes(-len(b) % 8)


def to_t(v, f32):  # §8.4 narrow_T, as a Python float
    if not f32:
        return v
    if math.isfinite(v) and abs(v) > FLT_MAX:
        return math.copysign(math.inf if abs(v) >= 3.4028235677973366e38 else FLT_MAX, v)
    return struct.unpack("<f", struct.pack("<f", v))[0]


def raw(v, f32):
    return struct.pack("<f" if f32 else "<d", v)


def special(v, f32):  # §10.2 step 2: NaN, +-Inf, -0.0, subnormal
    bits = int.from_bytes(raw(v, f32), "little")
    exp = (bits >> 23) & 0xFF if f32 else (bits >> 52) & 0x7FF
    top = 0xFF if f32 else 0x7FF
    return exp == top or (exp == 0 and bits != 0)


def c_index(p, shape):
    i = 0
    for x, extent in zip(p, shape):
        i = i * extent + x
    return i


def all_points(ranges):  # C order over a product of ranges
    if not ranges:
        yield ()
        return
    for x in ranges[0]:
        for rest in all_points(ranges[1:]):
            yield (x,) + rest


def huffman_lengths(counts, maxlen):
    """§10.4: two-queue Huffman over the used symbols, halving counts until it fits."""
    used = {s: w for s, w in counts.items() if w}
    if len(used) == 1:
        return {s: 1 for s in used}
    while True:
        leaves = sorted((w, s) for s, w in used.items())
        leafq = [(w, ("leaf", s)) for w, s in leaves]
        nodeq, li, ni = [], 0, 0

        def take():
            nonlocal li, ni
            if li < len(leafq) and (ni >= len(nodeq) or leafq[li][0] <= nodeq[ni][0]):
                li += 1
                return leafq[li - 1]
            ni += 1
            return nodeq[ni - 1]

        while (len(leafq) - li) + (len(nodeq) - ni) > 1:
            a, b = take(), take()
            nodeq.append((a[0] + b[0], ("node", a[1], b[1])))
        depth, stack = {}, [(nodeq[-1][1], 0)]
        while stack:
            node, d = stack.pop()
            if node[0] == "leaf":
                depth[node[1]] = d
            else:
                stack += [(node[1], d + 1), (node[2], d + 1)]
        if max(depth.values()) <= maxlen:
            return depth
        used = {s: (w + 1) // 2 for s, w in used.items()}


def canonical(lengths):  # §5.2: {symbol: (length, code)}
    out, code, prev = {}, 0, 0
    for length, s in sorted((x, s) for s, x in lengths.items()):
        code <<= length - prev
        out[s] = (length, code)
        code += 1
        prev = length
    return out


def code_length_section(lengths, alphabet):  # §5.1, shortest LEB128 zero runs
    out, s = bytearray(), 0
    while s < alphabet:
        if lengths.get(s, 0):
            out.append(lengths[s])
            s += 1
            continue
        run = 0
        while s + run < alphabet and not lengths.get(s + run, 0):
            run += 1
        s += run
        out.append(0)
        while True:
            out.append((run & 0x7F) | (0x80 if run >= 0x80 else 0))
            run >>= 7
            if not run:
                break
    return bytes(out)


def words_of(bits):  # a '0'/'1' string -> u32 words, MSB first, zero padded (§1)
    bits += "0" * (-len(bits) % 32)
    return [int(bits[k:k + 32], 2) for k in range(0, len(bits), 32)]


# ---------------------------------------------------------------- quantizing

def inverse_step(step):
    """§15.8's inv_step: min(1 / quant_step, DBL_MAX)."""
    return min(1.0 / step, sys.float_info.max)


def quantize(x, f32, fill, step, abs_bound):
    """§10.2 for one element: ("fill"|"verbatim"|"q", q)."""
    if fill is not None and raw(x, f32) == raw(to_t(fill, f32), f32):
        return "fill", None
    if special(x, f32):
        return "verbatim", None
    r = x / step
    if not abs(r) < 2**26:
        return "verbatim", None
    rho = round(r)  # round half to even
    y = to_t(float(rho) * step, f32)
    if not abs(y - x) <= abs_bound:
        return "verbatim", None
    return "q", rho


def lorenzo_forward(q, shape, block):
    """§10.3: residuals of a block Lorenzo predictor (neighbours outside the block count 0)."""
    q = list(q)
    for d in range(len(shape)):
        stride = 1
        for x in shape[d + 1:]:
            stride *= x
        for i in reversed(range(len(q))):
            if (i // stride) % shape[d] % block[d]:
                q[i] -= q[i - stride]
    return q


def quantize_lorenzo_grid(values, shape, f32, fill, step, abs_bound, block):
    """§10.2 over a grid with placeholders from its Lorenzo blocks; returns kinds, q."""
    kinds, q = [], []
    for x in values:
        kind, rho = quantize(x, f32, fill, step, abs_bound)
        kinds.append(kind)
        q.append(rho)
    blocks = {}
    for p in all_points([range(x) for x in shape]):  # first quantized element per block
        i = c_index(p, shape)
        key = tuple(x // b for x, b in zip(p, block))
        if kinds[i] == "q" and key not in blocks:
            blocks[key] = q[i]
    for p in all_points([range(x) for x in shape]):
        i = c_index(p, shape)
        if kinds[i] != "q":
            q[i] = blocks.get(tuple(x // b for x, b in zip(p, block)), 0)
    return kinds, q


# ---------------------------------------------------------------- the encoder

def predict(w_at, xd, h, lo, hi, order):
    """§15.5.2's table; w_at(k) is the working value at index k along d."""
    b = w_at(xd - h)
    a = w_at(xd - 3 * h) if xd - 3 * h >= lo else None
    c = w_at(xd + h) if xd + h <= hi else None
    e = w_at(xd + 3 * h) if xd + 3 * h <= hi else None
    rules = [
        (order == 3 and None not in (a, c, e), lambda: (9.0 * (b + c) - (a + e)) * 0.0625),
        (order == 3 and None not in (a, c), lambda: ((6.0 * b + 3.0 * c) - a) * 0.125),
        (order == 3 and None not in (c, e), lambda: ((3.0 * b + 6.0 * c) - e) * 0.125),
        (c is not None, lambda: (b + c) * 0.5),
        (a is not None, lambda: (3.0 * b - a) * 0.5),
        (True, lambda: b),
    ]
    pred = next(f for ok, f in rules if ok)()
    return pred if math.isfinite(pred) else 0.0


def pass_ranges(shape, interp, h, d, box=None):
    """The index ranges of pass (h, d) (§15.5.2), optionally within a box of ranges."""
    out = []
    for e, extent in enumerate(shape):
        start, stop = (0, extent) if box is None else (box[e].start, box[e].stop)
        if e == d:
            mod, rem = 2 * h, h
        elif e in interp:
            mod, rem = (h if e < d else 2 * h), 0
        else:
            mod, rem = 1, 0
        first = start + (rem - start) % mod
        out.append(range(first, stop, mod))
    return out


def levels(tile):
    h = tile // 2
    while h >= 1:
        yield h
        h //= 2


def encode_interp(values, shape, p):
    """§15.8: returns (symbol per position in symbol order, outliers, kinds, working values)."""
    f32, fill, step, abs_bound = p["f32"], p["fill"], p["step"], p["abs_bound"]
    tile, interp, radius, order = p["tile"], p["interp"], p["radius"], p["order"]
    n = len(values)
    grid = [-(-x // tile) if d in interp else x for d, x in enumerate(shape)]
    anchor_of = lambda g: tuple(x * tile if d in interp else x for d, x in enumerate(g))
    grid_points = list(all_points([range(x) for x in grid]))
    anchor_values = [values[c_index(anchor_of(g), shape)] for g in grid_points]
    akinds, aq = quantize_lorenzo_grid(anchor_values, grid, f32, fill, step, abs_bound,
                                       [8] * len(grid))
    ares = lorenzo_forward(aq, grid, [8] * len(grid))
    w, sym, kinds, outliers = [None] * n, {}, [None] * n, []
    for g, kind, q, r in zip(grid_points, akinds, aq, ares):
        i = c_index(anchor_of(g), shape)
        kinds[i] = kind
        w[i] = to_t(float(q) * step, f32)
        if -radius < r < radius:
            sym[i] = r + radius
        else:
            sym[i] = 0
            outliers.append((i, r))
    strides = [c_index([0] * d + [1] + [0] * (len(shape) - d - 1), shape)
               for d in range(len(shape))]
    for h in levels(tile):
        for d in interp:
            for pt in all_points(pass_ranges(shape, interp, h, d)):
                i, xd = c_index(pt, shape), pt[d]
                assert w[i] is None, "element in two passes"
                lo = xd // tile * tile
                hi = min(lo + tile, shape[d] - 1)
                base = i - xd * strides[d]
                pred = predict(lambda k: w[base + k * strides[d]], xd, h, lo, hi, order)
                x = values[i]
                if fill is not None and raw(x, f32) == raw(to_t(fill, f32), f32):
                    kinds[i], w[i] = "fill", to_t(pred + 0.0 * step, f32)  # no symbol, rho 0
                    continue
                kind = "verbatim"
                if not special(x, f32):
                    r = (x - pred) * inverse_step(step)
                    if abs(r) <= radius - 1:
                        rho = round(r)
                        y = to_t(pred + float(rho) * step, f32)
                        if abs(y - x) <= abs_bound:
                            kind = "q"
                kinds[i] = kind
                if kind == "q":
                    sym[i], w[i] = rho + radius, y
                else:
                    sym[i], w[i] = radius, to_t(pred + 0.0 * step, f32)
    assert None not in w, "element in no pass"
    positions = []  # §15.5.3: tile by tile, anchor first, then the passes in C order
    for g in grid_points:
        box = [range(x * tile, min((x + 1) * tile, shape[d])) if d in interp else range(x, x + 1)
               for d, x in enumerate(g)]
        positions.append(c_index(anchor_of(g), shape))
        for h in levels(tile):
            for d in interp:
                positions += [c_index(pt, shape) for pt in
                              all_points(pass_ranges(shape, interp, h, d, box))]
    assert sorted(positions) == list(range(n))
    positions = [i for i in positions if i in sym]
    return [sym[i] for i in positions], sorted(outliers), kinds, w


def encode_lorenzo(values, shape, p):
    kinds, q = quantize_lorenzo_grid(values, shape, p["f32"], p["fill"], p["step"],
                                     p["abs_bound"], p["block"])
    radius, syms, outliers = p["radius"], [], []
    for i, r in enumerate(lorenzo_forward(q, shape, p["block"])):
        if -radius < r < radius:
            syms.append(r + radius)
        else:
            syms.append(0)
            outliers.append((i, r))
    return syms, outliers, kinds, [to_t(float(x) * p["step"], p["f32"]) for x in q]


def tokenize(chunk_syms, radius, lossless):
    """§15.8: tokens (symbol, extra bit count, extra value) of one chunk; with lossless 2
    a run followed by a residual of -2, -1, +1 or +2 in the chunk ends with a run-value
    token that covers that residual too."""
    if not lossless:
        return [(s, 0, 0) for s in chunk_syms]
    out, i = [], 0
    while i < len(chunk_syms):
        if chunk_syms[i] != radius:
            out.append((chunk_syms[i], 0, 0))
            i += 1
            continue
        k = 0
        while i + k < len(chunk_syms) and chunk_syms[i + k] == radius:
            k += 1
        i += k
        while k >= 8192:
            out.append((2 * radius + 11, 12, 4095))
            k -= 8191
        v = chunk_syms[i] - radius if lossless == 2 and i < len(chunk_syms) else None
        if v in RUN_VALUES:  # 1 <= k <= 8191: class floor(log2 k), e = k - 2^c, then v
            c = k.bit_length() - 1
            out.append((2 * radius + RADIUS_TOKENS + 4 * c + RUN_VALUES.index(v), c,
                        k - (1 << c)))
            i += 1
        elif k >= 2:
            c = k.bit_length() - 1
            out.append((2 * radius + c - 1, c, k - (1 << c)))
        elif k == 1:
            out.append((radius, 0, 0))
    return out


def bitstreams(chunks_tokens, lengths_of):
    """Codes token chunks: (words, bits per chunk, token starts per chunk)."""
    code = canonical(lengths_of)
    words, bits, starts = [], [], []
    for tokens in chunks_tokens:
        s, st = [], []
        pos = 0
        for sym, nextra, extra in tokens:
            st.append(pos)
            length, cw = code[sym]
            s.append(format(cw, "0%db" % length))
            if nextra:
                s.append(format(extra, "0%db" % nextra))
            pos += length + nextra
        s = "".join(s)
        bits.append(len(s))
        starts.append(st)
        words += words_of(s)
    return words, bits, starts


def mask_tokens(mask, shape):
    """§15.6: tokens (class, extra bits, e) of the fill mask."""
    n = len(mask)
    row = n if len(shape) == 1 else n // shape[0]
    x = [mask[i] ^ (mask[i - row] if i >= row else 0) for i in range(n)]
    runs, bit, i = [], 0, 0
    while i < n:
        k = 0
        while i + k < n and x[i + k] == bit:
            k += 1
        runs.append(k)
        i += k
        bit ^= 1
    split = []
    for L in runs:
        while L > 8190:
            split += [8190, 0]
            L -= 8190
        split.append(L)
    return split


def mask_section(runs):
    tokens = []
    for L in runs:
        c = (L + 1).bit_length() - 1
        tokens.append((c, c, L + 1 - (1 << c)))
    counts = {}
    for c, _, _ in tokens:
        counts[c] = counts.get(c, 0) + 1
    lengths = huffman_lengths(counts, 20)
    chunks = [tokens[k:k + 4096] for k in range(0, len(tokens), 4096)]
    words, bits, _ = bitstreams(chunks, lengths)
    sec = bytes(lengths.get(c, 0) for c in range(13)) + bytes(3)
    sec += struct.pack("<%dI" % len(bits), *bits) + struct.pack("<%dI" % len(words), *words)
    return sec, len(tokens)


def encode_frame(values, shape, p, first_row=0, tamper=None):
    """One frame: (frame bytes, expected decoded bytes). `tamper` may change the stages."""
    tamper = tamper or {}
    f32, radius, n = p["f32"], p["radius"], len(values)
    if p["predictor"] == 1:
        syms, outliers, kinds, w = encode_interp(values, shape, p)
    else:
        syms, outliers, kinds, w = encode_lorenzo(values, shape, p)
    expected = b"".join(raw(to_t(p["fill"], f32), f32) if k == "fill" else
                        raw(v, f32) if k == "verbatim" else raw(x, f32)
                        for k, v, x in zip(kinds, values, w))
    if "symbols" in tamper:
        syms, outliers = tamper["symbols"](syms, outliers)
    chunk = p["chunk"]
    chunks = [syms[k:k + chunk] for k in range(0, len(syms), chunk)]
    chunks_tokens = [tokenize(c, radius, p["lossless"]) for c in chunks]
    if "tokens" in tamper:
        chunks_tokens = tamper["tokens"](chunks_tokens)
    if "log" in p:  # the tokens each chunk was coded with, for the cases' coverage checks
        p["log"].append(chunks_tokens)
    counts = {}
    for tokens in chunks_tokens:
        for s, _, _ in tokens:
            counts[s] = counts.get(s, 0) + 1
    lengths = huffman_lengths(counts, 20)
    alphabet = 2 * radius + TOKENS[p["lossless"]]
    words, bits, starts = bitstreams(chunks_tokens, lengths)
    group = p["group"]
    starts_word, acc = [], 0
    for b in bits:
        starts_word.append(acc)
        acc += -(-b // 32)
    index = b"".join(struct.pack("<Q", starts_word[g]) for g in range(0, len(bits), group))
    index += struct.pack("<%dI" % len(bits), *bits)
    gap = bytearray()
    if p["gap"]:
        sub = p["sub_bits"]
        for b, st in zip(bits, starts):
            st = st + [b]
            for j in range(-(-b // sub)):
                gap.append(next(s for s in st if s >= j * sub) - j * sub)
    out = struct.pack("<%dI" % len(outliers), *[i for i, _ in outliers])
    out += struct.pack("<%di" % len(outliers), *[r for _, r in outliers])
    verb = [i for i, k in enumerate(kinds) if k == "verbatim"]
    vsec = pad8(struct.pack("<%dI" % len(verb), *verb)) + b"".join(raw(values[i], f32)
                                                                    for i in verb)
    fills = [k == "fill" for k in kinds]
    if p["fill_coding"]:
        runs = mask_tokens([int(x) for x in fills], shape)
        if "mask_runs" in tamper:
            runs = tamper["mask_runs"](runs)
        fsec, fcount = mask_section(runs)
    else:
        fsec, fcount = b"", 0
        i = 0
        while i < n:
            if fills[i]:
                j = i
                while j < n and fills[j]:
                    j += 1
                fsec += struct.pack("<II", i, j - i)
                fcount += 1
                i = j
            else:
                i += 1
    sections = [code_length_section(lengths, alphabet), index, bytes(gap),
                struct.pack("<%dI" % len(words), *words), out, vsec, fsec]
    fields = dict(version=p.get("version", 2), dtype=1 if f32 else 2, ndim=len(shape),
                  mode=p["mode"], flags=(1 if p["gap"] else 0) | (2 if p["fill"] is not None
                                                                    else 0),
                  maxlen=20, predictor=p["predictor"], lossless=p["lossless"],
                  fill_coding=p["fill_coding"], shape=shape, first_row=first_row,
                  bound=p["bound"], abs_bound=p["abs_bound"], step=p["step"],
                  fill=p["fill"] if p["fill"] is not None else 0.0, radius=radius,
                  chunk=chunk, block=p["block"], sub_bits=p["sub_bits"], group=group,
                  n_out=len(outliers), n_verb=len(verb), n_fill=fcount,
                  order=p.get("order", 0),
                  positions=len(syms) if p.get("version", 2) >= 2 else 0)
    if "fields" in tamper:
        tamper["fields"](fields)
    if "sections" in tamper:
        sections = tamper["sections"](sections)
    return frame_bytes(fields, sections), expected


def frame_bytes(f, sections):  # §4.1, §15.2
    hdr = bytearray(256)
    struct.pack_into("<4sHH", hdr, 0, b"EBZF", f["version"], 256)
    hdr[8:16] = bytes([f["dtype"], f["ndim"], f["mode"], f["flags"], f["maxlen"],
                       f["predictor"], f["lossless"], f["fill_coding"]])
    for d, x in enumerate(f["shape"]):
        struct.pack_into("<Q", hdr, 16 + 8 * d, x)
    struct.pack_into("<Qdddd", hdr, 48, f["first_row"], f["bound"], f["abs_bound"], f["step"],
                     f["fill"])
    struct.pack_into("<II", hdr, 88, f["radius"], f["chunk"])
    for d, x in enumerate(f["block"]):
        struct.pack_into("<H", hdr, 96 + 2 * d, x)
    struct.pack_into("<IIQQQ", hdr, 104, f["sub_bits"], f["group"], f["n_out"], f["n_verb"],
                     f["n_fill"])
    for s, sec in enumerate(sections):
        struct.pack_into("<QI", hdr, 136 + 16 * s, len(sec), crc32c(sec) if sec else 0)
    struct.pack_into("<I", hdr, 196, f["positions"])  # §15.2: S in section 3's entry
    hdr[248] = f["order"]
    struct.pack_into("<I", hdr, 252, crc32c(hdr[:252]))
    return bytes(hdr) + b"".join(pad8(s) for s in sections)


def archive(frames, a, metadata=None):
    """§2, §3, §6, §7, §15.1: the file header, metadata block, frames, index, trailer."""
    meta = b""
    if metadata is not None:
        length = struct.pack("<I", len(metadata))  # §15.1: the CRC covers length + document
        meta = pad8(b"EBZM" + length + struct.pack("<I", crc32c(length + metadata)) + metadata)
    hdr = bytearray(96)
    struct.pack_into("<4sHHBBBBI", hdr, 0, b"EBZA", a.get("version", 2), 96, a["dtype"],
                     len(a["shape"]), a["mode"], 1 if a["fill"] is not None else 0, len(meta))
    for d, x in enumerate(a["shape"]):
        struct.pack_into("<Q", hdr, 16 + 8 * d, x)
    struct.pack_into("<dddQQ", hdr, 48, a["bound"], a["abs_bound"],
                     a["fill"] if a["fill"] is not None else 0.0, a["frame_rows"], len(frames))
    struct.pack_into("<I", hdr, 92, crc32c(hdr[:92]))
    body = bytes(hdr) + meta
    entries = b""
    for fr in frames:
        entries += struct.pack("<QQ", len(body), len(fr))
        body += fr
    tail = struct.pack("<Q", len(frames)) + entries
    index_offset = len(body)
    body += b"EBZI" + struct.pack("<I", crc32c(tail)) + tail
    trailer = struct.pack("<Q4s", index_offset, b"EBZE")
    return body + trailer + struct.pack("<I", crc32c(trailer))


def make(values, shape, p, frame_rows=None, metadata=None, tamper=None):
    """An archive of `values` (already of type T) and the output a decoder must give."""
    frame_rows = frame_rows or shape[0]
    row = len(values) // shape[0]
    frames, expected = [], b""
    for r0 in range(0, shape[0], frame_rows):
        rows = min(frame_rows, shape[0] - r0)
        fr, exp = encode_frame(values[r0 * row:(r0 + rows) * row], [rows] + shape[1:], p,
                               first_row=r0, tamper=tamper)
        frames.append(fr)
        expected += exp
    a = dict(version=p.get("version", 2), dtype=1 if p["f32"] else 2, shape=shape,
             mode=p["mode"], fill=p["fill"], bound=p["bound"], abs_bound=p["abs_bound"],
             frame_rows=frame_rows)
    return archive(frames, a, metadata), expected


def params(**kw):
    p = dict(f32=True, mode=1, predictor=1, lossless=1, order=3, fill=None, radius=32762,
             chunk=16384, sub_bits=1024, group=16, gap=True, bound=0.01)
    p.update(kw)
    p.setdefault("abs_bound", p["bound"])
    p.setdefault("step", 2 * p["abs_bound"])
    if p["predictor"] == 1:
        p["interp"] = [d for d, b in enumerate(p["block"]) if b > 1]
        p["tile"] = max(p["block"])
    else:
        p["order"] = 0
    p["fill_coding"] = int(p["predictor"] == 1 and p["fill"] is not None)
    return p


# ---------------------------------------------------------------- the cases

def case_2d_cubic():
    """f32 5x7, T = 4 over both dimensions, cubic, zero-run tokens over chunks of 7, a fill
    mask (an anchor and interior elements are fill), a NaN and an out-of-range value
    (verbatim), an anchor whose q is beyond the radius (an outlier), -0.0 at an anchor
    (verbatim, with a placeholder), metadata."""
    shape = [5, 7]
    v = [to_t(2.0 + 0.02 * j * (2 - i), True) if i < 2 else 2.0 for i in range(5)
         for j in range(7)]  # q = 100 at anchor (0, 0): an outlier (radius 64)
    v[c_index((0, 4), shape)] = -999.0  # a fill anchor
    v[c_index((1, 1), shape)] = -999.0
    v[c_index((2, 5), shape)] = -999.0
    v[c_index((1, 3), shape)] = math.nan
    v[c_index((2, 2), shape)] = 77.0  # far from its prediction: verbatim
    v[c_index((4, 0), shape)] = -0.0  # an anchor: verbatim
    p = params(block=[4, 4], fill=-999.0, radius=64, chunk=7, sub_bits=32, group=2)
    meta = json.dumps({"variable": "t", "units": "°C", "dims": ["y", "x"]},
                      ensure_ascii=False).encode()
    return v, shape, p, dict(metadata=meta)


def case_3d_linear():
    """f64 4x9x6 in frames of 3 rows, T = 4 over the last two dimensions (dimension 0 is a
    batch dimension), linear, plain Huffman, no fill, no gap array, partial tiles."""
    rng = random.Random(5)
    shape = [4, 9, 6]
    v = [10 * math.sin(0.05 * a + 0.1 * b + 0.07 * c) + rng.gauss(0, 0.001)
         for a in range(4) for b in range(9) for c in range(6)]
    p = params(f32=False, block=[1, 4, 4], order=1, lossless=0, radius=1024, chunk=20,
               gap=False, group=3, bound=1e-3)
    return v, shape, p, dict(frame_rows=3)


def case_1d_long():
    """f64 40000 elements, T = 8 cubic, zeros with bumps: zero runs longer than 8191
    (class-12 tokens), a fill run longer than 8190 (split), more than 4096 mask tokens."""
    n = 40000
    v = [0.0] * n
    for i in range(200, 260):
        v[i] = 0.25 * (i - 200)
    v[1000:10000] = [-1.0] * 9000
    for i in range(30000, n, 2):
        v[i] = -1.0
    for i in range(31001, n, 2):
        v[i] = 0.5 * math.cos(i)
    p = params(f32=False, block=[8], fill=-1.0, chunk=2**20, sub_bits=64, bound=0.25)
    return v, [n], p, {}


def case_lorenzo_runs():
    """Predictor 0 with zero-run tokens and fill runs (fill coding 0), f32 20x30, 8x8."""
    shape = [20, 30]
    v = [0.0] * 600
    for i in range(100, 140):
        v[i] = to_t(0.1 * i, True)
    v[300:340] = [0.5] * 40
    v[500] = math.inf
    p = params(predictor=0, block=[8, 8], fill=0.5, chunk=64, sub_bits=32, group=2, bound=1e-3)
    return v, shape, p, {}


def case_single_fill():
    """One element, the fill value, T = 2: the anchor is fill and keeps its symbol; the mask
    is an empty run of 0s and a run of one 1 (2 tokens for n = 1)."""
    p = params(f32=False, block=[2], order=1, fill=3.0, bound=0.5)
    return [3.0], [1], p, {}


def case_4d_mask():
    """f32 4x3x17x9, T = 8 over the last two dimensions (two batch dimensions), cubic, a
    fill mask whose rows repeat (the XOR with the previous row), two frames of 2 rows."""
    shape = [4, 3, 17, 9]
    n = 4 * 3 * 17 * 9
    v = [to_t(math.cos(0.01 * i) * 3, True) for i in range(n)]
    for i in range(n):
        if (i % 153) % 9 == 4 or (i % 153) // 9 == 12:
            v[i] = 1e30
    p = params(block=[1, 1, 8, 8], fill=1e30, chunk=50, sub_bits=32, group=4, bound=1e-4)
    return v, shape, p, dict(frame_rows=2)


def case_f32_near_max():
    """f32 values near +-FLT_MAX with a bound of about FLT_MAX / 2: predictions beyond
    FLT_MAX narrow to FLT_MAX or to infinity (§8.4), infinite working values make
    predictions that are not finite (then 0)."""
    v = [FLT_MAX if i % 3 == 0 else (-FLT_MAX if i % 3 == 1 else 1e37 * i) for i in range(40)]
    bound = FLT_MAX * (1 + 1e-9) / 2
    p = params(block=[4], bound=bound, radius=8)
    return v, [40], p, {}


def case_f32_overflow():
    """f32, quant_step 1e38: an extrapolated prediction of 6e38 at a verbatim (NaN) element
    narrows to +Inf as its working value, and the next prediction, (b + c) * 0.5 with
    c = +Inf, is not finite, so it is 0."""
    v = [0.0] * 15
    v[8], v[12], v[14] = -FLT_MAX, FLT_MAX, math.nan
    v[13] = 1.0
    p = params(block=[8], order=1, bound=5e37, radius=8)
    return v, [15], p, {}


def case_f64_huge():
    """f64 values near DBL_MAX with quant_step = DBL_MAX: b + c overflows, so predictions
    are infinite and replaced by 0."""
    v = [1e308 if i % 5 else -1.7e308 for i in range(30)]
    p = params(f32=False, block=[8], bound=1e308, step=1.7976931348623157e308, order=3)
    return v, [30], p, {}


def case_v1():
    """The encoder's version-1 output (predictor 0, plain Huffman, fill runs): a check of
    this self-test against the reader's version-1 path, which CI compares with C++."""
    shape = [6, 11]
    v = [to_t(math.sin(i * 0.2), True) for i in range(66)]
    v[5:9] = [-5.0] * 4
    p = params(version=1, predictor=0, lossless=0, block=[4, 4], fill=-5.0, chunk=10,
               sub_bits=32, group=2, bound=1e-3)
    return v, shape, p, {}


def case_v2_plain_metadata():
    """Version 2 only for its metadata: Lorenzo, plain Huffman, 1-D f64."""
    v = [float(i % 7) for i in range(50)]
    p = params(f32=False, predictor=0, lossless=0, block=[16], bound=0.1)
    return v, [50], p, dict(metadata=b' {"a": [1, 2.5e300, null, true], "b": {}} \n')


def run_value_stream(chunk, cols, rows):
    """Residuals (rows x cols, C order) for lossless 2 (§15.4.1, §15.8): a run-value token
    of every class 0..12 and value v_0..v_3 (e = 0, 2^c - 1 and between), runs of 8192 and
    more split before their run-value token (one of 8192 positions: the largest), lone
    zeros then +-1 (class 0), runs then +-3 (no run-value token), runs cut by chunk ends
    (a run ending a chunk and a value starting the next stay two tokens; a run-value token
    ending exactly at a chunk's end), and a run at the frame's end. Each feature but the
    chunk-end ones lies within one chunk: filler of +-3 and +-5 pads to the next chunk."""
    r, flip = [], [1]

    def filler(k):
        for _ in range(k):
            flip[0] = -flip[0]
            r.append(flip[0] * (3 if len(r) % 3 else 5))

    def put(seg, to_end=False):  # whole in the current chunk; to_end: ending at its end
        room = chunk - len(r) % chunk
        if len(seg) > room:
            filler(room)
            room = chunk
        if to_end:
            filler(room - len(seg))
        r.extend(seg)

    filler(3)
    for c in range(13):
        for j, v in enumerate(RUN_VALUES):
            e = [0, (1 << c) - 1, ((1 << c) - 1) // 3, (1 << c) // 2][j]
            put([0] * ((1 << c) + e) + [v])
        filler(1)
    put([0, 1, 0, -1, 5, 0, 3, 0, -3])  # lone zeros then +-1 (class 0), +-3 (not taken)
    put([0] * 5 + [3] + [0] * 9 + [-3] + [0] * 300 + [4])  # runs then +-3, +4: run tokens
    put([0] * 8192 + [1])  # a class-12 run of 8191, then a class-0 run-value token
    put([0] * (8191 + 300) + [-2])  # 8191, then class 8 with e = 44
    put([0] * 8191 + [2])  # one run-value token of 8192 positions: class 12, e = 4095
    put([0] * 6, to_end=True)  # a run at the chunk's end ...
    r.append(1)  # ... and a value in the next chunk: not merged
    filler(2)
    put([0] * 5 + [-1], to_end=True)  # a run-value token ending exactly at the chunk's end
    put([0], to_end=True)  # a lone zero at the chunk's end ...
    r.append(-2)  # ... then -2 in the next chunk
    filler(1)
    put([0] * 10, to_end=True)  # a run across a chunk end: 10 zeros here ...
    r.extend([0] * 7 + [2])  # ... 7 and +2 there: class 3, then class 2 with e = 3 and +2
    filler(rows * cols - len(r) - 40)
    r.extend([0] * 40)  # a run at the frame's end: a run token, no value
    assert len(r) == rows * cols
    return r


def case_lorenzo_run_values():
    """Lorenzo (predictor 0), run-value tokens (lossless 2) with the largest radius 32736,
    f64 5 x 32768 with a block of 1 x 65535 (each row a line of its own), so the residuals
    are exactly run_value_stream's; chunks of 16384, gap array with small subsequences."""
    rows, cols, chunk = 5, 32768, 16384
    r = run_value_stream(chunk, cols, rows)
    v, q = [], 0
    for i, x in enumerate(r):
        q = x if i % cols == 0 else q + x  # prefix sums per row: Lorenzo residuals r
        v.append(float(q))
    p = params(f32=False, predictor=0, lossless=2, radius=32736, block=[1, 65535],
               chunk=chunk, sub_bits=64, group=2, bound=0.5)  # step 1: q = x
    return v, [rows, cols], p, {}


def case_2d_run_values():
    """Interpolation (cubic, T = 8, partial tiles), run-value tokens, f32 13 x 21, a fill
    mask, chunks of 37 (runs cut by chunk ends), gap array, a NaN (verbatim): a plateau
    with steps of 1 to 3 quantization steps, so runs end on small residuals."""
    shape = [13, 21]
    v = [10.0 + (1.0 if (i * 7 + j * 3) % 23 == 0 else 0.0) +
         (2.0 if i > 8 and j > 14 else 0.0) - (3.0 if (i, j) in ((4, 4), (10, 3)) else 0.0)
         for i in range(13) for j in range(21)]
    v[c_index((6, 9), shape)] = -99.0  # fill
    v[c_index((8, 8), shape)] = -99.0  # a fill anchor
    v[c_index((2, 17), shape)] = math.nan
    p = params(lossless=2, radius=32736, block=[8, 8], fill=-99.0, chunk=37, sub_bits=32,
               group=3, bound=0.5)
    return v, shape, p, {}


def case_radius2_run_values():
    """Run-value tokens with radius 2, Lorenzo f64 1-D: residuals -1, 0, +1 are symbols 1 to
    3, every other residual an outlier (symbol 0 = radius - 2, §5.6), so a run followed by
    an outlier ends with a run-value token of v_0 = -2 whose position is the outlier."""
    r = [0, 0, 0, 7, 0, 1, 0, 0, -1, 0, 0, 0, 0, -5, 1, 0, 0, 2, -1, 0, 0, 0]
    v, q = [], 0
    for x in r:
        q += x
        v.append(float(q))
    p = params(f32=False, predictor=0, lossless=2, radius=2, block=[64], chunk=9, sub_bits=32,
               group=2, bound=0.5)
    return v, [len(v)], p, {}


CASES = [case_2d_cubic, case_3d_linear, case_1d_long, case_lorenzo_runs, case_single_fill,
         case_4d_mask, case_f32_near_max, case_f32_overflow, case_f64_huge, case_v1,
         case_v2_plain_metadata, case_lorenzo_run_values, case_2d_run_values,
         case_radius2_run_values]


# ---------------------------------------------------------------- checks

def load_reader(path):
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location("read_by_spec", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Checker:
    def __init__(self, reader):
        self.reader, self.failures = reader, 0

    def fail(self, what):
        print("FAIL " + what)
        self.failures += 1

    def decodes(self, name, buf, expected, values, p, metadata=None):
        try:
            fh, _, data = self.reader.decode(buf)
        except self.reader.Corrupt as e:
            return self.fail("%s: rejected: %s" % (name, e))
        if data != expected:
            first = next(i for i in range(len(data)) if data[i:i + 1] != expected[i:i + 1])
            return self.fail("%s: output differs from the encoder's, first at byte %d" %
                             (name, first))
        if fh["metadata"] != metadata:
            return self.fail("%s: metadata %r, expected %r" % (name, fh["metadata"], metadata))
        f32, size = p["f32"], 4 if p["f32"] else 8
        for i, x in enumerate(values):  # and the bound, independently of the encoder
            y = struct.unpack("<f" if f32 else "<d", data[i * size:(i + 1) * size])[0]
            if p["fill"] is not None and raw(x, f32) == raw(to_t(p["fill"], f32), f32):
                ok = raw(y, f32) == raw(to_t(p["fill"], f32), f32)
            elif special(x, f32) or not abs(y - x) <= p["abs_bound"]:
                ok = raw(y, f32) == raw(x, f32)  # verbatim
            else:
                ok = True
            if not ok:
                return self.fail("%s: element %d: %r decoded as %r" % (name, i, x, y))
        print("ok   %-28s %d bytes, version %d" % (name, len(buf), fh["version"]))

    def rejects(self, name, buf, contains=""):
        try:
            self.reader.decode(bytes(buf))
        except self.reader.Corrupt as e:
            if contains in str(e):
                return True
            self.fail("%s: rejected, but with %r (expected %r)" % (name, str(e), contains))
            return False
        except Exception as e:  # a traceback in the command-line reader
            self.fail("%s: %s: %s" % (name, type(e).__name__, e))
            return False
        self.fail("%s: accepted" % name)
        return False

    def mutations(self, name, buf):
        rng = random.Random(len(buf))
        positions = range(len(buf)) if len(buf) <= 3000 else rng.sample(range(len(buf)), 300)
        bad = 0
        for pos in positions:
            changed = bytearray(buf)
            changed[pos] ^= rng.randrange(1, 256)
            bad += not self.rejects("%s: byte %d changed" % (name, pos), changed)
        for cut in sorted(set([0, 1, 95, 96, 100, len(buf) - 16, len(buf) - 1] +
                              rng.sample(range(len(buf)), 20))):
            bad += not self.rejects("%s: cut at %d" % (name, cut), buf[:cut])
        if not bad:
            print("ok   %-28s %d byte changes and truncations rejected" % (name, len(positions)))


def frame_fields(buf, frame=0):
    """(offset of frame `frame`, its section offsets and lengths)."""
    meta = struct.unpack_from("<I", buf, 12)[0]
    index_offset = struct.unpack_from("<Q", buf, len(buf) - 16)[0]
    off = struct.unpack_from("<Q", buf, index_offset + 16 + 16 * frame)[0]
    lengths = [struct.unpack_from("<Q", buf, off + 136 + 16 * s)[0] for s in range(7)]
    starts, at = [], off + 256
    for x in lengths:
        starts.append(at)
        at += -(-x // 8) * 8
    return off, starts, lengths


def refresh_crcs(buf, frame=0):
    """Recomputes frame `frame`'s section CRCs and header CRC after an edit."""
    buf = bytearray(buf)
    off, starts, lengths = frame_fields(buf, frame)
    for s in range(7):
        struct.pack_into("<I", buf, off + 136 + 16 * s + 8,
                         crc32c(buf[starts[s]:starts[s] + lengths[s]]) if lengths[s] else 0)
    struct.pack_into("<I", buf, off + 252, crc32c(buf[off:off + 252]))
    return buf



def edited_header(archive, off, at, value, fmt="<B"):
    """The archive with `value` packed at `at` of the frame header at `off`, CRCs refreshed."""
    b = bytearray(archive)
    struct.pack_into(fmt, b, off + at, value)
    return refresh_crcs(b)

def refresh_file_crc(buf):
    buf = bytearray(buf)
    struct.pack_into("<I", buf, 92, crc32c(buf[:92]))
    return buf


def run_value_coverage(ck, name, p):
    """That a lossless-2 case's frames were coded with the tokens it is meant to exercise
    (§15.4.1, §15.8), as (class, value index) of run-value tokens and classes of run tokens."""
    base = 2 * p["radius"]
    chunks = [tokens for frame in p["log"] for tokens in frame]
    flat = [t for tokens in chunks for t in tokens]
    values = {((s - base - 12) // 4, (s - base - 12) % 4) for s, _, _ in flat if s >= base + 12}
    runs = {s - base + 1 for s, _, _ in flat if base <= s < base + 12}
    missing = []
    if name == "case_lorenzo_run_values":
        missing += [("run-value", c, j) for c in range(13) for j in range(4)
                    if (c, j) not in values]
        wanted = {
            "run token then class-0 run-value token (a run of 8192 then a value)":
                any(a == (base + 11, 12, 4095) and b[0] in range(base + 12, base + 16)
                    for a, b in zip(flat, flat[1:])),
            "a run-value token of 8192 positions": (base + 12 + 48 + 3, 12, 4095) in flat,
            "a run token ending a chunk, +1 starting the next":
                any(a[-1][0] in range(base, base + 12) and b[0][0] == p["radius"] + 1
                    for a, b in zip(chunks, chunks[1:])),
            "a run-value token ending a chunk": any(a[-1][0] >= base + 12 for a in chunks),
            "a lone zero ending a chunk, -2 starting the next":
                any(a[-1][0] == p["radius"] and b[0][0] == p["radius"] - 2
                    for a, b in zip(chunks, chunks[1:])),
            "+-3 right after a run token":
                any(a[0] in range(base, base + 12) and b[0] in (p["radius"] + 3,
                                                                  p["radius"] - 3)
                    for a, b in zip(flat, flat[1:])),
            "a lone zero then +-1 (class 0), not after a run":
                any(a[0] not in range(base, base + 12) and b[0] in (base + 13, base + 14)
                    for a, b in zip(flat, flat[1:])),
            "a run token ending the frame": flat[-1][0] in range(base, base + 12),
        }
        missing += [k for k, ok in wanted.items() if not ok]
    elif name == "case_radius2_run_values":  # the value v_0 = -2 is symbol 0, an outlier
        missing += [] if any(j == 0 for _, j in values) else ["a run-value token of v_0"]
    elif not values:
        missing.append("any run-value token")
    if missing:
        return ck.fail("%s: not coded with %s" % (name, missing))
    print("ok   %-28s %d run-value token kinds, run classes %s" % (name, len(values),
                                                                  sorted(runs)))


def semantic_violations(ck):
    """Archives that break a rule of §15 with every CRC valid."""
    before = ck.failures
    v, shape, p, kw = case_2d_cubic()
    good, _ = make(v, shape, p, **kw)
    off, starts, lengths = frame_fields(good)

    def header_edit(at, value, fmt="<B"):
        return edited_header(good, off, at, value, fmt)

    ck.rejects("predictor 2", header_edit(13, 2))
    ck.rejects("lossless 3", header_edit(14, 3))
    ck.rejects("lossless 1 frame read as lossless 2 (alphabet + 52)", header_edit(14, 2),
               "code lengths")
    ck.rejects("fill coding 0 with interpolation and a fill value", header_edit(15, 0))
    ck.rejects("order 2", header_edit(248, 2))
    ck.rejects("order 0 with interpolation", header_edit(248, 0))
    ck.rejects("reserved byte 249", header_edit(249, 1))
    ck.rejects("tile not a power of two", header_edit(96, 6, "<H"))
    ck.rejects("two tile extents", header_edit(96, 8, "<H"))
    b = bytearray(good)
    struct.pack_into("<HH", b, off + 96, 1, 1)
    ck.rejects("no interpolated dimension", refresh_crcs(b))
    b = bytearray(good)
    struct.pack_into("<HH", b, off + 96, 65535, 65535)
    ck.rejects("tile 65535", refresh_crcs(b))
    ck.rejects("version-1 frame with v2 fields", header_edit(4, 1, "<H"))
    ck.rejects("radius too large for run tokens", header_edit(88, 32763, "<I"))
    ck.rejects("max code length 21 with run tokens", header_edit(12, 21))

    # An outlier at an element that is not an anchor (symbol 0 and an outlier entry).
    def outlier_at_non_anchor(syms, outliers):
        syms = list(syms)
        syms[1] = 0  # position 1: the first pass element of tile 0
        return syms, sorted(outliers + [(c_index((2, 0), shape), 5)])
    bad, _ = make(v, shape, p, tamper={"symbols": outlier_at_non_anchor}, **kw)
    ck.rejects("outlier at a non-anchor", bad, "not an anchor")

    # A run that crosses a chunk's end: the last run token of chunk 0 covers one more.
    def longer_run(chunks_tokens):
        out = [list(t) for t in chunks_tokens]
        for c, tokens in enumerate(out):
            for k in reversed(range(len(tokens))):
                s, nextra, e = tokens[k]
                if nextra and e + 1 < (1 << nextra):
                    tokens[k] = (s, nextra, e + 1)
                    return out
        raise AssertionError("no run token to lengthen")
    bad, _ = make(v, shape, p, tamper={"tokens": longer_run}, **kw)
    ck.rejects("zero run crossing a chunk's end", bad, "crosses")

    # Mask runs that do not sum to n, and more mask tokens than the header says.
    bad, _ = make(v, shape, p, tamper={"mask_runs": lambda r: r[:-1] + [r[-1] + 1]}, **kw)
    ck.rejects("mask runs longer than the frame", bad)
    bad, _ = make(v, shape, p, tamper={"mask_runs": lambda r: r[:-1] + [r[-1] - 1]}, **kw)
    ck.rejects("mask runs shorter than the frame", bad)
    bad, _ = make(v, shape, p, tamper={"fields": lambda f: f.update(n_fill=f["n_fill"] - 1)},
                  **kw)
    ck.rejects("mask token count one too small", bad)

    # Fill-mask section internals.
    b = bytearray(good)
    b[starts[6] + 13] = 1
    ck.rejects("fill mask: non-zero bytes after the class lengths", refresh_crcs(b))
    b = bytearray(good)
    b[starts[6]:starts[6] + 13] = bytes([1] * 13)
    ck.rejects("fill mask: over-subscribed class code", refresh_crcs(b))
    b = bytearray(good)
    struct.pack_into("<I", b, starts[6] + 16, struct.unpack_from("<I", b, starts[6] + 16)[0] + 1)
    ck.rejects("fill mask: chunk bit length off by one", refresh_crcs(b))

    # Gap array entry (tokens) wrong, CRCs valid.
    b = bytearray(good)
    if lengths[2] >= 2:
        b[starts[2] + 1] ^= 1
        ck.rejects("wrong gap entry with run tokens", refresh_crcs(b), "gap")

    # Chunk index sized for one more chunk (S is known only after the mask).
    bad, _ = make(v, shape, p, tamper={"sections": lambda s: [s[0], s[1] + bytes(4)] + s[2:]},
                  **kw)
    ck.rejects("chunk index one chunk too long", bad)

    # S, the symbol positions at offset 196 (§15.2, §15.7 step 1).
    S = struct.unpack_from("<I", good, off + 196)[0]
    other = S - 1 if -(-(S - 1) // p["chunk"]) == -(-S // p["chunk"]) else S + 1
    ck.rejects("S off by one against the mask", header_edit(196, other, "<I"),
               "disagree with the fill mask")
    ck.rejects("S = 0 with a fill mask", header_edit(196, 0, "<I"))
    ck.rejects("S > n with a fill mask", header_edit(196, 36, "<I"))
    bad, _ = make(v, shape, p, tamper={"fields": lambda f: f.update(positions=S + 7),
                                       "sections": lambda s: [s[0], s[1] + bytes(4)] + s[2:]},
                  **kw)
    ck.rejects("S one chunk more, chunk index to match", bad)
    for case in (case_3d_linear, case_lorenzo_runs):  # fill coding 0: S = n
        v0, shape0, p0, kw0 = case()
        buf0 = bytearray(make(v0, shape0, p0, **kw0)[0])
        off0 = frame_fields(buf0)[0]
        n0 = struct.unpack_from("<I", buf0, off0 + 196)[0]
        struct.pack_into("<I", buf0, off0 + 196, n0 - 1)
        ck.rejects("%s: S = n - 1 with fill coding 0" % case.__name__, refresh_crcs(buf0),
                   "symbol positions")
    v1, shape1, p1, kw1 = case_v1()
    buf1 = bytearray(make(v1, shape1, p1, **kw1)[0])
    struct.pack_into("<I", buf1, frame_fields(buf1)[0] + 196, 66)
    ck.rejects("version-1 frame with S set (reserved)", refresh_crcs(buf1), "reserved")

    # Mask token counts: empty runs anywhere are valid, so K may exceed n + 1 (§15.6).
    vs, shapes, ps, kws = case_single_fill()
    extra, exp = make(vs, shapes, ps, tamper={"mask_runs": lambda r: [0, 0, 0, 0] + r}, **kws)
    try:
        if ck.reader.decode(extra)[2] != exp:
            ck.fail("mask with K = n + 5 (empty runs): wrong output")
    except ck.reader.Corrupt as e:
        ck.fail("mask with K = n + 5 (empty runs) rejected: %s" % e)
    bad, _ = make(vs, shapes, ps, tamper={"fields": lambda f: f.update(n_fill=10**6)}, **kws)
    ck.rejects("mask token count beyond the fill section's bits", bad, "fill mask size")

    # Metadata block.
    def with_metadata(doc):
        return make(v, shape, p, metadata=doc)[0]
    ck.rejects("metadata: a JSON array", with_metadata(b"[1, 2]"), "object")
    ck.rejects("metadata: NaN", with_metadata(b'{"a": NaN}'))
    ck.rejects("metadata: invalid UTF-8", with_metadata(b'{"a": "\xff"}'))
    ck.rejects("metadata: UTF-8 BOM", with_metadata(b'\xef\xbb\xbf{"a": 1}'))
    ck.rejects("metadata: trailing text", with_metadata(b'{"a": 1} x'))
    ck.rejects("metadata: not JSON", with_metadata(b"{a: 1}"))
    ck.rejects("metadata: nested too deeply", with_metadata(b"[" * 100000 + b"]" * 100000))
    long_doc = b'{"n": ' + b"1" * 5000 + b"}"  # a valid JSON number of 5000 digits
    try:
        ck.reader.decode(with_metadata(long_doc))
    except ck.reader.Corrupt as e:
        ck.fail("metadata: a 5000-digit number rejected: %s" % e)
    b = bytearray(with_metadata(b'{"a":1}'))  # 7 bytes: padding at 96 + 19 .. 96 + 24
    b[96 + 20] = 1
    ck.rejects("metadata: non-zero padding", b, "padding")
    b = bytearray(with_metadata(b'{"a":1}'))
    struct.pack_into("<I", b, 100, 8)  # length 8: same metadata_bytes
    struct.pack_into("<I", b, 104, crc32c(b[100:104] + b[108:116]))
    ck.rejects("metadata: length changed, CRC made valid", b)
    b = bytearray(with_metadata(b'{"a":1}'))
    struct.pack_into("<I", b, 104, crc32c(b[108:115]))  # the document alone (an old draft)
    ck.rejects("metadata: CRC of the document alone", b, "metadata checksum")
    b = bytearray(good)
    struct.pack_into("<I", b, 12, 24)
    ck.rejects("metadata_bytes in a version-1 file header",
               refresh_file_crc(b[:4] + struct.pack("<H", 1) + b[6:]))
    b = bytearray(with_metadata(b'{"a":1}'))
    struct.pack_into("<I", b, 12, 32)
    ck.rejects("metadata_bytes disagrees with the length", refresh_file_crc(b))
    run_value_violations(ck)
    if ck.failures == before:
        print("ok   %-28s rejected" % "semantic violations")


def one_more_position(token, base, radius):
    """A token like `token` that covers one more position (§15.4, §15.4.1)."""
    s, nextra, e = token
    if s < base:  # a residual symbol: a class-0 run-value token (a zero, then +1)
        return (base + 12 + 2, 0, 0)
    if s < base + 12:  # a run token of class c: the run-value token of class c, e, +1
        return (base + 12 + 4 * nextra + 2, nextra, e)
    if e + 1 < (1 << nextra):
        return (s, nextra, e + 1)
    return (s + 4, nextra + 1, 0)  # 2^c + 2^c - 1 zeros -> 2^(c+1)


def run_value_violations(ck):
    """Run-value tokens (§15.2, §15.4.1) that break a rule, every CRC valid."""
    v, shape, p, kw = case_2d_run_values()
    good, _ = make(v, shape, p, **kw)
    off, starts, lengths = frame_fields(good)

    def header_edit(at, value, fmt="<B"):
        return edited_header(good, off, at, value, fmt)

    ck.rejects("radius 32737 with run-value tokens", header_edit(88, 32737, "<I"),
               "too large for run-value tokens")
    ck.rejects("max code length 21 with run-value tokens", header_edit(12, 21),
               "too large for run-value tokens")
    ck.rejects("lossless 2 frame read as lossless 1 (alphabet - 52)", header_edit(14, 1),
               "code lengths")
    ck.rejects("lossless 2 frame read as plain Huffman", header_edit(14, 0), "code lengths")
    if lengths[2] >= 2:
        b = bytearray(good)
        b[starts[2] + 1] ^= 1
        ck.rejects("wrong gap entry with run-value tokens", refresh_crcs(b), "gap")
    else:
        ck.fail("case_2d_run_values has no gap array of two entries")

    # A chunk's last token covering one position more than the chunk has: whichever kind
    # it is, it becomes (or stays) a run-value token, whose value then lies past the end.
    base = 2 * p["radius"]

    def cross(chunks_tokens):
        out = [list(t) for t in chunks_tokens]
        out[0][-1] = one_more_position(out[0][-1], base, p["radius"])
        return out
    bad, _ = make(v, shape, p, tamper={"tokens": cross}, **kw)
    ck.rejects("run-value token crossing a chunk's end", bad, "crosses")

    def lengthen_first_value(chunks_tokens):  # the first run-value token covers one more
        out = [list(t) for t in chunks_tokens]
        for tokens in out:
            for k, t in enumerate(tokens):
                if t[0] >= base + 12:
                    tokens[k] = one_more_position(t, base, p["radius"])
                    return out
        raise AssertionError("no run-value token")
    bad, _ = make(v, shape, p, tamper={"tokens": lengthen_first_value}, **kw)
    ck.rejects("run-value token one position too long", bad)

    # Radius 2 and 1: a value radius + v_j that is no symbol (below 0, or 2 radius and more).
    for radius, valid_j, bad_js in ((2, (0, 1, 2), (3,)), (1, (1,), (0, 2, 3))):
        v2, shape2, p2, kw2 = case_radius2_run_values()
        p2["radius"] = radius
        base2 = 2 * radius
        buf2, exp2 = make(v2, shape2, p2, **kw2)
        try:
            if ck.reader.decode(buf2)[2] != exp2:
                ck.fail("run-value tokens with radius %d: wrong output" % radius)
        except ck.reader.Corrupt as e:
            ck.fail("run-value tokens with radius %d rejected: %s" % (radius, e))
        for j in bad_js:
            def to_j(chunks_tokens, j=j):
                out = [list(t) for t in chunks_tokens]
                for tokens in out:
                    for k, (s, nextra, e) in enumerate(tokens):
                        if s >= base2 + 12 and (s - base2 - 12) % 4 in valid_j:
                            tokens[k] = (s - (s - base2 - 12) % 4 + j, nextra, e)
                            return out
                raise AssertionError("no run-value token")
            bad, _ = make(v2, shape2, p2, tamper={"tokens": to_j}, **kw2)
            ck.rejects("radius %d: run-value token of v_%d (radius %+d is no symbol)" %
                       (radius, j, RUN_VALUES[j]), bad, "no symbol")


def fuzz(ck, built, iterations=1500):
    """Random edits of headers and sections with every CRC made valid again: each archive
    must decode or be rejected with Corrupt, never raise anything else."""
    rng = random.Random(7)
    small = [(k, b) for k, b in sorted(built.items()) if len(b) <= 6000]
    bad = 0
    for _ in range(iterations):
        name, buf = rng.choice(small)
        b = bytearray(buf)
        off, starts, lengths = frame_fields(b)
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.3:
                pos = off + rng.randrange(8, 252)
            elif kind < 0.9:
                s = rng.choice([s for s in range(7) if lengths[s]])
                pos = starts[s] + rng.randrange(lengths[s])
            else:
                pos = rng.randrange(8, 92)
            b[pos] = b[pos] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
        try:
            b = refresh_crcs(refresh_file_crc(b))
        except struct.error:  # the edit moved the frame's sections out of the archive
            continue
        try:
            ck.reader.decode(bytes(b))
        except ck.reader.Corrupt:
            pass
        except Exception as e:
            ck.fail("fuzz: %s: %s: %s" % (name, type(e).__name__, e))
            bad += 1
    if not bad:
        print("ok   %-28s %d CRC-valid random edits decoded or rejected cleanly" %
              ("fuzz", iterations))


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    reader = load_reader(argv[1] if len(argv) > 1 else os.path.join(here, "read_by_spec.py"))
    ck = Checker(reader)
    built = {}
    for case in CASES:
        v, shape, p, kw = case()
        values = [to_t(x, p["f32"]) for x in v]
        p["log"] = []
        buf, expected = make(values, shape, p, **kw)
        built[case.__name__] = buf
        ck.decodes(case.__name__, buf, expected, values, p, kw.get("metadata"))
        if p["lossless"] == 2:
            run_value_coverage(ck, case.__name__, p)
    for name in ("case_2d_cubic", "case_single_fill", "case_3d_linear", "case_lorenzo_runs",
                 "case_2d_run_values", "case_radius2_run_values"):
        ck.mutations(name, built[name])
    semantic_violations(ck)
    fuzz(ck, built)
    print("%d failure(s)" % ck.failures)
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
