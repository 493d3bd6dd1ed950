//! The few calls most programs need: [`Sections`], one handle to the section builder
//! and the collectives, made once in `main`; a split by colour and key from inside any
//! chare; collectives over what it made.
//!
//! ```ignore
//! // every process, with the other registrations:
//! let sections = Sections::register(&mut reg);
//! // in main, on PE 0:
//! let sections = sections.setup(ctx);
//! // in a handler on every PE (MPI_Comm_split):
//! sections.split(ctx, Split::new(2).colour(pe % 2).key(pe), Callback::group_all(&me, joined))?;
//! // in `joined(section)`, on every member (MPI_Allreduce):
//! sections.allreduce(ctx, &section, u64::from(pe), Reducer::Sum, Callback::group_all(&me, sum))?;
//! ```
//!
//! Callbacks follow the crate's one rule ([`crate::callback`]): a callback naming a
//! whole group reaches that group's member on the PE the result is for.

use crate::collectives::{CollectiveError, Collectives, TreeMember};
use crate::host::{self, Builder, BuilderInit, FreeMsg, HostError, Request, Split, SplitMsg, Then};
use crate::section::{Section, WORLD_CREATOR};
use chorus_core::{Callback, Ctx, GroupProxy, RedData, Reducer, Reducible, Registry};
use serde::{Deserialize, Serialize};

/// What `Sections::register` returns: turn it into the handle once, in `main`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SectionsInit {
    builder: BuilderInit,
}

impl SectionsInit {
    /// Create the builder and collectives groups (once per job, from PE 0's `main`).
    pub fn setup(self, ctx: &mut Ctx) -> Sections {
        Sections {
            builder: ctx.create_group::<Builder>(self.builder),
            collectives: Collectives::create(ctx),
        }
    }
}

/// Handle to the job's section builder and collectives: copy it into any chare's
/// init or message and call it from any handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sections {
    builder: GroupProxy<Builder>,
    collectives: Collectives,
}

impl Sections {
    /// Register the builder and the collectives host (every process, in the same
    /// place of its registration order).
    pub fn register(reg: &mut Registry) -> SectionsInit {
        let builder = host::register(reg);
        Collectives::register(reg);
        SectionsInit { builder }
    }

    /// This PE's part in a split by colour and key, `MPI_Comm_split` style: every PE
    /// of `split.parent` calls it, in the same order as its other splits of that
    /// parent, with its own colour and key; each PE with a colour gets its
    /// [`Section`] (rank by (key, PE), size) at `on_member`.
    pub fn split(&self, ctx: &mut Ctx, split: Split, on_member: Callback) -> Result<(), HostError> {
        split.validate()?;
        let me = ctx.my_pe();
        let call = SplitMsg::Call {
            split,
            on_member,
            then: None,
        };
        self.builder.send(ctx, me, call.into());
        Ok(())
    }

