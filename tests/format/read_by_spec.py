#!/usr/bin/env python3
"""usage: read_by_spec.py ARCHIVE.ebz OUT.raw [--metadata OUT.json]

An independent .ebz decoder written only from FORMAT.md (the § numbers refer
to it); pure Python 3 standard library, slow and strict. Reads format
versions 1 and 2 (§15). Writes the decoded array (raw little-endian elements,
C order) and prints a one-line summary; exits 1 with "corrupt archive: ..." on
any violation. With --metadata, also writes the archive's metadata document
(§15.1) to OUT.json, byte for byte as stored; when the archive has none, that
file is not written."""
import bisect
import collections
import itertools
import json
import math
import struct
import sys

NEWEST_VERSION = 2
FLT_MAX, FLT_OVERFLOW = 3.4028234663852886e38, 3.4028235677973366e38  # FLT_MAX + 1/2 ulp
SECTIONS = ("code lengths", "chunk index", "gap array", "bitstream", "outliers", "verbatim",
            "fill runs")
FILE_HEADER = struct.Struct("<IHHBBBBI4QdddQQII")  # §3, 96 bytes
FRAME_HEADER = struct.Struct("<IHHBBBBBBBB4QQddddII4HIIQQQ" + "QII" * 7 + "BBHI")  # §4.1, §15.2
assert FILE_HEADER.size == 96 and FRAME_HEADER.size == 256
RUN_CLASSES = 12  # §15.4: run tokens of classes 1..12
RUN_VALUES = (-2, -1, 1, 2)  # §15.4.1: v_0 .. v_3 of the run-value tokens, classes 0..12
# Tokens after the 2 radius residual symbols, per `lossless` stage (§15.2, §15.4, §15.4.1):
# none; the 12 run tokens; the 12 run tokens and 13 * 4 run-value tokens.
TOKENS = (0, RUN_CLASSES, RUN_CLASSES + 13 * len(RUN_VALUES))
# The most positions one token covers, per stage (§15.8.1): 1; 2^12 + 4095; that and a value.
TOKEN_POSITIONS = (1, 8191, 8192)
MAX_MASK_RUN, MASK_CHUNK = 8190, 4096  # §15.6


class Corrupt(Exception):
    pass


def check(ok, what):
    if not ok:
        raise Corrupt(what)


CRC_TABLE = []  # §1: CRC-32C, reflected polynomial 0x82F63B78
for c in range(256):
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    CRC_TABLE.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def ceil_div(a, b):
    return (a + b - 1) // b


def align8(x):
    return ceil_div(x, 8) * 8


def check_magic_version(magic, want, version, what):  # §11: the version before the CRC
    check(magic == want, "bad %s magic" % what)
    check(1 <= version <= NEWEST_VERSION, "%s has format version %d; this reader supports 1 to %d"
          % (what, version, NEWEST_VERSION))


def is_pos_zero(x):
    return struct.pack("<d", x) == bytes(8)


def narrow(v, is_f32):
    """§8.4: binary64 -> T with round to nearest; returns the packed bytes."""
    if not is_f32:
        return struct.pack("<d", v)
    if math.isfinite(v) and abs(v) > FLT_MAX:
        v = math.copysign(math.inf if abs(v) >= FLT_OVERFLOW else FLT_MAX, v)
    return struct.pack("<f", v)


def narrow_value(v, is_f32):
    """§8.4's narrow_T, then back to binary64 (exact): the value of a T as a Python float."""
    return struct.unpack("<f", narrow(v, True))[0] if is_f32 else v


def read_dims(values, ndim, what):  # used dimensions non-zero, unused ones zero
    check(all((x != 0) == (d < ndim) for d, x in enumerate(values)), what + " and rank disagree")
    return list(values[:ndim])


def good_fill(fill, is_f32):  # §9.1 item 7 when a fill value is present
    return math.isfinite(fill) and (not is_f32 or abs(fill) <= FLT_MAX)


