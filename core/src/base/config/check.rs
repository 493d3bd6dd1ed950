//! `Config::validate`: every bound on a job's settings and every rule between them,
//! checked here once, in groups: the numbers' ranges, how the process was launched,
//! the flags that act on some layers only, and tracing. Clap only turns the text of
//! a flag into its type, so a configuration built in code is held to the same rules.

use super::error::ConfigError;
use super::{
    mpi_launch_size, Config, Layer, DEFAULT_PES, MAX_FAULT_HOLD_MS, MAX_LB_PERIOD,
    MAX_LB_PERIOD_SECS, MAX_PES, MAX_PES_PER_RANK, MAX_THREAD_PES, MAX_TREE_ARITY, MIN_TREE_ARITY,
    NO_ARRAY_LB,
};
use crate::base::cli::{MAX_SIM_NS_PER_BYTE, MAX_SIM_US};

/// `flag` if it was given: the name alone, as the messages have always said it.
fn given(flag: &str, set: bool) -> Option<String> {
    set.then(|| flag.to_string())
}

/// A flag that acts on some layers only, and what to say when it is given for another.
struct LayerRule {
    /// The flag with its value, if it was given.
    flag: Option<String>,
    /// The layers it acts on.
    layers: &'static [Layer],
    /// Those layers, as the user would ask for them.
    needs: &'static str,
    /// What it does there.
    why: &'static str,
    /// What to do on another layer.
    instead: &'static str,
}

