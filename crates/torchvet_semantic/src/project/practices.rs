//! Practices: the calls that tell how a project trains, recorded from the syntax tree while a
//! file is summarised, for the reviewer's checklist and its "positive aspects" (seeds, device
//! choice, `torch.compile`, `torch.load(weights_only=...)`, mixed precision, DataLoader tuning,
//! `no_grad` / `inference_mode`, distributed setup, `set_epoch`, `zero_grad(set_to_none=...)`,
//! `.to(device, non_blocking=True)`) and whether the file has a `__main__` guard.
//!
//! Callees are resolved through the file's imports (any import statement of the file, module
//! level or not: notebooks import in later cells), so `from torch.utils.data import
//! DataLoader as DL; DL(ds)` is `torch.utils.data.DataLoader`. Methods (`.to`, `.set_epoch`,
//! `.zero_grad`) are recorded by name, with a leading dot. Keyword arguments are kept with
//! their literal value when they have one.
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap;

/// The literal value of a keyword argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lit {
    /// `True` / `False`.
    Bool(bool),
    /// An integer literal.
    Int(i64),
    /// A string literal.
    Str(Box<str>),
    /// `None`.
    None,
    /// Anything else (a name, an expression).
    Other,
}

impl Lit {
    fn of(e: &Expr) -> Lit {
        match e {
            Expr::BooleanLiteral(b) => Lit::Bool(b.value),
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => i.as_i64().map_or(Lit::Other, Lit::Int),
                _ => Lit::Other,
            },
            Expr::StringLiteral(s) => Lit::Str(s.value.to_str().into()),
            Expr::NoneLiteral(_) => Lit::None,
            _ => Lit::Other,
        }
    }

    /// Is it a literal that is "on" (`True`, a non-zero integer)?
    pub fn is_on(&self) -> bool {
        matches!(self, Lit::Bool(true)) || matches!(self, Lit::Int(i) if *i != 0)
    }

    /// Is it a literal that is "off" (`False`, `0`, `None`)?
    pub fn is_off(&self) -> bool {
        matches!(self, Lit::Bool(false) | Lit::Int(0) | Lit::None)
    }
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ApiUse {
    /// The qualified callee (`torch.manual_seed`, `torch.utils.data.DataLoader`), or `.name`
    /// for a method call (`.to`, `.set_epoch`, `.zero_grad`).
    pub name: Box<str>,
    /// The call.
    pub range: TextRange,
    /// Keyword arguments and their literal values.
    pub kwargs: Vec<(Box<str>, Lit)>,
    /// Number of positional arguments.
    pub nargs: u16,
    /// For `.to(...)`: the first argument names a device (`device`, `self.device`,
    /// `"cuda"`, `torch.device(...)`, `args.device`), not a dtype.
    pub device_arg: bool,
    /// For `.to(...)`: the device is another object's (`.to(x.device)`), not one the code
    /// chose.
    pub follows_tensor: bool,
}

impl ApiUse {
    /// A keyword argument's literal value.
    pub fn kwarg(&self, name: &str) -> Option<&Lit> {
        self.kwargs
            .iter()
            .find(|(k, _)| &**k == name)
            .map(|(_, v)| v)
    }
}

/// The practices of a file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Practices {
    /// Recorded calls, in source order.
    pub uses: Vec<ApiUse>,
    /// The file has `if __name__ == "__main__":`.
    pub main_guard: bool,
}

/// Calls that seed a random generator.
pub const SEEDS: &[&str] = &[
    "torch.manual_seed",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "torch.random.manual_seed",
    "numpy.random.seed",
    "random.seed",
    "pytorch_lightning.seed_everything",
    "lightning.seed_everything",
    "lightning.pytorch.seed_everything",
    "transformers.set_seed",
];

/// The mixed-precision calls (autocast, GradScaler, in their current and deprecated spellings).
pub const AMP: &[&str] = &[
    "torch.autocast",
    "torch.amp.autocast",
    "torch.cuda.amp.autocast",
    "torch.cpu.amp.autocast",
    "torch.amp.GradScaler",
    "torch.cuda.amp.GradScaler",
];

