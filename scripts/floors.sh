#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# The floors of user/ (HACKING.md, "Where things live"), checked: each room
# uses only the rooms below it,
#
#   cmd -> cli -> check, libcuda -> sys -> lib
#
# and one sideways arrow, check -> libcuda (doctor judges libcuda through
# its engine). Fails on an #include "..." that points up a floor or
# sideways, and on any cycle: among the files #include reaches, and, given
# a build directory (user/Makefile's O=), among the objects' calls (an
# undefined symbol of one object defined by another), which is how
# doctor.c and doctor_module.c called each other through one header.
#
# Usage: scripts/floors.sh [BUILD_O]   prints "file:line: rule" per finding,
# exits 1 if there is any, 2 if it cannot run.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
objs=${1:-}
if [[ -n $objs && ! -d $objs ]]; then
	echo "floors: no build directory $objs (run make -C user O=$objs first)" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "floors: python3 is needed" >&2; exit 2; }

exec python3 - "$objs" <<'EOF'
import os, re, subprocess, sys

FLOOR = {"lib": 0, "sys": 1, "check": 2, "libcuda": 2, "cli": 3, "cmd": 4}
SIDEWAYS = {("check", "libcuda")}
# user/Makefile's -I list, in order after the including file's own folder
IDIRS = ["user", "user/sys/libnvsidecar"]
OUTSIDE = ["kmod/uapi"]   # the kernel's uapi header: shared, no floor

objs = sys.argv[1]
findings = []

def room(path):
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "user" else None

files = []
for d, _, names in os.walk("user"):
    files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
files.sort()
for f in files:
    if room(f) not in FLOOR:
        findings.append(f"{f}:1: in no floor: put it in one of {', '.join(sorted(FLOOR))}")

def resolve(src, name):
    for d in [os.path.dirname(src)] + IDIRS:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    for d in OUTSIDE:
        if os.path.isfile(os.path.join(d, name)):
            return ""
    return None

graph = {}
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
for f in files:
    graph[f] = []
    with open(f, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            m = inc.match(line)
            if not m:
                continue
            t = resolve(f, m.group(1))
            where = f"{f}:{n}"
            if t is None:
                findings.append(f'{where}: "{m.group(1)}" is no file in user/ or kmod/uapi/')
                continue
            if not t:
                continue
            graph[f].append((t, n))
            if t.endswith(".c"):
                findings.append(f"{where}: includes a .c file ({t})")
            a, b = room(f), room(t)
            if a == b or a not in FLOOR or b not in FLOOR:
                continue
            if (a, b) in SIDEWAYS:
                continue
            if FLOOR[b] > FLOOR[a]:
                findings.append(f"{where}: {a}/ includes {t}: up a floor ({a} may use "
                                f"{', '.join(r + '/' for r in sorted(FLOOR) if FLOOR[r] < FLOOR[a]) or 'nothing else'})")
            elif FLOOR[b] == FLOOR[a]:
                findings.append(f"{where}: {a}/ includes {t}: sideways ({a} and {b} are one floor; "
                                f"only check/ -> libcuda/ is allowed)")

def cycles(g):
    """Each elementary cycle once, found by DFS (the graphs are small)."""
    seen, out, state = set(), [], {}
    def dfs(v, stack):
        state[v] = 1
        stack.append(v)
        for w in sorted(g.get(v, ())):
            if state.get(w) == 1:
                cyc = stack[stack.index(w):]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    out.append(cyc + [w])
            elif w not in state:
                dfs(w, stack)
        stack.pop()
        state[v] = 2
    for v in sorted(g):
        if v not in state:
            dfs(v, [])
    return out

lines = {(f, t): n for f, es in graph.items() for t, n in es}
for c in cycles({f: [t for t, _ in es] for f, es in graph.items()}):
    findings.append(f"{c[0]}:{lines[(c[0], c[1])]}: include cycle: {' -> '.join(c)}")

if objs:
    defs, undefs = {}, {}
    for d, _, names in os.walk(objs):
        for n in names:
            if not n.endswith(".o"):
                continue
            o = os.path.join(d, n)
            src = "user/" + os.path.relpath(o, objs)[:-2] + ".c"
            if not os.path.isfile(src):
                continue    # a stale object of a removed source
            out = subprocess.run(["nm", "--defined-only", "-g", o], capture_output=True, text=True).stdout
            for l in out.splitlines():
                p = l.split()
                if len(p) == 3:
                    defs.setdefault(p[2], src)
            out = subprocess.run(["nm", "-u", o], capture_output=True, text=True).stdout
            undefs[src] = {l.split()[-1] for l in out.splitlines() if l.strip()}
    calls = {s: sorted({defs[u] for u in us if u in defs and defs[u] != s}) for s, us in undefs.items()}
    if not calls:
        findings.append(f"{objs}:1: no objects of user/ sources here (build with make -C user O={objs})")
    for c in cycles(calls):
        why = [sorted(u for u in undefs[a] if defs.get(u) == b)[0] for a, b in zip(c, c[1:])]
        findings.append(f"{c[0]}:1: call cycle: " +
                        " -> ".join(f"{a} ({w})" for a, w in zip(c, why)) + f" -> {c[-1]}")
    for s, ts in calls.items():
        a = room(s)
        for t in ts:
            b = room(t)
            if a != b and a in FLOOR and b in FLOOR and (a, b) not in SIDEWAYS and FLOOR[b] >= FLOOR[a]:
                u = sorted(x for x in undefs[s] if defs.get(x) == t)[0]
                findings.append(f"{s}:1: {a}/ calls {u}() in {t}: "
                                f"{'up a floor' if FLOOR[b] > FLOOR[a] else 'sideways'}")

for f in findings:
    print(f)
if findings:
    print(f"floors: {len(findings)} finding(s); HACKING.md \"Where things live\" has the rules",
          file=sys.stderr)
    sys.exit(1)
print(f"floors: {len(files)} files, no arrow up, none sideways, no cycle"
      + (f" (includes and calls of {objs})" if objs else " (includes)"))
EOF
