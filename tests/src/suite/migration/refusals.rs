//! Moves that cannot happen: an element whose type is not migratable, a state that
//! cannot be rebuilt, a move to a PE outside the job, an index inserted twice, and
//! moves asked for at the wrong time are clear errors that lose nothing; an element
//! inserted before its PE knew the array lives at home.

use super::*;

/// An array element whose type is not registered as migratable.
pub(super) struct Fixed;

impl Chare for Fixed {
    type Init = ();
    type Msg = ();
    fn create(_: (), _: &mut Ctx) -> Self {
        Fixed
    }
    fn handle(&mut self, _: (), ctx: &mut Ctx) {
        let said = ctx.migrate_me(0).map_err(|e| e.to_string());
        ctx.publish("fixed", &said);
    }
}

/// Serializes, but refuses to be rebuilt: its state is lost on the way.
#[derive(Serialize)]
pub(super) struct Fragile;

impl<'de> Deserialize<'de> for Fragile {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom("Fragile refuses to be rebuilt"))
    }
}

impl Chare for Fragile {
    type Init = ();
    type Msg = u32;
    fn create(_: (), _: &mut Ctx) -> Self {
        Fragile
    }
    fn handle(&mut self, to: u32, ctx: &mut Ctx) {
        ctx.migrate_me(to).expect("a valid move");
    }
}

impl Migratable for Fragile {}

/// Moving to a PE that does not exist, moving a type not registered as migratable
/// and moving from outside an element are errors that leave the element where it
/// is, receiving every message.
pub fn bad_moves_are_clear_errors_and_lose_nothing(layer: Layer) {
    const COUNT: u64 = 20;
    let p = pes(layer, 2);
    let (reg, e) = registry();
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            let main_said = ctx.migrate_me(1);
            ctx.publish("main", &main_said.map_err(|e| e.to_string()));
            let arr = ctx.create_array_1d::<Roamer>(1, 0, ArrayMap::Block);
            let script = Script::Report { quiets: 1 };
            let driver = ctx.create_chare::<Driver>(DriverInit { arr, script, e }, 0);
            arr.send(ctx, &0, RoamerMsg::TryMove(p + 3));
            for id in 0..COUNT {
                arr.send(ctx, &0, RoamerMsg::Item { id, roam: 0 });
            }
            ctx.create_array_1d::<Fixed>(1, (), ArrayMap::Block)
                .send(ctx, &0, ());
            ctx.start_quiescence(Callback::chare(&driver, e.quiet));
        })
        .expect("run");
    let no_such_pe = MigrateError::NoSuchPe {
        to: p + 3,
        num_pes: p as usize,
    };
    assert_eq!(
        report.output::<String>("try_move"),
        Some(no_such_pe.to_string())
    );
    assert!(no_such_pe.to_string().contains("does not exist"));
    let fixed = report.output::<Result<(), String>>("fixed").expect("fixed");
    assert!(
        fixed
            .as_ref()
            .is_err_and(|e| e.contains("Fixed is not migratable")),
        "{fixed:?}"
    );
    let main = report.output::<Result<(), String>>("main").expect("main");
    assert!(
        main.as_ref()
            .is_err_and(|e| e.contains("only array elements migrate")),
        "{main:?}"
    );
    assert_eq!(report.output::<Vec<u64>>("ids"), Some((0..COUNT).collect()));
    assert_eq!(report.output::<u64>("moves"), Some(0));
    assert!(report.errors().is_empty(), "{:?}", report.errors());
}

/// An element whose state does not deserialize on its new PE is reported lost (under
/// `--on-error drop` the job runs on), and the messages that followed it are reported
/// as undeliverable at quiescence instead of vanishing.
pub fn an_element_lost_in_transit_is_reported_with_its_messages(layer: Layer) {
    let p = pes(layer, 2);
    let (reg, _) = registry();
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Drop))
        .run(move |ctx| {
            let arr = ctx.create_array_1d::<Fragile>(1, (), ArrayMap::Block);
            arr.send(ctx, &0, 1);
            // Sent after it left: follows it to PE 1 and waits there for it.
            arr.send(ctx, &0, 0);
            ctx.exit_on_quiescence();
        })
        .expect("run");
    let errors: Vec<String> = report.errors().iter().map(|e| e.to_string()).collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("cannot migrate") && e.contains("Fragile refuses")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("never arrived on PE 1, so 1 message(s)")),
        "{errors:?}"
    );
}

/// Inserts index 5 of an array from its constructor, which may run before its PE
/// has heard of the array (the insert then goes to the array's creator).
pub(super) struct Planter;

