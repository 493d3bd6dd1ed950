//! The job's configuration from a program's command line and `CHORUS_*` variables:
//! `Config::from_args` for a program with no flags of its own, `parse_with` for one
//! that flattens `Config` into its own clap parser. A usage error is clap's (the
//! program named, exit code 2). Both also refuse a `--pes` given under mpirun that
//! the ranks do not make, the default's value included: `Config::validate` cannot
//! tell `--pes 4` from the default 4, and so let `mpirun -n 2 … --pes 4` run 2 PEs.

use super::check::program_command;
use super::{mpi_launch_size, Config, ConfigError, Layer};
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command, FromArgMatches, Parser};
use std::ffi::OsString;
use std::path::Path;

impl Config {
    /// The job's configuration from this program's command line and the `CHORUS_*`
    /// variables (`--pes`, `--layer`, `--trace`, …; `--help` lists them), checked by
    /// `Config::validate`. On a usage error it prints clap's message, naming the
    /// program, and exits with code 2; `--help` prints the flags and exits with 0.
    ///
    /// ```no_run
    /// let config = chorus_core::Config::from_args();
    /// println!("{} PEs on the {} layer", config.pes, config.layer.name());
    /// ```
    pub fn from_args() -> Config {
        Config::try_from_args(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// `from_args` for these arguments, the program's path first: `Err` is the usage
    /// error (or the help) `from_args` would print.
    pub fn try_from_args<I, T>(args: I) -> Result<Config, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let name = args
            .first()
            .and_then(|a| Path::new(a).file_name()?.to_str().map(str::to_owned))
            .unwrap_or_else(|| "chorus".to_owned());
        let cmd = Config::augment_args(
            Command::new("chorus")
                .display_name(name)
                .about("a chorus program"),
        );
        parse_from(
            cmd,
            args,
            |c: &Config| Some(c.clone()),
            |_| Ok(()),
            validated,
        )
    }

    /// A `--pes` given (on the command line or in `CHORUS_PES`) to an mpi job under
    /// mpirun must be the PEs its `mpi_ranks` ranks run; a default is not a claim.
    fn check_pes_given(&self, given: bool, mpi_ranks: Option<u32>) -> Result<(), ConfigError> {
        let Some(ranks) = mpi_ranks.filter(|&n| n > 1) else {
            return Ok(());
        };
        let total = ranks.saturating_mul(self.pes_per_rank);
        if given && self.layer == Layer::Mpi && self.pes != total {
            return Err(ConfigError::PesUnderMpirun {
                pes: self.pes,
                ranks,
                per_rank: self.pes_per_rank,
                total,
            });
        }
        Ok(())
    }
}

/// Parse program flags `A` from the command line with clap; `config` is the job
/// configuration the program will run for them (none for commands without a job),
/// which `check` refuses or not (`Config::validate`, at least) and which must not
/// claim a `--pes` mpirun's ranks do not make. A refusal is a usage error: exit code 2.
pub fn parse_with<A: Parser>(
    config: impl Fn(&A) -> Option<Config>,
    own: impl Fn(&A) -> Result<(), String>,
    check: impl Fn(&Config) -> Result<(), String>,
) -> A {
    let args = std::env::args_os().collect();
    parse_from(program_command::<A>(), args, config, own, check).unwrap_or_else(|e| e.exit())
}

/// [`parse_with`] for these arguments, the program's path first: `Err` is the usage
/// error (or the help) `parse_with` would print and exit with, so a program's whole
/// command line can be checked without running it.
pub fn try_parse_with<A: Parser>(
    args: Vec<OsString>,
    config: impl Fn(&A) -> Option<Config>,
    own: impl Fn(&A) -> Result<(), String>,
    check: impl Fn(&Config) -> Result<(), String>,
) -> Result<A, clap::Error> {
    let name = args
        .first()
        .and_then(|a| Path::new(a).file_name()?.to_str().map(str::to_owned));
    let cmd = match name {
        Some(name) => A::command().display_name(name),
        None => A::command(),
    };
    parse_from(cmd, args, config, own, check)
}

/// `Config::validate`, its error as words.
fn validated(config: &Config) -> Result<(), String> {
    config.validate().map_err(|e| e.to_string())
}

/// Parse `args` with `cmd` into `A`, then check the job configuration it makes.
fn parse_from<A: FromArgMatches>(
    mut cmd: Command,
    args: Vec<OsString>,
    config: impl Fn(&A) -> Option<Config>,
    own: impl Fn(&A) -> Result<(), String>,
    check: impl Fn(&Config) -> Result<(), String>,
) -> Result<A, clap::Error> {
    let matches = cmd.try_get_matches_from_mut(args)?;
    let parsed = A::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
    own(&parsed).map_err(|e| cmd.error(ErrorKind::ValueValidation, e))?;
    if let Some(job) = config(&parsed) {
        // The claim first: it is the mistake even where the mpi layer is not built.
        job.check_pes_given(pes_given(&matches), mpi_launch_size())
            .map_err(|e| e.to_string())
            .and_then(|()| check(&job))
            .map_err(|e| cmd.error(ErrorKind::ValueValidation, e))?;
    }
    Ok(parsed)
}

/// Whether `--pes` was given, on the command line or in `CHORUS_PES`, to the
/// command or to the subcommand that takes the job's flags.
fn pes_given(matches: &ArgMatches) -> bool {
    let mut m = matches;
    loop {
        if m.ids().any(|id| id.as_str() == "pes") {
            return matches!(
                m.value_source("pes"),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            );
        }
        match m.subcommand() {
            Some((_, sub)) => m = sub,
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::config::DEFAULT_PES;

    #[test]
    fn the_standard_flags_are_taken_from_the_command_line() {
        let c = Config::try_from_args(["prog", "--pes", "7", "--layer", "sim", "--seed", "9"])
            .expect("valid flags");
        assert_eq!((c.pes, c.layer, c.seed), (7, Layer::Sim, 9));
        let c = Config::try_from_args(["prog"]).expect("no flags");
        assert_eq!(c.pes, DEFAULT_PES);
    }

    #[test]
    fn a_usage_error_names_the_program_and_exits_2() {
        let e = Config::try_from_args(["/some/dir/my_prog", "--pess", "3"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("Usage: my_prog"), "{e}");
        let e = Config::try_from_args(["my_prog", "--pes", "lots"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let refused = Config::try_from_args(["my_prog", "--tree-arity", "1"]).unwrap_err();
        assert_eq!(refused.exit_code(), 2);
        assert!(refused.to_string().contains("--tree-arity"), "{refused}");
    }

    #[test]
    fn the_spinner_is_for_programs_run_from_the_command_line_not_for_tests() {
        assert!(!Config::default().progress && !Config::with_pes(8).progress);
        assert!(Config::try_from_args(["prog"]).expect("no flags").progress);
    }

    #[test]
    fn a_given_pes_the_ranks_do_not_make_is_refused_even_the_defaults_value() {
        let mpi = Config {
            layer: Layer::Mpi,
            pes: DEFAULT_PES,
            ..Config::default()
        };
        let e = mpi.check_pes_given(true, Some(2)).unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::PesUnderMpirun {
                    pes: 4,
                    ranks: 2,
                    total: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            mpi.check_pes_given(false, Some(2)).is_ok(),
            "the default is no claim"
        );
        assert!(mpi.check_pes_given(true, None).is_ok(), "not under mpirun");
        let two = Config { pes: 2, ..mpi };
        assert!(two.check_pes_given(true, Some(2)).is_ok());
    }
}
