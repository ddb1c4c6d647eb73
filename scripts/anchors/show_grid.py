#!/usr/bin/env python3
"""Draws a mapping of a 2D stencil (rankmig's patterns::stencil_2d) as the process grid
with, in every cell, the node (leaf // 16) its rank is on: compact tiles show as
rectangles of one number.

    show_grid.py N MAPFILE...

The grid is rankmig's dims_2d(N): d1 = the largest divisor of N not above sqrt(N),
d0 = N / d1, ranks row-major.
"""
import math
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    d1 = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    d0 = n // d1
    for m in sys.argv[2:]:
        toks = open(m).read().split()
        leaf = [0] * int(toks[0])
        for k in range(len(leaf)):
            leaf[int(toks[1 + 2 * k])] = int(toks[2 + 2 * k])
        print(f"{m}: node of each rank of the {d0}x{d1} grid")
        for r in range(d0):
            print(" ".join(f"{leaf[r * d1 + c] // 16:3d}" for c in range(d1)))
        print()


main()
