//! treematch
