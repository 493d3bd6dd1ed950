//! PE 0's decision in a balancing step and the plan it sends down the PE tree; the
//! moves, the arrivals counted back up the tree, and the resume that ends the step
//! on every PE.

use super::{Gather, Landing, Underway};
use crate::api::balance::{check_decision, CommEdge, LoadStats, Move, ObjLoad};
use crate::base::config::LbPeriod;
use crate::base::error::RuntimeError;
use crate::base::hash::HashMap;
use crate::base::ids::{CollectionId, IndexKey, Pe};
use crate::base::tree;
use crate::engine::report::BalanceStep;
use crate::engine::{Members, MoveRequest, PeRuntime};
use crate::msg::array::ElemAddr;
use crate::msg::envelope::SendOpts;
use crate::msg::kind::balance::{Arrived, Plan, PlanPart, Resume};
use crate::trace::ns;
use std::collections::BTreeMap;
use std::time::Instant;

/// The statistics a strategy decides from, from a step's records (sorted by key, so
/// positions do not depend on the order records arrived in).
fn stats_of(num_pes: usize, mut g: Gather) -> LoadStats {
    g.objs.sort_by(|a, b| a.key.cmp(&b.key));
    let mut background = vec![0.0; num_pes];
    for p in &g.pes {
        if let Some(b) = background.get_mut(p.pe as usize) {
            *b += p.background;
        }
    }
    let position: HashMap<&IndexKey, u32> = g
        .objs
        .iter()
        .enumerate()
        .map(|(i, o)| (&o.key, i as u32))
        .collect();
    let mut comm = Vec::new();
    for (from, o) in g.objs.iter().enumerate() {
        for (to, messages, bytes) in &o.comm {
            if let Some(&to) = position.get(to) {
                comm.push(CommEdge {
                    from: from as u32,
                    to,
                    messages: *messages,
                    bytes: *bytes,
                });
            }
        }
    }
    let objs = g
        .objs
        .into_iter()
        .map(|o| ObjLoad {
            key: o.key,
            pe: o.pe,
            load: o.load,
        })
        .collect();
    LoadStats {
        num_pes,
        objs,
        background,
        comm,
    }
}

/// Each PE's loads after `moves`.
fn loads_after(stats: &LoadStats, moves: &[Move]) -> Vec<f64> {
    let mut pes: Vec<Pe> = stats.objs.iter().map(|o| o.pe).collect();
    for m in moves {
        pes[m.obj as usize] = m.to;
    }
    let mut loads = stats.background.clone();
    for (o, pe) in stats.objs.iter().zip(pes) {
        loads[pe as usize] += o.load;
    }
    loads
}

/// The `chorus::lb_step` phase's arguments for the PE loads before the step: the
/// least, mean and most loaded PE's load in ns.
const LOAD_BEFORE_KEYS: [&str; 3] = [
    "load_min_before_ns",
    "load_avg_before_ns",
    "load_max_before_ns",
];
/// The same as the moves leave the loads.
const LOAD_AFTER_KEYS: [&str; 3] = [
    "load_min_after_ns",
    "load_avg_after_ns",
    "load_max_after_ns",
];

/// The least, mean and most of `loads` (seconds) in ns, under `keys`; a trace's
/// arguments are integers, and ns keep every load a clock can measure.
fn load_args(loads: &[f64], keys: [&'static str; 3]) -> [(&'static str, u64); 3] {
    let min = loads.iter().copied().fold(f64::INFINITY, f64::min);
    let max = loads.iter().copied().fold(0.0, f64::max);
    let avg = loads.iter().sum::<f64>() / loads.len().max(1) as f64;
    let min = if min.is_finite() { min } else { 0.0 };
    [(keys[0], ns(min)), (keys[1], ns(avg)), (keys[2], ns(max))]
}

impl PeRuntime {
    /// PE 0 has every record of step `round`: balance now if the period says so,
    /// end the step without moves if it is too soon (`--lb-period-secs`), or keep it
    /// until a program asks (`--lb-manual`).
    pub(super) fn decide(&mut self, coll: CollectionId, round: u32, g: Gather) {
        let now = self.core.now();
        let steps = self.core.syncs.steps.get_mut();
        match self.core.syncs.period {
            LbPeriod::Steps(_) => {}
            LbPeriod::Seconds(secs) => {
                if steps
                    .last_balanced
                    .get(&coll)
                    .is_some_and(|&t| now - t < secs)
                {
                    return self.scatter((coll, round), Vec::new(), false);
                }
                steps.last_balanced.insert(coll, now);
            }
            LbPeriod::Manual => {
                if !steps.asked_early.remove(&coll) {
                    steps.parked.insert(coll, (round, g));
                    return;
                }
            }
        }
        self.balance(coll, round, g);
    }

