//! Facts from one Python file or notebook: torch imports, `nn.Module` subclasses, CUDA use,
//! training loops, export and profiler calls. Parsed with ruff's parser; nothing is executed.

use crate::LineIndex;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use std::collections::HashMap;

/// A line of interest: 1-based line, optional notebook cell (1-based), trimmed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub line: u32,
    pub cell: Option<u32>,
    pub text: String,
}

/// A class definition with its bases, as qualified names where imports tell.
#[derive(Debug, Clone)]
pub(crate) struct ClassInfo {
    pub name: String,
    pub bases: Vec<String>,
    pub hit: Hit,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct PyFacts {
    pub torch_imports: Vec<Hit>,
    pub classes: Vec<ClassInfo>,
    pub cuda: Vec<Hit>,
    /// (backward hit, step hit) pairs found in one function body.
    pub training: Vec<Hit>,
    pub export: Vec<Hit>,
    pub profile: Vec<Hit>,
    pub has_main_guard: bool,
    pub parse_error: bool,
}

/// Analyse Python source (`cell` is set for notebook cells).
pub(crate) fn scan_source(source: &str, cell: Option<u32>, facts: &mut PyFacts) {
    let Ok(parsed) = ruff_python_parser::parse_module(source) else {
        facts.parse_error = true;
        return;
    };
    let index = LineIndex::new(source);
    let mut v = Scanner {
        source,
        index: &index,
        cell,
        aliases: HashMap::new(),
        facts,
        scopes: vec![Scope::default()],
    };
    v.visit_body(&parsed.syntax().body);
    v.close_scope();
}

/// Analyse a notebook's code cells (magics and shell escapes are blanked).
pub(crate) fn scan_notebook(json_text: &str, facts: &mut PyFacts) {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(json_text) else {
        facts.parse_error = true;
        return;
    };
    let Some(cells) = json.get("cells").and_then(|c| c.as_array()) else {
        return;
    };
    for (i, cell) in cells.iter().enumerate() {
        if cell.get("cell_type").and_then(|t| t.as_str()) != Some("code") {
            continue;
        }
        let src = match cell.get("source") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(|x| x.as_str()).collect(),
            _ => continue,
        };
        let cleaned: String = src
            .lines()
            .map(|l| {
                let t = l.trim_start();
                if t.starts_with('%') || t.starts_with('!') {
                    "\n".to_string()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        scan_source(&cleaned, Some(i as u32 + 1), facts);
    }
}

#[derive(Default)]
struct Scope {
    backward: Option<Hit>,
    step: Option<Hit>,
}

struct Scanner<'a> {
    source: &'a str,
    index: &'a LineIndex,
    cell: Option<u32>,
    /// local name -> qualified name (`nn` -> `torch.nn`).
    aliases: HashMap<String, String>,
    facts: &'a mut PyFacts,
    scopes: Vec<Scope>,
}

impl Scanner<'_> {
    fn hit(&self, node: &impl Ranged) -> Hit {
        let line = self.index.line(node.range().start().to_usize());
        let text = self
            .source
            .lines()
            .nth(line as usize - 1)
            .unwrap_or("")
            .trim();
        let text: String = text.chars().take(160).collect();
        Hit {
            line,
            cell: self.cell,
            text,
        }
    }

    fn qualified(&self, e: &Expr) -> Option<String> {
        match e {
            Expr::Name(n) => Some(
                self.aliases
                    .get(n.id.as_str())
                    .cloned()
                    .unwrap_or_else(|| n.id.to_string()),
            ),
            Expr::Attribute(a) => {
                Some(format!("{}.{}", self.qualified(&a.value)?, a.attr.as_str()))
            }
            _ => None,
        }
    }

    fn close_scope(&mut self) {
        if let Some(scope) = self.scopes.pop() {
            if let (Some(b), Some(_)) = (scope.backward, scope.step) {
                self.facts.training.push(b);
            }
        }
    }

    fn is_cuda_str(e: &Expr) -> bool {
        match e {
            Expr::StringLiteral(s) => {
                let v = s.value.to_str();
                v == "cuda" || v.starts_with("cuda:")
            }
            Expr::If(i) => Self::is_cuda_str(&i.body) || Self::is_cuda_str(&i.orelse),
            _ => false,
        }
    }
}

fn is_torch_module(q: &str) -> bool {
    q == "torch" || q.starts_with("torch.")
}

impl<'a> Visitor<'a> for Scanner<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(imp) => {
                for alias in &imp.names {
                    let full = alias.name.as_str();
                    if is_torch_module(full) {
                        let h = self.hit(stmt);
                        self.facts.torch_imports.push(h);
                    }
                    match &alias.asname {
                        Some(asname) => {
                            self.aliases.insert(asname.to_string(), full.to_string());
                        }
                        None => {
                            let first = full.split('.').next().unwrap_or(full).to_string();
                            self.aliases.insert(first.clone(), first);
                        }
                    }
                }
            }
            Stmt::ImportFrom(imp) => {
                let module = imp.module.as_ref().map(|m| m.as_str()).unwrap_or("");
                if imp.level == 0 && is_torch_module(module) {
                    let h = self.hit(stmt);
                    self.facts.torch_imports.push(h);
                }
                if module.starts_with("torch.profiler") || module == "torch.autograd.profiler" {
                    let h = self.hit(stmt);
                    self.facts.profile.push(h);
                }
                for alias in &imp.names {
                    let local = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    let q = if imp.level == 0 {
                        format!("{module}.{}", alias.name.as_str())
                    } else {
                        alias.name.to_string()
                    };
                    if q == "torch.profiler" {
                        let h = self.hit(stmt);
                        self.facts.profile.push(h);
                    }
                    self.aliases.insert(local, q);
                }
            }
            Stmt::ClassDef(c) => {
                let bases = c
                    .arguments
                    .as_ref()
                    .map(|a| a.args.iter().filter_map(|b| self.qualified(b)).collect())
                    .unwrap_or_default();
                let h = self.hit(stmt);
                self.facts.classes.push(ClassInfo {
                    name: c.name.to_string(),
                    bases,
                    hit: h,
                });
                // `def training_step` in a LightningModule is a training loop the Trainer runs.
                for s in &c.body {
                    if let Stmt::FunctionDef(f) = s {
                        if f.name.as_str() == "training_step" {
                            let h = self.hit(s);
                            self.facts.training.push(h);
                        }
                    }
                }
                visitor::walk_stmt(self, stmt);
                return;
            }
            Stmt::FunctionDef(_) => {
                self.scopes.push(Scope::default());
                visitor::walk_stmt(self, stmt);
                self.close_scope();
                return;
            }
            Stmt::If(i) => {
                if let Expr::Compare(c) = i.test.as_ref() {
                    let is_name =
                        matches!(c.left.as_ref(), Expr::Name(n) if n.id.as_str() == "__name__");
                    let is_main = c.comparators.iter().any(
                        |e| matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "__main__"),
                    );
                    if is_name && is_main {
                        self.facts.has_main_guard = true;
                    }
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            if let Expr::Attribute(attr) = call.func.as_ref() {
                let method = attr.attr.as_str();
                match method {
                    "cuda" if call.arguments.args.len() <= 1 => {
                        let recv = self.qualified(&attr.value);
                        // `torch.cuda` is a module access, not `.cuda()` on a tensor/module.
                        if recv.as_deref() != Some("torch") {
                            let h = self.hit(expr);
                            self.facts.cuda.push(h);
                        }
                    }
                    "to" if call.arguments.args.iter().any(Self::is_cuda_str) => {
                        let h = self.hit(expr);
                        self.facts.cuda.push(h);
                    }
                    "backward" => {
                        let h = self.hit(expr);
                        if let Some(s) = self.scopes.last_mut() {
                            s.backward.get_or_insert(h);
                        }
                    }
                    "step" => {
                        let recv = self
                            .qualified(&attr.value)
                            .unwrap_or_default()
                            .to_ascii_lowercase();
                        if recv.contains("optim")
                            || recv.ends_with("opt")
                            || recv.contains("scaler")
                            || recv.contains("accelerator")
                        {
                            let h = self.hit(expr);
                            if let Some(s) = self.scopes.last_mut() {
                                s.step.get_or_insert(h);
                            }
                        }
                    }
                    _ => {}
                }
            }
            if let Some(q) = self.qualified(&call.func) {
                match q.as_str() {
                    "torch.device"
                        if call.arguments.args.first().is_some_and(Self::is_cuda_str) =>
                    {
                        let h = self.hit(expr);
                        self.facts.cuda.push(h);
                    }
                    "torch.onnx.export"
                    | "torch.onnx.dynamo_export"
                    | "torch.export.export"
                    | "torch.export.save"
                    | "torch.jit.trace"
                    | "torch.jit.script"
                    | "torch.jit.save"
                    | "torch._export.aot_compile"
                    | "torch._inductor.aot_compile" => {
                        let h = self.hit(expr);
                        self.facts.export.push(h);
                    }
                    _ if q.starts_with("torch.profiler.")
                        || q.starts_with("torch.autograd.profiler.") =>
                    {
                        let h = self.hit(expr);
                        self.facts.profile.push(h);
                    }
                    _ => {}
                }
            }
            for kw in &call.arguments.keywords {
                if kw.arg.as_ref().is_some_and(|a| a.as_str() == "device")
                    && Self::is_cuda_str(&kw.value)
                {
                    let h = self.hit(expr);
                    self.facts.cuda.push(h);
                }
            }
        }
        visitor::walk_expr(self, expr);
    }
}

