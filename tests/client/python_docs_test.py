#!/usr/bin/env python3
"""Runs every Python example of docs/python.md.

Usage:
    python_docs_test.py --doc docs/python.md --ebzipd PATH

with PYTHONPATH pointing at build/python. Run by ctest as python_docs_test.

The ```python blocks run in order in one namespace (__name__ '__main__', as
in a script), in a temporary directory, with EbzipWarning turned into an
error so that an example that warns fails unless it catches the warning
itself. A block whose previous non-blank line is `<!-- not run -->` is
skipped (it needs a cluster the tests do not have). `localhost:50051` in the
code is replaced by the address of an ebzipd this test starts
(python_client_test's Server), whose --archive_root is the blocks'
directory. A failing block is reported with its line in
the document.
"""

import argparse
import os
import re
import sys
import tempfile
import traceback
import warnings

import ebzip
import python_client_test as pct

FENCE = re.compile(r'^```(\S*)\s*$')
SKIP = '<!-- not run -->'


def python_blocks(text):
    """[(first line number, code, skipped)] of the ```python blocks."""
    blocks = []
    lines = text.splitlines()
    i = 0
    previous = ''
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            start = i + 1
            end = start
            while end < len(lines) and not FENCE.match(lines[end]):
                end += 1
            if m.group(1) == 'python':
                blocks.append((start + 1, '\n'.join(lines[start:end]),
                               previous.strip() == SKIP))
            i = end + 1
            previous = ''
            continue
        if lines[i].strip():
            previous = lines[i]
        i += 1
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--doc', required=True)
    parser.add_argument('--ebzipd', required=True)
    args = parser.parse_args()
    doc = os.path.abspath(args.doc)
    with open(doc, encoding='utf-8') as f:
        blocks = python_blocks(f.read())
    run = [b for b in blocks if not b[2]]
    if len(run) < 8 or len(blocks) - len(run) != 1:
        print(f'FAIL: expected at least 8 runnable blocks and 1 skipped in '
              f'{doc}, found {len(run)} and {len(blocks) - len(run)}')
        return 1
    pct.EBZIPD = os.path.abspath(args.ebzipd)
    tmp_dir = tempfile.TemporaryDirectory()  # pylint: disable=consider-using-with
    # The blocks' directory is also the server's --archive_root, so that
    # examples may name the files they write by remote_path.
    server = pct.Server('--drain_seconds', '1', '--archive_root', tmp_dir.name)
    failed = False
    try:
        namespace = {'__name__': '__main__'}
        with tmp_dir as tmp:
            os.chdir(tmp)
            with warnings.catch_warnings():
                warnings.simplefilter('error', ebzip.EbzipWarning)
                for line, code, _ in run:
                    code = code.replace('localhost:50051', server.address)
                    print(f'--- {os.path.basename(doc)}:{line}', flush=True)
                    try:
                        exec(compile(code, f'{doc}:{line}', 'exec'), namespace)  # pylint: disable=exec-used
                    except Exception:  # pylint: disable=broad-except
                        traceback.print_exc()
                        print(f'FAIL: the block at {doc}:{line}')
                        failed = True
                        break
            os.chdir('/')
    finally:
        rc = server.stop()
    if rc != 0:
        print(f'FAIL: ebzipd exited with {rc}:\n{server.log_text()}')
        failed = True
    if not failed:
        print(f'OK: {len(run)} blocks ran')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
