//! Checkpoint settings, from code and from the environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::CheckpointError;
use super::storage::JOB_NAME_MAX;

/// Directory holding the epochs (`RANKMIG_CKPT_DIR`).
pub const ENV_DIR: &str = "RANKMIG_CKPT_DIR";
/// Save every N `checkpoint!` calls (`RANKMIG_CKPT_EVERY`).
pub const ENV_EVERY: &str = "RANKMIG_CKPT_EVERY";
/// Save every S seconds, decided collectively (`RANKMIG_CKPT_SECONDS`).
pub const ENV_SECONDS: &str = "RANKMIG_CKPT_SECONDS";
/// The first save of a job after S seconds when that is sooner than the interval
/// (`RANKMIG_CKPT_FIRST_SECONDS`; time interval mode); `rankmig run --auto-restart`
/// sets it to [`AUTO_RESTART_FIRST_SAVE`] unless it is set.
pub const ENV_FIRST_SECONDS: &str = "RANKMIG_CKPT_FIRST_SECONDS";
/// The first save's delay `rankmig run --auto-restart` gives a job
/// ([`ENV_FIRST_SECONDS`]): so that a job that fails in its first interval can restart
/// from a checkpoint a few seconds old.
pub const AUTO_RESTART_FIRST_SAVE: Duration = Duration::from_secs(2);
/// Number of complete epochs kept (`RANKMIG_CKPT_KEEP`).
pub const ENV_KEEP: &str = "RANKMIG_CKPT_KEEP";
/// `1` to restart from the newest valid checkpoint (`RANKMIG_RESTART`).
pub const ENV_RESTART: &str = "RANKMIG_RESTART";
/// Job name written into every file and checked at restart (`RANKMIG_CKPT_JOB`).
pub const ENV_JOB: &str = "RANKMIG_CKPT_JOB";
/// `1` to accept a checkpoint directory that other users may write into
/// (`RANKMIG_CKPT_ALLOW_SHARED_DIR`); see [`CheckpointConfig::allow_shared_dir`].
pub const ENV_ALLOW_SHARED_DIR: &str = "RANKMIG_CKPT_ALLOW_SHARED_DIR";
/// A node-local directory: each save goes there first, with a partner's copy on
/// another host (`RANKMIG_CKPT_LOCAL`; `%h` is replaced by the host name); see
/// [`CheckpointConfig::local`].
pub const ENV_LOCAL: &str = "RANKMIG_CKPT_LOCAL";
/// With a node-local directory, every K-th epoch is also flushed to the shared
/// directory in the background (`RANKMIG_CKPT_FLUSH_EVERY`).
pub const ENV_FLUSH_EVERY: &str = "RANKMIG_CKPT_FLUSH_EVERY";
/// Default of [`CheckpointConfig::flush_every`].
pub const DEFAULT_FLUSH_EVERY: u64 = 10;
/// What `%h` in [`CheckpointConfig::local`] stands for.
pub const HOST_PLACEHOLDER: &str = "%h";

/// When saves happen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Interval {
    /// Every N-th `checkpoint!` call (calls N, 2N, ...).
    Calls(u64),
    /// About every given duration; ranks agree on the call at which to save.
    Time(Duration),
}

/// Settings of a [`super::CheckpointContext`].
///
/// ```
/// use rankmig::checkpoint::{CheckpointConfig, Interval};
/// let c = CheckpointConfig::new("/tmp/ckpt").job("solver").every(50).keep(3);
/// assert_eq!(c.interval, Interval::Calls(50));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointConfig {
    /// Directory holding one sub-directory per epoch.
    pub dir: PathBuf,
    /// When saves happen.
    pub interval: Interval,
    /// Time interval mode: the first save of a job that has saved nothing and restored
    /// nothing is due after this, if sooner than the interval.
    pub first: Option<Duration>,
    /// Complete epochs kept (at least 1).
    pub keep: usize,
    /// Restart from the newest checkpoint instead of starting afresh.
    pub restart: bool,
    /// Job name; a checkpoint of another job is refused.
    pub job: String,
    /// Accept a group- or world-writable checkpoint directory (refused by default:
    /// whoever can write into it can plant links and files there).
    pub allow_shared_dir: bool,
    /// A node-local directory (`RANKMIG_CKPT_LOCAL`): when set, each save is written
    /// there, a copy of each rank's file is kept by a partner rank on another host,
    /// and every [`CheckpointConfig::flush_every`]-th epoch is copied to [`Self::dir`] in
    /// the background. `%h` stands for the host name ([`HOST_PLACEHOLDER`]).
    pub local: Option<PathBuf>,
    /// With [`Self::local`]: the epochs whose number is a multiple of this are flushed
    /// to the shared directory (at least 1; default [`DEFAULT_FLUSH_EVERY`]).
    pub flush_every: u64,
}

