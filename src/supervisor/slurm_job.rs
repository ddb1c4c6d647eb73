//! The Slurm job a restarted run follows: `rankmig run --restart` of a `--rms slurm`
//! run inside another Slurm job than the one it ran in (a new `salloc` after the old
//! allocation ended) follows the new job.

use crate::allocation::{Allocation, AllocationError};

use super::launch::RunSpec;

/// `spec` (read from `run.json`) in the Slurm job `env` names, if it follows Slurm and
/// that job is another one: the new job's id and allocation (the old one when `env`
/// has none), nothing released or lost yet. Otherwise `spec` as it is.
pub fn follow_current_job(
    mut spec: RunSpec,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunSpec, AllocationError> {
    let Some(rms) = spec.rms.as_mut() else {
        return Ok(spec);
    };
    let Some(job_id) = crate::rms::slurm::job_in(env) else {
        return Ok(spec);
    };
    if job_id != rms.job_id {
        let allocation = Allocation::from_batch_environment(env)?;
        log::info!(
            "restarting in Slurm job {job_id} (the run was in job {})",
            rms.job_id
        );
        rms.job_id = job_id;
        spec.allocation = allocation.or(spec.allocation);
        spec.released_hosts.clear();
        spec.lost_hosts.clear();
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rms::{ResourceManager, RmsSettings};

    /// A `--rms slurm` run of job 1 on `old1`, `old2`, with `old2` released and lost.
    fn spec_in_job_1() -> RunSpec {
        let hosts = "old1 slots=2\nold2 slots=2\n";
        let dir = tempfile::tempdir().unwrap();
        let hostfile = dir.path().join("hosts");
        std::fs::write(&hostfile, hosts).unwrap();
        let text = r#"{"ranks": 2, "availability": "/a", "matrix": null, "ckpt_dir": "/c",
            "run_dir": "/r", "check_every": 0, "program": ["app"], "env": []}"#;
        let mut spec: RunSpec = serde_json::from_str(text).unwrap();
        spec.allocation = Some(Allocation::from_hostfile(&hostfile).unwrap());
        spec.rms = Some(RmsSettings {
            manager: ResourceManager::Slurm,
            job_id: "1".into(),
            lead_seconds: 0,
            release: true,
            cap: None,
        });
        spec.released_hosts = vec!["old2".into()];
        spec.lost_hosts = vec!["old2".into()];
        spec
    }

    #[test]
    fn a_restart_in_another_slurm_job_takes_its_id_and_allocation() {
        let env = |k: &str| match k {
            "SLURM_JOB_ID" => Some("2".to_owned()),
            "SLURM_JOB_NODELIST" => Some("new[1-3]".to_owned()),
            _ => None,
        };
        let spec = follow_current_job(spec_in_job_1(), &env).unwrap();
        assert_eq!(spec.rms.as_ref().unwrap().job_id, "2");
        let hosts = spec.allocation.as_ref().unwrap().host_names();
        assert_eq!(hosts, ["new1", "new2", "new3"]);
        assert!(spec.released_hosts.is_empty() && spec.lost_hosts.is_empty());
    }

    #[test]
    fn the_same_job_or_no_job_leaves_the_run_as_it_was() {
        let spec = spec_in_job_1();
        let same = |k: &str| (k == "SLURM_JOB_ID").then(|| "1".to_owned());
        assert_eq!(follow_current_job(spec.clone(), &same).unwrap(), spec);
        let none = |_: &str| None;
        assert_eq!(follow_current_job(spec.clone(), &none).unwrap(), spec);
    }
}
