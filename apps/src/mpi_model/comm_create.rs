//! What each PE does to create a communicator of a run of consecutive PEs (the
//! group) out of a parent communicator, by three methods, as a list of steps that
//! `script_run` runs one after another, each step blocking as the MPI call it models
//! does.
//!
//! - [`Method::Dinan`]: the group-collective algorithm of Dinan et al. (Algorithm 1
//!   of the noncollective communicator creation paper): ceil(log2 g) rounds in which
//!   adjacent blocks of 2^r members make an intercommunicator and merge it, each step
//!   with the messages MPICH 3.x's `MPIR_Intercomm_create_impl` and
//!   `MPIR_Intercomm_merge_impl` send (context-id allreduces over the local group
//!   and the merged one, leader sendrecvs, broadcasts in the local group).
//! - [`Method::CommCreate`]: `MPI_Comm_create` over the whole parent, as
//!   `MPIR_Comm_create_intra` does it: the context-id allreduce over every PE, then
//!   the members' local mapping of the group.
//! - [`Method::CreateGroup`]: MPI-3's `MPI_Comm_create_group` as MPICH implements it
//!   natively: the context-id allreduce over the members only, then the mapping.

use super::NS_PER_PAIR;
use serde::{Deserialize, Serialize};

/// A way to create the communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Method {
    /// Dinan et al.'s recursive intercommunicator create and merge (members only).
    Dinan,
    /// `MPI_Comm_create`: collective over the whole parent.
    CommCreate,
    /// MPICH's native `MPI_Comm_create_group`: an allreduce over the members.
    CreateGroup,
}

impl Method {
    /// Every method, in the order the bench runs them.
    pub const ALL: [Method; 3] = [Method::Dinan, Method::CommCreate, Method::CreateGroup];

    /// The method's name in output.
    pub fn name(self) -> &'static str {
        match self {
            Method::Dinan => "dinan",
            Method::CommCreate => "comm_create",
            Method::CreateGroup => "create_group",
        }
    }
}

/// A run of consecutive world ranks `first..first + size`: a communicator's group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// First world rank.
    pub first: u32,
    /// Members.
    pub size: u32,
}

impl Block {
    /// Whether world rank `pe` is in the block.
    pub fn holds(&self, pe: u32) -> bool {
        (self.first..self.first + self.size).contains(&pe)
    }
}

/// One blocking step of a PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    /// Bitwise-and allreduce of the context-id mask ([`CONTEXT_WORDS`](super::CONTEXT_WORDS)) over `block`.
    Allreduce {
        /// The group.
        block: Block,
        /// Names the step across the group (round and place in it).
        tag: u32,
    },
    /// Broadcast of `words` words from the block's first member.
    Bcast {
        /// The group.
        block: Block,
        /// Words carried (8 bytes each).
        words: u32,
        /// Names the step across the group.
        tag: u32,
    },
    /// A leader's `MPIC_Sendrecv` of `words` words with the other leader `peer`.
    Exchange {
        /// The other group's leader (a world rank).
        peer: u32,
        /// Words each way.
        words: u32,
        /// Names the exchange on both sides.
        tag: u32,
    },
    /// Local work of `ns` nanoseconds (charged on the simulator).
    Local {
        /// Nanoseconds.
        ns: u64,
    },
}

/// Tag of the `i`-th step of round `round` (fewer than 16 steps per round).
fn tag(round: u32, i: u32) -> u32 {
    round * 16 + i
}

/// The steps of world rank `pe` when the communicator of `group` is made out of
/// `parent` (which holds it) by `method`; empty for a PE with no part in it.
pub fn steps(method: Method, pe: u32, parent: Block, group: Block) -> Vec<Step> {
    let member = group.holds(pe);
    let mapping = Step::Local {
        ns: (NS_PER_PAIR * f64::from(group.size)) as u64,
    };
    match method {
        Method::CommCreate if parent.holds(pe) => {
            let mut s = vec![Step::Allreduce {
                block: parent,
                tag: 0,
            }];
            if member {
                s.push(mapping);
            }
            s
        }
        Method::CreateGroup if member => vec![
            Step::Allreduce {
                block: group,
                tag: 0,
            },
            mapping,
        ],
        Method::Dinan if member => dinan(pe, group, mapping),
        _ => Vec::new(),
    }
}

