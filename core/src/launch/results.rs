//! The short way into a job: the registrations and the standard flags, and a main
//! function whose results come back to the caller as values.

use super::Runtime;
use crate::api::ctx::Ctx;
#[cfg(feature = "cli")]
use crate::api::registry::IntoRegistry;
use crate::api::result;
use crate::base::error::RuntimeError;
use crate::msg::callback::Callback;
use crate::msg::reduction::Reducible;

impl Runtime {
    /// A job with `registrations` (a `Registry`, or a function such as the
    /// `register` that `#[chare]` generates) and the configuration of the command
    /// line's standard flags and `CHORUS_*` variables; a flag that does not parse or
    /// check is a usage error (exit code 2).
    #[cfg(feature = "cli")]
    pub fn from_args(registrations: impl IntoRegistry) -> Self {
        let config = crate::base::config::Config::from_args();
        Runtime::new(registrations.into_registry(), config)
    }

    /// Run `main` on PE 0 with a callback to it; the first value delivered there ends
    /// the job and is returned (`RuntimeError::NoSingleResult` if the job ends
    /// without one).
    pub fn run_for<T: Reducible>(
        self,
        main: impl FnOnce(&mut Ctx, Callback) + Send + 'static,
    ) -> Result<T, RuntimeError> {
        let values = self.run_with_sink(true, main)?;
        let got = values.len();
        values
            .into_iter()
            .next()
            .ok_or(RuntimeError::NoSingleResult { got })
    }

    /// Run `main` on PE 0 with a callback to it, until quiescence (or an exit);
    /// returns every value delivered there, in the order they arrived.
    pub fn run_for_all<T: Reducible>(
        self,
        main: impl FnOnce(&mut Ctx, Callback) + Send + 'static,
    ) -> Result<Vec<T>, RuntimeError> {
        self.run_with_sink(false, main)
    }

    /// Register the result sink, run, and read what it kept.
    fn run_with_sink<T: Reducible>(
        mut self,
        first_ends: bool,
        main: impl FnOnce(&mut Ctx, Callback) + Send + 'static,
    ) -> Result<Vec<T>, RuntimeError> {
        let entry = result::register(&mut self.registry);
        let report = self.run(move |ctx| {
            let done = result::start(ctx, entry, first_ends);
            main(ctx, done);
            if !first_ends {
                ctx.exit_on_quiescence();
            }
        })?;
        result::values(&report)
    }
}
