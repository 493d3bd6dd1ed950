//! `chorus-trace`: summaries, HTML reports and checks of chorus traces (Chrome JSON
//! or Perfetto protobuf).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use chorus_traces::{
    check_compact, render_report_compact, render_text, summarize_compact, summarize_file,
    CompactTrace, ReportOptions,
};
use clap::{Parser, Subcommand};

/// Projections-like views of a chorus trace (Chrome Trace Event JSON or Perfetto protobuf).
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
    /// Check that Perfetto, chrome://tracing and DevTools draw the trace right: slices
    /// nest and have a length, and every arrow binds to the entry that sent or handled
    /// its message (exit status 1 and the first offending events otherwise).
    Check {
        /// The trace file.
        file: PathBuf,
        /// Print the report as one JSON object (on stdout, whatever the outcome).
        #[arg(long)]
        json: bool,
    },
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Summary { file, json, bins } => {
            // Streamed twice, holding per-PE and per-bin state only.
            let s = summarize_file(&file, bins as usize).map_err(|e| e.to_string())?;
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
            let trace = CompactTrace::read(&file).map_err(|e| e.to_string())?;
            let s = summarize_compact(&trace, bins as usize);
            let opts = ReportOptions {
                title: format!("chorus trace: {}", file.display()),
                max_rows: max_rows as usize,
                ..ReportOptions::default()
            };
            let html = render_report_compact(&trace, &s, &opts);
            std::fs::write(&output, html).map_err(|e| format!("{}: {e}", output.display()))?;
            eprintln!("wrote {}", output.display());
        }
        Command::Check { file, json } => {
            let trace = CompactTrace::read(&file).map_err(|e| e.to_string())?;
            let report = check_compact(&trace);
            if json {
                let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                println!("{text}");
            }
            if !report.ok() {
                for p in &report.problems {
                    eprintln!("{:?}: {}", p.rule, p.message);
                }
                let counts: Vec<String> = report
                    .counts
                    .iter()
                    .map(|(rule, n)| format!("{rule:?} {n}"))
                    .collect();
                return Err(format!(
                    "{}: {} problems ({}); {} of {} arrows misbound",
                    file.display(),
                    report.total(),
                    counts.join(", "),
                    report.misbound_flows,
                    report.flows
                ));
            }
            if !json {
                println!(
                    "{}: ok ({} tracks, {} flows)",
                    file.display(),
                    trace.tracks.len(),
                    trace.flows.len()
                );
            }
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
