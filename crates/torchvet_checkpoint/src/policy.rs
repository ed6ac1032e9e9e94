//! Which imported names a checkpoint may contain.
//!
//! The decision is made by allowlist first: torch's `weights_only` allowlist (144 names at
//! torch 2.15, dumped into `weights_only_allowlist.txt`) is `safe`. Everything else needs trust to
//! load and is at least `unsafe`; the denylist below only sharpens the verdict to `dangerous` for
//! names that run code, touch files, processes or the network, or walk into such objects.

use crate::Level;
use rustc_hash::FxHashSet as HashSet;
use std::sync::OnceLock;

const ALLOWLIST: &str = include_str!("weights_only_allowlist.txt");

fn allowlist() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        ALLOWLIST
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect()
    })
}

/// True when `module.name` is in torch's `weights_only` allowlist.
pub fn is_allowed(qualified: &str) -> bool {
    allowlist().contains(qualified)
}

/// Callables that unpickle their bytes argument (their arguments are scanned as nested pickles).
pub fn is_pickle_loader(q: &str) -> bool {
    matches!(
        q,
        "pickle.loads"
            | "pickle._loads"
            | "pickle.load"
            | "_pickle.loads"
            | "_pickle.load"
            | "pickle.Unpickler"
            | "_pickle.Unpickler"
            | "dill.loads"
            | "dill._dill.loads"
            | "cloudpickle.loads"
            | "torch.load"
            | "torch.serialization.load"
            | "torch.storage._load_from_bytes"
            | "joblib.load"
            | "numpy.loads"
            | "numpy.load"
            | "pandas.read_pickle"
            | "io.BytesIO"
            | "_io.BytesIO"
    )
}

/// Modules (and their submodules) whose members run code or reach files, processes, the network
/// or the interpreter itself.
const DANGEROUS_MODULES: &[&str] = &[
    "os",
    "posix",
    "nt",
    "posixpath",
    "ntpath",
    "sys",
    "subprocess",
    "_posixsubprocess",
    "commands",
    "popen2",
    "pty",
    "shutil",
    "socket",
    "_socket",
    "ssl",
    "_ssl",
    "select",
    "selectors",
    "http",
    "urllib",
    "urllib2",
    "urllib3",
    "httplib",
    "ftplib",
    "smtplib",
    "poplib",
    "imaplib",
    "nntplib",
    "telnetlib",
    "xmlrpc",
    "xmlrpclib",
    "socketserver",
    "webbrowser",
    "requests",
    "httpx",
    "aiohttp",
    "runpy",
    "pip",
    "ensurepip",
    "venv",
    "pkgutil",
    "importlib",
    "imp",
    "zipimport",
    "code",
    "codeop",
    "pdb",
    "bdb",
    "pydoc",
    "cProfile",
    "profile",
    "timeit",
    "trace",
    "idlelib",
    "lib2to3",
    "_pyrepl",
    "_xxsubinterpreters",
    "_interpreters",
    "interpreters",
    "concurrent.interpreters",
    "multiprocessing",
    "_multiprocessing",
    "concurrent",
    "asyncio",
    "ctypes",
    "_ctypes",
    "cffi",
    "marshal",
    "pickle",
    "_pickle",
    "cPickle",
    "pickletools",
    "dill",
    "cloudpickle",
    "joblib",
    "shelve",
    "dbm",
    "types",
    "_io",
    "tempfile",
    "glob",
    "fileinput",
    "logging",
    "signal",
    "threading",
    "_thread",
    "thread",
    "platform",
    "_osx_support",
    "_aix_support",
    "distutils",
    "setuptools",
    "site",
    "sysconfig",
    "test",
    "unittest",
    "doctest",
    "tkinter",
    "turtle",
    "zipfile",
    "tarfile",
    "sqlite3",
    "gc",
    "inspect",
    "operator",
    "_operator",
    "copyreg_ext",
    "codecs",
    "_codecs",
    "mailcap",
    "uuid",
    "nturl2path",
    "email",
    "mailbox",
    "smtpd",
    "cgi",
    "cgitb",
    "wsgiref",
    "atexit",
    "readline",
    "rlcompleter",
    "resource",
    "fcntl",
    "mmap",
    "builtins",
    "__builtin__",
    "__builtins__",
    "numpy.testing",
    "numpy.f2py",
    "numpy.distutils",
    "numpy.lib.npyio",
    "numpy.lib.format",
    "numpy.ctypeslib",
    "numpy.lib.utils",
    "pandas.io",
    "torch.hub",
    "torch.utils.bottleneck",
    "torch._dynamo",
    "torch.fx",
    "torch.utils.collect_env",
    "torch.utils.data.datapipes",
    "torch.jit",
    "torch._inductor",
    "torch.utils._config_module",
    "torch.utils.cpp_extension",
    "torch.package",
    "torch.distributed",
    "torch._C",
    "torch.ops",
    "torch.testing",
    "torch.compiler",
    "torch._export",
    "torch.export",
    "torch.onnx",
    "torch.library",
    "torch._library",
    "torch.cuda.nvtx",
    "torch.utils.benchmark",
    "torch.backends",
    "torch._higher_order_ops",
    "torch._functorch",
    "torch.autograd.profiler",
    "torch.profiler",
];

