//! Whole-project model tests on small multi-file trees written to a temporary directory.
use super::*;
use thin_vec::ThinVec;
use torchvet_python::SourceFile;

struct Tree(PathBuf);

impl Tree {
    fn new(files: &[(&str, &str)]) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "torchvet-project-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("pyproject.toml"), "").unwrap();
        for (p, text) in files {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Tree(root)
    }

    fn load(path: &Path) -> Option<FileSummary> {
        let source = SourceFile::load(path).ok()?;
        let parsed = source.parse();
        Some(summarise_source(path, &source, parsed.syntax()))
    }

    /// The model of the checked files; the tree is a walked root unless `single` (the user
    /// named single files, as pre-commit does).
    fn model_with(&self, checked: &[&str], single: bool) -> Arc<ProjectModel> {
        let summaries = checked
            .iter()
            .map(|p| Self::load(&self.0.join(p)).unwrap())
            .collect();
        let roots = if single {
            Vec::new()
        } else {
            vec![self.0.clone()]
        };
        Arc::new(ProjectModel::build(summaries, roots, &Self::load))
    }

    fn model(&self, checked: &[&str]) -> Arc<ProjectModel> {
        self.model_with(checked, false)
    }

    fn id(&self, m: &ProjectModel, p: &str) -> FileId {
        m.file_id(&self.0.join(p)).unwrap()
    }

