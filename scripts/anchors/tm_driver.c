/* TreeMatch anchor (rankmig's own driver around the TreeMatch C library embedded in
 * Open MPI 4.1.4, fetched by fetch_treematch.sh and compiled together with this file).
 *
 *   tm_driver MATRIX NODES REPS [THREADS]
 *
 * MATRIX: dense text (n lines of n numbers). The tree is TreeMatch's synthetic
 * topology NODES x 2 packages x 8 cores, link costs 100, 10, 1 (with one node: 2 x 8,
 * costs 10, 1). Times only the mapping (tm_build_tree_from_topology +
 * tm_compute_mapping) with clock_gettime: one untimed warm-up call (it starts
 * TreeMatch's thread pool), then REPS timed calls, each with TreeMatch's random
 * generator reseeded to its default seed (outside the timing), so all give the mapping
 * of a fresh process; prints `time_ms MEDIAN` on stderr
 * and the mapping in Scotch's gmap format on stdout (count, then `rank leaf` lines,
 * leaf = core index in tree order, node-major).
 *
 * THREADS: TreeMatch's thread limit (tm_set_max_nb_threads); 0 or absent = TreeMatch's
 * default (one per core, found with hwloc).
 */
#include "anchor_common.h"

#include "treematch.h"
#include "tm_mt.h"

int main(int argc, char **argv)
{
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: %s MATRIX NODES REPS [THREADS]\n", argv[0]);
    return 2;
  }
  int nodes = anchor_parse_positive(argv[2], "NODES");
  int reps = anchor_parse_positive(argv[3], "REPS");
  int threads = 0;
  if (argc == 5 && strcmp(argv[4], "0") != 0) threads = anchor_parse_positive(argv[4], "THREADS");

  int n;
  double **mat = anchor_read_dense(argv[1], &n);

  int arity_i[8], cost_i[8];
  int levels = anchor_levels(nodes, arity_i, cost_i);
  /* TreeMatch's synthetic topology: nb_levels = levels + 1, the last level of arity 0
   * and cost 0 (treematch.h); tm_build_synthetic_topology sums the costs bottom-up. */
  int arity[9];
  double cost[9];
  for (int l = 0; l < levels; l++) {
    arity[l] = arity_i[l];
    cost[l] = cost_i[l];
  }
  arity[levels] = 0;
  cost[levels] = 0;
  int per_node = ANCHOR_PACKAGES * ANCHOR_CORES;
  int core_numbering[ANCHOR_PACKAGES * ANCHOR_CORES];
  for (int i = 0; i < per_node; i++) core_numbering[i] = i; /* identity: leaf ids in tree order */
  long leaves = (long)nodes * per_node;
  if (n > leaves) {
    fprintf(stderr, "tm_driver: %d ranks do not fit on %ld cores\n", n, leaves);
    return 2;
  }

  anchor_hold_stdout();
  tm_set_verbose_level(ERROR); /* TreeMatch's default; errors go to stderr */
  if (threads) tm_set_max_nb_threads((unsigned)threads);
  /* The topology and the affinity matrix are inputs, built once outside the timing:
   * the bottom-up build neither frees nor modifies them (it completes a copy when the
   * order does not divide an arity). Each call's result is compared with the first. */
  tm_topology_t *topology = tm_build_synthetic_topology(arity, cost, levels + 1, core_numbering, per_node);
  tm_affinity_mat_t *aff = tm_build_affinity_mat(mat, n);

  long *first = malloc(sizeof(long) * (size_t)n);
  double *times = malloc(sizeof(double) * (size_t)reps);
  int differ = 0;
  for (int r = -1; r < reps; r++) {
    /* TreeMatch draws from a global Mersenne twister that seeds itself with 5489 on
     * first use; reseeding it so makes every call the first call of a fresh process. */
    init_genrand(5489UL);
    double t0 = anchor_now_ms();
    tm_tree_t *tree = tm_build_tree_from_topology(topology, aff, NULL, NULL);
    tm_solution_t *sol = tm_compute_mapping(topology, tree);
    double t1 = anchor_now_ms();
    if (r >= 0) times[r] = t1 - t0;
    if ((int)sol->sigma_length != n) anchor_die("tm_driver: solution of the wrong length");
    for (int i = 0; i < n; i++) {
      if (r == -1) first[i] = sol->sigma[i];
      else if (first[i] != sol->sigma[i]) differ = 1;
    }
    tm_free_solution(sol);
    tm_free_tree(tree);
  }
  double median = anchor_median(times, reps);
  tm_free_affinity_mat(aff); /* frees mat's rows too */
  tm_free_topology(topology);
  tm_finalize();
  anchor_release_stdout();

  if (differ) fprintf(stderr, "tm_driver: warning: the calls did not all give the same mapping; the first is printed\n");
  anchor_print_gmap(first, n, leaves, "tm_driver");
  fprintf(stderr, "time_ms %.4f\n", median);
  free(first);
  free(times);
  return 0;
}
