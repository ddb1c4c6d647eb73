//! `rankmig map`: one mapping of a matrix onto a tree of nodes, with its metrics and
//! the baselines', in the format asked for; with ranks of several cores, onto groups of
//! cores (`--cores-per-rank`).

use std::io::Write;
use std::time::Instant;

use rankmig::output::{MapReport, OutputError};
use rankmig::topology::{ClusterSlots, CpuSelectionError, Tree, leaves_on_cpus, parse_index_list};
use rankmig::treematch::metrics::evaluate;
use rankmig::treematch::{MapOptions, baselines, map};

use crate::cli::MapArgs;
use crate::cli_error::{CliError, link_costs, load_matrix};

/// `rankmig map`: maps, measures and writes the report.
pub fn run_map(args: &MapArgs) -> Result<(), CliError> {
    let matrix = load_matrix(&args.matrix)?;
    let node = (args.tree.topology).load_with(args.tree.leaves, args.tree.cache_levels())?;
    // Each node's tree cut into groups of C cores, then the nodes put together: a
    // group never crosses nodes. With C = 1 the tree is the cluster of cores.
    let slots = ClusterSlots::new(
        &node,
        args.tree.nodes as usize,
        args.cores_per_rank as usize,
    )?;
    let tree = slots.tree();
    let costs = link_costs(args.costs.as_deref(), tree)?;
    let allowed = allowed_slots(args, &node, &slots)?;
    let names = rankmig::output::node_names(&args.hosts, args.tree.nodes)?;
    let graph = matrix.symmetric();
    let options = MapOptions {
        oversubscribe: args.oversubscribe as usize,
        allowed: allowed.clone(),
        ..MapOptions::default()
    };
    let start = Instant::now();
    let mapping = map(&graph, tree, &options)?;
    let seconds = start.elapsed().as_secs_f64();
    let baselines = baselines::evaluated(
        &graph,
        tree,
        allowed.as_deref(),
        args.oversubscribe as usize,
        args.seed,
        &costs,
    )?;
    let cores_per_rank = slots.cores_per_rank();
    let slot_leaves = if cores_per_rank > 1 {
        (0..tree.leaf_count()).map(|s| slots.leaves_of(s)).collect()
    } else {
        Vec::new()
    };
    let report = MapReport {
        metrics: evaluate(&graph, tree, mapping.leaves(), &costs)?,
        mapping: mapping.leaves().to_vec(),
        leaves: tree.leaves().to_vec(),
        node_names: names,
        cores_per_rank,
        slot_leaves,
        baselines,
        seconds,
        tree: tree.describe_levels(),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    args.format.formatter().write(&report, &mut out)?;
    out.flush().map_err(OutputError::from)?;
    Ok(())
}

/// The slots (leaves of `slots.tree()`) `--allowed` (OS CPU numbers, on every node) or
/// `--allowed-leaves` (leaf indexes of the cluster of `node`) leave usable; `None` when
/// neither is given. With ranks of several cores, a slot is usable when every core of
/// its group is selected.
fn allowed_slots(
    args: &MapArgs,
    node: &Tree,
    slots: &ClusterSlots,
) -> Result<Option<Vec<usize>>, CliError> {
    if slots.cores_per_rank() == 1 {
        return allowed_leaves(args, slots.tree());
    }
    let Some(selected) = allowed_leaves(args, node)? else {
        return Ok(None);
    };
    let leaves = if args.allowed.is_some() {
        // The same CPUs on every node: the node's selected leaves, on each node.
        let per_node = node.leaf_count();
        (0..args.tree.nodes as usize)
            .flat_map(|n| selected.iter().map(move |&l| n * per_node + l))
            .collect()
    } else {
        selected
    };
    let usable = slots.slots_within(&leaves)?;
    if usable.is_empty() {
        return Err(CliError::NoWholeGroup {
            option: if args.allowed.is_some() {
                "--allowed"
            } else {
                "--allowed-leaves"
            },
            cores_per_rank: slots.cores_per_rank(),
        });
    }
    Ok(Some(usable))
}

/// The leaves `--allowed` (OS CPU numbers, on every node) or `--allowed-leaves` (leaf
/// indexes) leave usable; `None` when neither is given.
fn allowed_leaves(args: &MapArgs, tree: &Tree) -> Result<Option<Vec<usize>>, CliError> {
    let list = |option: &'static str, value: &str| {
        parse_index_list(value).map_err(|source| CliError::IndexList { option, source })
    };
    if let Some(value) = &args.allowed {
        let cpus = list("--allowed", value)?;
        let leaves = leaves_on_cpus(tree, &cpus).map_err(|source| CliError::AllowedCpus {
            value: value.clone(),
            hint: match source {
                CpuSelectionError::NoCpuNumbers => " (use --allowed-leaves)",
                CpuSelectionError::PartOfLeaf { .. } => " (--leaves pu)",
                CpuSelectionError::UnknownCpu { .. } => "",
            },
            source,
        })?;
        return Ok(Some(leaves));
    }
    args.allowed_leaves
        .as_deref()
        .map(|value| list("--allowed-leaves", value))
        .transpose()
}
