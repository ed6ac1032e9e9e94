//! How an unpickler turns the `(module, name)` of a GLOBAL into the object it imports.
//!
//! CPython applies the Python 2 compatibility mapping (`fix_imports`, protocol < 3) and walks
//! dotted names attribute by attribute; torch additionally remaps `torch.tensor` to
//! `torch._tensor`. We reproduce the naming (never the import) so that the scanner judges
//! what would really be imported.

/// Python 2 module renames (module-level `IMPORT_MAPPING` of CPython's compat table).
fn import_mapping(module: &str) -> Option<&'static str> {
    Some(match module {
        "__builtin__" => "builtins",
        "exceptions" => "builtins",
        "copy_reg" => "copyreg",
        "Queue" => "queue",
        "SocketServer" => "socketserver",
        "ConfigParser" => "configparser",
        "repr" => "reprlib",
        "tkFileDialog" => "tkinter.filedialog",
        "tkSimpleDialog" => "tkinter.simpledialog",
        "tkColorChooser" => "tkinter.colorchooser",
        "tkCommonDialog" => "tkinter.commondialog",
        "Dialog" => "tkinter.dialog",
        "Tkdnd" => "tkinter.dnd",
        "tkFont" => "tkinter.font",
        "tkMessageBox" => "tkinter.messagebox",
        "ScrolledText" => "tkinter.scrolledtext",
        "Tkconstants" => "tkinter.constants",
        "Tix" => "tkinter.tix",
        "ttk" => "tkinter.ttk",
        "Tkinter" => "tkinter",
        "markupbase" => "_markupbase",
        "_winreg" => "winreg",
        "thread" => "_thread",
        "dummy_thread" => "_dummy_thread",
        "dbhash" => "dbm.bsd",
        "dumbdbm" => "dbm.dumb",
        "dbm" => "dbm.ndbm",
        "gdbm" => "dbm.gnu",
        "xmlrpclib" => "xmlrpc.client",
        "SimpleXMLRPCServer" => "xmlrpc.server",
        "DocXMLRPCServer" => "xmlrpc.server",
        "httplib" => "http.client",
        "htmlentitydefs" => "html.entities",
        "HTMLParser" => "html.parser",
        "Cookie" => "http.cookies",
        "cookielib" => "http.cookiejar",
        "BaseHTTPServer" => "http.server",
        "SimpleHTTPServer" => "http.server",
        "CGIHTTPServer" => "http.server",
        "test.test_support" => "test.support",
        "commands" => "subprocess",
        "urlparse" => "urllib.parse",
        "robotparser" => "urllib.robotparser",
        "urllib2" => "urllib.request",
        "anydbm" => "dbm",
        "_abcoll" => "collections.abc",
        "cPickle" => "pickle",
        "_elementtree" => "xml.etree.ElementTree",
        "FileDialog" => "tkinter.filedialog",
        "SimpleDialog" => "tkinter.simpledialog",
        "DocXMLRPCServer.DocXMLRPCServer" => "xmlrpc.server",
        "StringIO" => "io",
        "cStringIO" => "io",
        "UserDict" => "collections",
        "UserList" => "collections",
        "UserString" => "collections",
        "whichdb" => "dbm",
        "popen2" => "subprocess",
        _ => return None,
    })
}

/// Python 2 `(module, name)` renames (`NAME_MAPPING`).
fn name_mapping(module: &str, name: &str) -> Option<(&'static str, &'static str)> {
    Some(match (module, name) {
        ("__builtin__", "xrange") => ("builtins", "range"),
        ("__builtin__", "reduce") => ("functools", "reduce"),
        ("__builtin__", "intern") => ("sys", "intern"),
        ("__builtin__", "unichr") => ("builtins", "chr"),
        ("__builtin__", "unicode") => ("builtins", "str"),
        ("__builtin__", "long") => ("builtins", "int"),
        ("__builtin__", "basestring") => ("builtins", "str"),
        ("__builtin__", "raw_input") => ("builtins", "input"),
        ("__builtin__", "execfile") => ("builtins", "exec"),
        ("itertools", "izip") => ("builtins", "zip"),
        ("itertools", "imap") => ("builtins", "map"),
        ("itertools", "ifilter") => ("builtins", "filter"),
        ("itertools", "ifilterfalse") => ("itertools", "filterfalse"),
        ("itertools", "izip_longest") => ("itertools", "zip_longest"),
        ("UserDict", "IterableUserDict") => ("collections", "UserDict"),
        ("UserList", "UserList") => ("collections", "UserList"),
        ("UserString", "UserString") => ("collections", "UserString"),
        ("whichdb", "whichdb") => ("dbm", "whichdb"),
        ("_socket", "fromfd") => ("socket", "fromfd"),
        ("_multiprocessing", "Connection") => ("multiprocessing.connection", "Connection"),
        ("multiprocessing.process", "Process") => ("multiprocessing.context", "Process"),
        ("multiprocessing.forking", "Popen") => ("multiprocessing.popen_fork", "Popen"),
        ("urllib", "ContentTooShortError") => ("urllib.error", "ContentTooShortError"),
        ("urllib", "getproxies") => ("urllib.request", "getproxies"),
        ("urllib", "pathname2url") => ("urllib.request", "pathname2url"),
        ("urllib", "quote_plus") => ("urllib.parse", "quote_plus"),
        ("urllib", "quote") => ("urllib.parse", "quote"),
        ("urllib", "unquote_plus") => ("urllib.parse", "unquote_plus"),
        ("urllib", "unquote") => ("urllib.parse", "unquote"),
        ("urllib", "url2pathname") => ("urllib.request", "url2pathname"),
        ("urllib", "urlcleanup") => ("urllib.request", "urlcleanup"),
        ("urllib", "urlencode") => ("urllib.parse", "urlencode"),
        ("urllib", "urlopen") => ("urllib.request", "urlopen"),
        ("urllib", "urlretrieve") => ("urllib.request", "urlretrieve"),
        ("urllib2", "HTTPError") => ("urllib.error", "HTTPError"),
        ("urllib2", "URLError") => ("urllib.error", "URLError"),
        ("os", "getcwdu") => ("os", "getcwd"),
        ("string", "maketrans") => ("builtins", "bytes.maketrans"),
        _ => return None,
    })
}

/// Resolve the name an unpickler would import for `GLOBAL module name` under `proto`.
/// Returns `(module, name)` after torch's and CPython's remappings.
pub fn resolve(module: &str, name: &str, proto: u8) -> (String, String) {
    let (mut m, mut n) = (module.to_string(), name.to_string());
    if proto < 3 {
        if let Some((mm, nn)) = name_mapping(&m, &n) {
            m = mm.to_string();
            n = nn.to_string();
        } else if let Some(mm) = import_mapping(&m) {
            m = mm.to_string();
        }
    }
    if m == "torch.tensor" {
        m = "torch._tensor".to_string();
    }
    (m, n)
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn py2_names_map_under_old_protocols_only() {
        assert_eq!(resolve("commands", "getoutput", 2).0, "subprocess");
        assert_eq!(resolve("commands", "getoutput", 4).0, "commands");
        assert_eq!(
            resolve("__builtin__", "eval", 0),
            ("builtins".into(), "eval".into())
        );
        assert_eq!(
            resolve("__builtin__", "xrange", 2),
            ("builtins".into(), "range".into())
        );
        assert_eq!(resolve("urllib2", "urlopen", 1).0, "urllib.request");
        assert_eq!(resolve("torch.tensor", "Tensor", 4).0, "torch._tensor");
    }
}
