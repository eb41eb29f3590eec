#!/usr/bin/env python3
"""usage: read_by_spec.py ARCHIVE.ebz OUT.raw

An independent .ebz decoder written only from FORMAT.md (the § numbers refer
to it); pure Python 3 standard library, slow and strict. Writes the decoded
array (raw little-endian elements, C order) and prints a one-line summary;
exits 1 with "corrupt archive: ..." on any violation."""
import bisect
import collections
import math
import struct
import sys

FLT_MAX, FLT_OVERFLOW = 3.4028234663852886e38, 3.4028235677973366e38  # FLT_MAX + 1/2 ulp
SECTIONS = ("code lengths", "chunk index", "gap array", "bitstream", "outliers", "verbatim",
            "fill runs")
FILE_HEADER = struct.Struct("<IHHBBBBI4QdddQQII")  # §3, 96 bytes
FRAME_HEADER = struct.Struct("<IHHBBBBBBH4QQddddII4HIIQQQ" + "QII" * 7 + "II")  # §4.1
assert FILE_HEADER.size == 96 and FRAME_HEADER.size == 256


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
    check(version == 1, "%s has format version %d; this reader supports 1" % (what, version))


def narrow(v, is_f32):
    """§8.4: binary64 -> T with round to nearest; returns the packed bytes."""
    if not is_f32:
        return struct.pack("<d", v)
    if math.isfinite(v) and abs(v) > FLT_MAX:
        v = math.copysign(math.inf if abs(v) >= FLT_OVERFLOW else FLT_MAX, v)
    return struct.pack("<f", v)


def read_dims(values, ndim, what):  # used dimensions non-zero, unused ones zero
    check(all((x != 0) == (d < ndim) for d, x in enumerate(values)), what + " and rank disagree")
    return list(values[:ndim])


def parse_file_header(buf):  # §3, §9.1
    check(len(buf) >= 96, "truncated: shorter than the file header")
    f = FILE_HEADER.unpack_from(buf, 0)
    check_magic_version(f[0], 0x415A4245, f[1], "archive")
    check(crc32c(buf[0:92]) == f[-1], "file header checksum mismatch")
    (size, dtype, ndim, mode, flags, res1), dims = f[2:8], f[8:12]
    bound, abs_bound, fill, frame_rows, frame_count, res2 = f[12:18]
    check(size == 96 and dtype in (1, 2) and 1 <= ndim <= 4 and mode in (1, 2),
          "bad file header size, dtype, rank or mode")
    check(flags & ~1 == 0 and res1 == 0 and res2 == 0, "reserved bits set")
    shape = read_dims(dims, ndim, "shape")
    check(math.prod(shape) * (4 if dtype == 1 else 8) < 2**64, "array too large")
    check(math.isfinite(bound) and bound > 0 and math.isfinite(abs_bound) and abs_bound >= 0
          and (not flags & 1 or math.isfinite(fill)), "bad bound or fill value")
    check(1 <= frame_rows <= shape[0] and frame_count == ceil_div(shape[0], frame_rows),
          "bad frame rows or frame count")
    return dict(dtype=dtype, shape=shape, mode=mode, bound=bound, abs_bound=abs_bound,
                fill=fill if flags & 1 else None, frame_rows=frame_rows, frame_count=frame_count)


def parse_index(buf, fh):  # §7, §6
    index_offset, magic, crc = struct.unpack_from("<QII", buf, len(buf) - 16)  # len >= 96
    check(magic == 0x455A4245 and crc32c(buf[-16:-4]) == crc, "truncated: bad trailer")
    count = fh["frame_count"]  # so the index's size is known: 16 + 16 * count
    check(96 <= index_offset <= len(buf) and len(buf) - index_offset == 32 + 16 * count,
          "truncated or misplaced frame index")
    magic, crc, n = struct.unpack_from("<IIQ", buf, index_offset)
    check(magic == 0x495A4245 and n == count, "bad frame index magic or size")
    check(crc32c(buf[index_offset + 8:index_offset + 16 + 16 * n]) == crc,
          "frame index checksum mismatch")
    frames, expected = [], 96
    for i in range(n):
        off, size = struct.unpack_from("<QQ", buf, index_offset + 16 + 16 * i)
        check(off == expected and size >= 256 and size % 8 == 0, "frame index does not tile")
        frames, expected = frames + [(off, size)], expected + size
    check(expected == index_offset, "frame index does not tile the archive")
    return frames


