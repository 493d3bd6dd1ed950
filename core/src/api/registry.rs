//! Explicit registration of chare types, callback entries, reducers and array maps.
//!
//! Every process of a job must register the same things in the same order: ids are
//! positions in these tables, and `manifest`/`verify_peer` catch a mismatch at startup.

use crate::api::balance::ArrayStrategy;
use crate::api::chare::{construct, AnyChare, Chare};
use crate::api::ctx::Ctx;
use crate::api::migration::{Checkpointable, Checkpointer, LoadFn, Migratable, Saver};
use crate::base::error::{panic_message, RegistryMismatch, RuntimeError};
use crate::base::ids::{IndexKey, Pe};
use crate::msg::array::{ArrayIndex, ArrayMap};
use crate::msg::payload::Payload;
use crate::msg::reduction::{CustomReducer, RedData, Reducer, Reducible};
use serde::{Deserialize, Serialize};
use std::any::TypeId;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

type Constructor = fn(Payload, &mut Ctx) -> Result<Box<dyn AnyChare>, RuntimeError>;
type EntryBuilder = Box<dyn Fn(RedData) -> Result<Payload, String> + Send + Sync>;
type MapFn = Box<dyn Fn(&IndexKey, usize) -> Result<Pe, String> + Send + Sync>;

/// Serialize an element in place (its `about_to_migrate` runs first).
pub(crate) type PackFn = fn(&mut dyn AnyChare, &mut Ctx) -> Result<Payload, String>;
/// Rebuild an element from its state (its `migrated` runs after).
pub(crate) type UnpackFn = fn(Payload, &mut Ctx) -> Result<Box<dyn AnyChare>, String>;
/// Run an element's `resume_from_sync`.
pub(crate) type ResumeFn = fn(&mut dyn AnyChare, &mut Ctx);
/// An element's expected load for the next period, from the measured one.
pub(crate) type PredictFn = fn(&mut dyn AnyChare, f64, &Ctx) -> f64;

/// How one migratable chare type moves (`Migrator::of`, in `migration.rs`, makes one).
#[derive(Clone, Copy)]
pub(crate) struct Migrator {
    pub(crate) pack: PackFn,
    pub(crate) unpack: UnpackFn,
    pub(crate) resume: ResumeFn,
    pub(crate) predict: PredictFn,
    /// Serialize an element for a checkpoint (no hook runs).
    pub(crate) save: Saver,
    /// Rebuild an element from a checkpoint (no hook runs).
    pub(crate) load: LoadFn,
}

pub(crate) struct ChareType {
    pub(crate) name: String,
    pub(crate) construct: Constructor,
    /// How its elements move, if the type was registered as migratable.
    pub(crate) migrate: Option<Migrator>,
    /// How its group members are checkpointed, if registered as checkpointable.
    pub(crate) checkpoint: Option<Checkpointer>,
}

pub(crate) struct EntryInfo {
    pub(crate) name: String,
    pub(crate) build: EntryBuilder,
    /// The chare type and the argument type, so a lookup by name stays typed.
    types: (TypeId, TypeId),
}

/// A registered entry of chare `C` that takes a `T`: the target of callbacks.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Entry<C, T> {
    pub(crate) id: u32,
    #[serde(skip)]
    _p: PhantomData<fn(T) -> C>,
}

impl<C, T> Clone for Entry<C, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C, T> Copy for Entry<C, T> {}
impl<C, T> std::fmt::Debug for Entry<C, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Entry#{}", self.id)
    }
}

