//! GUID lists (root switches, compute and I/O nodes, a routing order): one `0x` GUID per
//! line, `#` comments and blank lines skipped, anything after the GUID on its line ignored.
//! Matching the GUIDs against a fabric is the caller's; this reads the text.

use super::{text, ParseError};

/// The GUIDs of a list with the (1-based) line of each, in file order. An empty list is not
/// an error here (the caller knows whether it may be empty).
pub fn parse_guid_list(data: &[u8], file: &str) -> Result<Vec<(u64, usize)>, ParseError> {
    let t = text::decode(data);
    let mut v = Vec::new();
    for (i, line) in t.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let tok = l.split_whitespace().next().unwrap_or("");
        let g = tok
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| {
                ParseError::new(
                    file,
                    i + 1,
                    format!("expected a GUID like 0x0002c90300a1b2c4, found {tok:?}"),
                )
            })?;
        v.push((g, i + 1));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_with_lines_comments_and_errors() {
        let t = b"# roots\n\n0x0002c90300a1b2c4 spine-1\n  0xAB\n";
        assert_eq!(
            parse_guid_list(t, "r").unwrap(),
            vec![(0x0002c90300a1b2c4, 3), (0xab, 4)]
        );
        let e = parse_guid_list(b"0x1\nspine-1\n", "r").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("\"spine-1\""), "{e}");
        assert_eq!(parse_guid_list(b"0x\n", "r").unwrap_err().line, 1);
        assert_eq!(
            parse_guid_list(b"0x1ffffffffffffffff\n", "r")
                .unwrap_err()
                .line,
            1
        );
        assert!(parse_guid_list(b"", "r").unwrap().is_empty());
    }
}
