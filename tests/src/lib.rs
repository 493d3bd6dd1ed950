//! Helpers shared by the integration tests: every runtime test runs on each machine
//! layer this build has. The layer-parameterized test bodies live in [`suite`], so the
//! cargo tests (threads and sim) and the `chorus-suite` binary (mpi, under mpirun) run
//! the very same code.

use chorus_core::{Config, ErrorPolicy, Layer};

#[path = "../megatest/mod.rs"]
pub mod megatest;
pub mod suite;

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
        pes_per_rank: pes_per_rank(layer),
        ..Config::default()
    }
}

/// PEs per rank on mpi: `CHORUS_PES_PER_RANK` (as the runtime's flag reads it), else
/// 1; always 1 on the other layers.
pub fn pes_per_rank(layer: Layer) -> u32 {
    match layer {
        Layer::Mpi => std::env::var("CHORUS_PES_PER_RANK").map_or(1, |v| {
            v.trim()
                .parse()
                .ok()
                .filter(|&n| n >= 1)
                .unwrap_or_else(|| panic!("CHORUS_PES_PER_RANK={v}: want a positive integer"))
        }),
        Layer::Threads | Layer::Sim => 1,
    }
}

/// The PE count a test gets when it asks for `wanted`: on mpi the number of ranks
/// mpirun started (from `OMPI_COMM_WORLD_SIZE` or `PMI_SIZE`) times the PEs per
/// rank, elsewhere `wanted`.
pub fn pes(layer: Layer, wanted: u32) -> u32 {
    match layer {
        Layer::Mpi => chorus_core::mpi_launch_size().map_or(wanted, |n| n * pes_per_rank(layer)),
        Layer::Threads | Layer::Sim => wanted,
    }
}

/// The distinct PE counts `pes` gives for each of `wanted`, in order: on mpi every
/// request maps to the world size, so the list shrinks to one entry.
pub fn pes_each(layer: Layer, wanted: &[u32]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for &w in wanted {
        let p = pes(layer, w);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// splitmix64: a fixed, seedable generator for test traffic.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
