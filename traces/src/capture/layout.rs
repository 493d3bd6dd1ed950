//! One PE's records turned into what the Chrome writer draws, on a trace clock that
//! every viewer binds arrows on exactly.
//!
//! Pairing: begin/end records become slices on a stack (unpaired ends are ignored,
//! slices left open close at the PE's last timestamp); every drawn message end gets a
//! *holder*, a 1 ns slice of category `msg` at whose start the flow event is written:
//! a receive's holder is the first thing inside the entry that handled the message, a
//! send's lies inside the entry (or user span) that sent it, or inside a `send` slice
//! made for it when the send happened outside any entry or while idle.
//!
//! Layout: the events of the track, in record order, get trace times
//! `t = max(recorded, previous + gap)`, with a gap of 1 ns before a holder, 2 ns after
//! one (its 1 ns and a free ns), and every slice at least 1 ns long. So holders lie
//! strictly inside their slices, no other slice starts or ends at a flow's time, and
//! nothing has zero length, while times stay the recorded ones wherever there was
//! room (a sim entry of zero virtual time is the common case where there is none: it
//! and what follows move later by a few ns until the next idle spell absorbs it).
//! A receive's holder can also be given a lower bound, so an arrow never points back
//! in time after its send moved later on its own track.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::path::Path;

use crate::capture::stats::WriteStats;
use crate::error::TraceError;
use crate::names::NameId;
use crate::record::{Event, Record};

/// Which PE and recorded time a flow end was recorded at, to pick the one record that draws it.
pub(crate) type At = (u32, u64);

/// The flows to draw: for each kept message id, where its send and receive were.
pub(crate) struct FlowPlan {
    pub sends: HashMap<u64, At>,
    pub recvs: HashMap<u64, At>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OpenKind {
    Entry,
    Span,
    Idle,
    /// A `send` slice made to hold a send outside any entry.
    Send,
}

/// What a slice is.
#[derive(Clone)]
pub(crate) enum SliceKind {
    Entry {
        name: NameId,
        src_pe: u32,
        bytes: u64,
        msg_id: Option<u64>,
    },
    Span {
        name: NameId,
    },
    Idle,
    /// Made to hold a send recorded outside any entry.
    Send,
    /// Arguments are `args[range]` of the track's argument list.
    Phase {
        name: NameId,
        args: std::ops::Range<usize>,
    },
}

/// A slice; `start`/`end` are recorded times until [`TrackEvents::lay_out`], trace times after.
pub(crate) struct Slice {
    pub start: u64,
    pub end: u64,
    /// Phases may be shortened (or dropped) to keep nesting.
    pub flexible: bool,
    /// A phase shortened to nothing, not written.
    pub dropped: bool,
    pub kind: SliceKind,
}

/// A flow end's 1 ns holder slice; the flow event is written at its start.
pub(crate) struct Holder {
    pub t: u64,
    pub msg_id: u64,
    /// A send (`s`) or a receive (`f`).
    pub send: bool,
}

/// A user instant.
pub(crate) struct Instant {
    pub t: u64,
    pub name: NameId,
}

#[derive(Clone, Copy)]
enum Tok {
    Begin(usize),
    End(usize),
    Hold(usize),
    Instant(usize),
}

/// One PE's slices, holders and instants.
pub(crate) struct TrackEvents {
    pub slices: Vec<Slice>,
    pub holders: Vec<Holder>,
    pub instants: Vec<Instant>,
    pub args: Vec<(u32, u64)>,
    /// Everything but phases, in record order, with recorded times.
    toks: Vec<(u64, Tok)>,
}

impl TrackEvents {
    /// Pairs one PE's records (see the module docs).
    pub(crate) fn pair(
        pe: u32,
        records: &[Record],
        plan: &FlowPlan,
        path: &Path,
        stats: &mut WriteStats,
    ) -> Result<TrackEvents, TraceError> {
        let mut p = Pairing {
            t: TrackEvents {
                slices: Vec::new(),
                holders: Vec::new(),
                instants: Vec::new(),
                args: Vec::new(),
                toks: Vec::with_capacity(records.len() + 8),
            },
            open: Vec::new(),
            last: 0,
            phase_args_left: 0,
            pe,
            plan,
            stats,
        };
        for r in records {
            let (e, then) = r.events().ok_or_else(|| TraceError::Format {
                path: path.to_path_buf(),
                message: format!("PE {pe}: unknown record kind in spool"),
            })?;
            p.event(e);
            if let Some(e) = then {
                p.event(e);
            }
        }
        let last = p.last;
        for (_, i) in std::mem::take(&mut p.open).into_iter().rev() {
            p.t.slices[i].end = last;
            p.t.toks.push((last, Tok::End(i)));
            p.stats.auto_closed += 1;
        }
        Ok(p.t)
    }

