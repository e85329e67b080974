//! Parsers for the options every command shares: worker counts (one, a list or
//! a range), durations. One concept, one option name, one parser: see the
//! README of the `tutti` command (`tutti --help`) for the scheme.

/// Parses a worker count: a positive integer of sane size.
pub fn parse_workers(s: &str) -> Result<usize, String> {
    let w: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a worker count"))?;
    if !(1..=1024).contains(&w) {
        return Err(format!("worker count must be in 1..=1024, got {w}"));
    }
    Ok(w)
}

/// Several counts of something, given as one (`4`), a list (`1,2,4`) or an
/// inclusive range (`1..4`); in the order given, without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts(pub Vec<usize>);

impl Counts {
    /// The largest count.
    pub fn max(&self) -> usize {
        self.0.iter().copied().max().unwrap_or(1)
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// Parses [`Counts`] of `what` (for the messages), each in `1..=max`.
pub fn parse_counts(s: &str, what: &str, max: usize) -> Result<Counts, String> {
    let one = |t: &str| -> Result<usize, String> {
        let n: usize = t
            .trim()
            .parse()
            .map_err(|_| format!("`{t}` is not a {what} count"))?;
        if !(1..=max).contains(&n) {
            return Err(format!("{what} counts must be in 1..={max}, got {n}"));
        }
        Ok(n)
    };
    let mut counts: Vec<usize> = if let Some((a, b)) = s.split_once("..") {
        let (a, b) = (one(a)?, one(b.trim_start_matches('='))?);
        if a > b {
            return Err(format!("`{s}` is an empty range"));
        }
        (a..=b).collect()
    } else {
        s.split(',').map(one).collect::<Result<_, _>>()?
    };
    let mut seen = std::collections::HashSet::new();
    counts.retain(|c| seen.insert(*c));
    Ok(Counts(counts))
}

/// Parses worker counts: `2`, `1,2,4` or `1..4`.
pub fn parse_worker_counts(s: &str) -> Result<Counts, String> {
    parse_counts(s, "worker", 1024)
}

/// Parses a duration in seconds for the commands' `--seconds` options (0.01 to 3600).
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(0.01..=3600.0).contains(&v) {
        return Err(format!("seconds must be in 0.01..=3600, got {s}"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_one_a_list_or_a_range() {
        assert_eq!(parse_worker_counts("3"), Ok(Counts(vec![3])));
        assert_eq!(parse_worker_counts("1,2,4"), Ok(Counts(vec![1, 2, 4])));
        assert_eq!(parse_worker_counts("1..4"), Ok(Counts(vec![1, 2, 3, 4])));
        assert_eq!(parse_worker_counts("1..=2"), Ok(Counts(vec![1, 2])));
        assert_eq!(parse_worker_counts("2,2,1"), Ok(Counts(vec![2, 1])));
        for bad in ["0", "x", "4..1", "1,,2", "2000", "-1"] {
            assert!(parse_worker_counts(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_worker_counts("1..4").unwrap().max(), 4);
        assert_eq!(parse_worker_counts("1..3").unwrap().to_string(), "1,2,3");
    }
}
