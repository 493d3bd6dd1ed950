//! Helpers shared by the integration tests: every runtime test runs on each machine
//! layer this build has.

use chorus_core::{Config, ErrorPolicy, Layer};

/// The machine layers runtime tests run on.
pub fn layers() -> Vec<Layer> {
    vec![Layer::Threads, Layer::Sim]
}

/// A configuration for `pes` PEs on `layer` with the given error policy.
pub fn config(layer: Layer, pes: u32, policy: ErrorPolicy) -> Config {
    Config {
        pes,
        layer,
        on_error: policy,
        ..Config::default()
    }
}

/// splitmix64: a fixed, seedable generator for test traffic.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
