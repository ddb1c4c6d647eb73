//! How many times this process's job communicator has been replaced
//! ([`super::Job::comm_generation`]), and whether it was since [`super::Job::event`]
//! last returned.

/// The job communicator's generation in this process.
#[derive(Debug, Default)]
pub(super) struct CommGeneration {
    /// How many times the communicator has been replaced (a process that arrived by
    /// migration starts with the count of the migration that made it).
    count: u64,
    /// The communicator was replaced since [`super::Job::event`] last returned.
    changed: bool,
}

impl CommGeneration {
    /// A process that arrived by the migration that made the `count`-th communicator.
    pub(super) fn arrived(count: u64) -> Self {
        Self {
            count,
            changed: false,
        }
    }

    /// How many times the communicator has been replaced.
    pub(super) fn count(&self) -> u64 {
        self.count
    }

    /// The communicator has just been replaced.
    pub(super) fn replaced(&mut self) {
        self.count += 1;
        self.changed = true;
    }

    /// True if the communicator was replaced since the last call.
    pub(super) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }
}

#[cfg(test)]
mod tests {
    use super::CommGeneration;

    #[test]
    fn a_replacement_counts_once_and_is_told_once() {
        let mut generation = CommGeneration::arrived(2);
        assert!(!generation.take_changed());
        generation.replaced();
        assert_eq!(generation.count(), 3);
        assert!(generation.take_changed());
        assert!(!generation.take_changed());
        assert_eq!(generation.count(), 3);
    }
}