impl Chare for Planter {
    type Init = ArrayProxy<Roamer, usize>;
    type Msg = ();
    fn create(arr: ArrayProxy<Roamer, usize>, ctx: &mut Ctx) -> Self {
        arr.insert(ctx, 5, 0);
        Planter
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

#[derive(Clone, Serialize, Deserialize)]
pub(super) struct CensusInit {
    arr: ArrayProxy<Roamer, usize>,
    /// Indices to insert (again) at quiescence.
    dups: Vec<usize>,
    e: Entries,
}

/// At quiescence, inserts its `dups`, recounts, and asks every element where it is;
/// publishes the placement and ends the job.
pub(super) struct Census {
    init: CensusInit,
}

#[derive(Clone, Serialize, Deserialize)]
pub(super) enum CensusMsg {
    Quiet(()),
    Placement(Vec<u64>),
}

impl Chare for Census {
    type Init = CensusInit;
    type Msg = CensusMsg;
    fn create(init: CensusInit, _: &mut Ctx) -> Self {
        Census { init }
    }
    fn handle(&mut self, msg: CensusMsg, ctx: &mut Ctx) {
        let arr = self.init.arr;
        match msg {
            CensusMsg::Quiet(()) => {
                for &i in &self.init.dups {
                    arr.insert(ctx, i, 0);
                }
                arr.done_inserting(ctx);
                let me = ctx.this_chare::<Census>().expect("a chare");
                let done = Callback::chare(&me, self.init.e.census_placement);
                arr.broadcast(
                    ctx,
                    RoamerMsg::Where {
                        done,
                        mul: 0,
                        add: 0,
                    },
                );
                // Ends the job even if the placement never completes, so a lost
                // element fails the test instead of hanging it.
                ctx.exit_on_quiescence();
            }
            CensusMsg::Placement(p) => {
                ctx.publish("placement", &p);
                ctx.exit();
            }
        }
    }
}

/// An element inserted from a PE that had not yet heard of the array (the insert
/// went to the array's creator) still lives on its home PE, so broadcasts reach it
/// and reductions count it. On sim (64 PEs, a binary tree, fixed seed) PE 63 runs
/// the constructor that inserts long before the array's creation reaches it.
pub fn an_element_inserted_before_its_pe_knew_the_array_lives_at_home(layer: Layer) {
    let p = pes(layer, 64);
    let (reg, e) = registry();
    let mut cfg = config(layer, p, ErrorPolicy::Abort);
    cfg.tree_arity = 2;
    cfg.seed = 3;
    let report = Runtime::new(reg, cfg)
        .run(move |ctx| {
            let arr: ArrayProxy<Roamer, usize> =
                ctx.create_array(Vec::new(), 0, ArrayMap::RoundRobin);
            for i in 0..5 {
                arr.insert(ctx, i, 0);
            }
            ctx.create_chare::<Planter>(arr, p - 1);
            let dups = Vec::new();
            let census = ctx.create_chare::<Census>(CensusInit { arr, dups, e }, 0);
            ctx.start_quiescence(Callback::chare(&census, e.census_quiet));
        })
        .expect("run");
    let homes: Vec<u64> = (0..6).map(|i| i % u64::from(p)).collect();
    assert_eq!(report.output::<Vec<u64>>("placement"), Some(homes));
    assert!(report.errors().is_empty(), "{:?}", report.errors());
}

/// Inserting an index that exists is refused, naming the index and where the
/// element is, both when it is on its home PE and when it has moved away (its home
/// then only has a location entry): the original element keeps its state and is
/// counted once.
pub fn an_index_is_never_inserted_twice_even_while_its_element_is_away(layer: Layer) {
    let p = pes(layer, 2);
    let (reg, e) = registry();
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Drop))
        .run(move |ctx| {
            let arr = ctx.create_array_1d::<Roamer>(2, 0, ArrayMap::RoundRobin);
            // Element 1 (home PE 1) moves to PE 0.
            arr.send(ctx, &1, RoamerMsg::Hop(vec![0]));
            let dups = vec![0, 1];
            let census = ctx.create_chare::<Census>(CensusInit { arr, dups, e }, 0);
            ctx.start_quiescence(Callback::chare(&census, e.census_quiet));
        })
        .expect("run");
    assert_eq!(report.output::<Vec<u64>>("placement"), Some(vec![0, 0]));
    let mut errors: Vec<String> = report.errors().iter().map(|e| e.to_string()).collect();
    errors.sort();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for (err, (index, home)) in errors.iter().zip([(0, 0), (1, 1 % p)]) {
        assert!(
            err.starts_with(&format!("PE {home}: "))
                && err.contains(&format!(
                    "already has an element at index with order key {index} "
                ))
                && err.contains("(on PE 0); the new one was dropped"),
            "{errors:?}"
        );
    }
}

/// An element that asks to move from its constructor, and again (publishing the
/// answer) from `about_to_migrate` while it leaves.
#[derive(Serialize, Deserialize)]
pub(super) struct Restless;

impl Chare for Restless {
    type Init = u32;
    type Msg = ();
    fn create(to: u32, ctx: &mut Ctx) -> Self {
        ctx.migrate_me(to).expect("a valid move");
        Restless
    }
    fn handle(&mut self, _: (), _: &mut Ctx) {}
}

impl Migratable for Restless {
    fn about_to_migrate(&mut self, ctx: &mut Ctx) {
        let said = ctx.migrate_me(0).map_err(|e| e.to_string());
        ctx.publish("again", &said);
    }
    fn migrated(&mut self, ctx: &mut Ctx) {
        let pe = ctx.my_pe();
        ctx.publish("arrived_on", &pe);
    }
}

/// A move asked for from `create` happens; one asked for from `about_to_migrate` is
/// refused as `Leaving` and the move under way still completes, with no error.
pub fn moving_from_create_works_and_from_about_to_migrate_is_refused(layer: Layer) {
    let p = pes(layer, 2);
    let (reg, _) = registry();
    let to = 1 % p;
    let report = Runtime::new(reg, config(layer, p, ErrorPolicy::Abort))
        .run(move |ctx| {
            ctx.create_array_1d::<Restless>(1, to, ArrayMap::Block);
            ctx.exit_on_quiescence();
        })
        .expect("run");
    assert!(report.errors().is_empty(), "{:?}", report.errors());
    if to == 0 {
        // One PE: asking for this PE is no move.
        return;
    }
    assert_eq!(report.output::<u32>("arrived_on"), Some(to));
    assert_eq!(
        report.output::<Result<(), String>>("again"),
        Some(Err(MigrateError::Leaving.to_string()))
    );
}
