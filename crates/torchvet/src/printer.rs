//! The only writer to stdout. A closed pipe (`torchvet check | head`) ends the run quietly.
use std::io::{self, Write};

/// Write text to stdout; on a closed pipe, exit 0 at once.
pub fn out(text: &str) {
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    if let Err(e) = lock.write_all(text.as_bytes()).and_then(|()| lock.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

/// Write a line to stderr (errors, warnings), ignoring failures.
pub fn err(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{text}");
}
