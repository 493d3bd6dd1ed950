//! Runs one PE's steps of a modelled MPI call (`comm_create`) one after another, each
//! blocking as the call it models does, inside whatever chare hosts it: collectives
//! over range sections of the world through the job's [`Collectives`], whose results
//! the host hands back ([`ScriptRun::collective_done`]), and leader exchanges as
//! point-to-point messages the host sends and routes back ([`ScriptRun::exchanged`]).
//! Every result and exchange carries the run's name words and the step's tag, so a
//! PE can have several runs under way at once.

use super::comm_create::{Block, Step};
use super::CONTEXT_WORDS;
use chorus_core::{Callback, Ctx, Reducer};
use chorus_sections::collectives::{Collectives, RangeMember, Topology};
use chorus_sections::range::RangeSection;
use std::time::Duration;

/// What a run needs from its host.
#[derive(Debug, Clone)]
pub struct Env {
    /// The job's collectives.
    pub collectives: Collectives,
    /// Branching factor of the range sections' trees.
    pub k: u32,
    /// PEs in the world.
    pub pes: u32,
    /// This PE.
    pub me: u32,
    /// Where collective results go (the host passes them to `collective_done`).
    pub callback: Callback,
    /// Charge local steps as virtual time (the simulator; elsewhere nothing computes,
    /// so nothing is charged).
    pub charge_local: bool,
}

/// One PE's run of a script.
#[derive(Debug)]
pub struct ScriptRun {
    name: Vec<u64>,
    steps: Vec<Step>,
    at: usize,
    /// This PE's half of the exchange at `at` is sent.
    sent: bool,
    /// The collective at `at` is started and its result not in: an exchange that
    /// arrives meanwhile must not start it again.
    waiting: bool,
    /// Tags of peers' exchanges that came before this PE reached them: only tags of
    /// exchanges still ahead in the script, each once (`exchanged` refuses others),
    /// so never more than the script's exchanges (5 per round).
    early: Vec<u32>,
}

/// The tag of a step, as results and exchanges carry it.
fn tag_of(step: &Step) -> Option<u32> {
    match *step {
        Step::Allreduce { tag, .. } | Step::Bcast { tag, .. } | Step::Exchange { tag, .. } => {
            Some(tag)
        }
        Step::Local { .. } => None,
    }
}

impl ScriptRun {
    /// A run of `steps` named by `name` (at most `CONTEXT_WORDS - 1` words).
    pub fn new(name: Vec<u64>, steps: Vec<Step>) -> Self {
        assert!(name.len() < CONTEXT_WORDS, "a run's name fits a context id");
        ScriptRun {
            name,
            steps,
            at: 0,
            sent: false,
            waiting: false,
            early: Vec::new(),
        }
    }

    /// The run's name words.
    pub fn name(&self) -> &[u64] {
        &self.name
    }

    /// The peer's half of exchange `tag` arrived.
    pub fn exchanged(&mut self, tag: u32) -> Result<(), String> {
        let ahead = self.steps[self.at..]
            .iter()
            .any(|s| matches!(s, Step::Exchange { tag: t, .. } if *t == tag));
        if !ahead || self.early.contains(&tag) {
            return Err(format!(
                "run {:?}: exchange {tag} arrived but this PE has no such exchange left",
                self.name
            ));
        }
        self.early.push(tag);
        Ok(())
    }

    /// A collective's result for this run arrived: `v` starts with the run's name and
    /// the step's tag.
    pub fn collective_done(&mut self, v: &[u64]) -> Result<(), String> {
        let n = self.name.len();
        let tag = self.steps.get(self.at).and_then(tag_of);
        let named = v.get(..n) == Some(&self.name[..]) && v.get(n).copied() == tag.map(u64::from);
        if !(self.waiting && named) {
            return Err(format!(
                "a collective result {:?} for no step of run {:?}",
                v.get(..=n),
                self.name
            ));
        }
        self.waiting = false;
        self.at += 1;
        Ok(())
    }

    /// Run steps until one has to wait; true once every step is done. `send` sends
    /// this PE's half of an exchange: (peer, tag, words).
    pub fn advance(
        &mut self,
        ctx: &mut Ctx,
        env: &Env,
        send: &mut dyn FnMut(&mut Ctx, u32, u32, u32),
    ) -> Result<bool, String> {
        if self.waiting {
            return Ok(false);
        }
        while let Some(&step) = self.steps.get(self.at) {
            match step {
                Step::Local { ns } => {
                    if env.charge_local {
                        ctx.work(Duration::from_nanos(ns));
                    }
                    self.at += 1;
                }
                Step::Exchange { peer, words, tag } => {
                    if !self.sent {
                        send(ctx, peer, tag, words);
                        self.sent = true;
                    }
                    let Some(i) = self.early.iter().position(|&t| t == tag) else {
                        return Ok(false);
                    };
                    self.early.swap_remove(i);
                    self.sent = false;
                    self.at += 1;
                }
                Step::Allreduce { block, tag } => {
                    let member = member(env, block)?;
                    let mut v = vec![u64::MAX; CONTEXT_WORDS];
                    if member.rank() == 0 {
                        self.head_into(&mut v, tag);
                    }
                    self.waiting = true;
                    env.collectives
                        .allreduce(ctx, member, v, Reducer::BitAnd, env.callback.clone())
                        .map_err(|e| format!("allreduce over {block:?}: {e}"))?;
                    return Ok(false);
                }
                Step::Bcast { block, words, tag } => {
                    let member = member(env, block)?;
                    // The head names the step; a shorter message is padded to carry it.
                    let value = (member.rank() == 0).then(|| {
                        let mut v = vec![0; (words as usize).max(self.name.len() + 1)];
                        self.head_into(&mut v, tag);
                        v
                    });
                    self.waiting = true;
                    env.collectives
                        .broadcast(ctx, member, 0, value, env.callback.clone())
                        .map_err(|e| format!("broadcast over {block:?}: {e}"))?;
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn head_into(&self, v: &mut [u64], tag: u32) {
        let n = self.name.len();
        v[..n].copy_from_slice(&self.name);
        v[n] = u64::from(tag);
    }
}

/// This PE's member of the range section of `block`.
fn member(env: &Env, block: Block) -> Result<RangeMember, String> {
    let not_in = |e: String| format!("PE {} is not a member of {block:?}: {e}", env.me);
    let section = RangeSection::world(env.pes, env.k)
        .and_then(|w| w.split(block.first, block.first + block.size - 1, 1))
        .map_err(|e| not_in(e.to_string()))?;
    RangeMember::new(section, env.me).map_err(|e| not_in(e.to_string()))
}
