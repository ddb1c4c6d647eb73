//! Site and user configuration files: defaults for `rankmig run` that a site or a user
//! sets once instead of in flags and `RANKMIG_*` variables.
//!
//! Two TOML files are read, when they exist: the *user file*, `$RANKMIG_CONFIG` or else
//! `~/.config/rankmig/config.toml` (`$XDG_CONFIG_HOME/rankmig/config.toml` when that is
//! set), and the *site file*, `PREFIX/etc/rankmig.toml` beside the installed `rankmig`
//! (`PREFIX/bin/rankmig`). A value is taken from the first of: the command line, the
//! environment, the user file, the site file, rankmig's default. [`SETTINGS`] lists the
//! keys; a key the table does not know, or a value of the wrong kind, is an error that
//! names the file, the line and the key.
//!
//! ```
//! use rankmig::config::{ConfigFile, SETTINGS};
//!
//! let file = ConfigFile::parse(
//!     "site.toml".as_ref(),
//!     "[checkpoint]\nseconds = 60\n\n[run]\nspawn_timeout = 30.5\n",
//! )
//! .unwrap();
//! assert_eq!(file.value("checkpoint.seconds"), Some(("60".to_owned(), 2)));
//! assert_eq!(file.value("run.spawn_timeout"), Some(("30.5".to_owned(), 5)));
//! assert!(SETTINGS.iter().any(|s| s.key == "checkpoint.dir"));
//!
//! let err = ConfigFile::parse("site.toml".as_ref(), "[run]\nspawn_timout = 3\n").unwrap_err();
//! assert!(err.to_string().starts_with("site.toml:2:"), "{err}");
//! assert!(err.to_string().contains("spawn_timout"), "{err}");
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a setting reaches `rankmig run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// A flag of `rankmig run` (its clap id), which also reads the variable.
    Flag(&'static str),
    /// A variable of the job's environment, read by the ranks.
    JobEnvironment,
}

/// A setting the configuration files may give.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The key: `section.name`.
    pub key: &'static str,
    /// The environment variable that sets it (above the files).
    pub env: &'static str,
    /// How it reaches the run.
    pub carrier: Carrier,
    /// rankmig's default, as text.
    pub default: &'static str,
    /// What it sets.
    pub doc: &'static str,
}

/// Every setting of the configuration files.
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: "checkpoint.dir",
        env: "RANKMIG_CKPT_DIR",
        carrier: Carrier::Flag("ckpt_dir"),
        default: "RUN_DIR/ckpt",
        doc: "checkpoint directory (--ckpt-dir)",
    },
    Setting {
        key: "checkpoint.local",
        env: "RANKMIG_CKPT_LOCAL",
        carrier: Carrier::Flag("ckpt_local"),
        default: "(none)",
        doc: "node-local checkpoint directory on every host, %h for the host name (--ckpt-local)",
    },
    Setting {
        key: "checkpoint.flush_every",
        env: "RANKMIG_CKPT_FLUSH_EVERY",
        carrier: Carrier::Flag("ckpt_flush_every"),
        default: "10",
        doc: "with checkpoint.local, every K-th epoch is copied to checkpoint.dir (--ckpt-flush-every)",
    },
    Setting {
        key: "checkpoint.seconds",
        env: "RANKMIG_CKPT_SECONDS",
        carrier: Carrier::JobEnvironment,
        default: "300",
        doc: "seconds between two checkpoints",
    },
    Setting {
        key: "checkpoint.every",
        env: "RANKMIG_CKPT_EVERY",
        carrier: Carrier::JobEnvironment,
        default: "(by time)",
        doc: "checkpoint every N checkpoint calls instead of by time",
    },
    Setting {
        key: "checkpoint.keep",
        env: "RANKMIG_CKPT_KEEP",
        carrier: Carrier::JobEnvironment,
        default: "2",
        doc: "complete epochs kept",
    },
    Setting {
        key: "launcher.args",
        env: "RANKMIG_MPIRUN_ARGS",
        carrier: Carrier::Flag("mpirun_args"),
        default: "(none)",
        doc: "options given to mpirun or mpiexec (--mpirun-arg), a list of strings",
    },
    Setting {
        key: "run.spawn_timeout",
        env: "RANKMIG_SPAWN_TIMEOUT",
        carrier: Carrier::Flag("spawn_timeout"),
        default: "120",
        doc: "seconds a migration's spawn may take (--spawn-timeout)",
    },
    Setting {
        key: "run.stall_timeout",
        env: "RANKMIG_STALL_TIMEOUT",
        carrier: Carrier::Flag("stall_timeout"),
        default: "(from the iteration times)",
        doc: "seconds without an iteration before a relaunch (--stall-timeout)",
    },
    Setting {
        key: "run.settle",
        env: "RANKMIG_SETTLE",
        carrier: Carrier::Flag("settle"),
        default: "3",
        doc: "seconds an availability edit must stay unchanged (--settle)",
    },
    Setting {
        key: "run.check_interval",
        env: "RANKMIG_CHECK_INTERVAL",
        carrier: Carrier::Flag("check_interval"),
        default: "1",
        doc: "seconds between two availability checks (--check-interval)",
    },
    Setting {
        key: "run.launcher",
        env: "RANKMIG_LAUNCHER",
        carrier: Carrier::Flag("launcher"),
        default: "(the MPI's own; srun in Slurm without it)",
        doc: "what starts the ranks: \"mpirun\" or \"srun\" (--launcher)",
    },
    Setting {
        key: "run.cores_per_rank",
        env: "RANKMIG_CORES_PER_RANK",
        carrier: Carrier::Flag("cores_per_rank"),
        default: "(SLURM_CPUS_PER_TASK, OMP_NUM_THREADS, 1)",
        doc: "cores each rank runs on (--cores-per-rank)",
    },
    Setting {
        key: "run.auto_restart",
        env: "RANKMIG_AUTO_RESTART",
        carrier: Carrier::Flag("auto_restart"),
        default: "0",
        doc: "restarts of a failed job from its checkpoint (--auto-restart)",
    },
    Setting {
        key: "contention.watch",
        env: "RANKMIG_CONTENTION_WATCH",
        carrier: Carrier::Flag("contention_watch"),
        default: "off",
        doc: "the contention watch: \"off\", \"report\" or \"act\" (--contention-watch)",
    },
    Setting {
        key: "contention.threshold",
        env: "RANKMIG_CONTENTION_THRESHOLD",
        carrier: Carrier::Flag("contention_threshold"),
        default: "0.3",
        doc: "share of the window waited for a CPU that makes a node contended (--contention-threshold)",
    },
    Setting {
        key: "contention.window",
        env: "RANKMIG_CONTENTION_WINDOW",
        carrier: Carrier::Flag("contention_window"),
        default: "10",
        doc: "seconds the contention watch adds waits up over (--contention-window)",
    },
    Setting {
        key: "contention.cooldown",
        env: "RANKMIG_CONTENTION_COOLDOWN",
        carrier: Carrier::Flag("contention_cooldown"),
        default: "60",
        doc: "seconds before a node left for contention is used again (--contention-cooldown)",
    },
    Setting {
        key: "slurm.lead",
        env: "RANKMIG_RMS_LEAD",
        carrier: Carrier::Flag("rms_lead"),
        default: "300",
        doc: "seconds before a maintenance window that its nodes are emptied (--rms-lead)",
    },
];

/// An error of a configuration file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("{path}: cannot read the configuration file: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML, a key rankmig does not know, or a value of the wrong kind.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// What is wrong, with the key.
        message: String,
    },
}

/// One configuration file, read: each key it sets, with its value as text and its line.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    values: BTreeMap<&'static str, (String, usize)>,
}

impl ConfigFile {
    /// Reads `path`; `Ok(None)` when it does not exist.
    pub fn load(path: &Path) -> Result<Option<Self>, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(path, &text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses `text`, the content of `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let invalid = |offset: usize, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: line_of(text, offset),
            message,
        };
        let document = toml::de::DeTable::parse(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            invalid(at, e.message().to_owned())
        })?;
        let mut values = BTreeMap::new();
        for (section, table) in document.get_ref() {
            let toml::de::DeValue::Table(table) = table.get_ref() else {
                return Err(invalid(
                    section.span().start,
                    format!(
                        "`{}` must be a [section] ({})",
                        section.get_ref(),
                        sections()
                    ),
                ));
            };
            for (name, value) in table {
                let key = format!("{}.{}", section.get_ref(), name.get_ref());
                let setting = SETTINGS.iter().find(|s| s.key == key).ok_or_else(|| {
                    invalid(
                        name.span().start,
                        format!("unknown key `{key}` (known: {})", keys()),
                    )
                })?;
                let text_value = value_text(setting, value.get_ref())
                    .map_err(|why| invalid(value.span().start, format!("`{key}`: {why}")))?;
                values.insert(setting.key, (text_value, line_of(text, name.span().start)));
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            values,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value the file gives `key`, as text, and its line.
    pub fn value(&self, key: &str) -> Option<(String, usize)> {
        self.values.get(key).cloned()
    }
}

/// The sections, for messages.
fn sections() -> String {
    let mut names: Vec<&str> = SETTINGS
        .iter()
        .filter_map(|s| s.key.split('.').next())
        .collect();
    names.dedup();
    names.join(", ")
}

/// The keys, for messages.
fn keys() -> String {
    SETTINGS
        .iter()
        .map(|s| s.key)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The keys whose value is a string (the others are numbers or, `launcher.args`, a list).
const STRING_KEYS: &[&str] = &["checkpoint.dir", "contention.watch"];

/// A value as the text its flag or variable would hold: a number or a string, or (for
/// `launcher.args`) a list of strings joined by spaces.
fn value_text(setting: &Setting, value: &toml::de::DeValue) -> Result<String, String> {
    use toml::de::DeValue;
    let list = setting.key == "launcher.args";
    match value {
        DeValue::Array(items) if list => items
            .iter()
            .map(|item| match item.get_ref() {
                DeValue::String(s) if !s.chars().any(char::is_whitespace) => Ok(s.to_string()),
                DeValue::String(s) => Err(format!("{s:?}: one option per string, no blanks")),
                _ => Err("a list of strings, e.g. [\"--mca\", \"btl\", \"tcp,self\"]".into()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|words| words.join(" ")),
        _ if list => Err("a list of strings, e.g. [\"--mca\", \"btl\", \"tcp,self\"]".into()),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map(|v| v.to_string())
            .map_err(|_| format!("{i} is out of range")),
        DeValue::Float(f) => Ok(f.as_str().to_owned()),
        DeValue::String(s) if STRING_KEYS.contains(&setting.key) => Ok(s.to_string()),
        DeValue::String(s) => Err(format!("{s:?} is a string; give a number")),
        DeValue::Boolean(_) | DeValue::Datetime(_) | DeValue::Array(_) | DeValue::Table(_) => Err(
            format!("give a number (a string for {})", STRING_KEYS.join(" and ")),
        ),
    }
}

/// Where a setting's effective value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The environment variable.
    Environment(&'static str),
    /// A configuration file, at a line.
    File(PathBuf, usize),
    /// rankmig's default.
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Environment(var) => write!(f, "environment {var}"),
            Source::File(path, line) => write!(f, "{}:{line}", path.display()),
            Source::Default => f.write_str("default"),
        }
    }
}

/// The user file and the site file, as found.
#[derive(Debug, Clone, Default)]
pub struct Configuration {
    /// The user file (`$RANKMIG_CONFIG` or `~/.config/rankmig/config.toml`), if it exists.
    pub user: Option<ConfigFile>,
    /// The site file (`PREFIX/etc/rankmig.toml`), if it exists.
    pub site: Option<ConfigFile>,
}

impl Configuration {
    /// Reads the files of [`Configuration::paths`]. `$RANKMIG_CONFIG` naming a file
    /// that does not exist is an error; the other two are optional.
    pub fn load() -> Result<Self, ConfigError> {
        let (user, site) = Self::paths();
        let user_file = match &user {
            Some(path) if std::env::var_os("RANKMIG_CONFIG").is_some() => {
                Some(ConfigFile::load(path)?.ok_or_else(|| ConfigError::Read {
                    path: path.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "RANKMIG_CONFIG names a file that does not exist",
                    ),
                })?)
            }
            Some(path) => ConfigFile::load(path)?,
            None => None,
        };
        let site_file = match &site {
            Some(path) => ConfigFile::load(path)?,
            None => None,
        };
        Ok(Self {
            user: user_file,
            site: site_file,
        })
    }

    /// Where the user file and the site file are looked for.
    pub fn paths() -> (Option<PathBuf>, Option<PathBuf>) {
        let user = std::env::var_os("RANKMIG_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                let base = std::env::var_os("XDG_CONFIG_HOME")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
                    .or_else(|| {
                        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config"))
                    })?;
                Some(base.join("rankmig/config.toml"))
            });
        let site = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join("etc/rankmig.toml")));
        (user, site)
    }

    /// The value of `setting` from the files and the environment (not the command line)
    /// and where it comes from; `None` for the default.
    pub fn effective(&self, setting: &Setting) -> (Option<String>, Source) {
        if let Some(value) = std::env::var(setting.env).ok().filter(|v| !v.is_empty()) {
            return (Some(value), Source::Environment(setting.env));
        }
        for file in [&self.user, &self.site].into_iter().flatten() {
            if let Some((value, line)) = file.value(setting.key) {
                return (Some(value), Source::File(file.path().to_path_buf(), line));
            }
        }
        (None, Source::Default)
    }

    /// The values of the files for the settings a file gives and the environment does
    /// not: what `rankmig run` takes as its defaults.
    pub fn from_files(&self) -> Vec<(&'static Setting, String)> {
        SETTINGS
            .iter()
            .filter_map(|setting| match self.effective(setting) {
                (Some(value), Source::File(..)) => Some((setting, value)),
                _ => None,
            })
            .collect()
    }

    /// The variables of the job's environment the files set (and the environment does
    /// not), given to the ranks of `rankmig run`.
    pub fn job_environment(&self) -> Vec<(String, String)> {
        self.from_files()
            .into_iter()
            .filter(|(setting, _)| setting.carrier == Carrier::JobEnvironment)
            .map(|(setting, value)| (setting.env.to_owned(), value))
            .collect()
    }

    /// What `rankmig config` prints: the files looked for (`user`, `site`: see
    /// [`Configuration::paths`]), then each setting, its effective value and where it
    /// comes from.
    pub fn listing(&self, user: Option<&Path>, site: Option<&Path>) -> String {
        let shown = |p: Option<&Path>| p.map_or("(none)".into(), |p| p.display().to_string());
        let mut text = format!(
            "# user file: {}\n# site file: {}\n",
            shown(user),
            shown(site)
        );
        for setting in SETTINGS {
            let (value, source) = self.effective(setting);
            let value = value.unwrap_or_else(|| setting.default.to_owned());
            text.push_str(&format!(
                "{:<20} {:<28} {}  # {}\n",
                setting.key, value, source, setting.doc
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(Path::new("/etc/rankmig.toml"), text)
    }

    #[test]
    fn every_setting_reads_back_with_its_line() {
        let file = parse(
            "# site defaults\n[checkpoint]\ndir = \"/scratch/ckpt\"\nkeep = 3\n\
             [launcher]\nargs = [\"--mca\", \"btl\", \"tcp,self\"]\n[run]\nsettle = 0.5\n",
        )
        .unwrap();
        assert_eq!(
            file.value("checkpoint.dir"),
            Some(("/scratch/ckpt".into(), 3))
        );
        assert_eq!(file.value("checkpoint.keep"), Some(("3".into(), 4)));
        assert_eq!(
            file.value("launcher.args"),
            Some(("--mca btl tcp,self".into(), 6))
        );
        assert_eq!(file.value("run.settle"), Some(("0.5".into(), 8)));
        assert_eq!(file.value("run.spawn_timeout"), None);
    }

    #[test]
    fn an_unknown_key_names_file_line_and_key() {
        let err = parse("[run]\nsettle = 1\nspawn_timeout = 2\nstal_timeout = 3\n").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("/etc/rankmig.toml:4: unknown key `run.stal_timeout`"),
            "{text}"
        );
    }

    #[test]
    fn a_value_of_the_wrong_kind_names_its_line() {
        let err = parse("[checkpoint]\n\nseconds = \"ten\"\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/etc/rankmig.toml:3: `checkpoint.seconds`"),
            "{err}"
        );
        let err = parse("[launcher]\nargs = \"--mca btl tcp\"\n").unwrap_err();
        assert!(err.to_string().contains("a list of strings"), "{err}");
        let err = parse("checkpoint = 3\n").unwrap_err();
        assert!(err.to_string().contains("must be a [section]"), "{err}");
    }

    #[test]
    fn broken_toml_names_its_line() {
        let err = parse("[run]\nsettle = 1\nspawn_timeout = = 2\n").unwrap_err();
        assert!(err.to_string().starts_with("/etc/rankmig.toml:3:"), "{err}");
    }

    #[test]
    fn the_user_file_wins_over_the_site_file() {
        let user = ConfigFile::parse(Path::new("u.toml"), "[run]\nsettle = 1\n").unwrap();
        let site = ConfigFile::parse(Path::new("s.toml"), "[run]\nsettle = 2\nauto_restart = 4\n")
            .unwrap();
        let config = Configuration {
            user: Some(user),
            site: Some(site),
        };
        let settle = SETTINGS.iter().find(|s| s.key == "run.settle").unwrap();
        let restarts = SETTINGS
            .iter()
            .find(|s| s.key == "run.auto_restart")
            .unwrap();
        let spawn = SETTINGS
            .iter()
            .find(|s| s.key == "run.spawn_timeout")
            .unwrap();
        assert_eq!(
            config.effective(settle),
            (Some("1".into()), Source::File("u.toml".into(), 2))
        );
        assert_eq!(
            config.effective(restarts),
            (Some("4".into()), Source::File("s.toml".into(), 3))
        );
        assert_eq!(config.effective(spawn), (None, Source::Default));
        assert_eq!(config.from_files().len(), 2);
    }

    #[test]
    fn the_listing_names_each_value_s_file_and_line_and_job_variables_come_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[checkpoint]\nkeep = 3\n[run]\nsettle = 0.5\n").unwrap();
        let config = Configuration {
            user: ConfigFile::load(&path).unwrap(),
            site: None,
        };
        let text = config.listing(Some(&path), None);
        assert!(text.starts_with(&format!(
            "# user file: {}\n# site file: (none)\n",
            path.display()
        )));
        let line = text.lines().find(|l| l.starts_with("run.settle ")).unwrap();
        let place = format!("{}:4", path.display());
        assert!(line.contains(" 0.5 ") && line.contains(&place), "{line}");
        let keep = ("RANKMIG_CKPT_KEEP".to_owned(), "3".to_owned());
        assert_eq!(config.job_environment(), [keep]);
    }
}