/// The types, entries, reducers and maps a job uses.
#[derive(Default)]
pub struct Registry {
    pub(crate) chares: Vec<ChareType>,
    by_type: HashMap<TypeId, u32>,
    pub(crate) entries: Vec<EntryInfo>,
    reducers: Vec<CustomReducer>,
    maps: Vec<MapFn>,
    balancers: Vec<Arc<dyn ArrayStrategy>>,
    manifest: Vec<String>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register chare type `C` under a name; registering a type twice is a no-op.
    pub fn chare<C: Chare>(&mut self, name: &str) -> &mut Self {
        if self.by_type.contains_key(&TypeId::of::<C>()) {
            return self;
        }
        self.by_type
            .insert(TypeId::of::<C>(), self.chares.len() as u32);
        self.chares.push(ChareType {
            name: name.to_string(),
            construct: construct::<C>,
            migrate: None,
            checkpoint: None,
        });
        self.manifest.push(format!(
            "chare {name} ({}, msg {}, init {})",
            std::any::type_name::<C>(),
            std::any::type_name::<C::Msg>(),
            std::any::type_name::<C::Init>()
        ));
        self
    }

    /// Register chare type `C` as one whose array elements may migrate
    /// (`Ctx::migrate_me`); registering it with `chare` first is allowed.
    pub fn migratable<C: Migratable>(&mut self, name: &str) -> &mut Self {
        self.chare::<C>(name);
        let t = self.by_type.get(&TypeId::of::<C>()).copied();
        if let Some(t) = t.and_then(|t| self.chares.get_mut(t as usize)) {
            if t.migrate.is_none() {
                t.migrate = Some(Migrator::of::<C>());
                self.manifest.push(format!("migratable {name}"));
            }
        }
        self
    }

    /// Register group type `C` as one a checkpoint saves and a restart rebuilds
    /// (`Ctx::checkpoint`); registering it with `chare` first is allowed.
    pub fn checkpointable<C: Checkpointable>(&mut self, name: &str) -> &mut Self {
        self.chare::<C>(name);
        let t = self.by_type.get(&TypeId::of::<C>()).copied();
        if let Some(t) = t.and_then(|t| self.chares.get_mut(t as usize)) {
            if t.checkpoint.is_none() {
                t.checkpoint = Some(Checkpointer::of::<C>());
                self.manifest.push(format!("checkpointable {name}"));
            }
        }
        self
    }

    /// Register an entry of `C` taking a `T`, built by `wrap` (usually an enum variant).
    pub fn entry<C: Chare, T: Reducible>(
        &mut self,
        name: &str,
        wrap: fn(T) -> C::Msg,
    ) -> Entry<C, T> {
        let id = self.entries.len() as u32;
        self.entries.push(EntryInfo {
            name: name.to_string(),
            build: Box::new(move |d| T::from_data(d).map(|v| Payload::new(wrap(v)))),
            types: (TypeId::of::<C>(), TypeId::of::<T>()),
        });
        self.manifest.push(format!(
            "entry {name} ({} takes {})",
            std::any::type_name::<C>(),
            std::any::type_name::<T>()
        ));
        Entry {
            id,
            _p: PhantomData,
        }
    }

    /// The entry of `C` taking a `T` registered under `name`, if there is one: lets a
    /// library chare find an entry its `register` added without threading it through
    /// every caller.
    pub fn find_entry<C: Chare, T: Reducible>(&self, name: &str) -> Option<Entry<C, T>> {
        let want = (TypeId::of::<C>(), TypeId::of::<T>());
        let id = self
            .entries
            .iter()
            .position(|e| e.name == name && e.types == want)?;
        Some(Entry {
            id: id as u32,
            _p: PhantomData,
        })
    }

    /// Register a custom reducer; it must be associative.
    pub fn reducer(&mut self, name: &str, f: CustomReducer) -> Reducer {
        let id = self.reducers.len() as u32;
        self.reducers.push(f);
        self.manifest.push(format!("reducer {name}"));
        Reducer::Custom(id)
    }

    /// Register a custom array map from index to PE.
    pub fn map<I: ArrayIndex>(&mut self, name: &str, f: fn(&I, usize) -> Pe) -> ArrayMap {
        let id = self.maps.len() as u32;
        let label = name.to_string();
        self.maps.push(Box::new(move |key, npes| {
            let index: I = bincode::deserialize(key.as_bytes()).map_err(|e| {
                format!("index bytes are not a {}: {e}", std::any::type_name::<I>())
            })?;
            // The map runs wherever elements are placed or routed, often outside any
            // handler's guard: a panic becomes this error instead of killing the PE.
            catch_unwind(AssertUnwindSafe(|| f(&index, npes)))
                .map_err(|p| format!("array map {label} panicked: {}", panic_message(p)))
        }));
        self.manifest
            .push(format!("map {name} ({})", std::any::type_name::<I>()));
        ArrayMap::Custom(id)
    }

