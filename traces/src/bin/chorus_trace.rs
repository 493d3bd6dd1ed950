//! `chorus-trace`: summaries, HTML reports and checks of chorus Chrome traces.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use chorus_traces::{read_chrome, render_report, render_text, summarize, validate, ReportOptions};
use clap::{Parser, Subcommand};

/// Projections-like views of a chorus trace (Chrome Trace Event JSON).
#[derive(Parser)]
#[command(name = "chorus-trace", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Utilisation per PE, time profile, entry-method table and PE-to-PE messages.
    Summary {
        /// The trace file.
        file: PathBuf,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        /// Bins of the time profile.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        bins: u32,
    },
    /// Write a self-contained HTML report (overview, usage and time profiles, entry table).
    Report {
        /// The trace file.
        file: PathBuf,
        /// Where to write the HTML.
        #[arg(short, long)]
        output: PathBuf,
        /// Bins of the time profile.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        bins: u32,
        /// Most overview rows before PEs are aggregated into ranges.
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        max_rows: u32,
    },
    /// Check that the trace is well formed (nesting, order, flows, track names).
    Check {
        /// The trace file.
        file: PathBuf,
    },
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Summary { file, json, bins } => {
            let trace = read_chrome(&file).map_err(|e| e.to_string())?;
            let s = summarize(&trace, bins as usize);
            if json {
                let text = serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?;
                println!("{text}");
            } else {
                print!("{}", render_text(&s));
            }
        }
        Command::Report {
            file,
            output,
            bins,
            max_rows,
        } => {
            let trace = read_chrome(&file).map_err(|e| e.to_string())?;
            let s = summarize(&trace, bins as usize);
            let opts = ReportOptions {
                title: format!("chorus trace: {}", file.display()),
                max_rows: max_rows as usize,
                ..ReportOptions::default()
            };
            let html = render_report(&trace, &s, &opts);
            std::fs::write(&output, html).map_err(|e| format!("{}: {e}", output.display()))?;
            eprintln!("wrote {}", output.display());
        }
        Command::Check { file } => {
            let trace = read_chrome(&file).map_err(|e| e.to_string())?;
            let problems = validate(&trace);
            if !problems.is_empty() {
                for p in problems.iter().take(50) {
                    eprintln!("{p}");
                }
                return Err(format!("{}: {} problems", file.display(), problems.len()));
            }
            println!(
                "{}: ok ({} tracks, {} flows)",
                file.display(),
                trace.tracks.len(),
                trace.flows.len()
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    // Clap prints its own usage errors and exits with status 2.
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("chorus-trace: error: {msg}");
            ExitCode::FAILURE
        }
    }
}
