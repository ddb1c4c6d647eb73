#!/usr/bin/env python3
"""Independent check of `rankmig cost` for compare.sh (no rankmig code involved).

    check_eval.py MATRIX NODES MAPFILE...

MATRIX is dense text; the tree is NODES x 2 packages x 8 cores (one node: 2 x 8), leaves
numbered node-major. For every gmap MAPFILE (count, then `rank leaf` lines) prints
`MAPFILE hop-bytes sum-com` with the definitions of rankmig's metrics: over unordered
pairs {i,j} with w = w(i,j) + w(j,i), c = number of levels climbed to the common
ancestor (at least 1), hop-bytes += 2*c*w, sum-com += w * (sum of the c deepest link
costs, 100,10,1 top first).
"""
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, nodes, maps = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    pairs = {}
    n = 0
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            toks = s.split()
            i = n
            n += 1
            for j, t in enumerate(toks):
                if j != i and t != "0":
                    w = float(t)
                    if w:
                        key = (i, j) if i < j else (j, i)
                        pairs[key] = pairs.get(key, 0.0) + w
    # leaf groups from the deepest level up: core (itself), package (8), node (16)
    spans = [1, 8] + ([16] if nodes > 1 else [])
    costs = [1.0, 10.0, 100.0][: len(spans)]  # deepest first
    depth = len(spans)
    for m in maps:
        toks = open(m).read().split()
        count = int(toks[0])
        leaf = [None] * count
        for k in range(count):
            leaf[int(toks[1 + 2 * k])] = int(toks[2 + 2 * k])
        assert count == n and None not in leaf, m
        hb = sc = 0.0
        for (i, j), w in pairs.items():
            a, b = leaf[i], leaf[j]
            c = next((lvl for lvl in range(depth) if a // spans[lvl] == b // spans[lvl]), depth)
            c = max(c, 1)
            hb += 2 * c * w
            sc += w * sum(costs[:c])
        print(f"{m} {hb:.17g} {sc:.17g}")


main()
