//! Command-line definitions (clap).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use rankmig::availability::AvailabilityFormat;
use rankmig::contention::ContentionMode;
use rankmig::matrix::MatrixFormat;
use rankmig::output::MapFormat;
use rankmig::planner::Step2;
use rankmig::supervisor::run_settings::{RmsRequest, RunSettings};
use rankmig::topology::{CacheLevels, LeafKind, TopologySpec};

/// Move MPI ranks between nodes, placed by TreeMatch over the hwloc tree.
///
/// The examples in the help of each command use files of the rankmig repository: run
/// them from its root directory.
#[derive(Debug, Parser)]
#[command(name = "rankmig", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Print only warnings and errors (not the start and reconfiguration lines of `run`).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more: `-v` debug messages, `-vv` everything. `RUST_LOG` overrides both.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Map the ranks of a communication matrix onto a topology with TreeMatch.
    ///
    /// Example: rankmig map --matrix tests/data/matrices/lu.W.16.mat --topology xml:tests/data/topologies/32em64t-2n8c2t-pci-noio.xml --nodes 4
    ///
    /// Example (K = 4 nodes of C = 4 cores; hwloc refuses a synthetic description whose last level is not pu, such as synthetic:core:4): rankmig map --matrix tests/data/matrices/lu.W.16.mat --topology synthetic:"core:4 pu:1" --nodes 4
    ///
    /// Example (ranks of 3 cores, MPI+OpenMP, each on one L3 cache of two 24-core AMD EPYC 7451, as an Open MPI rankfile): rankmig map --matrix tests/data/matrices/lu.W.16.mat --topology xml:tests/data/topologies/AMD-17h-Zen-2xEpyc-7451.xml --cores-per-rank 3 --format rankfile
    Map(MapArgs),
    /// Evaluate any mapping (e.g. another tool's output) on a matrix and topology.
    ///
    /// Example: rankmig cost --matrix tests/data/matrices/himeno.M.2x2x4.16.mat --topology tleaf:tests/scotch/2x8.tgt --mapping tests/scotch/grid4x4-on-2x8.map
    Cost(CostArgs),
    /// Initial placement of a job (N = matrix order ranks) over the offered cores.
    ///
    /// Example: rankmig place --availability tests/data/scenario/step0.avail --matrix tests/data/matrices/cg.W.64.mat --node-topology synthetic:"pack:2 core:8 pu:1"
    Place(PlaceArgs),
    /// Plan a reconfiguration: which ranks leave, where they land (the paper's two steps).
    ///
    /// Example: rankmig plan --availability tests/data/scenario/step1.avail --placement tests/data/scenario/initial_placement.txt --matrix tests/data/matrices/cg.W.64.mat --node-topology synthetic:"pack:2 core:8 pu:1"
    Plan(PlanArgs),
    /// Replay availability files one after the other, carrying the placement forward.
    ///
    /// Example: rankmig simulate --matrix tests/data/matrices/cg.W.64.mat --placement tests/data/scenario/initial_placement.txt --node-topology synthetic:"pack:2 core:8 pu:1" tests/data/scenario/step1.avail tests/data/scenario/step2.avail
    Simulate(SimulateArgs),
    /// Run an MPI program that may migrate: initial placement, mpirun, records.
    ///
    /// Example (after cargo build --release --example jacobi): rankmig run -n 8 --availability availability/4x8.avail -- target/release/examples/jacobi --size 256 --iters 600
    Run(Box<RunArgs>),
    /// Summarise a run directory: a table per reconfiguration and an SVG chart.
    ///
    /// The chart shows the time of each iteration of the slowest rank (compute,
    /// scheduling, migration stacked, log scale), the reconfigurations, and the nodes in
    /// use (right-hand axis). Fails if RUN_DIR does not exist or holds no run record.
    ///
    /// Example (after the run example): rankmig report rankmig-run
    Report(ReportArgs),
    /// List the checkpoint epochs of a directory, job directory by job directory
    /// (DIR/job-NAME): complete or not, per-rank sizes and checksums. With --verify,
    /// recompute every checksum and exit 1 on corruption.
    ///
    /// Example (after the run example): rankmig inspect rankmig-run/ckpt --verify
    Inspect(InspectArgs),
    /// Run COMMAND as if on host HOST of an emulated cluster: in a new UTS namespace
    /// named HOST. Open MPI calls it as its rsh agent under `run --emulated-cluster`.
    ///
    /// Example: rankmig emulated-host h1 hostname
    EmulatedHost(EmulatedHostArgs),
    /// Bind this process to its CPUs, then run PROGRAM in its place (same process).
    /// `rankmig run --cores-per-rank C` (C > 1) starts each rank through it: FILE has
    /// one `INDEX CPUS` line per process of the launch (CPUS such as `0-1` or `-` for
    /// unbound), and the process takes the line of its rank in the launch
    /// (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID), so that the
    /// program's OpenMP runtime sees those CPUs when it loads. A line that cannot be
    /// read or applied is reported and the program runs unbound; RANKMIG_BIND=off
    /// leaves it unbound.
    ///
    /// Example: OMPI_COMM_WORLD_RANK=0 rankmig bind-exec --cpus-file cpus.txt -- ./app
    BindExec(BindExecArgs),
    /// Print the levels, arities and leaf count of a topology.
    ///
    /// Example: rankmig topology --topology xml:tests/data/topologies/32em64t-2n8c2t-pci-noio.xml --nodes 4
    Topology(TopologyArgs),
    /// Print the completion script of a shell for rankmig (commands, options, values).
    ///
    /// For bash: rankmig completions bash > ~/.local/share/bash-completion/completions/rankmig
    ///
    /// Example: rankmig completions bash
    Completions(CompletionsArgs),
    /// Print each setting of the configuration files with its effective value for
    /// `rankmig run` and where that value comes from (environment, user file, site file
    /// or default). The user file is $RANKMIG_CONFIG, else
    /// $XDG_CONFIG_HOME/rankmig/config.toml or ~/.config/rankmig/config.toml; the site
    /// file is PREFIX/etc/rankmig.toml beside this rankmig. A flag of `rankmig run` wins over all of them.
    ///
    /// Example: rankmig config
    Config(ConfigArgs),
    /// Print the man page of rankmig (roff, generated from this help) on standard output,
    /// or with --dir write rankmig.1 and one page per command (rankmig-run.1, ...) there.
    ///
    /// Example: rankmig man
    Man(ManArgs),
}