impl CheckpointConfig {
    /// Settings with defaults: every 300 s, keep 2 epochs, no restart, job named
    /// after the executable.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            interval: Interval::Time(Duration::from_secs(300)),
            first: None,
            keep: 2,
            restart: false,
            job: default_job_name(),
            allow_shared_dir: false,
            local: None,
            flush_every: DEFAULT_FLUSH_EVERY,
        }
    }

    /// Defaults (directory `rankmig-ckpt`) overridden by the environment.
    pub fn from_env() -> Result<Self, CheckpointError> {
        Self::new("rankmig-ckpt").with_env()
    }

    /// Overrides these settings with the `RANKMIG_*` variables that are set.
    pub fn with_env(self) -> Result<Self, CheckpointError> {
        self.with_vars(|k| std::env::var(k).ok())
    }

    /// Like [`CheckpointConfig::with_env`] with a custom variable lookup.
    pub fn with_vars(
        mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, CheckpointError> {
        if let Some(v) = get(ENV_DIR) {
            self.dir = PathBuf::from(v);
        }
        if let Some(v) = get(ENV_EVERY) {
            self.interval = Interval::Calls(parse_num(ENV_EVERY, &v)?);
        }
        if let Some(v) = get(ENV_SECONDS) {
            self.interval = Interval::Time(parse_seconds(ENV_SECONDS, &v)?);
        }
        if let Some(v) = get(ENV_FIRST_SECONDS) {
            self.first = Some(parse_seconds(ENV_FIRST_SECONDS, &v)?);
        }
        if let Some(v) = get(ENV_KEEP) {
            self.keep = usize::try_from(parse_num(ENV_KEEP, &v)?).unwrap_or(usize::MAX);
        }
        if let Some(v) = get(ENV_RESTART) {
            self.restart = parse_bool(ENV_RESTART, &v)?;
        }
        if let Some(v) = get(ENV_JOB) {
            self.job = v;
        }
        if let Some(v) = get(ENV_ALLOW_SHARED_DIR) {
            self.allow_shared_dir = parse_bool(ENV_ALLOW_SHARED_DIR, &v)?;
        }
        if let Some(v) = get(ENV_LOCAL) {
            self.local = (!v.is_empty()).then(|| PathBuf::from(v));
        }
        if let Some(v) = get(ENV_FLUSH_EVERY) {
            self.flush_every = parse_num(ENV_FLUSH_EVERY, &v)?;
        }
        self.validate()?;
        Ok(self)
    }

    /// Sets the directory.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = dir.as_ref().to_path_buf();
        self
    }

    /// Saves every `n` calls.
    pub fn every(mut self, n: u64) -> Self {
        self.interval = Interval::Calls(n);
        self
    }

    /// Saves about every `d`.
    pub fn every_duration(mut self, d: Duration) -> Self {
        self.interval = Interval::Time(d);
        self
    }

    /// Time interval mode: makes the first save of a job (nothing saved or restored yet)
    /// due after `d` when that is sooner than the interval.
    pub fn first_save_after(mut self, d: Duration) -> Self {
        self.first = Some(d);
        self
    }

    /// Keeps `n` complete epochs.
    pub fn keep(mut self, n: usize) -> Self {
        self.keep = n;
        self
    }

    /// Restarts from a checkpoint (or not).
    pub fn restart(mut self, yes: bool) -> Self {
        self.restart = yes;
        self
    }

    /// Sets the job name.
    pub fn job(mut self, name: impl Into<String>) -> Self {
        self.job = name.into();
        self
    }

    /// Accepts (or not) a checkpoint directory that its group or other users may
    /// write into. Off by default: such a directory is refused with
    /// [`CheckpointError::UnsafeDir`], because another user could plant links or FIFOs
    /// in it. Also set by `RANKMIG_CKPT_ALLOW_SHARED_DIR=1`.
    pub fn allow_shared_dir(mut self, yes: bool) -> Self {
        self.allow_shared_dir = yes;
        self
    }

    /// Writes each save to the node-local directory `dir` first (`%h` is replaced by
    /// the host name), with a partner's copy on another host; the shared directory
    /// receives every [`CheckpointConfig::flush_every`]-th epoch in the background.
    ///
    /// ```
    /// use rankmig::checkpoint::CheckpointConfig;
    /// let c = CheckpointConfig::new("/shared/ckpt").local("/dev/shm/me/%h").flush_every(5);
    /// assert_eq!(c.local_dir_on("n3").unwrap(), std::path::Path::new("/dev/shm/me/n3"));
    /// ```
    pub fn local(mut self, dir: impl AsRef<Path>) -> Self {
        self.local = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Flushes every `k`-th epoch to the shared directory (with [`CheckpointConfig::local`]).
    pub fn flush_every(mut self, k: u64) -> Self {
        self.flush_every = k;
        self
    }

    /// The node-local directory on host `host` (`%h` replaced), if one is set.
    pub fn local_dir_on(&self, host: &str) -> Option<PathBuf> {
        let dir = self.local.as_ref()?;
        let text = dir.to_string_lossy();
        Some(if text.contains(HOST_PLACEHOLDER) {
            PathBuf::from(text.replace(HOST_PLACEHOLDER, host))
        } else {
            dir.clone()
        })
    }

    /// Checks the values: a non-empty directory path (an empty one would mean the
    /// current directory, never found again at restart), interval and keep at least
    /// 1, a short one-line job name.
    pub fn validate(&self) -> Result<(), CheckpointError> {
        let bad = |name, value: String, reason| {
            Err(CheckpointError::Config {
                name,
                value,
                reason,
            })
        };
        if self.dir.as_os_str().is_empty() {
            return bad(
                ENV_DIR,
                String::new(),
                "must name a directory, not be empty",
            );
        }
        match self.interval {
            Interval::Calls(0) => return bad(ENV_EVERY, "0".into(), "must be at least 1"),
            Interval::Time(d) if d.is_zero() => {
                return bad(ENV_SECONDS, format!("{d:?}"), "must be positive");
            }
            _ => {}
        }
        if self.keep == 0 {
            return bad(ENV_KEEP, "0".into(), "must be at least 1");
        }
        if self.flush_every == 0 {
            return bad(ENV_FLUSH_EVERY, "0".into(), "must be at least 1");
        }
        if self.local.as_ref().is_some_and(|l| *l == self.dir) {
            return bad(
                ENV_LOCAL,
                self.dir.display().to_string(),
                "must not be the shared checkpoint directory itself",
            );
        }
        if self.job.is_empty()
            || self.job.len() > JOB_NAME_MAX
            || self.job.chars().any(char::is_control)
        {
            // The commit marker refuses control characters: a name with one could be
            // saved but never restored.
            return bad(
                ENV_JOB,
                self.job.clone(),
                "must be 1 to 56 bytes without control characters",
            );
        }
        Ok(())
    }
}

