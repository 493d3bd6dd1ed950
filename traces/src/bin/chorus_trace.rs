//! `chorus-trace`: summaries, HTML reports and checks of chorus traces (Chrome JSON
//! or Perfetto protobuf).
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chorus_traces::{
    check_compact, critical_path, render_critical_path, render_report_compact, render_text,
    summarize_compact, summarize_file, CompactTrace, CriticalPath, ReportOptions, Summary,
    SummaryOptions,
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
    /// Utilisation per PE, time profile, entry-method table, PE-to-PE messages,
    /// message sizes and a utilisation heat map (PE x time).
    Summary {
        /// The trace file.
        file: PathBuf,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        /// Bins of the time profile and the heat map.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        bins: u32,
        /// Most heat-map rows before PEs are aggregated into ranges.
        #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        rows: u32,
        /// Also find the critical path through the message arrows (holds the trace in
        /// compact form, like `check`, instead of streaming it in constant memory).
        #[arg(long)]
        critical_path: bool,
    },
    /// Write a self-contained HTML report (overview, usage and time profiles, heat map,
    /// entry table, message sizes, critical path).
    Report {
        /// The trace file.
        file: PathBuf,
        /// Where to write the HTML.
        #[arg(short, long)]
        output: PathBuf,
        /// Bins of the time profile.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        bins: u32,
        /// Most overview and heat-map rows before PEs are aggregated into ranges.
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

/// `summary --json`: the summary's fields, and the critical path when asked for.
#[derive(serde::Serialize)]
struct SummaryJson<'a> {
    #[serde(flatten)]
    summary: &'a Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    critical_path: Option<&'a CriticalPath>,
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Summary {
            file,
            json,
            bins,
            rows,
            critical_path,
        } => {
            let opts = SummaryOptions {
                bins: bins as usize,
                heat_rows: rows as usize,
            };
            summary(&file, &opts, json, critical_path)
        }
        Command::Report {
            file,
            output,
            bins,
            max_rows,
        } => report(&file, &output, bins, max_rows),
        Command::Check { file, json } => check(&file, json),
    }
}

/// `summary`: streamed, or read whole when the critical path is asked for.
fn summary(file: &Path, opts: &SummaryOptions, json: bool, with_path: bool) -> Result<(), String> {
    let (s, path) = if with_path {
        let trace = CompactTrace::read(file).map_err(|e| e.to_string())?;
        (summarize_compact(&trace, opts), critical_path(&trace))
    } else {
        // Streamed twice, holding per-PE and per-bin state only.
        let s = summarize_file(file, opts).map_err(|e| e.to_string())?;
        (s, None)
    };
    if json {
        let out = SummaryJson {
            summary: &s,
            critical_path: path.as_ref().filter(|_| with_path),
        };
        let text = serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", render_text(&s));
        if with_path {
            print!("{}", render_critical_path(path.as_ref()));
        }
    }
    Ok(())
}

/// `report`: the HTML report of `file`, written to `output`.
fn report(file: &Path, output: &Path, bins: u32, max_rows: u32) -> Result<(), String> {
    let trace = CompactTrace::read(file).map_err(|e| e.to_string())?;
    let opts = SummaryOptions {
        bins: bins as usize,
        heat_rows: max_rows as usize,
    };
    let s = summarize_compact(&trace, &opts);
    let opts = ReportOptions {
        title: format!("chorus trace: {}", file.display()),
        max_rows: max_rows as usize,
        ..ReportOptions::default()
    };
    let html = render_report_compact(&trace, &s, &opts);
    chorus_traces::capture::staged::write_atomic(output, html.as_bytes())
        .map_err(|e| e.to_string())?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

/// `check`: the viewers' rules; an error naming the counts when one is broken.
fn check(file: &Path, json: bool) -> Result<(), String> {
    let trace = CompactTrace::read(file).map_err(|e| e.to_string())?;
    let report = check_compact(&trace);
    if json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{text}");
    }
    if !report.ok() {
        // Each broken rule once, with its count and first example (`--json` has more).
        for (rule, n) in &report.counts {
            let first = report.problems.iter().find(|p| p.rule == *rule);
            let example = first.map_or(String::new(), |p| format!("; first: {}", p.message));
            eprintln!(
                "{rule:?}: {n} problem{}{example}",
                if *n == 1 { "" } else { "s" }
            );
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
