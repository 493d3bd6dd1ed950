//! The creations part of the builder: its messages, the runs in flight on this PE
//! and what waits for them, and the handlers of the messages of a started run.

use super::*;

/// Messages of creations: their start, the state machines' traffic and the two sums
/// over the parent tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CreationMsg {
    /// From the application to the builder on its own PE: start a creation.
    Create(Request),
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
    /// A neighbour-discovery announcement routed by rank over the parent's tree (a
    /// creation from a section, a merge, a rebuild).
    Routed(Routed),
    /// A parent-tree subtree has finished; its figures.
    Done {
        /// The creation.
        token: u64,
        /// The subtree's figures.
        tally: Tally,
    },
    /// Every PE has finished: report state peaks and let go of the creation.
    Release {
        /// The creation.
        token: u64,
    },
    /// A parent-tree subtree's largest per-PE state.
    Peak {
        /// The creation.
        token: u64,
        /// Bytes.
        bytes: u64,
    },
}

/// An announcement routed by rank, on one hop.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Routed {
    /// The creation, merge or rebuild.
    pub token: u64,
    /// Which section of a split (0 otherwise).
    pub part: u32,
    /// Rank of the intermediary in the section routed over.
    pub dest: u32,
    /// The announcement.
    pub msg: ToIntermediary,
}

impl CreationMsg {
    /// The creation a message of a started run belongs to.
    pub(super) fn run_token(&self) -> Option<u64> {
        match self {
            CreationMsg::Proto { token, .. }
            | CreationMsg::Bundle { token, .. }
            | CreationMsg::Done { token, .. }
            | CreationMsg::Release { token }
            | CreationMsg::Peak { token, .. }
            | CreationMsg::Routed(Routed { token, .. }) => Some(*token),
            CreationMsg::Create(_) | CreationMsg::Start { .. } => None,
        }
    }
}

/// A protocol message on its way inside one PE.
#[derive(Debug)]
pub(super) struct Delivery {
    pub(super) from: Pe,
    pub(super) to: Pe,
    /// Which section of a split (0 otherwise).
    pub(super) part: u32,
    pub(super) wire: Wire<ProtoMsg>,
    /// Bytes to count on arrival (an intermediary's answer), or 0.
    pub(super) bytes: u64,
}

impl Delivery {
    /// An announcement this PE hands its own intermediary.
    pub(super) fn announce_here(me: Pe, part: u32, msg: ToIntermediary) -> Self {
        Delivery {
            from: me,
            to: me,
            part,
            wire: Wire::ToIntermediary(msg),
            bytes: 0,
        }
    }
}

/// Something that reached a PE before the creation started there.
#[derive(Debug)]
pub(super) enum Early {
    Wire(Delivery),
    Done(Tally),
    Routed(Routed),
}

/// The state machine of one section of a creation.
pub(super) enum Engine {
    /// A creation algorithm.
    Algo(Box<Proto>),
    /// A member's part in a merge.
    Merge(Box<MergeState>),
}

impl Engine {
    pub(super) fn finished(&self) -> bool {
        match self {
            Engine::Algo(p) => p.finished(),
            Engine::Merge(m) => m.placement().is_some(),
        }
    }

    pub(super) fn placement(&self) -> Option<&Placement> {
        match self {
            Engine::Algo(p) => p.placement(),
            Engine::Merge(m) => m.placement(),
        }
    }

    pub(super) fn peak_state_bytes(&self) -> usize {
        match self {
            Engine::Algo(p) => p.peak_state_bytes(),
            Engine::Merge(m) => m.peak_state_bytes(),
        }
    }
}

/// One section's state machine of a creation on this PE.
pub(super) struct Part {
    pub(super) proto: Engine,
    pub(super) inter: Intermediaries,
    pub(super) finished: bool,
}

