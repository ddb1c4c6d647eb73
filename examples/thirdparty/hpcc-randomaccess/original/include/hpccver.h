/* -*- mode: C; tab-width: 2; indent-tabs-mode: nil; -*- */

/*
Version has four components: MAJOR, MINOR, MICRO and RELEASE.
RELEASE is a, b, c, f (alpha, beta, candidate, and final).
*/
#define HPCC_VERSION_MAJOR   1
#define HPCC_VERSION_MINOR   5
#define HPCC_VERSION_MICRO   0
#define HPCC_VERSION_RELEASE 'f'
