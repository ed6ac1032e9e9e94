//! Code actions (quick fixes, fix all, noqa) and hover.
use super::text::{Document, Encoding};
use super::{to_lsp, Session, FIX_ALL_KIND};
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, Hover, HoverContents,
    MarkupContent, MarkupKind, NumberOrString, Position, TextEdit, Uri, WorkspaceEdit,
};
use std::collections::HashMap;
use torchvet_diagnostics::{Applicability, Diagnostic};
use torchvet_python::SourceFile;

fn wants(only: Option<&Vec<CodeActionKind>>, kind: &CodeActionKind) -> bool {
    match only {
        None => true,
        Some(list) if list.is_empty() => true,
        // `source.fixAll` asks for `source.fixAll.torchvet` too (kinds are hierarchical).
        Some(list) => list.iter().any(|k| {
            kind.as_str() == k.as_str() || kind.as_str().starts_with(&format!("{}.", k.as_str()))
        }),
    }
}

fn edit(uri: &Uri, edits: Vec<TextEdit>) -> WorkspaceEdit {
    let mut changes = HashMap::new();
    changes.insert(uri.clone(), edits);
    WorkspaceEdit {
        changes: Some(changes),
        ..WorkspaceEdit::default()
    }
}

fn overlaps(d: &Diagnostic, start: usize, end: usize) -> bool {
    d.range.0 <= end && start <= d.range.1
}

/// The code actions for a range: quick fixes and noqa for the findings it touches, and fix
/// all for the document.
pub(crate) fn code_actions(
    session: &mut Session<'_>,
    params: &CodeActionParams,
) -> Vec<CodeActionOrCommand> {
    let uri = &params.text_document.uri;
    let enc = session.encoding;
    let only = params.context.only.as_ref();
    let mut out = Vec::new();
    let Some(open) = session.documents.get(uri) else {
        return out;
    };
    let doc = &open.doc;
    let start = doc.offset(params.range.start, enc);
    let end = doc.offset(params.range.end, enc);
    // The findings under the range, and those the client names in the context (editors send
    // the cursor's line diagnostics with an empty range at the cursor).
    let named = |d: &Diagnostic| {
        params.context.diagnostics.iter().any(|c| {
            c.code == Some(NumberOrString::String(d.code.to_string()))
                && c.range == doc.range(d.range.0, d.range.1, enc)
        })
    };
    if wants(only, &CodeActionKind::QUICKFIX) {
        for d in open
            .diagnostics
            .iter()
            .filter(|d| overlaps(d, start, end) || named(d))
        {
            let lsp_diag = to_lsp(d, doc, uri, enc, &session.documents);
            if let Some(fix) = &d.fix {
                if fix.applicability != Applicability::DisplayOnly && !fix.edits.is_empty() {
                    let safe = fix.applicability == Applicability::Safe;
                    let edits = fix
                        .edits
                        .iter()
                        .map(|e| TextEdit {
                            range: doc.range(e.start, e.end, enc),
                            new_text: e.content.clone(),
                        })
                        .collect();
                    out.push(CodeActionOrCommand::CodeAction(CodeAction {
                        title: format!(
                            "{}: {}{}",
                            d.name,
                            fix.message,
                            if safe {
                                ""
                            } else {
                                " (unsafe: may change behaviour)"
                            }
                        ),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![lsp_diag.clone()]),
                        edit: Some(edit(uri, edits)),
                        is_preferred: Some(safe),
                        ..CodeAction::default()
                    }));
                }
            }
            if let Some(e) = noqa_edit(doc, d, enc) {
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: format!("Disable {} for this line (# noqa)", d.name),
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![lsp_diag]),
                    edit: Some(edit(uri, vec![e])),
                    is_preferred: Some(false),
                    ..CodeAction::default()
                }));
            }
        }
    }
    let fix_all = CodeActionKind::new(FIX_ALL_KIND);
    let has_safe = open.diagnostics.iter().any(|d| {
        d.fix
            .as_ref()
            .is_some_and(|f| f.applicability == Applicability::Safe)
    });
    if has_safe && wants(only, &fix_all) {
        let path = open.path.clone();
        let text = doc.text.clone();
        let (ws, _) = session.settings.for_file(&path);
        if let Ok(source) = SourceFile::from_bytes(path.clone(), text.clone().into_bytes(), false) {
            let ctx = session.fix_context(&path, &source);
            let outcome = ws.linter.fix_in(&source, "", false, &ctx);
            if outcome.text != text {
                let open = &session.documents[uri];
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: "torchvet: fix all safely fixable findings".into(),
                    kind: Some(fix_all),
                    edit: Some(edit(uri, vec![minimal_edit(&open.doc, &outcome.text, enc)])),
                    ..CodeAction::default()
                }));
            }
        }
    }
    out
}

