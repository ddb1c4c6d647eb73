//! Generated communication patterns (stencils, rings, all-to-all, ...) for benchmarks and tests.