/// Is a base name `nn.Module` or a Lightning module (after alias resolution)?
pub(crate) fn is_module_base(q: &str) -> bool {
    matches!(
        q,
        "torch.nn.Module"
            | "torch.nn.modules.Module"
            | "torch.nn.modules.module.Module"
            | "nn.Module"
            | "pytorch_lightning.LightningModule"
            | "pytorch_lightning.core.LightningModule"
            | "lightning.LightningModule"
            | "lightning.pytorch.LightningModule"
            | "pl.LightningModule"
            | "L.LightningModule"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_facts() {
        let src = r#"
import torch
import torch.nn as nn
from torch.profiler import profile

class Net(nn.Module):
    pass

def train(model, opt, loader):
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()

model = Net().cuda()
x = torch.zeros(1, device="cuda")
torch.onnx.export(model, x, "m.onnx")
if __name__ == "__main__":
    train(model, None, [])
"#;
        let mut f = PyFacts::default();
        scan_source(src, None, &mut f);
        assert_eq!(f.torch_imports.len(), 3);
        let mut g = PyFacts::default();
        scan_source("import torchvision\nimport lightning as L\n", None, &mut g);
        assert!(g.torch_imports.is_empty());
        assert_eq!(f.classes[0].bases, vec!["torch.nn.Module"]);
        assert_eq!(f.training.len(), 1);
        assert_eq!(f.training[0].line, 12);
        assert_eq!(f.cuda.len(), 2);
        assert_eq!(f.export.len(), 1);
        assert_eq!(f.profile.len(), 1);
        assert!(f.has_main_guard);
    }
}
