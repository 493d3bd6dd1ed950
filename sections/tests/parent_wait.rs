//! A creation from a parent section that starts the moment the parent is stored on
//! one PE: its start reaches PEs whose own part of the parent has not finished yet,
//! and they wait for the parent instead of failing.

use chorus_core::{
    Callback, Chare, Config, Ctx, Encoded, Entry, GroupProxy, Layer, Registry, RunReport, Runtime,
    RuntimeError,
};
use chorus_sections::host::{
    available, Builder, CreationMsg, CreationReport, Membership, Parent, Request,
};
use chorus_sections::protocol::Algorithm;
use chorus_sections::section::{Section, SectionId};
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize)]
struct Init {
    builder: GroupProxy<Builder>,
    algorithm: Algorithm,
    on_parent: Entry<Driver, Encoded<Section>>,
    on_report: Entry<Driver, Encoded<CreationReport>>,
}

#[derive(Clone, Serialize, Deserialize)]
enum DriverMsg {
    Go,
    Parent(Encoded<Section>),
    Report(Encoded<CreationReport>),
}

/// Every PE creates a child of the parent as soon as its own copy of the parent is
/// stored; PE 0 ends the job once the parent and every child reported.
struct Driver {
    init: Init,
    npes: u32,
    reports: Vec<CreationReport>,
}

const PARENT_TAG: u64 = u64::MAX;

impl Chare for Driver {
    type Init = Init;
    type Msg = DriverMsg;

    fn create(init: Init, ctx: &mut Ctx) -> Self {
        Driver {
            init,
            npes: ctx.num_pes() as u32,
            reports: Vec::new(),
        }
    }

    fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx) {
        let me = ctx.this_group::<Driver>().expect("a group member");
        let request = |parent, tag, on_member| Request {
            algorithm: self.init.algorithm,
            k: 2,
            parent,
            membership: Membership::All,
            on_member,
            on_report: Callback::group_member(&me, 0, self.init.on_report),
            tag,
            keep: true,
        };
        match msg {
            DriverMsg::Go => {
                let on_member = Callback::group_all(&me, self.init.on_parent);
                let req = request(Parent::World, PARENT_TAG, on_member);
                Builder::create_section(&self.init.builder, ctx, req);
            }
            DriverMsg::Parent(Encoded(s)) => {
                let tag = u64::from(ctx.my_pe());
                let req = request(Parent::Section(s.id), tag, Callback::Ignore);
                Builder::create_section(&self.init.builder, ctx, req);
            }
            DriverMsg::Report(Encoded(r)) => {
                self.reports.push(r);
                if self.reports.len() == self.npes as usize + 1 {
                    ctx.publish("reports", &self.reports);
                    ctx.exit_on_quiescence();
                }
            }
        }
    }
}

fn run(algorithm: Algorithm, pes: u32, seed: u64) -> Result<RunReport, RuntimeError> {
    let mut reg = Registry::new();
    let builder_init = chorus_sections::host::register(&mut reg);
    reg.chare::<Driver>("parent_wait::Driver");
    let on_parent = reg.entry::<Driver, Encoded<Section>>("Driver::parent", DriverMsg::Parent);
    let on_report =
        reg.entry::<Driver, Encoded<CreationReport>>("Driver::report", DriverMsg::Report);
    let mut config = Config {
        layer: Layer::Sim,
        seed,
        ..Config::with_pes(pes)
    };
    config.sim.jitter_us = Some(20.0);
    Runtime::new(reg, config).run(move |ctx| {
        let builder = ctx.create_group::<Builder>(builder_init);
        let init = Init {
            builder,
            algorithm,
            on_parent,
            on_report,
        };
        let driver = ctx.create_group::<Driver>(init);
        driver.send(ctx, 0, DriverMsg::Go);
    })
}

#[test]
fn a_child_started_as_soon_as_its_parent_exists_somewhere_waits_for_it_elsewhere() {
    let pes = 24;
    for algorithm in available() {
        for seed in 1..=3 {
            let report = run(algorithm, pes, seed)
                .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", algorithm.name()));
            let reports: Vec<CreationReport> = report.output("reports").expect("published");
            assert_eq!(reports.len(), pes as usize + 1);
            for r in reports.iter().filter(|r| r.tag != PARENT_TAG) {
                assert_eq!(r.parent_pes, u64::from(pes), "{r:?}");
                assert_eq!(r.members, u64::from(pes), "{r:?}");
            }
        }
    }
}

#[test]
fn a_start_naming_a_parent_this_pe_never_named_fails_at_once() {
    let mut reg = Registry::new();
    let builder_init = chorus_sections::host::register(&mut reg);
    let config = Config {
        layer: Layer::Sim,
        ..Config::with_pes(4)
    };
    let err = Runtime::new(reg, config)
        .run(move |ctx| {
            let builder = ctx.create_group::<Builder>(builder_init);
            // PE 0's builder has named nothing, so no section of its naming exists.
            let parent = SectionId::from_token(SectionId::token(0, 7), 4);
            let req = Request {
                algorithm: available()[0],
                k: 2,
                parent: Parent::Section(parent),
                membership: Membership::All,
                on_member: Callback::Ignore,
                on_report: Callback::Ignore,
                tag: 0,
                keep: true,
            };
            let start = CreationMsg::Start {
                token: SectionId::token(1, 0),
                from: Some(1),
                req,
                dead: Vec::new(),
            };
            builder.send(ctx, 0, start.into());
        })
        .unwrap_err();
    assert!(err.to_string().contains("not known"), "{err}");
}