/// Algorithm 1 for world rank `pe` of `group` (group ranks in world order).
fn dinan(pe: u32, group: Block, translate: Step) -> Vec<Step> {
    // MPI_Group_translate_ranks into the world: one pass over the group.
    let mut s = vec![translate];
    let (rank, g) = (pe - group.first, group.size);
    let mut merge = 1u32;
    let mut round = 0;
    while merge < g {
        let gid = rank / merge;
        let block_of = |id: u32| Block {
            first: group.first + id * merge,
            size: merge.min(g - id * merge),
        };
        let pair = if gid.is_multiple_of(2) {
            ((gid + 1) * merge < g).then(|| (block_of(gid), block_of(gid + 1)))
        } else {
            Some((block_of(gid), block_of(gid - 1)))
        };
        if let Some((local, remote)) = pair {
            intercomm_create_and_merge(&mut s, pe, local, remote, round);
        }
        merge = merge.saturating_mul(2);
        round += 1;
    }
    s
}

/// `MPI_Intercomm_create` of `local` with `remote`, then `MPI_Intercomm_merge`, as
/// member `pe` of `local` sees them in MPICH 3.x.
fn intercomm_create_and_merge(s: &mut Vec<Step>, pe: u32, local: Block, remote: Block, r: u32) {
    let leader = pe == local.first;
    let peer = remote.first;
    let mut i = 0;
    let mut next = || {
        i += 1;
        tag(r, i - 1)
    };
    let ex = |s: &mut Vec<Step>, words: u32, tag: u32| {
        if leader {
            s.push(Step::Exchange { peer, words, tag });
        }
    };
    let bcast = |words: u32, tag: u32| Step::Bcast {
        block: local,
        words,
        tag,
    };
    // Intercomm_create: the leaders swap sizes and process ids
    // (MPID_Intercomm_exchange_map), the local groups learn them by broadcast.
    ex(s, 1, next());
    ex(s, local.size, next());
    s.push(bcast(1, next()));
    s.push(bcast(remote.size, next()));
    // A context id on the local group, swapped by the leaders and broadcast.
    s.push(Step::Allreduce {
        block: local,
        tag: next(),
    });
    ex(s, 1, next());
    s.push(bcast(1, next()));
    // Intercomm_merge: the leaders swap their `high` flags, broadcast locally;
    // MPIR_Get_intercomm_contextid (local allreduce, leader swap, broadcast); the
    // merged group's own context id.
    ex(s, 1, next());
    s.push(bcast(1, next()));
    s.push(Step::Allreduce {
        block: local,
        tag: next(),
    });
    ex(s, 1, next());
    s.push(bcast(1, next()));
    let merged = Block {
        first: local.first.min(remote.first),
        size: local.size + remote.size,
    };
    s.push(Step::Allreduce {
        block: merged,
        tag: next(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(size: u32) -> Block {
        Block { first: 0, size }
    }

    fn count(s: &[Step], f: impl Fn(&Step) -> bool) -> usize {
        s.iter().filter(|x| f(x)).count()
    }

    #[test]
    fn dinan_takes_ceil_log2_g_rounds_of_create_and_merge() {
        // 8 members: 3 rounds; a block's leader swaps 5 times per round, the others
        // never: rank 0 leads in every round, rank 3 only alone in round 0. Everyone
        // runs 5 broadcasts and 3 allreduces per round.
        let leader = steps(Method::Dinan, 0, first(64), first(8));
        let other = steps(Method::Dinan, 3, first(64), first(8));
        let is_ex = |x: &Step| matches!(x, Step::Exchange { .. });
        let is_ar = |x: &Step| matches!(x, Step::Allreduce { .. });
        let is_bc = |x: &Step| matches!(x, Step::Bcast { .. });
        assert_eq!(count(&leader, is_ex), 15);
        assert_eq!(count(&other, is_ex), 5);
        assert_eq!(count(&other, is_bc), 3 * 5);
        assert_eq!(count(&other, is_ar), 3 * 3);
        // Rank 3 ends in the whole group; its last merge pairs 0..4 with 4..8.
        assert_eq!(
            other.last(),
            Some(&Step::Allreduce {
                block: Block { first: 0, size: 8 },
                tag: tag(2, 12)
            })
        );
        // Rank 4 leads its block in the last round and swaps with rank 0.
        let four = steps(Method::Dinan, 4, first(64), first(8));
        assert!(four.contains(&Step::Exchange {
            peer: 0,
            words: 4,
            tag: tag(2, 1)
        }));
    }

    #[test]
    fn a_tail_block_waits_out_rounds_without_a_partner() {
        // g = 5: rank 4 has no right neighbour in rounds 0 and 1, and joins in round 2.
        let four = steps(Method::Dinan, 4, first(8), first(5));
        let rounds: Vec<u32> = four
            .iter()
            .filter_map(|x| match x {
                Step::Allreduce { tag, .. } => Some(tag / 16),
                _ => None,
            })
            .collect();
        assert_eq!(rounds, vec![2, 2, 2]);
        assert!(steps(Method::Dinan, 5, first(8), first(5)).is_empty());
        assert_eq!(
            steps(Method::Dinan, 0, first(8), first(1)),
            vec![Step::Local { ns: 1 }]
        );
    }

    #[test]
    fn comm_create_involves_every_pe_and_create_group_only_members() {
        assert_eq!(steps(Method::CommCreate, 7, first(8), first(2)).len(), 1);
        assert_eq!(steps(Method::CommCreate, 1, first(8), first(2)).len(), 2);
        assert!(steps(Method::CreateGroup, 7, first(8), first(2)).is_empty());
        assert_eq!(
            steps(Method::CreateGroup, 1, first(8), first(2))[0],
            Step::Allreduce {
                block: Block { first: 0, size: 2 },
                tag: 0
            }
        );
    }

    #[test]
    fn a_group_inside_the_machine_runs_the_same_script_shifted() {
        // The group 100..108 of a 64..164 parent: rank 104 leads its block in the last
        // round, as rank 4 of 0..8 does, with every rank and block moved by 100.
        let at = |pe| {
            steps(
                Method::Dinan,
                pe,
                Block {
                    first: 64,
                    size: 100,
                },
                Block {
                    first: 100,
                    size: 8,
                },
            )
        };
        let shifted: Vec<Step> = steps(Method::Dinan, 4, first(8), first(8))
            .into_iter()
            .map(|x| match x {
                Step::Allreduce { block, tag } => Step::Allreduce {
                    block: Block {
                        first: block.first + 100,
                        ..block
                    },
                    tag,
                },
                Step::Bcast { block, words, tag } => Step::Bcast {
                    block: Block {
                        first: block.first + 100,
                        ..block
                    },
                    words,
                    tag,
                },
                Step::Exchange { peer, words, tag } => Step::Exchange {
                    peer: peer + 100,
                    words,
                    tag,
                },
                local => local,
            })
            .collect();
        assert_eq!(at(104), shifted);
        assert!(at(99).is_empty() && at(108).is_empty());
        // MPI_Comm_create involves the parent, not the world.
        let parent = Block {
            first: 64,
            size: 100,
        };
        let group = Block {
            first: 100,
            size: 8,
        };
        assert_eq!(steps(Method::CommCreate, 64, parent, group).len(), 1);
        assert!(steps(Method::CommCreate, 10, parent, group).is_empty());
    }
}