/// One PE's part in one creation.
pub(super) struct Run {
    /// Members keep the sections made.
    pub(super) keep: bool,
    /// How announcements reach intermediaries named by rank (None: ids are PEs).
    pub(super) way: Option<Way>,
    pub(super) meta: Meta,
    /// This PE's key in a split by colour and key: its sections are ranked by it.
    pub(super) key: Option<i64>,
    /// A split's reduction over each section made, instead of telling `on_member`.
    pub(super) then: Option<Box<Then>>,
    pub(super) algorithm: Option<Algorithm>,
    pub(super) parts: Vec<Part>,
    pub(super) up: Option<Pe>,
    pub(super) down: Vec<Pe>,
    pub(super) tally: Tally,
    pub(super) children_done: usize,
    pub(super) finished: bool,
    pub(super) sent_up: bool,
    pub(super) released: bool,
    pub(super) peak: u64,
    pub(super) children_peaked: usize,
}

impl Run {
    /// A run that has only just started here.
    pub(super) fn new(meta: Meta, way: Option<Way>, parts: Vec<Part>, tally: Tally) -> Self {
        Run {
            keep: true,
            way,
            meta,
            key: None,
            then: None,
            algorithm: None,
            parts,
            up: None,
            down: Vec::new(),
            tally,
            children_done: 0,
            finished: false,
            sent_up: false,
            released: false,
            peak: 0,
            children_peaked: 0,
        }
    }
}

/// A start of a creation from a parent section not stored here yet.
#[derive(Debug)]
pub(super) struct HeldStart {
    pub(super) token: u64,
    /// The parent-tree neighbour that sent it.
    pub(super) from: Pe,
    pub(super) req: Request,
}

/// The creations this PE takes part in, and what came for them early.
// Values boxed: a map holds at least 4 slots, and on sim 10^5 builders each hold
// one run, call or ranking at once, so slots as large as the value cost 1-2 KB per PE.
#[derive(Default)]
pub(super) struct Creations {
    /// Creations this PE takes part in: removed when the peak wave has passed here
    /// (`try_peak_up`), so only creations in flight.
    pub(super) runs: HashMap<u64, Box<Run>>,
    /// Messages of creations not started here yet: removed when the run starts
    /// (`replay`). A message reaches a PE of the creation's parent only, and every such
    /// PE joins the run (its start floods the parent), so only creations in flight.
    pub(super) early: HashMap<u64, Vec<Early>>,
    /// Intermediaries serving creations not started here: removed when idle or when
    /// the run starts (`join`), so only creations in flight.
    pub(super) orphans: HashMap<(u64, u32), Intermediaries>,
    /// Drained by every `flush`: (destination, part, message).
    pub(super) outgoing: Vec<Delivery>,
    /// Starts of creations from a parent section not stored here yet. Removed when
    /// the parent is stored (`resume`); a neighbour in the parent's tree sent them,
    /// so this PE is a member and stores it once its part of the parent's creation
    /// ends. A start from a parent freed here is refused (`hold`), unless it was
    /// freed more than `FREED_MEMORY` frees ago: only a member splitting a section
    /// after the others freed it sends one, and it then stays.
    pub(super) waiting: HashMap<SectionId, Vec<HeldStart>>,
    /// Creations ended here by a failure: at most `abort::ABORTED_MEMORY`.
    pub(super) aborted: abort::Aborted,
}

impl Creations {
    /// Keep a message of creation `token`, not started here yet.
    pub(super) fn keep_early(&mut self, token: u64, early: Early) {
        self.early.entry(token).or_default().push(early);
    }

    /// Forget the starts that waited for section `id`, freed here.
    pub(super) fn forget(&mut self, id: SectionId) {
        self.waiting.remove(&id);
    }
}