def parse_file_header(buf):  # §3, §9.1, §15.1
    check(len(buf) >= 96, "truncated: shorter than the file header")
    f = FILE_HEADER.unpack_from(buf, 0)
    version = f[1]
    check_magic_version(f[0], 0x415A4245, version, "archive")
    check(crc32c(buf[0:92]) == f[-1], "file header checksum mismatch")
    (size, dtype, ndim, mode, flags, meta_bytes), dims = f[2:8], f[8:12]
    bound, abs_bound, fill, frame_rows, frame_count, res2 = f[12:18]
    check(size == 96 and dtype in (1, 2) and 1 <= ndim <= 4 and mode in (1, 2),
          "bad file header size, dtype, rank or mode")
    # Offset 12 is reserved in version 1 and metadata_bytes in version 2 (§15.1).
    check(flags & ~1 == 0 and res2 == 0 and (version >= 2 or meta_bytes == 0),
          "reserved bits set")
    check(meta_bytes == 0 or (meta_bytes % 8 == 0 and 16 <= meta_bytes <= 12 + 2**20 + 4),
          "bad metadata_bytes")
    shape = read_dims(dims, ndim, "shape")
    check(math.prod(shape) * (4 if dtype == 1 else 8) < 2**64, "array too large")
    check(math.isfinite(bound) and bound > 0 and math.isfinite(abs_bound) and abs_bound >= 0
          and not math.copysign(1, abs_bound) < 0, "bad bound")
    check(good_fill(fill, dtype == 1) if flags & 1 else is_pos_zero(fill), "bad fill value")
    check(1 <= frame_rows <= shape[0] and frame_count == ceil_div(shape[0], frame_rows),
          "bad frame rows or frame count")
    check(frame_rows * math.prod(shape[1:]) <= 2**32 - 1, "frames too large")
    return dict(version=version, dtype=dtype, shape=shape, mode=mode, bound=bound,
                abs_bound=abs_bound, fill=fill if flags & 1 else None, frame_rows=frame_rows,
                frame_count=frame_count, meta_bytes=meta_bytes)


def parse_metadata(buf, fh):  # §15.1: the metadata block, or None
    size = fh["meta_bytes"]
    if size == 0:
        return None
    check(len(buf) >= 96 + size, "truncated: metadata block")
    magic, length, crc = struct.unpack_from("<III", buf, 96)
    check(magic == 0x4D5A4245, "bad metadata magic")
    check(1 <= length <= 2**20 and size == align8(12 + length),
          "metadata length disagrees with metadata_bytes")
    doc = bytes(buf[108:108 + length])
    check(crc32c(bytes(buf[100:104]) + doc) == crc, "metadata checksum mismatch")  # length, doc
    check(not any(buf[108 + length:96 + size]), "non-zero metadata padding")

    # Readers MUST check the above; this one also validates the JSON fully, which §15.1
    # allows (the C++ reader only checks for `{` ... `}` within JSON whitespace).
    def reject_constant(name):  # NaN, Infinity, -Infinity: Python's extensions, not RFC 8259
        raise ValueError("%s is not JSON" % name)

    try:  # RFC 8259 in strict UTF-8 (no BOM); numbers are not converted (no digit limits)
        value = json.loads(doc.decode("utf-8"), parse_constant=reject_constant,
                           parse_int=len, parse_float=len)
    except RecursionError:
        raise Corrupt("metadata: JSON nested too deeply for this reader") from None
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise Corrupt("metadata is not a JSON text in UTF-8: %s" % e) from None
    check(isinstance(value, dict), "metadata's top-level value is not a JSON object")
    return doc


def parse_index(buf, fh):  # §7, §6
    index_offset, magic, crc = struct.unpack_from("<QII", buf, len(buf) - 16)  # len >= 96
    check(magic == 0x455A4245 and crc32c(buf[-16:-4]) == crc, "truncated: bad trailer")
    count = fh["frame_count"]  # so the index's size is known: 16 + 16 * count
    check(96 + fh["meta_bytes"] <= index_offset <= len(buf) and
          len(buf) - index_offset == 32 + 16 * count,
          "truncated or misplaced frame index")
    magic, crc, n = struct.unpack_from("<IIQ", buf, index_offset)
    check(magic == 0x495A4245 and n == count, "bad frame index magic or size")
    check(crc32c(buf[index_offset + 8:index_offset + 16 + 16 * n]) == crc,
          "frame index checksum mismatch")
    frames, expected = [], 96 + fh["meta_bytes"]  # §15.1: frame 0 follows the metadata block
    for i in range(n):
        off, size = struct.unpack_from("<QQ", buf, index_offset + 16 + 16 * i)
        check(off == expected and size >= 256 and size % 8 == 0, "frame index does not tile")
        frames.append((off, size))
        expected += size
    check(expected == index_offset, "frame index does not tile the archive")
    return frames


