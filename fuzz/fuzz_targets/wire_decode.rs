//! Feed arbitrary bytes to every reader of received bytes (`wire::check`: the
//! long-envelope notice, the segment table and reassembly, the envelope decoder, the
//! weight of bytes that do not decode): each must answer, never panic or read out of
//! bounds. Run with `cargo +nightly fuzz run wire_decode` from the repository root;
//! it starts from the seeds in `fuzz/corpus/wire_decode`, which the stable test
//! `wire::tests::mutated_corpus_seeds_never_panic_any_reader` also mutates in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // PE 1 as the receiver, so envelopes addressed elsewhere are rejected as such.
    let _ = chorus_core::wire::check(data, 1);
});