/// `rankmig completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `rankmig config` (no options).
#[derive(Debug, Args)]
pub struct ConfigArgs {}

/// `rankmig man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write the pages into this directory (created if missing) instead of printing
    /// rankmig.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Where the tree comes from (shared by several commands).
#[derive(Debug, Args)]
pub struct TreeArgs {
    /// The machine: `live` (this machine, via hwloc), `xml:FILE` (an `lstopo FILE.xml`
    /// export), `synthetic:STRING` (an hwloc synthetic description, e.g.
    /// `synthetic:"pack:2 core:8 pu:1"`) or `tleaf:FILE` (a Scotch `tleaf` target; its
    /// leaves are numbered as Scotch numbers its terminals, its link costs are not used).
    #[arg(long, short = 't', value_parser = parse_topology, default_value = "live")]
    pub topology: TopologySpec,
    /// Number of identical nodes under one root (a cluster of K such machines), 1 to
    /// 1048576; the whole cluster has at most 1048576 leaves.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    pub nodes: u32,
    /// What the leaves are: `core` (physical cores) or `pu` (hardware threads).
    #[arg(long, value_enum, default_value_t = LeafKind::Core)]
    pub leaves: LeafKind,
    /// Drop the shared CPU caches from the tree. By default a cache shared by two or
    /// more cores (or by groups of cores), e.g. an L3 per AMD CCX or a 2-core L2 tile,
    /// is a level of the tree (`L3Cache`, `L2Cache`), so coupled ranks are kept inside
    /// it; a cache of a single core is never a level. Not used with `tleaf:` targets.
    #[arg(long)]
    pub no_shared_caches: bool,
}

impl TreeArgs {
    /// The cache levels the tree keeps.
    pub fn cache_levels(&self) -> CacheLevels {
        cache_levels(self.no_shared_caches)
    }
}

/// `CacheLevels::Dropped` when `--no-shared-caches` was given.
fn cache_levels(no_shared_caches: bool) -> CacheLevels {
    CacheLevels::unless_dropped(no_shared_caches)
}

/// Where the matrix comes from.
#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The communication matrix: a TreeMatch text file (N lines of N numbers), an edge
    /// list (`SRC DST BYTES` lines) or a directory of Open MPI monitoring dumps
    /// (`NAME.RANK.prof`). Example: --matrix tests/data/matrices/lu.W.16.mat
    #[arg(long, short = 'm')]
    pub matrix: PathBuf,
    /// Format of --matrix (auto: directory = prof, 3-field lines = edges, else dense).
    #[arg(long, value_enum, default_value_t = MatrixFormat::Auto)]
    pub matrix_format: MatrixFormat,
}