/// Individual names that load pickles, files or code although their module is otherwise benign.
const DANGEROUS_NAMES: &[&str] = &[
    "torch.load",
    "torch.serialization.load",
    "torch.serialization._load",
    "torch.serialization._legacy_load",
    "torch.storage._load_from_bytes",
    "torch.save",
    "torch.serialization.save",
    "torch.from_file",
    "torch.UntypedStorage.from_file",
    "numpy.load",
    "numpy.loads",
    "numpy.save",
    "numpy.savez",
    "numpy.fromfile",
    "numpy.tofile",
    "numpy.loadtxt",
    "numpy.genfromtxt",
    "numpy.memmap",
    "numpy.core.memmap",
    "numpy.DataSource",
    "numpy.lib._datasource",
    "pandas.read_pickle",
    "pandas.read_csv",
    "pandas.read_table",
    "pandas.read_json",
    "pandas.read_html",
    "pandas.read_sql",
    "pandas.read_excel",
    "pandas.read_parquet",
    "pandas.read_feather",
    "pandas.read_hdf",
    "pandas.read_fwf",
    "pandas.read_xml",
    "pandas.eval",
    "pandas.core.computation.eval.eval",
    "functools.reduce",
    "functools.partial.__call__",
    "copyreg.add_extension",
    "io.open",
    "io.FileIO",
    "io.open_code",
    "io.TextIOWrapper",
    "io.BufferedReader",
    "io.BufferedWriter",
    "pathlib.Path.write_text",
    "pathlib.Path.write_bytes",
    "pathlib.Path.read_text",
    "pathlib.Path.unlink",
    "keras.models.load_model",
    "transformers.pipeline",
    "yaml.load",
    "yaml.unsafe_load",
    "jinja2.Template",
];

/// Builtins that are plain data types: not in the allowlist (loading needs trust), but they
/// don't run code by themselves.
const BENIGN_BUILTINS: &[&str] = &[
    "set",
    "frozenset",
    "bytearray",
    "bytes",
    "complex",
    "int",
    "float",
    "str",
    "list",
    "dict",
    "tuple",
    "bool",
    "slice",
    "range",
    "object",
    "Ellipsis",
    "NotImplemented",
    // Pure functions of their arguments: they call no user-chosen callable.
    "len",
    "abs",
    "round",
    "divmod",
    "pow",
    "chr",
    "ord",
    "hex",
    "oct",
    "bin",
    "sum",
    "min",
    "max",
    "all",
    "any",
    "hash",
    "repr",
    "ascii",
    "format",
    "isinstance",
    "issubclass",
    "callable",
    "id",
    "True",
    "False",
    "None",
];

/// Names that are benign in otherwise dangerous modules (data classes).
const BENIGN_IN_DANGEROUS: &[&str] = &[
    "uuid.UUID",
    "io.BytesIO",
    "_io.BytesIO",
    "io.StringIO",
    "_io.StringIO",
    "codecs.encode",
    "_codecs.encode",
    "types.SimpleNamespace",
    "types.MappingProxyType",
    "logging.Logger",
    "operator.add",
    "operator.mul",
    "operator.neg",
    "posixpath.join",
];

/// Attribute segments that walk from any object into the interpreter.
const DANGEROUS_SEGMENTS: &[&str] = &[
    "os",
    "sys",
    "subprocess",
    "system",
    "popen",
    "eval",
    "exec",
    "builtins",
    "__builtins__",
    "__import__",
    "__globals__",
    "__getattribute__",
    "__subclasses__",
    "__class__",
    "__base__",
    "__bases__",
    "__mro__",
    "__dict__",
    "__code__",
    "__reduce__",
    "__reduce_ex__",
    "__setattr__",
    "__init__",
    "__call__",
    "__loader__",
    "__spec__",
    "load",
    "loads",
    "run",
    "spawn",
    "import_module",
];

/// The judgement of one imported name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// Safe (`Info`), `Unsafe` or `Dangerous`.
    pub level: Level,
    /// Why.
    pub reason: String,
}

fn in_module(module: &str, prefix: &str) -> bool {
    module == prefix
        || (module.len() > prefix.len()
            && module.starts_with(prefix)
            && module.as_bytes()[prefix.len()] == b'.')
}