/// Qualified callees recorded besides [`SEEDS`] and [`AMP`] (exact names, after resolution
/// through the imports).
pub const RECORDED: &[&str] = &[
    "torch.use_deterministic_algorithms",
    // device
    "torch.device",
    "torch.cuda.is_available",
    "torch.backends.mps.is_available",
    // compile
    "torch.compile",
    // checkpoints
    "torch.load",
    "torch.save",
    // mixed precision: see AMP
    // data
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
    // autograd off
    "torch.no_grad",
    "torch.inference_mode",
    "torch.set_grad_enabled",
    // distributed
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.distributed.init_process_group",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.utils.data.distributed.DistributedSampler",
    "torch.utils.data.DistributedSampler",
];

/// Methods recorded (by name).
const METHODS: &[&str] = &["to", "cuda", "set_epoch", "zero_grad", "unscale_"];

struct Collector<'a> {
    imports: &'a FxHashMap<String, String>,
    out: Practices,
}

fn dotted(e: &Expr, out: &mut Vec<String>) -> bool {
    match e {
        Expr::Name(n) => {
            out.push(n.id.to_string());
            true
        }
        Expr::Attribute(a) if dotted(&a.value, out) => {
            out.push(a.attr.to_string());
            true
        }
        _ => false,
    }
}

/// Does an expression name a device (for `.to(x)`)?
fn names_device(e: &Expr) -> bool {
    match e {
        Expr::StringLiteral(s) => {
            let v = s.value.to_str();
            v.starts_with("cuda") || v == "cpu" || v == "mps"
        }
        Expr::Name(n) => n.id.as_str().to_ascii_lowercase().contains("device"),
        Expr::Attribute(a) => {
            a.attr.as_str().to_ascii_lowercase().contains("device") || names_device(&a.value)
        }
        Expr::Call(c) => {
            let mut parts = Vec::new();
            dotted(&c.func, &mut parts)
                && parts
                    .last()
                    .is_some_and(|l| l == "device" || l == "get_device")
        }
        _ => false,
    }
}

impl Collector<'_> {
    fn resolve(&self, func: &Expr) -> Option<String> {
        let mut parts = Vec::new();
        if !dotted(func, &mut parts) {
            return None;
        }
        let head = self.imports.get(&parts[0])?;
        let mut q = head.clone();
        for p in &parts[1..] {
            q.push('.');
            q.push_str(p);
        }
        Some(q)
    }

    fn record(&mut self, call: &ast::ExprCall) {
        let name = match &*call.func {
            Expr::Attribute(a) if METHODS.contains(&a.attr.as_str()) => {
                // A method, unless the receiver is an imported module (`torch.cuda(...)`).
                match self.resolve(&call.func) {
                    Some(q) if is_recorded(&q) => q,
                    _ => format!(".{}", a.attr),
                }
            }
            func => {
                let last = match func {
                    Expr::Name(n) => n.id.as_str(),
                    Expr::Attribute(a) => a.attr.as_str(),
                    _ => return,
                };
                let aliased = matches!(func, Expr::Name(_)) && self.imports.contains_key(last);
                if !aliased
                    && !RECORDED
                        .iter()
                        .chain(SEEDS)
                        .chain(AMP)
                        .any(|r| r.rsplit('.').next() == Some(last))
                {
                    return;
                }
                match self.resolve(func) {
                    // Either spelling of `torch.load` is recorded as one name.
                    Some(q) if crate::helpers::is_torch_load(&q) => "torch.load".into(),
                    Some(q) if is_recorded(&q) => q,
                    _ => return,
                }
            }
        };
        let device_arg = name == ".to"
            && (call.arguments.args.first().is_some_and(names_device)
                || call
                    .arguments
                    .keywords
                    .iter()
                    .any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "device")));
        let follows_tensor = device_arg
            && call.arguments.args.first().is_some_and(|a| {
                matches!(a, Expr::Attribute(at) if at.attr.as_str() == "device"
                    && !matches!(&*at.value, Expr::Name(n) if n.id.as_str() == "self" || n.id.as_str() == "args"))
            });
        self.out.uses.push(ApiUse {
            name: name.into(),
            range: call.range(),
            kwargs: call
                .arguments
                .keywords
                .iter()
                .filter_map(|k| Some((Box::from(k.arg.as_ref()?.as_str()), Lit::of(&k.value))))
                .collect(),
            nargs: call.arguments.args.len() as u16,
            device_arg,
            follows_tensor,
        });
    }
}

impl<'a> Visitor<'a> for Collector<'_> {
    fn visit_stmt(&mut self, s: &'a Stmt) {
        if let Stmt::If(i) = s {
            if is_main_test(&i.test) {
                self.out.main_guard = true;
            }
        }
        visitor::walk_stmt(self, s);
    }

    fn visit_expr(&mut self, e: &'a Expr) {
        if let Expr::Call(c) = e {
            self.record(c);
        }
        visitor::walk_expr(self, e);
    }
}

