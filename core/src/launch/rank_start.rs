//! What a rank does around its PEs' run: the startup checks across ranks (registry
//! digests, PEs per rank), clock alignment, the trace, and the exchange of reports
//! at the end.

/// Tag of the trace records ranks send to rank 0 after the job.
const TRACE_TAG: i32 = 7;

use super::Job;
use crate::api::registry::Registry;
use crate::api::report::{PeReport, RunReport};
use crate::base::error::RuntimeError;
use crate::base::ids::Pe;
use crate::engine::report::BalanceStep;
use crate::engine::PeSetup;
use crate::machine::mpi::link::POSTED_BYTES;
use crate::trace::JobTrace;
use crate::wire;
use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What a rank sets up before its PEs run, and finishes after, however many PEs it
/// runs.
pub(crate) struct RankStart {
    began: Instant,
    pub(crate) rank: Pe,
    ppr: usize,
    npes: usize,
    /// This rank's job start on its MPI clock, aligned to rank 0's.
    pub(crate) epoch: f64,
    trace: Option<JobTrace>,
}

impl RankStart {
    /// Check that every rank runs the same types and PEs per rank, align the clocks
    /// and open the trace; also returns the rank's communicator for the run, its own
    /// so that user MPI traffic on the world never matches ours.
    pub(crate) fn new(
        world: &SimpleCommunicator,
        job: &Job,
        ppr: usize,
    ) -> Result<(Self, SimpleCommunicator), RuntimeError> {
        let began = Instant::now();
        let comm = world.duplicate();
        check_registry(&comm, &job.registry)?;
        check_pes_per_rank(&comm, ppr)?;
        check_wire(&comm)?;
        let epoch = clock_epoch(&comm);
        let npes = comm.size() as usize * ppr;
        let trace = start_trace(&comm, &job.config, npes)?;
        let start = RankStart {
            began,
            rank: comm.rank() as Pe,
            ppr,
            npes,
            epoch,
            trace,
        };
        Ok((start, comm))
    }

    /// How PE `pe` of this rank starts.
    pub(crate) fn pe_setup(&self, cfg: &crate::base::config::Config, pe: Pe) -> PeSetup {
        let trace = self.trace.as_ref().map(|t| t.pe(pe, self.rank));
        PeSetup::new(cfg, self.npes, pe, trace)
    }

    /// The job's report from this rank's PEs' reports (in PE order), exchanged over
    /// `comm` once every rank has shut down its traffic.
    pub(crate) fn finish(
        self,
        comm: &SimpleCommunicator,
        mine: Vec<PeReport>,
    ) -> Result<RunReport, RuntimeError> {
        let per_pe = exchange_reports(comm, mine, self.ppr);
        let wall_s = self.began.elapsed().as_secs_f64();
        let trace = match self.trace {
            Some(t) => gather_trace(comm, t)?,
            None => None,
        };
        super::finish_run(RunReport {
            layer: "mpi",
            pes: self.npes,
            wall_s,
            per_pe,
            sim: None,
            recoveries: Vec::new(),
            trace,
        })
    }
}

/// Every rank's PEs per rank, compared: PE numbers map to ranks by it, so ranks that
/// disagree would send each other's messages astray.
fn check_pes_per_rank(comm: &SimpleCommunicator, ppr: usize) -> Result<(), RuntimeError> {
    check_same(comm, ppr as u64, |rank, theirs, first| {
        RuntimeError::PesPerRankDiffer {
            rank,
            theirs,
            first,
        }
    })
}

/// Every rank's wire version and posted-receive size, compared: a rank of another
/// build could send envelopes the others cannot read, or longer than their posted
/// receives (which MPI would end the job for, with its own message).
fn check_wire(comm: &SimpleCommunicator) -> Result<(), RuntimeError> {
    let mine = u64::from(wire::VERSION) << 32 | POSTED_BYTES as u64;
    check_same(comm, mine, |odd, theirs, first| {
        let (v, b) = (theirs >> 32, theirs & u64::from(u32::MAX));
        let (v0, b0) = (first >> 32, first & u64::from(u32::MAX));
        RuntimeError::WireDiffer {
            rank: odd,
            version: v,
            posted: b,
            first_version: v0,
            first_posted: b0,
        }
    })
}

/// Every rank's `value` compared with rank 0's; the error `differ(rank, its value,
/// rank 0's)` names the first rank that differs.
fn check_same(
    comm: &SimpleCommunicator,
    value: u64,
    differ: impl Fn(u32, u64, u64) -> RuntimeError,
) -> Result<(), RuntimeError> {
    let mut all = vec![0u64; comm.size() as usize];
    comm.all_gather_into(&value, &mut all[..]);
    match all.iter().position(|&n| n != all[0]) {
        None => Ok(()),
        Some(odd) => Err(differ(odd as u32, all[odd], all[0])),
    }
}