/// `rankmig map`.
#[derive(Debug, Args)]
pub struct MapArgs {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Allow up to F ranks per leaf (needed when there are more ranks than leaves).
    /// Example: --oversubscribe 2
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub oversubscribe: u32,
    /// Only these CPUs may be used: OS CPU numbers, as `taskset -c`, Slurm and
    /// `Cpus_allowed_list` in /proc/PID/status number them, the same on every node. With
    /// `--leaves core` a core is used when all of its hardware threads are listed (a list
    /// naming only some of a core's threads is refused). Example: --allowed 0-7,16-23
    #[arg(long, value_name = "CPUS")]
    pub allowed: Option<String>,
    /// Only these leaves may be used: depth-first leaf indexes over the whole tree, as
    /// the text output and `rankmig cost --mapping` number them (for trees without OS
    /// CPU numbers, such as tleaf targets); with --cores-per-rank above 1, still the
    /// leaves of the tree of cores, as the text output numbers them without it.
    /// Example: --allowed-leaves 0-7,16-23
    #[arg(long, value_name = "LEAVES", conflicts_with = "allowed")]
    pub allowed_leaves: Option<String>,
    /// Cores (hardware threads with --leaves pu) each rank runs on (a rank with C
    /// threads, MPI+OpenMP), 1 to 4096. Each node's tree is cut into groups of C
    /// leaves, each inside the smallest subtree holding C leaves (a shared cache, an
    /// hwloc group, a package: the levels of `rankmig topology`), the leaves such
    /// subtrees leave over grouped at the level above; groups never cross nodes. Ranks
    /// are mapped onto the groups as onto cores, communicating ranks close together. A
    /// node with fewer than C leaves is an error. --allowed and --allowed-leaves still
    /// select leaves (cores): a group is used when all of its leaves are selected. Each
    /// output gives a rank all the cores of its group: LEAF is then a group, and the
    /// text lines go on with cores= and cpus=. Example: --cores-per-rank 4
    #[arg(long, value_name = "C", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cores_per_rank: u32,
    /// Link cost per tree level, top level first, for the sum-com metric; one value per
    /// level below the root (`rankmig topology` lists the levels; with --cores-per-rank
    /// above 1, the levels of the `# tree:` line of the text output). Default: powers of
    /// ten, each level ten times cheaper than the one above: 100,10,1 for
    /// node/package/core, 1000,100,10,1 when a shared L3 is a level
    /// (node/package/L3/core).
    #[arg(long)]
    pub costs: Option<String>,
    /// Host names of the nodes, for the rankfile, Slurm and JSON outputs: one per node,
    /// each named once, letters, digits, '-' and '.' only. Default: localhost for one
    /// node, node0..nodeK-1 for a cluster. Example: --hosts n01,n02,n03,n04
    #[arg(long, value_delimiter = ',')]
    pub hosts: Vec<String>,
    /// Seed of the random baseline.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output: `text` (RANK LEAF lines, LEAF a depth-first leaf index over the whole tree,
    /// then # metrics); `json` (version 1: per rank its leaf, host, node index, core
    /// (hwloc logical index in the node) and OS CPU numbers, plus the metrics);
    /// `rankfile` (Open MPI: `rank R=HOST slot=CORE`, CORE the hwloc logical core index
    /// in the host, also with --leaves pu); `slurm` (OS CPU numbers: a
    /// --cpu-bind=map_cpu: list for one node; for several, a SLURM_HOSTFILE for
    /// --distribution=arbitrary with each host's map_cpu list in # comments). With
    /// --cores-per-rank C above 1: text lines `RANK LEAF cores=LIST cpus=LIST`, json
    /// `cores` per rank (and `cpus` of all of them), rankfile `slot=LIST` (`slot=0-3`),
    /// slurm `mask_cpu:` with one hexadecimal CPU mask per rank instead of `map_cpu:`.
    #[arg(long, short = 'f', value_enum, default_value_t = MapFormat::Text)]
    pub format: MapFormat,
}

/// `rankmig cost`.
#[derive(Debug, Args)]
pub struct CostArgs {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    #[command(flatten)]
    pub tree: TreeArgs,
    /// The mapping to evaluate: one leaf per line (line i = rank i), `RANK LEAF` lines,
    /// or the output of Scotch's `scotch_gmap` (a vertex count, then `VERTEX PART`
    /// lines). Leaves are numbered 0.. in tree order (the leaf indexes `rankmig map` prints).
    #[arg(long)]
    pub mapping: PathBuf,
    /// Link cost per tree level, top first (see `rankmig map --help`).
    #[arg(long)]
    pub costs: Option<String>,
}

/// `rankmig topology`.
#[derive(Debug, Args)]
pub struct TopologyArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
}

fn parse_topology(s: &str) -> Result<TopologySpec, String> {
    s.parse()
        .map_err(|e: rankmig::topology::TopologyError| e.to_string())
}

/// The availability file and the node topology (shared by place, plan and simulate).
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// Topology of one node (all nodes alike): `live`, `xml:FILE` or `synthetic:STRING`.
    /// Cores of the placement and of `cpus=` lists are leaf indexes of this tree
    /// (depth-first, as hwloc's logical indexes), not OS CPU numbers.
    #[arg(long, value_parser = parse_topology, default_value = "live")]
    pub node_topology: TopologySpec,
    /// What the node's leaves are: `core` or `pu`.
    #[arg(long, value_enum, default_value_t = LeafKind::Core)]
    pub leaves: LeafKind,
    /// Drop the shared CPU caches from the node's tree (by default a cache shared by
    /// two or more cores is a level, as in `rankmig map --help`).
    #[arg(long)]
    pub no_shared_caches: bool,
    /// Form of the availability file(s): auto, native (`NAME CORES [cpus=LIST]`),
    /// hostfile (`NAME slots=N`), colon (`NAME:N`) or nodefile (one name per slot).
    #[arg(long, value_enum, default_value_t = AvailabilityFormat::Auto)]
    pub availability_format: AvailabilityFormat,
    /// Cores each rank runs on, as `rankmig run --cores-per-rank`: a node offering N
    /// cores holds floor(N/C) ranks, and a placement's CORE is then a group of C cores
    /// of the node's tree (group i: the i-th group of C cores inside the smallest
    /// subtree holding C), not a core.
    #[arg(long, value_name = "C", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cores_per_rank: u32,
}

