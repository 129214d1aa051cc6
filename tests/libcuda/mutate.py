#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Mutation tests for `nvsidecar libcuda status` on real libcuda builds.

Usage: mutate.py [--all-sites] [--jobs N] TOOL TABLE LIB...

For every LIB whose SHA-256 has an `unpatched` row in TABLE
(tests/libcuda/real-builds.tsv, read by hand), this writes mutants of the
library around each store to the capability byte and asks TOOL for its plan.
Each mutant carries its own expectation, derived from the hand-read row and
the mutation alone (never from the tool's output):

  refuse-only   the code around the store is no longer decodable, or the
                byte gets a value no same-length rewrite can fix: the only
                right answer is a refusal (exit 2, unsupported-layout);
  plan          a plan is right when it holds every required rewrite, each
                checked by evaluating the rewritten instruction, and nothing
                but the optional ones besides; a refusal is also accepted.

Besides the mutants around each store, the classes of issue 21 on the
initialiser's routine: its entry made `ret`, a `jmp` away or `ud2`; the
`lea`/`call` references to it removed; each of its byte stores replaced
by no-ops; a conditional branch around its first store (`je` or, inverted,
`jne`) and one redirected after it; a second, early return before the
store. A routine that does not run, or a path that returns without storing
the byte, must be refused.

Prints one line per mutant, one per class (class NAME: refused R, planned
correctly C, planned wrongly W, errors E) and a summary:
  mutants N: refused R, planned correctly C, planned wrongly W, errors E
and exits 1 when W or E is not 0 (or a baseline is wrong).
Standard library only; objdump (binutils) tells instruction boundaries.
"""
import concurrent.futures as cf
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

MASK = 0x20
EX_UNUSABLE = 2		# nvsidecar(8), EXIT STATUS: an input that cannot be used


def elf_segments(data):
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    segs = []
    for i in range(phnum):
        t, f, off, va, _, fsz, _, _ = struct.unpack_from('<IIQQQQQQ', data, phoff + i * phentsize)
        segs.append((t, f, off, va, fsz))
    return segs


def func_starts(data, segs):
    """Function starts from .eh_frame_hdr's binary search table."""
    hdr = [s for s in segs if s[0] == 0x6474e550]
    if not hdr:
        return []
    _, _, off, va, _ = hdr[0]
    ver, _, cnt_enc, tab_enc = data[off:off + 4]
    if ver != 1 or cnt_enc != 0x03 or tab_enc != 0x3b:
        return []
    n, = struct.unpack_from('<I', data, off + 8)
    return sorted(va + struct.unpack_from('<i', data, off + 12 + 8 * i)[0] for i in range(n))


class Insn:
    __slots__ = ('addr', 'raw', 'text')

    def __init__(self, addr, raw, text):
        self.addr, self.raw, self.text = addr, raw, text

    @property
    def end(self):
        return self.addr + len(self.raw)


def disassemble(lib):
    out = subprocess.run(['objdump', '-d', '-w', lib], stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    insns = []
    for line in out.split('\n'):
        m = re.match(r'\s+([0-9a-f]+):\t((?:[0-9a-f]{2} )+)\s*\t?(.*)$', line)
        if m:
            insns.append(Insn(int(m.group(1), 16), bytes.fromhex(m.group(2).replace(' ', '')),
                              m.group(3).strip()))
    return insns


# ---- evaluating one instruction's effect on the capability byte ----------

def modrm_mem(raw, i):
    """Length of ModRM+SIB+disp at raw[i] for a memory operand, disp value."""
    modrm = raw[i]
    mod, rm = modrm >> 6, modrm & 7
    n = 1
    if rm == 4:
        n += 1
    if mod == 1:
        return n + 1, struct.unpack_from('<b', raw, i + n)[0]
    if mod == 2:
        return n + 4, struct.unpack_from('<i', raw, i + n)[0]
    return None, None


def effect(raw, field):
    """f(byte) -> byte for the byte at +field, for the RMW / immediate store
    forms this generator writes: 80/81/83 /1 /4 and c6/c7 /0 with a memory
    operand. None when the form is not one of those."""
    i = 0
    opsize = 4
    if raw[i] == 0x66:
        opsize, i = 2, i + 1
    if 0x40 <= raw[i] <= 0x4f:
        if raw[i] & 8:
            opsize = 8
        i += 1
    op = raw[i]
    reg = (raw[i + 1] >> 3) & 7
    ml, disp = modrm_mem(raw, i + 1)
    if ml is None:
        return None
    j = i + 1 + ml
    if op == 0x80 or op == 0xc6:
        width, imm = 1, raw[j]
    elif op == 0x83:
        width, imm = opsize, struct.unpack_from('<b', raw, j)[0] & ((1 << (8 * opsize)) - 1)
    elif op in (0x81, 0xc7):
        width = opsize
        imm = struct.unpack_from('<h' if opsize == 2 else '<i', raw, j)[0] & ((1 << (8 * opsize)) - 1)
    else:
        return None
    k = field - disp
    if not 0 <= k < width:
        return None
    b = (imm >> (8 * k)) & 0xff
    if op in (0xc6, 0xc7) and reg == 0:
        return lambda x: b
    if reg == 1:
        return lambda x: x | b
    if reg == 4:
        return lambda x: x & b
    return None


def keeps_or_sets(old, new, field, must_set=False):
    """The rewritten instruction differs from the old one only in the mask
    bit, which it never clears (must_set: always sets)."""
    fo, fn = effect(old, field), effect(new, field)
    if not fo or not fn:
        return False
    for x in range(256):
        a, b = fo(x), fn(x)
        if (a & ~MASK) != (b & ~MASK):
            return False
        if must_set and not b & MASK:
            return False
        if not must_set and x & MASK and not b & MASK:
            return False
    return True


def or_gains_mask(old, new):
    """Register or-immediate with an 8-bit immediate (83 /1 ib): only the
    immediate changes, and it gains the mask."""
    return len(old) == len(new) >= 3 and old[:-1] == new[:-1] and 0x83 in old[:2] and \
        not old[-1] & MASK and new[-1] == old[-1] | MASK


def is_or_set(old, new):
    """Clear-then-or of a computed bit (and $~0x20,%eax) rewritten into or $0x20."""
    return len(old) == len(new) == 3 and old[0] == new[0] == 0x83 and new[2] == MASK and \
        (old[1] & 0xf8) == 0xe0 and new[1] == (old[1] & 0xc7) | 0x08 and old[2] == 0xdf


# ---- the hand-read row ---------------------------------------------------

def load_table(path):
    rows = {}
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        c = line.rstrip('\n').split('\t')
        row = {'branch': c[0], 'version': c[1], 'sha': c[2], 'verdict': c[3]}
        if c[3] == 'unpatched':
            row['field'] = int(c[4], 16)
            row['rewrites'] = []
            for rw in c[8].split(','):
                off, ch = rw.split(':')
                old, new = ch.split('>')
                row['rewrites'].append((int(off, 16), bytes.fromhex(old), bytes.fromhex(new)))
        rows[c[2]] = row
    return rows


# ---- running the tool ----------------------------------------------------

def run_tool(tool, lib):
    env = dict(os.environ, NVS_NVIDIA_VERSION_FILE='/nonexistent', NO_COLOR='1')
    env.pop('LD_LIBRARY_PATH', None)
    p = subprocess.run([tool, 'libcuda', 'status', '--json', '--lib', lib], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, universal_newlines=True, timeout=120)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return p.returncode, doc, p.stderr


def judge(m, rc, doc, err):
    """-> (outcome, detail): refused | correct | wrong | error."""
    if doc is None or 'Sanitizer' in err:
        return 'error', 'rc %d, no JSON document: %s' % (rc, err.strip()[:300])
    verdict = doc.get('verdict')
    if rc == EX_UNUSABLE and verdict == 'unsupported-layout':
        return 'refused', doc.get('reason', '')[:200]
    if rc != 0:
        return 'error', 'rc %d, verdict %s: %s' % (rc, verdict, err.strip()[:300])
    plan = {int(r['offset'], 16): (bytes.fromhex(r['old']), bytes.fromhex(r['new']))
            for r in doc.get('rewrites', [])}
    desc = ', '.join('0x%x %s>%s' % (o, a.hex(), b.hex()) for o, (a, b) in sorted(plan.items()))
    if m['refuse_only']:
        return 'wrong', 'offered a plan (%s, verdict %s) where only a refusal is right' % (desc, verdict)
    want = m.get('verdict', 'unpatched')
    if verdict != want:
        return 'wrong', 'verdict %s, expected %s (plan %s)' % (verdict, want, desc)
    for off, ok in m['required'].items():
        if off not in plan:
            return 'wrong', 'plan (%s) lacks the rewrite at 0x%x' % (desc, off)
        if not ok(*plan[off]):
            return 'wrong', 'rewrite at 0x%x is %s>%s' % (off, plan[off][0].hex(), plan[off][1].hex())
    for off, (old, new) in plan.items():
        if off in m['required']:
            continue
        ok = m['optional'].get(off)
        if not ok or not ok(old, new):
            return 'wrong', 'unexpected rewrite at 0x%x %s>%s (plan %s)' % (off, old.hex(), new.hex(), desc)
    return 'correct', desc


# ---- mutants -------------------------------------------------------------

def write_in(data, off, b):
    data[off:off + len(b)] = b


class Builder:
    def __init__(self, lib, row, all_sites):
        self.lib, self.row, self.field = lib, row, row['field']
        self.data = bytes(open(lib, 'rb').read())
        self.segs = elf_segments(self.data)
        self.fs = func_starts(self.data, self.segs)
        self.insns = disassemble(lib)
        self.index = {ins.addr: k for k, ins in enumerate(self.insns)}
        self.all_sites = all_sites
        self.mutants = []
        # rewrites of the hand-read row, and the predicate each must meet
        self.base = {}
        for off, old, new in row['rewrites']:
            self.base[off] = self.pred_for(old)

    def off(self, va):
        for t, f, off, v, fsz in self.segs:
            if t == 1 and v <= va < v + fsz:
                return off + va - v
        raise ValueError(hex(va))

    def func_of(self, va):
        lo, hi = 0, len(self.fs)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.fs[mid] <= va:
                lo = mid + 1
            else:
                hi = mid
        return self.fs[lo - 1] if lo else 0

    def pred_for(self, old):
        f = self.field
        if old == b'\x83\xe0\xdf':
            return is_or_set
        if effect(old, f):
            return lambda a, b: a == old and keeps_or_sets(a, b, f, must_set=True)
        return lambda a, b: a == old and or_gains_mask(a, b)

    def stores(self):
        pat = re.compile(r',0x%x\(%%' % self.field)
        out = []
        for ins in self.insns:
            if pat.search(ins.text) and not re.match(r'(test|cmp|movz|movs|lea|bt |nop)', ins.text):
                out.append(ins)
        return out

    def add(self, name, patches, refuse_only, required=None, optional=None, verdict=None, cls='other'):
        m = {'name': name, 'cls': cls, 'patches': patches, 'refuse_only': refuse_only,
             'required': required if required is not None else dict(self.base),
             'optional': optional or {}}
        if verdict:
            m['verdict'] = verdict
        self.mutants.append(m)

    def prev(self, ins):
        k = self.index[ins.addr]
        p = self.insns[k - 1] if k else None
        return p if p and p.addr >= self.func_of(ins.addr) else None

    def build(self):
        f = self.field
        stores = self.stores()
        init_sites = {off for off, _, _ in self.row['rewrites']}
        near = [s for s in stores if any(abs(self.off(s.addr) - o) < 0x40 for o in init_sites)]
        sample = stores if self.all_sites else near
        for s in sample:
            p = self.prev(s)
            if not p:
                continue
            # undecodable bytes before the store (0x06 is invalid in 64-bit mode)
            self.add('undecodable-before-0x%x' % s.addr, [(self.off(p.addr), b'\x06')], True)
            # decoding out of step: a movabs whose immediate swallows the store
            q = p if len(p.raw) >= 2 else self.prev(p)
            if q:
                pad = bytes([0x90]) * (len(q.raw) - 2) + b'\x48\xb8'
                fill = bytes([0x90]) * (s.addr - q.end)
                self.add('desync-before-0x%x' % s.addr, [(self.off(q.addr), pad + fill)], True)
        rmw = [s for s in stores if re.match(r'orb +\$0x[0-9a-f]+,', s.text) and len(s.raw) == 7 and
               s.raw[0] == 0x80 and not (effect(s.raw, f)(0) & MASK) and self.off(s.addr) not in self.base]
        for s in (rmw if self.all_sites else rmw[:1]):
            o = self.off(s.addr)
            modrm = (s.raw[1] & 0xc7)
            clear = bytes([0x80, modrm | 0x20]) + s.raw[2:6] + bytes([0xdf])
            ok = (lambda a, b, c=clear: a == c and keeps_or_sets(a, b, f))
            self.add('extra-clear-andb-0x%x' % s.addr, [(o, clear)], False,
                     {**self.base, o: ok})
            wide = bytes([0x83, modrm | 0x20]) + s.raw[2:6] + bytes([0xdf])
            ok = (lambda a, b, c=wide: a == c and keeps_or_sets(a, b, f))
            self.add('wider-clear-andl-0x%x' % s.addr, [(o, wide)], False, {**self.base, o: ok})
            # mov %sp,F-1(%reg): the byte gets bits 8-15 of the stack pointer,
            # which nothing can prove (any other register might hold a constant)
            word = bytes([0x66, 0x89, 0xa0 | (s.raw[1] & 7)]) + struct.pack('<i', f - 1)
            self.add('wider-computed-movw-0x%x' % s.addr, [(o, word)], True)
        # the init's trailing andb $0x3f (keeps the bit) made to clear it
        for s in stores:
            if s.raw[:2] == b'\x80\xa7' and s.raw[-1] == 0x3f and self.func_of(s.addr) in \
                    {self.func_of(x) for x in init_sites}:
                o = self.off(s.addr)
                c = s.raw[:-1] + b'\x1f'
                ok = (lambda a, b, c=c: a == c and keeps_or_sets(a, b, f))
                self.add('init-tail-clears-0x%x' % s.addr, [(o, c)], False, {**self.base, o: ok})
        # a wider store where the initialiser or the computed store writes a
        # byte register: mov %dl -> mov %edx (the byte gets the same value)
        for s in stores:
            o = self.off(s.addr)
            k = s.raw.find(b'\x88')
            if 0 <= k <= 1 and any(0 < o - r < 0x30 for r in init_sites):
                self.add('wider-equal-store-0x%x' % s.addr, [(o + k, b'\x89')], False)
        rw = sorted(self.row['rewrites'])
        comp = [r for r in rw if r[1] == b'\x83\xe0\xdf']
        inits = [r for r in rw if r not in comp]
        # issue cases
        if inits and inits[0][1][0] == 0x80:
            # 525: RMW init orb -> orl (same length): the dword form of the same initialiser
            off, old, new = inits[0]
            wide = bytes([0x83]) + old[1:]
            ok = (lambda a, b, c=wide: a == c and keeps_or_sets(a, b, f, must_set=True))
            req = {o: p for o, p in self.base.items() if o != off}
            req[off] = ok
            self.add('init-orl-0x%x' % off, [(off, wide)], False, req)
            self.add('no-initialiser', [(off, b'\x0f\x1f\x80\x00\x00\x00\x00')], True)
        elif inits:
            # 535-like: or $0x40,%edx at X, preceded by movzbl (7) and mov %eax,%edx (2)
            x = inits[0][0]
            d = self.data
            cmpl = d[x + 3:x + 10]
            if d[x - 9:x - 6] == b'\x0f\xb6\x87' and d[x - 2:x] == b'\x89\xc2' and \
                    d[x + 10:x + 12] == b'\x88\x97' and cmpl[:2] == b'\x83\xbf':
                disp = d[x - 6:x - 2]
                seq = b'\x80\x8f' + disp + b'\x40' + b'\x0f\xb6\x87' + disp + cmpl + b'\x0f\x1f\x40\x00'
                assert len(seq) == 25
                orb = seq[:7]
                ok = (lambda a, b, c=orb: a == c and keeps_or_sets(a, b, f, must_set=True))
                req = {o: p for o, p in self.base.items() if o == comp[0][0]} if comp else {}
                req[x - 9] = ok
                opt = {o: p for o, p in self.base.items() if o not in req and o != x}
                self.add('rmw-initialiser-0x%x' % (x - 9), [(x - 9, seq)], False, req, opt)
            self.add('no-initialiser', [(o, b'\x0f\x1f\x00') for o, _, _ in inits], True)
        self.build_control(inits, comp)
        if inits and comp:
            # the issue: the init rewrite applied by hand, the computed store left
            patches = [(o, new) for o, _, new in inits]
            self.add('init-hand-patched', patches, False, {comp[0][0]: is_or_set}, {},
                     verdict='partially-patched')
        return self.mutants


    def build_control(self, inits, comp):
        """Issue 21's classes: the initialiser must be shown to run, and every
        path through its routine to store the byte with the bit set."""
        if not inits:
            return
        f = self.field
        entry = self.func_of(inits[0][0])
        e = self.off(entry)
        k0 = self.index.get(entry)
        if not entry or k0 is None:
            return
        body = []
        for ins in self.insns[k0:]:
            if ins.addr != entry and ins.addr in set(self.fs):
                break
            body.append(ins)
        rets = [i for i in body if i.raw == b'\xc3']
        # entry made ret / jmp away / ud2: the routine never reaches its stores
        self.add('entry-ret-0x%x' % entry, [(e, b'\xc3')], True, cls='entry-ret')
        nxt = max(self.fs[self.fs.index(entry) + 1], entry + 5) if entry in self.fs[:-1] else entry + 0x1000
        self.add('entry-jmp-0x%x' % entry, [(e, b'\xe9' + struct.pack('<i', nxt - (entry + 5)))], True,
                 cls='entry-jmp')
        self.add('entry-ud2-0x%x' % entry, [(e, b'\x0f\x0b')], True, cls='entry-ud2')
        # the reference to the routine removed: every lea of its address and call of it
        refs = [i for i in self.insns if re.search(r'(lea|call|jmp)\s.*\b%x\b' % entry, i.text) and
                i.addr != entry and (i.text.startswith('call') or i.text.startswith('jmp') or
                                     '# %x' % entry in i.text)]
        if refs:
            self.add('unreferenced-0x%x' % entry,
                     [(self.off(i.addr), b'\x0f\x1f\x80\x00\x00\x00\x00'[:len(i.raw)] if len(i.raw) == 7
                       else b'\x90' * len(i.raw)) for i in refs], True, cls='unreferenced')
        # the byte stores of the routine replaced by no-ops
        stores = [i for i in body if re.search(r',0x%x\(%%' % f, i.text) and
                  re.match(r'(mov |or|and)', i.text)]
        init_stores = [i for i in stores if i.raw[0] == 0x88 or i.raw[:2] in (b'\x80\x8f', b'\x83\x8f')]
        for n, s in enumerate(init_stores):
            o = self.off(s.addr)
            nop = b'\x66' * (len(s.raw) - 3) + b'\x0f\x1f\x00' if len(s.raw) >= 3 else b'\x90' * len(s.raw)
            if n == 0:
                # the first store is on every path: without it some path never stores the byte
                self.add('store-nop-0x%x' % s.addr, [(o, nop)], True, cls='store-nop')
            else:
                # a later store: the first still sets the bit on every path; the
                # rewrite for the removed store's own or goes with it
                dead = {r for r in self.base if 0 < self.off(s.addr) - r < 0x10}
                req = {r: p for r, p in self.base.items() if r not in dead}
                self.add('store-nop-0x%x' % s.addr, [(o, nop)], False, req, cls='store-nop')
        # 535 shape: movzbl; mov %eax,%edx; or $0x40,%edx; cmpl $imm8,off(%rdi) (7); mov %dl,F(%rdi)
        x = inits[0][0]
        d = self.data
        if not (d[x - 9:x - 6] == b'\x0f\xb6\x87' and d[x + 3:x + 5] == b'\x83\xbf' and
                d[x + 10:x + 12] == b'\x88\x97'):
            return
        st = x + 10
        after = st + 6
        # a conditional branch around the first store (the cmpl made test; je/jne past it)
        for cc, name in ((0x74, 'je'), (0x75, 'jne')):
            seq = b'\x85\xc0' + bytes([cc, after - (x + 7)]) + b'\x0f\x1f\x00'
            self.add('branch-around-store-%s-0x%x' % (name, st), [(x + 3, seq)], True,
                     cls='branch-inverted' if cc == 0x75 else 'branch-redirected')
        # a second early return: the cmpl made test; je <the routine's ret>, before the store
        r = [i for i in rets if i.addr > x and i.addr - (x + 7) < 128]
        if r:
            seq = b'\x85\xc0' + bytes([0x74, r[0].addr - (x + 7)]) + b'\x0f\x1f\x00'
            self.add('early-return-0x%x' % x, [(x + 3, seq)], True, cls='early-return')
        # the jbe after the store redirected to the ret: still stored on every path
        j = st + 6
        if d[j] == 0x76 and r:
            rel = r[0].addr - (j + 2)
            if -128 <= rel < 128:
                self.add('branch-after-store-redirected-0x%x' % j, [(j, bytes([0x76, rel & 0xff]))], False,
                         cls='branch-redirected')


def run_one(tool, path, data, m):
    with open(path, 'r+b') as fh:
        for off, b in m['patches']:
            fh.seek(off)
            fh.write(b)
    try:
        rc, doc, err = run_tool(tool, path)
    finally:
        with open(path, 'r+b') as fh:
            for off, b in m['patches']:
                fh.seek(off)
                fh.write(data[off:off + len(b)])
    return judge(m, rc, doc, err)


def main(argv):
    all_sites = '--all-sites' in argv
    argv = [a for a in argv if a != '--all-sites']
    jobs = 2
    if '--jobs' in argv:
        k = argv.index('--jobs')
        jobs = int(argv[k + 1])
        del argv[k:k + 2]
    tool, table, libs = argv[0], argv[1], argv[2:]
    rows = load_table(table)
    counts = {'refused': 0, 'correct': 0, 'wrong': 0, 'error': 0}
    by_cls = {}
    bad_baseline = 0
    work = tempfile.mkdtemp(prefix='nvs-mutate.')
    try:
        for lib in libs:
            sha = hashlib.sha256(open(lib, 'rb').read()).hexdigest()
            row = rows.get(sha)
            if not row or row['verdict'] != 'unpatched':
                print('skip %s: no unpatched row in the table' % lib)
                continue
            b = Builder(lib, row, all_sites)
            base = {'name': 'baseline', 'patches': [], 'refuse_only': False,
                    'required': dict(b.base), 'optional': {}}
            paths = []
            for j in range(jobs):
                d = os.path.join(work, str(j))
                os.makedirs(d, exist_ok=True)
                p = os.path.join(d, 'libcuda.so.' + row['version'])
                shutil.copyfile(lib, p)
                paths.append(p)
            outcome, detail = run_one(tool, paths[0], b.data, base)
            print('%s %s baseline: %s %s' % (row['version'], 'ok' if outcome == 'correct' else 'WRONG',
                                            outcome, detail))
            if outcome != 'correct':
                bad_baseline += 1
                continue
            mutants = b.build()
            with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
                futs = []
                for k, m in enumerate(mutants):
                    futs.append((m, ex.submit(run_one, tool, paths[k % jobs], b.data, m)))
                    if len(futs) >= jobs:
                        for mm, fu in futs:
                            o, det = fu.result()
                            counts[o] += 1
                            by_cls.setdefault(mm['cls'], dict.fromkeys(counts, 0))[o] += 1
                            print('%s %s: %s %s' % (row['version'], mm['name'], o, det))
                        futs = []
                for mm, fu in futs:
                    o, det = fu.result()
                    counts[o] += 1
                    by_cls.setdefault(mm['cls'], dict.fromkeys(counts, 0))[o] += 1
                    print('%s %s: %s %s' % (row['version'], mm['name'], o, det))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n = sum(counts.values())
    for c in sorted(by_cls):
        v = by_cls[c]
        print('class %s: refused %d, planned correctly %d, planned wrongly %d, errors %d' %
              (c, v['refused'], v['correct'], v['wrong'], v['error']))
    print('mutants %d: refused %d, planned correctly %d, planned wrongly %d, errors %d' %
          (n, counts['refused'], counts['correct'], counts['wrong'], counts['error']))
    return 1 if counts['wrong'] or counts['error'] or bad_baseline or not n else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
