//! The four availability forms and their detection.

use std::collections::HashMap;

use crate::topology::{IndexListError, parse_index_list};

use super::{AvailabilityError, MAX_CORES_PER_NODE, NodeOffer};

/// Forms of an availability file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum AvailabilityFormat {
    /// Detect: `slots=` → hostfile; `NAME:N` → colon; one name per line → nodefile;
    /// otherwise native.
    #[default]
    Auto,
    /// `NAME CORES [cpus=LIST]`.
    Native,
    /// Open MPI hostfile: `NAME slots=N [max_slots=M]` (a bare `NAME` is 1 slot).
    Hostfile,
    /// `NAME:N`.
    Colon,
    /// One name per slot, repeated (as `$PBS_NODEFILE`).
    Nodefile,
}

/// A data line: its number, its text without comment.
type DataLine<'a> = (usize, &'a str);

/// Parses `text` in `format` into offers (0-core nodes included).
pub(super) fn parse(
    text: &str,
    origin: &str,
    format: AvailabilityFormat,
) -> Result<Vec<NodeOffer>, AvailabilityError> {
    let lines: Vec<DataLine> = crate::lines::data_lines(text).collect();
    let format = match format {
        AvailabilityFormat::Auto => detect(&lines),
        f => f,
    };
    let ctx = Ctx { origin };
    let offers = match format {
        AvailabilityFormat::Nodefile => return ctx.nodefile(&lines),
        AvailabilityFormat::Native => ctx.each(&lines, Ctx::native_line)?,
        AvailabilityFormat::Hostfile => ctx.each(&lines, Ctx::hostfile_line)?,
        AvailabilityFormat::Colon => ctx.each(&lines, Ctx::colon_line)?,
        AvailabilityFormat::Auto => unreachable!("resolved above"),
    };
    ctx.reject_duplicates(&offers)?;
    Ok(offers)
}

fn detect(lines: &[DataLine]) -> AvailabilityFormat {
    if lines.iter().any(|(_, l)| l.contains("slots=")) {
        AvailabilityFormat::Hostfile
    } else if lines
        .iter()
        .any(|(_, l)| l.contains(':') && !l.contains(' '))
    {
        AvailabilityFormat::Colon
    } else if !lines.is_empty() && lines.iter().all(|(_, l)| !l.contains(char::is_whitespace)) {
        AvailabilityFormat::Nodefile
    } else {
        AvailabilityFormat::Native
    }
}

struct Ctx<'a> {
    origin: &'a str,
}

