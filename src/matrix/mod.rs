//! matrix