/// How the planner lands the ranks that leave (plan and simulate; `place` has no
/// leavers).
#[derive(Debug, Args)]
pub struct StepArgs {
    /// Step 2 variant: `paper` (TreeMatch on the leavers only) or `residents` (then
    /// also weigh each leaver's traffic with the ranks already on each target node).
    #[arg(long, value_enum, default_value_t = Step2::default())]
    pub step2: Step2,
}

impl NodeArgs {
    /// The cache levels the node's tree keeps.
    pub fn cache_levels(&self) -> CacheLevels {
        cache_levels(self.no_shared_caches)
    }

    /// The ranks' cores, for the planner.
    pub fn rank_slots(&self) -> rankmig::planner::RankSlots {
        rankmig::planner::RankSlots::new(self.cores_per_rank as usize)
    }
}

/// `rankmig place`.
#[derive(Debug, Args)]
pub struct PlaceArgs {
    /// The availability file: `NAME CORES` lines. Example: --availability availability/4x8.avail
    #[arg(long, short = 'a')]
    pub availability: PathBuf,
    #[command(flatten)]
    pub matrix: MatrixArgs,
    #[command(flatten)]
    pub nodes: NodeArgs,
    /// Output: `text` (RANK NODE CORE lines, CORE a leaf index of the node tree),
    /// `rankfile` (Open MPI: slot= the hwloc logical index of the core, also with
    /// --leaves pu) or `json`.
    #[arg(long, short = 'f', value_enum, default_value_t = PlaceFormat::Text)]
    pub format: PlaceFormat,
}

/// Output formats of `rankmig place`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlaceFormat {
    /// `RANK NODE CORE` lines (a placement file).
    Text,
    /// An Open MPI rankfile.
    Rankfile,
    /// JSON.
    Json,
}

/// `rankmig plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The new availability file.
    #[arg(long, short = 'a')]
    pub availability: PathBuf,
    /// The current placement: `RANK NODE CORE` lines.
    #[arg(long, short = 'p')]
    pub placement: PathBuf,
    #[command(flatten)]
    pub matrix: MatrixArgs,
    #[command(flatten)]
    pub nodes: NodeArgs,
    #[command(flatten)]
    pub steps: StepArgs,
    /// Output: `text` (one line per move, then # lines) or `json` (the plan).
    #[arg(long, short = 'f', value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
}

/// Output formats of `rankmig plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanFormat {
    /// Moves then `#` summary lines.
    Text,
    /// The plan as JSON.
    Json,
}

/// `rankmig simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The placement before the first step: `RANK NODE CORE` lines.
    #[arg(long, short = 'p')]
    pub placement: PathBuf,
    #[command(flatten)]
    pub matrix: MatrixArgs,
    #[command(flatten)]
    pub nodes: NodeArgs,
    #[command(flatten)]
    pub step: StepArgs,
    /// Output: `text` (a table), `csv` or `json`.
    #[arg(long, short = 'f', value_enum, default_value_t = SimulateFormat::Text)]
    pub format: SimulateFormat,
    /// The availability files, in order.
    #[arg(required = true)]
    pub steps: Vec<PathBuf>,
}

/// Output formats of `rankmig simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimulateFormat {
    /// A table.
    Text,
    /// One CSV row per step.
    Csv,
    /// JSON.
    Json,
}

/// `rankmig inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The checkpoint directory (RANKMIG_CKPT_DIR of the job), or one job directory in
    /// it.
    pub dir: PathBuf,
    /// Read every payload and recompute its checksum; exit 1 if a file of a complete
    /// epoch is corrupt or missing.
    #[arg(long)]
    pub verify: bool,
}

