//! Live migration with the rank count kept (issue 6).
