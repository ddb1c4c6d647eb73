/* Shared by tm_driver.c and scotch_driver.c (rankmig's own code): reading a dense
 * matrix, the clock, the median and the gmap output. Header-only, static functions. */
#ifndef ANCHOR_COMMON_H
#define ANCHOR_COMMON_H

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void anchor_die(const char *what)
{
  fprintf(stderr, "%s\n", what);
  exit(2);
}

/* Reads a dense matrix: n lines of n whitespace-separated non-negative numbers, `#`
 * comment lines and blank lines skipped. n is the number of fields of the first data
 * line. Returns rows (n pointers to n doubles) and sets *order. */
static double **anchor_read_dense(const char *path, int *order)
{
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
    exit(2);
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  double **rows = NULL;
  int n = -1, row = 0;
  while ((len = getline(&line, &cap, f)) != -1) {
    char *p = line;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '\0' || *p == '#') continue;
    if (n < 0) { /* count the fields of the first data line */
      int fields = 0;
      char *q = p;
      while (*q) {
        while (isspace((unsigned char)*q)) q++;
        if (!*q) break;
        fields++;
        while (*q && !isspace((unsigned char)*q)) q++;
      }
      n = fields;
      rows = malloc(sizeof(double *) * (size_t)n);
      if (!rows) anchor_die("out of memory");
    }
    if (row >= n) anchor_die("matrix: more rows than columns");
    rows[row] = malloc(sizeof(double) * (size_t)n);
    if (!rows[row]) anchor_die("out of memory");
    for (int j = 0; j < n; j++) {
      char *end;
      double v = strtod(p, &end);
      if (end == p) {
        fprintf(stderr, "matrix: row %d has fewer than %d numbers\n", row, n);
        exit(2);
      }
      if (!(v >= 0.0)) {
        fprintf(stderr, "matrix: negative or NaN entry at (%d,%d)\n", row, j);
        exit(2);
      }
      rows[row][j] = v;
      p = end;
    }
    while (isspace((unsigned char)*p)) p++;
    if (*p != '\0' && *p != '#') {
      fprintf(stderr, "matrix: row %d has more than %d numbers\n", row, n);
      exit(2);
    }
    row++;
  }
  free(line);
  fclose(f);
  if (n <= 0 || row != n) {
    fprintf(stderr, "matrix: %d rows for %d columns\n", row, n);
    exit(2);
  }
  *order = n;
  return rows;
}

static double anchor_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int anchor_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of the r values (mean of the two middle ones for an even r); sorts them. */
static double anchor_median(double *v, int r)
{
  qsort(v, (size_t)r, sizeof(double), anchor_cmp_double);
  return (r % 2) ? v[r / 2] : 0.5 * (v[r / 2 - 1] + v[r / 2]);
}

static int anchor_parse_positive(const char *s, const char *what)
{
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < 1 || v > 1000000) {
    fprintf(stderr, "%s: expected a positive integer, got '%s'\n", what, s);
    exit(2);
  }
  return (int)v;
}

/* The tree: nodes x 2 packages x 8 cores, link costs 100, 10, 1 (top first). With a
 * single node the cluster level is left out (2 x 8, costs 10, 1), as rankmig's
 * Tree::cluster(node, 1) and `rankmig cost --nodes 1` do. */
#define ANCHOR_PACKAGES 2
#define ANCHOR_CORES 8
static int anchor_levels(int nodes, int *arity, int *cost)
{
  int l = 0;
  if (nodes > 1) { arity[l] = nodes; cost[l] = 100; l++; }
  arity[l] = ANCHOR_PACKAGES; cost[l] = 10; l++;
  arity[l] = ANCHOR_CORES; cost[l] = 1; l++;
  return l;
}

/* Points standard output at standard error until anchor_release_stdout, so that
 * nothing the mapper prints can mix with the mapping. */
static int anchor_saved_stdout = -1;
static void anchor_hold_stdout(void)
{
  fflush(stdout);
  anchor_saved_stdout = dup(1);
  if (anchor_saved_stdout < 0 || dup2(2, 1) < 0) anchor_die("cannot redirect stdout");
}
static void anchor_release_stdout(void)
{
  fflush(stdout);
  if (dup2(anchor_saved_stdout, 1) < 0) anchor_die("cannot restore stdout");
  close(anchor_saved_stdout);
}

/* Scotch gmap format: the count, then `rank leaf` lines. Also checks one rank per
 * leaf (warns on stderr otherwise). */
static void anchor_print_gmap(const long *leaf, int n, long leaves, const char *who)
{
  char *used = calloc((size_t)leaves, 1);
  int shared = 0;
  printf("%d\n", n);
  for (int i = 0; i < n; i++) {
    if (leaf[i] < 0 || leaf[i] >= leaves) {
      fprintf(stderr, "%s: rank %d on leaf %ld, outside 0..%ld\n", who, i, leaf[i], leaves - 1);
      exit(3);
    }
    if (used[leaf[i]]++) shared++;
    printf("%d\t%ld\n", i, leaf[i]);
  }
  if (shared)
    fprintf(stderr, "%s: warning: %d ranks share a leaf with another rank\n", who, shared);
  free(used);
}

#endif
