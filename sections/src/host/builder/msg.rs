//! The messages builders exchange.

use super::*;

/// Messages of the builder group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum BuilderMsg {
    /// From the application to the builder on its own PE: start a creation.
    Create(Request),
    /// From the application to the builder on its own PE: this PE's part in a split
    /// by colour and key; its section goes to `on_member` ([`crate::callback`]).
    Split {
        /// This PE's colour and key, and how to split.
        split: Split,
        /// Where this PE's section goes.
        on_member: Callback,
    },
    /// (key, PE) of every member of a subtree of a split's new section, sorted, up
    /// the tree the algorithm made.
    RankUp {
        /// The new section.
        id: SectionId,
        /// The child that sends it.
        from: Pe,
        /// The subtree's members.
        keys: Vec<Keyed>,
    },
    /// Each member of a subtree's final rank and the PE of its tree parent, down the
    /// tree the algorithm made.
    RankDown {
        /// The new section.
        id: SectionId,
        /// (PE, rank, parent PE) of each member of the receiver's subtree.
        ranks: Vec<(Pe, u32, Option<Pe>)>,
    },
    /// A member tells its parent in the ranked tree that it is its child.
    RankChild {
        /// The new section.
        id: SectionId,
        /// The child's rank.
        rank: u32,
        /// The child's PE.
        pe: Pe,
    },
    /// The start of creation `token`, from the creator (world) or from a tree
    /// neighbour in the parent section (`from`).
    Start {
        /// The creation.
        token: u64,
        /// The parent-section neighbour it came from (None from a broadcast).
        from: Option<Pe>,
        /// What to create.
        req: Request,
        /// PEs known failed when a creation from the world began: it runs over the
        /// others (empty for a creation from a section).
        dead: Vec<Pe>,
    },
    /// A message of the creation protocol.
    Proto {
        /// The creation.
        token: u64,
        /// The sending PE.
        from: Pe,
        /// Which section of a split (0 otherwise).
        part: u32,
        /// The protocol's message.
        wire: Wire<ProtoMsg>,
    },
    /// Messages of several sections of one split for one PE, sent as one.
    Bundle {
        /// The creation.
        token: u64,
        /// The sending PE.
        from: Pe,
        /// (section of the split, message), in the order they were produced.
        parts: Vec<(u32, Wire<ProtoMsg>)>,
    },
    /// A parent-tree subtree has finished; its figures.
    Done {
        /// The creation.
        token: u64,
        /// The subtree's figures.
        tally: Tally,
    },
    /// From the application to the builder on a member of `req.a`: merge two sections.
    Merge(MergeRequest),
    /// A merge request on its way up section `a` to its root, with its cost so far.
    MergeAsk {
        /// The request.
        req: MergeRequest,
        /// Messages so far.
        messages: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// A's root offers the merge; it travels up section `b` to its root.
    Offer {
        /// The merge.
        token: u64,
        /// The request.
        req: MergeRequest,
        /// A's root.
        a_root: Pe,
        /// Members of A.
        a_size: u32,
        /// Messages so far.
        messages: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// B's root accepts: the merged size, and where B's root is.
    Accept {
        /// The merge.
        token: u64,
        /// Members of the merged section.
        size: u32,
        /// B's root.
        b_root: Pe,
    },
    /// The start of a merge, down one of the old trees.
    Go {
        /// The merge.
        token: u64,
        /// The request.
        req: MergeRequest,
        /// The old section this tree belongs to.
        old: SectionId,
        /// Merged rank of its rank 0.
        offset: u32,
        /// Members of the merged section.
        size: u32,
    },
    /// A neighbour-discovery announcement routed by rank over the parent's tree (a
    /// creation from a section, a merge, a rebuild).
    Routed {
        /// The merge.
        token: u64,
        /// Which section of a split (0 otherwise).
        part: u32,
        /// Merged rank of the intermediary.
        dest: u32,
        /// The announcement.
        msg: ToIntermediary,
    },
    /// The runtime reports that a PE failed (sim layer).
    Failed(Pe),
    /// A neighbour of a dead rank arrives at the rendezvous of the repair.
    Hello {
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// The neighbour's rank.
        rank: u32,
        /// The neighbour's PE.
        pe: Pe,
        /// How many neighbours will come.
        expect: u32,
    },
    /// The rendezvous introduces the dead rank's neighbours to each other.
    Links {
        /// The rebuild (its new section's name).
        token: u64,
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// (rank, PE) of every neighbour.
        parties: Vec<(u32, Pe)>,
    },
    /// Which rank died, spread over the patched tree.
    Notice {
        /// The rebuild.
        token: u64,
        /// The section with the hole.
        sid: SectionId,
        /// The dead rank.
        dead: u32,
        /// The PE it came from.
        from: Pe,
    },
    /// Every PE has finished: report state peaks and let go of the creation.
    Release {
        /// The creation.
        token: u64,
    },
    /// From the application to the builder on its own PE: free this member's view of
    /// section `id`, then its collectives host's; `on_freed` gets the id.
    Free {
        /// The section.
        id: SectionId,
        /// The collectives group, which frees the section's collectives next.
        collectives: GroupProxy<CollectivesHost>,
        /// Where the freed id goes once both are done.
        on_freed: Callback,
    },
    /// From the application to the builder on its own PE: send the sizes of this
    /// PE's builder and collectives host maps to `on_stats`.
    Stats {
        /// The collectives group, which adds its sizes.
        collectives: GroupProxy<CollectivesHost>,
        /// Where the [`crate::free::SectionsStats`] goes.
        on_stats: Callback,
    },
    /// A parent-tree subtree's largest per-PE state.
    Peak {
        /// The creation.
        token: u64,
        /// Bytes.
        bytes: u64,
    },
}