fn is_main_test(e: &Expr) -> bool {
    let Expr::Compare(c) = e else { return false };
    let sides = std::iter::once(&*c.left).chain(c.comparators.iter());
    let mut name = false;
    let mut main = false;
    for s in sides {
        match s {
            Expr::Name(n) if n.id.as_str() == "__name__" => name = true,
            Expr::StringLiteral(l) if l.value.to_str() == "__main__" => main = true,
            _ => {}
        }
    }
    name && main
}

fn collect_imports(body: &[Stmt], out: &mut FxHashMap<String, String>) {
    struct Imports<'m>(&'m mut FxHashMap<String, String>);
    impl<'a> Visitor<'a> for Imports<'_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            match s {
                Stmt::Import(i) => {
                    for a in &i.names {
                        let full = a.name.as_str();
                        match &a.asname {
                            Some(as_) => {
                                self.0.insert(as_.to_string(), full.to_string());
                            }
                            None => {
                                let head = full.split('.').next().unwrap_or(full);
                                self.0.insert(head.to_string(), head.to_string());
                            }
                        }
                    }
                }
                Stmt::ImportFrom(i) if i.level == 0 => {
                    if let Some(m) = &i.module {
                        for a in &i.names {
                            let bound = a.asname.as_ref().unwrap_or(&a.name);
                            self.0
                                .insert(bound.to_string(), format!("{}.{}", m.as_str(), a.name));
                        }
                    }
                }
                _ => {}
            }
            visitor::walk_stmt(self, s);
        }
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    let mut v = Imports(out);
    for s in body {
        v.visit_stmt(s);
    }
}

/// Record the practices of a module.
pub fn extract(body: &[Stmt]) -> Practices {
    let mut imports = FxHashMap::default();
    collect_imports(body, &mut imports);
    let mut c = Collector {
        imports: &imports,
        out: Practices::default(),
    };
    for s in body {
        c.visit_stmt(s);
    }
    c.out
}

fn is_recorded(q: &str) -> bool {
    RECORDED.contains(&q) || SEEDS.contains(&q) || AMP.contains(&q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn practices(src: &str) -> Practices {
        let source = torchvet_python::SourceFile::from_python("t.py", src.to_string());
        let parsed = source.parse();
        extract(&parsed.syntax().body)
    }

    #[test]
    fn either_spelling_of_torch_load_is_one_name() {
        let p = practices(
            "from torch.serialization import load\nimport torch.serialization as ser\n\
             a = load(p, weights_only=True)\nb = ser.load(q)\n",
        );
        let names: Vec<&str> = p.uses.iter().map(|u| &*u.name).collect();
        assert_eq!(names, ["torch.load", "torch.load"]);
        assert_eq!(p.uses[0].kwarg("weights_only"), Some(&Lit::Bool(true)));
    }

    #[test]
    fn resolves_aliases_and_keeps_literal_kwargs() {
        let p = practices(
            "import torch\nfrom torch.utils.data import DataLoader as DL\nimport numpy as np\n\
             def main():\n    torch.manual_seed(0)\n    np.random.seed(0)\n    \
             dl = DL(ds, num_workers=2, pin_memory=True)\n    model.to(device, non_blocking=True)\n    \
             x.to(torch.float16)\n    ck = torch.load(p, weights_only=True)\n\
             if __name__ == '__main__':\n    main()\n",
        );
        let names: Vec<&str> = p.uses.iter().map(|u| &*u.name).collect();
        assert_eq!(
            names,
            [
                "torch.manual_seed",
                "numpy.random.seed",
                "torch.utils.data.DataLoader",
                ".to",
                ".to",
                "torch.load"
            ]
        );
        assert_eq!(p.uses[2].kwarg("num_workers"), Some(&Lit::Int(2)));
        assert!(p.uses[3].device_arg);
        assert!(!p.uses[4].device_arg);
        assert_eq!(p.uses[5].kwarg("weights_only"), Some(&Lit::Bool(true)));
        assert!(p.main_guard);
    }

    #[test]
    fn unrelated_names_are_not_recorded() {
        let p = practices("def load(x):\n    pass\nload(1)\nseed(3)\n");
        assert!(p.uses.is_empty());
        assert!(!p.main_guard);
    }
}
