//! hello: a main chare greets a group, the group answers with a sum reduction, and the
//! job ends at quiescence.

use chorus_apps::job::JobProcess;
use chorus_apps::programs::hello::Args;
use chorus_core::{Callback, Chare, Ctx, Entry, GroupProxy, Reducer, Registry, Runtime};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

#[derive(Clone, Serialize, Deserialize)]
struct Entries {
    sum: Entry<Main, u64>,
    quiet: Entry<Main, ()>,
    /// Whether the chares print their lines (not with --json: stdout is the object).
    speak: bool,
}

struct Main {
    entries: Entries,
}

#[derive(Clone, Serialize, Deserialize)]
enum MainMsg {
    Start,
    Sum(u64),
    Quiet(()),
}

impl Chare for Main {
    type Init = Entries;
    type Msg = MainMsg;

    fn create(entries: Entries, _ctx: &mut Ctx) -> Self {
        Main { entries }
    }

    fn handle(&mut self, msg: MainMsg, ctx: &mut Ctx) {
        let me = ctx.this_chare::<Main>().expect("Main is a singleton chare");
        match msg {
            MainMsg::Start => {
                let group: GroupProxy<Hello> = ctx.create_group(());
                let done = Callback::chare(&me, self.entries.sum);
                group.broadcast(
                    ctx,
                    HelloMsg::Greet {
                        from: ctx.my_pe(),
                        done,
                        speak: self.entries.speak,
                    },
                );
            }
            MainMsg::Sum(total) => {
                let n = ctx.num_pes() as u64;
                if self.entries.speak {
                    println!(
                        "sum of PE numbers over {n} group members: {total} (expected {})",
                        n * (n - 1) / 2
                    );
                }
                ctx.publish("sum", &total);
                ctx.start_quiescence(Callback::chare(&me, self.entries.quiet));
            }
            MainMsg::Quiet(()) => {
                if self.entries.speak {
                    println!("quiescence detected at t = {:.6} s; exiting", ctx.now());
                }
                ctx.exit();
            }
        }
    }
}

struct Hello;

#[derive(Clone, Serialize, Deserialize)]
enum HelloMsg {
    Greet {
        from: u32,
        done: Callback,
        speak: bool,
    },
}

impl Chare for Hello {
    type Init = ();
    type Msg = HelloMsg;

    fn create(_: (), _ctx: &mut Ctx) -> Self {
        Hello
    }

    fn handle(&mut self, msg: HelloMsg, ctx: &mut Ctx) {
        let HelloMsg::Greet { from, done, speak } = msg;
        if speak {
            println!("PE {}: hello from PE {from}", ctx.my_pe());
        }
        ctx.contribute(u64::from(ctx.my_pe()), Reducer::Sum, done);
    }
}

fn main() -> ExitCode {
    let args: Args = chorus_apps::cli::parse_program();
    // Under MPI the session lives for the whole job, and only rank 0 prints the summary.
    let job = match JobProcess::start(&args.chorus) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("hello: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut reg = Registry::new();
    reg.chare::<Main>("Main").chare::<Hello>("Hello");
    let entries = Entries {
        sum: reg.entry::<Main, u64>("Main::sum", MainMsg::Sum),
        quiet: reg.entry::<Main, ()>("Main::quiet", MainMsg::Quiet),
        speak: !args.json,
    };
    let result = Runtime::new(reg, args.chorus).run(move |ctx| {
        let main = ctx.create_chare::<Main>(entries, 0);
        main.send(ctx, MainMsg::Start);
    });
    match result {
        Ok(_) if !job.speaks => ExitCode::SUCCESS,
        Ok(report) if args.json => {
            let sum: Option<u64> = report.output("sum");
            let v = serde_json::json!({
                "pes": report.pes,
                "layer": report.layer,
                "sum": sum,
                "messages": report.messages_processed(),
                "wall_s": report.wall_s,
            });
            println!("{v}");
            ExitCode::SUCCESS
        }
        Ok(report) => {
            println!(
                "{} PEs on the {} layer: {} messages in {:.3} s",
                report.pes,
                report.layer,
                report.messages_processed(),
                report.wall_s
            );
            if let Some(t) = &report.trace {
                println!("{t}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hello: {e}");
            ExitCode::FAILURE
        }
    }
}