impl Config {
    /// Check every value and that the layer suits how the process was started
    /// (`mpi_launch_size`); `Runtime::run` calls it, so do programs before they start.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_in(mpi_launch_size())
    }

    /// `validate` for a process started as one of `mpi_ranks` MPI ranks, if any.
    pub(super) fn validate_in(&self, mpi_ranks: Option<u32>) -> Result<(), ConfigError> {
        // Ranges first, as a parser would find them before anything else.
        self.check_whole_numbers()?;
        self.check_sim_costs()?;
        self.check_launch(mpi_ranks)?;
        self.check_layer_flags()?;
        self.check_kills()?;
        self.check_balancing()?;
        self.check_tracing()
    }

    /// `--lb-period`, `--lb-period-secs` and `--lb-manual` say when `--array-lb`
    /// balances: without one they do nothing, and one of them says it all.
    fn check_balancing(&self) -> Result<(), ConfigError> {
        let given = [
            ("--lb-period", self.lb_period.is_some()),
            ("--lb-period-secs", self.lb_period_secs.is_some()),
            ("--lb-manual", self.lb_manual),
        ];
        let mut set = given.iter().filter(|g| g.1).map(|g| g.0);
        let (first, second) = (set.next(), set.next());
        if let Some(flag) = first.filter(|_| self.array_lb == NO_ARRAY_LB) {
            return Err(ConfigError::NoEffect {
                flag,
                why: "no --array-lb strategy is chosen",
            });
        }
        if let (Some(flag), Some(other)) = (first, second) {
            return Err(ConfigError::Conflict { flag, other });
        }
        if let Some(v) = self
            .lb_period_secs
            .filter(|v| !v.is_finite() || !(0.0..=MAX_LB_PERIOD_SECS).contains(v))
        {
            return Err(ConfigError::Cost {
                flag: "--lb-period-secs",
                value: v.to_string(),
                max: MAX_LB_PERIOD_SECS as u64,
            });
        }
        Ok(())
    }

    /// Whole-number flags within their ranges, and counts that start at 1.
    fn check_whole_numbers(&self) -> Result<(), ConfigError> {
        let ranges = [
            ("--pes", Some(u64::from(self.pes)), 1, u64::from(MAX_PES)),
            (
                "--tree-arity",
                Some(u64::from(self.tree_arity)),
                u64::from(MIN_TREE_ARITY),
                u64::from(MAX_TREE_ARITY),
            ),
            (
                "--pes-per-rank",
                Some(u64::from(self.pes_per_rank)),
                1,
                u64::from(MAX_PES_PER_RANK),
            ),
            (
                "--pes-per-node",
                Some(u64::from(self.pes_per_node)),
                1,
                u64::from(MAX_PES_PER_RANK),
            ),
            (
                "--fault-hold-long-ms",
                self.fault_hold_long_ms,
                1,
                MAX_FAULT_HOLD_MS,
            ),
            (
                "--lb-period",
                self.lb_period.map(u64::from),
                1,
                u64::from(MAX_LB_PERIOD),
            ),
        ];
        for (flag, value, lo, hi) in ranges {
            if let Some(value) = value.filter(|v| !(lo..=hi).contains(v)) {
                return Err(ConfigError::OutOfRange {
                    flag,
                    value,
                    lo,
                    hi,
                });
            }
        }
        let counts = [
            (
                "--trace-flow-every",
                Some(self.trace_flow_every),
                "1 draws every message arrow",
            ),
            (
                "--fault-corrupt-every",
                self.fault_corrupt_every,
                "1 damages every user message",
            ),
        ];
        match counts.into_iter().find(|&(_, n, _)| n == Some(0)) {
            Some((flag, _, one)) => Err(ConfigError::Zero { flag, one }),
            None => Ok(()),
        }
    }

    /// The sim layer's costs: finite, and small enough to keep virtual clocks far
    /// from overflowing.
    fn check_sim_costs(&self) -> Result<(), ConfigError> {
        let (us, per_byte) = (MAX_SIM_US, MAX_SIM_NS_PER_BYTE);
        let s = &self.sim;
        let costs = [
            ("--sim-alpha-us", s.alpha_us, us),
            ("--sim-beta-ns-per-byte", s.beta_ns_per_byte, per_byte),
            ("--sim-overhead-us", s.overhead_us, us),
            ("--sim-send-overhead-us", s.send_overhead_us, us),
            ("--sim-recv-overhead-us", s.recv_overhead_us, us),
            ("--sim-gamma-ns-per-byte", s.gamma_ns_per_byte, per_byte),
            ("--sim-handler-us", s.handler_us, us),
            ("--sim-jitter-us", s.jitter_us, us),
        ];
        for (flag, value, max) in costs {
            if let Some(v) = value.filter(|v| !v.is_finite() || !(0.0..=max).contains(v)) {
                return Err(ConfigError::Cost {
                    flag,
                    value: v.to_string(),
                    max: max as u64,
                });
            }
        }
        Ok(())
    }

    /// The layer against how the process was started, and the PEs it can run.
    fn check_launch(&self, mpi_ranks: Option<u32>) -> Result<(), ConfigError> {
        if let Some(ranks) = mpi_ranks.filter(|&n| n > 1) {
            if self.layer != Layer::Mpi {
                return Err(ConfigError::NotMpiUnderMpirun {
                    ranks,
                    layer: self.layer.name(),
                });
            }
            let total = ranks.saturating_mul(self.pes_per_rank);
            if self.pes != total && self.pes != DEFAULT_PES {
                return Err(ConfigError::PesUnderMpirun {
                    pes: self.pes,
                    ranks,
                    per_rank: self.pes_per_rank,
                    total,
                });
            }
        }
        if self.layer == Layer::Mpi && !cfg!(feature = "mpi") {
            return Err(ConfigError::MpiNotBuilt);
        }
        if self.layer == Layer::Threads && self.pes > MAX_THREAD_PES {
            return Err(ConfigError::TooManyThreads {
                pes: self.pes,
                max: MAX_THREAD_PES,
            });
        }
        Ok(())
    }

    /// Flags that act on some layers only are not given for another.
    fn check_layer_flags(&self) -> Result<(), ConfigError> {
        use Layer::{Mpi, Sim, Threads};
        let rules = [
            LayerRule {
                flag: (self.pes_per_rank != 1)
                    .then(|| format!("--pes-per-rank {}", self.pes_per_rank)),
                layers: &[Mpi],
                needs: "--layer mpi",
                why: "it sets how many PEs each MPI rank runs",
                instead: "use --pes alone",
            },
            LayerRule {
                flag: (self.pes_per_node != 1)
                    .then(|| format!("--pes-per-node {}", self.pes_per_node)),
                layers: &[Threads, Sim],
                needs: "--layer threads or sim",
                why: "it groups PEs into nodes where no process does (on mpi a node is a rank)",
                instead: "on mpi, give each rank its PEs with --pes-per-rank",
            },
            LayerRule {
                flag: given("--sim-kill", !self.sim.kill.is_empty()),
                layers: &[Sim],
                needs: "--layer sim",
                why: "it stops a simulated PE at a virtual time",
                instead: "pass --layer sim, or drop it",
            },
            LayerRule {
                flag: self.sim.model_flag_given().map(str::to_string),
                layers: &[Sim],
                needs: "--layer sim",
                why: "it sets the simulated machine's network and CPU model",
                instead: "drop it, or pass --layer sim",
            },
            LayerRule {
                flag: given("--fault-corrupt-every", self.fault_corrupt_every.is_some()),
                layers: &[Threads, Mpi],
                needs: "a layer whose PEs exchange bytes, threads or mpi",
                why: "it damages messages on their way",
                instead: "on sim, fail PEs with --sim-kill",
            },
            LayerRule {
                flag: given("an injected failure", self.inject_failure.is_some()),
                layers: &[Threads],
                needs: "--layer threads",
                why: "it is the threads layer's test hook (on sim, use --sim-kill)",
                instead: "drop it",
            },
            LayerRule {
                flag: given("--fault-hold-long-ms", self.fault_hold_long_ms.is_some()),
                layers: &[Mpi],
                needs: "--layer mpi under mpirun",
                why: "it holds messages on an MPI link",
                instead: "drop it",
            },
        ];
        for rule in rules {
            if let Some(flag) = rule.flag.filter(|_| !rule.layers.contains(&self.layer)) {
                return Err(ConfigError::NeedsLayer {
                    flag,
                    needs: rule.needs,
                    why: rule.why,
                    layer: self.layer.name(),
                    instead: rule.instead,
                });
            }
        }
        Ok(())
    }

    /// `--sim-kill` names PEs of the job other than PE 0.
    fn check_kills(&self) -> Result<(), ConfigError> {
        let pes = self.pes;
        for &kill in &self.sim.kill {
            if kill.pe >= pes {
                return Err(ConfigError::KillOutside { kill, pes });
            }
            if kill.pe == 0 {
                return Err(ConfigError::KillPe0 { kill, pes });
            }
        }
        match self.inject_failure {
            Some(failure) if failure.pe == 0 || failure.pe >= pes || failure.after == 0 => {
                Err(ConfigError::BadInjectedFailure { failure, pes })
            }
            _ => Ok(()),
        }
    }

    /// `--trace-pes` and `--trace-window` select from a `--trace` within the job.
    fn check_tracing(&self) -> Result<(), ConfigError> {
        if self.trace.is_none() {
            let selections = [
                ("--trace-pes", self.trace_pes.is_some()),
                ("--trace-window", self.trace_window.is_some()),
            ];
            if let Some((flag, _)) = selections.into_iter().find(|&(_, set)| set) {
                return Err(ConfigError::SelectionWithoutTrace { flag });
            }
        }
        if let Some(pes) = &self.trace_pes {
            // On mpi the job's size comes from mpirun, and a PE past it is simply absent.
            if self.layer != Layer::Mpi && pes.max() >= self.pes {
                return Err(ConfigError::TracePeOutside {
                    pes: pes.clone(),
                    job: self.pes,
                });
            }
        }
        match self.trace_window {
            Some(window) if window.from_ns >= window.to_ns => {
                Err(ConfigError::EmptyWindow { window })
            }
            _ => Ok(()),
        }
    }
}

