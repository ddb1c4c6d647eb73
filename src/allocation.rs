//! The allocation: the hosts a job may ever run on, and how many slots each has.
//!
//! `rankmig run` finds it, in this order: `--hostfile FILE` (an Open MPI hostfile
//! `NAME slots=N`, a node file with one line per slot, `NAME:N`, or the native
//! `NAME CORES` form); a Slurm job (`SLURM_JOB_NODELIST` with
//! `SLURM_JOB_CPUS_PER_NODE`); a PBS job (`PBS_NODEFILE`). Without any of them the job
//! runs on this host alone, with the nodes of the availability file as logical nodes.
//!
//! In multi-host mode the availability file names hosts of the allocation; a name
//! outside it is refused ([`Allocation::check`]).
//!
//! ```
//! use rankmig::allocation::{Allocation, expand_hostlist};
//! assert_eq!(expand_hostlist("n[1-3,7],login").unwrap(), ["n1", "n2", "n3", "n7", "login"]);
//! let a = Allocation::from_slurm("n[01-02]", Some("4(x2)")).unwrap();
//! assert_eq!(a.host_names(), ["n01", "n02"]);
//! assert_eq!(a.hosts()[1].slots, 4);
//! ```

use std::path::{Path, PathBuf};

use crate::availability::{Availability, AvailabilityError, AvailabilityFormat};

/// Longest host list a Slurm node list may expand to.
pub const MAX_HOSTS: usize = 1 << 20;

/// One host of the allocation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Host {
    /// Host name, as `mpirun` and the availability file name it.
    pub name: String,
    /// Slots (cores) the allocation gives on it.
    pub slots: usize,
}

/// The hosts of a job's allocation, in the order they were given.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Allocation {
    hosts: Vec<Host>,
    /// Where the allocation came from (a file, `SLURM_JOB_NODELIST`, ...).
    pub origin: String,
}

/// Why the allocation could not be read, or an availability does not fit it.
#[derive(Debug, thiserror::Error)]
pub enum AllocationError {
    /// The hostfile or node file is unusable.
    #[error(transparent)]
    Hostfile(#[from] AvailabilityError),
    /// A variable of the batch system does not parse.
    #[error("{name}={value:?}: {reason}")]
    Variable {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A node file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The allocation names no host.
    #[error("{origin}: no host")]
    Empty {
        /// Where it came from.
        origin: String,
    },
    /// The availability names a host outside the allocation.
    #[error(
        "{origin}:{line}: host '{host}' is not in the job's allocation ({allocation}); the allocation is the set of hosts the job may ever use"
    )]
    OutsideAllocation {
        /// The availability file.
        origin: String,
        /// Its line.
        line: usize,
        /// The host.
        host: String,
        /// The allocation's hosts, comma separated.
        allocation: String,
    },
}

impl Allocation {
    /// An allocation of these hosts.
    pub fn new(hosts: Vec<Host>, origin: impl Into<String>) -> Result<Self, AllocationError> {
        let origin = origin.into();
        if hosts.is_empty() {
            return Err(AllocationError::Empty { origin });
        }
        Ok(Self { hosts, origin })
    }

    /// Reads a hostfile (Open MPI `NAME slots=N`, node file, `NAME:N` or `NAME CORES`).
    pub fn from_hostfile(path: &Path) -> Result<Self, AllocationError> {
        let offers = Availability::load(path, AvailabilityFormat::Auto)?;
        let hosts = offers
            .nodes()
            .iter()
            .map(|n| Host {
                name: n.name.clone(),
                slots: n.cores,
            })
            .collect();
        Self::new(hosts, path.display().to_string())
    }

    /// A Slurm allocation: `SLURM_JOB_NODELIST` (a host list such as `n[1-4,7]`) and
    /// `SLURM_JOB_CPUS_PER_NODE` (`72(x2),36`; one slot per host when absent).
    pub fn from_slurm(
        nodelist: &str,
        cpus_per_node: Option<&str>,
    ) -> Result<Self, AllocationError> {
        let names = expand_hostlist(nodelist).map_err(|reason| AllocationError::Variable {
            name: "SLURM_JOB_NODELIST",
            value: nodelist.to_owned(),
            reason,
        })?;
        let slots = match cpus_per_node {
            Some(list) => {
                expand_counts(list, names.len()).map_err(|reason| AllocationError::Variable {
                    name: "SLURM_JOB_CPUS_PER_NODE",
                    value: list.to_owned(),
                    reason,
                })?
            }
            None => vec![1; names.len()],
        };
        let hosts = names
            .into_iter()
            .zip(slots)
            .map(|(name, slots)| Host { name, slots })
            .collect();
        Self::new(hosts, "SLURM_JOB_NODELIST")
    }

