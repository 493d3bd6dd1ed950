//! The summary as plain-text tables, and the number formats people read.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::analysis::figures::{CriticalPath, MessageCell, PeUsage, Summary};
use crate::analysis::views::elide;

// The number formats keep their first paths (`summary_text::fmt_ns`, ...).
use crate::analysis::style::pe_label;
pub use crate::analysis::style::{fmt_bytes, fmt_ns};

/// PEs listed one by one in the text output; above this, the extremes are shown.
const TEXT_PE_ROWS: usize = 64;
/// Matrix drawn densely up to this many PEs; above, the largest pairs are listed.
const TEXT_DENSE_MATRIX: usize = 16;

/// The summary as plain-text tables for people.
pub fn render_text(s: &Summary) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Trace: {} PEs, span {} ({} .. {})",
        s.pe_count,
        fmt_ns(s.span_ns as f64),
        fmt_ns(s.start_ns as f64),
        fmt_ns(s.end_ns as f64)
    );
    let _ = writeln!(
        o,
        "Mean utilisation {:.1}%, {} entry executions, {} messages ({})",
        s.mean_utilisation * 100.0,
        s.entry_count,
        s.message_count,
        fmt_bytes(s.message_bytes)
    );
    render_pes(&mut o, s);
    render_time_profile(&mut o, s);
    render_entries(&mut o, s);
    render_matrix(&mut o, s);
    render_sizes(&mut o, s);
    render_heat_map(&mut o, s);
    o
}

/// Usage per PE; of many PEs, the least and most utilised.
fn render_pes(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "\nUtilisation per PE (busy = in entry methods)");
    let _ = writeln!(
        o,
        "{:>8} {:>6} {:>14} {:>14} {:>7} {:>7} {:>9}",
        "PE", "pid", "busy", "idle", "busy%", "idle%", "entries"
    );
    let row = |o: &mut String, p: &PeUsage| {
        let _ = writeln!(
            o,
            "{:>8} {:>6} {:>14} {:>14} {:>6.1}% {:>6.1}% {:>9}",
            p.pe,
            p.pid,
            fmt_ns(p.busy_ns as f64),
            fmt_ns(p.idle_ns as f64),
            p.utilisation * 100.0,
            p.idle_fraction * 100.0,
            p.entries
        );
    };
    if s.pes.len() <= TEXT_PE_ROWS {
        for p in &s.pes {
            row(o, p);
        }
    } else {
        let mut by_util: Vec<&PeUsage> = s.pes.iter().collect();
        by_util.sort_by(|a, b| a.utilisation.total_cmp(&b.utilisation));
        let _ = writeln!(o, "  (least utilised 8)");
        for p in by_util.iter().take(8) {
            row(o, p);
        }
        let _ = writeln!(o, "  (most utilised 8)");
        for p in by_util.iter().rev().take(8).rev() {
            row(o, p);
        }
    }
}

/// The time profile as bars of `#` (busy) and `.` (idle).
fn render_time_profile(o: &mut String, s: &Summary) {
    let tp = &s.time_profile;
    let _ = writeln!(
        o,
        "\nTime profile (busy % of all PEs per bin of {}; '#' busy, '.' idle)",
        fmt_ns(tp.bin_ns)
    );
    const BAR: usize = 50;
    for (i, (b, idle)) in tp.busy.iter().zip(&tp.idle).enumerate() {
        let nb = ((b * BAR as f64).round() as usize).min(BAR);
        let ni = ((idle * BAR as f64).round() as usize).min(BAR - nb);
        let _ = writeln!(
            o,
            "{:>14} |{}{}{}| {:>5.1}%",
            fmt_ns(i as f64 * tp.bin_ns),
            "#".repeat(nb),
            ".".repeat(ni),
            " ".repeat(BAR - nb - ni),
            b * 100.0
        );
    }
}

/// The entry-method table.
fn render_entries(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "\nEntry methods (by total time)");
    let width = s
        .entries
        .iter()
        .map(|e| e.name.chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, 48);
    let _ = writeln!(
        o,
        "{:<width$} {:>10} {:>14} {:>14} {:>14} {:>12}",
        "entry", "count", "total", "mean", "max", "bytes"
    );
    for e in &s.entries {
        let _ = writeln!(
            o,
            "{:<width$} {:>10} {:>14} {:>14} {:>14} {:>12}",
            e.name,
            e.count,
            fmt_ns(e.total_ns as f64),
            fmt_ns(e.mean_ns),
            fmt_ns(e.max_ns as f64),
            fmt_bytes(e.bytes)
        );
    }
}