/// `rankmig run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Number of ranks (kept for the whole run), 1 to 1048576.
    #[arg(
        short = 'n',
        long,
        required_unless_present = "restart",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 20)
    )]
    pub ranks: Option<usize>,
    /// The availability file the job watches (`NAME CORES` lines); edit it while the
    /// job runs to move ranks. With an allocation (--hostfile, Slurm, PBS) the names
    /// are hosts of the allocation and a name outside it is refused; without one they
    /// are logical nodes of this host.
    /// With --rms, optional: it then caps what the resource manager offers, node by
    /// node. One run per file: a second run on it is refused while the first runs
    /// (lock file .NAME.rankmig-lock beside it).
    #[arg(long, short = 'a', required_unless_present_any = ["restart", "rms"])]
    pub availability: Option<PathBuf>,
    /// Follow a resource manager instead of an edited file: `slurm`, inside a Slurm job
    /// (salloc, sbatch), whose allocation is the job's. About every --check-interval the
    /// supervisor asks Slurm (sinfo, scontrol) about the job's nodes: each offers the
    /// CPUs the job has there, or none when it is drained, draining, down or failing,
    /// or in a maintenance reservation (flags=maint) that starts within --rms-lead. The
    /// result is written to RUN_DIR/rms-availability in one rename and the ranks follow
    /// it as they follow an edited file; each change is printed with the node and
    /// Slurm's reason. A Slurm command that fails or hangs (15 s) is reported and the
    /// job keeps its placement.
    #[arg(long, value_enum, value_name = "MANAGER", conflicts_with_all = ["restart", "hostfile"])]
    pub rms: Option<rankmig::rms::ResourceManager>,
    /// With --rms: empty a node whose maintenance reservation starts within SECONDS.
    #[arg(long, value_name = "SECONDS", default_value_t = rankmig::rms::DEFAULT_LEAD_SECONDS, requires = "rms",
          env = "RANKMIG_RMS_LEAD")]
    pub rms_lead: u64,
    /// With --rms: once no rank runs on a node Slurm wants back (drained, down, failing
    /// or under a maintenance reservation), release it from the job's allocation
    /// (`scontrol update JobId=... NodeList=...`) so Slurm can use it; this run never
    /// uses it again. Slurm ends the launcher's daemon there, which would end the
    /// launch: the job is stopped, the node released, and the job launched again from
    /// its newest complete checkpoint. Slurm 22.05 without accounting storage allows
    /// one release per job: a refused one is reported and not tried again.
    #[arg(long, requires = "rms")]
    pub rms_release: bool,
    /// The hosts the job may ever use (Open MPI hostfile `NAME slots=N`, a node file,
    /// `NAME:N`, or `NAME CORES` lines). Default: the Slurm (`SLURM_JOB_NODELIST`) or
    /// PBS (`PBS_NODEFILE`) allocation this runs in, else this host alone with logical
    /// nodes.
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Run every host of the allocation as a UTS namespace of this machine, reached by
    /// the MPI launcher through `rankmig emulated-host` (needs root or user namespaces).
    #[arg(long)]
    pub emulated_cluster: bool,
    /// The MPI implementation that launches the job: `openmpi4` (Open MPI 4.1 and older,
    /// `mpirun`), `openmpi5` (Open MPI 5, `mpirun`) or `mpich` (MPICH and MPIs that
    /// launch with hydra, `mpiexec`). Default: found from `mpirun --version`, else
    /// `mpiexec --version`, of the launcher first on PATH. The program must be built
    /// against the same MPI.
    #[arg(long, value_name = "IMPLEMENTATION", value_parser = parse_mpi, conflicts_with = "restart")]
    pub mpi: Option<rankmig::launcher::MpiImplementation>,
    /// What starts the ranks: `mpirun` (the MPI's own launcher, mpirun or mpiexec) or
    /// `srun` (one Slurm job step, inside a Slurm allocation: no mpirun, mpiexec,
    /// hydra or Open MPI daemon; the ranks bind themselves, `--cpu-bind=none`; a
    /// migration's replacements start as a new step that joins the job with MPICH and a
    /// program initialised with MPI_THREAD_MULTIPLE, else the job is relaunched from a
    /// checkpoint as a new step). Default: the MPI's
    /// own, or srun inside a Slurm allocation when that launcher is not on PATH; the
    /// start line says which.
    #[arg(
        long,
        value_enum,
        value_name = "LAUNCHER",
        conflicts_with = "restart",
        env = "RANKMIG_LAUNCHER"
    )]
    pub launcher: Option<rankmig::launcher::LaunchMethod>,
    /// With srun: its process management interface, `srun --mpi=TYPE` (default pmi2
    /// for MPICH, pmix for Open MPI); it must be one `srun --mpi=list` prints.
    #[arg(long, value_name = "TYPE", conflicts_with = "restart")]
    pub srun_mpi: Option<String>,
    /// Let the availability file name hosts outside the allocation (a node lent to the
    /// job): ranks are spawned there (Open MPI 5: the job is relaunched from a
    /// checkpoint with them there, as its spawns across hosts crash a daemon), and the
    /// host is probed and recorded like the others. MPICH and Open MPI 5 only; refused
    /// with Open MPI 4.1. Without it such an edit is refused and the job stays where it
    /// is.
    #[arg(long, conflicts_with = "restart")]
    pub allow_new_hosts: bool,
    /// The tree of every node for planning: `live`, `xml:FILE` or `synthetic:STRING`.
    /// Default with an allocation: live trees (this machine's for the initial
    /// placement; for later plans each host's own, gathered from its ranks, and rank 0's
    /// host's for hosts without ranks); without: a flat node as large as the largest
    /// offer.
    #[arg(long, value_name = "TOPOLOGY")]
    pub node_topology: Option<String>,
    /// Drop the shared CPU caches from the node trees read from hwloc (by default a
    /// cache shared by two or more cores is a level, as in `rankmig map --help`).
    #[arg(long, conflicts_with = "restart")]
    pub no_shared_caches: bool,
    /// Cores each rank runs on (a rank with C threads, MPI+OpenMP). A node offering N
    /// cores in the availability file holds floor(N/C) ranks; each rank is placed on a
    /// group of C cores inside the smallest part of the node's tree that holds C (a
    /// NUMA node, a package; cores those leave over are grouped at the level above);
    /// with C > 1 the launcher starts each rank through `rankmig bind-exec`, which binds
    /// it to its cores before the program starts, so that its OpenMP runtime sees them. Default: SLURM_CPUS_PER_TASK inside a Slurm job, else
    /// OMP_NUM_THREADS when set, else 1; the start line says which value was taken
    /// and from where.
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u32).range(1..=4096),
          conflicts_with = "restart", env = "RANKMIG_CORES_PER_RANK")]
    pub cores_per_rank: Option<u32>,
    /// Pass ARG to the launcher, mpirun or mpiexec (repeatable; also
    /// RANKMIG_MPIRUN_ARGS, whitespace separated). The environment reaches the launcher
    /// as it is (OMPI_MCA_*, PRTE_MCA_*, MPIR_CVAR_*, HYDRA_* variables among it).
    #[arg(long = "mpirun-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub mpirun_args: Vec<String>,
    /// When the job fails (a rank killed by a signal or exiting with an error code, a
    /// host lost), restart it from the newest complete checkpoint, at most N times. The
    /// rank that died is named with its host, how it ended and its iteration; every host
    /// is probed (it must run `true` through RANKMIG_PROBE_AGENT, else the launcher's
    /// agent variable: OMPI_MCA_plm_rsh_agent, PRTE_MCA_plm_ssh_agent or
    /// HYDRA_LAUNCHER_EXEC, else ssh): the job restarts on the same hosts when all
    /// answer, without those that do not (lost). Not restarted: a job stopped by a
    /// signal to rankmig run, a job with no complete checkpoint, and the same rank
    /// ending the same way at the same iteration again after a restart (the
    /// application's own failure). The job's first checkpoint is then taken 2 s after
    /// it starts (RANKMIG_CKPT_FIRST_SECONDS, unless set), not one interval later.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        env = "RANKMIG_AUTO_RESTART"
    )]
    pub auto_restart: u32,
    /// Communication matrix used for the initial placement and for planning (default:
    /// none, the planner then only minimises moves).
    #[arg(long, short = 'm')]
    pub matrix: Option<PathBuf>,
    /// Format of --matrix: `auto` refuses a file that reads both as a small dense
    /// matrix and as an edge list; `dense`, `edges` or `prof` say which it is. With
    /// `edges` the ranks write RUN_DIR/matrix.mat as an edge list too (else in
    /// TreeMatch's format).
    #[arg(long, value_enum, default_value_t = MatrixFormat::Auto, requires = "matrix")]
    pub matrix_format: MatrixFormat,
    /// Checkpoint directory (default: RUN_DIR/ckpt). With several hosts it must be on
    /// a file system every host sees, like the run directory.
    #[arg(long, env = "RANKMIG_CKPT_DIR")]
    pub ckpt_dir: Option<PathBuf>,
    /// Node-local checkpoint directory on every host (a RAM disk such as
    /// /dev/shm/rankmig-USER, or a local SSD). Each save is written there first and,
    /// when the job spans two hosts or more, a copy of each rank's file is kept by a rank
    /// on another host (sent inside the save call); every K-th epoch
    /// (--ckpt-flush-every) is copied to the checkpoint directory in the background. `%h`
    /// in DIR stands for the host name; with --emulated-cluster, DIR/HOST is used when
    /// DIR has no `%h`. A restart reads the newest epoch the node-local files and partner
    /// copies hold whole, unless the checkpoint directory holds a newer one.
    #[arg(long, value_name = "DIR", env = "RANKMIG_CKPT_LOCAL")]
    pub ckpt_local: Option<PathBuf>,
    /// With --ckpt-local: copy the epochs whose number is a multiple of K to the
    /// checkpoint directory (--ckpt-dir), in the background.
    #[arg(long, value_name = "K", default_value_t = rankmig::checkpoint::config::DEFAULT_FLUSH_EVERY,
          value_parser = clap::value_parser!(u64).range(1..), env = "RANKMIG_CKPT_FLUSH_EVERY",
          requires = "ckpt_local")]
    pub ckpt_flush_every: u64,
    /// Run directory: placements, plans, per-iteration times (default: rankmig-run).
    #[arg(long, default_value = "rankmig-run")]
    pub run_dir: PathBuf,
    /// Look at the availability file about every SECONDS of wall time (default). A check
    /// is collective; the ranks agree at each check on how many `checkpoint!` calls make
    /// that time, so short iterations are not slowed by checks.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, env = "RANKMIG_CHECK_INTERVAL",
          value_parser = parse_check_interval, conflicts_with = "check_every")]
    pub check_interval: f64,
    /// Act on an edit of the availability file once its content has stayed the same
    /// for SECONDS (0 to 3600), so a file written in several steps gives one
    /// reconfiguration. 0 acts at the first check that sees the edit.
    #[arg(long, value_name = "SECONDS", default_value_t = 3.0, value_parser = parse_settle,
          env = "RANKMIG_SETTLE")]
    pub settle: f64,
    /// Stop the job and launch it again if a migration's spawn has not completed after
    /// SECONDS (0 to one day; 0 = never). Unless 0, every migration first commits a
    /// checkpoint of all ranks, and the job is launched again from it, placed for the
    /// current availability. Open MPI 4.1 with PMIx 4 can leave a spawn hanging for
    /// ever; a spawn of a few processes takes 0.1 to 2 s on one host. With MPICH, the
    /// launch `rankmig run` starts for a migration's replacements is watched the same
    /// way, until they are ready to connect.
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0, value_parser = parse_spawn_timeout,
          env = "RANKMIG_SPAWN_TIMEOUT")]
    pub spawn_timeout: f64,
    /// Stop the job and launch it again from its newest complete checkpoint when a rank
    /// has recorded no iteration for SECONDS (0 = never), naming the ranks and hosts
    /// that stopped; recorded in RUN_DIR/stalls.txt. After a migration this catches a
    /// code that keeps a communicator derived from the old one, or makes a collective
    /// the new processes do not make. Default: the largest of 60 s, 20 times the
    /// slowest iteration so far and 3 times the longest gap between two records of a
    /// rank.
    #[arg(long, value_name = "SECONDS", value_parser = parse_stall_timeout, conflicts_with = "restart",
          env = "RANKMIG_STALL_TIMEOUT")]
    pub stall_timeout: Option<f64>,
    /// Watch how long the ranks wait for a CPU and move ranks off a node where
    /// something else takes their CPUs (see the manual, docs/contention.md). Alone or
    /// `=act`: leaves the cores of the ranks that waited out of their node's offer for
    /// planning (never in the availability file) and migrates those ranks; `=report`:
    /// records and warns only. Off by default.
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true,
          default_missing_value = "act", value_parser = parse_contention_mode,
          env = "RANKMIG_CONTENTION_WATCH")]
    pub contention_watch: Option<ContentionMode>,
    /// A node is contended when one of its ranks waited for a CPU more than this share
    /// of the window (0.3 or 30%) beyond what the job's least-waiting rank waited; the
    /// cores left are taken again once they are busy less than half of it.
    #[arg(long, value_name = "SHARE", default_value_t = rankmig::contention::DEFAULT_THRESHOLD,
          value_parser = rankmig::contention::parse_threshold, env = "RANKMIG_CONTENTION_THRESHOLD")]
    pub contention_threshold: f64,
    /// The contention watch adds waits up over SECONDS and decides once per window (at
    /// most one move per window).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_window,
          env = "RANKMIG_CONTENTION_WINDOW")]
    pub contention_window: f64,
    /// Cores left for contention are not used again for SECONDS, and after that only
    /// once their CPUs measured quiet over a window (busy under half the threshold).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = parse_cooldown,
          env = "RANKMIG_CONTENTION_COOLDOWN")]
    pub contention_cooldown: f64,
    /// Look at the availability file every N `checkpoint!` calls instead of by time.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub check_every: Option<u64>,
    /// Restart the run of this run directory from its newest complete checkpoint, with
    /// a placement computed for the current availability.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["ranks", "program"])]
    pub restart: Option<PathBuf>,
    /// Replace the records of an earlier run in --run-dir (without it, such a directory
    /// is refused). Only rankmig's own record files are removed; the checkpoint
    /// directory is left as it is.
    #[arg(long, conflicts_with = "restart")]
    pub force: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true)]
    pub program: Vec<String>,
}

