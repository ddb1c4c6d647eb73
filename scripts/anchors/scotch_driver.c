/* Scotch anchor (rankmig's own driver around libscotch 7, Debian package
 * libscotch-dev; compiled against the 64-bit-integer variant, scotch-int64).
 *
 *   scotch_driver MATRIX NODES REPS [THREADS [STRATEGY]]
 *
 * MATRIX: dense text (n lines of n numbers). The graph has an edge {i,j} of weight
 * w(i,j)+w(j,i) for every nonzero pair, scaled to integers (see scale below); no vertex
 * weights. The target is a `tleaf` architecture with the levels NODES (link cost 100),
 * 2 (10), 8 (1) (with one node: 2 (10), 8 (1)), built with SCOTCH_archTleaf; the
 * strategy is Scotch's default (an empty SCOTCH_Strat). Times only SCOTCH_graphMap with
 * clock_gettime: one untimed warm-up call, then REPS timed calls, each after
 * SCOTCH_randomReset (outside the timing) so all give the same mapping; prints
 * `time_ms MEDIAN` on stderr and the mapping in gmap format on stdout (count, then
 * `rank leaf` lines; a tleaf terminal number is the leaf index in tree order).
 *
 * THREADS: 0 or absent = no context (libscotch's default); T > 0 = the graph is bound
 * to a context of T threads (SCOTCH_contextThreadSpawn).
 * STRATEGY: `default` (absent: an empty SCOTCH_Strat, Scotch's default mapping strategy,
 * which tolerates some load imbalance: on large graphs it may put two ranks on one
 * leaf) or `strict` (SCOTCH_stratGraphMapBuild(SCOTCH_STRATBALANCE, leaves, 0.0): no
 * imbalance allowed).
 */
#include <stdint.h>

#include "anchor_common.h"

#include <scotch.h>

