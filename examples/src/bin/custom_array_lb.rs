//! custom_array_lb: a load-balancing strategy of your own for chare arrays, chosen
//! with `--array-lb`. `HeaviestRoundRobin` deals the elements, heaviest first, to
//! the PEs in turn (least background load first); a 1-D array whose first quarter is
//! 8 times heavier (all on PE 0 at the start) calls `ctx.at_sync()` after each step
//! and goes on in `resume_from_sync`, and its result is the same wherever it ran.
//!
//! ```sh
//! cargo run -p chorus-examples --bin custom_array_lb -- --pes 4
//! cargo run -p chorus-examples --bin custom_array_lb -- --layer sim --pes 4 --array-lb heaviest-rr
//! ```
//!
//! With `--array-lb none` the first prints `max/avg PE load in the last step 2.91`:
//! PE 0 has all eight heavy elements. When the runtime balances at `at_sync`,
//! `heaviest-rr` moves them so every PE has two heavy and six light (1.00).

use chorus_core::{ArrayMap, ArrayStrategy, Callback, Chare, Config, Ctx, Entry, LoadStats};
use chorus_core::{Migratable, Move, Pe, Reducer, Registry, Runtime};
use clap::Parser;
use serde::{Deserialize, Serialize};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(version, about = "a user-written array load-balancing strategy")]
struct Args {
    /// Elements in the array.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=4096))]
    elements: u64,
    /// Steps; the elements call at_sync after each but the last.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=1000))]
    steps: u32,
    #[command(flatten)]
    chorus: Config,
}

/// The strategy: sort the elements by load, heaviest first, and deal them to the
/// PEs in turn, the PE with the least background load first.
struct HeaviestRoundRobin;

impl ArrayStrategy for HeaviestRoundRobin {
    fn name(&self) -> &str {
        "heaviest-rr"
    }

    fn decide(&self, stats: &LoadStats) -> Vec<Move> {
        if stats.num_pes == 0 {
            return Vec::new();
        }
        let background = |pe: usize| stats.background.get(pe).copied().unwrap_or(0.0);
        let mut pes: Vec<usize> = (0..stats.num_pes).collect();
        pes.sort_by(|&a, &b| background(a).total_cmp(&background(b)).then(a.cmp(&b)));
        let mut objs: Vec<usize> = (0..stats.objs.len()).collect();
        // Ties keep their position order, so the decision is the same on every run.
        objs.sort_by(|&a, &b| stats.objs[b].load.total_cmp(&stats.objs[a].load));
        objs.iter()
            .enumerate()
            .map(|(k, &obj)| Move {
                obj: obj as u32,
                to: pes[k % pes.len()] as Pe,
            })
            .collect()
    }
}

/// Base cost of one element's step.
const STEP_US: u64 = 100;

/// What element `i` of `n` costs per step, microseconds: the first quarter 8x.
fn load_us(i: u64, n: u64) -> u64 {
    if i < n.div_ceil(4) {
        8 * STEP_US
    } else {
        STEP_US
    }
}

/// Element `i`'s value after one more step: a stand-in for real work whose result
/// does not depend on where it runs.
fn next_value(x: u64, i: u64, step: u32) -> u64 {
    x.wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(i + u64::from(step))
}

/// One element; all of it travels when the strategy moves it.
#[derive(Serialize, Deserialize)]
struct Worker {
    init: WorkerInit,
    step: u32,
    value: u64,
    moves: u64,
}

#[derive(Clone, Serialize, Deserialize)]
struct WorkerInit {
    elements: u64,
    steps: u32,
    done: Callback,
}

impl Chare for Worker {
    type Init = WorkerInit;
    /// The one entry: run the next step.
    type Msg = ();

    fn create(init: WorkerInit, _: &mut Ctx) -> Self {
        Worker {
            init,
            step: 0,
            value: 0,
            moves: 0,
        }
    }

    fn handle(&mut self, (): (), ctx: &mut Ctx) {
        self.run_step(ctx);
    }
}

impl Migratable for Worker {
    fn migrated(&mut self, _: &mut Ctx) {
        self.moves += 1;
    }

    // Every element goes on here once the balancing step is over, on its new PE:
    // as Charm++ programs do (`thisProxy[thisIndex].step()`), it sends itself the
    // next step, which then runs as an ordinary handler.
    fn resume_from_sync(&mut self, ctx: &mut Ctx) {
        let me = ctx.this_index::<usize>().expect("a 1-D element");
        match ctx.this_array::<Worker, usize>() {
            Some(workers) => workers.send(ctx, &me, ()),
            None => ctx.fail("custom_array_lb", "a worker is not an array element"),
        }
    }
}

