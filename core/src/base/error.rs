//! Typed errors of the runtime.

use crate::base::config::ConfigError;
use crate::base::ids::{CollectionId, Pe};
use std::path::PathBuf;
use thiserror::Error;

/// Everything that can go wrong while a chorus program runs.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RuntimeError {
    /// A message named a singleton chare that was never created on its PE.
    #[error(
        "PE {pe}: message for chare {chare} which does not exist (was it created, and on this PE?)"
    )]
    UnknownChare {
        /// The PE that received the message.
        pe: Pe,
        /// The chare the message named, described.
        chare: String,
    },
    /// A message named a group or array that does not exist.
    #[error("PE {pe}: message for collection {coll} which does not exist (create the group/array before sending to it)")]
    UnknownCollection {
        /// The PE that received the message.
        pe: Pe,
        /// The collection the message named.
        coll: CollectionId,
    },
    /// A message named an array index that has no element.
    #[error("PE {pe}: message for index {index} of array {coll}, which has no such element (insert it first)")]
    UnknownArrayIndex {
        /// The PE that received the message.
        pe: Pe,
        /// The array.
        coll: CollectionId,
        /// The index the message named, described.
        index: String,
    },
    /// An array element was inserted, or migrated, where its index already exists.
    #[error("PE {pe}: {coll} already has an element at index {index} (on PE {on}); the new one was dropped")]
    DuplicateIndex {
        /// The PE that refused it.
        pe: Pe,
        /// The array.
        coll: CollectionId,
        /// The index, described.
        index: String,
        /// Where the existing element is.
        on: Pe,
    },
    /// A chare type was used without being registered.
    #[error("chare type {name} is not registered: call Registry::chare::<{name}>() before starting the runtime")]
    UnregisteredChare {
        /// The Rust type name of the chare.
        name: &'static str,
    },
    /// A destination PE outside 0..num_pes.
    #[error("PE {from}: destination PE {to} is out of range (the job has {num_pes} PEs)")]
    PeOutOfRange {
        /// The PE that tried to send.
        from: Pe,
        /// The destination it named.
        to: Pe,
        /// The number of PEs in the job.
        num_pes: usize,
    },
    /// Contributions to one reduction disagree, or a reducer does not apply to the value.
    #[error("reduction {seq} of {coll}: {what}")]
    ReducerMismatch {
        /// The collection whose reduction it is.
        coll: CollectionId,
        /// The reduction's sequence number within the collection.
        seq: u64,
        /// What disagreed.
        what: String,
    },
    /// A reduction result could not be converted to the callback entry's argument type.
    #[error("callback entry {entry}: {what}")]
    CallbackType {
        /// The name of the callback entry.
        entry: String,
        /// Why the conversion failed.
        what: String,
    },
    /// A message payload of the wrong type reached a chare.
    #[error("PE {pe}: chare type {chare} got a message that is not its {expected}")]
    WrongMessageType {
        /// The PE where it arrived.
        pe: Pe,
        /// The Rust type name of the chare.
        chare: &'static str,
        /// The Rust type name of the chare's message type.
        expected: &'static str,
    },
    /// Bytes from another process could not be decoded.
    #[error("PE {pe}: could not decode {what}: {reason}")]
    Decode {
        /// The PE that tried to decode them.
        pe: Pe,
        /// What the bytes were meant to be.
        what: String,
        /// Why decoding failed.
        reason: String,
    },
    /// Two processes registered different types.
    #[error(transparent)]
    Registry(#[from] RegistryMismatch),
    /// A checkpoint could not be written, or a restart was refused.
    #[error(transparent)]
    Checkpoint(#[from] crate::base::checkpoint_error::CheckpointError),
    /// A chare handler panicked.
    #[error("PE {pe}: handler of {chare} panicked: {message}")]
    HandlerPanic {
        /// The PE where the handler ran.
        pe: Pe,
        /// The chare type whose handler panicked (`main` for the main function).
        chare: String,
        /// The panic's message.
        message: String,
    },
    /// A message addressed as one kind of collection reached another kind.
    #[error("PE {pe}: {coll} is {is}, but the message was addressed to {addressed}")]
    WrongCollectionKind {
        /// The PE that received the message.
        pe: Pe,
        /// The collection it named.
        coll: CollectionId,
        /// What the collection is ("an array", "a group").
        is: &'static str,
        /// What the message was addressed to.
        addressed: &'static str,
    },
    /// A point-to-point message named a whole array instead of one element.
    #[error("PE {pe}: point-to-point message for a whole array {coll}; broadcast to it, or name an element")]
    WholeArrayPointToPoint {
        /// The PE that received the message.
        pe: Pe,
        /// The array.
        coll: CollectionId,
    },
    /// A creation named a chare type index this process never registered.
    #[error("PE {pe}: chare type {ty} is not registered in this process; every process must register the same types in the same order")]
    UnknownChareType {
        /// The PE asked to create it.
        pe: Pe,
        /// The type's index in the registry.
        ty: u32,
    },
    /// An insert went round without reaching its element's home PE.
    #[error("PE {pe}: insert of index {index} of {coll} was forwarded {hops} times without reaching its home PE {home}")]
    InsertLooped {
        /// The PE that gave up.
        pe: Pe,
        /// The index, described.
        index: String,
        /// The array.
        coll: CollectionId,
        /// Times it was forwarded.
        hops: u8,
        /// The home PE its map names.
        home: Pe,
    },
    /// A custom array map placed an element outside the job.
    #[error("array map {map} placed an element on PE {pe}, but the job has {npes} PEs; return a PE in 0..{npes}")]
    MapOutOfRange {
        /// The map's registered index.
        map: u32,
        /// The PE it returned.
        pe: Pe,
        /// PEs in the job.
        npes: usize,
    },
    /// The block map was asked to place a sparse array.
    #[error(
        "{coll}: the block map needs a dense (1-D or 2-D) array; use RoundRobin or a custom map"
    )]
    BlockMapNeedsDense {
        /// The array.
        coll: CollectionId,
    },
    /// `contribute()` was called by something that is not a member of a collection.
    #[error("contribute() called from {from}: only group members and array elements contribute")]
    ContributeOutside {
        /// What was running, described.
        from: String,
    },
    /// A callback named an entry this process never registered.
    #[error("callback entry {entry} is not registered; every process must register the same entries in the same order")]
    UnregisteredEntry {
        /// The entry's index.
        entry: u32,
    },
    /// A callback was asked for by name (the `<entry>_callback` methods `#[chare]`
    /// generates) for an entry that was not registered with that argument type.
    #[error("PE {pe}: entry {name} of {chare} taking {takes} is not registered: register the type with its generated `register` (or Registry::entry) before starting the runtime")]
    EntryNotRegistered {
        /// The PE that asked.
        pe: Pe,
        /// The entry's registered name.
        name: String,
        /// The chare type.
        chare: &'static str,
        /// The entry's argument type.
        takes: &'static str,
    },
    /// `Runtime::run_for` ended without exactly one value at its callback.
    #[error("the job ended with {got} values at the result callback of run_for, not one: deliver exactly one value to it (run_for_all takes any number)")]
    NoSingleResult {
        /// How many values arrived.
        got: usize,
    },
    /// A send to a PE that the threads transport does not hold.
    #[error("PE {to} is not in this process")]
    PeNotInProcess {
        /// The PE sent to.
        to: Pe,
    },
    /// A message did not encode (usually its payload's serializer refused it).
    #[error("PE {pe}: a message to PE {to} did not encode: {reason}")]
    Encode {
        /// The sending PE.
        pe: Pe,
        /// The PE it was for.
        to: Pe,
        /// The encoder's words.
        reason: String,
    },
    /// A message longer than one MPI message carries.
    #[error("PE {pe}: a message of {bytes} bytes to PE {to} is more than one MPI message carries ({max} bytes); send it in pieces")]
    MessageTooLong {
        /// The sending PE.
        pe: Pe,
        /// The PE it was for.
        to: Pe,
        /// Its longest part.
        bytes: usize,
        /// The most one MPI message carries.
        max: usize,
    },
    /// MPI was finalised by an earlier job in this process.
    #[error("MPI was already finalised in this process; hold a chorus_core::MpiSession to run several jobs")]
    MpiFinalised,
    /// MPI could not be initialised.
    #[error("MPI could not be initialised (was it already initialised outside chorus?)")]
    MpiInitFailed,
    /// Invalid arguments given to a runtime call, described in words from outside
    /// chorus (a user's serde error); chorus's own mistakes have variants of their own.
    #[error("{0}")]
    Invalid(String),
    /// The job's configuration cannot run (`Config::validate`).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The job aborted, and no PE said why.
    #[error("job aborted")]
    Aborted,
    /// The OS refused a thread for a PE.
    #[error("could not start the thread of PE {pe}: {reason}")]
    ThreadStart {
        /// The PE.
        pe: Pe,
        /// The OS's reason.
        reason: String,
    },
    /// A PE's thread ended by a panic outside any handler's guard.
    #[error("PE {pe}'s thread died")]
    ThreadDied {
        /// The PE.
        pe: Pe,
    },
    /// An SMP worker's envelope for another rank found the rank's communication
    /// thread gone.
    #[error("PE {pe}: the rank's communication thread has stopped")]
    CommThreadStopped {
        /// The worker's PE.
        pe: Pe,
    },
    /// The MPI library cannot host worker threads beside the rank's own (SMP mode).
    #[error("--pes-per-rank {per_rank} needs MPI_THREAD_FUNNELED, but this MPI provides only {provided}: run one PE per rank")]
    MpiThreading {
        /// `--pes-per-rank`.
        per_rank: usize,
        /// The thread support the library provides.
        provided: String,
    },
    /// The world communicator was asked for before MPI was initialised.
    #[error("MPI is not initialised")]
    MpiNotInitialised,
    /// A rank runs another number of PEs than rank 0.
    #[error("rank {rank} runs {theirs} PEs per rank but rank 0 runs {first}: give every rank the same --pes-per-rank (CHORUS_PES_PER_RANK)")]
    PesPerRankDiffer {
        /// The first rank that differs.
        rank: u32,
        /// Its PEs per rank.
        theirs: u64,
        /// Rank 0's.
        first: u64,
    },
    /// A rank of another build: its envelopes could be unreadable, or longer than
    /// the others' posted receives.
    #[error("rank {rank} speaks wire version {version} with {posted}-byte posted receives, but rank 0 speaks version {first_version} with {first_posted}: run the same chorus build on every rank")]
    WireDiffer {
        /// The first rank that differs.
        rank: u32,
        /// Its wire version.
        version: u64,
        /// Its posted-receive size, bytes.
        posted: u64,
        /// Rank 0's wire version.
        first_version: u64,
        /// Rank 0's posted-receive size.
        first_posted: u64,
    },
    /// Ranks disagree on whether the job is traced.
    #[error("rank {rank} and rank {other} disagree on --trace: give every rank the same arguments and CHORUS_TRACE")]
    TraceFlagsDiffer {
        /// The first rank that differs.
        rank: u32,
        /// The rank that found it.
        other: u32,
    },
    /// The name table of another process's trace records does not decode.
    #[error("the trace name table from {from} does not decode: {reason}")]
    TraceNames {
        /// The process that sent it.
        from: String,
        /// Why it does not decode.
        reason: String,
    },
    /// An output file's directory does not exist.
    #[error("{flag} {}: directory {} does not exist", .path.display(), .dir.display())]
    NoOutputDir {
        /// The flag naming the file, e.g. `--debug-trace`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Its missing directory.
        dir: PathBuf,
    },
    /// The run's trace could not be made or written.
    #[error("--trace {}: {reason}", .out.display())]
    Trace {
        /// The trace file.
        out: PathBuf,
        /// What went wrong, as chorus-traces says it.
        reason: String,
    },
    /// The runtime's own debug trace could not be written (a full disk, a file-size
    /// limit); nothing was left at its path.
    #[error("--debug-trace {}: {reason}; nothing was written there", .out.display())]
    DebugTrace {
        /// The debug trace file.
        out: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Trace records gathered from another process are not whole or name unknown
    /// entries.
    #[error("--trace {}: the trace records from {from} are malformed: {why}", .out.display())]
    TraceRecords {
        /// The trace file.
        out: PathBuf,
        /// The process that sent them.
        from: String,
        /// What is wrong with them.
        why: String,
    },
    /// A handler found an error it cannot act on and reported it with `Ctx::fail`.
    #[error("PE {pe}: {by}: {message}")]
    Reported {
        /// The PE whose handler reported it.
        pe: Pe,
        /// Who reported it (a chare type or library component).
        by: String,
        /// What was wrong.
        message: String,
    },
    /// MPI ranks registered different types (rank 0's registration is "this process").
    #[error("rank {rank} registered different types than rank 0: {mismatch}")]
    RegistryAcrossRanks {
        /// The rank whose registration differs from rank 0's.
        rank: u32,
        /// Where the two registrations differ.
        mismatch: RegistryMismatch,
    },
    /// An error reported by a PE in another process, as its text.
    #[error("{0}")]
    Remote(String),
    /// A load-balancing strategy decided something impossible; nothing moved.
    #[error("load-balancing strategy {strategy} decided an impossible move, so no element moved: {error}")]
    BadLbDecision {
        /// The strategy's name.
        strategy: String,
        /// What was wrong with its decision.
        error: DecisionError,
    },
    /// `--array-lb` names a strategy no one registered.
    #[error("--array-lb {name}: no such strategy; registered: none, {known} (Registry::balancer adds one)")]
    UnknownBalancer {
        /// The name given.
        name: String,
        /// The names registered.
        known: String,
    },
    /// An array element could not migrate (it stays put unless `reason` says it was lost).
    #[error("PE {pe}: {element} cannot migrate: {reason}")]
    Migrate {
        /// The PE that found the problem.
        pe: Pe,
        /// The element, by array and index.
        element: String,
        /// What went wrong.
        reason: MigrateError,
    },
    /// An array element could not be deleted (it stays, or was already gone).
    #[error("PE {pe}: {element} cannot be deleted: {reason}")]
    Destroy {
        /// The PE that found the problem.
        pe: Pe,
        /// The element, by array and index.
        element: String,
        /// What went wrong.
        reason: DestroyError,
    },
    /// An array element's migrating state or a message for it reached a PE that had
    /// failed (sim `--sim-kill`): the element moved or lived there, or was homed there
    /// (messages find it through its home), and what reached it is lost.
    #[error("PE {pe}: {what} of {element} reached failed PE {failed} and is lost")]
    ElementLost {
        /// The PE that sent what was lost.
        pe: Pe,
        /// The element, by array and index.
        element: String,
        /// The failed PE.
        failed: Pe,
        /// What was lost: the element's migrating state, or messages for it.
        what: String,
    },
    /// Messages a PE sent reached a PE that had failed (sim `--sim-kill`), or waited
    /// in its queue when it failed, and are lost; under `--on-error abort` the first
    /// such loss ends the job.
    #[error("PE {pe}: {messages} message(s) it sent reached failed PE {failed} and are lost; run with --on-error drop to go on past a killed PE (losses are then counted in the sim statistics' dropped)")]
    LostWithPe {
        /// The PE that sent them.
        pe: Pe,
        /// The failed PE.
        failed: Pe,
        /// How many were lost at once.
        messages: u64,
    },
    /// The job can make no more progress and never exited.
    #[error("job stalled: {0}")]
    Stalled(String),
    /// The job ended at quiescence with collectives or splits started that can never
    /// complete: some PEs of each never made their call.
    #[error("the job ended at quiescence with {0}; every PE of a collective or split must make its call (under --on-error drop this is a warning and RunReport::unfinished_collectives)")]
    Unfinished(String),
    /// An async task's owner (the array element or chare that spawned it) left its
    /// PE while the task waited; the task, which cannot move, is dropped.
    #[error("PE {pe}: a task of {owner} was dropped: its owner left the PE while it waited; finish tasks before migrating")]
    TaskOwnerLeft {
        /// The PE the task ran on.
        pe: Pe,
        /// Its owner.
        owner: String,
    },
    /// Values that cannot be used, from another PE's envelope or a caller: a tree
    /// root outside the job, a quiescence reply no wave waits for, an array shape too
    /// large, a second creation of one chare or collection. The input is dropped.
    #[error("PE {pe}: bad input: {what}")]
    BadInput {
        /// The PE that found it.
        pe: Pe,
        /// What was wrong, and where it came from.
        what: String,
    },
}

