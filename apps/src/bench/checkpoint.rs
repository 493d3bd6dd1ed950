//! Checkpoint bandwidth: `--pes` threads PEs hold `--bytes` of array state; one job
//! takes a disk checkpoint into `--dir` (timed from the request to its callback,
//! every PE file written and synced) and then an in-memory one, a second job restarts
//! from the disk checkpoint (timed whole: the files read and checked, every element
//! rebuilt, a checksum of the state, which must equal the first job's), and in the
//! same run `dd` writes (`conv=fdatasync`) and reads back a file of the same size in
//! the same directory. Figures are GB/s of state and the ratios to `dd`. The
//! restart and dd's read both read files just written, so both read from the page
//! cache (while memory holds them): like with like, not the disk's read rate.
//! Beside that pair, as root, a cold pair: the restart and dd's read each after
//! `sync` and dropping the page cache, both from the disk (skipped, saying why,
//! where the cache cannot be dropped). `--reps` repetitions alternate chorus and dd
//! (swapping which goes first each time, as the disk's rate drifts) and every figure
//! is the median of its repetitions, each with the load average it ran under.

use crate::bench::report::{Report, Target};
use chorus_core::{
    ArrayMap, Bytes, Callback, Chare, Config, Ctx, Entry, ErrorPolicy, Layer, Migratable, Reducer,
    Registry, Runtime,
};
use chorus_sections::tune::stats::median;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Array elements per PE: each holds `--bytes / (pes * ELEMENTS_PER_PE)`.
const ELEMENTS_PER_PE: usize = 4;
/// What the bench aims for: disk write and restart at least half of `dd`'s rate.
pub const TARGET: Target = Target::AtLeast(0.5);
/// Copies of the state the process holds at its peak (the elements, their encoded
/// files or in-memory copies, the buddies' copies): what `--bytes` is checked against.
const PEAK_COPIES: u64 = 4;

/// The flags of `chorus-bench checkpoint`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckpointArgs {
    /// PEs (threads layer).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub pes: u32,
    /// Bytes of array state in all, split evenly over the PEs' elements (at most
    /// 64 GiB, and refused above what the machine's free memory can hold).
    #[arg(long, default_value_t = 1 << 30, value_parser = clap::value_parser!(u64).range(1 << 20..=1 << 36))]
    pub bytes: u64,
    /// Directory for the checkpoint and dd's file (made if missing; emptied of both
    /// afterwards); default a fresh one under the system's temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Repetitions, chorus and dd alternating in each; the figures are the medians.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// Skip the cold pair (the restart and dd's read after dropping the page cache,
    /// which needs root and slows everything else on the machine for a while).
    #[arg(long)]
    pub no_cold: bool,
    /// Print one JSON object instead of lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

impl CheckpointArgs {
    /// Refuse a size this machine cannot hold.
    pub fn check(&self) -> Result<(), String> {
        crate::memory::check(
            &format!("--bytes {}", self.bytes),
            self.bytes.saturating_mul(PEAK_COPIES),
        )
    }
}

/// One element's share of the state.
#[derive(Serialize, Deserialize)]
struct Block {
    data: Bytes,
    /// Where the checkpoint goes.
    dir: String,
    /// Layer-clock seconds when the timed checkpoint was asked for (element 0).
    asked: f64,
    entries: Entries,
}

/// Element 0's entries: start, disk checkpoint done, memory checkpoint done; and
/// every element's checksum.
type Entries = (
    Entry<Block, ()>,
    Entry<Block, ()>,
    Entry<Block, bool>,
    Entry<Block, u64>,
);

#[derive(Clone, Serialize, Deserialize)]
enum BlockMsg {
    Start,
    DiskDone,
    MemoryDone(bool),
    /// Contribute the state's checksum (to element 0's `Sum`).
    Checksum,
    Sum(u64),
}

type Init = (u64, String, Entries);