    /// A PBS node file: one host name per line and slot, hosts in order of first
    /// appearance.
    pub fn from_pbs_nodefile(path: &Path) -> Result<Self, AllocationError> {
        let text = std::fs::read_to_string(path).map_err(|source| AllocationError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut hosts: Vec<Host> = Vec::new();
        for name in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match hosts.iter_mut().find(|h| h.name == name) {
                Some(h) => h.slots += 1,
                None => hosts.push(Host {
                    name: name.to_owned(),
                    slots: 1,
                }),
            }
        }
        Self::new(hosts, path.display().to_string())
    }

    /// The allocation of the batch job this process runs in (Slurm, then PBS), if any.
    /// `get` reads a variable (`std::env::var(..).ok()` in practice).
    pub fn from_batch_environment(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, AllocationError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        if let Some(list) = get("SLURM_JOB_NODELIST") {
            let cpus = get("SLURM_JOB_CPUS_PER_NODE");
            return Self::from_slurm(&list, cpus.as_deref()).map(Some);
        }
        if let Some(file) = get("PBS_NODEFILE") {
            return Self::from_pbs_nodefile(Path::new(&file)).map(Some);
        }
        Ok(None)
    }

    /// The hosts, in order.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The host names, in order.
    pub fn host_names(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.name.clone()).collect()
    }

    /// True when `name` is a host of the allocation.
    pub fn contains(&self, name: &str) -> bool {
        self.hosts.iter().any(|h| h.name == name)
    }

    /// Refuses an availability that names a host outside the allocation (the first
    /// such line is named).
    pub fn check(&self, availability: &Availability, origin: &str) -> Result<(), AllocationError> {
        check_hosts(&self.host_names(), availability, origin)
    }
}

/// [`Allocation::check`] against a list of host names.
pub fn check_hosts(
    hosts: &[String],
    availability: &Availability,
    origin: &str,
) -> Result<(), AllocationError> {
    match availability
        .nodes()
        .iter()
        .find(|n| !hosts.contains(&n.name))
    {
        None => Ok(()),
        Some(n) => Err(AllocationError::OutsideAllocation {
            origin: origin.to_owned(),
            line: n.line,
            host: n.name.clone(),
            allocation: hosts.join(", "),
        }),
    }
}

/// The availability without the hosts found lost: they offer no core, whatever the
/// file says. Fails when no host is left.
pub fn without_lost_hosts(
    availability: &Availability,
    lost: &[String],
) -> Result<Availability, AvailabilityError> {
    if lost.is_empty() {
        return Ok(availability.clone());
    }
    Availability::from_offers(
        availability
            .nodes()
            .iter()
            .filter(|n| !lost.contains(&n.name))
            .cloned()
            .collect(),
    )
}

/// Expands a Slurm host list: `n[1-4,7]`, `rack[1-2]-n[01-02]` (every combination,
/// zero padding kept), items separated by commas outside brackets.
pub fn expand_hostlist(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top_level(list)? {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let mut names = vec![String::new()];
        let mut rest = item;
        while !rest.is_empty() {
            match rest.find('[') {
                None => {
                    names.iter_mut().for_each(|n| n.push_str(rest));
                    rest = "";
                }
                Some(open) => {
                    let close = rest[open..]
                        .find(']')
                        .map(|c| open + c)
                        .ok_or_else(|| format!("'{item}': '[' without ']'"))?;
                    let prefix = &rest[..open];
                    let values = expand_ranges(&rest[open + 1..close])
                        .map_err(|e| format!("'{item}': {e}"))?;
                    if names.len().saturating_mul(values.len()) + out.len() > MAX_HOSTS {
                        return Err(format!("more than {MAX_HOSTS} hosts"));
                    }
                    names = names
                        .iter()
                        .flat_map(|n| values.iter().map(move |v| format!("{n}{prefix}{v}")))
                        .collect();
                    rest = &rest[close + 1..];
                }
            }
        }
        out.extend(names);
    }
    if out.is_empty() {
        return Err("no host".into());
    }
    Ok(out)
}

fn split_top_level(list: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("']' without '[' at byte {i}"))?
            }
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("'[' without ']'".into());
    }
    parts.push(&list[start..]);
    Ok(parts)
}