def parse_frame_header(buf, off, size, fh, i):  # §4.1, §9.2, §15.2 (index: size >= 256)
    v = FRAME_HEADER.unpack_from(buf, off)
    version = v[1]
    check_magic_version(v[0], 0x465A4245, version, "frame")
    check(crc32c(buf[off:off + 252]) == v[-1], "frame header checksum mismatch")
    hsize, dtype, ndim, mode, flags, maxlen, predictor, lossless, fill_coding = v[2:11]
    check(hsize == 256 and dtype in (1, 2) and 1 <= ndim <= 4 and mode in (1, 2),
          "bad frame header size, dtype, rank or mode")
    order, res8, res16 = v[-4:-1]
    table = v[31:52]
    positions = table[3 * 3 + 2]  # §15.2: section 3's reserved u32 (offset 196) is S
    check(flags & ~3 == 0 and res8 == 0 and res16 == 0 and
          not any(x for s, x in enumerate(table[2::3]) if s != 3), "reserved frame bits set")
    # Bytes 13, 14, 15, 196 and 248 are reserved in version 1, fields in version 2 (§15.2).
    check(version >= 2 or predictor == lossless == fill_coding == order == positions == 0,
          "reserved frame bits set")
    check(predictor in (0, 1) and lossless in (0, 1, 2) and fill_coding in (0, 1),
          "bad predictor, lossless or fill coding")
    shape = read_dims(v[11:15], ndim, "frame shape")
    first_row, bound, abs_bound, step, fill, radius, chunk = v[15:22]
    block = read_dims(v[22:26], ndim, "block")
    sub_bits, group, n_out, n_verb, n_fill = v[26:31]
    n = math.prod(shape)
    lengths, crcs = list(table[0::3]), list(table[1::3])
    f32, has_fill = dtype == 1, bool(flags & 2)
    check(n <= 2**32 - 1, "frame has too many elements")
    check(math.isfinite(bound) and bound > 0 and math.isfinite(abs_bound) and abs_bound >= 0
          and not math.copysign(1, abs_bound) < 0 and math.isfinite(step) and step > 0,
          "bad bound or quantization step")
    check(good_fill(fill, f32) if has_fill else is_pos_zero(fill), "bad fill value")
    check(1 <= radius <= 32768 and 1 <= chunk <= 2**20 and 1 <= maxlen <= 24 and 1 <= group
          <= 65536 and 32 <= sub_bits <= 65536 and sub_bits % 32 == 0, "parameter out of range")
    # §15.2: the predictor's parameters.
    tile, interp = 0, []
    if predictor == 1:
        tile = max(block)
        interp = [d for d in range(ndim) if block[d] == tile]
        check(2 <= tile <= 32768 and tile & (tile - 1) == 0 and
              all(b in (1, tile) for b in block), "bad interpolation tile")
        check(order in (1, 3), "bad interpolation order")
    else:
        check(order == 0, "order set for the Lorenzo predictor")
    check((fill_coding == 1) == (predictor == 1 and has_fill), "bad fill coding")
    # §15.2: lossless 1 (radius <= 32762) and 2 (radius <= 32736), code lengths <= 20.
    check(lossless == 0 or (2 * radius + TOKENS[lossless] <= 65536 and maxlen <= 20),
          "radius or code length too large for %s tokens"
          % ("zero-run", "run-value")[lossless == 2])
    # §15.2: S, the symbol positions (version 1: every element).
    if version == 1 or fill_coding == 0:
        check(version == 1 or positions == n, "symbol positions disagree with element count")
        positions = n
    else:  # checked against the mask when it is decoded (§15.7 step 1)
        check(1 <= positions <= n, "bad symbol positions")
    # §9.2 items 7 to 9; with fill coding 1 fill_run_count is the mask's token count K
    # (§15.6), bounded by the fill section's size instead (below).
    check(max(n_out, n_verb) <= n and (fill_coding == 1 or n_fill <= n),
          "section count exceeds element count")
    chunks, tsize = ceil_div(positions, chunk), 4 if dtype == 1 else 8
    check(lengths[0] != 0 and lengths[3] % 4 == 0 and bool(flags & 1) == (lengths[2] != 0),
          "bad code length, gap array or bitstream size")
    check([lengths[4], lengths[5]] == [8 * n_out, align8(4 * n_verb) + tsize * n_verb],
          "section size disagrees with counts")
    check(has_fill or n_fill == 0, "fill runs without a fill value")
    check(all(x <= 2**48 for x in lengths), "section too large")
    # §9.2 item 8 with S for n (§15.2, §15.4, §15.4.1, §15.8.1): chunk index, bitstream
    # minimum (8 length >= S, times 8191 with zero-run tokens, 8192 with run-value tokens).
    check(lengths[1] == 8 * ceil_div(chunks, group) + 4 * chunks,
          "chunk index size disagrees with the symbol positions")
    check(8 * lengths[3] * TOKEN_POSITIONS[lossless] >= positions,
          "bitstream too short for the symbol positions")
    if fill_coding == 0:
        check(lengths[6] == 8 * n_fill, "section size disagrees with counts")
    else:  # §15.2, §15.6: the fill mask's fixed part, chunk lengths, >= K bits of bitstream
        mask_stream = lengths[6] - 16 - 4 * ceil_div(n_fill, MASK_CHUNK)
        check(n_fill >= 1 and mask_stream >= 0 and mask_stream % 4 == 0 and
              8 * mask_stream >= n_fill, "bad fill mask size")
        # "n - S <= 8190 * 8 * (its bytes beyond the fixed part)": taken here as the mask
        # bitstream's bytes; any reading holds for a valid mask (n <= 8190 * K <= 8 * 8190
        # * those bytes), this one is the tightest.
        check(n - positions <= MAX_MASK_RUN * 8 * mask_stream,
              "fill mask too short for the fill elements")
    # §9.2 item 10: agreement with the file header and the frame index.
    rows = min(fh["frame_rows"], fh["shape"][0] - i * fh["frame_rows"])
    check(256 + sum(align8(x) for x in lengths) == size, "frame size disagrees with index")
    check((dtype, ndim, mode, bound, abs_bound) ==
          (fh["dtype"], len(fh["shape"]), fh["mode"], fh["bound"], fh["abs_bound"]),
          "frame disagrees with the file header")
    check((fill if has_fill else None) == fh["fill"], "frame fill value disagrees")
    check(not has_fill or narrow(fill, False) == narrow(fh["fill"], False),
          "frame fill value disagrees")
    check(shape[1:] == fh["shape"][1:] and shape[0] == rows, "frame shape disagrees")
    check(first_row == i * fh["frame_rows"], "frame first row disagrees")
    return dict(version=version, f32=f32, shape=shape, n=n, gap=bool(flags & 1), maxlen=maxlen,
                step=step, fill=fill if has_fill else None, radius=radius, chunk=chunk,
                block=block, sub_bits=sub_bits, group=group, n_out=n_out, n_verb=n_verb,
                n_fill=n_fill, sec_len=lengths, sec_crc=crcs, predictor=predictor,
                lossless=lossless, fill_coding=fill_coding, order=order, tile=tile,
                interp=interp, positions=positions)