impl Chare for Block {
    type Init = Init;
    type Msg = BlockMsg;
    fn create((len, dir, entries): Init, ctx: &mut Ctx) -> Self {
        let i = ctx.this_index::<usize>().expect("a 1-D element") as u64;
        let mut data = Vec::with_capacity(len as usize);
        let mut x = chorus_core::mix64(i + 1);
        while (data.len() as u64) < len {
            x = chorus_core::mix64(x);
            data.extend_from_slice(&x.to_le_bytes());
        }
        data.truncate(len as usize);
        Block {
            data: Bytes::from(data),
            dir,
            asked: 0.0,
            entries,
        }
    }

    fn handle(&mut self, msg: BlockMsg, ctx: &mut Ctx) {
        let me = ctx.this_array::<Block, usize>().expect("in the array");
        match msg {
            BlockMsg::Start => {
                self.asked = ctx.now();
                ctx.checkpoint(&self.dir, Callback::array_element(&me, &0, self.entries.1));
            }
            BlockMsg::DiskDone => {
                ctx.publish("disk_s", &(ctx.now() - self.asked));
                self.asked = ctx.now();
                ctx.checkpoint_in_memory(Callback::array_element(&me, &0, self.entries.2));
            }
            BlockMsg::MemoryDone(_) => {
                ctx.publish("memory_s", &(ctx.now() - self.asked));
                me.broadcast(ctx, BlockMsg::Checksum);
            }
            BlockMsg::Checksum => {
                let sum = checksum(self.data.as_slice());
                ctx.contribute(
                    sum,
                    Reducer::Sum,
                    Callback::array_element(&me, &0, self.entries.3),
                );
            }
            BlockMsg::Sum(sum) => {
                ctx.publish("checksum", &sum);
                ctx.exit();
            }
        }
    }
}

impl Migratable for Block {}

/// A fast fold of `data`, the same in both jobs (wrapping sums of 8-byte words).
fn checksum(data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(8);
    let mut sum = 0u64;
    for w in &mut words {
        sum = sum.wrapping_add(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
    }
    let tail = words
        .remainder()
        .iter()
        .fold(0u64, |a, &b| a << 8 | u64::from(b));
    sum.wrapping_add(tail)
}

fn registry() -> (Registry, Entries) {
    let mut reg = Registry::new();
    reg.migratable::<Block>("Block");
    let start = reg.entry::<Block, ()>("start", |()| BlockMsg::Start);
    let disk = reg.entry::<Block, ()>("disk_done", |()| BlockMsg::DiskDone);
    let memory = reg.entry::<Block, bool>("memory_done", BlockMsg::MemoryDone);
    let sum = reg.entry::<Block, u64>("sum", BlockMsg::Sum);
    (reg, (start, disk, memory, sum))
}

/// One repetition's seconds: chorus and dd alternated in one run.
#[derive(Debug, Clone, Serialize)]
pub struct RepFigures {
    /// The disk checkpoint, from the request to its callback.
    pub disk_write_s: f64,
    /// The restarted job reading the files from the page cache.
    pub restart_s: f64,
    /// The in-memory checkpoint.
    pub memory_s: f64,
    /// `dd ... conv=fdatasync` writing as many bytes.
    pub dd_write_s: f64,
    /// `dd` reading its file back from the page cache.
    pub dd_read_s: f64,
    /// The restart after the page cache was dropped (none if it could not be).
    pub restart_cold_s: Option<f64>,
    /// `dd` reading its file after the page cache was dropped.
    pub dd_read_cold_s: Option<f64>,
    /// The 1-minute load average when the repetition began.
    pub load_average: f64,
    /// Every restart's checksum of the state equals the first job's.
    pub verified: bool,
}

/// What `chorus-bench checkpoint` measured: the median of each figure over `--reps`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointReport {
    /// PEs.
    pub pes: u32,
    /// Bytes of array state.
    pub bytes: u64,
    /// Bytes of the PE files written.
    pub file_bytes: u64,
    /// Seconds of the disk checkpoint, from the request to its callback (median).
    pub disk_write_s: f64,
    /// Seconds of the restarted job, from its start to its checksum (median).
    pub restart_s: f64,
    /// Seconds of the in-memory checkpoint, from the request to its callback (median).
    pub memory_s: f64,
    /// Seconds of `dd ... conv=fdatasync` writing as many bytes to the same directory (median).
    pub dd_write_s: f64,
    /// Seconds of `dd` reading that file back (median).
    pub dd_read_s: f64,
    /// Seconds of the restart from a dropped page cache (median), if it could be dropped.
    pub restart_cold_s: Option<f64>,
    /// Seconds of `dd` reading from a dropped page cache (median), if it could be dropped.
    pub dd_read_cold_s: Option<f64>,
    /// Why the cold pair was skipped (`None` if it was measured).
    pub cold_skipped: Option<String>,
    /// Each repetition, in order.
    pub runs: Vec<RepFigures>,
    /// Every restarted job's checksum of the state equals the first job's.
    pub verified: bool,
}