/// `1-4,7,09-11` → the numbers as text, keeping the width of a zero-padded bound.
fn expand_ranges(ranges: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for part in ranges.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let number = |s: &str| {
            s.parse::<u64>()
                .map_err(|_| format!("'{part}' is not a number or a range"))
        };
        let (a, b) = (number(lo)?, number(hi)?);
        if b < a {
            return Err(format!("range '{part}' runs backwards"));
        }
        if b - a >= MAX_HOSTS as u64 || out.len() + (b - a) as usize >= MAX_HOSTS {
            return Err(format!("range '{part}' names more than {MAX_HOSTS} hosts"));
        }
        let width = if lo.len() > 1 && lo.starts_with('0') {
            lo.len()
        } else {
            0
        };
        out.extend((a..=b).map(|v| format!("{v:0width$}")));
    }
    Ok(out)
}

/// Expands a Slurm count list: `72(x2),36` → `[72, 72, 36]`, which must have `hosts`
/// entries.
pub fn expand_counts(list: &str, hosts: usize) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim) {
        let (count, times) = match part.split_once("(x") {
            Some((c, t)) => (c, t.strip_suffix(')').ok_or("'(x' without ')'")?),
            None => (part, "1"),
        };
        let count: usize = count
            .parse()
            .map_err(|_| format!("'{part}': not a CPU count"))?;
        let times: usize = times
            .parse()
            .map_err(|_| format!("'{part}': not a repeat count"))?;
        if out.len().saturating_add(times) > hosts {
            return Err(format!("more counts than the {hosts} hosts"));
        }
        out.extend(std::iter::repeat_n(count, times));
    }
    if out.len() != hosts {
        return Err(format!("{} counts for {hosts} hosts", out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostlists_expand_like_slurm() {
        assert_eq!(expand_hostlist("a,b").unwrap(), ["a", "b"]);
        assert_eq!(expand_hostlist("n[08-10]").unwrap(), ["n08", "n09", "n10"]);
        assert_eq!(
            expand_hostlist("r[1-2]-n[1,3],x").unwrap(),
            ["r1-n1", "r1-n3", "r2-n1", "r2-n3", "x"]
        );
        for bad in ["n[1-", "n[3-1]", "n[a]", "n]1[", "", "n[0-99999999]"] {
            assert!(expand_hostlist(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn slurm_cpu_counts_repeat() {
        let a = Allocation::from_slurm("n[1-3]", Some("8(x2),4")).unwrap();
        let slots: Vec<usize> = a.hosts().iter().map(|h| h.slots).collect();
        assert_eq!(slots, [8, 8, 4]);
        assert!(Allocation::from_slurm("n[1-3]", Some("8(x2)")).is_err());
        assert!(Allocation::from_slurm("n[1-3]", Some("8(x4)")).is_err());
        let e = Allocation::from_slurm("n[1-3", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("SLURM_JOB_NODELIST") && e.contains("n[1-3"),
            "{e}"
        );
    }

    #[test]
    fn batch_environment_is_read_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let nodefile = dir.path().join("nodes");
        std::fs::write(&nodefile, "b\na\nb\n").unwrap();
        let path = nodefile.display().to_string();
        let pbs = |k: &str| (k == "PBS_NODEFILE").then(|| path.clone());
        let a = Allocation::from_batch_environment(pbs).unwrap().unwrap();
        assert_eq!(
            a.hosts(),
            [
                Host {
                    name: "b".into(),
                    slots: 2
                },
                Host {
                    name: "a".into(),
                    slots: 1
                }
            ]
        );
        let slurm = |k: &str| match k {
            "SLURM_JOB_NODELIST" => Some("s[1-2]".to_owned()),
            "PBS_NODEFILE" => Some(path.clone()),
            _ => None,
        };
        let a = Allocation::from_batch_environment(slurm).unwrap().unwrap();
        assert_eq!(a.host_names(), ["s1", "s2"]);
        assert!(
            Allocation::from_batch_environment(|_| None)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn availability_outside_the_allocation_is_refused_with_its_line() {
        let alloc = Allocation::from_slurm("h[1-2]", None).unwrap();
        let ok = Availability::parse("h1 2\nh2 2\n", "av", AvailabilityFormat::Auto).unwrap();
        alloc.check(&ok, "av").unwrap();
        let bad = Availability::parse("h1 2\n# c\nh9 2\n", "av", AvailabilityFormat::Auto).unwrap();
        let e = alloc.check(&bad, "av").unwrap_err().to_string();
        assert!(e.starts_with("av:3: host 'h9'"), "{e}");
    }
}
