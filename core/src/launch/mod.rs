//! Launch: a job's startup on each machine layer. Builds every PE (its `PeSetup`,
//! its port, its engine), runs the main function on PE 0, drives the PEs to the
//! job's exit and gathers their reports.

#[cfg(feature = "mpi")]
#[allow(unsafe_code)]
mod mpi;
#[cfg(feature = "mpi")]
mod rank_start;
mod results;
mod sim;
#[cfg(feature = "mpi")]
mod smp;
mod threads;

use crate::api::ctx::Ctx;
use crate::api::registry::Registry;
use crate::api::report::RunReport;
use crate::base::config::{is_root_process, Config, ErrorPolicy, Layer};
use crate::base::error::RuntimeError;
use crate::engine::Restart;
use std::sync::Arc;

/// A program ready to run: its registry, configuration and main function.
pub struct Job {
    pub(crate) registry: Arc<Registry>,
    pub(crate) config: Config,
    pub(crate) main: Box<dyn FnOnce(&mut Ctx) + Send>,
    /// The checkpoint of `--restart`, read and checked whole before any PE starts.
    pub(crate) restart: Option<Arc<Restart>>,
}

/// A way of running PEs: threads, simulation or MPI ranks.
pub trait MachineLayer {
    /// Lower-case name of the layer.
    fn name(&self) -> &'static str;
    /// Run the job to its exit.
    fn run(&self, job: Job) -> Result<RunReport, RuntimeError>;
}

/// A configured job: registry plus configuration, ready to run a main function.
pub struct Runtime {
    registry: Registry,
    config: Config,
}

impl Runtime {
    /// A job with these registrations and settings.
    pub fn new(registry: Registry, config: Config) -> Self {
        Runtime { registry, config }
    }

    /// Run `main` on PE 0, then every PE until the job exits.
    pub fn run(
        self,
        main: impl FnOnce(&mut Ctx) + Send + 'static,
    ) -> Result<RunReport, RuntimeError> {
        self.config.validate()?;
        self.check_balancer()?;
        let log = crate::base::logging::init(&self.config)?;
        let job = tracing::info_span!("chorus_job", layer = ?self.config.layer).entered();
        let layer: Box<dyn MachineLayer> = match self.config.layer {
            Layer::Threads => Box::new(threads::Threads),
            Layer::Sim => Box::new(sim::Sim),
            #[cfg(feature = "mpi")]
            Layer::Mpi => Box::new(mpi::Mpi),
            #[cfg(not(feature = "mpi"))]
            Layer::Mpi => unreachable!("validate() rejects --layer mpi without the mpi feature"),
        };
        let restart = self.load_restart()?;
        let stats = self.config.stats;
        let policy = self.config.on_error;
        let result = layer.run(Job {
            registry: Arc::new(self.registry),
            config: self.config,
            main: Box::new(main),
            restart,
        });
        let result = result.and_then(|r| check_unfinished(r, policy));
        if let (Some(format), Ok(report)) = (stats, &result) {
            eprintln!("{}", report.stats(format));
        }
        drop(job);
        // The run's own error comes first; a debug trace that could not be written
        // fails a run that succeeded.
        let logged = log.finish();
        let report = result?;
        logged.map(|()| report)
    }
}

impl Runtime {
    /// The checkpoint `--restart` names, for the job's PE count (on mpi, every
    /// rank's PEs), or a typed error before anything runs.
    fn load_restart(&self) -> Result<Option<Arc<Restart>>, RuntimeError> {
        let Some(dir) = &self.config.restart else {
            return Ok(None);
        };
        let npes = match (self.config.layer, crate::base::config::mpi_launch_size()) {
            (Layer::Mpi, Some(ranks)) => ranks as usize * self.config.pes_per_rank as usize,
            _ => self.config.pes as usize,
        };
        Ok(Some(Arc::new(Restart::load(dir, &self.registry, npes)?)))
    }

    /// `--array-lb` names a registered strategy (or none).
    fn check_balancer(&self) -> Result<(), RuntimeError> {
        let name = &self.config.array_lb;
        if name == crate::base::config::NO_ARRAY_LB || self.registry.find_balancer(name).is_some() {
            return Ok(());
        }
        Err(RuntimeError::UnknownBalancer {
            name: name.clone(),
            known: self.registry.balancer_names().join(", "),
        })
    }
}

/// A job that ended at quiescence with collectives unfinished: the error under
/// `--on-error abort`, one warning under `drop` (Reliability: never silently).
fn check_unfinished(report: RunReport, policy: ErrorPolicy) -> Result<RunReport, RuntimeError> {
    let Some(summary) = report.unfinished_summary() else {
        return Ok(report);
    };
    match policy {
        ErrorPolicy::Abort => Err(RuntimeError::Unfinished(summary)),
        ErrorPolicy::Drop => {
            // Every rank has the whole report: one of them says it.
            if is_root_process() {
                tracing::warn!("the job ended at quiescence with {summary}");
            }
            Ok(report)
        }
    }
}

/// Turn a finished run into the caller's result: the first error if the job aborted.
pub(crate) fn finish_run(report: RunReport) -> Result<RunReport, RuntimeError> {
    if report.per_pe.iter().any(|p| p.aborted) {
        let first = report
            .per_pe
            .iter()
            .flat_map(|p| p.errors.iter())
            .next()
            .cloned();
        return Err(first.unwrap_or(RuntimeError::Aborted));
    }
    Ok(report)
}
