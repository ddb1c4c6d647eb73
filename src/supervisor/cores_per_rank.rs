//! How many cores each rank of a `rankmig run` job runs on, and where that number came
//! from: `--cores-per-rank` (or its configuration key), else `SLURM_CPUS_PER_TASK`
//! inside a Slurm job, else `OMP_NUM_THREADS` (its first number), else 1.
//!
//! ```
//! use rankmig::supervisor::cores_per_rank::CoresPerRank;
//! let env = |k: &str| (k == "OMP_NUM_THREADS").then(|| "4,2".to_owned());
//! let c = CoresPerRank::resolve(None, &env).unwrap();
//! assert_eq!((c.count, c.source.as_str()), (4, "OMP_NUM_THREADS=4,2"));
//! let c = CoresPerRank::resolve(Some(2), &env).unwrap();
//! assert_eq!((c.count, c.source.as_str()), (2, "--cores-per-rank"));
//! ```

use serde::{Deserialize, Serialize};

/// Cores per rank, with the setting it was taken from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoresPerRank {
    /// Cores each rank runs on (at least 1).
    pub count: usize,
    /// Where the count came from, as the start line says it.
    pub source: String,
}

impl Default for CoresPerRank {
    fn default() -> Self {
        Self {
            count: 1,
            source: "the default".to_owned(),
        }
    }
}

/// A variable that should give a core count and does not.
#[derive(Debug, thiserror::Error)]
#[error("{var}={value:?}: expected a number of cores per rank of at least 1")]
pub struct CoresPerRankError {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
}

impl CoresPerRank {
    /// `given` (`--cores-per-rank`), else the environment `env` gives (see the module
    /// documentation).
    pub fn resolve(
        given: Option<usize>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, CoresPerRankError> {
        if let Some(count) = given {
            return Ok(Self {
                count: count.max(1),
                source: "--cores-per-rank".to_owned(),
            });
        }
        let in_slurm_job = env(crate::rms::slurm::ENV_JOB_ID).is_some();
        let from = |var: &'static str| -> Result<Option<Self>, CoresPerRankError> {
            let Some(value) = env(var).filter(|v| !v.trim().is_empty()) else {
                return Ok(None);
            };
            // OMP_NUM_THREADS may list nested levels ("4,2"): the first is the rank's.
            let first = value.split(',').next().unwrap_or_default().trim();
            match first.parse::<usize>() {
                Ok(count) if count >= 1 => Ok(Some(Self {
                    count,
                    source: format!("{var}={value}"),
                })),
                _ => Err(CoresPerRankError { var, value }),
            }
        };
        if in_slurm_job {
            if let Some(found) = from("SLURM_CPUS_PER_TASK")? {
                return Ok(found);
            }
        }
        Ok(from("OMP_NUM_THREADS")?.unwrap_or_default())
    }

    /// How the start line says it: `1 core per rank (the default)`.
    pub fn describe(&self) -> String {
        let cores = if self.count == 1 { "core" } else { "cores" };
        format!("{} {cores} per rank ({})", self.count, self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn slurm_first_inside_a_job_then_openmp_then_one() {
        let both = env_of(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_CPUS_PER_TASK", "8"),
            ("OMP_NUM_THREADS", "2"),
        ]);
        assert_eq!(CoresPerRank::resolve(None, &both).unwrap().count, 8);
        // Outside a job a stray SLURM_CPUS_PER_TASK is not the job's.
        let stray = env_of(&[("SLURM_CPUS_PER_TASK", "8"), ("OMP_NUM_THREADS", "2")]);
        assert_eq!(CoresPerRank::resolve(None, &stray).unwrap().count, 2);
        let none = env_of(&[]);
        let one = CoresPerRank::resolve(None, &none).unwrap();
        assert_eq!(one.describe(), "1 core per rank (the default)");
    }

    #[test]
    fn a_bad_count_names_its_variable() {
        let bad = env_of(&[("OMP_NUM_THREADS", "many")]);
        let e = CoresPerRank::resolve(None, &bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            "OMP_NUM_THREADS=\"many\": expected a number of cores per rank of at least 1"
        );
    }
}