/// Two registries that should be identical (one per process) differ.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error("type registration differs at entry {index}: this process registered {local}, the other registered {remote}; every process must register the same types in the same order")]
pub struct RegistryMismatch {
    /// Position of the first differing registration.
    pub index: usize,
    /// What this process registered there (`"<none>"` if it has fewer entries).
    pub local: String,
    /// What the other process registered there.
    pub remote: String,
}

/// Why an array element could not move; it stays where it was unless the error says
/// its state was lost.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum MigrateError {
    /// `migrate_me` was called from something that is not an array element.
    #[error("only array elements migrate, and the running handler belongs to {0}")]
    NotAnElement(String),
    /// The element's type was registered with `Registry::chare`, not `migratable`.
    #[error("chare type {chare} is not migratable: register it with Registry::migratable (it must implement Migratable)")]
    NotMigratable {
        /// Registered name of the element's type.
        chare: String,
    },
    /// The destination PE does not exist.
    #[error("PE {to} does not exist (the job has {num_pes} PEs)")]
    NoSuchPe {
        /// The requested destination.
        to: Pe,
        /// PEs in the job.
        num_pes: usize,
    },
    /// `migrate_me` was called while the element was already leaving (from its
    /// `about_to_migrate`); the move under way goes on.
    #[error("it is already leaving this PE (migrate_me was called from about_to_migrate)")]
    Leaving,
    /// The element was no longer on its PE when its move was due.
    #[error("it is no longer on this PE")]
    NotHere,
    /// The element has moved `u32::MAX` times, so its moves can no longer be ordered;
    /// it stays on its PE.
    #[error("it has moved {0} times, the most a move counter holds")]
    TooManyMoves(u32),
    /// An element with the same index was already on the PE it moved to: the arriving
    /// state is dropped and the resident element kept.
    #[error(
        "an element with the same index is already on PE {pe}, so the arriving state was dropped"
    )]
    Occupied {
        /// The PE it moved to.
        pe: Pe,
    },
    /// Serializing the state failed; the element stays on its PE.
    #[error("its state did not serialize: {0}")]
    Pack(String),
    /// The element is in a load-balancing step (between `at_sync` and its resume),
    /// where the strategy decides where it goes.
    #[error(
        "it is in a load-balancing step: call migrate_me before at_sync or after resume_from_sync"
    )]
    InBalancingStep,
    /// Rebuilding the state on the new PE failed; the element is lost.
    #[error("its state did not deserialize on the new PE (the element is lost): {0}")]
    Unpack(String),
    /// At quiescence, messages were still waiting for the element on the PE it was
    /// moving to: it never arrived (its state was lost), so they are not delivered.
    #[error("it never arrived on PE {pe}, so {messages} message(s) that followed it there were not delivered")]
    Lost {
        /// The PE it was moving to.
        pe: Pe,
        /// Messages that waited for it.
        messages: u64,
    },
    /// The element deleted itself in this handler (`destroy_me`): it no longer moves.
    #[error("it deleted itself in this handler (destroy_me), so it no longer moves")]
    Destroyed,
}

