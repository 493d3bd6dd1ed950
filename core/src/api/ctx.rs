//! What a running handler can do: create chares, send, contribute, detect quiescence,
//! exit, and ask where and when it is.

use crate::api::chare::Chare;
use crate::api::migration::Restarted;
use crate::api::proxy::{ArrayProxy, ChareProxy, GroupProxy};
use crate::api::registry::Entry;
use crate::base::config::ErrorPolicy;
use crate::base::error::RuntimeError;
use crate::base::error::{DestroyError, MigrateError, SyncError};
use crate::base::ids::{ChareId, CollectionId, Pe};
use crate::engine::{Current, PeCore};
use crate::msg::array::{ArrayIndex, ArrayMap, ElemAddr, Shape};
use crate::msg::callback::Callback;
use crate::msg::kind::create::{CreateArray, CreateChare, CreateGroup};
use crate::msg::payload::Payload;
use crate::msg::reduction::{Reducer, Reducible};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// A handler's view of the runtime on its PE.
pub struct Ctx<'a> {
    pub(crate) core: &'a mut PeCore,
}

impl Ctx<'_> {
    /// This PE's index.
    pub fn my_pe(&self) -> Pe {
        self.core.me()
    }

    /// Number of PEs in the job.
    pub fn num_pes(&self) -> usize {
        self.core.npes()
    }

    /// This PE's node: the process (mpi rank) it runs in, or its block of
    /// `--pes-per-node` PEs on threads and sim; a nodegroup has one member per node.
    pub fn my_node(&self) -> usize {
        self.core.my_node()
    }

    /// Number of nodes in the job.
    pub fn num_nodes(&self) -> usize {
        self.core.num_nodes()
    }

    /// PEs per node: node `n` is PEs `n * pes_per_node ..` (the last node may have fewer).
    pub fn pes_per_node(&self) -> usize {
        self.core.node_size()
    }

    /// The job's `--seed`, for programs that draw random numbers.
    pub fn seed(&self) -> u64 {
        self.core.seed()
    }

    /// Seconds since the job started on this layer's clock.
    pub fn now(&self) -> f64 {
        self.core.now()
    }

    /// Declare that the current handler computes for `d` (sleeps or spins on real
    /// layers; advances virtual time on the simulator).
    pub fn work(&mut self, d: Duration) {
        self.core.work(d);
    }

    /// True when the job is traced (`--trace FILE`), so costly trace labels can be skipped.
    pub fn tracing(&self) -> bool {
        self.core.traced()
    }

    /// Mark an instant named `name` on this PE's trace track.
    pub fn trace_event(&mut self, name: &str) {
        if let Some(ts) = self.core.trace_now() {
            if let Some(t) = self.core.trace_mut() {
                t.user_event(ts, name);
            }
        }
    }

    /// Open a user span named `name` on this PE's trace track; close it with
    /// [`Ctx::trace_span_end`] before the handler returns.
    pub fn trace_span_begin(&mut self, name: &str) {
        if let Some(ts) = self.core.trace_now() {
            if let Some(t) = self.core.trace_mut() {
                t.span_begin(ts, name);
            }
        }
    }

    /// Close the innermost user span opened by [`Ctx::trace_span_begin`].
    pub fn trace_span_end(&mut self) {
        if let Some(ts) = self.core.trace_now() {
            if let Some(t) = self.core.trace_mut() {
                t.span_end(ts);
            }
        }
    }

    /// Record a phase (a section-creation step, a load-balancing round) that began at
    /// `since` (a value of [`Ctx::now`]) and ends now, with numeric arguments.
    pub fn trace_phase(&mut self, name: &str, since: f64, args: &[(&'static str, u64)]) {
        if let Some(ts) = self.core.trace_now() {
            let start = crate::trace::ns(since).min(ts);
            if let Some(t) = self.core.trace_mut() {
                t.phase(start, ts - start, name, args);
            }
        }
    }

    /// The entry of `C` taking a `T` registered under `name` (`Registry::find_entry`).
    pub fn find_entry<C: Chare, T: Reducible>(&self, name: &str) -> Option<Entry<C, T>> {
        self.core.reg().find_entry(name)
    }

    /// Have `callback` receive the number (a `Pe`) of every PE that fails from now on.
    /// Only the sim layer injects failures (`--sim-kill`); elsewhere it never fires.
    pub fn on_pe_failure(&mut self, callback: Callback) {
        self.core.on_pe_failure(callback);
    }

    pub(crate) fn type_index<C: Chare>(&mut self) -> Option<u32> {
        match self.core.reg().type_index::<C>() {
            Ok(t) => Some(t),
            Err(e) => {
                self.core.fail(e);
                None
            }
        }
    }

    /// Create a singleton chare on `pe`; messages sent to the proxy right away are
    /// delivered after it is built.
    pub fn create_chare<C: Chare>(&mut self, init: C::Init, pe: Pe) -> ChareProxy<C> {
        let id = self.core.new_chare_id(pe);
        if let Some(ty) = self.type_index::<C>() {
            let kind = CreateChare {
                id,
                ty,
                init: Payload::new(init),
            };
            self.core.create(pe, kind);
        }
        ChareProxy::new(id)
    }

    /// Create a group: one member on every PE, each built from a copy of `init`.
    pub fn create_group<C: Chare>(&mut self, init: C::Init) -> GroupProxy<C> {
        let coll = self.core.new_collection_id();
        if let Some(ty) = self.type_index::<C>() {
            let kind = CreateGroup {
                coll,
                ty,
                root: self.core.me(),
                init: Payload::new(init),
            };
            self.core.create(self.core.me(), kind);
        }
        GroupProxy::new(coll)
    }

    fn create_array_shaped<C: Chare, I: ArrayIndex>(
        &mut self,
        shape: Shape,
        init: C::Init,
        map: ArrayMap,
    ) -> ArrayProxy<C, I> {
        let coll = self.core.new_collection_id();
        if let Err(e) = shape.check() {
            let pe = self.core.me();
            self.core.fail(RuntimeError::BadInput {
                pe,
                what: format!("{coll}: {e}"),
            });
            return ArrayProxy::new(coll);
        }
        if matches!((&shape, map), (Shape::List(_), ArrayMap::Block)) {
            self.core.fail(RuntimeError::BlockMapNeedsDense { coll });
            return ArrayProxy::new(coll);
        }
        if let Some(ty) = self.type_index::<C>() {
            let shape = Arc::new(shape);
            self.core.register_array(coll, ty, shape.clone(), map);
            let kind = CreateArray {
                coll,
                ty,
                root: self.core.me(),
                init: Payload::new(init),
                shape,
                map,
            };
            self.core.create(self.core.me(), kind);
        }
        ArrayProxy::new(coll)
    }

    /// Create a 1-D array with elements 0..n, each built from a copy of `init`.
    pub fn create_array_1d<C: Chare>(
        &mut self,
        n: usize,
        init: C::Init,
        map: ArrayMap,
    ) -> ArrayProxy<C, usize> {
        self.create_array_shaped(Shape::Dense1(n as u64), init, map)
    }

    /// Create a 2-D array with elements (0..x, 0..y).
    pub fn create_array_2d<C: Chare>(
        &mut self,
        dims: (usize, usize),
        init: C::Init,
        map: ArrayMap,
    ) -> ArrayProxy<C, (usize, usize)> {
        self.create_array_shaped(Shape::Dense2(dims.0 as u64, dims.1 as u64), init, map)
    }

    /// Create an array of user-typed indices (empty for an array filled by `insert`).
    pub fn create_array<C: Chare, I: ArrayIndex>(
        &mut self,
        indices: Vec<I>,
        init: C::Init,
        map: ArrayMap,
    ) -> ArrayProxy<C, I> {
        let list = indices.iter().map(ElemAddr::of).collect();
        self.create_array_shaped(Shape::List(list), init, map)
    }

    /// Contribute to the next reduction of the group or array this chare belongs to;
    /// when every member has contributed, the combined value goes to `callback`.
    pub fn contribute<T: Reducible>(&mut self, value: T, reducer: Reducer, callback: Callback) {
        self.core.contribute(value.into_data(), reducer, callback);
    }

    /// Deliver a value to a callback directly.
    pub fn send_to_callback<T: Reducible>(&mut self, callback: &Callback, value: T) {
        self.core.fire(callback, value.into_data());
    }

    /// Deliver to `callback` once no message is in flight or being processed anywhere.
    pub fn start_quiescence(&mut self, callback: Callback) {
        self.core.request_quiescence(callback);
    }

    /// Save the job to `dir` at the next quiescence (every PE writes its array
    /// elements and group members, PE 0 the manifest last), then deliver to
    /// `callback`; a program started with `--restart dir` continues from there. A
    /// checkpoint that cannot be written is a `RuntimeError::Checkpoint` under the
    /// job's `--on-error` policy, and the previous one in `dir` stays intact.
    pub fn checkpoint(&mut self, dir: impl AsRef<std::path::Path>, callback: Callback) {
        let dir = dir.as_ref().to_string_lossy().into_owned();
        self.core.request_checkpoint(Some(dir), callback);
    }

    /// Save the job in memory at the next quiescence, as `checkpoint` saves it to
    /// disk: each PE keeps its state and gives a copy to its buddy, the next PE
    /// (FTC-Charm++'s double checkpoint); then deliver `false` to `callback`. If PEs
    /// fail, the survivors roll back to the newest complete one, the failed PEs'
    /// elements are rebuilt on survivors, and `callback` gets `true`: the program
    /// goes on from there. Only the newest complete checkpoint is kept.
    pub fn checkpoint_in_memory(&mut self, callback: Callback) {
        self.core.request_checkpoint(None, callback);
    }

    /// In a job started with `--restart DIR`, deliver the checkpoint's callback
    /// again, as it was delivered when the checkpoint was committed (Charm++'s
    /// `+restart`): called from main instead of sending messages of its own, the job
    /// goes on as the one that wrote the checkpoint did, and on sim, on as many PEs
    /// with the same flags and seed, at the same virtual times (`SimStats`'s digest
    /// since the commit shows it; an element away from its map's home at the
    /// checkpoint restarts at home, so such a job gets the same answer, not the same
    /// digest). Delivers once; a job not restarted from disk has nothing to resume.
    pub fn resume_from_checkpoint(&mut self) -> Result<(), crate::CheckpointError> {
        self.core.resume_from_checkpoint()
    }

    /// What the job was restarted from, if it was started with `--restart`: main
    /// then finds its collections and chares with `restored_arrays`,
    /// `restored_groups` and `restored_chares` instead of creating them, and sends the messages that resume the work.
    pub fn restarted(&self) -> Option<Restarted> {
        self.core.resumed().map(|r| r.info.clone())
    }

    /// The restored arrays of element type `C`, in the order they were created.
    pub fn restored_arrays<C: Chare, I: ArrayIndex>(&self) -> Vec<ArrayProxy<C, I>> {
        self.restored_of::<C>()
            .into_iter()
            .map(ArrayProxy::new)
            .collect()
    }

    /// The restored groups of member type `C`, in the order they were created.
    pub fn restored_groups<C: Chare>(&self) -> Vec<GroupProxy<C>> {
        self.restored_of::<C>()
            .into_iter()
            .map(GroupProxy::new)
            .collect()
    }

    /// The restored singleton chares of type `C`, by creating PE, the PE each was
    /// created on and creation order.
    pub fn restored_chares<C: Chare>(&self) -> Vec<ChareProxy<C>> {
        let (Some(r), Ok(ty)) = (self.core.resumed(), self.core.reg().type_index::<C>()) else {
            return Vec::new();
        };
        (r.chares.iter())
            .filter(|c| c.1 == ty)
            .map(|c| ChareProxy::new(c.0))
            .collect()
    }

    fn restored_of<C: Chare>(&self) -> Vec<CollectionId> {
        let (Some(r), Ok(ty)) = (self.core.resumed(), self.core.reg().type_index::<C>()) else {
            return Vec::new();
        };
        r.collections
            .iter()
            .filter(|c| c.1 == ty)
            .map(|c| c.0)
            .collect()
    }

    /// End the job once the system is quiescent.
    pub fn exit_on_quiescence(&mut self) {
        self.start_quiescence(Callback::Exit);
    }

    /// End the job now: every PE stops after its current handler.
    pub fn exit(&mut self) {
        self.core.exit(None);
    }

    /// Report an error this handler found and cannot act on (bad input from another
    /// PE, say): the job's `--on-error` policy applies, as to the runtime's own errors
    /// (abort by default; `drop` logs it and runs on).
    pub fn fail(&mut self, by: &str, message: impl std::fmt::Display) {
        let err = RuntimeError::Reported {
            pe: self.core.me(),
            by: by.to_string(),
            message: message.to_string(),
        };
        self.core.fail(err);
    }

    /// The job's `--on-error` policy: what `fail` does with a report.
    pub fn on_error(&self) -> ErrorPolicy {
        self.core.policy()
    }

    /// Move the running array element to PE `to` once this handler returns (Charm++'s
    /// `migrateMe`): its state travels there, and messages sent to it before, during
    /// and after the move reach it there. Its type must be registered with
    /// `Registry::migratable`. An `Err` means the request was refused: the element stays
    /// here and nothing is reported. Calling it from `about_to_migrate` is refused with
    /// `MigrateError::Leaving`. Failures after the handler returns (the state does not
    /// serialize here, or does not deserialize on `to`) are reported later, as
    /// `RuntimeError::Migrate` under the job's `--on-error` policy.
    pub fn migrate_me(&mut self, to: Pe) -> Result<(), MigrateError> {
        self.core.request_move(to)
    }

    /// Delete the running array element once this handler returns (Charm++'s
    /// `ckDestroy`). Later reductions over its array count only the elements left;
    /// messages that reach it afterwards are not run but counted in
    /// `PeReport::dropped_to_deleted`. Refused (typed) outside an element, after
    /// `migrate_me` in the same handler, in a balancing step, or when called twice.
    pub fn destroy_me(&mut self) -> Result<(), DestroyError> {
        self.core.request_destroy()
    }

    /// The running array element has reached a step boundary (Charm++'s `AtSync`):
    /// once every element of its array has, the strategy chosen with `--array-lb`
    /// moves elements by their measured load, and each element's
    /// [`Migratable::resume_from_sync`](crate::Migratable::resume_from_sync) runs where
    /// it then is. With no strategy (`--array-lb none`) it resumes as soon as this
    /// handler returns. The element should wait for its resume before its next step.
    pub fn at_sync(&mut self) -> Result<(), SyncError> {
        self.core.at_sync()
    }

    /// Ask for a balancing step of `array` under `--lb-manual`: its elements' AtSync
    /// step waiting now, or else their next one, balances; until asked, a step waits.
    pub fn start_lb<C, I>(&mut self, array: &ArrayProxy<C, I>) -> Result<(), SyncError> {
        self.core.start_lb(array.coll)
    }

    /// Record a named value in the run's report (readable with `RunReport::output`).
    pub fn publish<T: Serialize>(&mut self, key: &str, value: &T) {
        match bincode::serialize(value) {
            Ok(bytes) => self.core.publish(key, bytes),
            Err(e) => self
                .core
                .fail(RuntimeError::Invalid(format!("publish({key}): {e}"))),
        }
    }

    /// Index of the running array element, if the running chare is one with index type `I`.
    ///
    /// `I` is the index type the array was created with: `usize` for
    /// `create_array_1d`, `(usize, usize)` for `create_array_2d`, the type of the
    /// indices given to `create_array` (`this_index_1d` and `this_index_2d` name the
    /// first two). Any other type, or a chare that is not an array element, is `None`.
    ///
    /// ```
    /// # use chorus_core::{Chare, Ctx};
    /// struct Cell;
    /// impl Chare for Cell {
    ///     type Init = ();
    ///     type Msg = ();
    ///     fn create(_: (), _: &mut Ctx) -> Self {
    ///         Cell
    ///     }
    ///     fn handle(&mut self, _: (), ctx: &mut Ctx) {
    ///         // An element of ctx.create_array_2d((rows, cols), (), map).
    ///         let (row, col) = ctx.this_index::<(usize, usize)>().expect("a 2-D element");
    ///         println!("cell ({row}, {col})");
    ///     }
    /// }
    /// ```
    pub fn this_index<I: ArrayIndex>(&self) -> Option<I> {
        match self.core.current() {
            Current::Element(_, addr) => bincode::deserialize(addr.key.as_bytes()).ok(),
            _ => None,
        }
    }

    /// Index of the running element of a 1-D array (`create_array_1d`).
    pub fn this_index_1d(&self) -> Option<usize> {
        self.this_index()
    }

    /// Index (row, column) of the running element of a 2-D array (`create_array_2d`).
    pub fn this_index_2d(&self) -> Option<(usize, usize)> {
        self.this_index()
    }

    /// Proxy of the running singleton chare.
    pub fn this_chare<C: Chare>(&self) -> Option<ChareProxy<C>> {
        match self.core.current() {
            Current::Chare(id) => Some(ChareProxy::new(*id)),
            _ => None,
        }
    }

    /// Proxy of the group the running chare is a member of.
    pub fn this_group<C: Chare>(&self) -> Option<GroupProxy<C>> {
        match self.core.current() {
            Current::Group(coll) => Some(GroupProxy::new(*coll)),
            _ => None,
        }
    }

    /// Proxy of the array the running chare is an element of.
    pub fn this_array<C: Chare, I: ArrayIndex>(&self) -> Option<ArrayProxy<C, I>> {
        match self.core.current() {
            Current::Element(coll, _) => Some(ArrayProxy::new(*coll)),
            _ => None,
        }
    }

    /// Identity of the running chare, group or array.
    pub fn this_id(&self) -> Option<Result<ChareId, CollectionId>> {
        match self.core.current() {
            Current::Chare(id) => Some(Ok(*id)),
            Current::Group(c) | Current::Element(c, _) => Some(Err(*c)),
            Current::Main => None,
        }
    }
}