    /// On PE 0: a program asked for a balancing step of `coll` (`ctx.start_lb`): run
    /// the one waiting for it, or the next one to come.
    pub(super) fn start_asked(&mut self, coll: CollectionId) {
        let steps = self.core.syncs.steps.get_mut();
        match steps.parked.remove(&coll) {
            Some((round, g)) => self.balance(coll, round, g),
            None => {
                steps.asked_early.insert(coll);
            }
        }
    }

    /// Ask the strategy about step `round` and send the plan.
    fn balance(&mut self, coll: CollectionId, round: u32, g: Gather) {
        let Some(strategy) = self.core.syncs.strategy.clone() else {
            return;
        };
        let started = self.core.now();
        let stats = stats_of(self.core.npes, g);
        let clock = Instant::now();
        let decided = strategy.decide(&stats);
        let decide_s = clock.elapsed().as_secs_f64();
        let moves = match check_decision(&stats, decided) {
            Ok(moves) => moves,
            Err(error) => {
                self.core.fail(RuntimeError::BadLbDecision {
                    strategy: strategy.name().to_string(),
                    error,
                });
                Vec::new()
            }
        };
        let report = BalanceStep {
            round,
            strategy: strategy.name().to_string(),
            objects: stats.objs.len(),
            migrations: moves.len(),
            before: stats.max_over_avg(),
            after: crate::api::balance::max_over_avg(&loads_after(&stats, &moves)),
            decide_s,
            started,
            ended: started,
            loads_before: stats.pe_loads(),
            loads_after: loads_after(&stats, &moves),
        };
        let parts = Self::parts(&stats, &moves, &report.loads_after);
        self.core
            .syncs
            .steps
            .get_mut()
            .underway
            .insert((coll, round), Underway { report });
        self.scatter((coll, round), parts, true);
    }

    /// Each PE's part of the plan: what it sends, how many it receives and the load
    /// `after` leaves it with.
    fn parts(stats: &LoadStats, moves: &[Move], after: &[f64]) -> Vec<PlanPart> {
        let mut by_pe: BTreeMap<Pe, PlanPart> = BTreeMap::new();
        let new = |&pe: &Pe| PlanPart {
            pe,
            out: Vec::new(),
            incoming: 0,
            load_after: after.get(pe as usize).copied().unwrap_or(0.0),
        };
        for m in moves {
            let o = &stats.objs[m.obj as usize];
            let from = by_pe.entry(o.pe).or_insert_with_key(new);
            from.out.push((o.key.clone(), m.to));
            by_pe.entry(m.to).or_insert_with_key(new).incoming += 1;
        }
        by_pe.into_values().collect()
    }

    /// Pass the parts of the plan for each child's subtree on to that child (every
    /// child, so every PE answers for its subtree), and follow this PE's own part.
    /// Down the tree, not from PE 0 to each PE, so that no PE sends or receives more
    /// than its children's messages in a step.
    pub(super) fn scatter(
        &mut self,
        (coll, round): (CollectionId, u32),
        parts: Vec<PlanPart>,
        balanced: bool,
    ) {
        let me = self.core.me;
        let children: Vec<Pe> = self.core.tree_children().collect();
        let mut below: Vec<Vec<PlanPart>> = vec![Vec::new(); children.len()];
        let mut mine = None;
        for part in parts {
            if part.pe == me {
                mine = Some(part);
            } else if let Some(i) = self.child_towards(part.pe, &children) {
                below[i].push(part);
            }
        }
        self.note_plan((coll, round), mine.as_ref(), balanced);
        let (out, incoming) = mine.map_or((Vec::new(), 0), |m| (m.out, m.incoming));
        let a = self.landing(coll, round);
        a.want = Some(incoming);
        a.children = children.len();
        for (child, parts) in children.into_iter().zip(below) {
            let plan = Plan {
                coll,
                round,
                parts,
                balanced,
            };
            let env = self.core.envelope(plan, super::STEP_OPTS);
            self.core.post(child, env);
        }
        self.follow(coll, out);
        self.check_arrivals(coll, round);
    }

    /// The position in `children` of the child whose subtree holds `pe` (none for a
    /// PE outside this PE's subtree, which a plan from the parent never names).
    fn child_towards(&self, pe: Pe, children: &[Pe]) -> Option<usize> {
        let (me, npes, k) = (self.core.me, self.core.npes, self.core.arity);
        let at =
            tree::path_up(pe, 0, npes, k).find(|&at| tree::parent(at, 0, npes, k) == Some(me))?;
        children.iter().position(|&c| c == at)
    }

    /// This PE's count of the arrivals of step `round`.
    fn landing(&mut self, coll: CollectionId, round: u32) -> &mut Landing {
        self.core
            .syncs
            .steps
            .get_mut()
            .arrivals
            .entry((coll, round))
            .or_default()
    }

