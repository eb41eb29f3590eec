#!/usr/bin/python3
"""Makes a known set of requests to ebzipd and prints, as JSON, what was sent
and received, so that the metrics tests can check the server's counters
against the client's own accounting.

Requests (in this order):
  1. Compress of a small smooth float32 field (64 x 256), OK expected;
  2. Decompress of the archive from 1, OK expected, result checked;
  3. Compress whose header has a negative error bound: INVALID_ARGUMENT;
  4. Decompress of bytes that are not an archive: DATA_LOSS.
Repeat the whole set with --rounds N.

usage: make_requests.py HOST:PORT [--rounds N]   (PYTHONPATH=<build>/python)
"""
import argparse
import array
import json
import math
import sys

import grpc
from ebzip.v1 import ebzip_pb2, ebzip_pb2_grpc

ROWS, COLS = 64, 256
REL = 1e-3


def field():
    values = array.array("f", (
        math.sin(0.11 * r) * math.cos(0.05 * c) + 0.25 * math.sin(0.02 * (r + 3 * c))
        for r in range(ROWS) for c in range(COLS)))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


def compress_messages(data, bound, pieces):
    header = ebzip_pb2.CompressHeader(
        array=ebzip_pb2.ArraySpec(dtype=ebzip_pb2.FLOAT32, shape=[ROWS, COLS]),
        error_bound=ebzip_pb2.ErrorBound(mode=ebzip_pb2.REL, value=bound))
    yield ebzip_pb2.CompressRequest(header=header)
    for piece in pieces(data):
        yield ebzip_pb2.CompressRequest(data=piece)


def uneven_pieces(data):
    # Three messages of different sizes: the server must count every one.
    cuts = [0, 1000, 1000 + len(data) // 2, len(data)]
    return [data[a:b] for a, b in zip(cuts, cuts[1:])]


def expect_error(what, code, call):
    try:
        for _ in call():
            pass
    except grpc.RpcError as e:
        if e.code() != code:
            sys.exit(f"{what}: expected {code.name}, got {e.code().name}: {e.details()}")
        return
    sys.exit(f"{what}: expected {code.name}, but the call succeeded")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("server")
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args()

    channel = grpc.insecure_channel(args.server)
    grpc.channel_ready_future(channel).result(timeout=30)
    stub = ebzip_pb2_grpc.CompressorStub(channel)
    data = field()
    acct = {
        "compress_ok": 0, "compress_invalid_argument": 0,
        "decompress_ok": 0, "decompress_data_loss": 0,
        "compress_bytes_sent": 0, "compress_bytes_received": 0,
        "decompress_bytes_sent": 0, "decompress_bytes_received": 0,
        "ratios": [],
    }
    for _ in range(args.rounds):
        # 1. Compress.
        archive = b""
        summary = None
        for r in stub.Compress(compress_messages(data, REL, uneven_pieces), timeout=60):
            if r.HasField("archive"):
                archive += r.archive
            else:
                summary = r.summary
        if summary is None or summary.archive_bytes != len(archive) or \
                summary.input_bytes != len(data):
            sys.exit(f"compress: inconsistent summary {summary} for {len(archive)} archive bytes")
        acct["compress_ok"] += 1
        acct["compress_bytes_sent"] += len(data)
        acct["compress_bytes_received"] += len(archive)
        acct["ratios"].append(len(data) / len(archive))
        acct["backend"] = summary.backend

        # 2. Decompress it back, in two messages.
        half = len(archive) // 2
        requests = [ebzip_pb2.DecompressRequest(archive=archive[:half]),
                    ebzip_pb2.DecompressRequest(archive=archive[half:])]
        header, out = None, b""
        for r in stub.Decompress(iter(requests), timeout=60):
            if r.HasField("header"):
                header = r.header
            else:
                out += r.data
        if header is None or list(header.array.shape) != [ROWS, COLS] or len(out) != len(data):
            sys.exit(f"decompress: header {header}, {len(out)} bytes (want {len(data)})")
        a, b = array.array("f", data), array.array("f", out)
        worst = max(abs(x - y) for x, y in zip(a, b))
        if worst > header.abs_error_bound:
            sys.exit(f"decompress: error {worst} beyond the bound {header.abs_error_bound}")
        acct["decompress_ok"] += 1
        acct["decompress_bytes_sent"] += len(archive)
        acct["decompress_bytes_received"] += len(out)

        # 3. A bad header: refused before any data is read, so it adds no
        # received bytes (only the header is sent).
        expect_error("compress with a negative bound", grpc.StatusCode.INVALID_ARGUMENT,
                     lambda: stub.Compress(compress_messages(data, -1.0, lambda d: []),
                                           timeout=60))
        acct["compress_invalid_argument"] += 1

        # 4. Not an archive.
        junk = b"this is not an ebzip archive" * 8
        expect_error("decompress of junk", grpc.StatusCode.DATA_LOSS,
                     lambda: stub.Decompress(iter([ebzip_pb2.DecompressRequest(archive=junk)]),
                                             timeout=60))
        acct["decompress_data_loss"] += 1
        acct["decompress_bytes_sent"] += len(junk)
    json.dump(acct, sys.stdout)
    print()


if __name__ == "__main__":
    main()
