//! Array sections (Charm++'s `CkSectionInfo` and `CkMulticast`): some elements of a
//! chare array, addressed together. `array.section(ctx, indices)` (any iterator of
//! indices, so a range too) or `array.section_where(ctx, predicate)` makes one; its
//! `broadcast` reaches every member once, carried on a tree over the PEs the members
//! are placed on (one envelope per PE, not one per member), and its `contribute` is a
//! reduction over the members alone. Both stay exactly-once while members migrate
//! (`engine/section.rs` says how).
//!
//! ```ignore
//! let evens = array.section(ctx, (0..n).step_by(2))?;
//! evens.broadcast(ctx, Msg::Step);
//! // in each member, holding its own copy of `evens` (a field of the element):
//! self.evens.contribute(ctx, x, Reducer::Sum, cb)?;
//! ```

use crate::api::chare::Chare;
use crate::api::ctx::Ctx;
use crate::api::proxy::ArrayProxy;
use crate::api::registry::Entry;
use crate::api::target::Target;
use crate::base::ids::{CollectionId, Pe};
use crate::base::section_error::SectionError;
use crate::msg::array::{ArrayIndex, ElemAddr};
use crate::msg::callback::{Callback, SectionRef};
use crate::msg::envelope::SendOpts;
use crate::msg::kind::section::SectionSpec;
use crate::msg::payload::Payload;
use crate::msg::reduction::{Reducer, Reducible};
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

/// A section of a chare array: a handle any chare may copy, send and keep (a
/// checkpoint saves it with its holder; restarted on another PE count, it keeps its
/// members and its tree is rebuilt over their new homes).
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct ArraySection<C, I> {
    spec: Arc<SectionSpec>,
    /// Section reductions this copy has contributed to: a member keeps its copy (in
    /// its state, so it migrates with it) and each `contribute` names the next one.
    red: u32,
    /// The PE count `spec`'s tree was built for: a job restarted on another count
    /// places the members on other homes.
    built_on: u32,
    /// `spec` rebuilt over this job's homes, once a copy from a job of another PE
    /// count is first used (never saved: each job rebuilds its own).
    #[serde(skip)]
    rehomed: OnceLock<Arc<SectionSpec>>,
    #[serde(skip)]
    _p: PhantomData<fn() -> (C, I)>,
}

impl<C, I> Clone for ArraySection<C, I> {
    fn clone(&self) -> Self {
        ArraySection {
            spec: self.spec.clone(),
            red: self.red,
            built_on: self.built_on,
            rehomed: self.rehomed.clone(),
            _p: PhantomData,
        }
    }
}

impl<C, I> std::fmt::Debug for ArraySection<C, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ArraySection({:x} of {}: {} members on {} PEs)",
            self.spec.id,
            self.spec.coll,
            self.len(),
            self.pes().len()
        )
    }
}

impl<C, I> PartialEq for ArraySection<C, I> {
    fn eq(&self, other: &Self) -> bool {
        self.spec.id == other.spec.id && self.spec.coll == other.spec.coll
    }
}

impl<C, I> ArraySection<C, I> {
    /// The array the members belong to.
    pub fn array(&self) -> CollectionId {
        self.spec.coll
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.spec.len()
    }

    /// Always false: a section has at least one member.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The PEs the array's map places members on (the section tree's nodes),
    /// ascending; for a copy restored on another PE count, those of the job that made
    /// it until its first `broadcast` or `contribute` rebuilds the tree.
    pub fn pes(&self) -> &[Pe] {
        &self.tree().roster
    }

    /// Edges of the tree a multicast from PE `from` travels: one fewer than the PEs
    /// when `from` is one of them (the tree is re-rooted there), else one more, from
    /// `from` to the tree's first PE.
    pub fn tree_edges(&self, from: Pe) -> usize {
        let spec = self.tree();
        let m = spec.roster.len();
        match spec.rank_of(from) {
            Some(_) => m - 1,
            None => m,
        }
    }

    /// Section reductions this copy has contributed to.
    pub fn contributions(&self) -> u32 {
        self.red
    }

    /// The newest tree this copy knows.
    fn tree(&self) -> &Arc<SectionSpec> {
        self.rehomed.get().unwrap_or(&self.spec)
    }

