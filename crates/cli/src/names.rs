//! Engine names as users type them: an unknown name is a usage error (exit 2) that names the
//! closest known one, never a failed attempt that a chain skips.

use anyhow::Result;
use routing::engines::{lookup, Engine, ENGINES};

/// Levenshtein distance between two short ASCII-lowercased names.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (
        a.to_ascii_lowercase().chars().collect(),
        b.to_ascii_lowercase().chars().collect(),
    );
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The name (or alias) of an `allowed` engine closest to `name`, when it is close enough to
/// be a typo.
fn closest(name: &str, allowed: &[&str]) -> Option<&'static str> {
    ENGINES
        .iter()
        .filter(|e| allowed.contains(&e.name))
        .flat_map(|e| std::iter::once(e.name).chain(e.aliases.iter().copied()))
        .map(|n| (distance(name, n), n))
        .filter(|&(d, n)| d <= 2.max(n.len() / 3))
        .min()
        .map(|(_, n)| n)
}

/// `name` checked against the registry: a usage error naming the closest engine, and every
/// engine `allowed` lists (`what` says which they are: "engines", "RFTR bases").
pub fn check(name: &str, what: &str, allowed: &[&str]) -> Result<()> {
    if lookup(name).is_some() {
        return Ok(());
    }
    let hint = closest(name, allowed)
        .map(|n| format!("did you mean {n:?}? "))
        .unwrap_or_default();
    crate::usage_bail!(
        "unknown engine {name:?}: {hint}({what}: {})",
        allowed.join(", ")
    )
}

/// Every name of a `-R a,b,c` chain checked before any routing starts.
pub fn check_chain(names: &[&str]) -> Result<()> {
    if names.is_empty() {
        crate::usage_bail!("no engine given");
    }
    let all = routing::engines::engine_names();
    for n in names {
        check(n, "engines", &all)?;
    }
    Ok(())
}

/// The engine called `name`, or the usage error of [`check`].
pub fn engine(name: &str, what: &str, allowed: &[&str]) -> Result<Box<dyn Engine>> {
    check(name, what, allowed)?;
    Ok(routing::engines::by_name(name).expect("checked above"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_engine() {
        let all = routing::engines::engine_names();
        assert_eq!(closest("updnn", &all), Some("updn"));
        assert_eq!(closest("ftre", &all), Some("ftree"));
        assert_eq!(closest("DFSSP", &all), Some("dfsssp"));
        assert_eq!(closest("minhopp", &["updn", "dor"]), None);
        assert_eq!(closest("completely-else", &all), None);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