    /// The first function of that name in file `p`.
    fn func(&self, m: &ProjectModel, p: &str, name: &str) -> FuncId {
        let file = self.id(m, p);
        let index = m
            .file(file)
            .functions
            .iter()
            .position(|f| &*f.name == name)
            .unwrap() as u32;
        FuncId { file, index }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const MODELS: &str = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nclass Base(nn.Module):\n    pass\n\nclass Net(Base):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n        self.drop = nn.Dropout(0.5)\n\n    def forward(self, x):\n        return F.softmax(self.fc(self.drop(x)), dim=1)\n\nclass Plain(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\ndef build(cfg):\n    return Net()\n";

#[test]
fn classes_across_files_and_reexports() {
    let t = Tree::new(&[
        ("pkg/__init__.py", "from .models import Net, build\n"),
        ("pkg/models.py", MODELS),
        (
            "pkg/wrap.py",
            "from .models import Net\n\nclass Wrapped(Net):\n    pass\n\nclass Holder(torch_nn_Module := object):\n    pass\n",
        ),
        (
            "train.py",
            "import torch\nfrom pkg import Net, build\nimport pkg.models as m\n\nmodel = build({})\nother = m.Plain()\n",
        ),
    ]);
    let m = t.model(&[
        "pkg/__init__.py",
        "pkg/models.py",
        "pkg/wrap.py",
        "train.py",
    ]);
    let train = m.view(t.id(&m, "train.py"));
    let Some(Entity::Class(net)) = train.entity("pkg.Net") else {
        panic!("pkg.Net resolves through the package __init__")
    };
    assert!(m.is_module(net));
    assert_eq!(m.class_name(net).0, "Net");
    let (props, _) = m.forward_props(net);
    assert!(props
        .iter()
        .any(|p| p.prop == crate::dataflow::Prop::Probabilities));
    assert_eq!(m.mode_layer(net).map(|(k, _)| k), Some("Dropout"));
    let Some(Entity::Class(plain)) = train.entity("pkg.models.Plain") else {
        panic!()
    };
    assert!(m.is_module(plain));
    assert_eq!(m.mode_layer(plain), None);
    // A subclass in another file inherits module-ness and sensitivity.
    let wrap = m.view(t.id(&m, "pkg/wrap.py"));
    let Some(Entity::Class(w)) = wrap.local("Wrapped") else {
        panic!()
    };
    assert!(m.is_module(w));
    assert_eq!(m.mode_layer(w).map(|(k, _)| k), Some("Dropout"));
    // A builder's return value.
    let r = train.call_result("pkg.build");
    assert_eq!(r.kind, Kind::Module);
    assert_eq!(r.class, Some(ClassRef::Project(net)));
    // Module globals.
    let g = m.file(t.id(&m, "train.py")).global("model").cloned();
    assert!(matches!(g, Some(Val::Call { .. })));
}

#[test]
fn a_package_init_that_rebinds_a_submodule_name_wins() {
    // `from .accuracy import accuracy` in the package `__init__`: `pkg.metrics.accuracy` is
    // the function (Python looks the attribute up on the package), not `accuracy.py`.
    let t = Tree::new(&[
        ("pkg/__init__.py", ""),
        (
            "pkg/metrics/__init__.py",
            "from .accuracy import accuracy\nfrom . import rank\n",
        ),
        (
            "pkg/metrics/accuracy.py",
            "def accuracy(output, target, topk=(1,)):\n    return output\n",
        ),
        ("pkg/metrics/rank.py", "def rank(x):\n    return x\n"),
        (
            "train.py",
            "from pkg.metrics import accuracy, rank\nimport pkg.metrics.rank as r\n",
        ),
    ]);
    let m = t.model(&[
        "pkg/__init__.py",
        "pkg/metrics/__init__.py",
        "pkg/metrics/accuracy.py",
        "pkg/metrics/rank.py",
        "train.py",
    ]);
    let train = m.view(t.id(&m, "train.py"));
    let Some(Entity::Function(f)) = train.entity("pkg.metrics.accuracy") else {
        panic!("the package's rebinding is the function")
    };
    assert_eq!(f.file, t.id(&m, "pkg/metrics/accuracy.py"));
    // `from . import rank` binds the submodule itself.
    assert!(matches!(
        train.entity("pkg.metrics.rank"),
        Some(Entity::Module(r)) if r == t.id(&m, "pkg/metrics/rank.py")
    ));
}

#[test]
fn parameter_kinds_from_call_sites_and_usage() {
    let t = Tree::new(&[
        ("models.py", MODELS),
        (
            "engine.py",
            "def train_one_epoch(model, loader, optimizer, criterion):\n    model.train()\n    for x, y in loader:\n        optimizer.zero_grad()\n        loss = criterion(model(x), y)\n        loss.backward()\n        optimizer.step()\n\ndef evaluate(net, data):\n    for x, y in data:\n        net(x)\n\ndef unused(opt):\n    opt.step()\n    opt.zero_grad()\n",
        ),
        (
            "main.py",
            "import torch\nfrom models import Net\nfrom engine import train_one_epoch, evaluate\n\ndef main():\n    model = Net()\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    crit = torch.nn.CrossEntropyLoss()\n    loader = torch.utils.data.DataLoader([], batch_size=2, shuffle=True)\n    for epoch in range(3):\n        train_one_epoch(model, loader, opt, crit)\n        evaluate(model, loader)\n",
        ),
    ]);
    let m = t.model(&["models.py", "engine.py", "main.py"]);
    let engine = m.view(t.id(&m, "engine.py"));
    let Some(Entity::Function(f)) = engine.local("train_one_epoch") else {
        panic!()
    };
    let model = m.param(f, 0);
    assert_eq!(model.kind, Kind::Module);
    assert!(matches!(model.class, Some(ClassRef::Project(_))));
    assert_eq!(m.param(f, 1).kind, Kind::DataLoader);
    assert_eq!(
        m.param(f, 1).loader.as_ref().and_then(|l| l.shuffle),
        Some(true)
    );
    assert_eq!(m.param(f, 2).kind, Kind::Optimizer("SGD".into()));
    assert_eq!(m.param(f, 3).kind, Kind::Module);
    // Usage only: no call site.
    let Some(Entity::Function(u)) = engine.local("unused") else {
        panic!()
    };
    assert_eq!(m.param(u, 0).kind, Kind::Optimizer("Optimizer".into()));
    assert!(!m.is_called(u));
    // Events of train_one_epoch, per parameter.
    let ev = m.events(f);
    assert!(ev
        .iter()
        .any(|e| e.kind == EventKind::Step && e.target == Target::Param(2, "".into())));
    assert!(ev.iter().any(|e| e.kind == EventKind::Train));
    // Composed into main(): the step acts on main's local `opt`.
    let mainf = m.view(t.id(&m, "main.py"));
    let Some(Entity::Function(mf)) = mainf.local("main") else {
        panic!()
    };
    assert!(m
        .events(mf)
        .iter()
        .any(|e| e.kind == EventKind::Backward && e.depth == 1 && e.in_loop));
    // Dependents: editing models.py re-checks main.py.
    let deps = m.dependents(t.id(&m, "models.py"));
    assert!(deps.contains(&t.id(&m, "main.py")));
}

const VAE: &str = "import torch\nfrom torch import nn\n\nclass VAE(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.enc = nn.Linear(784, 40)\n        self.decoder = nn.Sequential(nn.Linear(20, 784), nn.Sigmoid())\n\n    def decode(self, z):\n        return self.decoder(z)\n\n    def forward(self, x):\n        mu, logvar = self.enc(x).chunk(2, dim=1)\n        return self.decode(mu), mu, logvar\n";

#[test]
fn tuple_forward_elements_reach_parameters_through_call_sites() {
    let t = Tree::new(&[
        ("vae.py", VAE),
        (
            "losses.py",
            "import torch\nimport torch.nn.functional as F\n\ndef vae_loss(recon: torch.Tensor, x, mu, logvar):\n    return F.binary_cross_entropy(recon, x)\n\ndef kl(mu, logvar):\n    return -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n",
        ),
        (
            "train.py",
            "from vae import VAE\nfrom losses import vae_loss, kl\n\nmodel = VAE()\n\nclass Trainer:\n    def __init__(self, model):\n        self.model = model\n\n    def step(self, x):\n        recon, mu, logvar = self.model(x)\n        return vae_loss(recon, x, mu, logvar) + kl(mu, logvar)\n\ndef run(loader):\n    for x in loader:\n        recon, mu, logvar = model(x)\n        vae_loss(recon, x, mu, logvar)\n\nTrainer(VAE())\n",
        ),
    ]);
    let m = t.model(&["vae.py", "losses.py", "train.py"]);
    let vae = m.view(t.id(&m, "vae.py"));
    let Some(Entity::Class(c)) = vae.local("VAE") else {
        panic!()
    };
    // `forward` returns a tuple: the first element is the decoder's sigmoid output, through
    // the `decode` method; the others carry nothing.
    let els = m.forward_element_props(c);
    assert_eq!(els.len(), 3);
    assert!(els[0]
        .iter()
        .any(|p| p.prop == crate::dataflow::Prop::Probabilities && p.op == "sigmoid"));
    assert!(els[1].is_empty() && els[2].is_empty());
    let losses = m.view(t.id(&m, "losses.py"));
    let Some(Entity::Function(f)) = losses.local("vae_loss") else {
        panic!()
    };
    // Every call site (a trainer's `self.model(x)`, a module-level model called in a
    // function) passes the first element: the `torch.Tensor` annotation keeps its kind and
    // gains the properties, named by the method that produces them.
    let recon = m.param(f, 0);
    assert!(recon
        .props
        .iter()
        .any(|p| p.prop == crate::dataflow::Prop::Probabilities));
    assert_eq!(
        recon.props_from.map(|g| m.function_label(g)).as_deref(),
        Some("VAE.forward")
    );
    // The other elements carry nothing.
    assert!(m.param(f, 2).props.is_empty());
    let Some(Entity::Function(k)) = losses.local("kl") else {
        panic!()
    };
    assert!(m.param(k, 0).props.is_empty());
}

#[test]
fn files_outside_the_checked_set_are_loaded_for_imports() {
    let t = Tree::new(&[
        ("models.py", MODELS),
        ("train.py", "import torch\nfrom models import Net\n"),
    ]);
    let m = t.model_with(&["train.py"], true);
    assert_eq!(m.len(), 2);
    let train = m.view(0);
    assert!(train.is_module_class("models.Net"));
    assert!(!m.is_checked(1));
}

#[test]
fn notebook_places_are_named_by_cell() {
    let nb = r##"{"cells": [
 {"cell_type": "markdown", "metadata": {}, "source": ["# Title"]},
 {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [], "source": ["import torch\n", "x = 1"]},
 {"cell_type": "code", "metadata": {}, "execution_count": 2, "outputs": [], "source": ["y = 2\n", "torch.save(x, 'm.pt')"]}
], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"##;
    let t = Tree::new(&[
        ("demo.ipynb", nb),
        ("train.py", "import torch\n\ntorch.save(1, 'a.pt')\n"),
    ]);
    let m = t.model(&["demo.ipynb", "train.py"]);
    let s = m.file(t.id(&m, "demo.ipynb"));
    let text = "import torch\nx = 1\ny = 2\ntorch.save(x, 'm.pt')";
    let at = ruff_text_size::TextSize::new(text.find("torch.save").unwrap() as u32);
    assert_eq!(s.place(at), (Some(3), 2));
    assert_eq!(s.place(ruff_text_size::TextSize::new(0)), (Some(2), 1));
    let py = m.file(t.id(&m, "train.py"));
    assert_eq!(py.place(ruff_text_size::TextSize::new(14)), (None, 3));
}

#[test]
fn no_grad_calls_and_downloaded_paths_are_project_facts() {
    let t = Tree::new(&[
        (
            "blocks.py",
            "import torch\n\nclass Block(torch.nn.Module):\n    def load_from(self, w):\n        self.fc.weight.copy_(w)\n",
        ),
        (
            "model.py",
            "import torch\n\nclass Net(torch.nn.Module):\n    def load_from(self, w):\n        with torch.no_grad():\n            for _, unit in self.body.named_children():\n                unit.load_from(w)\n        self.head.reset()\n",
        ),
        (
            "evals.py",
            "import torch\nfrom huggingface_hub import hf_hub_download\n\ndef evaluate(path):\n    return torch.load(path)\n\ndef other(path):\n    return torch.load(path)\n\nif __name__ == '__main__':\n    evaluate(hf_hub_download('r', 'f'))\n    other('local.pt')\n",
        ),
    ]);
    let m = t.model(&["blocks.py", "model.py", "evals.py"]);
    assert!(m.called_in_no_grad("load_from"));
    assert!(!m.called_in_no_grad("reset"));
    let evals = t.id(&m, "evals.py");
    let func = |name: &str| {
        let index = m
            .file(evals)
            .functions
            .iter()
            .position(|f| &*f.name == name)
            .unwrap() as u32;
        FuncId { file: evals, index }
    };
    use facts::PathShape;
    assert!(m.path_downloaded(func("evaluate"), &PathShape::Param(0)));
    assert!(!m.path_downloaded(func("other"), &PathShape::Param(0)));
}

/// The autograd facts are computed from a new parse when first asked: a notebook parses
/// cell by cell again (a later cell differentiates what a function of an earlier cell
/// returns, past a cell that does not parse), a method of a class defined inside a function sees the scopes around it, and a
/// summary whose text parses to other definitions leaves them going nowhere.
/// `set_eager_grad_flows` is process-wide: the tests that depend on which way the autograd
/// facts are computed take turns.
static EAGER_SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn autograd_facts_computed_on_demand() {
    let _turn = EAGER_SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    let cell = |src: &str| {
        let lines: Vec<String> = src
            .split_inclusive('\n')
            .map(|l| format!("{l:?}"))
            .collect();
        format!(
            "{{\"cell_type\": \"code\", \"metadata\": {{}}, \"outputs\": [], \"execution_count\": null, \"source\": [{}]}}",
            lines.join(", ")
        )
    };
    let notebook = format!(
        "{{\"cells\": [{}, {}, {}], \"metadata\": {{}}, \"nbformat\": 4, \"nbformat_minor\": 5}}",
        cell("import torch\nimport torch.nn.functional as F\n\ndef batch_loss(model, x, y):\n    return F.cross_entropy(model(x), y)\n"),
        cell("%matplotlib inline\nmodel = torch.nn.Linear(2, 2)\nunfinished = (1,\n"),
        cell("loss = batch_loss(model, torch.zeros(1, 2), torch.zeros(1).long())\nloss.backward()\n"),
    );
    let t = Tree::new(&[
        ("train.ipynb", notebook.as_str()),
        (
            "nested.py",
            "import torch\n\ndef build():\n    class Head(torch.nn.Module):\n        def score(self, x):\n            with torch.enable_grad():\n                return torch.autograd.grad(x.sum(), x)\n    return Head()\n",
        ),
    ]);
    let m = t.model(&["train.ipynb", "nested.py"]);
    let func = |file: &str, name: &str| t.func(&m, file, name);
    assert!(m.result_differentiated(func("train.ipynb", "batch_loss")));
    assert!(m.grad_flow(func("nested.py", "score")).differentiates);
    assert!(!m.grad_flow(func("nested.py", "build")).differentiates);
    // A summary made from a tree its text does not give back: nothing is found there.
    let path = t.0.join("nested.py");
    let source = SourceFile::from_python(&path, "x = 1\n".to_string());
    let other =
        torchvet_python::SourceFile::from_python(&path, std::fs::read_to_string(&path).unwrap());
    let parsed = other.parse();
    let s = summarise_source(&path, &source, parsed.syntax());
    let score = s
        .functions
        .iter()
        .position(|f| &*f.name == "score")
        .unwrap() as u32;
    assert!(!s.grad_flow(score).differentiates);
}

/// The autograd facts computed from phase 1's tree (a run that asks about every file) are
/// those a later query computes from a new parse.
#[test]
fn autograd_facts_same_eager_or_on_demand() {
    let t = Tree::new(&[(
        "train.py",
        "import torch\nimport torch.nn.functional as F\n\ndef loss_of(model, x, y):\n    return F.cross_entropy(model(x), y)\n\nclass Trainer:\n    def step(self, model, x, y):\n        loss = loss_of(model, x, y)\n        loss.backward()\n        return loss.item()\n\n    def probe(self, x):\n        torch.set_grad_enabled(False)\n        return [x.sum()]\n\ndef main(model, batches):\n    t = Trainer()\n    for x, y in batches:\n        t.step(model, x, y)\n",
    )]);
    let path = t.0.join("train.py");
    let source = SourceFile::load(&path).unwrap();
    let parsed = source.parse();
    let _turn = EAGER_SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    set_eager_grad_flows(true);
    let eager = summarise_source(&path, &source, parsed.syntax());
    set_eager_grad_flows(false);
    let lazy = summarise_source(&path, &source, parsed.syntax());
    assert_eq!(all_grad_flows(&eager), all_grad_flows(&lazy));
    let step = eager
        .functions
        .iter()
        .position(|f| &*f.name == "step")
        .unwrap() as u32;
    assert!(eager.grad_flow(step).differentiates);
}

fn all_grad_flows(s: &FileSummary) -> Vec<summary::GradFlow> {
    (0..s.functions.len() as u32)
        .map(|i| s.grad_flow(i).clone())
        .collect()
}

#[test]
fn differentiated_results_and_grad_off_entries() {
    let t = Tree::new(&[
        (
            "losses.py",
            "import torch\n\ndef mc_loss(model, x, n):\n    ls = []\n    for _ in range(n):\n        ls.append(model(x).pow(2).mean())\n    return torch.stack(ls).mean()\n\ndef val_loss(model, x):\n    return model(x).mean()\n\ndef features(params, loss):\n    return torch.autograd.grad(loss, params)\n\ndef wrapped(model, x):\n    return mc_loss(model, x, 4)\n\ndef scored(model, x):\n    return mc_loss(model, x, 4)\n",
        ),
        (
            "train.py",
            "import torch\nfrom losses import features, mc_loss, scored, val_loss, wrapped\n\ndef step(model, x, params):\n    loss = val_loss(model, x)\n    loss.backward()\n    loss = scored(model, x)\n    print(loss)\n    g = features(params=params, loss=wrapped(model, x))\n    return g\n",
        ),
        (
            "demo.py",
            "import torch\nfrom losses import val_loss\n\nclass Ctl:\n    def __init__(self, net):\n        self.net = net\n    def run(self, x):\n        return self.net(x)\n\ndef show(net, x):\n    return net(x)\n\ntorch.set_grad_enabled(False)\nctl = Ctl(torch.nn.Linear(2, 2))\nshow(ctl.net, 1)\n",
        ),
    ]);
    let m = t.model(&["losses.py", "train.py", "demo.py"]);
    let func = |file: &str, name: &str| t.func(&m, file, name);
    // Differentiated directly, and through a return and a keyword argument of a helper.
    assert!(m.result_differentiated(func("losses.py", "val_loss")));
    assert!(m.result_differentiated(func("losses.py", "wrapped")));
    assert!(m.result_differentiated(func("losses.py", "mc_loss")));
    // Bound to a name that was differentiated only before the call: printed.
    assert!(!m.result_differentiated(func("losses.py", "scored")));
    // After a module-level set_grad_enabled(False): called, or constructed.
    assert!(m.runs_without_grad(func("demo.py", "show")));
    assert!(m.runs_without_grad(func("demo.py", "run")));
    assert!(!m.runs_without_grad(func("losses.py", "val_loss")));
}

#[test]
fn a_slice_of_seven_strips_the_wrapper_prefix() {
    let t = Tree::new(&[
        (
            "main.py",
            "import torch\n\ndef resume(model, path):\n    ckpt = torch.load(path)\n    state = {k[7:]: v for k, v in ckpt['state_dict'].items()}\n    model.load_state_dict(state)\n",
        ),
        (
            "other.py",
            "import torch\n\ndef resume(model, path):\n    ckpt = torch.load(path)\n    state = {k[8:]: v for k, v in ckpt.items()}\n    model.load_state_dict(state)\n",
        ),
    ]);
    let m = t.model(&["main.py", "other.py"]);
    assert!(
        m.file(t.id(&m, "main.py"))
            .facts
            .state_dict_loads
            .strips_module_prefix
    );
    assert!(
        !m.file(t.id(&m, "other.py"))
            .facts
            .state_dict_loads
            .strips_module_prefix
    );
}

#[test]
fn concatenated_paths_read_their_constants_and_pair_by_file_name() {
    let t = Tree::new(&[
        (
            "train.py",
            "import torch\n\nARCH = 'CNN6'\nSAVE_DIR = 'runs/' + ARCH + '/'\nNAME = 'model.pt'\n\n\ndef save_arch(model):\n    torch.save(model.state_dict(), ARCH + '/model_cifar.pt')\n\n\ntorch.save(model.state_dict(), SAVE_DIR + NAME)\n",
        ),
        ("evaluate.py", "import torch\n"),
    ]);
    let m = t.model(&["train.py", "evaluate.py"]);
    let train = t.id(&m, "train.py");
    let f = m.file(train);
    let module_save = &f.functions[0].facts.saves[0].path;
    assert_eq!(
        *module_save,
        facts::PathShape::Literal("runs/CNN6/model.pt".into()),
        "names bound to literals give their text"
    );
    let i = f
        .functions
        .iter()
        .position(|g| &*g.name == "save_arch")
        .unwrap();
    // Inside the function the module-level name is a hole.
    assert_eq!(
        f.functions[i].facts.saves[0].path,
        facts::PathShape::Template("{}/model_cifar.pt".into())
    );
    // A load of the literal path elsewhere pairs with the function's save by its file name.
    let evaluate = t.id(&m, "evaluate.py");
    let load = facts::LoadDesc {
        func: FuncId {
            file: evaluate,
            index: 0,
        },
        path: facts::PathShape::Literal("CNN6/model_cifar.pt".into()),
        keys: Vec::new(),
        as_module: false,
        at: None,
    };
    let pairs = m.saves_for_load(&load);
    assert!(
        pairs
            .iter()
            .any(|p| p.by == facts::PairBy::Path && p.func.index == i as u32),
        "{pairs:?}"
    );
    // Another file name does not pair.
    let other = facts::LoadDesc {
        path: facts::PathShape::Literal("CNN6/other.pt".into()),
        ..load
    };
    assert!(m
        .saves_for_load(&other)
        .iter()
        .all(|p| p.by != facts::PairBy::Path));
}

#[test]
fn nearest_saves_are_marked_and_the_farther_kept() {
    let t = Tree::new(&[
        (
            "train.py",
            "import torch\n\ndef run(model):\n    torch.save(model.state_dict(), 'ckpt.pt')\n    model.load_state_dict(torch.load('ckpt.pt'))\n",
        ),
        (
            "tools/export.py",
            "import torch\n\ndef export(model):\n    torch.save(model, 'ckpt.pt')\n",
        ),
    ]);
    let m = t.model(&["train.py", "tools/export.py"]);
    let train = t.id(&m, "train.py");
    let run = FuncId {
        file: train,
        index: m
            .file(train)
            .functions
            .iter()
            .position(|f| &*f.name == "run")
            .unwrap() as u32,
    };
    let load = facts::LoadDesc {
        func: run,
        path: facts::PathShape::Literal("ckpt.pt".into()),
        keys: Vec::new(),
        as_module: false,
        at: None,
    };
    let pairs = m.saves_for_load(&load);
    assert_eq!(pairs.len(), 2, "{pairs:?}");
    assert!(pairs[0].near && pairs[0].func.file == train);
    assert!(!pairs[1].near && pairs[1].func.file == t.id(&m, "tools/export.py"));
}

#[test]
fn base_initialisers_that_take_no_arguments() {
    let t = Tree::new(&[
        (
            "blocks.py",
            "import torch.nn as nn\n\nclass Block(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n\nclass Head(nn.Module):\n    def __init__(self, width=8, *, bias=True):\n        super().__init__()\n\nclass Inherits(Head):\n    pass\n",
        ),
        (
            "net.py",
            "import torch.nn as nn\nfrom other_lib import Layer\nfrom blocks import Block, Head, Inherits\n\nclass A(nn.Module):\n    pass\n\nclass B(Block):\n    pass\n\nclass C(Head):\n    pass\n\nclass D(Inherits):\n    pass\n\nclass E(nn.Embedding):\n    pass\n\nclass F(Layer):\n    pass\n\nclass G(nn.Sequential, Head):\n    pass\n",
        ),
    ]);
    let m = t.model(&["blocks.py", "net.py"]);
    let net = m.view(t.id(&m, "net.py"));
    let no_args = |name: &str| {
        let Some(Entity::Class(c)) = net.local(name) else {
            panic!("{name} is a class of net.py")
        };
        m.base_init_takes_no_args(c)
    };
    assert_eq!(no_args("A"), Some(true));
    // Block's initialiser needs `width` (in another file).
    assert_eq!(no_args("B"), Some(false));
    // Defaults and keyword-only parameters with defaults need nothing, also when inherited.
    assert_eq!(no_args("C"), Some(true));
    assert_eq!(no_args("D"), Some(true));
    // nn.Embedding needs its sizes; another library's class is not known.
    assert_eq!(no_args("E"), None);
    assert_eq!(no_args("F"), None);
    assert_eq!(no_args("G"), Some(true));
}

#[test]
fn module_level_training_loops_count_as_training() {
    let t = Tree::new(&[
        (
            "config.py",
            "import torch\nmodel = torch.nn.Linear(2, 2)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nscheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)\n",
        ),
        (
            "notebook_script.py",
            "import torch\nmodel = torch.nn.Linear(2, 2)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x in range(10):\n    optimizer.zero_grad()\n    model(torch.ones(2)).sum().backward()\n    optimizer.step()\n",
        ),
    ]);
    let m = t.model(&["config.py", "notebook_script.py"]);
    assert!(!m.trains(t.id(&m, "config.py")));
    let script = t.id(&m, "notebook_script.py");
    assert!(m.trains(script));
    // The module body's own events (function 0).
    let body = FuncId {
        file: script,
        index: 0,
    };
    assert!(m.events(body).iter().any(|e| e.kind == EventKind::Backward));
}

#[test]
fn parameter_free_classes() {
    let t = Tree::new(&[(
        "layers.py",
        "import torch\nimport torch.nn as nn\n\n\
class Block(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.fc = nn.Linear(d, d)\n\n\
class Avg(nn.Module):\n    def __init__(self, k):\n        super().__init__()\n        self.k = k\n        self.pool = nn.AvgPool1d(k)\n\n    def forward(self, x):\n        return self.pool(torch.cat([x, x], dim=1))\n\n\
class Decomp(nn.Module):\n    def __init__(self, k):\n        super().__init__()\n        self.avg = Avg(k)\n\n\
class Holder(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.block = Block(d)\n\n\
class Drop(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.drop = nn.Dropout(0.1)\n\n\
class Buf(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.pool = nn.AvgPool1d(2)\n        self.register_buffer('s', torch.ones(1))\n",
    )]);
    let m = t.model_with(&["layers.py"], false);
    let id = m.file_id(&t.0.join("layers.py")).unwrap();
    let free = |name: &str| {
        let index = m.file(id).class(name).unwrap();
        m.is_parameter_free_class(ClassId { file: id, index })
    };
    assert!(!free("Block"), "a Linear has weights");
    assert!(free("Avg"), "an average pool and an int");
    assert!(free("Decomp"), "a stateless project module inside");
    assert!(!free("Holder"), "a project module with weights inside");
    assert!(
        !free("Drop"),
        "dropout behaves differently in train and eval"
    );
    assert!(!free("Buf"), "a registered buffer");
}

#[test]
fn a_module_frozen_as_it_is_built_is_frozen_under_its_name() {
    let t = Tree::new(&[(
        "fuse.py",
        "import torch.nn as nn\n\ndef fuse(conv):\n    fused = nn.Conv2d(3, 3, 1).requires_grad_(False).to(conv.weight.device)\n    fused.weight.copy_(conv.weight)\n    other = nn.Conv2d(3, 3, 1).to('cuda')\n    other.weight.copy_(conv.weight)\n",
    )]);
    let m = t.model(&["fuse.py"]);
    let file = t.id(&m, "fuse.py");
    let index = m
        .file(file)
        .functions
        .iter()
        .position(|f| &*f.name == "fuse")
        .unwrap() as u32;
    let f = FuncId { file, index };
    let end = ruff_text_size::TextSize::new(10_000);
    assert!(m.frozen_before(f, "fused", end));
    assert!(!m.frozen_before(f, "other", end));
    assert!(!m.frozen_before(f, "fused", ruff_text_size::TextSize::new(0)));
}

#[test]
fn paths_built_from_the_module_file_and_literals_ship_with_the_code() {
    use ruff_python_ast::Stmt;
    let src = "import os\nfrom pathlib import Path\nHERE = Path(__file__).resolve().parent\nNAME = 'onet.pt'\n\ndef load(name):\n    a = os.path.join(os.path.dirname(__file__), '../data/pnet.pt')\n    b = HERE / 'data' / NAME\n    c = f'{os.path.dirname(os.path.abspath(__file__))}/rnet.pt'\n    d = os.path.join(os.path.dirname(__file__), name)\n    e = os.path.join(os.getcwd(), 'w.pt')\n";
    let parsed = torchvet_python::parser::parse_module(src).expect("parses");
    let module = &parsed.syntax().body;
    let scope = crate::Scope::collect(
        crate::ScopeKind::Module,
        module,
        None,
        &crate::Scopes::default(),
    );
    let mut scopes = crate::Scopes::default();
    scopes.push(scope);
    let Some(Stmt::FunctionDef(f)) = module.last() else {
        panic!("a function")
    };
    let value = |i: usize| match &f.body[i] {
        Stmt::Assign(a) => &*a.value,
        _ => panic!("an assignment"),
    };
    let bodies: Vec<&[Stmt]> = vec![&f.body, module];
    let shipped = |i: usize| {
        facts::shipped_path(
            value(i),
            &bodies,
            &|e| scopes.resolve(e),
            ruff_text_size::TextSize::new(src.len() as u32),
        )
        .is_some()
    };
    assert!(shipped(0));
    assert!(shipped(1));
    assert!(shipped(2));
    assert!(!shipped(3), "a parameter can point anywhere");
    assert!(!shipped(4), "the working directory is not the code's");
}

#[test]
fn literal_parameter_values_across_call_sites() {
    let t = Tree::new(&[
        (
            "metrics.py",
            "def accuracy(output, target, topk=(1,)):\n    return [output[:k] for k in topk]\n\ndef rates(scores, labels, topk=(1,), *, scale=1.0):\n    return scores\n\ndef unused(x, n=2):\n    return x\n\nclass Meter:\n    def update(self, val, n=1):\n        self.val = val\n\n    def add(self, v):\n        self.update(v, n=4)\n        self.update(v)\n        self.update(v, -3)\n",
        ),
        (
            "train.py",
            "from metrics import accuracy, rates\n\ndef step(out, y, opts):\n    accuracy(out, y)\n    accuracy(out, y, topk=(1,))\n    rates(out, y, (1, 5), scale=100)\n    rates(out, y, topk=opts.topk)\n",
        ),
        (
            "spread.py",
            "from metrics import accuracy\n\ndef log(args):\n    accuracy(*args)\n",
        ),
    ]);
    let m = t.model(&["metrics.py", "train.py"]);
    let metrics = m.view(t.id(&m, "metrics.py"));
    let func = |name: &str| match metrics.local(name) {
        Some(Entity::Function(f)) => f,
        _ => panic!("{name}"),
    };
    // The default where a call leaves the parameter out, the literal where it passes one;
    // equal values once.
    let acc = func("accuracy");
    assert_eq!(
        m.param_literals(acc, 2),
        Some(vec![Lit::Tuple(vec![Lit::Int(1)])])
    );
    // A non-literal argument at one call: not known.
    let rates = func("rates");
    assert_eq!(m.param_literals(rates, 2), None);
    assert_eq!(m.param_literals(rates, 0), None);
    // Keyword-only: `100` at one call, the default `1.0` (not an int literal) at the other.
    assert_eq!(m.param_literals(rates, 3), None);
    // No call site: nothing is known.
    assert_eq!(m.param_literals(func("unused"), 1), None);
    // A method: `self` is bound; `n` by keyword, by default or by position.
    let Some(Entity::Class(meter)) = metrics.local("Meter") else {
        panic!()
    };
    let update = m
        .class_methods(meter)
        .into_iter()
        .find(|f| &*m.function(*f).name == "update")
        .unwrap();
    assert_eq!(
        m.param_literals(update, 2),
        Some(vec![Lit::Int(4), Lit::Int(1), Lit::Int(-3)])
    );
    assert_eq!(m.param_literals(update, 0), None);
    // A call spreading `*args` hides what it passes.
    let m2 = t.model(&["metrics.py", "train.py", "spread.py"]);
    let metrics2 = m2.view(t.id(&m2, "metrics.py"));
    let Some(Entity::Function(acc2)) = metrics2.local("accuracy") else {
        panic!()
    };
    assert_eq!(m2.param_literals(acc2, 2), None);
}

#[test]
fn loss_classes_across_files() {
    let t = Tree::new(&[
        (
            "pkg/__init__.py",
            "",
        ),
        (
            "pkg/losses.py",
            "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\
class SoftDiceLoss(nn.Module):\n    def forward(self, x, y):\n        p = torch.sigmoid(x)\n        return 1 - (2 * (p * y).sum() + 1) / (p.sum() + y.sum() + 1)\n\n\
class Ohem(nn.Module):\n    def forward(self, x, y):\n        return F.cross_entropy(x, y, reduction='none').topk(8).values.mean()\n\n\
class Combined(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.dice = SoftDiceLoss()\n        self.ce = nn.CrossEntropyLoss()\n\n    def forward(self, x, y):\n        return self.dice(x, y) + self.ce(x, y)\n",
        ),
        (
            "pkg/models.py",
            "import torch.nn as nn\nimport torch.nn.functional as F\nfrom .losses import Ohem\n\n\
class Focal(nn.BCEWithLogitsLoss):\n    pass\n\n\
class Hard(Ohem):\n    def forward(self, x, y):\n        return 2 * super().forward(x, y)\n\n\
class Clip(nn.Module):\n    def __init__(self, image_encoder, text_encoder):\n        super().__init__()\n        self.image_encoder = image_encoder\n        self.text_encoder = text_encoder\n\n    def forward(self, x, t):\n        return F.cross_entropy(self.image_encoder(x) @ self.text_encoder(t).T, t)\n\n\
class Meter:\n    def loss(self, x):\n        return x\n",
        ),
    ]);
    let m = t.model(&["pkg/__init__.py", "pkg/losses.py", "pkg/models.py"]);
    let is_loss = |file: &str, name: &str| {
        let id = t.id(&m, file);
        let index = m.file(id).class(name).unwrap();
        m.is_loss_class(ClassId { file: id, index })
    };
    assert!(
        is_loss("pkg/losses.py", "SoftDiceLoss"),
        "a module named as a loss"
    );
    assert!(is_loss("pkg/losses.py", "Ohem"), "computes cross-entropy");
    assert!(
        is_loss("pkg/losses.py", "Combined"),
        "holds and runs only losses"
    );
    assert!(is_loss("pkg/models.py", "Focal"), "a torch loss subclass");
    assert!(
        is_loss("pkg/models.py", "Hard"),
        "a project loss of another file as base"
    );
    assert!(
        !is_loss("pkg/models.py", "Clip"),
        "runs the encoders it holds: a model"
    );
    assert!(!is_loss("pkg/models.py", "Meter"), "not a module");
    assert!(crate::is_known_loss_class("torch.nn.modules.loss.MSELoss"));
    assert!(crate::is_known_loss_class("monai.losses.DiceLoss"));
    assert!(!crate::is_known_loss_class("torch.nn.functional.mse_loss"));
    assert!(!crate::is_known_loss_class("torch.nn.Linear"));
}

#[test]
fn eval_mode_travels_with_an_object_into_init() {
    let t = Tree::new(&[
        (
            "ctl.py",
            "import torch\n\n\
class Controller:\n    def __init__(self, net):\n        self.net = net\n\n    def run(self, x):\n        with torch.no_grad():\n            return self.net(x)\n\n\
class Tuner:\n    def __init__(self, net):\n        self.net = net\n\n    def fit(self, x):\n        self.net.train()\n        return self.net(x)\n\n\
class Batch:\n    def __init__(self, net):\n        self.net = net\n",
        ),
        (
            "app.py",
            "import torch.nn as nn\nfrom ctl import Controller, Tuner, Batch\n\n\
def main():\n    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))\n    net.eval()\n    c = Controller(net)\n    t = Tuner(net)\n    b = Batch(nn.Linear(2, 2))\n    return c, t, b\n",
        ),
    ]);
    let m = t.model(&["ctl.py", "app.py"]);
    let id = t.id(&m, "ctl.py");
    let evaled = |name: &str| {
        let index = m.file(id).class(name).unwrap();
        m.attr_evaled_by_constructors(ClassId { file: id, index }, "net")
    };
    assert_eq!(evaled("Controller"), Some(true));
    assert_eq!(
        evaled("Tuner"),
        Some(false),
        "switched back to training by a method"
    );
    assert_eq!(
        evaled("Batch"),
        Some(false),
        "built from a net in train mode"
    );
}

#[test]
fn uses_of_a_files_classes_and_names_elsewhere_are_in_its_view() {
    // `runner.py` uses `Holder` only through a parameter (it imports nothing of `holder.py`)
    // and `main.py` passes the instance; `check.py` compares holder's parsed version.
    let holder = "import torch\nimport torch.nn as nn\n\nversion = float(torch.__version__[:3])\n\n\nclass Holder(nn.Module):\n    def __init__(self, n):\n        self.n = n\n";
    let main =
        "import torch\nfrom holder import Holder\nfrom runner import run\n\nrun(Holder(2))\n";
    let files = |runner: &str, check: &str| {
        let t = Tree::new(&[
            ("holder.py", holder),
            ("main.py", main),
            ("runner.py", runner),
            ("check.py", check),
        ]);
        let m = t.model(&["holder.py", "main.py", "runner.py", "check.py"]);
        let h = t.id(&m, "holder.py");
        let c = ClassId { file: h, index: 0 };
        let deps = |p: &str| m.dependents(t.id(&m, p)).contains(&h);
        (
            m.view_digest(h),
            m.instance_called(c),
            m.instance_used_as_module(c),
            m.compared_in_other_files(h, "version"),
            deps("runner.py"),
            deps("check.py"),
        )
    };
    let plain = "import torch\n\n\ndef run(net):\n    return net.n\n";
    let calls = "import torch\n\n\ndef run(net):\n    return net(1)\n";
    let moves = "import torch\n\n\ndef run(net):\n    net.to('cpu')\n    return net.n\n";
    let no_cmp = "import torch\nimport holder\n\nprint(holder.version)\n";
    let cmp = "import torch\nimport holder\n\nif holder.version >= 1.2:\n    pass\n";
    let base = files(plain, no_cmp);
    assert_eq!(&(base.1, base.2, base.3), &(false, false, false));
    let called = files(calls, no_cmp);
    assert_eq!(
        &(called.1, called.2, called.3, called.4),
        &(true, true, false, true)
    );
    let moved = files(moves, no_cmp);
    assert_eq!(
        &(moved.1, moved.2, moved.3, moved.4),
        &(false, true, false, true)
    );
    let compared = files(plain, cmp);
    assert_eq!(
        &(compared.1, compared.2, compared.3, compared.5),
        &(false, false, true, true)
    );
    // Each change shows in holder.py's view digest.
    let digests = [base.0, called.0, moved.0, compared.0];
    for (i, a) in digests.iter().enumerate() {
        for b in &digests[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn classes_whose_constructor_freezes_their_own_parameters() {
    let t = Tree::new(&[
        (
            "nets.py",
            "import torch.nn as nn\n\n\
class Frozen(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n        self.requires_grad_(False)\n\n\
class ByFlag(nn.Module):\n    def __init__(self, dims, requires_grad=False):\n        super().__init__()\n        self.fc = nn.Linear(dims, 2)\n        for p in self.parameters():\n            p.requires_grad = requires_grad\n\n\
class Tunable(nn.Module):\n    def __init__(self, requires_grad=False):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n        self.requires_grad_(requires_grad)\n\n\
class Maybe(nn.Module):\n    def __init__(self, freeze):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n        if freeze:\n            for p in self.parameters():\n                p.requires_grad = False\n\n\
class Other(nn.Module):\n    def __init__(self, other):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n        for p in other.parameters():\n            p.requires_grad = False\n",
        ),
        (
            "use.py",
            "from nets import ByFlag, Tunable\n\nscorer = ByFlag(64)\ntuned = Tunable(requires_grad=True)\n",
        ),
    ]);
    let m = t.model(&["nets.py", "use.py"]);
    let id = t.id(&m, "nets.py");
    let freezes = |name: &str| {
        let index = m.file(id).class(name).unwrap();
        m.class_freezes_itself(ClassId { file: id, index })
    };
    assert!(freezes("Frozen"), "self.requires_grad_(False)");
    assert!(freezes("ByFlag"), "every call leaves requires_grad=False");
    assert!(!freezes("Tunable"), "a call passes requires_grad=True");
    assert!(!freezes("Maybe"), "the freeze is conditional");
    assert!(!freezes("Other"), "it freezes another module");
}

const INIT_PATHS: &str = "import os.path as osp\nimport sys\n\n\ndef add_path(path):\n    if path not in sys.path:\n        sys.path.insert(0, path)\n\n\nthis_dir = osp.dirname(__file__)\nadd_path(osp.join(this_dir, '..', 'lib'))\n";

#[test]
fn sys_path_additions_serve_the_processes_they_run_in() {
    let t = Tree::new(&[
        ("tools/_init_paths.py", INIT_PATHS),
        (
            "tools/train.py",
            "import _init_paths\nimport torch\nfrom model.net import Net\nfrom model.utils import build\n",
        ),
        ("tools/other.py", "import torch\nfrom model.net import Net\n"),
        ("lib/model/__init__.py", ""),
        ("lib/model/net.py", MODELS),
        // Inside lib/, the package imports itself absolutely (lib/ is a parent directory).
        ("lib/model/utils.py", "from model.net import Net\n\ndef build():\n    return Net()\n"),
    ]);
    let all = [
        "tools/_init_paths.py",
        "tools/train.py",
        "tools/other.py",
        "lib/model/__init__.py",
        "lib/model/net.py",
        "lib/model/utils.py",
    ];
    let m = t.model(&all);
    let train = m.view(t.id(&m, "tools/train.py"));
    assert!(train.is_module_class("model.net.Net"));
    let utils = m.view(t.id(&m, "lib/model/utils.py"));
    assert!(utils.is_module_class("model.net.Net"));
    // other.py does not import _init_paths: no addition in its process.
    let other = m.view(t.id(&m, "tools/other.py"));
    assert!(!other.is_module_class("model.net.Net"));
    // An edit of _init_paths.py re-checks the files whose resolution it serves.
    let deps = m.dependents(t.id(&m, "tools/_init_paths.py"));
    assert!(deps.contains(&t.id(&m, "tools/train.py")));
    // Only lib/ checked, tools/ single: the files under lib/ are loaded from disk.
    let m = t.model_with(&["tools/train.py", "tools/_init_paths.py"], true);
    assert!(m.view(0).is_module_class("model.net.Net"));
}

#[test]
fn missing_or_outside_sys_path_additions_are_ignored() {
    let t = Tree::new(&[
        (
            "tools/train.py",
            "import sys\nimport os\nimport torch\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))\nsys.path.append('../../elsewhere')\nfrom model.net import Net\n",
        ),
        ("libs/model/__init__.py", ""),
        ("libs/model/net.py", MODELS),
    ]);
    let m = t.model(&[
        "tools/train.py",
        "libs/model/__init__.py",
        "libs/model/net.py",
    ]);
    assert!(!m.view(0).is_module_class("model.net.Net"));
}

#[test]
fn script_directories_resolve_imports_of_shared_modules() {
    let params = "import torch\nimport torch.nn as nn\n\nDROPOUT = 0.5\n";
    let utils =
        "import sys\nfrom parameters import *\n\n\ndef load(path):\n    return torch.load(path)\n";
    let t = Tree::new(&[
        ("utils.py", utils),
        ("transformer/parameters.py", params),
        (
            "transformer/train.py",
            "from utils import *\nfrom parameters import *\n",
        ),
        (
            "lstm/parameters.py",
            "import torch\nimport torch.nn as nn\nimport numpy as np\n\nDROPOUT = 0.1\n",
        ),
        ("lstm/train.py", "from utils import *\n"),
    ]);
    let files = [
        "utils.py",
        "transformer/parameters.py",
        "transformer/train.py",
        "lstm/parameters.py",
        "lstm/train.py",
    ];
    let m = t.model(&files);
    let u = t.id(&m, "utils.py");
    // Two script folders: `parameters` is two different files, so it does not resolve ...
    assert_eq!(m.view(u).entity("parameters"), None);
    // ... but the torch names both bring alike do.
    let mut names = m.view(u).star_imported_torch_names();
    names.sort();
    assert_eq!(
        names,
        vec![
            ("nn".into(), "torch.nn".into()),
            ("torch".into(), "torch".into())
        ]
    );
    // One script folder: it resolves.
    let m = t.model(&[
        "utils.py",
        "transformer/parameters.py",
        "transformer/train.py",
    ]);
    let u = t.id(&m, "utils.py");
    assert_eq!(
        m.view(u).entity("parameters"),
        Some(Entity::Module(t.id(&m, "transformer/parameters.py")))
    );
    // The script contributes to utils.py's context.
    assert!(m.dependents(t.id(&m, "transformer/train.py")).contains(&u));
}

const REGISTRY: &str = "import torch\nimport torch.nn as nn\n\nclass ResNet(nn.Module):\n    def __init__(self, n=10):\n        super().__init__()\n        self.fc = nn.Linear(8, n)\n        self.bn = nn.BatchNorm1d(n)\n\nclass MLP(nn.Module):\n    def __init__(self, n=10):\n        super().__init__()\n        self.fc = nn.Linear(8, n)\n        self.drop = nn.Dropout(0.5)\n\nMODELS = {\"resnet\": ResNet, \"mlp\": MLP}\nONE = {\"resnet\": ResNet}\nFILLED = {\"resnet\": ResNet}\nMIXED = {\"resnet\": ResNet, \"relu\": nn.ReLU}\n\ndef register(cls):\n    FILLED[cls.__name__] = cls\n    return cls\n\ndef get_model_class(name):\n    if name == \"resnet\":\n        return ResNet\n    elif name == \"mlp\":\n        return MLP\n    raise ValueError(name)\n\ndef from_registry(name):\n    return ONE[name]\n\ndef by_attr(name):\n    return getattr(torch.nn, name)\n\ndef load_model(path):\n    enc = ResNet()\n    dec = MLP()\n    return enc, dec\n\ndef build(cfg):\n    model = ResNet()\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    return model, optimizer\n";

/// The classes of the values in `f` of `main.py` named `name` (sorted), or `None` when the
/// model does not resolve it.
fn local_classes(m: &ProjectModel, f: FuncId, name: &str) -> Option<Vec<String>> {
    let r = m.local_value(f, name)?;
    let one = |r: &Resolved| match &r.class {
        Some(ClassRef::Project(c)) => Some(m.class_name(*c).0.to_string()),
        Some(ClassRef::External(q)) => Some(q.to_string()),
        None => None,
    };
    let mut out: Vec<String> = match &r.alternatives {
        Some(alts) => alts.iter().map(one).collect::<Option<_>>()?,
        None => vec![one(&r)?],
    };
    out.sort();
    Some(out)
}

#[test]
fn classes_chosen_through_registries_and_factories() {
    let t = Tree::new(&[
        ("nets.py", REGISTRY),
        (
            "main.py",
            "import sys\nfrom nets import MODELS, ONE, FILLED, MIXED, get_model_class, from_registry, by_attr\n\ndef main(arch, cfg):\n    a = MODELS[arch](n=3)\n    b = get_model_class(arch)(**cfg)\n    cls = MODELS.get(arch)\n    c = cls()\n    d = ONE[arch]()\n    e = from_registry(arch)()\n    f = FILLED[arch]()\n    g = by_attr(arch)()\n    h = MIXED[arch]()\n    factory = get_model_class(arch)\n    i = factory()\n    j = arch()\n    return a, b, c, d, e, f, g, h, i, j\n\nLOCAL = {\"x\": MODELS}\nmodel = MODELS[sys.argv[1]]()\n",
        ),
    ]);
    let m = t.model(&["nets.py", "main.py"]);
    let main = m.view(t.id(&m, "main.py"));
    let Some(Entity::Function(f)) = main.local("main") else {
        panic!()
    };
    let both = Some(vec!["MLP".to_string(), "ResNet".to_string()]);
    // A registry subscripted, a factory returning classes, `.get` then a call.
    assert_eq!(local_classes(&m, f, "a"), both);
    assert_eq!(m.local_value(f, "a").unwrap().kind, Kind::Module);
    assert_eq!(local_classes(&m, f, "b"), both);
    assert_eq!(local_classes(&m, f, "c"), both);
    assert_eq!(local_classes(&m, f, "i"), both);
    // One class: the class itself, directly or through a function returning the registry's
    // value.
    assert_eq!(local_classes(&m, f, "d"), Some(vec!["ResNet".to_string()]));
    assert_eq!(local_classes(&m, f, "e"), Some(vec!["ResNet".to_string()]));
    assert!(matches!(
        m.local_value(f, "d").unwrap().class,
        Some(ClassRef::Project(_))
    ));
    // A registry filled elsewhere (a decorator), `getattr(module, name)`: not known.
    assert!(!m.local_value(f, "f").unwrap().is_known());
    assert!(!m.local_value(f, "g").unwrap().is_known());
    // A project class and a torch layer: both known, a module whatever the key.
    assert_eq!(
        local_classes(&m, f, "h"),
        Some(vec!["ResNet".to_string(), "torch.nn.ReLU".to_string()])
    );
    // A parameter called: not a computed local at all.
    assert!(m.local_value(f, "j").is_none());
    // The train/eval-sensitive layers of every alternative.
    let a = m.local_value(f, "a").unwrap();
    assert!(m.value_mode_layer(&a).is_some());
    let h = m.local_value(f, "h").unwrap();
    assert!(m.value_mode_layer(&h).is_none());
    // Module level.
    let module = FuncId {
        file: t.id(&m, "main.py"),
        index: 0,
    };
    assert_eq!(local_classes(&m, module, "model"), both);
}

#[test]
fn tuple_returns_of_project_functions_reach_each_target() {
    let t = Tree::new(&[
        ("nets.py", REGISTRY),
        (
            "main.py",
            "from nets import load_model, build\n\nclass Runner:\n    def __init__(self, path):\n        self.enc, self.dec = load_model(path)\n\ndef run(path):\n    encoder, decoder = load_model(path)\n    first = load_model(path)[0]\n    model, optimizer = build({})\n    *rest, last = build({})\n    return encoder, decoder, first, model, optimizer, rest, last\n",
        ),
    ]);
    let m = t.model(&["nets.py", "main.py"]);
    let main = m.view(t.id(&m, "main.py"));
    let Some(Entity::Function(f)) = main.local("run") else {
        panic!()
    };
    assert_eq!(local_classes(&m, f, "encoder"), Some(vec!["ResNet".into()]));
    assert_eq!(local_classes(&m, f, "decoder"), Some(vec!["MLP".into()]));
    assert_eq!(local_classes(&m, f, "first"), Some(vec!["ResNet".into()]));
    assert_eq!(m.local_value(f, "model").unwrap().kind, Kind::Module);
    assert_eq!(
        m.local_value(f, "optimizer").unwrap().kind,
        Kind::Optimizer("SGD".into())
    );
    // After a starred target the positions are not known.
    assert!(m.local_value(f, "last").is_none());
    let Some(c) = main.summary().class("Runner") else {
        panic!()
    };
    let runner = ClassId {
        file: t.id(&m, "main.py"),
        index: c,
    };
    let dec = m.computed_attr(runner, "dec").unwrap();
    assert!(matches!(dec.class, Some(ClassRef::Project(_))));
    assert_eq!(m.class_attr(runner, "enc", 0).kind, Kind::Module);
}

#[test]
fn val_joins_keep_callees_apart_from_objects() {
    let r = |n: &str| Val::Ref(Ref::Local(n.into()));
    let call = Val::Call {
        callee: Ref::Local("Net".into()),
        args: ThinVec::new(),
        kwargs: ThinVec::new(),
    };
    // Two classes named uncalled: one of them.
    assert_eq!(r("A").join(r("B")), Val::Join(vec![r("A"), r("B")]));
    assert_eq!(r("A").join(Val::None), r("A"));
    // A class and an instance do not join.
    assert_eq!(r("A").join(call.clone()), Val::Unknown);
    // An instance of a computed class joins with other objects.
    let inv = Val::Invoke(Box::new(r("A")));
    assert!(matches!(inv.clone().join(call.clone()), Val::Join(v) if v.len() == 2));
    assert!(inv.is_computed());
    assert!(Val::Item(Box::new(call.clone()), Some(0)).is_computed());
    assert!(!Val::Item(Box::new(r("MODELS")), None).is_computed());
    assert!(!call.is_computed());
}

#[test]
fn local_registries_changed_in_place_are_not_known() {
    let t = Tree::new(&[
        ("nets.py", REGISTRY),
        (
            "main.py",
            "from nets import ResNet, MLP\n\ndef kept(arch):\n    zoo = {\"resnet\": ResNet, \"mlp\": MLP}\n    return zoo[arch]()\n\ndef changed(arch, extra):\n    zoo = {\"resnet\": ResNet}\n    zoo.update(extra)\n    return zoo[arch]()\n\ndef main(arch, extra):\n    a = kept(arch)\n    b = changed(arch, extra)\n    return a, b\n",
        ),
    ]);
    let m = t.model(&["nets.py", "main.py"]);
    let main = m.view(t.id(&m, "main.py"));
    let Some(Entity::Function(f)) = main.local("main") else {
        panic!()
    };
    let Some(Entity::Function(kept)) = main.local("kept") else {
        panic!()
    };
    let r = m.resolve_val(
        f,
        &Val::Call {
            callee: Ref::Local("kept".into()),
            args: ThinVec::new(),
            kwargs: ThinVec::new(),
        },
        0,
    );
    assert_eq!(r.kind, Kind::Module);
    assert_eq!(r.alternatives.as_ref().map(Vec::len), Some(2));
    assert!(matches!(m.function(kept).returns, Val::Invoke(_)));
    let r = m.resolve_val(
        f,
        &Val::Call {
            callee: Ref::Local("changed".into()),
            args: ThinVec::new(),
            kwargs: ThinVec::new(),
        },
        0,
    );
    assert!(!r.is_known());
}

#[test]
fn a_mode_method_of_the_model_class_puts_the_object_in_eval_mode() {
    let t = Tree::new(&[
        (
            "model.py",
            "import torch.nn as nn\n\n\
class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n        self.drop = nn.Dropout(0.5)\n\n    def forward(self, x):\n        return self.fc(self.drop(x))\n\n    def set_mode(self, mode):\n        if mode in ['eval', 'valid', 'test']:\n            self.eval()\n        elif mode in ['train']:\n            self.train()\n",
        ),
        (
            "train.py",
            "import torch\nfrom model import Net\n\n\
def do_valid(net, loader):\n    with torch.no_grad():\n        return [net(x) for x, _ in loader]\n\n\
def do_test(net, loader):\n    with torch.no_grad():\n        return [net(x) for x, _ in loader]\n\n\
def run(loader):\n    net = Net()\n    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    for epoch in range(3):\n        net.set_mode('train')\n        for x, y in loader:\n            opt.zero_grad()\n            net(x).sum().backward()\n            opt.step()\n        net.set_mode('valid')\n        do_valid(net, loader)\n\n\
def run_untouched(loader):\n    net = Net()\n    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    for x, y in loader:\n        opt.zero_grad()\n        net(x).sum().backward()\n        opt.step()\n    do_test(net, loader)\n",
        ),
    ]);
    let m = t.model(&["model.py", "train.py"]);
    let id = t.id(&m, "train.py");
    let func = |name: &str| FuncId {
        file: id,
        index: m
            .file(id)
            .functions
            .iter()
            .position(|f| &*f.name == name)
            .unwrap() as u32,
    };
    let eval = m
        .events(func("run"))
        .iter()
        .find(|e| e.kind == crate::flow::EventKind::Eval)
        .expect("set_mode's eval() is an event of the caller");
    assert!(eval.conditional, "taken under the method's condition");
    assert_eq!(m.param_evaled_by_callers(func("do_valid"), 0), Some(true));
    assert_eq!(m.param_evaled_by_callers(func("do_test"), 0), Some(false));
}

#[test]
fn mode_layer_families_of_a_class_come_from_every_sub_module_and_base() {
    let t = Tree::new(&[
        (
            "pkg/blocks.py",
            "import torch.nn as nn\n\nclass Block(nn.Module):\n    def __init__(self, c):\n        super().__init__()\n        self.conv = nn.Conv2d(c, c, 3)\n        self.bn = nn.BatchNorm2d(c)\n\n    def forward(self, x):\n        return self.bn(self.conv(x))\n",
        ),
        (
            "pkg/net.py",
            "import torch.nn as nn\nfrom .blocks import Block\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.drop = nn.Dropout(0.2)\n        self.block = Block(8)\n\n    def forward(self, x):\n        return self.drop(self.block(x))\n\nclass Deeper(Net):\n    def __init__(self):\n        super().__init__()\n        self.rnn = nn.LSTM(8, 8, num_layers=2, dropout=0.1)\n",
        ),
    ]);
    let m = t.model(&["pkg/blocks.py", "pkg/net.py"]);
    let net = m.view(t.id(&m, "pkg/net.py"));
    let Some(Entity::Class(c)) = net.local("Net") else {
        panic!()
    };
    assert_eq!(
        m.mode_layer(c).map(|(k, _)| k),
        Some("Dropout and BatchNorm")
    );
    let Some(Entity::Class(d)) = net.local("Deeper") else {
        panic!()
    };
    assert_eq!(
        m.mode_layer(d).map(|(k, _)| k),
        Some("Dropout, BatchNorm and recurrent dropout")
    );
}
