//! Command lines that start a Python program for distributed training, read as text (shell
//! and job scripts, READMEs, usage docstrings): which launcher starts which program. Nothing
//! is run.

/// How a launcher hands each process its local rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// `python -m torch.distributed.launch` (or `.../torch/distributed/launch.py`) without
    /// `--use_env`: passes the rank as a command-line option (`--local-rank=N` since torch
    /// 2.0), and sets `LOCAL_RANK` too.
    Legacy,
    /// `torchrun`, `python -m torch.distributed.run`, or the legacy launcher with
    /// `--use_env` / `--use-env`: sets `LOCAL_RANK` only, passes no option.
    Env,
}

/// The programs (file names, `main.py`) that `text` starts with a distributed launcher, with
/// the launcher: the first `.py` argument after it. Shell continuations (`\` at a line's
/// end) join a command.
pub fn launched_programs(text: &str) -> Vec<(String, Launcher)> {
    if !names_a_launcher(text.as_bytes()) {
        return Vec::new();
    }
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out = Vec::new();
    // Every spelling below says `torch`: one vectorised test rejects the other lines.
    let torch = memchr::memmem::Finder::new(b"torch");
    for line in joined.lines() {
        if torch.find(line.as_bytes()).is_none() {
            continue;
        }
        let env_flag = line.contains("use_env") || line.contains("use-env");
        let found = [
            ("-m torch.distributed.launch", Launcher::Legacy),
            ("torch/distributed/launch.py", Launcher::Legacy),
            ("-m torch.distributed.run", Launcher::Env),
            ("torch/distributed/run.py", Launcher::Env),
            ("torchrun", Launcher::Env),
        ]
        .into_iter()
        .filter_map(|(pat, kind)| line.find(pat).map(|i| (i, pat, kind)))
        .filter(|(i, pat, _)| {
            // `torchrun` as a word (not `my_torchrun_wrapper`).
            *pat != "torchrun" || {
                let b = line.as_bytes();
                let before = i.checked_sub(1).map(|j| b[j]);
                let after = b.get(i + pat.len()).copied();
                !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                    && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
            }
        })
        .min_by_key(|(i, _, _)| *i);
        let Some((at, pat, kind)) = found else {
            continue;
        };
        let kind = if kind == Launcher::Legacy && env_flag {
            Launcher::Env
        } else {
            kind
        };
        let rest = &line[at + pat.len()..];
        let program = rest
            .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | ';' | '&' | '|'))
            .find(|t| t.ends_with(".py") && !t.starts_with('-'));
        if let Some(p) = program {
            let name = p.rsplit('/').next().unwrap_or(p);
            out.push((name.to_string(), kind));
        }
    }
    out
}

/// Does the text say `distributed.launch`, `distributed/launch.py`, `distributed.run`,
/// `distributed/run.py` or `torchrun` anywhere? Two vectorised searches instead of five.
fn names_a_launcher(t: &[u8]) -> bool {
    const D: &[u8] = b"distributed";
    memchr::memmem::find_iter(t, D).any(|i| {
        let rest = &t[i + D.len()..];
        [&b".launch"[..], b"/launch.py", b".run", b"/run.py"]
            .iter()
            .any(|w| rest.starts_with(w))
    }) || memchr::memmem::find(t, b"torchrun").is_some()
}

#[cfg(test)]
mod tests {
    use super::{launched_programs, Launcher};

    #[test]
    fn launchers_and_their_programs() {
        let l = |t: &str| launched_programs(t);
        assert_eq!(
            l("python -m torch.distributed.launch --nproc_per_node=8 tools/train.py cfg"),
            vec![("train.py".to_string(), Launcher::Legacy)]
        );
        assert_eq!(
            l("python -m torch.distributed.launch --use_env --nproc_per_node=2 main.py"),
            vec![("main.py".to_string(), Launcher::Env)]
        );
        assert_eq!(
            l("    $ python -m torch.distributed.run --nproc_per_node 4 --master_port 1 train.py --data x.yaml"),
            vec![("train.py".to_string(), Launcher::Env)]
        );
        assert_eq!(
            l("torchrun --standalone \\\n  --nproc_per_node=4 finetune.py --lr 1e-4"),
            vec![("finetune.py".to_string(), Launcher::Env)]
        );
        assert_eq!(l("bash my_torchrun_wrapper.sh main.py"), vec![]);
        assert_eq!(l("torchrun --nproc_per_node 2 -m pkg.train"), vec![]);
        // Not a launcher: `distributed` without one of the launcher paths after it.
        assert_eq!(l("python distributed_train.py distributed.py"), vec![]);
        assert_eq!(
            l("see distributed.py; python torch/distributed/run.py main.py"),
            vec![("main.py".to_string(), Launcher::Env)]
        );
    }
}