def parse_code_lengths(sec, alphabet, maxlen):  # §5.1
    out, p = [], 0
    while p < len(sec):
        b, p = sec[p], p + 1
        if b:
            check(b <= maxlen and len(out) < alphabet, "code lengths: bad length")
            out.append(b)
            continue
        run = shift = 0
        while True:  # LEB128, at most 6 bytes
            check(p < len(sec) and shift <= 35, "code lengths: bad zero run")
            run, shift, p = run | (sec[p] & 0x7F) << shift, shift + 7, p + 1
            if not sec[p - 1] & 0x80:
                break
        check(1 <= run <= alphabet - len(out), "code lengths: bad zero run")
        out.extend([0] * run)
    check(len(out) == alphabet and any(out), "code lengths: too few, or none non-zero")
    check(kraft_ok(out, maxlen), "code lengths: over-subscribed")
    return out


def kraft_ok(lengths, maxlen):
    return sum(1 << (maxlen - x) for x in lengths if x) <= 1 << maxlen


def canonical_code(lengths):  # §5.2, as DEFLATE: {(length, codeword): symbol}
    maxlen, bl_count = max(lengths), collections.Counter(x for x in lengths if x)
    code, next_code = 0, [0] * (maxlen + 1)
    for bits in range(1, maxlen + 1):
        code = (code + bl_count[bits - 1]) << 1
        next_code[bits] = code
    table = {}
    for sym, x in enumerate(lengths):
        if x:
            table[(x, next_code[x])] = sym
            next_code[x] += 1
    return table