/// Run the bench `args` describes.
pub fn measure(args: &CheckpointArgs) -> Result<CheckpointReport, String> {
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("chorus-bench-checkpoint-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("--dir {}: {e}", dir.display()))?;
    let result = measure_in(args, &dir);
    clean(&dir);
    result
}

/// The checkpoint's and dd's files in `dir` go (the directory stays if it held
/// anything else).
fn clean(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "manifest.json" || name == "dd.tmp" || name.ends_with(".ckpt") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

fn config(pes: u32) -> Config {
    Config {
        pes,
        layer: Layer::Threads,
        on_error: ErrorPolicy::Abort,
        ..Config::default()
    }
}

/// The bench's shape: PEs, elements, bytes per element.
#[derive(Clone, Copy)]
struct Shape {
    pes: u32,
    elements: usize,
    len: u64,
}

fn measure_in(args: &CheckpointArgs, dir: &Path) -> Result<CheckpointReport, String> {
    let elements = args.pes as usize * ELEMENTS_PER_PE;
    let shape = Shape {
        pes: args.pes,
        elements,
        len: args.bytes.div_ceil(elements as u64),
    };
    let mib = args.bytes.div_ceil(1 << 20);
    let mut cold_skipped = args
        .no_cold
        .then(|| "--no-cold: the page cache was not dropped".to_string());
    let mut runs = Vec::new();
    for i in 0..args.reps {
        runs.push(repetition(shape, dir, mib, i % 2 == 1, &mut cold_skipped)?);
    }
    let med = |f: fn(&RepFigures) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let cold = |f: fn(&RepFigures) -> Option<f64>| {
        let v: Option<Vec<f64>> = runs.iter().map(f).collect();
        v.filter(|_| cold_skipped.is_none()).map(|v| median(&v))
    };
    Ok(CheckpointReport {
        pes: args.pes,
        bytes: shape.len * elements as u64,
        file_bytes: pe_files_bytes(dir),
        disk_write_s: med(|r| r.disk_write_s),
        memory_s: med(|r| r.memory_s),
        restart_s: med(|r| r.restart_s),
        dd_write_s: med(|r| r.dd_write_s),
        dd_read_s: med(|r| r.dd_read_s),
        restart_cold_s: cold(|r| r.restart_cold_s),
        dd_read_cold_s: cold(|r| r.dd_read_cold_s),
        verified: runs.iter().all(|r| r.verified),
        cold_skipped,
        runs,
    })
}

/// One repetition: the checkpointing job and dd's write, the restart and dd's read
/// from the page cache, and (unless `cold_skipped` says why not) the same pair after
/// dropping the page cache; `dd_first` puts dd before chorus in each pair, so that
/// alternate repetitions swap the order and neither side always runs on a
/// fresher disk.
fn repetition(
    shape: Shape,
    dir: &Path,
    mib: u64,
    dd_first: bool,
    cold_skipped: &mut Option<String>,
) -> Result<RepFigures, String> {
    let load_average = load_average();
    let file = dir.join("dd.tmp");
    let ((disk_write_s, memory_s, sum), dd_write_s) = pair(
        dd_first,
        || checkpoint_job(shape, dir),
        || dd_write(&file, mib),
    )?;
    let ((restart_s, warm_sum), dd_read_s) =
        pair(dd_first, || restart_job(shape, dir), || dd_read(&file))?;
    let mut cold = None;
    if cold_skipped.is_none() {
        match drop_caches() {
            Ok(()) => {
                let (restart_cold, cold_sum) = restart_job(shape, dir)?;
                drop_caches()?;
                cold = Some((restart_cold, dd_read(&file)?, cold_sum));
            }
            Err(why) => *cold_skipped = Some(why),
        }
    }
    let _ = std::fs::remove_file(&file);
    Ok(RepFigures {
        disk_write_s,
        restart_s,
        memory_s,
        dd_write_s,
        dd_read_s,
        restart_cold_s: cold.map(|c| c.0),
        dd_read_cold_s: cold.map(|c| c.1),
        load_average,
        verified: sum.is_some() && sum == warm_sum && cold.is_none_or(|c| c.2 == sum),
    })
}

/// Run `chorus` and `dd` in the order `dd_first` says; both results, or the first error.
fn pair<A, B>(
    dd_first: bool,
    chorus: impl FnOnce() -> Result<A, String>,
    dd: impl FnOnce() -> Result<B, String>,
) -> Result<(A, B), String> {
    if dd_first {
        let b = dd()?;
        Ok((chorus()?, b))
    } else {
        let a = chorus()?;
        Ok((a, dd()?))
    }
}

/// The first job: the disk checkpoint's and the in-memory checkpoint's seconds and
/// the state's checksum.
fn checkpoint_job(shape: Shape, dir: &Path) -> Result<(f64, f64, Option<u64>), String> {
    let (reg, entries) = registry();
    let d = dir.to_string_lossy().into_owned();
    let Shape { elements, len, .. } = shape;
    let first = Runtime::new(reg, config(shape.pes))
        .run(move |ctx| {
            let array = ctx.create_array_1d::<Block>(elements, (len, d, entries), ArrayMap::Block);
            ctx.start_quiescence(Callback::array_element(&array, &0, entries.0));
        })
        .map_err(|e| e.to_string())?;
    let figure = |key: &str| {
        first
            .output::<f64>(key)
            .ok_or(format!("the job published no {key}"))
    };
    Ok((
        figure("disk_s")?,
        figure("memory_s")?,
        first.output::<u64>("checksum"),
    ))
}

/// A job restarted from the checkpoint in `dir`: its seconds, whole, and the
/// state's checksum.
fn restart_job(shape: Shape, dir: &Path) -> Result<(f64, Option<u64>), String> {
    let mut cfg = config(shape.pes);
    cfg.restart = Some(dir.to_path_buf());
    let started = Instant::now();
    let restarted = Runtime::new(registry().0, cfg)
        .run(|ctx| {
            for array in ctx.restored_arrays::<Block, usize>() {
                array.broadcast(ctx, BlockMsg::Checksum);
            }
        })
        .map_err(|e| e.to_string())?;
    Ok((
        started.elapsed().as_secs_f64(),
        restarted.output::<u64>("checksum"),
    ))
}

/// Write back every dirty page and drop the page cache (as root), so that the next
/// read comes from the disk; why not, if the kernel refuses.
fn drop_caches() -> Result<(), String> {
    let _ = Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| {
        format!("the page cache cannot be dropped (/proc/sys/vm/drop_caches: {e}; run as root)")
    })
}

/// The 1-minute load average (NaN where /proc/loadavg cannot be read).
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Bytes of the PE files in `dir`.
fn pe_files_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".ckpt"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Seconds `dd` takes to write `mib` MiB to `file` (synced).
fn dd_write(file: &Path, mib: u64) -> Result<f64, String> {
    let of = format!("of={}", file.display());
    let count = format!("count={mib}");
    timed(
        "dd",
        &["if=/dev/zero", &of, "bs=1M", &count, "conv=fdatasync"],
    )
}

/// Seconds `dd` takes to read `file`.
fn dd_read(file: &Path) -> Result<f64, String> {
    let input = format!("if={}", file.display());
    timed("dd", &[&input, "of=/dev/null", "bs=1M"])
}

/// Seconds `program args` takes; an error if it fails.
fn timed(program: &str, args: &[&str]) -> Result<f64, String> {
    let start = Instant::now();
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program} {}: {e}", args.join(" ")))?;
    let s = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(s)
}