    /// Register a load-balancing strategy for chare arrays, chosen with `--array-lb`
    /// by its name; a later one of the same name replaces it.
    pub fn balancer(&mut self, strategy: impl ArrayStrategy) -> &mut Self {
        let name = strategy.name().to_string();
        self.balancers.retain(|b| b.name() != name);
        self.balancers.push(Arc::new(strategy));
        self.manifest.push(format!("balancer {name}"));
        self
    }

    /// The strategy registered under `name`.
    pub(crate) fn find_balancer(&self, name: &str) -> Option<Arc<dyn ArrayStrategy>> {
        self.balancers.iter().find(|b| b.name() == name).cloned()
    }

    /// The names of the registered strategies, in registration order.
    pub fn balancer_names(&self) -> Vec<String> {
        self.balancers
            .iter()
            .map(|b| b.name().to_string())
            .collect()
    }

    /// Registry position of chare type `C`.
    pub(crate) fn type_index<C: Chare>(&self) -> Result<u32, RuntimeError> {
        self.by_type
            .get(&TypeId::of::<C>())
            .copied()
            .ok_or(RuntimeError::UnregisteredChare {
                name: std::any::type_name::<C>(),
            })
    }

    pub(crate) fn custom_reducer(&self, id: u32) -> Option<CustomReducer> {
        self.reducers.get(id as usize).copied()
    }

    pub(crate) fn custom_map(&self, id: u32, key: &IndexKey, npes: usize) -> Result<Pe, String> {
        let f = self
            .maps
            .get(id as usize)
            .ok_or_else(|| format!("array map {id} is not registered"))?;
        f(key, npes)
    }

    /// One line per registration, in order; equal manifests mean compatible processes.
    pub fn manifest(&self) -> &[String] {
        &self.manifest
    }

    /// A fixed 64-bit digest of the manifest (FNV-1a), cheap to compare across ranks.
    pub fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for line in &self.manifest {
            for b in line.bytes().chain(std::iter::once(b'\n')) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }

    /// Compare with another process's manifest; the error names the first difference.
    pub fn verify_peer(&self, remote: &[String]) -> Result<(), RegistryMismatch> {
        Self::compare(&self.manifest, remote)
    }

    /// Compare two manifests (`local` first); the error names the first difference.
    pub fn compare(local: &[String], remote: &[String]) -> Result<(), RegistryMismatch> {
        let n = local.len().max(remote.len());
        for i in 0..n {
            let (l, r) = (local.get(i), remote.get(i));
            if l != r {
                let show = |s: Option<&String>| s.cloned().unwrap_or_else(|| "<none>".into());
                return Err(RegistryMismatch {
                    index: i,
                    local: show(l),
                    remote: show(r),
                });
            }
        }
        Ok(())
    }
}

/// What `Runtime::from_args` takes the job's registrations from: a `Registry`, a
/// `&mut Registry` (taken, leaving it empty), or a function that registers into a
/// new one (`Counter::register`, what `#[chare]` generates).
pub trait IntoRegistry {
    /// The registrations.
    fn into_registry(self) -> Registry;
}

impl IntoRegistry for Registry {
    fn into_registry(self) -> Registry {
        self
    }
}

impl IntoRegistry for &mut Registry {
    fn into_registry(self) -> Registry {
        std::mem::take(self)
    }
}

impl<F: FnOnce(&mut Registry) -> &mut Registry> IntoRegistry for F {
    fn into_registry(self) -> Registry {
        let mut reg = Registry::new();
        self(&mut reg);
        reg
    }
}