/// Every rank opens its part of the trace; if any rank cannot, every rank returns an
/// error (rather than some ranks running on while others left).
fn start_trace(
    comm: &SimpleCommunicator,
    cfg: &crate::base::config::Config,
    npes: usize,
) -> Result<Option<JobTrace>, RuntimeError> {
    let mine = JobTrace::start(cfg, "rank", npes);
    // 0: could not open, 1: not tracing, 2: tracing.
    let state: u8 = match &mine {
        Err(_) => 0,
        Ok(None) => 1,
        Ok(Some(_)) => 2,
    };
    let mut all = vec![0u8; comm.size() as usize];
    comm.all_gather_into(&state, &mut all[..]);
    if let Err(e) = mine {
        return Err(e);
    }
    if let Some(bad) = all.iter().position(|&s| s == 0) {
        return Err(RuntimeError::Remote(format!(
            "rank {bad} could not open its trace spool next to --trace"
        )));
    }
    if let Some(odd) = all.iter().position(|&s| s != state) {
        return Err(RuntimeError::TraceFlagsDiffer {
            rank: odd as u32,
            other: comm.rank() as u32,
        });
    }
    mine
}

/// Every rank sends its trace records to rank 0, which writes the one merged file;
/// returns rank 0's report of the file (and `None` elsewhere).
fn gather_trace(
    comm: &SimpleCommunicator,
    trace: JobTrace,
) -> Result<Option<crate::trace::TraceReport>, RuntimeError> {
    let rank = comm.rank();
    if rank != 0 {
        let root = comm.process_at_rank(0);
        let tables = bincode::serialize(&trace.tables()).unwrap_or_default();
        root.send_with_tag(&tables[..], TRACE_TAG);
        // Buffers stream one at a time; an empty message ends them, sent even when the
        // spool cannot be read so that rank 0 never waits for records that will not come.
        let exported = trace.export(|chunk| root.send_with_tag(&chunk[..], TRACE_TAG));
        root.send_with_tag(&[] as &[u8], TRACE_TAG);
        return exported.map(|()| None);
    }
    for from in 1..comm.size() {
        let peer = comm.process_at_rank(from);
        let (tables, _) = peer.receive_vec_with_tag::<u8>(TRACE_TAG);
        let who = format!("rank {from}");
        let tables: Result<crate::trace::TraceTables, _> = bincode::deserialize(&tables);
        let importer = tables.as_ref().map(|t| trace.importer(t));
        let mut failed = None;
        loop {
            let (bytes, _) = peer.receive_vec_with_tag::<u8>(TRACE_TAG);
            if bytes.is_empty() {
                break;
            }
            // Keep receiving after a bad buffer so the sender can finish.
            let imported = match &importer {
                Ok(imp) => trace.import(imp, &who, &bytes),
                Err(e) => Err(RuntimeError::TraceNames {
                    from: who.clone(),
                    reason: e.to_string(),
                }),
            };
            if let Err(e) = imported {
                failed.get_or_insert(e);
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
    }
    trace.finish().map(Some)
}

/// Every rank's registry digest, compared; on a mismatch, every rank returns the
/// same error naming the first differing registration.
fn check_registry(comm: &SimpleCommunicator, reg: &Registry) -> Result<(), RuntimeError> {
    let digest = reg.digest();
    let mut all = vec![0u64; comm.size() as usize];
    comm.all_gather_into(&digest, &mut all[..]);
    let Some(odd) = all.iter().position(|&d| d != all[0]) else {
        return Ok(());
    };
    let manifest_of = |root: usize| -> Vec<String> {
        let mut bytes = if comm.rank() as usize == root {
            bincode::serialize(reg.manifest()).unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut len = bytes.len() as u64;
        comm.process_at_rank(root as i32).broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        comm.process_at_rank(root as i32)
            .broadcast_into(&mut bytes[..]);
        bincode::deserialize(&bytes).unwrap_or_default()
    };
    let first = manifest_of(0);
    let other = manifest_of(odd);
    let mismatch = Registry::compare(&first, &other).err().unwrap_or_else(|| {
        crate::base::error::RegistryMismatch {
            index: 0,
            local: "(same types, different digest)".into(),
            remote: "(same types, different digest)".into(),
        }
    });
    Err(RuntimeError::RegistryAcrossRanks {
        rank: odd as u32,
        mismatch,
    })
}

/// This rank's job-start time on its own MPI clock, aligned to rank 0's: rank 0
/// exchanges a few timestamps with each rank and keeps the round trip with the
/// least delay, as NTP does.
fn clock_epoch(comm: &SimpleCommunicator) -> f64 {
    const ROUNDS: usize = 5;
    let rank = comm.rank();
    let mut offset = 0.0f64;
    for peer in 1..comm.size() {
        if rank == 0 {
            let mut best = (f64::INFINITY, 0.0);
            for _ in 0..ROUNDS {
                let t0 = mpi::time();
                comm.process_at_rank(peer).send(&t0);
                let (t_peer, _) = comm.process_at_rank(peer).receive::<f64>();
                let t1 = mpi::time();
                if t1 - t0 < best.0 {
                    best = (t1 - t0, t_peer - (t0 + t1) / 2.0);
                }
            }
            comm.process_at_rank(peer).send(&best.1);
        } else if rank == peer {
            for _ in 0..ROUNDS {
                let (_, _) = comm.process_at_rank(0).receive::<f64>();
                comm.process_at_rank(0).send(&mpi::time());
            }
            offset = comm.process_at_rank(0).receive::<f64>().0;
        }
    }
    let mut start0 = if rank == 0 { mpi::time() } else { 0.0 };
    comm.process_at_rank(0).broadcast_into(&mut start0);
    start0 + offset
}

/// A PE's report as it crosses ranks: errors as text.
#[derive(Serialize, Deserialize)]
struct WireReport {
    pe: Pe,
    sent: u64,
    processed: u64,
    unprocessed: u64,
    dropped_on_wire: u64,
    dropped_to_deleted: u64,
    errors_not_kept: u64,
    errors: Vec<String>,
    outputs: Vec<(String, Vec<u8>)>,
    qd_waves: u64,
    aborted: bool,
    balance: Vec<BalanceStep>,
    tasks_waiting: u64,
    late_replies: u64,
    unfinished: Vec<String>,
    exit_at_quiescence: bool,
}

impl From<&PeReport> for WireReport {
    fn from(r: &PeReport) -> Self {
        WireReport {
            pe: r.pe,
            sent: r.sent,
            processed: r.processed,
            unprocessed: r.unprocessed,
            dropped_on_wire: r.dropped_on_wire,
            dropped_to_deleted: r.dropped_to_deleted,
            errors_not_kept: r.errors_not_kept,
            errors: r.errors.iter().map(|e| e.to_string()).collect(),
            outputs: r.outputs.clone(),
            qd_waves: r.qd_waves,
            aborted: r.aborted,
            balance: r.balance.clone(),
            tasks_waiting: r.tasks_waiting,
            late_replies: r.late_replies,
            unfinished: r.unfinished.clone(),
            exit_at_quiescence: r.exit_at_quiescence,
        }
    }
}

impl From<WireReport> for PeReport {
    fn from(w: WireReport) -> Self {
        PeReport {
            pe: w.pe,
            sent: w.sent,
            processed: w.processed,
            unprocessed: w.unprocessed,
            dropped_on_wire: w.dropped_on_wire,
            dropped_to_deleted: w.dropped_to_deleted,
            errors_not_kept: w.errors_not_kept,
            errors: w.errors.into_iter().map(RuntimeError::Remote).collect(),
            outputs: w.outputs,
            qd_waves: w.qd_waves,
            aborted: w.aborted,
            balance: w.balance,
            tasks_waiting: w.tasks_waiting,
            late_replies: w.late_replies,
            unfinished: w.unfinished,
            exit_at_quiescence: w.exit_at_quiescence,
        }
    }
}

/// Every rank's PE reports, on every rank, in PE order.
fn exchange_reports(comm: &SimpleCommunicator, mine: Vec<PeReport>, ppr: usize) -> Vec<PeReport> {
    let wire: Vec<WireReport> = mine.iter().map(WireReport::from).collect();
    let bytes = bincode::serialize(&wire).unwrap_or_default();
    let n = comm.size() as usize;
    let mut counts = vec![0i32; n];
    comm.all_gather_into(&(bytes.len() as i32), &mut counts[..]);
    let displs: Vec<i32> = counts
        .iter()
        .scan(0i32, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let mut all = vec![0u8; total];
    {
        let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        comm.all_gather_varcount_into(&bytes[..], &mut part);
    }
    let me = comm.rank() as usize;
    let mut mine = Some(mine);
    let mut out = Vec::new();
    for r in 0..n {
        if r == me {
            out.extend(mine.take().unwrap_or_default());
            continue;
        }
        let (d, c) = (displs[r] as usize, counts[r] as usize);
        match bincode::deserialize::<Vec<WireReport>>(&all[d..d + c]) {
            Ok(reports) => out.extend(reports.into_iter().map(PeReport::from)),
            Err(e) => out.extend((r * ppr..(r + 1) * ppr).map(|pe| {
                let mut report = PeReport::new(pe as Pe);
                report.record_error(RuntimeError::Decode {
                    pe: me as Pe,
                    what: format!("rank {r}'s reports"),
                    reason: e.to_string(),
                });
                report
            })),
        }
    }
    out
}