impl Ctx<'_> {
    fn error(&self, line: usize, problem: impl Into<String>, text: &str) -> AvailabilityError {
        AvailabilityError::Line {
            origin: self.origin.to_owned(),
            line,
            problem: problem.into(),
            text: text.to_owned(),
        }
    }

    fn each(
        &self,
        lines: &[DataLine],
        parse_line: fn(&Self, usize, &str) -> Result<NodeOffer, AvailabilityError>,
    ) -> Result<Vec<NodeOffer>, AvailabilityError> {
        lines.iter().map(|&(n, l)| parse_line(self, n, l)).collect()
    }

    fn name(&self, line: usize, name: &str) -> Result<String, AvailabilityError> {
        if is_hostname(name) {
            Ok(name.to_owned())
        } else {
            Err(self.error(
                line,
                "not a valid node name (letters, digits, '-' and '.', as host names)",
                name,
            ))
        }
    }

    fn count(&self, line: usize, value: &str, what: &str) -> Result<usize, AvailabilityError> {
        let n = value.parse::<u64>().map_err(|_| {
            self.error(
                line,
                format!("{what} must be a non-negative integer"),
                value,
            )
        })?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= MAX_CORES_PER_NODE)
            .ok_or_else(|| {
                self.error(
                    line,
                    format!("{what} is above the limit of {MAX_CORES_PER_NODE} per node"),
                    value,
                )
            })
    }

    fn native_line(&self, line: usize, text: &str) -> Result<NodeOffer, AvailabilityError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let (name, cores, extra) = match fields[..] {
            [name, cores] => (name, cores, None),
            [name, cores, extra] => (name, cores, Some(extra)),
            _ => return Err(self.error(line, "expected 'NAME CORES [cpus=LIST]'", text)),
        };
        let name = self.name(line, name)?;
        let cores = self.count(line, cores, "the core count")?;
        let cpus = match extra {
            None => None,
            Some(e) => Some(self.cpus(line, e, cores)?),
        };
        Ok(NodeOffer {
            name,
            cores,
            cpus,
            line,
        })
    }

    fn cpus(
        &self,
        line: usize,
        field: &str,
        cores: usize,
    ) -> Result<Vec<usize>, AvailabilityError> {
        let list = field
            .strip_prefix("cpus=")
            .ok_or_else(|| self.error(line, "expected 'cpus=LIST' after the core count", field))?;
        let cpus = parse_index_list(list).map_err(|e| match e {
            IndexListError::Repeated { index, .. } => {
                self.error(line, format!("the cpu list names cpu {index} twice"), list)
            }
            IndexListError::Malformed(_) => self.error(line, e.to_string(), list),
        })?;
        if cpus.len() != cores {
            return Err(self.error(
                line,
                format!(
                    "the cpu list has {} cpus but the line offers {cores} cores",
                    cpus.len()
                ),
                list,
            ));
        }
        Ok(cpus)
    }

    fn hostfile_line(&self, line: usize, text: &str) -> Result<NodeOffer, AvailabilityError> {
        let mut fields = text.split_whitespace();
        let name = self.name(line, fields.next().unwrap_or(""))?;
        let mut slots: Option<usize> = None;
        let mut max_slots: Option<usize> = None;
        for field in fields {
            if let Some(v) = field.strip_prefix("slots=") {
                let n = self.count(line, v, "slots")?;
                if slots.replace(n).is_some() {
                    return Err(self.error(line, "slots= is given twice", text));
                }
            } else if let Some(v) = field.strip_prefix("max_slots=") {
                let n = self.count(line, v, "max_slots")?;
                if max_slots.replace(n).is_some() {
                    return Err(self.error(line, "max_slots= is given twice", text));
                }
            } else {
                return Err(self.error(line, "expected 'NAME slots=N [max_slots=M]'", text));
            }
        }
        Ok(NodeOffer {
            name,
            cores: slots.unwrap_or(1),
            cpus: None,
            line,
        })
    }

    fn colon_line(&self, line: usize, text: &str) -> Result<NodeOffer, AvailabilityError> {
        let (name, cores) = text
            .split_once(':')
            .ok_or_else(|| self.error(line, "expected 'NAME:CORES'", text))?;
        Ok(NodeOffer {
            name: self.name(line, name)?,
            cores: self.count(line, cores, "the core count")?,
            cpus: None,
            line,
        })
    }

    fn nodefile(&self, lines: &[DataLine]) -> Result<Vec<NodeOffer>, AvailabilityError> {
        let mut offers: Vec<NodeOffer> = Vec::new();
        let mut index_of: HashMap<String, usize> = HashMap::new();
        for &(line, text) in lines {
            let name = self.name(line, text)?;
            match index_of.get(&name) {
                Some(&k) if offers[k].cores >= MAX_CORES_PER_NODE => {
                    return Err(self.error(
                        line,
                        format!("more than {MAX_CORES_PER_NODE} slots for one node"),
                        text,
                    ));
                }
                Some(&k) => offers[k].cores += 1,
                None => {
                    index_of.insert(name.clone(), offers.len());
                    offers.push(NodeOffer {
                        name,
                        cores: 1,
                        cpus: None,
                        line,
                    });
                }
            }
        }
        Ok(offers)
    }

    fn reject_duplicates(&self, offers: &[NodeOffer]) -> Result<(), AvailabilityError> {
        let mut first_line: HashMap<&str, usize> = HashMap::with_capacity(offers.len());
        for o in offers {
            if let Some(&first) = first_line.get(o.name.as_str()) {
                return Err(AvailabilityError::Duplicate {
                    origin: self.origin.to_owned(),
                    line: o.line,
                    first,
                    name: o.name.clone(),
                });
            }
            first_line.insert(&o.name, o.line);
        }
        Ok(())
    }
}

/// Host-name rules: dot-separated labels of letters, digits and inner hyphens, at most
/// 253 characters (so no space, newline, `=` or `#` can reach a written rankfile).
///
/// ```
/// assert!(rankmig::availability::is_hostname("node-01.cluster"));
/// assert!(!rankmig::availability::is_hostname("n1 slot=0\nrank 1=evil"));
/// ```
pub fn is_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

#[cfg(test)]
mod tests {
    use super::super::Availability;
    use super::*;

    fn parse_auto(text: &str) -> Result<Availability, AvailabilityError> {
        Availability::parse(text, "av.txt", AvailabilityFormat::Auto)
    }

    #[test]
    fn native_form_with_comments_zero_and_cpus() {
        let a = parse_auto("# nodes\nnode01 16\n\nnode02 0 # drained\nnode03 8 cpus=0-3,8-11\n")
            .unwrap();
        assert_eq!(a.nodes().len(), 2);
        assert_eq!(a.cores("node02"), 0);
        assert_eq!(a.cores("absent"), 0);
        assert_eq!(
            a.node("node03").unwrap().cpus.as_deref(),
            Some(&[0, 1, 2, 3, 8, 9, 10, 11][..])
        );
        assert_eq!(a.total_cores(), 24);
    }

    #[test]
    fn the_other_forms_are_detected() {
        let h = parse_auto("n1 slots=4 max_slots=8\nn2 slots=2\n").unwrap();
        assert_eq!((h.cores("n1"), h.cores("n2")), (4, 2));
        let c = parse_auto("n1:4\nn2:2\n").unwrap();
        assert_eq!((c.cores("n1"), c.cores("n2")), (4, 2));
        let f = parse_auto("n1\nn2\nn1\nn1\n").unwrap();
        assert_eq!((f.cores("n1"), f.cores("n2")), (3, 1));
        assert_eq!(f.nodes()[0].name, "n1");
    }