impl RunArgs {
    /// The settings of a new run these arguments ask for (not `--restart`), with
    /// `env`, the variables the configuration files give the ranks.
    pub fn settings(&self, env: Vec<(String, String)>) -> RunSettings {
        RunSettings {
            ranks: self.ranks.unwrap_or(0),
            availability: self.availability.clone(),
            rms: self.rms.map(|manager| RmsRequest {
                manager,
                lead_seconds: self.rms_lead,
                release: self.rms_release,
            }),
            hostfile: self.hostfile.clone(),
            mpi: self.mpi,
            allow_new_hosts: self.allow_new_hosts,
            node_topology: self.node_topology.clone(),
            no_shared_caches: self.no_shared_caches,
            cores_per_rank: self.cores_per_rank.map(|c| c as usize),
            launcher: self.launcher,
            srun_mpi: self.srun_mpi.clone(),
            mpirun_args: self.mpirun_args.clone(),
            matrix: self.matrix.clone(),
            matrix_format: self.matrix_format,
            ckpt_dir: self.ckpt_dir.clone(),
            ckpt_local: self.ckpt_local.clone(),
            ckpt_flush_every: self.ckpt_flush_every,
            run_dir: self.run_dir.clone(),
            check_every: self.check_every,
            check_interval: self.check_interval,
            settle: self.settle,
            spawn_timeout: self.spawn_timeout,
            stall_timeout: self.stall_timeout,
            contention_watch: self.contention_watch,
            contention_threshold: self.contention_threshold,
            contention_window: self.contention_window,
            contention_cooldown: self.contention_cooldown,
            program: self.program.clone(),
            env,
        }
    }
}