/// Judge `module.name` (after py2 mapping). Dotted names are walked attribute by attribute as a
/// protocol-4 unpickler would.
pub fn judge(module: &str, name: &str) -> Judgement {
    let q = format!("{module}.{name}");
    if is_allowed(&q) {
        return Judgement {
            level: Level::Info,
            reason: "in torch's weights_only allowlist".into(),
        };
    }
    // Torch's own unpickler maps any name containing "Storage" to a placeholder, but only the
    // allowlisted storage classes load under weights_only.
    let dangerous = |reason: String| Judgement {
        level: Level::Dangerous,
        reason,
    };
    if DANGEROUS_NAMES.iter().any(|d| q == *d || in_module(&q, d)) {
        return dangerous(format!("{q} loads pickles, files or code"));
    }
    if BENIGN_IN_DANGEROUS.contains(&q.as_str()) {
        return Judgement {
            level: Level::Unsafe,
            reason: format!("{q} is not in torch's weights_only allowlist"),
        };
    }
    if module == "builtins" || module == "__builtin__" {
        if BENIGN_BUILTINS.contains(&name) {
            return Judgement {
                level: Level::Unsafe,
                reason: format!(
                    "builtins.{name} is a plain data type or function, outside torch's allowlist"
                ),
            };
        }
        return dangerous(format!(
            "builtins.{name} can evaluate code or reach arbitrary objects"
        ));
    }
    if let Some(d) = DANGEROUS_MODULES.iter().find(|d| in_module(&q, d)) {
        let alias = match *d {
            "nt" | "posix" => {
                format!(" (`{d}` is the platform module behind `os`: {q} is os.{name})")
            }
            "ntpath" | "posixpath" => format!(" (`{d}` is `os.path`)"),
            "__builtin__" => " (`__builtin__` is `builtins`)".to_string(),
            _ => String::new(),
        };
        return dangerous(format!(
            "{q} belongs to `{d}`, which can run code or reach files, processes or the network{alias}"
        ));
    }
    if name.contains('.') || name.starts_with("__") {
        let segs: Vec<&str> = name.split('.').collect();
        if let Some(s) = segs
            .iter()
            .find(|s| DANGEROUS_SEGMENTS.contains(s) || (s.starts_with("__") && s.ends_with("__")))
        {
            return dangerous(format!(
                "{q} walks through the attribute `{s}` (dotted names are resolved attribute by attribute)"
            ));
        }
        // A walk through a module attribute that is itself a dangerous module (e.g. `pathlib` +
        // `os.system`).
        for i in 0..segs.len() {
            let prefix = segs[..=i].join(".");
            if DANGEROUS_MODULES.iter().any(|d| in_module(&prefix, d)) {
                return dangerous(format!("{q} reaches `{prefix}` through attribute access"));
            }
        }
    }
    if module.is_empty() || name.is_empty() || module == "?" {
        return dangerous(format!("`{q}` is not a valid import"));
    }
    Judgement {
        level: Level::Unsafe,
        reason: format!("{q} is not in torch's weights_only allowlist: loading needs trust"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_has_torch_names() {
        assert!(is_allowed("torch._utils._rebuild_tensor_v2"));
        assert!(is_allowed("collections.OrderedDict"));
        assert!(!is_allowed("numpy.core.multiarray._reconstruct"));
        assert_eq!(allowlist().len(), 144);
    }

    #[test]
    fn judgements() {
        assert_eq!(judge("torch", "FloatStorage").level, Level::Info);
        assert_eq!(judge("os", "system").level, Level::Dangerous);
        assert_eq!(judge("posix", "system").level, Level::Dangerous);
        assert_eq!(judge("builtins", "eval").level, Level::Dangerous);
        assert_eq!(judge("builtins", "set").level, Level::Info);
        assert_eq!(judge("builtins", "slice").level, Level::Unsafe);
        assert_eq!(judge("builtins", "len").level, Level::Unsafe);
        assert_eq!(judge("builtins", "getattr").level, Level::Dangerous);
        assert_eq!(judge("builtins", "map").level, Level::Dangerous);
        assert_eq!(judge("nt", "system").level, Level::Dangerous);
        assert!(judge("nt", "system").reason.contains("os.system"));
        assert_eq!(judge("torch", "load").level, Level::Dangerous);
        assert_eq!(
            judge("torch.storage", "_load_from_bytes").level,
            Level::Dangerous
        );
        assert_eq!(
            judge("torch", "serialization.os.system").level,
            Level::Dangerous
        );
        assert_eq!(judge("pathlib", "os.system").level, Level::Dangerous);
        assert_eq!(
            judge("builtins", "object.__getattribute__").level,
            Level::Dangerous
        );
        assert_eq!(judge("pip", "main").level, Level::Dangerous);
        assert_eq!(judge("pkgutil", "resolve_name").level, Level::Dangerous);
        assert_eq!(
            judge("asyncio.unix_events", "_UnixSubprocessTransport._start").level,
            Level::Dangerous
        );
        assert_eq!(
            judge("torch.nn.modules.linear", "Linear").level,
            Level::Unsafe
        );
        assert_eq!(
            judge("numpy.core.multiarray", "scalar").level,
            Level::Unsafe
        );
        assert_eq!(
            judge("numpy", "testing._private.utils.runstring").level,
            Level::Dangerous
        );
        assert_eq!(judge("uuid", "UUID").level, Level::Unsafe);
        assert_eq!(judge("uuid", "_get_command_stdout").level, Level::Dangerous);
    }
}