def read_codeword(stream, pos, end, table, maxlen, what):
    """§8.1: the codeword at bit `pos` of the bit string `stream`, none past `end`."""
    code = length = 0
    while (length, code) not in table:
        check(length < maxlen and pos + length < end, what + ": invalid codeword")
        code = code * 2 + (stream[pos + length] == "1")
        length += 1
    return table[(length, code)], pos + length


def chunk_bits(words, start, stop):  # §1 bit order: MSB first within each u32 word
    return "".join(format(w, "032b") for w in words[start:stop])


def decode_symbols(h, sec, count, code_lengths):
    """§5.3 - §5.5, §8.1, §15.3, §15.4, §15.4.1: the symbols of the frame's `count`
    positions."""
    chunk, group, sub_bits, maxlen = h["chunk"], h["group"], h["sub_bits"], h["maxlen"]
    chunks, groups = ceil_div(count, chunk), ceil_div(ceil_div(count, chunk), group)
    index, words = sec[1], struct.unpack("<%dI" % (len(sec[3]) // 4), sec[3])
    check(len(index) == 8 * groups + 4 * chunks, "chunk index size disagrees with symbol count")
    bits = struct.unpack_from("<%dI" % chunks, index, 8 * groups)
    starts = [0]  # start_word[c]; starts[chunks] is the total word count
    for c in range(chunks):
        check(bits[c] <= chunk * maxlen, "chunk index: chunk too long")
        starts.append(starts[-1] + ceil_div(bits[c], 32))
    for g in range(groups):
        check(struct.unpack_from("<Q", index, 8 * g)[0] == starts[g * group],
              "chunk index: group offset disagrees with chunk lengths")
    check(starts[-1] == len(words), "chunk index: lengths disagree with bitstream size")
    gap_total = sum(ceil_div(b, sub_bits) for b in bits)
    check(not h["gap"] or len(sec[2]) == gap_total, "gap array size disagrees")
    table, symbols, gap_pos = canonical_code(code_lengths), [], 0
    # §15.4: symbols >= 2 radius are run tokens (lossless 1 and 2), and from 2 radius + 12 on
    # run-value tokens (§15.4.1, lossless 2; parse_code_lengths keeps symbols in the alphabet).
    zero, first_run = h["radius"], 2 * h["radius"]
    first_value = first_run + RUN_CLASSES
    for c in range(chunks):
        stream, end, what = chunk_bits(words, starts[c], starts[c + 1]), bits[c], \
            "bitstream: chunk %d" % c
        want, got, token_starts, pos = min(chunk, count - c * chunk), 0, [], 0
        while pos < end:
            token_starts.append(pos)
            sym, pos = read_codeword(stream, pos, end, table, maxlen, what)
            if sym < first_run:
                symbols.append(sym)
                got += 1
                continue
            if sym < first_value:  # a run token of class 1..12
                cls, value = sym - first_run + 1, None
            else:  # a run-value token 2 radius + 12 + 4 c + j: class c (0..12), value v_j
                cls, j = divmod(sym - first_value, len(RUN_VALUES))
                value = zero + RUN_VALUES[j]
                # The value's position carries a symbol (§5.2: 0 .. 2 radius - 1); only a
                # radius of 1 or 2 can name one outside them (radius - 2 < 0, radius + 2 >=
                # 2 radius).
                check(0 <= value < first_run, what + ": run-value token's value is no symbol")
            # `cls` extra bits, MSB first: the number e, 2^cls + e zeros (none for class 0).
            check(pos + cls <= end, what + ": run token's extra bits pass the chunk's end")
            run = (1 << cls) + (int(stream[pos:pos + cls], 2) if cls else 0)
            pos += cls
            covers = run + (value is not None)
            check(got + covers <= want, what + ": %s crosses the chunk's end"
                  % ("zero run" if value is None else "run-value token"))
            symbols.extend([zero] * run)
            if value is not None:
                symbols.append(value)
            got += covers
        check(got == want, what + ": symbol count mismatch")
        token_starts.append(end)  # "or the chunk end"
        for j in range(ceil_div(end, sub_bits) if h["gap"] else 0):  # §5.4: recompute
            first = token_starts[bisect.bisect_left(token_starts, j * sub_bits)]
            check(sec[2][gap_pos] == first - j * sub_bits, "gap array: wrong gap")
            gap_pos += 1
    return symbols


def decode_fill_mask(h, sec):  # §15.6: the mask M, one 0/1 per element
    n, k, shape = h["n"], h["n_fill"], h["shape"]
    chunks = ceil_div(k, MASK_CHUNK)  # parse_frame_header: the section holds these
    lengths = list(sec[:13])
    check(all(x <= 20 for x in lengths) and any(lengths) and kraft_ok(lengths, 20) and
          sec[13:16] == bytes(3), "fill mask: bad code lengths")
    bits = struct.unpack_from("<%dI" % chunks, sec, 16)
    body = sec[16 + 4 * chunks:]
    words = struct.unpack("<%dI" % (len(body) // 4), body)
    check(sum(ceil_div(b, 32) for b in bits) == len(words),
          "fill mask: chunk lengths disagree with its size")
    table, runs, total, start = canonical_code(lengths), [], 0, 0
    for c in range(chunks):
        stop = start + ceil_div(bits[c], 32)
        stream, end, what = chunk_bits(words, start, stop), bits[c], "fill mask: chunk %d" % c
        pos = 0
        for _ in range(min(MASK_CHUNK, k - c * MASK_CHUNK)):
            cls, pos = read_codeword(stream, pos, end, table, 20, what)
            check(pos + cls <= end, what + ": extra bits pass the chunk's end")
            length = (1 << cls) + (int(stream[pos:pos + cls], 2) if cls else 0) - 1
            pos += cls
            total += length
            check(total <= n, "fill mask: runs longer than the frame")
            runs.append(length)
        check(pos == end, what + ": does not end at its bit length")
        start = stop
    check(total == n, "fill mask: runs do not cover the frame")
    x, i = bytearray(n), 0  # runs alternate 0s and 1s, starting with 0s
    for j, length in enumerate(runs):
        if j % 2:
            x[i:i + length] = b"\x01" * length
        i += length
    row = n if len(shape) == 1 else n // shape[0]  # §15.6: XOR with the previous row
    for i in range(row, n):
        x[i] ^= x[i - row]
    return x


def inverse_lorenzo(q, shape, block):  # §8.3: one in-block prefix sum per dimension
    n = len(q)
    for d in range(len(shape)):
        stride = math.prod(shape[d + 1:])
        for i in range(n):
            if (i // stride) % shape[d] % block[d] != 0:
                q[i] = (q[i] + q[i - stride] + 2**31) % 2**32 - 2**31  # wraps as i32
    return q


def interp_layout(h):
    """§15.5.1 - §15.5.3: (rank, symbol order). rank[i] is 0 for an anchor, else 1 + the
    number of passes before element i's pass; symbol order lists the elements tile by tile,
    within a tile by rank, within a rank in C order."""
    shape, tile, interp = h["shape"], h["tile"], h["interp"]
    grid = [ceil_div(x, tile) if d in interp else x for d, x in enumerate(shape)]
    log_t = tile.bit_length() - 1
    tile_of, level_of = [], []  # per dimension and index: tile-number term, level (0 = anchor)
    for d, extent in enumerate(shape):
        gstride = math.prod(grid[d + 1:])
        if d in interp:
            tile_of.append([i // tile * gstride for i in range(extent)])
            level_of.append([log_t - ((i % tile) & -(i % tile)).bit_length() + 1 if i % tile
                             else 0 for i in range(extent)])
        else:
            tile_of.append([i * gstride for i in range(extent)])
            level_of.append(None)
    width = len(interp)
    rank, key = [], []
    for p in itertools.product(*(range(x) for x in shape)):  # C order
        top, last = 0, 0
        for k, d in enumerate(interp):  # the finest level; the last dimension at that level
            lv = level_of[d][p[d]]
            if lv >= top:
                top, last = lv, k
        r = 1 + (top - 1) * width + last if top else 0
        rank.append(r)
        key.append(sum(tile_of[d][p[d]] for d in range(len(shape))) * (log_t * width + 1) + r)
    order = sorted(range(len(rank)), key=key.__getitem__)  # stable: C order within a pass
    return rank, order


def interpolate(h, rank, sym_at, outlier):  # §15.5: the working values of every element
    shape, tile, interp, f32 = h["shape"], h["tile"], h["interp"], h["f32"]
    step, radius, cubic = h["step"], h["radius"], h["order"] == 3
    n, width = h["n"], len(interp)
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    # §15.5.1: the anchor grid, a Lorenzo frame with blocks of 8.
    grid = [ceil_div(x, tile) if d in interp else x for d, x in enumerate(shape)]
    anchor_elems = [sum((g * tile if d in interp else g) * strides[d] for d, g in enumerate(p))
                    for p in itertools.product(*(range(x) for x in grid))]
    q = [outlier[i] if sym_at[i] == 0 else sym_at[i] - radius for i in anchor_elems]
    inverse_lorenzo(q, grid, [8] * len(grid))
    w = [0.0] * n
    for i, qi in zip(anchor_elems, q):
        w[i] = narrow_value(float(qi) * step, f32)
    # §15.5.2: the passes, each over the whole frame.
    passes = [[] for _ in range((tile.bit_length() - 1) * width + 1)]
    for i, r in enumerate(rank):
        passes[r].append(i)
    for r in range(1, len(passes)):
        h_, d = tile >> ((r - 1) // width + 1), interp[(r - 1) % width]
        stride, extent = strides[d], shape[d]
        for i in passes[r]:
            x = i // stride % extent
            lo = x // tile * tile
            hi = min(lo + tile, extent - 1)
            b = w[i - h_ * stride]
            has_a, has_c, has_e = x - 3 * h_ >= lo, x + h_ <= hi, x + 3 * h_ <= hi
            if cubic and has_a and has_c and has_e:
                a, c, e = w[i - 3 * h_ * stride], w[i + h_ * stride], w[i + 3 * h_ * stride]
                pred = (9.0 * (b + c) - (a + e)) * 0.0625
            elif cubic and has_a and has_c:
                a, c = w[i - 3 * h_ * stride], w[i + h_ * stride]
                pred = ((6.0 * b + 3.0 * c) - a) * 0.125
            elif cubic and has_c and has_e:
                c, e = w[i + h_ * stride], w[i + 3 * h_ * stride]
                pred = ((3.0 * b + 6.0 * c) - e) * 0.125
            elif has_c:
                pred = (b + w[i + h_ * stride]) * 0.5
            elif has_a:
                pred = (3.0 * b - w[i - 3 * h_ * stride]) * 0.5
            else:
                pred = b
            if not math.isfinite(pred):
                pred = 0.0
            s = sym_at[i]
            check(s != 0, "outlier symbol at an element that is not an anchor")
            rho = 0 if s is None else s - radius  # no symbol: a fill element
            w[i] = narrow_value(pred + float(rho) * step, f32)
    return w


def decode_frame(buf, off, h):  # §8, §15.7
    sec, p = [], off + 256
    for s, length in enumerate(h["sec_len"]):  # §4: sections, CRCs, zero padding
        sec.append(buf[p:p + length])
        check(crc32c(sec[s]) == h["sec_crc"][s], SECTIONS[s] + " checksum mismatch")
        check(all(b == 0 for b in buf[p + length:p + align8(length)]), "non-zero padding")
        p += align8(length)
    n, radius, f32 = h["n"], h["radius"], h["f32"]
    mask = decode_fill_mask(h, sec[6]) if h["fill_coding"] else None  # §15.7 step 1
    if h["predictor"] == 0:
        rank, positions = None, range(n)
    else:  # §15.3: tile by tile; fill elements carry no symbol, except anchors
        rank, order = interp_layout(h)
        positions = order if mask is None else [i for i in order if not rank[i] or not mask[i]]
    count = len(positions)  # §15.7 step 1: non-fill elements plus the anchors that are fill
    check(count == h["positions"], "symbol positions disagree with the fill mask")
    alphabet = 2 * radius + TOKENS[h["lossless"]]  # §5.1, §15.4, §15.4.1
    symbols = decode_symbols(h, sec, count, parse_code_lengths(sec[0], alphabet, h["maxlen"]))
    if mask is None and h["predictor"] == 0:
        sym_at = symbols
    else:
        sym_at = [None] * n
        for i, s in zip(positions, symbols):
            sym_at[i] = s
    k = h["n_out"]  # §5.6: outliers on the 0 symbols, by element index
    check(symbols.count(0) == k, "outlier count disagrees with the bitstream")
    idx, res = struct.unpack_from("<%dI" % k, sec[4]), struct.unpack_from("<%di" % k, sec[4], 4 * k)
    outlier = {}
    for j in range(k):
        check(idx[j] < n and (j == 0 or idx[j] > idx[j - 1]) and sym_at[idx[j]] == 0,
              "outlier index out of order or not an outlier symbol")
        outlier[idx[j]] = res[j]
    if h["predictor"] == 0:
        q = [outlier[i] if s == 0 else s - radius for i, s in enumerate(sym_at)]  # §8.2
        inverse_lorenzo(q, h["shape"], h["block"])
        out = [narrow(float(x) * h["step"], f32) for x in q]  # §8.4
    else:
        w = interpolate(h, rank, sym_at, outlier)  # §15.5.4: the working values
        out = [narrow(x, f32) for x in w]
    tsize, covered = 4 if f32 else 8, 0  # §8.5: fill runs or mask, then verbatim
    fill = narrow(h["fill"], f32) if h["fill"] is not None else None
    if mask is not None:
        for i in range(n):
            if mask[i]:
                out[i] = fill
    for j in range(h["n_fill"] if mask is None else 0):
        start, length = struct.unpack_from("<II", sec[6], 8 * j)
        check(length >= 1 and start >= covered and start + length <= n, "bad fill runs")
        out[start:start + length] = [fill] * length
        covered = start + length
    k, idx = h["n_verb"], struct.unpack_from("<%dI" % h["n_verb"], sec[5])
    for j in range(k):
        check(idx[j] < n and (j == 0 or idx[j] > idx[j - 1]), "verbatim index out of order")
        out[idx[j]] = sec[5][align8(4 * k) + tsize * j:][:tsize]
    return b"".join(out)


def decode(buf):
    """Returns (file header, frame count, decoded array bytes); raises Corrupt. The file
    header's "metadata" is the metadata document (bytes), or None."""
    fh = parse_file_header(buf)
    frames = parse_index(buf, fh)
    fh["metadata"] = parse_metadata(buf, fh)
    return fh, len(frames), b"".join(decode_frame(buf, off, parse_frame_header(
        buf, off, size, fh, i)) for i, (off, size) in enumerate(frames))  # §8.6: row order


def main(argv):
    args, metadata_out = list(argv[1:]), None
    if "--metadata" in args[:-1]:
        at = args.index("--metadata")
        metadata_out = args[at + 1]
        del args[at:at + 2]
    if len(args) != 2:
        sys.exit("usage: read_by_spec.py ARCHIVE.ebz OUT.raw [--metadata OUT.json]")
    with open(args[0], "rb") as f:
        buf = f.read()
    try:
        fh, frames, data = decode(buf)
    except (Corrupt, struct.error) as e:
        print("corrupt archive: %s" % e, file=sys.stderr)
        return 1
    with open(args[1], "wb") as f:
        f.write(data)
    if metadata_out is not None and fh["metadata"] is not None:
        with open(metadata_out, "wb") as f:
            f.write(fh["metadata"])
    print("%s shape=%s frames=%d abs_bound=%r mode=%s fill=%r version=%d" % (
        ("f32", "f64")[fh["dtype"] - 1], "x".join(map(str, fh["shape"])), frames,
        fh["abs_bound"], ("ABS", "REL")[fh["mode"] - 1], fh["fill"], fh["version"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
