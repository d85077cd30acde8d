//! Text plumbing for the line-oriented readers (ibnetdiscover, ibsim, opensm-subnet.lst):
//!
//! - [`decode`] and [`Lines`]: bytes → text (invalid UTF-8 replaced, never an error) → lines
//!   with 1-based numbers, `\n` or `\r\n` endings;
//! - [`Cursor`]: a tiny scanner over one line (whitespace is spaces and tabs) that never
//!   slices inside a UTF-8 sequence and never panics;
//! - number parsers that report overflow instead of wrapping;
//! - recognisers for what terminals add to captured dumps (prompts, tool warnings).

use std::borrow::Cow;

// Lines

/// The file's text without a leading UTF-8 byte-order mark; invalid UTF-8 sequences become
/// U+FFFD (which keeps every `\n`, so line numbers are those of the raw bytes). Borrows when
/// the input is valid UTF-8.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(bytes)
}

/// Number of lines as an editor counts them: `\n`-terminated lines plus a final unterminated
/// one. An empty text has 0 lines.
pub fn line_count(text: &str) -> usize {
    let n = text.bytes().filter(|&b| b == b'\n').count();
    if text.is_empty() || text.ends_with('\n') {
        n
    } else {
        n + 1
    }
}

/// One line of input: 1-based number and text without the line ending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    pub no: usize,
    pub text: &'a str,
}

/// Iterator over the lines of a text. `\r\n` and `\n` end lines; a trailing `\r` is dropped.
#[derive(Clone, Debug)]
pub struct Lines<'a> {
    rest: &'a str,
    no: usize,
    done: bool,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        Lines {
            rest: text,
            no: 0,
            done: text.is_empty(),
        }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;
    fn next(&mut self) -> Option<Line<'a>> {
        if self.done {
            return None;
        }
        self.no += 1;
        let (line, rest) = match self.rest.find('\n') {
            Some(i) => (self.rest.get(..i).unwrap_or(""), self.rest.get(i + 1..)),
            None => (self.rest, None),
        };
        match rest {
            Some(r) if !r.is_empty() => self.rest = r,
            _ => self.done = true,
        }
        let text = line.strip_suffix('\r').unwrap_or(line);
        Some(Line { no: self.no, text })
    }
}

// ---------------------------------------------------------------------------------------------
// Scanning

/// Whitespace inside a line: space, tab, and the rarer ASCII blanks.
#[inline]
pub fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c' | b'\r')
}

/// Trims [`is_ws`] from both ends.
pub fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_ascii() && is_ws(c as u8))
}

/// A position in one line. All moves stop at ASCII bytes or at the end, so every slice is on a
/// character boundary; slicing goes through `str::get` anyway.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(s: &'a str) -> Self {
        Cursor { s, pos: 0 }
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }
    pub fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }
    /// The unread rest of the line.
    pub fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }
    pub fn skip_ws(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(is_ws) {
            self.pos += 1;
        }
        self.pos > start
    }
    /// Moves `n` bytes forward (clamped to the end). Callers pass lengths of text they have
    /// already scanned, so the position stays on a character boundary.
    pub fn advance(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n).min(self.s.len());
    }
    /// Consumes `b` if it is next.
    pub fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    /// Consumes `word` if the rest starts with it.
    pub fn eat_str(&mut self, word: &str) -> bool {
        if self.rest().starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }
    /// Consumes ASCII bytes while `pred` holds (non-ASCII bytes always stop).
    pub fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii() && pred(b)) {
            self.pos += 1;
        }
        self.s.get(start..self.pos).unwrap_or("")
    }
    /// Consumes a run of non-whitespace characters (any UTF-8).
    pub fn token(&mut self) -> &'a str {
        let rest = self.rest();
        let end = rest
            .char_indices()
            .find(|&(_, c)| c.is_ascii() && is_ws(c as u8))
            .map_or(rest.len(), |(i, _)| i);
        self.pos += end;
        rest.get(..end).unwrap_or("")
    }
    /// Parses `"text"` at the cursor. `Ok(None)`: no quote here; `Err(())`: no closing quote.
    #[allow(clippy::result_unit_err)]
    pub fn quoted(&mut self) -> Result<Option<&'a str>, ()> {
        if self.peek() != Some(b'"') {
            return Ok(None);
        }
        let inner = self.s.get(self.pos + 1..).unwrap_or("");
        match inner.find('"') {
            Some(e) => {
                self.pos += e + 2;
                Ok(Some(inner.get(..e).unwrap_or("")))
            }
            None => Err(()),
        }
    }
    /// A decimal or `0x` hexadecimal number (see [`parse_num`]); `None` leaves the cursor.
    pub fn number(&mut self) -> Option<u64> {
        let save = self.pos;
        let tok = self.take_while(|b| b.is_ascii_alphanumeric());
        match parse_num(tok) {
            Some(v) => Some(v),
            None => {
                self.pos = save;
                None
            }
        }
    }
    /// A run of hexadecimal digits (no `0x`), at most 16.
    pub fn hex(&mut self) -> Option<u64> {
        let save = self.pos;
        let tok = self.take_while(|b| b.is_ascii_hexdigit());
        match parse_hex(tok) {
            Some(v) => Some(v),
            None => {
                self.pos = save;
                None
            }
        }
    }
}