fn render_sizes(o: &mut String, s: &Summary) {
    if s.message_sizes.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nMessage sizes (received messages, power-of-two buckets)"
    );
    let _ = writeln!(o, "{:>24} {:>10} {:>12}", "size", "messages", "bytes");
    let most = s
        .message_sizes
        .iter()
        .map(|b| b.messages)
        .max()
        .unwrap_or(1);
    for b in &s.message_sizes {
        let range = format!("{} .. {}", fmt_bytes(b.min_bytes), fmt_bytes(b.max_bytes));
        let bar = (b.messages * 40).div_ceil(most.max(1)) as usize;
        let _ = writeln!(
            o,
            "{range:>24} {:>10} {:>12} |{}",
            b.messages,
            fmt_bytes(b.bytes),
            "#".repeat(bar)
        );
    }
}

/// Shades of a busy fraction, from idle to fully busy.
const SHADES: &[u8] = b" .:-=+*#%@";

fn render_heat_map(o: &mut String, s: &Summary) {
    let h = &s.heat_map;
    if h.rows.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nUtilisation heat map (busy share per {} and bin of {}; ' ' idle .. '@' busy)",
        if h.rows.iter().all(|r| r.pes == 1) {
            "PE"
        } else {
            "range of PEs"
        },
        fmt_ns(h.bin_ns)
    );
    for r in &h.rows {
        let label = pe_label(r.first_pe, r.last_pe, r.pes == 1);
        let cells: String = r
            .busy
            .iter()
            .map(|&b| {
                let i = (b * (SHADES.len() - 1) as f64).round() as usize;
                SHADES[i.min(SHADES.len() - 1)] as char
            })
            .collect();
        let _ = writeln!(o, "{label:>14} |{cells}|");
    }
}

/// The critical path as text: its span and its entries, first to last.
pub fn render_critical_path(path: Option<&CriticalPath>) -> String {
    let mut o = String::new();
    let Some(p) = path else {
        let _ = writeln!(o, "\nCritical path: no entries");
        return o;
    };
    let _ = writeln!(
        o,
        "\nCritical path: {} entries over {} (each started by a message from the one before)",
        p.entries.len(),
        fmt_ns(p.span_ns as f64)
    );
    let _ = writeln!(o, "{:>8} {:>14} {:>14}  entry", "PE", "start", "duration");
    for i in elide(p.entries.len(), PATH_ROWS / 2) {
        let Some(e) = i.map(|i| &p.entries[i]) else {
            let _ = writeln!(o, "{:>8}  ({} more)", "...", p.entries.len() - PATH_ROWS);
            continue;
        };
        let _ = writeln!(
            o,
            "{:>8} {:>14} {:>14}  {}",
            e.pe,
            fmt_ns(e.start_ns as f64),
            fmt_ns(e.dur_ns as f64),
            e.name
        );
    }
    o
}

/// Entries of a critical path listed; a longer one shows its two ends.
pub(crate) const PATH_ROWS: usize = 40;

fn render_matrix(o: &mut String, s: &Summary) {
    if s.messages.is_empty() {
        let _ = writeln!(o, "\nMessages: none recorded");
        return;
    }
    if s.pe_count <= TEXT_DENSE_MATRIX {
        let pes: Vec<u32> = s.pes.iter().map(|p| p.pe).collect();
        let _ = writeln!(
            o,
            "\nMessages PE to PE (row = source, column = destination)"
        );
        let _ = write!(o, "{:>8}", "src\\dst");
        for d in &pes {
            let _ = write!(o, " {d:>8}");
        }
        let _ = writeln!(o);
        let cells: HashMap<(u32, u32), u64> = s
            .messages
            .iter()
            .map(|c| ((c.src_pe, c.dst_pe), c.messages))
            .collect();
        let mut srcs: Vec<u32> = pes.clone();
        for c in &s.messages {
            if !srcs.contains(&c.src_pe) {
                srcs.push(c.src_pe);
            }
        }
        for src in srcs {
            let _ = write!(o, "{src:>8}");
            for d in &pes {
                let _ = write!(o, " {:>8}", cells.get(&(src, *d)).copied().unwrap_or(0));
            }
            let _ = writeln!(o);
        }
    } else {
        let mut top: Vec<&MessageCell> = s.messages.iter().collect();
        top.sort_by(|a, b| b.messages.cmp(&a.messages).then(a.src_pe.cmp(&b.src_pe)));
        let _ = writeln!(
            o,
            "\nMessages PE to PE: {} non-empty pairs; the 20 busiest",
            s.messages.len()
        );
        let _ = writeln!(
            o,
            "{:>8} {:>8} {:>10} {:>12}",
            "src", "dst", "messages", "bytes"
        );
        for c in top.into_iter().take(20) {
            let _ = writeln!(
                o,
                "{:>8} {:>8} {:>10} {:>12}",
                c.src_pe,
                c.dst_pe,
                c.messages,
                fmt_bytes(c.bytes)
            );
        }
    }
}
