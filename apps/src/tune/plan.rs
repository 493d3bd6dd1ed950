//! What chorus-tune measures: the collectives and message sizes from the command line,
//! and the cases of the tuning pass and of the check of the tuned runtime.

use chorus_sections::tune::measure::{message_bytes, Case};
use chorus_sections::tune::{Collective, Impl, COLLECTIVES};

/// The collectives named by `--collectives` (`all` or a comma list).
pub fn collectives(spec: &str) -> Result<Vec<Collective>, String> {
    if spec.trim() == "all" {
        return Ok(COLLECTIVES.to_vec());
    }
    let mut out = Vec::new();
    for name in spec.split(',').map(str::trim) {
        let c = Collective::parse(name).ok_or_else(|| {
            let known: Vec<&str> = COLLECTIVES.iter().map(|c| c.name()).collect();
            format!(
                "--collectives: {name:?} is not one of all, {}",
                known.join(", ")
            )
        })?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

/// The largest `--sizes` value, bytes per member (1 TiB; memory is checked apart).
pub const MAX_SIZE: u64 = 1 << 40;

/// The message sizes of `--sizes`, as the bytes the values really have, increasing.
pub fn sizes(spec: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for s in spec.split(',').map(str::trim) {
        let b = crate::cli::u64_in(s, 1, MAX_SIZE).map_err(|e| format!("--sizes {s:?}: {e}"))?;
        out.push(message_bytes(b));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The tuning pass: every collective's default and mock-ups at every size.
pub fn tuning_cases(colls: &[Collective], sizes: &[u64]) -> Vec<Case> {
    cases(colls, sizes, false)
}

/// The check: the tuned runtime, the default and every mock-up at every size.
pub fn check_cases(colls: &[Collective], sizes: &[u64]) -> Vec<Case> {
    cases(colls, sizes, true)
}

fn cases(colls: &[Collective], sizes: &[u64], tuned: bool) -> Vec<Case> {
    let mut out = Vec::new();
    for &collective in colls {
        for &bytes in sizes {
            let mut choices = Vec::new();
            if tuned {
                choices.push(None);
            }
            choices.push(Some(Impl::Default));
            choices.extend(
                collective
                    .mock_ups()
                    .into_iter()
                    .map(|m| Some(Impl::MockUp(m))),
            );
            out.extend(choices.into_iter().map(|choice| Case {
                collective,
                choice,
                bytes,
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_bad_ones_are_explained() {
        assert_eq!(collectives("all").unwrap().len(), 6);
        assert_eq!(
            collectives("scan, reduce,scan").unwrap(),
            vec![Collective::Scan, Collective::Reduce]
        );
        assert!(collectives("bcast").unwrap_err().contains("allgather"));
        assert_eq!(sizes("64,1,8,100").unwrap(), vec![8, 64, 96]);
        assert!(sizes("8,x").is_err() && sizes("0").is_err());
        let c = check_cases(&[Collective::Reduce], &[8, 64]);
        assert_eq!(c.len(), 2 * 3);
        assert_eq!(c[0].choice, None);
        assert_eq!(tuning_cases(&[Collective::Reduce], &[8]).len(), 2);
    }
}