/// One edit that turns the document's text into `new`, covering only what changed.
fn minimal_edit(doc: &Document, new: &str, enc: Encoding) -> TextEdit {
    let old = doc.text.as_str();
    let mut prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(prefix) || !new.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let max_suffix = (old.len() - prefix).min(new.len() - prefix);
    let mut suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(old.len() - suffix) || !new.is_char_boundary(new.len() - suffix) {
        suffix -= 1;
    }
    TextEdit {
        range: doc.range(prefix, old.len() - suffix, enc),
        new_text: new[prefix..new.len() - suffix].to_string(),
    }
}

/// Add the rule to the line's `# noqa: ...` list, or append `  # noqa: <rule>`.
fn noqa_edit(doc: &Document, d: &Diagnostic, enc: Encoding) -> Option<TextEdit> {
    let line = doc.lines.line_of(d.range.0);
    let (start, end) = doc.lines.line_range(&doc.text, line);
    let text = &doc.text[start..end];
    if let Some(pos) = find_noqa_list(text) {
        // `pos` is the end of the existing code list.
        let at = start + pos;
        return Some(TextEdit {
            range: doc.range(at, at, enc),
            new_text: format!(", {}", d.name),
        });
    }
    if text.contains("# noqa") {
        // A bare `# noqa` already suppresses everything; nothing sensible to add.
        return None;
    }
    let trimmed = text.trim_end().len();
    let at = start + trimmed;
    Some(TextEdit {
        range: doc.range(at, start + text.len(), enc),
        new_text: format!("  # noqa: {}", d.name),
    })
}

/// In a line with `# noqa: A, B`, the byte offset just after `B`.
fn find_noqa_list(line: &str) -> Option<usize> {
    let i = line.find("# noqa:")?;
    let after = i + "# noqa:".len();
    let rest = &line[after..];
    let mut end = after;
    let mut seen_code = false;
    for (j, c) in rest.char_indices() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            seen_code = true;
            end = after + j + c.len_utf8();
        } else if c == ',' || c == ' ' || c == '\t' {
            continue;
        } else {
            break;
        }
    }
    seen_code.then_some(end)
}

/// The documentation of the rules whose findings cover `pos`.
pub(crate) fn hover(session: &Session<'_>, uri: &Uri, pos: Position) -> Option<Hover> {
    let open = session.documents.get(uri)?;
    let offset = open.doc.offset(pos, session.encoding);
    let mut seen = Vec::new();
    let mut parts = Vec::new();
    let mut range = None;
    for d in &open.diagnostics {
        if d.range.0 <= offset && offset <= d.range.1 && !seen.contains(&d.code) {
            seen.push(d.code);
            range.get_or_insert_with(|| open.doc.range(d.range.0, d.range.1, session.encoding));
            let docs = torchvet_linter::find_rule(d.code)
                .map(|i| torchvet_linter::all_rules()[i].docs_text())
                .unwrap_or_default();
            parts.push(format!(
                "### {} `{}` ({})\n\n{}\n\n{}\n\n[Documentation]({})",
                d.code,
                d.name,
                d.severity,
                d.message,
                docs.trim(),
                d.url
            ));
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: parts.join("\n\n---\n\n"),
        }),
        range,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noqa_list_end() {
        assert_eq!(find_noqa_list("x = 1  # noqa: TV007, foo-bar"), Some(29));
        assert_eq!(find_noqa_list("x = 1  # noqa: TV007  # other"), Some(20));
        assert_eq!(find_noqa_list("x = 1  # noqa"), None);
    }

    #[test]
    fn minimal_edit_covers_the_change_only() {
        let doc = Document::new("a = 1\nb = torch.load(p)\nc = 3\n".into(), 1);
        let e = minimal_edit(
            &doc,
            "a = 1\nb = torch.load(p, weights_only=True)\nc = 3\n",
            Encoding::Utf16,
        );
        assert_eq!(e.range.start, Position::new(1, 16));
        assert_eq!(e.range.end, Position::new(1, 16));
        assert_eq!(e.new_text, ", weights_only=True");
    }
}