/// Arguments of `rankmig emulated-host` (the MPI launcher calls it as an rsh agent).
#[derive(Debug, Args)]
pub struct EmulatedHostArgs {
    /// Ignored, as `ssh -x` (no X11 forwarding): hydra passes it.
    #[arg(short = 'x', hide = true)]
    pub no_x11: bool,
    /// The emulated host's name.
    pub host: String,
    /// The command to run there (given to /bin/sh -c, as ssh does).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Arguments of `rankmig bind-exec`.
#[derive(Debug, Args)]
pub struct BindExecArgs {
    /// The CPU sets of the launch (`INDEX CPUS` lines).
    #[arg(long, value_name = "FILE")]
    pub cpus_file: PathBuf,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true)]
    pub program: Vec<String>,
}

/// `rankmig report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Where to write the SVG chart (default: RUN_DIR/report.svg).
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

/// An MPI implementation's name.
fn parse_mpi(text: &str) -> Result<rankmig::launcher::MpiImplementation, String> {
    text.parse()
        .map_err(|e: rankmig::launcher::LauncherError| e.to_string())
}

/// `--contention-watch=MODE`.
fn parse_contention_mode(text: &str) -> Result<ContentionMode, String> {
    text.parse()
}

/// A contention window: seconds, from 0.1 to one hour.
fn parse_window(text: &str) -> Result<f64, String> {
    parse_seconds_within(text, 0.1, 3600.0)
}

