//! chorus-macros: `#[chare]`, entry methods declared in Rust (what Charm++'s `.ci`
//! file declares, without the separate file). Use it as `chorus_core::chare`.
//!
//! ```ignore
//! #[chare]
//! impl Counter {
//!     #[init]
//!     fn new(start: u64) -> Self { Counter { n: start } }
//!     #[entry]
//!     fn add(&mut self, n: u64) { self.n += n; }
//!     #[entry(callback)]
//!     fn total(&mut self, t: u64, ctx: &mut Ctx) { println!("{t}"); ctx.exit(); }
//! }
//! ```
//!
//! generates, beside the impl block (its markers removed):
//!
//! - `enum CounterMsg { Add(u64), Total(u64) }`, the messages (serde; several
//!   arguments make a tuple variant), and `impl Chare for Counter` with `Init` the
//!   `#[init]` arguments (one type, a tuple of several, or `()` with no `#[init]`,
//!   when the type is built with `Default`) and `handle` calling each method;
//! - `Counter::register(&mut reg)`, which registers the type (`#[chare(migratable)]`:
//!   as migratable) and every `#[entry(callback)]` as a callback entry, and
//!   `Counter::total_callback(ctx)`: a callback to `total` of the running chare, or
//!   of its whole group or array;
//! - `trait CounterProxy`, implemented for every `Target<Counter>`: `proxy.add(ctx,
//!   42)` on a `ChareProxy`, a `GroupProxy` or an `ArrayProxy` (a broadcast to the
//!   whole group or array), on `group.at(pe)` and `array.at(index)` (one member or
//!   element), and `proxy.total_callback(ctx)`.
//!
//! A method's `&mut Ctx` parameter, if it takes one, comes last; the arguments
//! before it travel in the message.
//!
//! An `async fn` marked `#[entry]` is an async entry method: it takes no `self` (its
//! task runs on after the handler returns) and its `Task` first
//! (`async fn chain(t: Task, done: Callback)`); its handler spawns it with
//! `Ctx::spawn`, as the chare that received the message, and it reaches the PE with
//! `t.with(|ctx| ..)` and `t.ask(..)`.

#![deny(unsafe_code)]

mod expand;
mod model;

use proc_macro::TokenStream;

/// Turn the `#[init]` and `#[entry]` methods of a chare's impl block into its
/// constructor and entry methods (see the crate's documentation).
#[proc_macro_attribute]
pub fn chare(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::chare(attr.into(), item.into()).into()
}

#[cfg(test)]
mod tests;