def parse_frame_header(buf, off, size, fh, i):  # §4.1, §9.2 (the index ensures size >= 256)
    v = FRAME_HEADER.unpack_from(buf, off)
    check_magic_version(v[0], 0x465A4245, v[1], "frame")
    check(crc32c(buf[off:off + 252]) == v[-1], "frame header checksum mismatch")
    hsize, dtype, ndim, mode, flags, maxlen, res8, res16 = v[2:10]
    check(hsize == 256 and dtype in (1, 2) and 1 <= ndim <= 4 and mode in (1, 2),
          "bad frame header size, dtype, rank or mode")
    check(flags & ~3 == 0 and res8 == 0 and res16 == 0 and v[-2] == 0, "reserved frame bits set")
    shape = read_dims(v[10:14], ndim, "frame shape")
    first_row, bound, abs_bound, step, fill, radius, chunk = v[14:21]
    block = read_dims(v[21:25], ndim, "block")
    sub_bits, group, n_out, n_verb, n_fill = v[25:30]
    table, n = v[30:51], math.prod(shape)
    lengths, crcs = list(table[0::3]), list(table[1::3])
    check(not any(table[2::3]), "reserved frame bits set")
    check(n <= 2**32 - 1, "frame has too many elements")
    check(math.isfinite(bound) and bound > 0 and math.isfinite(abs_bound) and abs_bound >= 0
          and math.isfinite(step) and step > 0 and (not flags & 2 or math.isfinite(fill)),
          "bad bound, quantization step or fill value")
    check(1 <= radius <= 32768 and 1 <= chunk <= 2**20 and 1 <= maxlen <= 24 and 1 <= group
          <= 65536 and 32 <= sub_bits <= 65536 and sub_bits % 32 == 0, "parameter out of range")
    check(max(n_out, n_verb, n_fill) <= n, "section count exceeds element count")
    chunks, tsize = ceil_div(n, chunk), 4 if dtype == 1 else 8
    check(lengths[0] != 0 and lengths[3] % 4 == 0 and bool(flags & 1) == (lengths[2] != 0),
          "bad code length, gap array or bitstream size")
    check([lengths[1]] + lengths[4:] == [8 * ceil_div(chunks, group) + 4 * chunks, 8 * n_out,
          align8(4 * n_verb) + tsize * n_verb, 8 * n_fill], "section size disagrees with counts")
    check(flags & 2 or n_fill == 0, "fill runs without a fill value")
    check(all(x <= 2**48 for x in lengths), "section too large")
    # §9.2 item 10: agreement with the file header and the frame index.
    rows = min(fh["frame_rows"], fh["shape"][0] - i * fh["frame_rows"])
    check(256 + sum(align8(x) for x in lengths) == size, "frame size disagrees with index")
    check((dtype, ndim, mode, bound, abs_bound) ==
          (fh["dtype"], len(fh["shape"]), fh["mode"], fh["bound"], fh["abs_bound"]),
          "frame disagrees with the file header")
    check((fill if flags & 2 else None) == fh["fill"], "frame fill value disagrees")
    check(shape[1:] == fh["shape"][1:] and shape[0] == rows, "frame shape disagrees")
    check(first_row == i * fh["frame_rows"], "frame first row disagrees")
    return dict(f32=dtype == 1, shape=shape, n=n, gap=bool(flags & 1), maxlen=maxlen,
                step=step, fill=fill if flags & 2 else None, radius=radius, chunk=chunk,
                block=block, sub_bits=sub_bits, group=group, n_out=n_out, n_verb=n_verb,
                n_fill=n_fill, sec_len=lengths, sec_crc=crcs)


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
    check(sum(1 << (maxlen - x) for x in out if x) <= 1 << maxlen,
          "code lengths: over-subscribed")
    return out


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