fn default_job_name() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_deref()
        .and_then(Path::file_stem)
        .and_then(|s| s.to_str())
        .unwrap_or("rankmig-job");
    let mut name = String::new();
    for c in stem.chars().filter(|c| !c.is_control()) {
        if name.len() + c.len_utf8() > JOB_NAME_MAX {
            break;
        }
        name.push(c);
    }
    if name.is_empty() {
        name.push_str("rankmig-job");
    }
    name
}

fn parse_num(name: &'static str, v: &str) -> Result<u64, CheckpointError> {
    v.trim().parse().map_err(|_| CheckpointError::Config {
        name,
        value: v.into(),
        reason: "not a whole number",
    })
}

fn parse_seconds(name: &'static str, v: &str) -> Result<Duration, CheckpointError> {
    let err = |reason| CheckpointError::Config {
        name,
        value: v.into(),
        reason,
    };
    let s: f64 = v.trim().parse().map_err(|_| err("not a number"))?;
    if !s.is_finite() || s <= 0.0 {
        return Err(err("must be a positive number of seconds"));
    }
    Duration::try_from_secs_f64(s).map_err(|_| err("out of range"))
}

fn parse_bool(name: &'static str, v: &str) -> Result<bool, CheckpointError> {
    match v.trim() {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" | "" => Ok(false),
        _ => Err(CheckpointError::Config {
            name,
            value: v.into(),
            reason: "expected 1 or 0",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn env_overrides_code() {
        let c = CheckpointConfig::new("a")
            .job("j")
            .with_vars(vars(&[
                (ENV_DIR, "/x"),
                (ENV_EVERY, "7"),
                (ENV_KEEP, "3"),
                (ENV_RESTART, "1"),
            ]))
            .unwrap();
        assert_eq!(c.dir, PathBuf::from("/x"));
        assert_eq!(c.interval, Interval::Calls(7));
        assert_eq!((c.keep, c.restart), (3, true));
        let c = c.with_vars(vars(&[(ENV_SECONDS, "0.5")])).unwrap();
        assert_eq!(c.interval, Interval::Time(Duration::from_millis(500)));
        assert_eq!(c.first, None);
        let c = c.with_vars(vars(&[(ENV_FIRST_SECONDS, "2")])).unwrap();
        assert_eq!(c.first, Some(Duration::from_secs(2)));
    }

    #[test]
    fn bad_values_name_variable_and_value() {
        let base = CheckpointConfig::new("a").job("j");
        let e = base
            .clone()
            .with_vars(vars(&[(ENV_EVERY, "ten")]))
            .unwrap_err();
        assert!(e.to_string().contains("RANKMIG_CKPT_EVERY=\"ten\""), "{e}");
        let e = base
            .clone()
            .with_vars(vars(&[(ENV_SECONDS, "-1")]))
            .unwrap_err();
        assert!(e.to_string().contains("RANKMIG_CKPT_SECONDS"), "{e}");
        assert!(base.clone().with_vars(vars(&[(ENV_KEEP, "0")])).is_err());
        assert!(
            base.clone()
                .with_vars(vars(&[(ENV_RESTART, "maybe")]))
                .is_err()
        );
        let e = base
            .clone()
            .with_vars(vars(&[(ENV_FIRST_SECONDS, "soon")]))
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("RANKMIG_CKPT_FIRST_SECONDS=\"soon\""),
            "{e}"
        );
        assert!(base.clone().job("a\nb").validate().is_err());
        // a tab would be saved in the commit marker, which then reads as corrupt
        assert!(base.clone().job("a\tb").validate().is_err());
        let e = base
            .clone()
            .with_vars(vars(&[(ENV_FLUSH_EVERY, "0")]))
            .unwrap_err();
        assert!(e.to_string().contains("RANKMIG_CKPT_FLUSH_EVERY"), "{e}");
        assert!(base.with_vars(vars(&[(ENV_LOCAL, "a")])).is_err());
    }

    #[test]
    fn the_local_directory_names_its_host() {
        let c = CheckpointConfig::new("/s")
            .with_vars(vars(&[(ENV_LOCAL, "/l/%h/x"), (ENV_FLUSH_EVERY, "4")]))
            .unwrap();
        assert_eq!(c.local_dir_on("n2"), Some(PathBuf::from("/l/n2/x")));
        assert_eq!(c.flush_every, 4);
        assert_eq!(
            c.clone().local("/l").local_dir_on("n2"),
            Some(PathBuf::from("/l"))
        );
        assert_eq!(c.with_vars(vars(&[(ENV_LOCAL, "")])).unwrap().local, None);
    }
}
