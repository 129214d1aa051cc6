#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Checks that every PromQL query nvsidecar ships names real metrics.

  promql_names.py SCRAPE RULES DASHBOARD

SCRAPE is a /metrics text exposition (a real node_exporter scrape, with the
doctor's textfile collected), RULES the Prometheus rule file, DASHBOARD the
Grafana dashboard JSON. Every metric name a rule or a panel query uses must
be in the scrape, or be a recording rule the rule file defines. Prints one
line per query; exit 0 when all names are found, 1 otherwise, 2 on bad input.

The PromQL reading is lexical (a full parser is not needed for names):
strings, label matchers {..}, ranges [..] and the label lists of by/on/
without/ignoring/group_left/group_right are removed; what is left that looks
like an identifier and is not a keyword or a function call is a metric name.
"""
import json
import re
import sys

import yaml

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2", "start", "end"}
LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def names(expr):
    """The metric names in one PromQL expression."""
    m = re.match(r"\s*label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)", expr)
    if m:			# Grafana's template query: label_values(metric{..}, label)
        return {m.group(1)}
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', " ", expr)
    s = re.sub(r"\{[^{}]*\}", " ", s)
    s = re.sub(r"\[[^\[\]]*\]", " ", s)
    s = LISTS.sub(" ", s)
    found = set()
    for m in IDENT.finditer(s):
        word = m.group(0)
        rest = s[m.end():].lstrip()
        if word.lower() in KEYWORDS or rest.startswith("("):
            continue
        # a number's exponent or a duration's unit is not a name
        if m.start() and (s[m.start() - 1].isdigit() or s[m.start() - 1] == "."):
            continue
        found.add(word)
    return found


def scrape_names(path):
    out = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", line)
            if m:
                out.add(m.group(1))
    return out


def dashboard_queries(d):
    q = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if t.get("expr"):
                    q.append((f'panel "{p.get("title")}" {t.get("refId")}', t["expr"]))
            walk(p.get("panels", []))
    walk(d.get("panels", []))
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            qq = v.get("query")
            qq = qq.get("query") if isinstance(qq, dict) else qq
            q.append((f'variable "{v.get("name")}"', qq))
    return q


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    have = scrape_names(argv[1])
    if not have:
        print(f"{argv[1]}: no metric in the scrape", file=sys.stderr)
        return 2
    with open(argv[2], encoding="utf-8") as f:
        rules = yaml.safe_load(f)
    with open(argv[3], encoding="utf-8") as f:
        dash = json.load(f)
    records = set()
    queries = []
    for g in rules["groups"]:
        for r in g["rules"]:
            if "record" in r:
                records.add(r["record"])
            queries.append((f'rule {r.get("record") or r.get("alert")}', r["expr"]))
    queries += dashboard_queries(dash)
    bad = 0
    for where, expr in queries:
        n = names(expr)
        missing = sorted(x for x in n if x not in have and x not in records)
        if not n:
            print(f"FAIL {where}: names no metric: {expr!r}")
            bad += 1
        elif missing:
            print(f"FAIL {where}: not in the scrape: {' '.join(missing)}")
            bad += 1
        else:
            print(f"ok   {where}: {' '.join(sorted(n))}")
    print(f"{len(queries)} queries, {bad} with unknown metrics")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