/// A settle time: seconds, from 0 to one hour.
fn parse_settle(text: &str) -> Result<f64, String> {
    parse_seconds_within(text, 0.0, 3600.0)
}

/// A contention cooldown: seconds, from 0 to one hour.
fn parse_cooldown(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.0..=3600.0).contains(&secs) {
        return Err(format!(
            "{secs} s is outside 0 to 3600 s (a node left for contention is not used again for at most an hour)"
        ));
    }
    Ok(secs)
}

/// A stall timeout: seconds, from 0 (never) to one day.
fn parse_stall_timeout(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.0..=86_400.0).contains(&v) {
        return Err(format!("{v} s is outside 0 to 86400 s (0 = not watched)"));
    }
    Ok(v)
}

/// A spawn timeout: seconds, from 0 (never) to one day.
fn parse_spawn_timeout(text: &str) -> Result<f64, String> {
    parse_seconds_within(text, 0.0, 86_400.0)
}

/// A check interval: seconds, from 0.001 to one day.
fn parse_check_interval(text: &str) -> Result<f64, String> {
    parse_seconds_within(text, 0.001, 86_400.0)
}

/// A number of seconds from `min` to `max`.
fn parse_seconds_within(text: &str, min: f64, max: f64) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if (min..=max).contains(&secs) {
        Ok(secs)
    } else {
        Err(format!("{secs} s is outside {min} to {max} seconds"))
    }
}

/// The command line's definition with the configuration files' values as the defaults of
/// the flags of `rankmig run` they set (a flag given, or its variable, still wins).
pub fn command_with(config: Option<&rankmig::config::Configuration>) -> clap::Command {
    use rankmig::config::Carrier;
    let command = <Cli as clap::CommandFactory>::command();
    let Some(config) = config else {
        return command;
    };
    let defaults: Vec<(&'static str, String)> = config
        .from_files()
        .into_iter()
        .filter_map(|(setting, value)| match setting.carrier {
            Carrier::Flag(id) => Some((id, value)),
            Carrier::JobEnvironment => None,
        })
        .collect();
    command.mut_subcommand("run", |mut run| {
        for (id, value) in defaults {
            run = run.mut_arg(id, |arg| {
                if id == "mpirun_args" {
                    arg.default_values(
                        value
                            .split_whitespace()
                            .map(str::to_owned)
                            .collect::<Vec<_>>(),
                    )
                } else {
                    arg.default_value(value)
                }
            });
        }
        run
    })
}