    /// A split (as [`Sections::split`]) and a reduction over each section it makes:
    /// each member's `value` combined with `reducer`, the result to the `done` of the
    /// section's rank 0 (so once per section). The sections are not handed to the
    /// members and are freed once the reduction is done (use `split` and the
    /// collectives to keep using them). A split that does not validate is reported
    /// by this PE's builder under the job's `--on-error` policy.
    pub fn split_reduce<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        split: Split,
        value: T,
        reducer: Reducer,
        done: Callback,
    ) {
        let me = ctx.my_pe();
        let then = Then {
            value: value.into_data(),
            reducer,
            done,
            collectives: self.collectives,
        };
        let call = SplitMsg::Call {
            split,
            on_member: Callback::Ignore,
            then: Some(Box::new(then)),
        };
        self.builder.send(ctx, me, call.into());
    }

    /// Run a job with `registrations` and the sections, configured by the command
    /// line's standard flags (as `Runtime::from_args`): `main` runs on PE 0 with the
    /// set-up handle and a callback to it; returns every value delivered there until
    /// quiescence, in arrival order (`Runtime::run_for_all`).
    #[cfg(feature = "cli")]
    pub fn run_for_all<T: Reducible>(
        registrations: impl chorus_core::IntoRegistry,
        main: impl FnOnce(&mut Ctx, Sections, Callback) + Send + 'static,
    ) -> Result<Vec<T>, chorus_core::RuntimeError> {
        let mut reg = registrations.into_registry();
        let init = Sections::register(&mut reg);
        chorus_core::Runtime::from_args(reg).run_for_all(move |ctx, done| {
            let sections = init.setup(ctx);
            main(ctx, sections, done)
        })
    }

    /// Create a section as `req` says (any PE of its parent asks; see
    /// [`Request::default`]).
    pub fn create(&self, ctx: &mut Ctx, req: Request) -> Result<(), HostError> {
        req.validate()?;
        Builder::create_section(&self.builder, ctx, req);
        Ok(())
    }

    /// Reduce every member's `value` of `section` with `reducer`; every member's
    /// `callback` gets the result (`MPI_Allreduce`). Call on each member's PE.
    pub fn allreduce<T: Reducible>(
        &self,
        ctx: &mut Ctx,
        section: &Section,
        value: T,
        reducer: Reducer,
        callback: Callback,
    ) -> Result<(), CollectiveError> {
        let member = TreeMember::new(section.clone(), ctx.my_pe());
        self.collectives
            .allreduce(ctx, member, value, reducer, callback)
    }

    /// Free this member's view of `section` (`MPI_Comm_free`; a section the builder
    /// keeps: every split's, and a creation's unless made with `keep(false)`, which
    /// `Collectives::free` frees): every member calls it for its own view, once it has started every split and collective of the
    /// section it will (the same as the other members, in the same order). The free
    /// waits on this PE for the member's running collectives on the section and its
    /// split calls not yet started (collectives it started before this call, in this
    /// handler or an earlier one, are running or done by the time the free arrives:
    /// messages a PE sends itself arrive in order), then removes every trace of the
    /// section from the builder and collectives host here; `on_freed` gets the section's id
    /// ([`crate::callback`]'s rule). Afterwards a collective on it, a split of it or a
    /// second free is an error (`CollectiveError::Freed`, `HostError::Freed`, reported
    /// under `--on-error`), and a message for it is dropped and counted, or reported
    /// when its sender broke the rule above.
    pub fn free(
        &self,
        ctx: &mut Ctx,
        section: &Section,
        on_freed: Callback,
    ) -> Result<(), HostError> {
        let me = ctx.my_pe();
        if section.id.creator == WORLD_CREATOR || section.id.depth > 0 {
            return Err(HostError::UnknownSection {
                pe: me,
                id: section.id,
            });
        }
        let msg = FreeMsg::Free {
            id: section.id,
            collectives: self.collectives.group(),
            on_freed,
        };
        self.builder.send(ctx, me, msg.into());
        Ok(())
    }

    /// Send the sizes of this PE's builder and collectives host maps, a
    /// [`crate::free::SectionsStats`], to `on_stats` ([`crate::callback`]'s rule), after what this
    /// PE has asked of them so far.
    pub fn stats(&self, ctx: &mut Ctx, on_stats: Callback) {
        let me = ctx.my_pe();
        let msg = FreeMsg::Stats {
            collectives: self.collectives.group(),
            on_stats,
        };
        self.builder.send(ctx, me, msg.into());
    }

    /// The collectives, for everything beyond an allreduce (members of a built
    /// section: `TreeMember::new(section, ctx.my_pe())`).
    pub fn collectives(&self) -> Collectives {
        self.collectives
    }

    /// The builder group, for merges and the lower-level calls of [`crate::host`].
    pub fn builder(&self) -> GroupProxy<Builder> {
        self.builder
    }
}

/// A section arrives at an entry taking `Section` (or `Encoded<Section>`: the same
/// bytes).
impl Reducible for Section {
    fn into_data(self) -> RedData {
        chorus_core::Encoded(self).into_data()
    }
    fn from_data(d: RedData) -> Result<Self, String> {
        chorus_core::Encoded::<Section>::from_data(d).map(|e| e.0)
    }
}
