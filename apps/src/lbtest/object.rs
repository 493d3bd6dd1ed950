//! One object of lb-test: an array element that, each step, sends a token to each
//! neighbour and computes its load, adds a receipt of every token it gets to its
//! checksum, and calls `at_sync` once it has every neighbour's token of the step.

use super::params::LbTestParams;
use crate::balancing::{resume_by_message, LoadLog, Results};
use chorus_core::{Chare, Ctx, Migratable};
use serde::{Deserialize, Serialize};

/// What an object starts from.
#[derive(Clone, Serialize, Deserialize)]
pub struct ObjectInit {
    /// The run's parameters.
    pub params: LbTestParams,
    /// Where the checksum and load go after the last step.
    pub results: Results,
}

/// Messages of an object.
#[derive(Clone, Serialize, Deserialize)]
pub enum ObjectMsg {
    /// Begin the next step: the first, or the one after a balancing step.
    Step,
    /// A neighbour's token of `step`.
    Token {
        /// The step it belongs to.
        step: u32,
        /// Its value.
        value: u64,
    },
}

/// One object's state; all of it travels when it migrates.
#[derive(Serialize, Deserialize)]
pub struct Object {
    p: LbTestParams,
    results: Results,
    me: usize,
    neighbours: Vec<usize>,
    step: u32,
    /// Tokens of `step` received.
    got: usize,
    /// Tokens of `step + 1` from neighbours a step ahead (never further: they need
    /// this object's token of `step + 1` to go on).
    got_early: usize,
    /// This object sent and computed `step` (false while it waits for its resume).
    sent: bool,
    checksum: u64,
    load: LoadLog,
}

impl Chare for Object {
    type Init = ObjectInit;
    type Msg = ObjectMsg;

    fn create(init: ObjectInit, ctx: &mut Ctx) -> Self {
        let me = ctx.this_index::<usize>().unwrap_or(0);
        Object {
            neighbours: init.params.neighbours(me),
            p: init.params,
            results: init.results,
            me,
            step: 0,
            got: 0,
            got_early: 0,
            sent: false,
            checksum: 0,
            load: LoadLog::default(),
        }
    }

    fn handle(&mut self, msg: ObjectMsg, ctx: &mut Ctx) {
        match msg {
            ObjectMsg::Step => self.begin_step(ctx),
            ObjectMsg::Token { step, value } => {
                match step {
                    s if s == self.step => self.got += 1,
                    s if s == self.step + 1 => self.got_early += 1,
                    s => {
                        let at = self.step;
                        return ctx.fail("lb-test", format!("a token of step {s} at step {at}"));
                    }
                }
                let receipt = LbTestParams::receipt(self.me, value);
                self.checksum = self.checksum.wrapping_add(receipt);
                self.try_finish(ctx);
            }
        }
    }
}

impl Migratable for Object {
    fn resume_from_sync(&mut self, ctx: &mut Ctx) {
        resume_by_message::<Object, usize>(ctx, ObjectMsg::Step);
    }
}

impl Object {
    /// Send this step's token to every neighbour and compute this step's load.
    fn begin_step(&mut self, ctx: &mut Ctx) {
        if self.sent || self.step >= self.p.steps {
            return;
        }
        let Some(array) = ctx.this_array::<Object, usize>() else {
            return ctx.fail("lb-test", "an object is not an array element");
        };
        let value = self.p.token(self.me, self.step);
        for j in &self.neighbours {
            array.send(
                ctx,
                j,
                ObjectMsg::Token {
                    step: self.step,
                    value,
                },
            );
        }
        self.load.charge(ctx, self.p.load(self.me, self.step));
        self.sent = true;
        self.try_finish(ctx);
    }

    /// End the step once it is computed and every neighbour's token is here: then
    /// `at_sync`, or after the last step contribute the checksum.
    fn try_finish(&mut self, ctx: &mut Ctx) {
        if !self.sent || self.got < self.neighbours.len() {
            return;
        }
        self.step += 1;
        self.got = std::mem::take(&mut self.got_early);
        self.sent = false;
        if self.step == self.p.steps {
            self.results.contribute(ctx, self.checksum, &self.load);
        } else if let Err(e) = ctx.at_sync() {
            ctx.fail("lb-test", e);
        }
    }
}