impl Builder {
    /// Handle a creation message, dropping those of creations a failure ended here.
    pub(super) fn on_creation(&mut self, ctx: &mut Ctx, msg: CreationMsg) -> Result<(), HostError> {
        if msg
            .run_token()
            .is_some_and(|t| self.creations.aborted.contains(t))
        {
            self.dropped += 1;
            return Ok(());
        }
        match msg {
            CreationMsg::Create(req) => self.on_create(ctx, req),
            CreationMsg::Start {
                token,
                from,
                req,
                dead,
            } => self.on_start(ctx, token, from, req, dead),
            CreationMsg::Proto {
                token,
                from,
                part,
                wire,
            } => self.on_proto(ctx, token, from, part, wire),
            CreationMsg::Bundle { token, from, parts } => self.on_bundle(ctx, token, from, parts),
            CreationMsg::Routed(routed) => self.on_routed(ctx, routed),
            CreationMsg::Done { token, tally } => self.on_done(ctx, token, tally),
            CreationMsg::Release { token } => self.on_release(ctx, token),
            CreationMsg::Peak { token, bytes } => self.on_peak(ctx, token, bytes),
        }
    }

    /// One protocol message for this PE.
    fn on_proto(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        from: Pe,
        part: u32,
        wire: Wire<ProtoMsg>,
    ) -> Result<(), HostError> {
        // Intermediaries' answers are counted where they arrive.
        let bytes = if is_answer(&wire) {
            encoded_len(&CreationMsg::Proto {
                token,
                from,
                part,
                wire: wire.clone(),
            })
        } else {
            0
        };
        let me = self.me;
        let queue = VecDeque::from([Delivery {
            from,
            to: me,
            part,
            wire,
            bytes,
        }]);
        self.pump(ctx, token, queue)
    }

    /// Protocol messages of several sections of a split for this PE.
    fn on_bundle(
        &mut self,
        ctx: &mut Ctx,
        token: u64,
        from: Pe,
        parts: Vec<(u32, Wire<ProtoMsg>)>,
    ) -> Result<(), HostError> {
        let answers = parts.iter().all(|(_, w)| is_answer(w));
        let mut bytes = if answers {
            encoded_len(&CreationMsg::Bundle {
                token,
                from,
                parts: parts.clone(),
            })
        } else {
            0
        };
        let to = self.me;
        let mut queue = VecDeque::new();
        for (part, wire) in parts {
            // The bundle counts once, with its first answer.
            let bytes = std::mem::take(&mut bytes);
            queue.push_back(Delivery {
                from,
                to,
                part,
                wire,
                bytes,
            });
        }
        self.pump(ctx, token, queue)
    }

    /// A routed announcement: forward it, or hand it to this PE's intermediary.
    fn on_routed(&mut self, ctx: &mut Ctx, routed: Routed) -> Result<(), HostError> {
        let token = routed.token;
        if !self.creations.runs.contains_key(&token) {
            self.creations.keep_early(token, Early::Routed(routed));
            return Ok(());
        }
        let part = routed.part;
        let queue = match self.route(ctx, routed)? {
            Some(msg) => VecDeque::from([Delivery::announce_here(self.me, part, msg)]),
            None => VecDeque::new(),
        };
        self.pump(ctx, token, queue)
    }

    /// A child's subtree of the parent tree has finished.
    fn on_done(&mut self, ctx: &mut Ctx, token: u64, tally: Tally) -> Result<(), HostError> {
        match self.creations.runs.get_mut(&token) {
            Some(run) => {
                run.tally.merge(&tally);
                run.children_done += 1;
                self.try_up(ctx, token)
            }
            None => {
                self.creations.keep_early(token, Early::Done(tally));
                Ok(())
            }
        }
    }

    /// A child's subtree's largest per-PE state.
    fn on_peak(&mut self, ctx: &mut Ctx, token: u64, bytes: u64) -> Result<(), HostError> {
        let run = self.run(token, "peak")?;
        run.peak = run.peak.max(bytes);
        run.children_peaked += 1;
        self.try_peak_up(ctx, token)
    }

    pub(super) fn run(&mut self, token: u64, what: &'static str) -> Result<&mut Run, HostError> {
        let pe = self.me;
        self.creations
            .runs
            .get_mut(&token)
            .map(|r| &mut **r)
            .ok_or(HostError::UnknownCreation { pe, token, what })
    }
}