/// Why an array element could not be deleted.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum DestroyError {
    /// `destroy_me` was called from something that is not an array element.
    #[error("only array elements are deleted, and the running handler belongs to {0}")]
    NotAnElement(String),
    /// The element asked to move in this handler, or is being packed to leave: it
    /// moves, and can be deleted where it arrives.
    #[error("it is migrating (migrate_me was called in this handler, or it is leaving): delete it where it arrives")]
    Migrating,
    /// The element is in a load-balancing step, whose count of elements it is part of.
    #[error("it is in a load-balancing step: delete it before at_sync or after resume_from_sync")]
    InBalancingStep,
    /// The element was deleted already (`destroy_me` twice, or a second `destroy`).
    #[error("it was deleted already")]
    AlreadyDeleted,
    /// An index that was deleted cannot be inserted again: its home stands in for it
    /// in the array's reductions.
    #[error("it was deleted, and a deleted index cannot be inserted again")]
    Reinserted,
}

/// Why a strategy's decision was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecisionError {
    /// A move names a position past the end of `LoadStats::objs`.
    #[error("move {index} names element {obj}, but there are {objs}")]
    NoSuchObject {
        /// The move's position in the decision.
        index: usize,
        /// The element it names.
        obj: u32,
        /// Elements in the statistics.
        objs: usize,
    },
    /// A move names a PE outside the job.
    #[error("move {index} sends element {obj} to PE {to}, but the job has {num_pes} PEs")]
    NoSuchPe {
        /// The move's position in the decision.
        index: usize,
        /// The element it moves.
        obj: u32,
        /// The PE it names.
        to: Pe,
        /// PEs in the job.
        num_pes: usize,
    },
    /// Two moves name the same element.
    #[error("moves {first} and {index} both move element {obj}")]
    MovedTwice {
        /// The earlier move.
        first: usize,
        /// The later move.
        index: usize,
        /// The element both name.
        obj: u32,
    },
}

/// Why `Ctx::at_sync` was refused; nothing changes for the element.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum SyncError {
    /// `at_sync` was called from something that is not an array element.
    #[error("only array elements call at_sync, and the running handler belongs to {0}")]
    NotAnElement(String),
    /// The element's type cannot move, so it cannot be balanced.
    #[error(
        "chare type {chare} is not migratable: register it with Registry::migratable to balance it"
    )]
    NotMigratable {
        /// Registered name of the element's type.
        chare: String,
    },
    /// The element already called `at_sync` in this step and has not been resumed.
    #[error("it already called at_sync in this step; wait for resume_from_sync")]
    Twice,
    /// `start_lb` without `--lb-manual` (and an `--array-lb` strategy): steps balance
    /// by their period, not by hand.
    #[error("start_lb asks for a balancing step only under --lb-manual with an --array-lb strategy; pass --lb-manual, or let --lb-period decide")]
    NotManual,
}

pub(crate) fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}