impl Worker {
    /// Compute one step (its cost declared to the runtime, which measures it), then
    /// wait for the others at `at_sync`, or after the last step report.
    fn run_step(&mut self, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("a 1-D element") as u64;
        let us = load_us(i, self.init.elements);
        ctx.work(Duration::from_micros(us));
        self.value = next_value(self.value, i, self.step);
        self.step += 1;
        if self.step < self.init.steps {
            if let Err(e) = ctx.at_sync() {
                ctx.fail("custom_array_lb", e);
            }
            return;
        }
        // [value, moves, then per PE the load of this last step in us]: summed.
        let mut v = vec![self.value, self.moves];
        v.extend((0..ctx.num_pes()).map(|p| if p == ctx.my_pe() as usize { us } else { 0 }));
        ctx.contribute(v, Reducer::Sum, self.init.done.clone());
    }
}

/// Prints the result, checked against the same steps computed here.
struct Main {
    elements: u64,
    steps: u32,
}

impl Chare for Main {
    type Init = (WorkerInit, Entry<Main, Vec<u64>>);
    type Msg = Vec<u64>;

    fn create((mut init, done): Self::Init, ctx: &mut Ctx) -> Self {
        let me = ctx.this_chare::<Main>().expect("Main is a singleton chare");
        init.done = Callback::chare(&me, done);
        let (elements, steps) = (init.elements, init.steps);
        let workers = ctx.create_array_1d::<Worker>(elements as usize, init, ArrayMap::Block);
        workers.broadcast(ctx, ());
        Main { elements, steps }
    }

    fn handle(&mut self, v: Vec<u64>, ctx: &mut Ctx) {
        let expected = (0..self.elements).fold(0u64, |sum, i| {
            let x = (0..self.steps).fold(0, |x, s| next_value(x, i, s));
            sum.wrapping_add(x)
        });
        let loads: Vec<f64> = v[2..].iter().map(|&l| l as f64).collect();
        let mean = loads.iter().sum::<f64>() / loads.len() as f64;
        let max = loads.iter().copied().fold(0.0, f64::max);
        println!("{} elements, {} steps", self.elements, self.steps);
        println!("checksum {:016x} (expected {expected:016x})", v[0]);
        println!("moves {}", v[1]);
        println!("max/avg PE load in the last step {:.2}", max / mean);
        ctx.exit();
    }
}

fn main() -> ExitCode {
    let args: Args = chorus_core::config::parse_args(|a: &Args| &a.chorus);
    let mut reg = Registry::new();
    // Registered under its name, it is what `--array-lb heaviest-rr` chooses.
    reg.balancer(HeaviestRoundRobin);
    reg.migratable::<Worker>("Worker").chare::<Main>("Main");
    let done = reg.entry::<Main, Vec<u64>>("Main::done", |v| v);
    let init = WorkerInit {
        elements: args.elements,
        steps: args.steps,
        done: Callback::Exit,
    };
    match Runtime::new(reg, args.chorus).run(move |ctx| {
        ctx.create_chare::<Main>((init, done), 0);
    }) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("custom_array_lb: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::api::balance::check_decision;
    use chorus_core::ids::IndexKey;
    use chorus_core::ObjLoad;

    /// The example's array at its start: `n` elements in blocks on `pes` PEs.
    fn stats(n: u64, pes: usize) -> LoadStats {
        let per = n.div_ceil(pes as u64);
        LoadStats {
            num_pes: pes,
            objs: (0..n)
                .map(|i| ObjLoad {
                    key: IndexKey::new(&i.to_le_bytes()),
                    pe: (i / per) as Pe,
                    load: load_us(i, n) as f64 * 1e-6,
                })
                .collect(),
            background: vec![0.0; pes],
            comm: Vec::new(),
        }
    }

    /// The statistics after `moves`.
    fn after(mut s: LoadStats, moves: &[Move]) -> LoadStats {
        for m in moves {
            s.objs[m.obj as usize].pe = m.to;
        }
        s
    }

    #[test]
    fn the_decision_is_valid_and_balances_the_example() {
        let s = stats(32, 4);
        assert!((s.max_over_avg() - 64.0 / 22.0).abs() < 1e-9);
        let moves = check_decision(&s, HeaviestRoundRobin.decide(&s)).expect("a valid decision");
        assert!(!moves.is_empty());
        assert!((after(s, &moves).max_over_avg() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn background_load_gets_the_heaviest_element_last() {
        let mut s = stats(3, 3);
        s.background = vec![5.0, 0.0, 1.0];
        let moves = check_decision(&s, HeaviestRoundRobin.decide(&s)).expect("a valid decision");
        // Element 0 (heaviest) to PE 1, then 1 to PE 2, then 2 to PE 0.
        let placed = after(s, &moves);
        let pes: Vec<Pe> = placed.objs.iter().map(|o| o.pe).collect();
        assert_eq!(pes, vec![1, 2, 0]);
    }

    #[test]
    fn nothing_to_place_decides_nothing() {
        let s = LoadStats {
            num_pes: 2,
            ..LoadStats::default()
        };
        assert!(HeaviestRoundRobin.decide(&s).is_empty());
        assert!(HeaviestRoundRobin.decide(&LoadStats::default()).is_empty());
    }
}