/// Decimal digits, overflow-checked.
pub fn parse_dec(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, b| {
        acc.checked_mul(10)?.checked_add((b - b'0') as u64)
    })
}

/// Hexadecimal digits without prefix, 1 to 16 of them (leading zeros allowed beyond 16).
pub fn parse_hex(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, b| {
        let d = (b as char).to_digit(16)? as u64;
        acc.checked_mul(16)?.checked_add(d)
    })
}

/// A GUID written `0x<hex>` (as infiniband-diags print them); 0 is not a GUID.
pub fn hex_guid(s: &str) -> Option<u64> {
    s.strip_prefix("0x").and_then(parse_hex).filter(|&g| g != 0)
}

/// `0x…` hexadecimal or decimal (like `strtoul(s, 0, 0)` without the octal surprise).
pub fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => parse_hex(h),
        None => parse_dec(s),
    }
}

/// Reads a port number: 1..=254 fits the model's `u8` with 255 reserved.
pub fn port_num(v: u64) -> Option<u8> {
    u8::try_from(v).ok().filter(|&p| p != u8::MAX)
}

/// Looks like an interactive shell prompt captured with the output:
/// `[root@head ~]# ibnetdiscover`, `user@host:~$ cmd`, `$ cmd`.
pub fn is_shell_prompt(line: &str) -> bool {
    let t = trim(line);
    if let Some(inner) = t.strip_prefix('[') {
        if let Some(close) = inner.find(']') {
            let (head, after) = (inner.get(..close).unwrap_or(""), inner.get(close + 1..));
            let after = after.map(|a| a.trim_start()).unwrap_or("");
            return head.contains('@') && (after.starts_with('#') || after.starts_with('$'));
        }
        return false;
    }
    if t == "$" || t.starts_with("$ ") {
        return true;
    }
    // user@host:dir$ … or user@host:dir# …
    let first = t.split([' ', '\t']).next().unwrap_or("");
    first.contains('@') && (first.ends_with('$') || first.ends_with('#') || first.ends_with('>'))
        || is_appliance_prompt(t)
}

/// The prompt of a switch or UFM appliance CLI (MLNX-OS style), possibly followed by a
/// command: `ufm01 [ mgmt-ha-active ] (config) #`, `switch-a1 [standalone: master] > show`,
/// `sx6036 (config) # show ib`, `ufm01 >`. A host name (letters, digits, `-_.`, at least one
/// letter), an optional `[ … ]` group, an optional `( … )` group, then `#` or `>` alone.
fn is_appliance_prompt(t: &str) -> bool {
    let end = t.find(char::is_whitespace).unwrap_or(t.len());
    let host = &t[..end];
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && host.chars().any(|c| c.is_ascii_alphabetic());
    if !host_ok {
        return false;
    }
    let mut rest = t[end..].trim_start();
    for (open, close) in [('[', ']'), ('(', ')')] {
        if let Some(r) = rest.strip_prefix(open) {
            let Some(i) = r.find(close) else {
                return false;
            };
            rest = r[i + 1..].trim_start();
        }
    }
    let mut c = rest.chars();
    matches!(c.next(), Some('#' | '>')) && c.next().is_none_or(char::is_whitespace)
}

/// Diagnostics printed by the infiniband-diags tools on stderr (`ibwarn: [1234] …`).
pub fn is_tool_noise(line: &str) -> bool {
    let t = trim(line);
    t.starts_with("ibwarn:")
        || t.starts_with("ibwarn ")
        || t.starts_with("ibpanic:")
        || t.starts_with("ibnetdiscover:")
        || t.starts_with("ibnd_")
        || t.starts_with("src/")
        || t.starts_with("mad_rpc")
        || t.starts_with("umad_")
}

