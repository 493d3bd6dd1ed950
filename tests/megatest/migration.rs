//! migration: every element of an array of 10 + 2P elements travels round all P PEs
//! with `migrate_me`, adding PE + 1 to a sum it carries at each; back where it
//! started, its sum must be P(P+1)/2 and its index the one it was made with, and it
//! tells element 0, which counts every element home (2 PEs at least, as the
//! original).

use super::{pe_counts, run_for};
use chorus_core::{chare, ArrayMap, Callback, Ctx, Layer, Migratable};
use serde::{Deserialize, Serialize};

/// An element on its tour; every field travels with it.
#[derive(Serialize, Deserialize)]
struct MigElement {
    orig_pe: Option<u32>,
    sum: u64,
    index: Option<usize>,
    num_done: usize,
    done: Callback,
}

#[chare(migratable)]
impl MigElement {
    #[init]
    fn new(done: Callback, ctx: &mut Ctx) -> Self {
        let me = ctx.this_array::<MigElement, usize>().expect("an array");
        let i = ctx.this_index::<usize>().expect("an element");
        me.at(i).arrive(ctx);
        MigElement {
            orig_pe: None,
            sum: 0,
            index: Some(i),
            num_done: 0,
            done,
        }
    }
    /// Check the state; home again, report, else add this PE and move on.
    #[entry]
    fn arrive(&mut self, ctx: &mut Ctx) {
        let i = ctx.this_index::<usize>().expect("an element");
        assert_eq!(self.index, Some(i), "migration: element data corrupted");
        let (pe, p) = (ctx.my_pe(), ctx.num_pes() as u64);
        if self.orig_pe == Some(pe) {
            assert_eq!(
                self.sum,
                p * (p + 1) / 2,
                "migration: element {i} missed a PE"
            );
            let me = ctx.this_array::<MigElement, usize>().expect("an array");
            me.at(0).done(ctx);
        } else {
            self.orig_pe.get_or_insert(pe);
            self.sum += u64::from(pe) + 1;
            let next = (pe + 1) % p as u32;
            ctx.migrate_me(next).expect("a valid move");
        }
    }
    /// Element 0: one more element is home.
    #[entry]
    fn done(&mut self, ctx: &mut Ctx) {
        self.num_done += 1;
        if self.num_done == elements(ctx.num_pes()) {
            ctx.send_to_callback(&self.done, self.num_done as u64);
        }
    }
}

impl Migratable for MigElement {
    /// Arrived on a new PE: go on with the tour here.
    fn migrated(&mut self, ctx: &mut Ctx) {
        let me = ctx.this_array::<MigElement, usize>().expect("an array");
        let i = ctx.this_index::<usize>().expect("an element");
        me.at(i).arrive(ctx);
    }
}

fn elements(pes: usize) -> usize {
    10 + 2 * pes
}

/// Every element round every PE and home, on 2 PEs and more.
pub fn migration(layer: Layer) {
    for pes in pe_counts(layer, 2) {
        let n: u64 = run_for(layer, pes, MigElement::register, move |ctx, done| {
            let n = elements(pes as usize);
            ctx.create_array_1d::<MigElement>(n, done, ArrayMap::Block);
        });
        assert_eq!(n, elements(pes as usize) as u64, "{pes} PEs");
    }
}
