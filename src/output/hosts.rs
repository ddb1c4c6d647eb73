//! The host names `rankmig map` writes in its rankfiles, hostfiles and Slurm lists.

/// `--hosts` of `rankmig map` that cannot name the nodes.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// A name with a character a host name does not have.
    #[error("--hosts: {0:?} is not a valid host name (letters, digits, '-' and '.')")]
    NotAHostName(String),
    /// A name given twice.
    #[error("--hosts: {0:?} is named twice")]
    NamedTwice(String),
    /// Not one name per node.
    #[error("--hosts names {hosts} hosts but --nodes is {nodes}")]
    WrongCount {
        /// Names given.
        hosts: usize,
        /// Nodes of the tree.
        nodes: u32,
    },
}

/// The host name of each of `nodes` nodes: `hosts` (checked: one per node, each a host
/// name and named once, so it cannot add lines or fields to a rankfile or hostfile),
/// else `localhost` or `node0`..`nodeK-1` when `hosts` is empty.
pub fn node_names(hosts: &[String], nodes: u32) -> Result<Vec<String>, HostsError> {
    if hosts.is_empty() {
        return Ok(if nodes == 1 {
            vec!["localhost".to_owned()]
        } else {
            (0..nodes).map(|i| format!("node{i}")).collect()
        });
    }
    let mut seen = std::collections::HashSet::new();
    for host in hosts {
        if !crate::availability::is_hostname(host) {
            return Err(HostsError::NotAHostName(host.clone()));
        }
        if !seen.insert(host.as_str()) {
            return Err(HostsError::NamedTwice(host.clone()));
        }
    }
    if hosts.len() != nodes as usize {
        return Err(HostsError::WrongCount {
            hosts: hosts.len(),
            nodes,
        });
    }
    Ok(hosts.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn nodes_are_named_by_default_or_as_given() {
        assert_eq!(node_names(&[], 1).unwrap(), ["localhost"]);
        assert_eq!(node_names(&[], 3).unwrap(), ["node0", "node1", "node2"]);
        assert_eq!(node_names(&names(&["a", "b.x"]), 2).unwrap(), ["a", "b.x"]);
    }

    #[test]
    fn bad_names_are_refused_with_the_name() {
        let err = node_names(&names(&["a b", "c"]), 2).unwrap_err();
        assert!(
            matches!(err, HostsError::NotAHostName(ref h) if h == "a b"),
            "{err}"
        );
        let err = node_names(&names(&["a", "a"]), 2).unwrap_err();
        assert!(
            matches!(err, HostsError::NamedTwice(ref h) if h == "a"),
            "{err}"
        );
        let err = node_names(&names(&["a", "b"]), 3).unwrap_err();
        assert_eq!(err.to_string(), "--hosts names 2 hosts but --nodes is 3");
    }
}