/// A short, printable excerpt of a line for messages. Control characters show as their
/// Unicode pictures (a tab as `␉`, an escape as `␛`), never as a character a file could
/// hold itself.
pub fn excerpt(s: &str) -> String {
    let t = trim(s);
    let mut out: String = t.chars().take(60).map(picture).collect();
    if t.chars().count() > 60 {
        out.push('…');
    }
    out
}

/// `c` itself, or for a control character its picture (U+2400 block; U+FFFD for C1).
fn picture(c: char) -> char {
    match c as u32 {
        x @ 0..=0x1f => char::from_u32(0x2400 + x).unwrap_or('\u{fffd}'),
        0x7f => '\u{2421}',
        _ if c.is_control() => '\u{fffd}',
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_show_control_characters_as_pictures() {
        assert_eq!(excerpt("a\tb\u{1b}[0m"), "a\u{2409}b\u{241b}[0m");
        assert_eq!(excerpt("x\u{7f}y\u{85}"), "x\u{2421}y\u{fffd}");
        let long = "é".repeat(70);
        assert_eq!(excerpt(&long).chars().count(), 61);
    }

    #[test]
    fn lines_numbers_and_endings() {
        let v: Vec<_> = Lines::new("a\r\nb\n\nc").map(|l| (l.no, l.text)).collect();
        assert_eq!(v, vec![(1, "a"), (2, "b"), (3, ""), (4, "c")]);
        assert_eq!(line_count("a\r\nb\n\nc"), 4);
        assert_eq!(Lines::new("x\n").count(), 1);
        assert_eq!(line_count("x\n"), 1);
        assert_eq!(Lines::new("").count(), 0);
        assert_eq!(line_count(""), 0);
        assert_eq!(Lines::new("\n\n").count(), 2);
    }

    #[test]
    fn numbers_do_not_overflow() {
        assert_eq!(parse_num("0x10"), Some(16));
        assert_eq!(parse_num("42"), Some(42));
        assert_eq!(parse_num("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_num("18446744073709551616"), None);
        assert_eq!(parse_hex("ffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_hex("1ffffffffffffffff"), None);
        assert_eq!(parse_num(""), None);
        assert_eq!(parse_num("0x"), None);
        assert_eq!(port_num(255), None);
        assert_eq!(port_num(254), Some(254));
    }

    #[test]
    fn cursor_is_safe_on_utf8() {
        let mut c = Cursor::new("é\"ü\" x");
        assert_eq!(c.take_while(|b| b != b'"'), "");
        assert_eq!(c.token(), "é\"ü\"");
        c.skip_ws();
        assert_eq!(c.rest(), "x");
        let mut c = Cursor::new("\"open");
        assert_eq!(c.quoted(), Err(()));
    }

    #[test]
    fn prompts() {
        assert!(is_shell_prompt("[root@head ~]# ibnetdiscover"));
        assert!(is_shell_prompt("user@login1:~$ ibnetdiscover > f"));
        assert!(is_shell_prompt("$ ibnetdiscover"));
        assert!(!is_shell_prompt("[1]\t\"S-0002c90200400000\"[3]"));
        assert!(!is_shell_prompt("[3](2c9) \"H-1\"[1]"));
        assert!(is_shell_prompt(
            "sat11-0101-0902-02ufm [ mgmt-ha-active ] (config) # "
        ));
        assert!(is_shell_prompt("switch-a1 [standalone: master] > show ib"));
        assert!(is_shell_prompt("sx6036 (config) # show interfaces ib"));
        assert!(is_shell_prompt("ufm01 >"));
        // Data lines of the readers that skip prompts are not prompts.
        for data in [
            "Switch\t36 \"S-0002c90200400000\"\t\t# \"leaf\" enhanced port 0 lid 1",
            "Switch 36 \"S-1\" # \"desc\" enhanced port 0 lid 1",
            "Hca\t1 \"H-1\"\t\t# \"node\"",
            "Switch: 0x0002c90300a1b2c3 MF0;sw:MSB7700/U1:",
            "          1    1[  ] ==( 4X  25.78125 Gbps Active/  LinkUp)==>  0x1 2 1[  ] \"h\" ( )",
            "vendid=0x2c9",
            "# comment >",
            "CA: MT4123 host # x",
            "1 #",
        ] {
            assert!(!is_shell_prompt(data), "{data}");
        }
    }
}