    /// The order key of element `key` of array `coll`, if it is on this PE.
    fn order_here(&self, coll: CollectionId, key: &IndexKey) -> Option<u64> {
        match self.colls.get(&coll).map(|c| &c.members) {
            Some(Members::Array { elements, .. }) => elements.get(key).map(|e| e.order),
            _ => None,
        }
    }

    /// How many times element `key` of `coll`, if here, has called `at_sync`.
    fn syncs_here(&self, coll: CollectionId, key: &IndexKey) -> Option<u32> {
        match self.colls.get(&coll).map(|c| &c.members) {
            Some(Members::Array { elements, .. }) => elements.get(key).map(|e| e.syncs),
            _ => None,
        }
    }

    /// Send away the elements this PE's part of the plan names.
    fn follow(&mut self, coll: CollectionId, out: Vec<(IndexKey, Pe)>) {
        for (key, to) in out {
            // An element the plan names is here: it cannot move by hand in a step.
            let Some(order) = self.order_here(coll, &key) else {
                continue;
            };
            self.core
                .syncs
                .steps
                .get_mut()
                .waiting
                .remove(&(coll, key.clone()));
            self.core.moves.push(MoveRequest {
                coll,
                addr: ElemAddr { key, order },
                to,
                balancing: true,
            });
        }
    }

    /// An element moving in step `round` arrived here: it waits for the resume.
    pub(crate) fn arrived_in_step(&mut self, coll: CollectionId, key: IndexKey, round: u32) {
        self.core.syncs.steps.get_mut().waiting.insert((coll, key));
        self.landing(coll, round).got += 1;
        self.check_arrivals(coll, round);
    }

    /// Once every element the plan sends here has arrived and every child has said
    /// the same of its subtree, say so to the parent; on PE 0, the step is over.
    fn check_arrivals(&mut self, coll: CollectionId, round: u32) {
        let arrivals = &mut self.core.syncs.steps.get_mut().arrivals;
        let done = arrivals
            .get(&(coll, round))
            .is_some_and(|a| a.want.is_some_and(|w| a.got >= w) && a.children == 0);
        if !done {
            return;
        }
        arrivals.remove(&(coll, round));
        match self.core.tree_parent() {
            Some(parent) => {
                let env = self
                    .core
                    .envelope(Arrived { coll, round }, super::STEP_OPTS);
                self.core.post(parent, env);
            }
            None => self.finish_step(coll, round),
        }
    }

    /// A child's subtree has all its elements of step `round`.
    pub(super) fn child_landed(&mut self, coll: CollectionId, round: u32) {
        let a = self.landing(coll, round);
        a.children = a.children.saturating_sub(1);
        self.check_arrivals(coll, round);
    }

    /// On PE 0: every element is in place; record the step and send the resume.
    fn finish_step(&mut self, coll: CollectionId, round: u32) {
        if let Some(u) = self
            .core
            .syncs
            .steps
            .get_mut()
            .underway
            .remove(&(coll, round))
        {
            let mut report = u.report;
            report.ended = self.core.now();
            let mut args = vec![
                ("round", u64::from(round)),
                ("array", super::loads::array_arg(coll)),
                ("migrations", report.migrations as u64),
                ("objects", report.objects as u64),
            ];
            args.extend(load_args(&report.loads_before, LOAD_BEFORE_KEYS));
            args.extend(load_args(&report.loads_after, LOAD_AFTER_KEYS));
            let (t0, t1) = (ns(report.started), ns(report.ended));
            if let Some(t) = self.core.trace_mut() {
                t.phase(t0, t1.saturating_sub(t0), chorus_traces::LB_STEP, &args);
            }
            self.core.report.get_mut().balance.push(report);
        }
        self.on_resume(coll, round);
    }

    /// Step `round` is over: pass the resume on and resume the elements here.
    pub(super) fn on_resume(&mut self, coll: CollectionId, round: u32) {
        self.core.past_round(coll, round);
        let p = self.core.passed_mut(coll);
        p.resumed = p.resumed.max(Some(round));
        self.core.release_held(coll);
        self.core.syncs.end_relay(coll);
        self.record_pe_load(coll, round);
        for c in self.core.tree_children().collect::<Vec<_>>() {
            let env = self
                .core
                .envelope(Resume { coll, round }, SendOpts::default());
            self.core.post(c, env);
        }
        let mut here: Vec<IndexKey> = self
            .core
            .syncs
            .steps
            .get_mut()
            .waiting
            .iter()
            .filter(|(c, _)| *c == coll)
            .map(|(_, k)| k.clone())
            .collect();
        // An element inserted during this step may already wait in the next one.
        here.retain(|k| self.syncs_here(coll, k).is_some_and(|s| s <= round + 1));
        // The same order on every run and every layer.
        here.sort();
        for key in here {
            if let Some(order) = self.order_here(coll, &key) {
                self.resume(coll, ElemAddr { key, order });
            }
        }
    }
}
