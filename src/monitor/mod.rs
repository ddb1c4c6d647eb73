//! The running job's view: rank locations, live communication matrix, availability watching (issue 5).