    /// Moves every time onto the trace clock (see the module docs); `min_recv` bounds
    /// receive holders from below by message id. Phases are placed by time among the
    /// other events and shortened where they would not nest.
    pub(crate) fn lay_out(&mut self, min_recv: &HashMap<u64, u64>, stats: &mut WriteStats) {
        let toks = self.with_phases();
        let mut prev = 0u64;
        let mut after_holder = false;
        for (rec, tok) in toks {
            let mut t = rec.max(prev);
            if after_holder {
                t = t.max(prev + 2);
            }
            after_holder = false;
            match tok {
                Tok::Begin(i) => self.slices[i].start = t,
                Tok::End(i) => {
                    t = t.max(self.slices[i].start + 1);
                    self.slices[i].end = t;
                }
                Tok::Hold(h) => {
                    let hold = &mut self.holders[h];
                    t = t.max(prev + 1);
                    if !hold.send {
                        if let Some(&lo) = min_recv.get(&hold.msg_id) {
                            t = t.max(lo);
                        }
                    }
                    hold.t = t;
                    after_holder = true;
                }
                Tok::Instant(k) => self.instants[k].t = t,
            }
            stats.max_shift_ns = stats.max_shift_ns.max(t - rec);
            prev = t;
        }
        nest(&mut self.slices, stats);
    }

    /// The tokens with each phase's begin and end merged in by recorded time: a
    /// phase begins after the events before its start and ends before the events
    /// after its end.
    fn with_phases(&mut self) -> Vec<(u64, Tok)> {
        let toks = std::mem::take(&mut self.toks);
        let mut phase_toks: Vec<(u64, u8, Reverse<u64>, usize, Tok)> = Vec::new();
        for (i, s) in self.slices.iter().enumerate().filter(|(_, s)| s.flexible) {
            // An empty phase's end must come after its begin.
            let end_class = if s.end > s.start { 0 } else { 2 };
            phase_toks.push((s.start, 1, Reverse(s.end), i, Tok::Begin(i)));
            phase_toks.push((
                s.end,
                end_class,
                Reverse(s.start),
                usize::MAX - i,
                Tok::End(i),
            ));
        }
        if phase_toks.is_empty() {
            return toks;
        }
        phase_toks.sort_by_key(|&(t, class, r, i, _)| (t, class, r, i));
        let mut out = Vec::with_capacity(toks.len() + phase_toks.len());
        let mut next = phase_toks.into_iter().peekable();
        for (rec, tok) in toks {
            while let Some(&(t, class, _, _, ptok)) = next.peek() {
                // Ends go before events at their time, begins before later events.
                if t < rec || (class == 0 && t == rec) {
                    out.push((t, ptok));
                    next.next();
                } else {
                    break;
                }
            }
            out.push((rec, tok));
        }
        out.extend(next.map(|(t, _, _, _, tok)| (t, tok)));
        out
    }
}

/// Pairing state of one PE.
struct Pairing<'a> {
    t: TrackEvents,
    open: Vec<(OpenKind, usize)>,
    last: u64,
    /// Arguments still to come of the last phase (0 once another record came).
    phase_args_left: u32,
    pe: u32,
    plan: &'a FlowPlan,
    stats: &'a mut WriteStats,
}

