//! Feed arbitrary bytes to the envelope decoder: it must return an envelope or a
//! `WireError`, never panic or read out of bounds. Run with
//! `cargo +nightly fuzz run wire_decode` from the repository root.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // PE 1 as the receiver, so envelopes addressed elsewhere are rejected as such.
    let _ = chorus_core::wire::check(data, 1);
});