    #[test]
    fn errors_name_file_line_and_value() {
        let e = |t: &str| parse_auto(t).unwrap_err().to_string();
        assert_eq!(
            e("n1 2\nn1 3\n"),
            "av.txt:2: node 'n1' is already listed on line 1"
        );
        assert_eq!(
            e("n1 -2\n"),
            "av.txt:1: the core count must be a non-negative integer: '-2'"
        );
        assert_eq!(
            e("n1 2.5\n"),
            "av.txt:1: the core count must be a non-negative integer: '2.5'"
        );
        assert!(e("n1 4 cpus=0-2\n").contains("has 3 cpus but the line offers 4 cores"));
        assert!(e("bad_name 4\n").starts_with("av.txt:1: not a valid node name"));
        assert_eq!(
            e("n1 0\n# n2 4\n"),
            "av.txt: no cores available at all; the job keeps its current placement"
        );
        assert!(e("").contains("no cores available"));
        assert!(e("n1 2 3 4\n").contains("expected 'NAME CORES [cpus=LIST]'"));
    }

    #[test]
    fn sizes_above_the_bounds_are_errors_naming_file_line_and_value() {
        let e = |t: &str| parse_auto(t).unwrap_err().to_string();
        for big in ["18446744073709551615", "100000000", "65537"] {
            let msg = e(&format!("n1 2\nn2 {big}\n"));
            assert!(msg.starts_with("av.txt:2: "), "{msg}");
            assert!(msg.contains(big) && msg.contains("65536"), "{msg}");
            let msg = e(&format!("n1 slots={big}\n"));
            assert!(msg.starts_with("av.txt:1: ") && msg.contains(big), "{msg}");
            let msg = e(&format!("n1:{big}\n"));
            assert!(msg.starts_with("av.txt:1: ") && msg.contains(big), "{msg}");
        }
        let msg = e("n1 4 cpus=0-16777216\n");
        assert!(msg.starts_with("av.txt:1: "), "{msg}");
        assert!(msg.contains("0-16777216") && msg.contains("65535"), "{msg}");
        let msg = e("n1 4 cpus=0-3,18446744073709551615\n");
        assert!(msg.contains("18446744073709551615"), "{msg}");
        // The bound itself is accepted.
        assert_eq!(parse_auto("n1 65536\n").unwrap().cores("n1"), 65536);
        let nodefile = "n1\n".repeat(65537);
        let msg = e(&nodefile);
        assert!(msg.starts_with("av.txt:65537: "), "{msg}");
    }

    #[test]
    fn repeated_slots_and_cpus_are_refused() {
        let e = |t: &str| parse_auto(t).unwrap_err().to_string();
        assert_eq!(
            e("n1 slots=2 slots=8\n"),
            "av.txt:1: slots= is given twice: 'n1 slots=2 slots=8'"
        );
        assert!(e("n1 slots=2 max_slots=4 max_slots=8\n").contains("max_slots= is given twice"));
        assert_eq!(
            e("n1 2 cpus=0,0,1\n"),
            "av.txt:1: the cpu list names cpu 0 twice: '0,0,1'"
        );
        assert!(e("n1 4 cpus=0-3,2\n").contains("names cpu 2 twice"));
        assert!(e("n1 2 cpus=0 cpus=1\n").contains("expected 'NAME CORES [cpus=LIST]'"));
    }

    #[test]
    fn a_hundred_thousand_lines_parse_and_a_late_duplicate_is_found() {
        let mut text = String::new();
        for k in 0..100_000 {
            text.push_str(&format!("node{k} 16 cpus=0-7,16-23\n"));
        }
        let a = parse_auto(&text).unwrap();
        assert_eq!(a.nodes().len(), 100_000);
        let nodefile = (0..100_000).map(|k| format!("n{k}\n")).collect::<String>();
        assert_eq!(parse_auto(&nodefile).unwrap().nodes().len(), 100_000);
        let late_duplicate = format!("{text}node5 2\n");
        assert!(
            parse_auto(&late_duplicate)
                .unwrap_err()
                .to_string()
                .contains("line 6")
        );
        // The time (quadratic duplicate checks took 12-14 s) is in benches/large_inputs.
    }

    #[test]
    fn diff_names_changes() {
        let a = parse_auto("n1 2\nn2 2\nn3 2\n").unwrap();
        let b = parse_auto("n2 4\nn3 2\nn4 1\n").unwrap();
        let d = a.diff(&b);
        assert_eq!(d.added, vec![("n4".to_owned(), 1)]);
        assert_eq!(d.removed, vec![("n1".to_owned(), 2)]);
        assert_eq!(d.changed, vec![("n2".to_owned(), 2, 4)]);
        assert!(a.diff(&a).is_empty());
    }
}