impl Pairing<'_> {
    /// Takes one record's event.
    fn event(&mut self, e: Event) {
        if !matches!(e, Event::PhaseArg { .. }) {
            self.phase_args_left = 0;
        }
        match e {
            Event::EntryBegin {
                ts,
                name,
                src_pe,
                bytes,
                msg_id,
            } => {
                // The plan keys records by their recorded time, before clamping.
                let flow_in = msg_id.filter(|m| self.plan.recvs.get(m) == Some(&(self.pe, ts)));
                let kind = SliceKind::Entry {
                    name,
                    src_pe,
                    bytes,
                    msg_id,
                };
                let ts = self.clamp(ts);
                self.begin(ts, OpenKind::Entry, kind);
                if let Some(m) = flow_in {
                    self.hold(ts, m, false);
                }
            }
            Event::SpanBegin { ts, name } => {
                let ts = self.clamp(ts);
                self.begin(ts, OpenKind::Span, SliceKind::Span { name });
            }
            Event::IdleBegin { ts } => {
                let ts = self.clamp(ts);
                self.begin(ts, OpenKind::Idle, SliceKind::Idle);
            }
            Event::EntryEnd { ts } => self.end(OpenKind::Entry, ts),
            Event::SpanEnd { ts } => self.end(OpenKind::Span, ts),
            Event::IdleEnd { ts } => self.end(OpenKind::Idle, ts),
            Event::Send { ts, msg_id, .. } => self.send(ts, msg_id),
            Event::User { ts, name } => {
                let ts = self.clamp(ts);
                self.t.toks.push((ts, Tok::Instant(self.t.instants.len())));
                self.t.instants.push(Instant { t: ts, name });
            }
            Event::Phase {
                ts,
                dur,
                name,
                nargs,
            } => self.phase(ts, dur, name, nargs),
            Event::PhaseArg { key, value } => self.phase_arg(key, value),
        }
    }

    /// An end record of `kind` at recorded time `ts`.
    fn end(&mut self, kind: OpenKind, ts: u64) {
        let ts = self.clamp(ts);
        self.close(kind, ts);
    }

    /// A send: a holder when its arrow is drawn, inside a `send` slice made for it
    /// when no entry or span is open.
    fn send(&mut self, ts: u64, msg_id: u64) {
        let drawn = self.plan.sends.get(&msg_id) == Some(&(self.pe, ts));
        let ts = self.clamp(ts);
        if !drawn {
            return;
        }
        let outside = self.open.last().is_none_or(|&(k, _)| k == OpenKind::Idle);
        if outside {
            self.begin(ts, OpenKind::Send, SliceKind::Send);
            self.stats.send_slices += 1;
        }
        self.hold(ts, msg_id, true);
        if outside {
            self.close(OpenKind::Send, ts);
        }
    }

    /// A phase, reported after the fact, so its start is not clamped; its `nargs`
    /// arguments come in the next records.
    fn phase(&mut self, ts: u64, dur: u64, name: NameId, nargs: u32) {
        let n = self.t.args.len();
        self.t.slices.push(Slice {
            start: ts,
            end: ts.saturating_add(dur),
            flexible: true,
            dropped: false,
            kind: SliceKind::Phase { name, args: n..n },
        });
        self.phase_args_left = nargs;
    }

    /// An argument of the last phase (ignored past the number it announced).
    fn phase_arg(&mut self, key: u32, value: u64) {
        if self.phase_args_left == 0 {
            return;
        }
        self.phase_args_left -= 1;
        self.t.args.push((key, value));
        let end = self.t.args.len();
        if let Some(Slice {
            kind: SliceKind::Phase { args, .. },
            ..
        }) = self.t.slices.last_mut()
        {
            args.end = end;
        }
    }

    /// Clamps so a clock that steps back on one PE cannot break ordering.
    fn clamp(&mut self, ts: u64) -> u64 {
        self.last = self.last.max(ts);
        self.last
    }

    fn begin(&mut self, ts: u64, kind: OpenKind, slice: SliceKind) {
        let i = self.t.slices.len();
        self.open.push((kind, i));
        self.t.toks.push((ts, Tok::Begin(i)));
        self.t.slices.push(Slice {
            start: ts,
            end: ts,
            flexible: false,
            dropped: false,
            kind: slice,
        });
    }

    fn hold(&mut self, ts: u64, msg_id: u64, send: bool) {
        self.t.toks.push((ts, Tok::Hold(self.t.holders.len())));
        self.t.holders.push(Holder {
            t: ts,
            msg_id,
            send,
        });
    }

    /// Closes the innermost open slice of `kind` at `ts`, and anything opened inside it.
    fn close(&mut self, kind: OpenKind, ts: u64) {
        let Some(pos) = self.open.iter().rposition(|&(k, _)| k == kind) else {
            self.stats.stray_ends += 1;
            return;
        };
        self.stats.auto_closed += (self.open.len() - pos - 1) as u64;
        for (_, i) in self.open.drain(pos..).rev() {
            self.t.slices[i].end = ts;
            self.t.toks.push((ts, Tok::End(i)));
        }
    }
}

/// Makes the slices nest: when two partially overlap, the flexible one (a phase) is
/// shortened; a phase shortened to nothing is dropped. Begin/end slices already nest
/// because they were paired on one stack.
fn nest(slices: &mut [Slice], stats: &mut WriteStats) {
    if !slices.iter().any(|s| s.flexible) {
        return;
    }
    let mut order: Vec<usize> = (0..slices.len()).collect();
    order.sort_by_key(|&i| {
        let s = &slices[i];
        (s.start, Reverse(s.end), s.flexible, i)
    });
    let mut stack: Vec<usize> = Vec::new();
    for q in order {
        while let Some(&top) = stack.last() {
            if slices[top].end <= slices[q].start {
                stack.pop();
                continue;
            }
            if slices[q].end <= slices[top].end {
                break;
            }
            // Partial overlap: top started first and ends inside q.
            stats.clipped += 1;
            if slices[top].flexible && !slices[q].flexible {
                // Shorten the enclosing phase to stop where q starts; its own children
                // all ended by then, since top is the innermost open slice.
                slices[top].end = slices[q].start;
                stack.pop();
            } else {
                slices[q].end = slices[top].end;
                break;
            }
        }
        stack.push(q);
    }
    for s in slices.iter_mut().filter(|s| s.flexible && s.end <= s.start) {
        s.dropped = true;
        stats.dropped_phases += 1;
    }
}