impl CheckpointReport {
    /// GB/s of state moved in `s` seconds.
    fn rate(&self, s: f64) -> f64 {
        self.bytes as f64 / s.max(1e-9) / 1e9
    }

    /// The disk checkpoint's rate over dd's write rate.
    pub fn write_ratio(&self) -> f64 {
        self.dd_write_s / self.disk_write_s.max(1e-9)
    }

    /// The restart's rate over dd's read rate.
    pub fn restart_ratio(&self) -> f64 {
        self.dd_read_s / self.restart_s.max(1e-9)
    }

    /// The cold restart's rate over dd's cold read rate, if both were measured.
    pub fn restart_cold_ratio(&self) -> Option<f64> {
        Some(self.dd_read_cold_s? / self.restart_cold_s?.max(1e-9))
    }
}

impl Report for CheckpointReport {
    fn json(&self) -> String {
        json!({
            "pes": self.pes,
            "bytes": self.bytes,
            "file_bytes": self.file_bytes,
            "disk_write_s": self.disk_write_s,
            "disk_write_gbps": self.rate(self.disk_write_s),
            "restart_s": self.restart_s,
            "restart_gbps": self.rate(self.restart_s),
            "memory_s": self.memory_s,
            "memory_gbps": self.rate(self.memory_s),
            "dd_write_s": self.dd_write_s,
            "dd_write_gbps": self.rate(self.dd_write_s),
            "dd_read_s": self.dd_read_s,
            "dd_read_gbps": self.rate(self.dd_read_s),
            "write_vs_dd": self.write_ratio(),
            "restart_vs_dd_read": self.restart_ratio(),
            "reads_from": "page cache",
            "restart_cold_s": self.restart_cold_s,
            "restart_cold_gbps": self.restart_cold_s.map(|s| self.rate(s)),
            "dd_read_cold_s": self.dd_read_cold_s,
            "dd_read_cold_gbps": self.dd_read_cold_s.map(|s| self.rate(s)),
            "restart_cold_vs_dd_read_cold": self.restart_cold_ratio(),
            "cold_skipped": self.cold_skipped,
            "reps": self.runs.len(),
            "figures": "median of reps",
            "runs": self.runs,
            "target": TARGET.to_string(),
            "verified": self.verified,
        })
        .to_string()
    }

