//! `# noqa`, `# noqa: a, b` and the file-level `# torchvet: noqa`.
use crate::registry::Rule;
use ruff_python_ast::token::{TokenKind, Tokens};
use ruff_text_size::Ranged;
use rustc_hash::FxHashMap;
use torchvet_python::SourceFile;

/// A suppression directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// Everything.
    All,
    /// Only these names / codes / TorchFix codes.
    Codes(Vec<String>),
}

impl Directive {
    /// Does it suppress `rule`?
    pub fn suppresses(&self, rule: &Rule) -> bool {
        match self {
            Directive::All => true,
            Directive::Codes(codes) => codes.iter().any(|c| {
                c == rule.name
                    || c.eq_ignore_ascii_case(rule.code)
                    || rule.torchfix.iter().any(|t| t.eq_ignore_ascii_case(c))
            }),
        }
    }
}

/// Parse the part of a comment after `noqa`.
fn parse_codes(rest: &str) -> Directive {
    let rest = rest.trim_start();
    let Some(list) = rest.strip_prefix(':') else {
        return Directive::All;
    };
    let codes: Vec<String> = list
        .split([',', ' ', '\t'])
        .map(str::trim)
        .take_while(|s| !s.starts_with('#'))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if codes.is_empty() {
        Directive::All
    } else {
        Directive::Codes(codes)
    }
}

/// Find `noqa` in one comment.
fn line_directive(comment: &str) -> Option<Directive> {
    // A comment may hold several `#` parts: `# type: ignore # noqa: x`.
    for part in comment.split('#').skip(1) {
        let p = part.trim_start();
        if p.get(..4).is_some_and(|w| w.eq_ignore_ascii_case("noqa")) {
            return Some(parse_codes(&p[4..]));
        }
    }
    None
}

fn file_directive(comment: &str) -> Option<Directive> {
    let body = comment.trim_start_matches('#').trim();
    let rest = body.strip_prefix("torchvet:")?.trim_start();
    if rest
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("noqa"))
    {
        Some(parse_codes(&rest[4..]))
    } else {
        None
    }
}

/// The suppressions of one file.
#[derive(Debug, Default)]
pub struct NoqaMap {
    lines: FxHashMap<usize, Directive>,
    file: Vec<Directive>,
}

impl NoqaMap {
    /// Read the comments of a parsed file.
    pub fn new(source: &SourceFile, tokens: &Tokens) -> Self {
        let mut map = NoqaMap::default();
        for tok in tokens.iter() {
            if tok.kind() != TokenKind::Comment {
                continue;
            }
            let text = source
                .text
                .get(tok.start().to_usize()..tok.end().to_usize())
                .unwrap_or("");
            if let Some(d) = file_directive(text) {
                map.file.push(d);
            } else if let Some(d) = line_directive(text) {
                map.lines.insert(source.line_index.line_of(tok.start()), d);
            }
        }
        map
    }

    /// Is a finding of `rule` on 0-based `line` suppressed?
    pub fn suppressed(&self, rule: &Rule, line: usize) -> bool {
        self.file.iter().any(|d| d.suppresses(rule))
            || self.lines.get(&line).is_some_and(|d| d.suppresses(rule))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_directives() {
        assert_eq!(line_directive("# noqa"), Some(Directive::All));
        assert_eq!(
            line_directive("#NOQA:TV007"),
            Some(Directive::Codes(vec!["TV007".into()]))
        );
        assert_eq!(
            line_directive("# type: ignore # noqa: torch-load-without-weights-only, TOR102"),
            Some(Directive::Codes(vec![
                "torch-load-without-weights-only".into(),
                "TOR102".into()
            ]))
        );
        assert_eq!(line_directive("# just a comment"), None);
        assert_eq!(file_directive("# torchvet: noqa"), Some(Directive::All));
        assert_eq!(
            file_directive("# torchvet: noqa: TV007"),
            Some(Directive::Codes(vec!["TV007".into()]))
        );
        assert_eq!(file_directive("# noqa"), None);
        // Non-ASCII comments (box drawing, accents) never split a character.
        assert_eq!(line_directive("# ──────────"), None);
        assert_eq!(line_directive("#é"), None);
        assert_eq!(file_directive("# torchvet: ─"), None);
    }
}