    /// The section's tree in this job: as built, or rebuilt over the members' homes
    /// if it was built on another PE count (a restart).
    fn spec_here(&self, ctx: &mut Ctx) -> Result<Arc<SectionSpec>, SectionError> {
        if self.built_on as usize == ctx.num_pes() {
            return Ok(self.spec.clone());
        }
        if let Some(s) = self.rehomed.get() {
            return Ok(s.clone());
        }
        let s = Arc::new(ctx.core.rehome_section(&self.spec)?);
        Ok(self.rehomed.get_or_init(|| s).clone())
    }
}

impl<C: Chare, I: ArrayIndex> ArraySection<C, I> {
    /// Every member's index, ascending by encoded index.
    pub fn members(&self) -> Vec<I> {
        self.spec
            .members
            .iter()
            .flatten()
            .filter_map(|a| bincode::deserialize(a.key.as_bytes()).ok())
            .collect()
    }

    /// Send `msg` to every member once, wherever it is.
    pub fn broadcast(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.broadcast_with(ctx, msg, SendOpts::default());
    }

    /// Broadcast with a priority or expedited.
    pub fn broadcast_with(&self, ctx: &mut Ctx, msg: C::Msg, opts: SendOpts) {
        match self.spec_here(ctx) {
            Ok(spec) => ctx.core.section_cast(spec, Payload::new(msg), opts),
            Err(e) => ctx.fail("ArraySection::broadcast", e),
        }
    }

    /// The running member's contribution to this copy's next section reduction: once
    /// every member has contributed to it, `callback` gets the reduction of their
    /// values (Charm++'s `CkMulticast` contribute). Each member contributes once per
    /// reduction, with the same reducer, from its own copy of the section.
    pub fn contribute<T: Reducible>(
        &mut self,
        ctx: &mut Ctx,
        value: T,
        reducer: Reducer,
        callback: Callback,
    ) -> Result<(), SectionError> {
        let spec = self.spec_here(ctx)?;
        ctx.core
            .section_contribute(&spec, self.red, value.into_data(), reducer, callback)?;
        self.red = self.red.wrapping_add(1);
        Ok(())
    }
}

impl<C: Chare, I: ArrayIndex> ArrayProxy<C, I> {
    /// The section of the elements at `indices` (a list, a range, any iterator;
    /// duplicates count once), placed by the array's map. Call it on the PE that
    /// created the array or on one where its elements live.
    pub fn section(
        &self,
        ctx: &mut Ctx,
        indices: impl IntoIterator<Item = I>,
    ) -> Result<ArraySection<C, I>, SectionError> {
        let addrs = indices.into_iter().map(|i| ElemAddr::of(&i)).collect();
        self.section_of(ctx, addrs)
    }

    /// The section of the elements the array was created with whose index `keep`
    /// accepts.
    pub fn section_where(
        &self,
        ctx: &mut Ctx,
        mut keep: impl FnMut(&I) -> bool,
    ) -> Result<ArraySection<C, I>, SectionError> {
        let addrs = ctx
            .core
            .array_addresses(self.coll)?
            .into_iter()
            .filter(|a| bincode::deserialize::<I>(a.key.as_bytes()).is_ok_and(|i| keep(&i)))
            .collect();
        self.section_of(ctx, addrs)
    }

    fn section_of(
        &self,
        ctx: &mut Ctx,
        addrs: Vec<ElemAddr>,
    ) -> Result<ArraySection<C, I>, SectionError> {
        Ok(ArraySection {
            spec: Arc::new(ctx.core.build_section(self.coll, addrs)?),
            red: 0,
            built_on: ctx.num_pes() as u32,
            rehomed: OnceLock::new(),
            _p: PhantomData,
        })
    }
}

impl Callback {
    /// Broadcast to `entry` of every member of `section` (Charm++'s `CkCallback`
    /// with a section proxy): the value travels as the section's `broadcast` does,
    /// once to each member wherever it is.
    pub fn section<C: Chare, I: ArrayIndex, T: Reducible>(
        section: &ArraySection<C, I>,
        entry: Entry<C, T>,
    ) -> Self {
        Callback::Section {
            section: SectionRef(section.spec.clone()),
            entry: entry.id,
        }
    }
}

/// A whole section as a destination of `#[chare]`'s proxy methods: a send is the
/// section's broadcast, a callback `Callback::section`.
impl<C: Chare, I: ArrayIndex> Target<C> for ArraySection<C, I> {
    fn deliver(&self, ctx: &mut Ctx, msg: C::Msg) {
        self.broadcast(ctx, msg);
    }
    fn callback<T: Reducible>(&self, _: &mut Ctx, entry: Entry<C, T>) -> Callback {
        Callback::section(self, entry)
    }
}