int main(int argc, char **argv)
{
  if (argc < 4 || argc > 6) {
    fprintf(stderr, "usage: %s MATRIX NODES REPS [THREADS [default|strict]]\n", argv[0]);
    return 2;
  }
  int nodes = anchor_parse_positive(argv[2], "NODES");
  int reps = anchor_parse_positive(argv[3], "REPS");
  int threads = 0;
  if (argc >= 5 && strcmp(argv[4], "0") != 0) threads = anchor_parse_positive(argv[4], "THREADS");
  int strict = 0;
  if (argc == 6) {
    if (strcmp(argv[5], "strict") == 0) strict = 1;
    else if (strcmp(argv[5], "default") != 0) anchor_die("STRATEGY: default or strict");
  }

  int n;
  double **mat = anchor_read_dense(argv[1], &n);

  int arity_i[8], cost_i[8];
  int levels = anchor_levels(nodes, arity_i, cost_i);
  SCOTCH_Num sizetab[8], linktab[8];
  SCOTCH_Num linksum = 0;
  for (int l = 0; l < levels; l++) {
    sizetab[l] = arity_i[l];
    linktab[l] = cost_i[l];
    linksum += cost_i[l];
  }
  long leaves = (long)nodes * ANCHOR_PACKAGES * ANCHOR_CORES;
  if (n > leaves) {
    fprintf(stderr, "scotch_driver: %d ranks do not fit on %ld cores\n", n, leaves);
    return 2;
  }

  /* Symmetrised weights, arcs in both directions (Scotch's adjacency arrays). */
  long arcs = 0;
  double total = 0.0, maxw = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (i != j) {
        double w = mat[i][j] + mat[j][i];
        if (w > 0) {
          arcs++;
          total += w;
          if (w > maxw) maxw = w;
        }
      }
  /* Integer weights: the scaled sum of all arc weights times the largest distance of
   * the target stays below SCOTCH_NUMMAX / 2^16 (so no cost or gain Scotch sums can
   * overflow), i.e. weights are scaled so that the total is ~2^47 / linksum with
   * 64-bit SCOTCH_Num; rounded; a nonzero weight is at least 1. */
  double budget = (double)(SCOTCH_NUMMAX >> 16) / (double)linksum;
  double scale = total > 0 ? budget / total : 1.0;
  SCOTCH_Num *verttab = malloc(sizeof(SCOTCH_Num) * ((size_t)n + 1));
  SCOTCH_Num *edgetab = malloc(sizeof(SCOTCH_Num) * (size_t)(arcs ? arcs : 1));
  SCOTCH_Num *edlotab = malloc(sizeof(SCOTCH_Num) * (size_t)(arcs ? arcs : 1));
  if (!verttab || !edgetab || !edlotab) anchor_die("out of memory");
  long a = 0;
  for (int i = 0; i < n; i++) {
    verttab[i] = a;
    for (int j = 0; j < n; j++)
      if (i != j) {
        double w = mat[i][j] + mat[j][i];
        if (w > 0) {
          double s = w * scale + 0.5;
          SCOTCH_Num v = (SCOTCH_Num)s;
          edgetab[a] = j;
          edlotab[a] = v < 1 ? 1 : v;
          a++;
        }
      }
  }
  verttab[n] = a;
  for (int i = 0; i < n; i++) free(mat[i]);
  free(mat);

  SCOTCH_Graph graph, ctxgraph, *mapgraph = &graph;
  SCOTCH_Arch arch;
  SCOTCH_Strat strat;
  SCOTCH_Context context;
  if (SCOTCH_graphInit(&graph) != 0) anchor_die("SCOTCH_graphInit failed");
  if (SCOTCH_graphBuild(&graph, 0, n, verttab, NULL, NULL, NULL, a, edgetab, edlotab) != 0)
    anchor_die("SCOTCH_graphBuild failed");
  if (SCOTCH_graphCheck(&graph) != 0) anchor_die("SCOTCH_graphCheck failed");
  if (SCOTCH_archInit(&arch) != 0) anchor_die("SCOTCH_archInit failed");
  if (SCOTCH_archTleaf(&arch, levels, sizetab, linktab) != 0) anchor_die("SCOTCH_archTleaf failed");
  if (SCOTCH_archSize(&arch) != leaves) anchor_die("tleaf target of the wrong size");
  if (SCOTCH_stratInit(&strat) != 0) anchor_die("SCOTCH_stratInit failed");
  if (strict && SCOTCH_stratGraphMapBuild(&strat, SCOTCH_STRATBALANCE, (SCOTCH_Num)leaves, 0.0) != 0)
    anchor_die("SCOTCH_stratGraphMapBuild failed");
  if (threads) {
    if (SCOTCH_contextInit(&context) != 0) anchor_die("SCOTCH_contextInit failed");
    if (SCOTCH_contextThreadSpawn(&context, threads, NULL) != 0) anchor_die("SCOTCH_contextThreadSpawn failed");
    if (SCOTCH_graphInit(&ctxgraph) != 0) anchor_die("SCOTCH_graphInit failed");
    if (SCOTCH_contextBindGraph(&context, &graph, &ctxgraph) != 0) anchor_die("SCOTCH_contextBindGraph failed");
    mapgraph = &ctxgraph;
  }

  anchor_hold_stdout();
  SCOTCH_Num *parttab = malloc(sizeof(SCOTCH_Num) * (size_t)n);
  long *first = malloc(sizeof(long) * (size_t)n);
  double *times = malloc(sizeof(double) * (size_t)reps);
  int differ = 0;
  for (int r = -1; r < reps; r++) {
    if (threads) SCOTCH_contextRandomReset(&context);
    else SCOTCH_randomReset();
    double t0 = anchor_now_ms();
    int rc = SCOTCH_graphMap(mapgraph, &arch, &strat, parttab);
    double t1 = anchor_now_ms();
    if (rc != 0) anchor_die("SCOTCH_graphMap failed");
    if (r >= 0) times[r] = t1 - t0;
    for (int i = 0; i < n; i++) {
      if (r == -1) first[i] = parttab[i];
      else if (first[i] != parttab[i]) differ = 1;
    }
  }
  double median = anchor_median(times, reps);
  anchor_release_stdout();

  if (threads) {
    SCOTCH_graphExit(&ctxgraph);
    SCOTCH_contextExit(&context);
  }
  SCOTCH_stratExit(&strat);
  SCOTCH_archExit(&arch);
  SCOTCH_graphExit(&graph);

  if (differ) fprintf(stderr, "scotch_driver: warning: the calls did not all give the same mapping; the first is printed\n");
  anchor_print_gmap(first, n, leaves, "scotch_driver");
  fprintf(stderr, "time_ms %.4f\n", median);
  free(parttab);
  free(first);
  free(times);
  free(verttab);
  free(edgetab);
  free(edlotab);
  return 0;
}
