//! `chorus-bench charm-pingpong`: Charm++'s `benchmarks/charm++/pingpong`, the 1-D
//! array and group rows. Two array elements (0 on PE 0, 1 on PE 1 % P) bounce one
//! message of `--payload` bytes `--iterations` times; then group member 0 sends to
//! member 1 % P and back. Each run is done twice, an untimed warm-up first, as the
//! original does, and prints the original's "Roundtrip time for ... is X us" lines.

use super::{output, show, CharmError};
use crate::bench::report::Report;
use chorus_core::{ArrayMap, ArrayProxy, Bytes, Chare, ChareProxy, Config, Ctx, GroupProxy};
use chorus_core::{Registry, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The flags of `chorus-bench charm-pingpong` (the original's `[payload] [iterations]`).
#[derive(Debug, Clone, clap::Args)]
pub struct PingpongArgs {
    /// The job (threads beside Charm++ multicore; mpi under mpirun beside its mpi build).
    #[command(flatten)]
    pub config: Config,
    /// Bytes in the message (the original's default).
    #[arg(long, default_value_t = 100)]
    pub payload: usize,
    /// Round trips per timed run (the original's default).
    #[arg(long, default_value_t = 1000)]
    pub iterations: u32,
    /// Print one JSON object instead of the original's lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// The round trips measured.
#[derive(Debug, Clone, Serialize)]
pub struct PingpongReport {
    /// Bytes per message.
    pub payload: usize,
    /// Round trips per run.
    pub iterations: u32,
    /// Microseconds per round trip between two 1-D array elements.
    pub array_us: f64,
    /// Microseconds per round trip between two group members.
    pub group_us: f64,
}

/// One side of the ping-pong: an array element or a group member.
struct Ping {
    payload: usize,
    iterations: u32,
    main: ChareProxy<Main>,
    niter: u32,
    start: f64,
    timed: bool,
}

#[derive(Clone, Serialize, Deserialize)]
enum PingMsg {
    /// Start a run (element 0 or member 0 only); `timed` says whether it reports.
    Start { timed: bool },
    /// The message bouncing.
    Recv(Bytes),
}

impl Ping {
    /// Send the ball on: to the other array element, or to the next group member.
    fn pass(&self, ctx: &mut Ctx, ball: Bytes) {
        if let (Some(arr), Some(i)) = (ctx.this_array::<Ping, usize>(), ctx.this_index_1d()) {
            arr.send(ctx, &(1 - i), PingMsg::Recv(ball));
        } else if let Some(g) = ctx.this_group::<Ping>() {
            let next = (ctx.my_pe() + 1) % ctx.num_pes() as u32;
            g.send(ctx, next, PingMsg::Recv(ball));
        }
    }

    /// Whether this side counts the round trips: element 0, or member 0.
    fn counts(&self, ctx: &Ctx) -> bool {
        ctx.this_index_1d().map_or(ctx.my_pe() == 0, |i| i == 0)
    }

    fn back(&mut self, ctx: &mut Ctx, ball: Bytes) {
        self.niter += 1;
        if self.niter < self.iterations {
            return self.pass(ctx, ball);
        }
        let elapsed = ctx.now() - self.start;
        // A group on one PE counts each half trip: the original halves the count.
        let trips = match (ctx.this_index_1d(), ctx.num_pes()) {
            (None, 1) => self.iterations / 2,
            _ => self.iterations,
        };
        self.niter = 0;
        let us = 1e6 * elapsed / f64::from(trips.max(1));
        self.main.send(
            ctx,
            MainMsg::Done {
                us,
                timed: self.timed,
            },
        );
    }
}

impl Chare for Ping {
    /// Payload bytes, round trips, and the main chare to tell.
    type Init = (usize, u32, ChareProxy<Main>);
    type Msg = PingMsg;
    fn create((payload, iterations, main): Self::Init, _: &mut Ctx) -> Self {
        Ping {
            payload,
            iterations,
            main,
            niter: 0,
            start: 0.0,
            timed: false,
        }
    }
    fn handle(&mut self, msg: PingMsg, ctx: &mut Ctx) {
        match msg {
            PingMsg::Start { timed } => {
                self.timed = timed;
                self.niter = 0;
                // As the original: the message is made before the clock starts, and
                // an array element's first send goes before it too (a zeroed 1 MiB
                // made inside the timed run cost a memset, 2 us a round trip).
                let ball = Bytes::from(vec![0u8; self.payload]);
                if ctx.this_index_1d().is_some() {
                    self.pass(ctx, ball);
                    self.start = ctx.now();
                } else {
                    self.start = ctx.now();
                    self.pass(ctx, ball);
                }
            }
            PingMsg::Recv(ball) if ball.len() != self.payload => {
                let got = ball.len();
                ctx.fail(
                    "charm-pingpong",
                    format!("a message of {got} bytes arrived, {} sent", self.payload),
                );
            }
            PingMsg::Recv(ball) if self.counts(ctx) => self.back(ctx, ball),
            PingMsg::Recv(ball) => self.pass(ctx, ball),
        }
    }
}

/// Runs the phases in the original's order: array warm-up and timed, group warm-up
/// and timed.
struct Main {
    payload: usize,
    iterations: u32,
    array: Option<ArrayProxy<Ping, usize>>,
    group: Option<GroupProxy<Ping>>,
}

#[derive(Clone, Serialize, Deserialize)]
enum MainMsg {
    Go,
    Done { us: f64, timed: bool },
}

impl Chare for Main {
    type Init = (usize, u32);
    type Msg = MainMsg;
    fn create((payload, iterations): Self::Init, _: &mut Ctx) -> Self {
        Main {
            payload,
            iterations,
            array: None,
            group: None,
        }
    }
    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        let Some(me) = ctx.this_chare::<Main>() else {
            return;
        };
        let init = (self.payload, self.iterations, me);
        match msg {
            MainMsg::Go if ctx.num_pes() > 2 => {
                ctx.fail("charm-pingpong", "run it on 1 or 2 PEs, as the original");
            }
            MainMsg::Go => {
                let arr = ctx.create_array_1d::<Ping>(2, init, ArrayMap::Block);
                arr.send(ctx, &0, PingMsg::Start { timed: false });
                self.array = Some(arr);
            }
            MainMsg::Done { timed: false, .. } => self.start_timed(ctx),
            MainMsg::Done { us, timed: true } if self.group.is_none() => {
                ctx.publish("array_us", &us);
                let g = ctx.create_group::<Ping>(init);
                g.send(ctx, 0, PingMsg::Start { timed: false });
                self.group = Some(g);
            }
            MainMsg::Done { us, timed: true } => {
                ctx.publish("group_us", &us);
                ctx.exit();
            }
        }
    }
}

impl Main {
    /// Start the timed run of the phase whose warm-up just finished.
    fn start_timed(&self, ctx: &mut Ctx) {
        let timed = true;
        match (&self.group, &self.array) {
            (Some(g), _) => g.send(ctx, 0, PingMsg::Start { timed }),
            (None, Some(a)) => a.send(ctx, &0, PingMsg::Start { timed }),
            (None, None) => {}
        }
    }
}

/// The parameters the original refuses too.
fn validate(payload: usize, iterations: u32) -> Result<(), CharmError> {
    if iterations == 0 || payload == 0 {
        return Err(CharmError::Usage {
            bench: "charm-pingpong",
            what: "give --payload and --iterations above 0 (as the original)".into(),
        });
    }
    super::at_most(
        "charm-pingpong",
        "--payload",
        payload,
        super::MAX_MESSAGE_BYTES,
    )
}

impl PingpongArgs {
    /// A usage error in the flags (exit status 2).
    pub fn check(&self) -> Result<(), String> {
        validate(self.payload, self.iterations).map_err(|e| e.to_string())
    }
}

/// Run both phases on the job `config` describes.
pub fn run(config: &Config, payload: usize, iterations: u32) -> Result<PingpongReport, CharmError> {
    validate(payload, iterations)?;
    let mut reg = Registry::new();
    reg.chare::<Main>("Main").chare::<Ping>("Ping");
    let report = Runtime::new(reg, config.clone()).run(move |ctx| {
        let main = ctx.create_chare::<Main>((payload, iterations), 0);
        main.send(ctx, MainMsg::Go);
    })?;
    Ok(PingpongReport {
        payload,
        iterations,
        array_us: output(&report, "array_us", "the array round trip")?,
        group_us: output(&report, "group_us", "the group round trip")?,
    })
}

/// `chorus-bench charm-pingpong`.
pub fn measure(args: &PingpongArgs) -> Result<(), String> {
    show(&args.config, args.json, || {
        run(&args.config, args.payload, args.iterations)
    })
}

impl Report for PingpongReport {
    fn json(&self) -> String {
        json!(self).to_string()
    }
    fn table(&self) -> String {
        format!(
            "Pingpong with payload: {} iterations: {}\n\
             Roundtrip time for 1D Arrays is {:.6} us\n\
             Roundtrip time for Groups is {:.6} us\n",
            self.payload, self.iterations, self.array_us, self.group_us
        )
    }
}