/// Parse a program's flags with clap and check them with `check`: a refusal is a
/// usage error (exit code 2), as the flags clap cannot parse are.
#[cfg(feature = "cli")]
pub fn parse_checked<A: clap::Parser>(check: impl Fn(&A) -> Result<(), String>) -> A {
    let mut cmd = program_command::<A>();
    let args = cmd
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|m| A::from_arg_matches(&m))
        .unwrap_or_else(|e| e.format(&mut cmd).exit());
    if let Err(e) = check(&args) {
        cmd.error(clap::error::ErrorKind::ValueValidation, e).exit();
    }
    args
}

/// `A`'s command named after the program as it was started, so usage errors and
/// `--version` say `hello`, not the package (`chorus-apps`) the binaries share.
#[cfg(feature = "cli")]
pub(super) fn program_command<A: clap::CommandFactory>() -> clap::Command {
    let cmd = A::command();
    let name = std::env::args_os().next().and_then(|a| {
        let file = std::path::Path::new(&a).file_name()?.to_str()?.to_string();
        Some(file)
    });
    match name {
        // Leaked once per process: clap keeps a command's name as `&'static str`.
        Some(name) => cmd.name(name.leak() as &'static str),
        None => cmd,
    }
}

/// Parse a program's flags with clap, the job configuration `config` finds among
/// them checked by `Config::validate`: a refusal is a usage error (exit code 2).
#[cfg(feature = "cli")]
pub fn parse_args<A: clap::Parser>(config: impl Fn(&A) -> &Config) -> A {
    parse_checked(|a: &A| config(a).validate().map_err(|e| e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::super::{KillSpec, LbPeriod, SimArgs};
    use super::*;

    #[test]
    fn a_job_started_by_mpirun_must_run_the_mpi_layer_with_the_ranks_pes() {
        let threads = Config::default();
        let err = threads
            .validate_in(Some(4))
            .expect_err("threads under mpirun");
        assert!(
            matches!(err, ConfigError::NotMpiUnderMpirun { ranks: 4, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("--layer mpi"), "{err}");
        assert!(
            threads.validate_in(Some(1)).is_ok(),
            "mpirun -n 1 runs one job"
        );
        assert!(threads.validate_in(None).is_ok());

        let mpi = Config {
            layer: Layer::Mpi,
            pes: 3,
            ..Config::default()
        };
        if cfg!(feature = "mpi") {
            let err = mpi.validate_in(Some(2)).expect_err("--pes 3 on 2 ranks");
            assert!(err.to_string().contains("pass --pes 2"), "{err}");
            let matching = Config {
                pes: 2,
                ..mpi.clone()
            };
            assert!(matching.validate_in(Some(2)).is_ok());
            let unsaid = Config {
                pes: DEFAULT_PES,
                ..mpi
            };
            assert!(
                unsaid.validate_in(Some(2)).is_ok(),
                "the default is not a claim"
            );
        } else {
            assert_eq!(mpi.validate_in(None), Err(ConfigError::MpiNotBuilt));
        }
    }

    #[test]
    fn one_flag_says_when_arrays_balance_and_only_with_a_strategy() {
        let lb = |f: fn(&mut Config)| {
            let mut c = Config {
                array_lb: "greedy".into(),
                ..Config::default()
            };
            f(&mut c);
            c
        };
        assert_eq!(lb(|c| c.lb_manual = true).lb_when(), LbPeriod::Manual);
        let secs = lb(|c| c.lb_period_secs = Some(2.5));
        assert_eq!(
            (secs.validate(), secs.lb_when()),
            (Ok(()), LbPeriod::Seconds(2.5))
        );
        assert_eq!(lb(|_| ()).lb_when(), LbPeriod::Steps(1));
        let both = lb(|c| {
            c.lb_period = Some(3);
            c.lb_manual = true;
        });
        let err = both.validate().expect_err("two periods");
        assert_eq!(
            err,
            ConfigError::Conflict {
                flag: "--lb-period",
                other: "--lb-manual"
            }
        );
        assert!(err.to_string().contains("give one of them"), "{err}");
        for bad in [f64::NAN, -1.0, f64::INFINITY, 1e9] {
            let c = lb(|c| c.lb_period_secs = Some(1.0));
            let c = Config {
                lb_period_secs: Some(bad),
                ..c
            };
            assert!(
                matches!(
                    c.validate(),
                    Err(ConfigError::Cost {
                        flag: "--lb-period-secs",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        let alone = Config {
            lb_manual: true,
            ..Config::default()
        };
        assert!(matches!(
            alone.validate(),
            Err(ConfigError::NoEffect {
                flag: "--lb-manual",
                ..
            })
        ));
    }

    #[test]
    fn pes_per_node_groups_threads_and_sim_pes_and_is_the_rank_on_mpi() {
        let with = |layer, pes_per_node| Config {
            layer,
            pes: 8,
            pes_per_node,
            pes_per_rank: if layer == Layer::Mpi { 2 } else { 1 },
            ..Config::default()
        };
        for layer in [Layer::Threads, Layer::Sim] {
            assert_eq!(with(layer, 3).validate(), Ok(()));
            assert_eq!(with(layer, 3).node_size(), 3);
            let e = with(layer, 0).validate().unwrap_err();
            assert!(e.to_string().contains("--pes-per-node"), "{e}");
        }
        let e = with(Layer::Mpi, 2).validate_in(None).unwrap_err();
        if cfg!(feature = "mpi") {
            assert!(e.to_string().contains("--pes-per-node 2 needs"), "{e}");
        }
        assert_eq!(with(Layer::Mpi, 1).node_size(), 2, "a rank's PEs");
    }

    fn traced(pes: u32) -> Config {
        Config {
            pes,
            layer: Layer::Sim,
            trace: Some("t.json".into()),
            ..Config::default()
        }
    }

    #[test]
    fn a_kill_of_pe_0_made_in_code_is_refused() {
        let mut c = Config {
            pes: 4,
            layer: Layer::Sim,
            ..Config::default()
        };
        c.sim.kill.push(KillSpec { pe: 0, at_ns: 1000 });
        let e = c.validate().unwrap_err();
        assert!(matches!(e, ConfigError::KillPe0 { pes: 4, .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("--sim-kill 0@1us: PE 0 runs main"),
            "{e}"
        );
        c.sim.kill[0].pe = 3;
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn an_injected_failure_is_the_threads_layers_and_names_a_pe_other_than_0() {
        use crate::base::config::InjectedFailure;
        let with = |layer, pe, after| Config {
            layer,
            pes: 4,
            inject_failure: Some(InjectedFailure { pe, after }),
            ..Config::default()
        };
        assert_eq!(with(Layer::Threads, 3, 1).validate(), Ok(()));
        for (pe, after) in [(0, 5), (4, 5), (2, 0)] {
            assert!(
                matches!(
                    with(Layer::Threads, pe, after).validate(),
                    Err(ConfigError::BadInjectedFailure { .. })
                ),
                "PE {pe} after {after}"
            );
        }
        assert!(matches!(
            with(Layer::Sim, 3, 1).validate(),
            Err(ConfigError::NeedsLayer { .. })
        ));
    }

    #[test]
    fn numbers_out_of_range_name_the_flag_the_value_and_the_range() {
        let c = Config {
            tree_arity: 1,
            ..Config::default()
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "--tree-arity must be in 2..=64, got 1"
        );
        let c = Config {
            trace_flow_every: 0,
            ..Config::default()
        };
        assert!(matches!(
            c.validate(),
            Err(ConfigError::Zero {
                flag: "--trace-flow-every",
                ..
            })
        ));
        let mut c = Config::with_pes(4);
        c.sim.jitter_us = Some(f64::NAN);
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("--sim-jitter-us") && e.contains("0..=1000000"),
            "{e}"
        );
    }

    #[test]
    fn the_sim_model_flags_are_refused_on_layers_that_ignore_them() {
        // They were accepted without a word on threads, while --sim-kill was refused.
        let set: [fn(&mut SimArgs); 4] = [
            |s| s.alpha_us = Some(2.0),
            |s| s.jitter_us = Some(1.0),
            |s| s.preset = Some(super::super::SimPreset::Cluster),
            |s| s.contention = true,
        ];
        for layer in [Layer::Threads, Layer::Mpi] {
            for f in set {
                let mut c = Config::with_pes(2);
                c.layer = layer;
                f(&mut c.sim);
                let flag = c.sim.model_flag_given().expect("given");
                let e = c.validate_in(Some(2).filter(|_| layer == Layer::Mpi));
                if layer == Layer::Mpi && !cfg!(feature = "mpi") {
                    assert_eq!(e, Err(ConfigError::MpiNotBuilt));
                    continue;
                }
                let e = e.expect_err(flag).to_string();
                assert!(
                    e.starts_with(flag) && e.contains("needs --layer sim"),
                    "{e}"
                );
                c.layer = Layer::Sim;
                assert_eq!(c.validate_in(None), Ok(()), "{flag} on sim");
            }
        }
    }

    #[test]
    fn trace_selection_is_checked() {
        let mut c = traced(64);
        c.trace_pes = Some("0..63".parse().unwrap());
        c.trace_window = Some("1ms..2ms".parse().unwrap());
        assert_eq!(c.validate(), Ok(()));

        c.trace_pes = Some("0,64".parse().unwrap());
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("--trace-pes 0,64 names PE 64"), "{e}");
        assert!(e.contains("64 PEs (0..63)"), "{e}");

        let mut c = traced(4);
        c.trace = None;
        c.trace_window = Some("..1s".parse().unwrap());
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.starts_with("--trace-window") && e.contains("--trace FILE"),
            "{e}"
        );
        c.trace_window = None;
        c.trace_pes = Some("1".parse().unwrap());
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--trace-pes"));

        let mut c = traced(4);
        c.trace_window = Some("2ms..1ms".parse().unwrap());
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "--trace-window 2ms..1ms is empty: T0 must come before T1"
        );
    }
}
