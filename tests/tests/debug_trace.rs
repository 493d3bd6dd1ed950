//! `--debug-trace FILE` in a program that runs several jobs (the MCMC demo runs one
//! per strategy): the file ends up a valid Chrome trace of the runtime's spans, not
//! overwritten by a later job's empty one. Its own test binary: the log subscriber is
//! process-wide.

use chorus_core::{Chare, Config, Ctx, Registry, Runtime};

struct Nobody;

impl Chare for Nobody {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Nobody
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

#[test]
fn several_jobs_leave_one_valid_debug_trace() {
    let path = std::env::temp_dir().join(format!("chorus-debug-{}.json", std::process::id()));
    for _ in 0..3 {
        let mut reg = Registry::new();
        reg.chare::<Nobody>("Nobody");
        let cfg = Config {
            debug_trace: Some(path.clone()),
            ..Config::with_pes(2)
        };
        Runtime::new(reg, cfg)
            .run(|ctx| {
                let group = ctx.create_group::<Nobody>(());
                group.broadcast(ctx, ());
                ctx.exit_on_quiescence();
            })
            .expect("job runs");
    }
    let text = std::fs::read_to_string(&path).expect("the debug trace exists");
    let _ = std::fs::remove_file(&path);
    let events: Vec<serde_json::Value> = serde_json::from_str(&text).expect("valid JSON");
    assert!(
        events.iter().any(|e| e["name"] == "chorus_job"),
        "the first job's spans are in the file: {} events",
        events.len()
    );
}
