//! Every program's command line as a library: its clap arguments, the job
//! configuration it runs and its own usage checks, so that a binary and a test
//! parse a command line alike (`apps/tests/hostile_cli.rs` walks every flag of every
//! program through [`all`] without starting a process per case).

pub mod bench;
pub mod chorus_run;
pub mod hello;
pub mod jacobi2d;
pub mod jquick;
pub mod lb_test;
pub mod mcmc;
pub mod radix;
pub mod tune;

use chorus_core::Config;
use clap::Parser;
use std::ffi::OsString;

/// A program's command line: its flags, the job they make and the checks clap
/// cannot make.
pub trait ProgramArgs: Parser {
    /// The binary's name.
    const NAME: &'static str;

    /// The job configuration the program runs for these flags, on the layer it runs
    /// on (none for commands without a job).
    fn job(&self) -> Option<Config>;

    /// Usage errors clap cannot see: contradictory flags, lists that do not parse,
    /// sizes beyond the memory available.
    fn usage(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Parse and check `args` (the program's path first) as the binary does before its
/// job starts: `Err` is the usage error (exit code 2) or the help it would print.
pub fn try_parse<A: ProgramArgs>(args: Vec<OsString>) -> Result<A, clap::Error> {
    chorus_core::config::try_parse_with(args, A::job, A::usage, crate::cli::check)
}

/// One binary's command line, without its type.
pub struct Program {
    /// The binary's name.
    pub name: &'static str,
    /// Its clap command (subcommands included).
    pub command: fn() -> clap::Command,
    /// [`try_parse`] for it, the parsed value dropped.
    pub try_parse: fn(Vec<OsString>) -> Result<(), clap::Error>,
}

/// Every binary of chorus-apps, and the command line of the examples that take only
/// the runtime's flags (`Config::from_args`).
pub fn all() -> Vec<Program> {
    vec![
        program::<hello::Args>(),
        program::<mcmc::Args>(),
        program::<jquick::Args>(),
        program::<radix::Args>(),
        program::<jacobi2d::Args>(),
        program::<lb_test::Args>(),
        program::<bench::Cli>(),
        program::<tune::Args>(),
        program::<chorus_run::RunArgs>(),
        Program {
            name: "examples (Config::from_args)",
            command: || {
                use clap::Args as _;
                Config::augment_args(clap::Command::new("example"))
            },
            try_parse: |args| Config::try_from_args(args).map(|_| ()),
        },
    ]
}

fn program<A: ProgramArgs>() -> Program {
    Program {
        name: A::NAME,
        command: A::command,
        try_parse: |args| try_parse::<A>(args).map(|_| ()),
    }
}
