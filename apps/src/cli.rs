//! Command-line checks every app binary shares: a configuration `Config::validate`
//! refuses, or a `--trace` file that cannot be created, is a usage error (exit code
//! 2, as clap's own range checks are), found before the job starts.

/// The range-checked number parsers, for the apps' own flags.
pub use chorus_core::cli::{f64_in, positive_f64_up_to, u64_in};
use chorus_core::Config;
use clap::Parser;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Parse `A` from the command line and check the job configuration `config` makes
/// of it, as the job will run it (none for commands without a job); exits with code
/// 2 on a usage error.
pub fn parse<A: Parser>(config: impl Fn(&A) -> Option<Config>) -> A {
    parse_and(config, |_| Ok(()))
}

/// [`parse`], with the program's own usage check `own` first (contradictory flags,
/// lists that do not parse): its refusal is a usage error too.
pub fn parse_and<A: Parser>(
    config: impl Fn(&A) -> Option<Config>,
    own: impl Fn(&A) -> Result<(), String>,
) -> A {
    let args = chorus_core::config::parse_with(config, own, check);
    let prog = program_name();
    if let Err(e) = crate::signals::install(&prog) {
        eprintln!("{prog}: cannot install the SIGINT, SIGTERM and SIGXFSZ handlers: {e}");
        std::process::exit(1);
    }
    args
}

/// Parse the program's command line `A` and check it as [`crate::programs::try_parse`]
/// does; exits with code 2 on a usage error.
pub fn parse_program<A: crate::programs::ProgramArgs>() -> A {
    parse_and(A::job, A::usage)
}

/// The program's name as it was started (`hello`), for its messages.
pub fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| Some(Path::new(&a).file_name()?.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "chorus".into())
}

/// The exit status of program `prog` whose run ended in `outcome`: success for
/// `Ok(true)`, failure for `Ok(false)` (a failed check, reported by the run) and for
/// an error, which is printed as `prog: error`.
pub fn exit_status(prog: &str, outcome: Result<bool, String>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{prog}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `path` with `-tag` put before its extension (`t.json` -> `t-tag.json`), so that
/// each of several runs writes its own file.
pub fn tagged_path(path: &Path, tag: &str) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("trace");
    let file = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("{stem}-{tag}.{ext}"),
        None => format!("{stem}-{tag}"),
    };
    path.with_file_name(file)
}

/// `Config::validate`, and that its output files can be created, each its own file.
pub fn check(config: &Config) -> Result<(), String> {
    config.validate().map_err(|e| e.to_string())?;
    if let Some(dir) = &config.restart {
        if !dir.is_dir() {
            return Err(format!(
                "--restart {}: no such directory (give the directory a checkpoint was written to)",
                dir.display()
            ));
        }
    }
    let lb = config.array_lb.as_str();
    if lb != "none" && !chorus_lb::array::NAMES.contains(&lb) {
        return Err(format!(
            "--array-lb {lb:?}: no such strategy; expected none, {}",
            chorus_lb::array::NAMES.join(", ")
        ));
    }
    if config.layer == chorus_core::Layer::Sim {
        let need = u64::from(config.pes).saturating_mul(crate::memory::SIM_BYTES_PER_PE);
        crate::memory::check(&format!("--pes {} on sim", config.pes), need)?;
    }
    if let (Some(t), Some(d)) = (&config.trace, &config.debug_trace) {
        if same_file(t, d) {
            return Err(format!(
                "--trace {} and --debug-trace {} name the same file; give each its own",
                t.display(),
                d.display()
            ));
        }
    }
    let outputs = [
        ("--trace", &config.trace),
        ("--debug-trace", &config.debug_trace),
    ];
    for (flag, path) in outputs {
        if let Some(p) = path {
            creatable(p).map_err(|e| format!("{flag} {}: cannot be created: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// Whether `a` and `b` are one file: the same path once made absolute, or (both
/// existing) the same file under two names.
fn same_file(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).or_else(|_| std::path::absolute(p));
    matches!((canon(a), canon(b)), (Ok(x), Ok(y)) if x == y)
}

/// Open `path` for writing as the trace writer will, and remove it again if this
/// made it (the run writes it at the end, possibly minutes later). A path that exists
/// and is not a regular file is refused without being opened: opening a FIFO blocks.
fn creatable(path: &Path) -> std::io::Result<()> {
    chorus_traces::capture::staged::destination(path).map_err(std::io::Error::other)?;
    let existed = path.exists();
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    if !existed {
        match std::fs::remove_file(path) {
            // Another rank of the same job, checking the same path, removed it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            r => r?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_goes_before_the_extension_or_at_the_end() {
        let p = Path::new("/tmp/run.json");
        assert_eq!(tagged_path(p, "async"), Path::new("/tmp/run-async.json"));
        assert_eq!(tagged_path(Path::new("run"), "x"), Path::new("run-x"));
    }

    #[test]
    fn ranks_that_check_one_trace_path_at_once_all_succeed() {
        // Every rank of an MPI job checks `--trace` at the same moment; one rank's
        // clean-up of the probe once made another's fail ("No such file").
        let dir = std::env::temp_dir().join(format!("chorus-creatable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || (0..2000).try_for_each(|_| creatable(&path)))
            })
            .collect();
        for t in threads {
            t.join().unwrap().expect("every check succeeds");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
