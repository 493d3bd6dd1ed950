//! A split that only some PEs call can never complete: a job that ends at quiescence
//! with one says so, as a typed error under `--on-error abort` and, under `drop`, in
//! the report (`RunReport::unfinished_collectives`), naming the split and the PEs
//! that never called it.

use chorus_core::{Callback, Chare, Config, Ctx, ErrorPolicy, Layer, Registry, RunReport};
use chorus_core::{Runtime, RuntimeError};
use chorus_sections::{Section, Sections, Split};
use serde::{Deserialize, Serialize};

/// A group member that calls the split only on PE 0, or on every PE.
struct Caller {
    sections: Sections,
}

#[derive(Clone, Serialize, Deserialize)]
enum Msg {
    Go { everyone: bool },
    Joined(Section),
}

impl Chare for Caller {
    type Init = Sections;
    type Msg = Msg;
    fn create(sections: Sections, _: &mut Ctx) -> Self {
        Caller { sections }
    }
    fn handle(&mut self, msg: Msg, ctx: &mut Ctx) {
        match msg {
            Msg::Go { everyone } if everyone || ctx.my_pe() == 0 => {
                let split = Split::new(1).key(i64::from(ctx.my_pe()));
                self.sections
                    .split(ctx, split, Callback::Ignore)
                    .expect("a valid split");
            }
            Msg::Go { .. } | Msg::Joined(_) => {}
        }
    }
}

fn run(layer: Layer, policy: ErrorPolicy, everyone: bool) -> Result<RunReport, RuntimeError> {
    let mut reg = Registry::new();
    let sections = Sections::register(&mut reg);
    reg.chare::<Caller>("Caller");
    let cfg = Config {
        layer,
        pes: 4,
        on_error: policy,
        ..Config::default()
    };
    Runtime::new(reg, cfg).run(move |ctx| {
        let sections = sections.setup(ctx);
        ctx.create_group::<Caller>(sections)
            .broadcast(ctx, Msg::Go { everyone });
        ctx.exit_on_quiescence();
    })
}

#[test]
fn a_split_called_on_pe_0_only_is_an_error_at_quiescence() {
    for layer in [Layer::Threads, Layer::Sim] {
        let err = run(layer, ErrorPolicy::Abort, false).expect_err("an unfinished split");
        let said = err.to_string();
        assert!(
            matches!(err, RuntimeError::Unfinished(_)),
            "{layer:?}: {said}"
        );
        assert!(
            said.contains(
                "split #0 of the world: started, never called (on 3 of 4 PEs: [1, 2, 3])"
            ),
            "{layer:?}: {said}"
        );
    }
}

#[test]
fn under_drop_the_report_names_the_split_and_its_pes() {
    for layer in [Layer::Threads, Layer::Sim] {
        let report = run(layer, ErrorPolicy::Drop, false).expect("runs under drop");
        let left = report.unfinished_collectives();
        let never = left
            .iter()
            .find(|u| u.what == "split #0 of the world: started, never called")
            .unwrap_or_else(|| panic!("{layer:?}: {left:?}"));
        assert_eq!(never.pes, vec![1, 2, 3], "{layer:?}");
    }
}

#[test]
fn a_split_every_pe_calls_leaves_nothing_unfinished() {
    for layer in [Layer::Threads, Layer::Sim] {
        let report = run(layer, ErrorPolicy::Abort, true).expect("a complete split");
        assert!(report.unfinished_collectives().is_empty(), "{layer:?}");
        assert!(report.ended_at_quiescence(), "{layer:?}");
    }
}