def decode_symbols(h, sec, code_lengths):  # §5.3 - §5.5, §8.1
    n, chunk, group, sub_bits = h["n"], h["chunk"], h["group"], h["sub_bits"]
    chunks, groups = ceil_div(n, chunk), ceil_div(ceil_div(n, chunk), group)
    index, words = sec[1], struct.unpack("<%dI" % (len(sec[3]) // 4), sec[3])
    bits = struct.unpack_from("<%dI" % chunks, index, 8 * groups)
    starts = [0]  # start_word[c]; starts[chunks] is the total word count
    for c in range(chunks):
        check(bits[c] <= chunk * h["maxlen"], "chunk index: chunk too long")
        starts.append(starts[-1] + ceil_div(bits[c], 32))
    for g in range(groups):
        check(struct.unpack_from("<Q", index, 8 * g)[0] == starts[g * group],
              "chunk index: group offset disagrees with chunk lengths")
    check(starts[-1] == len(words), "chunk index: lengths disagree with bitstream size")
    gap_total = sum(ceil_div(b, sub_bits) for b in bits)
    check(not h["gap"] or len(sec[2]) == gap_total, "gap array size disagrees")
    table, symbols, gap_pos = canonical_code(code_lengths), [], 0
    for c in range(chunks):  # §1 bit order: MSB first within each u32 word
        stream = "".join(format(w, "032b") for w in words[starts[c]:starts[c + 1]])
        codeword_starts, pos = [], 0
        while pos < bits[c]:
            codeword_starts.append(pos)
            code = length = 0
            while (length, code) not in table:
                check(length < h["maxlen"] and pos + length < bits[c],
                      "bitstream: chunk %d: invalid codeword" % c)
                code = code * 2 + (stream[pos + length] == "1")
                length += 1
            symbols.append(table[(length, code)])
            pos += length
        check(len(codeword_starts) == min(chunk, n - c * chunk),
              "bitstream: chunk %d: symbol count mismatch" % c)
        codeword_starts.append(bits[c])  # "or the chunk end"
        for j in range(ceil_div(bits[c], sub_bits) if h["gap"] else 0):  # §5.4: recompute
            first = codeword_starts[bisect.bisect_left(codeword_starts, j * sub_bits)]
            check(sec[2][gap_pos] == first - j * sub_bits, "gap array: wrong gap")
            gap_pos += 1
    return symbols


def decode_frame(buf, off, h):  # §8
    sec, p = [], off + 256
    for s, length in enumerate(h["sec_len"]):  # §4: sections, CRCs, zero padding
        sec.append(buf[p:p + length])
        check(crc32c(sec[s]) == h["sec_crc"][s], SECTIONS[s] + " checksum mismatch")
        check(all(b == 0 for b in buf[p + length:p + align8(length)]), "non-zero padding")
        p += align8(length)
    n, radius = h["n"], h["radius"]
    symbols = decode_symbols(h, sec, parse_code_lengths(sec[0], 2 * radius, h["maxlen"]))
    q, k = [s - radius for s in symbols], h["n_out"]  # §8.2
    check(symbols.count(0) == k, "outlier count disagrees with the bitstream")
    idx, res = struct.unpack_from("<%dI" % k, sec[4]), struct.unpack_from("<%di" % k, sec[4], 4 * k)
    for j in range(k):
        check(idx[j] < n and (j == 0 or idx[j] > idx[j - 1]) and symbols[idx[j]] == 0,
              "outlier index out of order or not an outlier symbol")
        q[idx[j]] = res[j]
    shape, block = h["shape"], h["block"]  # §8.3: one in-block prefix sum per dimension
    for d in range(len(shape)):
        stride = math.prod(shape[d + 1:])
        for i in range(n):
            if (i // stride) % shape[d] % block[d] != 0:
                q[i] = (q[i] + q[i - stride] + 2**31) % 2**32 - 2**31  # wraps as i32
    out = [narrow(float(x) * h["step"], h["f32"]) for x in q]  # §8.4
    tsize, covered = 4 if h["f32"] else 8, 0  # §8.5: fill runs, then verbatim
    for j in range(h["n_fill"]):
        start, length = struct.unpack_from("<II", sec[6], 8 * j)
        check(length >= 1 and start >= covered and start + length <= n, "bad fill runs")
        out[start:start + length] = [narrow(h["fill"], h["f32"])] * length
        covered = start + length
    k, idx = h["n_verb"], struct.unpack_from("<%dI" % h["n_verb"], sec[5])
    for j in range(k):
        check(idx[j] < n and (j == 0 or idx[j] > idx[j - 1]), "verbatim index out of order")
        out[idx[j]] = sec[5][align8(4 * k) + tsize * j:][:tsize]
    return b"".join(out)


def decode(buf):
    """Returns (file header, frame count, decoded array bytes); raises Corrupt."""
    fh = parse_file_header(buf)
    frames = parse_index(buf, fh)
    return fh, len(frames), b"".join(decode_frame(buf, off, parse_frame_header(
        buf, off, size, fh, i)) for i, (off, size) in enumerate(frames))  # §8.6: row order


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: read_by_spec.py ARCHIVE.ebz OUT.raw")
    with open(argv[1], "rb") as f:
        buf = f.read()
    try:
        fh, frames, data = decode(buf)
    except (Corrupt, struct.error) as e:
        print("corrupt archive: %s" % e, file=sys.stderr)
        return 1
    with open(argv[2], "wb") as f:
        f.write(data)
    print("%s shape=%s frames=%d abs_bound=%r mode=%s fill=%r" % (
        ("f32", "f64")[fh["dtype"] - 1], "x".join(map(str, fh["shape"])), frames,
        fh["abs_bound"], ("ABS", "REL")[fh["mode"] - 1], fh["fill"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
