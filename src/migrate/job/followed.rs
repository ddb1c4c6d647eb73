//! The availability the job follows: the view its placement is made for, and the
//! watcher of the availability file the view comes from.

use std::time::Duration;

use crate::availability::Availability;
use crate::monitor::AvailabilityWatcher;

/// The availability the job follows.
pub(super) struct Followed {
    /// The availability the job acts on: `None` without an availability file, or before
    /// its first content.
    pub(super) view: Option<Availability>,
    /// The availability file's watcher (`None` without a file).
    pub(super) watcher: Option<AvailabilityWatcher>,
}

/// What the job followed before the change being carried out: the view and the hash
/// of the file content it came from, to go back to should the change not be made.
pub(super) struct ViewBefore {
    /// The view followed before.
    pub(super) view: Option<Availability>,
    /// The hash of the file content `view` came from.
    pub(super) hash: u64,
}

impl Followed {
    /// Nothing followed yet (no view, no watcher).
    pub(super) fn nothing() -> Self {
        Self {
            view: None,
            watcher: None,
        }
    }

    /// The hash of the file content last accepted (0 without a watcher).
    pub(super) fn last_hash(&self) -> u64 {
        self.watcher
            .as_ref()
            .map_or(0, AvailabilityWatcher::last_hash)
    }

    /// Follows `availability` from now on; returns what was followed before, with
    /// `hash_before`, the content's hash taken before the check that saw the change.
    pub(super) fn follow(&mut self, availability: Availability, hash_before: u64) -> ViewBefore {
        ViewBefore {
            view: self.view.replace(availability),
            hash: hash_before,
        }
    }

    /// A change refused: back to `before`, whose content the watcher takes as new
    /// again after `retry_after`, so the same edit is tried again.
    pub(super) fn go_back(&mut self, before: ViewBefore, retry_after: Duration) {
        self.view = before.view.clone();
        if let Some(w) = self.watcher.as_mut() {
            w.retry_later(before.view, before.hash, retry_after);
        }
    }
}