    fn table(&self) -> String {
        let line =
            |what: &str, s: f64| format!("{what:<32} {s:>9.3} s {:>8.2} GB/s\n", self.rate(s));
        let cold = match (self.restart_cold_s, self.dd_read_cold_s, &self.cold_skipped) {
            (Some(r), Some(d), _) => format!(
                "{}{}",
                line("restart (cold cache, rebuild)", r),
                line("dd read (cold cache)", d)
            ),
            (_, _, why) => format!(
                "cold pair skipped: {}\n",
                why.as_deref().unwrap_or("not measured")
            ),
        };
        let loads: Vec<String> = self
            .runs
            .iter()
            .map(|r| format!("{:.2}", r.load_average))
            .collect();
        let cold_ratio = self
            .restart_cold_ratio()
            .map(|r| format!(", cold restart / cold dd read: {r:.2}x"))
            .unwrap_or_default();
        format!(
            "checkpoint of {} bytes of array state on {} PEs ({} bytes of PE files), restart checksum {}\n\
             medians of {} repetitions, chorus and dd alternating (1-minute load average at each: {})\n\
             {}{}{}{}{}{}\
             disk write / dd write: {:.2}x, restart / dd read: {:.2}x{} (target {})\n",
            self.bytes,
            self.pes,
            self.file_bytes,
            if self.verified { "equal" } else { "DIFFERENT" },
            self.runs.len(),
            loads.join(", "),
            line("disk checkpoint (write)", self.disk_write_s),
            line("restart (page cache, rebuild)", self.restart_s),
            line("in-memory checkpoint", self.memory_s),
            line("dd write (conv=fdatasync)", self.dd_write_s),
            line("dd read back (page cache)", self.dd_read_s),
            cold,
            self.write_ratio(),
            self.restart_ratio(),
            cold_ratio,
            TARGET,
        )
    }
}
