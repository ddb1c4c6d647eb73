#!/usr/bin/env bash
# rankmig's mapper against its two anchors, TreeMatch C (Open MPI 4.1.4's embedded
# copy) and Scotch 7 (libscotch-dev), on the same matrices and the same tree
# (ceil(n/16) nodes x 2 packages x 8 cores, link costs 100,10,1; one node: 2 x 8,
# costs 10,1). Every mapping is evaluated by the same evaluator, `rankmig cost`, and
# cross-checked by scripts/anchors/check_eval.py. Prints one table.
#
#   scripts/anchors/compare.sh            # all cases
#   REPS=7 ANCHOR_THREADS=1 OUT=target/anchors/run scripts/anchors/compare.sh
#   CASES="stencil_2d:256 tests/data/matrices/lu.W.64.mat" scripts/anchors/compare.sh
#
# REPS: timed calls per mapper (median reported; one untimed warm-up call before).
# ANCHOR_THREADS: threads of TreeMatch (tm_set_max_nb_threads) and Scotch (a context
#   of that many threads); 1 by default, as rankmig's mapper is single-threaded;
#   0 = each library's default (TreeMatch: one per core; Scotch: no context).
# SCOTCH_STRATEGY: `default` (Scotch's default mapping strategy, the default here) or
#   `strict` (a strategy built with no load imbalance allowed; see scotch_driver.c).
# CASES: space-separated PATTERN:N (rankmig::treematch::patterns, seed 2024) or matrix
#   files (any format rankmig reads).
# OUT: where matrices, mappings, the table (table.txt) and results.tsv go.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HERE=scripts/anchors
REPS="${REPS:-7}"
THREADS="${ANCHOR_THREADS:-1}"
SCOTCH_STRATEGY="${SCOTCH_STRATEGY:-default}"
OUT="${OUT:-target/anchors/run}"
BIN=target/anchors/bin
TM_DIR=target/anchors/treematch
if [ -z "${CASES:-}" ]; then
  CASES="stencil_2d:256 stencil_2d:1024 stencil_2d:4096 stencil_3d:256 stencil_3d:1024 stencil_3d:4096"
  CASES+=" clustered_permuted:256 clustered_permuted:1024"
  CASES+=" $(ls tests/data/matrices/*.mat | tr '\n' ' ')"
fi

# --- Debian packages: gcc, hwloc headers (TreeMatch's tm_topology.c), libscotch-dev ---
missing=()
for p in gcc libhwloc-dev libscotch-dev python3; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "compare: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi

