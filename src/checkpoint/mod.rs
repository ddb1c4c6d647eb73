//! Application-level checkpoint/restart (see issue 4).
