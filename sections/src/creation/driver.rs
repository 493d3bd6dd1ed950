//! An in-memory driver for creation protocols: one state machine per id of a world
//! whose parent tree is the k-ary tree over ids 0..n, with joins and messages
//! delivered in an order drawn from a seed, and the same accounting as the builder
//! (a message between distinct ids counts once, with its bincode bytes).

use crate::creation::neighbour_discovery::Intermediaries;
use crate::creation::protocol::{Protocol, ProtocolError, Setup, Wire};
use crate::hash::mix64;
use crate::kary;
use crate::section::Placement;
use thiserror::Error;

/// Why a driven creation did not end.
#[derive(Debug, Error)]
pub enum DriveError {
    /// A state machine rejected a message.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// Nothing is left to deliver but some id has not finished.
    #[error("stalled: ids {0:?} never finished")]
    Stalled(Vec<u32>),
}

/// What a driven creation produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Every id's place (None for ids that are not members).
    pub placed: Vec<Option<Placement>>,
    /// Messages between distinct ids.
    pub messages: u64,
    /// Their bincode bytes.
    pub bytes: u64,
    /// Per id: the protocol's peak state plus its peak as an intermediary.
    pub peak_state: Vec<usize>,
}

/// Setups for a creation over the world of `members.len()` ids whose parent tree is
/// the k-ary tree over the ids.
pub fn world_setups(members: &[bool], k: u32, salt: u64, token: u64) -> Vec<Setup> {
    let n = members.len() as u32;
    (0..n)
        .map(|me| Setup {
            me,
            world: n,
            member: members[me as usize],
            k,
            tree_parent: kary::parent(me, k),
            tree_children: kary::children(me, n, k).collect(),
            generation: kary::generation(me, k),
            salt,
            token,
        })
        .collect()
}

/// Run one state machine per setup (setup `i` must be id `i`) to the end, choosing
/// the next join or delivery with a generator seeded by `seed`.
pub fn drive<P: Protocol>(
    setups: Vec<Setup>,
    mut make: impl FnMut(Setup) -> P,
    seed: u64,
) -> Result<Outcome, DriveError> {
    let n = setups.len();
    let mut protos: Vec<P> = setups.into_iter().map(&mut make).collect();
    let mut inter: Vec<Intermediaries> = vec![Intermediaries::default(); n];
    let mut unstarted: Vec<u32> = (0..n as u32).collect();
    let mut inbox: Vec<(u32, u32, Wire<P::Msg>)> = Vec::new();
    let (mut messages, mut bytes) = (0u64, 0u64);
    let mut state = seed;
    let mut post = |from: u32, out: Vec<(u32, Wire<P::Msg>)>, inbox: &mut Vec<_>| {
        for (to, wire) in out {
            if to != from {
                messages += 1;
                bytes += bincode::serialized_size(&wire).unwrap_or(0);
            }
            inbox.push((from, to, wire));
        }
    };
    loop {
        let total = unstarted.len() + inbox.len();
        if total == 0 {
            break;
        }
        state = mix64(state);
        let pick = (state % total as u64) as usize;
        let mut out = Vec::new();
        let at = if pick < unstarted.len() {
            let me = unstarted.swap_remove(pick);
            protos[me as usize].start(&mut out)?;
            me
        } else {
            let (from, to, wire) = inbox.swap_remove(pick - unstarted.len());
            let p = &mut protos[to as usize];
            match wire {
                Wire::Role(m) => p.handle(from, m, &mut out)?,
                Wire::FromIntermediary(m) => p.found(from, m, &mut out)?,
                Wire::ToIntermediary(m) => inter[to as usize].handle(m, &mut out),
            }
            to
        };
        post(at, out, &mut inbox);
    }
    let stalled: Vec<u32> = (0..n as u32)
        .filter(|&i| !protos[i as usize].finished() || !inter[i as usize].is_idle())
        .collect();
    if !stalled.is_empty() {
        return Err(DriveError::Stalled(stalled));
    }
    Ok(Outcome {
        placed: protos.iter().map(|p| p.placement().cloned()).collect(),
        messages,
        bytes,
        peak_state: protos
            .iter()
            .zip(&inter)
            .map(|(p, i)| p.peak_state_bytes() + i.peak_state_bytes())
            .collect(),
    })
}
