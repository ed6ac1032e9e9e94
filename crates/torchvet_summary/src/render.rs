//! The text form of model cards.

use crate::{Dim, Layer, ModelCard};
use std::fmt::Write as _;

/// `50,240`
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `[64, 784]`, `[64, ?]`, `?`
pub(crate) fn shape(s: &Option<Vec<Dim>>) -> String {
    match s {
        None => "?".to_string(),
        Some(dims) => format!(
            "[{}]",
            dims.iter()
                .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn params(l: &Layer) -> String {
    match l.params {
        Some(n) => thousands(n),
        None if l.known_params > 0 => format!("? (>= {})", thousands(l.known_params)),
        None => "?".to_string(),
    }
}

fn same_structure(a: &Layer, b: &Layer) -> bool {
    let mut a = a.clone();
    let mut b = b.clone();
    a.name.clear();
    b.name.clear();
    a.line = 0;
    b.line = 0;
    a == b
}

fn row(out: &mut String, depth: usize, name: &str, ty: &str, count: &str, note: Option<&str>) {
    let indent = "  ".repeat(depth);
    let name_col = format!("{indent}{name}");
    let ty: String = if ty.chars().count() > 52 {
        format!("{}...", ty.chars().take(49).collect::<String>())
    } else {
        ty.to_string()
    };
    let mut line = format!("  {name_col:<30} {ty:<52} {count:>14}");
    if let Some(n) = note {
        line.push_str("  ");
        line.push_str(n);
    }
    let _ = writeln!(out, "{}", line.trim_end());
}

fn layer_type(l: &Layer) -> String {
    format!("{}({})", l.type_name, l.args)
}

fn tree(out: &mut String, l: &Layer, depth: usize) {
    let mut i = 0;
    while i < l.children.len() {
        let c = &l.children[i];
        row(
            out,
            depth,
            &c.name,
            &layer_type(c),
            &params(c),
            c.note.as_deref(),
        );
        tree(out, c, depth + 1);
        // Collapse a run of identical siblings (`blocks.1` ... `blocks.11`).
        let mut j = i + 1;
        while j < l.children.len() && same_structure(c, &l.children[j]) {
            j += 1;
        }
        if j - i > 2 {
            let first = &l.children[i + 1].name;
            let last = &l.children[j - 1].name;
            let each = params(c);
            row(
                out,
                depth,
                &format!("{first}..{last}"),
                &format!("{} x {} (same as {})", j - i - 1, c.type_name, c.name),
                &format!("{each} each"),
                None,
            );
            i = j;
        } else {
            i += 1;
        }
    }
}

/// Render cards as text: header, layer tree with counts, total, state_dict.
pub fn render_text(cards: &[ModelCard], file: &str) -> String {
    let mut out = String::new();
    if cards.is_empty() {
        let _ = writeln!(out, "{file}: no nn.Module subclasses found");
        return out;
    }
    for (k, card) in cards.iter().enumerate() {
        if k > 0 {
            let _ = writeln!(out);
        }
        let _ = writeln!(
            out,
            "{} ({file}:{}, bases: {})",
            card.name,
            card.line,
            card.bases.join(", ")
        );
        if !card.init_args.is_empty() {
            let args: Vec<String> = card
                .init_args
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            let _ = writeln!(out, "  __init__ arguments used: {}", args.join(", "));
        }
        let _ = writeln!(out);
        row(&mut out, 0, "Layer", "Type", "Params", None);
        for t in card.root.tensors.iter() {
            let kind = match t.kind {
                crate::TensorKind::Parameter => "Parameter",
                crate::TensorKind::Buffer => "buffer",
            };
            let count = match (t.kind, t.numel()) {
                (crate::TensorKind::Buffer, _) => "-".to_string(),
                (_, Some(n)) => thousands(n),
                (_, None) => "?".to_string(),
            };
            row(
                &mut out,
                0,
                &t.name,
                &format!("{kind} {}", shape(&t.shape)),
                &count,
                None,
            );
        }
        tree(&mut out, &card.root, 0);
        let _ = writeln!(out);
        match card.total_params {
            Some(n) => {
                let _ = writeln!(out, "  Total params: {}", thousands(n));
            }
            None => {
                let _ = writeln!(
                    out,
                    "  Total params: ? ({} known; {} layer(s) depend on run-time values)",
                    thousands(card.known_params),
                    card.unknown_layers
                );
            }
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "  state_dict ({} entries):", card.state_dict.len());
        let width = card
            .state_dict
            .iter()
            .map(|e| e.key.len())
            .max()
            .unwrap_or(0)
            .min(60);
        for e in &card.state_dict {
            let suffix = if e.kind == crate::TensorKind::Buffer {
                "  (buffer)"
            } else {
                ""
            };
            let _ = writeln!(out, "    {:<width$}  {}{suffix}", e.key, shape(&e.shape));
        }
        if !card.notes.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "  Notes:");
            for n in &card.notes {
                let _ = writeln!(out, "    - {n}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        assert_eq!(thousands(50240), "50,240");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(shape(&Some(vec![Some(64), None])), "[64, ?]");
    }
}