# --- the anchors ---
"$HERE/fetch_treematch.sh" "$TM_DIR"
mkdir -p "$BIN"
MULTIARCH="$(gcc -print-multiarch)"
SCOTCH_INC=/usr/include/scotch-int64            # 64-bit SCOTCH_Num: room for exact weights
SCOTCH_LIB="/usr/lib/$MULTIARCH/scotch-int64"
echo "compare: building tm_driver and scotch_driver (gcc -O2)" >&2
# our driver with warnings, TreeMatch's sources (not ours) without
gcc -O2 -Wall -Wextra -I"$TM_DIR" -I"$HERE" -c -o "$BIN/tm_driver.o" "$HERE/tm_driver.c"
gcc -O2 -w -I"$TM_DIR" -o "$BIN/tm_driver" "$BIN/tm_driver.o" "$TM_DIR"/*.c -lhwloc -lpthread -lm
gcc -O2 -Wall -Wextra -I"$SCOTCH_INC" -I"$HERE" -o "$BIN/scotch_driver" "$HERE/scotch_driver.c" \
  -L"$SCOTCH_LIB" -Wl,--disable-new-dtags,-rpath,"$SCOTCH_LIB" -lscotch -lscotcherr -lm -lpthread
echo "compare: building rankmig (release: the rankmig binary and examples/map_timing)" >&2
cargo build --release --quiet --bin rankmig --example map_timing
RANKMIG=target/release/rankmig
MAPT=target/release/examples/map_timing

mkdir -p "$OUT/matrices" "$OUT/maps"

# Leaf numbering check: 32 ranks in two blocks of 16 that talk only inside their block
# (ranks 0-15 and 16-31, then even and odd ranks) must land each block on one node,
# with every mapper: leaves are numbered in tree order, node-major.
for kind in halves parity; do
  chk="$OUT/matrices/check-$kind.mat"
  awk -v kind=$kind 'BEGIN { for (i = 0; i < 32; i++) { line = ""
      for (j = 0; j < 32; j++) {
        same = (kind == "halves") ? (int(i / 16) == int(j / 16)) : (i % 2 == j % 2)
        line = line (j ? " " : "") ((same && i != j) ? 100 : 0) }
      print line } }' > "$chk"
  for who in rankmig tm scotch; do
    map="$OUT/maps/check-$kind.$who.map"
    case $who in
      rankmig) "$MAPT" "$chk" 2 1 > "$map" 2>/dev/null ;;
      tm) "$BIN/tm_driver" "$chk" 2 1 "$THREADS" > "$map" 2>/dev/null ;;
      scotch) "$BIN/scotch_driver" "$chk" 2 1 "$THREADS" "$SCOTCH_STRATEGY" > "$map" 2>/dev/null ;;
    esac
    inter="$("$RANKMIG" cost -q -m "$chk" -t synthetic:"pack:2 core:8 pu:1" --nodes 2 \
      --costs 100,10,1 --mapping "$map" | awk '$1 == "inter-node" {print $2}')"
    if [ "$inter" != 0 ]; then
      echo "compare: CHECK FAILED: $who splits a 16-rank block of check-$kind over the nodes (inter-node $inter)" >&2
      exit 1
    fi
  done
done
echo "compare: leaf numbering checked (block-diagonal 32-rank matrices: each block on one node)" >&2
TSV="$OUT/results.tsv"
printf 'case\tn\tnodes\thb_rankmig\thb_tm\thb_scotch\tsc_rankmig\tsc_tm\tsc_scotch\tms_rankmig\tms_tm\tms_scotch\tnotes\n' > "$TSV"
LOAD_START="$(uptime)"
fail=0

time_of() { # the median a driver printed on stderr
  sed -n 's/^time_ms //p' "$1" | tail -1
}

for c in $CASES; do
  if [ -f "$c" ]; then
    name="$(basename "$c" .mat)"
    mat="$OUT/matrices/$name.mat"
    "$MAPT" --write-dense "$c" "$mat"
  else
    pat="${c%%:*}"; size="${c##*:}"
    name="$pat.$size"
    mat="$OUT/matrices/$name.mat"
    "$MAPT" --write-pattern "$pat" "$size" "$mat"
  fi
  n="$(awk 'NF && $1 !~ /^#/ {print NF; exit}' "$mat")"
  nodes=$(( (n + 15) / 16 ))
  if [ "$nodes" -gt 1 ]; then costs=100,10,1; else costs=10,1; fi
  echo "compare: $name (n=$n, nodes=$nodes)" >&2

  declare -A hb=() sc=() ms=()
  notes=""
  for who in rankmig tm scotch; do
    map="$OUT/maps/$name.$who.map"
    err="$OUT/maps/$name.$who.stderr"
    case $who in
      rankmig) "$MAPT" "$mat" "$nodes" "$REPS" > "$map" 2> "$err" ;;
      tm) "$BIN/tm_driver" "$mat" "$nodes" "$REPS" "$THREADS" > "$map" 2> "$err" ;;
      scotch) "$BIN/scotch_driver" "$mat" "$nodes" "$REPS" "$THREADS" "$SCOTCH_STRATEGY" > "$map" 2> "$err" ;;
    esac
    if grep -v '^time_ms ' "$err" | grep -q .; then
      echo "compare: $who on $name said:" >&2; grep -v '^time_ms ' "$err" | sed 's/^/  /' >&2
    fi
    ms[$who]="$(time_of "$err")"
    # one rank per leaf? (the evaluator counts two ranks on a leaf as siblings)
    shared="$(tail -n +2 "$map" | awk '{ if (seen[$2]++) k++ } END { print k + 0 }')"
    if [ "$shared" -gt 0 ]; then notes+="${notes:+,}$who:${shared}_ranks_share_a_leaf"; fi
    cost="$("$RANKMIG" cost -q -m "$mat" -t synthetic:"pack:2 core:8 pu:1" --nodes "$nodes" \
      --costs "$costs" --mapping "$map")"
    hb[$who]="$(awk '$1 == "hop-bytes" {print $2}' <<< "$cost")"
    sc[$who]="$(awk '$1 == "sum-com" {print $2}' <<< "$cost")"
  done

  # Checks: the evaluator must not care who wrote a mapping nor how (gmap, gmap lines
  # reversed, one leaf per line), and an independent evaluator must agree.
  base="$OUT/maps/$name.rankmig.map"
  { head -1 "$base"; tail -n +2 "$base" | tac; } > "$OUT/maps/$name.check-reversed.map"
  tail -n +2 "$base" | sort -n -k1,1 | cut -f2 > "$OUT/maps/$name.check-plain.map"
  for alt in reversed plain; do
    again="$("$RANKMIG" cost -q -m "$mat" -t synthetic:"pack:2 core:8 pu:1" --nodes "$nodes" \
      --costs "$costs" --mapping "$OUT/maps/$name.check-$alt.map" | awk '$1 == "hop-bytes" {print $2}')"
    if [ "$again" != "${hb[rankmig]}" ]; then
      echo "compare: CHECK FAILED: $name: the $alt copy of rankmig's mapping has hop-bytes $again, not ${hb[rankmig]}" >&2
      fail=1
    fi
  done
  while read -r file phb psc; do
    who="$(basename "$file" .map)"; who="${who##*.}"
    if ! awk -v a="$phb" -v b="${hb[$who]}" -v c="$psc" -v d="${sc[$who]}" \
      'function rel(x, y) { return (x == y) ? 0 : (x - y) / (x > y ? x : y) }
       BEGIN { r1 = rel(a, b); r2 = rel(c, d); exit !(r1 < 1e-9 && r1 > -1e-9 && r2 < 1e-9 && r2 > -1e-9) }'; then
      echo "compare: CHECK FAILED: $name $who: rankmig cost says $phb/$psc, check_eval.py ${hb[$who]}/${sc[$who]}" >&2
      fail=1
    fi
  done < <(python3 "$HERE/check_eval.py" "$mat" "$nodes" "$OUT/maps/$name".{rankmig,tm,scotch}.map)

  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$n" "$nodes" \
    "${hb[rankmig]}" "${hb[tm]}" "${hb[scotch]}" "${sc[rankmig]}" "${sc[tm]}" "${sc[scotch]}" \
    "${ms[rankmig]}" "${ms[tm]}" "${ms[scotch]}" "${notes:--}" >> "$TSV"
  unset hb sc ms
done
LOAD_END="$(uptime)"

# Tiles of the 2D stencils, when there (node of every grid cell).
for n in 256 1024; do
  if [ -f "$OUT/maps/stencil_2d.$n.rankmig.map" ]; then
    python3 "$HERE/show_grid.py" "$n" "$OUT/maps/stencil_2d.$n".{rankmig,tm,scotch}.map
  fi
done > "$OUT/grids.txt"

{
  echo "# rankmig vs TreeMatch (Open MPI 4.1.4) vs Scotch $(dpkg-query -W -f='${Version}' libscotch-dev 2>/dev/null)"
  echo "# tree: ceil(n/16) nodes x 2 packages x 8 cores, costs 100,10,1 (1 node: 2 x 8, 10,1); evaluator: rankmig cost"
  echo "# times: median of $REPS calls of the mapping alone (after one warm-up), ms; anchor threads: $THREADS; Scotch strategy: $SCOTCH_STRATEGY"
  echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) cores"
  echo "# load at start: $LOAD_START"
  echo "# load at end:   $LOAD_END"
  echo "# ratio = rankmig / min(TreeMatch, Scotch); hb = hop-bytes, sc = sum-com"
  awk -F'\t' '
    function ratio(a, b, c,   m) { m = (b < c) ? b : c; if (m == 0) return (a == 0) ? "1.000" : "inf"; return sprintf("%.3f", a / m) }
    NR == 1 {
      printf "%-22s %5s %5s | %10s %10s %10s %6s | %10s %10s %10s %6s | %9s %9s %9s %7s | %s\n",
        "case", "n", "nodes", "hb rankmig", "hb TM", "hb Scotch", "ratio",
        "sc rankmig", "sc TM", "sc Scotch", "ratio", "ms rankmig", "ms TM", "ms Scotch", "t ratio", "notes"
      next
    }
    {
      printf "%-22s %5d %5d | %10.4g %10.4g %10.4g %6s | %10.4g %10.4g %10.4g %6s | %9.3f %9.3f %9.3f %7s | %s\n",
        $1, $2, $3, $4, $5, $6, ratio($4, $5, $6), $7, $8, $9, ratio($7, $8, $9),
        $10, $11, $12, ratio($10, $11, $12), $13
    }' "$TSV"
} | tee "$OUT/table.txt"

if [ "$fail" -ne 0 ]; then
  echo "compare: some checks FAILED (see above)" >&2
  exit 1
fi
echo "compare: evaluator checks passed (format independence, check_eval.py); table in $OUT/table.txt" >&2
