//! `torchvet rules` and `torchvet rule NAME`.
use crate::args::{ListFormat, RuleArgs, RulesArgs};
use crate::printer;
use serde_json::json;
use std::fmt::Write;
use torchvet_linter::{all_rules, find_rule, Rule};

fn status(r: &Rule) -> &'static str {
    if r.preview {
        "preview"
    } else {
        "stable"
    }
}

fn rule_json(r: &Rule) -> serde_json::Value {
    json!({
        "name": r.name,
        "code": r.code,
        "group": r.group.as_str(),
        "severity": r.severity.as_str(),
        "title": r.title,
        "default": r.default_on && !r.preview,
        "status": status(r),
        "autofix": r.autofix.as_str(),
        "torchfix": r.torchfix,
        "docs": r.docs_text(),
    })
}

pub fn list(args: &RulesArgs) -> u8 {
    let rules = all_rules();
    match args.format {
        ListFormat::Json => {
            let v: Vec<_> = rules.iter().map(|r| rule_json(r)).collect();
            printer::out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&v).unwrap_or_default()
            ));
        }
        ListFormat::Text => {
            let mut s = String::new();
            let _ = writeln!(
                s,
                "{:<6} {:<44} {:<16} {:<9} {:<8} {:<8} TORCHFIX",
                "CODE", "NAME", "GROUP", "SEVERITY", "DEFAULT", "STATUS"
            );
            for r in rules {
                let _ = writeln!(
                    s,
                    "{:<6} {:<44} {:<16} {:<9} {:<8} {:<8} {}",
                    r.code,
                    r.name,
                    r.group.as_str(),
                    r.severity.as_str(),
                    if r.default_on && !r.preview {
                        "on"
                    } else {
                        "off"
                    },
                    status(r),
                    r.torchfix.join(",")
                );
            }
            let _ = writeln!(
                s,
                "\n{} rules. `torchvet rule NAME` prints one rule's documentation.",
                rules.len()
            );
            printer::out(&s);
        }
    }
    0
}

pub fn show(args: &RuleArgs) -> u8 {
    let Some(i) = find_rule(&args.rule) else {
        printer::err(&format!(
            "error: unknown rule `{}` (see `torchvet rules` for the list)",
            args.rule
        ));
        return 2;
    };
    let r = all_rules()[i];
    match args.format {
        ListFormat::Json => printer::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&rule_json(r)).unwrap_or_default()
        )),
        ListFormat::Text => {
            let mut s = String::new();
            let _ = writeln!(s, "# {} ({})\n", r.name, r.code);
            let _ = writeln!(s, "{}\n", r.title);
            let _ = writeln!(
                s,
                "Group: {} · Severity: {} · Default: {} · Status: {} · Autofix: {}{}\n",
                r.group.as_str(),
                r.severity.as_str(),
                if r.default_on && !r.preview {
                    "on"
                } else {
                    "off"
                },
                status(r),
                r.autofix.as_str(),
                if r.torchfix.is_empty() {
                    String::new()
                } else {
                    format!(" · TorchFix: {}", r.torchfix.join(", "))
                }
            );
            s.push_str(&r.docs_text());
            printer::out(&s);
        }
    }
    0
}
