//! Synthetic load statistics for tests and benchmarks, in the spirit of Charm++'s
//! `lb_test`: elements placed in blocks over the PEs, loads skewed between PEs,
//! and an optional communication graph (a ring or a 2-D mesh of elements).

use chorus_core::api::balance::{CommEdge, LoadStats, Move, ObjLoad};
use chorus_core::ids::IndexKey;
use chorus_core::mix64;

/// Which elements talk to which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// No communication recorded.
    None,
    /// Element i talks to i - 1 and i + 1 (wrapping).
    Ring,
    /// Elements on a square-ish grid, each talking to its four neighbours.
    Mesh,
}

/// Bytes each element sends each neighbour in a period.
pub const EDGE_PAYLOAD: u64 = 1024;

/// `objs` elements over `pes` PEs in blocks; every element of PE p has load
/// `base(p) * U(0.5, 1.5)` where `base(p)` is drawn from 1..`skew` per PE, so the
/// heaviest PE carries about `skew` times the lightest.
pub fn skewed(pes: usize, objs: usize, skew: f64, seed: u64, topology: Topology) -> LoadStats {
    let unit = |x: u64| (mix64(x) >> 11) as f64 / (1u64 << 53) as f64;
    let base: Vec<f64> = (0..pes as u64)
        .map(|p| 1.0 + (skew - 1.0).max(0.0) * unit(seed ^ p.wrapping_mul(0xA24B_AED4_963E_E407)))
        .collect();
    let objs: Vec<ObjLoad> = (0..objs)
        .map(|i| {
            let pe = (i as u128 * pes as u128 / objs as u128) as usize;
            let jitter =
                0.5 + unit(seed.rotate_left(17) ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            ObjLoad {
                key: IndexKey::new(&(i as u64).to_be_bytes()),
                pe: pe as u32,
                load: base[pe] * jitter,
            }
        })
        .collect();
    let comm = graph(objs.len(), topology);
    LoadStats {
        num_pes: pes,
        objs,
        background: vec![0.0; pes],
        comm,
    }
}

/// The edges of `topology` over `n` elements, both directions of each.
pub fn graph(n: usize, topology: Topology) -> Vec<CommEdge> {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    match topology {
        Topology::None => {}
        Topology::Ring if n > 1 => pairs.extend((0..n).map(|i| (i, (i + 1) % n))),
        Topology::Ring => {}
        Topology::Mesh => {
            let w = (n as f64).sqrt().ceil().max(1.0) as usize;
            for i in 0..n {
                if (i + 1) % w != 0 && i + 1 < n {
                    pairs.push((i, i + 1));
                }
                if i + w < n {
                    pairs.push((i, i + w));
                }
            }
        }
    }
    pairs.dedup();
    let edge = |from: usize, to: usize| CommEdge {
        from: from as u32,
        to: to as u32,
        messages: 1,
        bytes: EDGE_PAYLOAD,
    };
    pairs
        .into_iter()
        .filter(|(a, b)| a != b)
        .flat_map(|(a, b)| [edge(a, b), edge(b, a)])
        .collect()
}

/// Each PE's load once `moves` are made (moves naming no element are skipped).
pub fn loads_after(stats: &LoadStats, moves: &[Move]) -> Vec<f64> {
    let mut pe: Vec<u32> = stats.objs.iter().map(|o| o.pe).collect();
    for m in moves {
        if let Some(p) = pe.get_mut(m.obj as usize) {
            *p = m.to;
        }
    }
    let mut loads = stats.background.clone();
    loads.resize(stats.num_pes, 0.0);
    for (o, &p) in stats.objs.iter().zip(&pe) {
        if let Some(l) = loads.get_mut(p as usize) {
            *l += o.load;
        }
    }
    loads
}
