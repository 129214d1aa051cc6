#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""realcheck.py TABLE SHA256 < status.json

Compares `nvsidecar libcuda status --json` of one real library with its
hand-read row in TABLE (tests/libcuda/real-builds.tsv). Prints one line per
difference and exits 1 when there is any; prints "no row" and exits 3 when
the table has no row for SHA256.
"""
import json
import sys


def changed_bytes(rewrites):
    out = set()
    for off, old, new in rewrites:
        for k in range(len(old)):
            if old[k] != new[k]:
                out.add((off + k, old[k], new[k]))
    return out


def main():
    table, sha = sys.argv[1], sys.argv[2]
    row = None
    for line in open(table):
        if line.startswith('#') or not line.strip():
            continue
        c = line.rstrip('\n').split('\t')
        if c[2] == sha:
            row = c
    if not row:
        print('no row')
        return 3
    doc = json.load(sys.stdin)
    diffs = []

    def want(what, got, exp):
        if got != exp:
            diffs.append('%s %s (hand-read: %s)' % (what, got, exp))

    want('verdict', doc.get('verdict'), row[3])
    want('driver version', doc.get('driver_version'), row[1])
    if row[3] == 'unsupported-layout':
        if row[8] not in doc.get('reason', ''):
            diffs.append('reason does not mention %s: %s' % (row[8], doc.get('reason')))
        return report(diffs)
    cap = doc.get('capability') or {}
    path = doc.get('path') or {}
    want('field', cap.get('field'), row[4])
    want('mask', cap.get('mask'), row[5])
    want('global', cap.get('global'), row[6])
    want('attribute-116 branch', path.get('attr116_branch'), row[7])
    exp = []
    for rw in row[8].split(','):
        off, ch = rw.split(':')
        old, new = ch.split('>')
        exp.append((int(off, 16), bytes.fromhex(old), bytes.fromhex(new)))
    got = [(int(r['offset'], 16), bytes.fromhex(r['old']), bytes.fromhex(r['new']))
           for r in doc.get('rewrites', [])]
    e, g = changed_bytes(exp), changed_bytes(got)
    for off, o, n in sorted(e - g):
        diffs.append('missing change at 0x%x: %02x -> %02x' % (off, o, n))
    for off, o, n in sorted(g - e):
        diffs.append('unexpected change at 0x%x: %02x -> %02x' % (off, o, n))
    return report(diffs)


def report(diffs):
    for d in diffs:
        print(d)
    return 1 if diffs else 0


if __name__ == '__main__':
    sys.exit(main())
