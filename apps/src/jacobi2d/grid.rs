//! The arithmetic of Jacobi2D, shared by the blocks and the serial reference so both
//! do the same operations in the same order: the starting values, the fixed
//! boundary, the 5-point stencil, the hot spot and the exact checksum.

use super::params::JacobiParams;
use chorus_core::mix64;

/// One cell's next value from itself and its four neighbours, summed in this order.
pub fn stencil(c: f64, north: f64, south: f64, west: f64, east: f64) -> f64 {
    0.2 * ((((c + north) + south) + west) + east)
}

/// The starting value of global cell (`row`, `col`).
pub fn initial(row: usize, col: usize) -> f64 {
    ((row * 7 + col * 13) % 17) as f64 / 17.0
}

/// The fixed value outside the grid: 1 above the top row, 0 on the other sides.
pub fn boundary(north: bool) -> f64 {
    if north {
        1.0
    } else {
        0.0
    }
}

/// Whether block (`bi`, `bj`) is in the hot region at `step`: a square of
/// `hot_blocks` blocks a side whose corner moves one block down and right every
/// `drift_every` steps, wrapping around the grid of blocks.
pub fn is_hot(p: &JacobiParams, bi: usize, bj: usize, step: u32) -> bool {
    let n = p.blocks_per_side();
    let shift = (step / p.drift_every) as usize % n;
    let di = (bi + n - shift) % n;
    let dj = (bj + n - shift) % n;
    di < p.hot_blocks && dj < p.hot_blocks
}

/// The exact checksum of one block's cells: their bit patterns hashed in row-major
/// order from a seed naming the block, so a different value or place changes it.
pub fn block_checksum(bi: usize, bj: usize, cells: &[f64]) -> u64 {
    let seed = mix64(((bi as u64) << 32) ^ bj as u64 ^ 0x4a41_434f_4249);
    cells.iter().fold(seed, |h, v| mix64(h ^ v.to_bits()))
}

/// Run the whole grid serially for `p.steps` steps and return the sum (wrapping) of
/// the blocks' checksums, as the parallel run computes it.
pub fn serial_checksum(p: &JacobiParams) -> u64 {
    let n = p.grid;
    let at = |g: &[f64], r: isize, c: isize| -> f64 {
        if r < 0 {
            boundary(true)
        } else if c < 0 || r >= n as isize || c >= n as isize {
            boundary(false)
        } else {
            g[r as usize * n + c as usize]
        }
    };
    let mut g: Vec<f64> = (0..n * n).map(|k| initial(k / n, k % n)).collect();
    for _ in 0..p.steps {
        let mut next = vec![0.0; n * n];
        for r in 0..n as isize {
            for c in 0..n as isize {
                next[r as usize * n + c as usize] = stencil(
                    at(&g, r, c),
                    at(&g, r - 1, c),
                    at(&g, r + 1, c),
                    at(&g, r, c - 1),
                    at(&g, r, c + 1),
                );
            }
        }
        g = next;
    }
    let (b, nb) = (p.block, p.blocks_per_side());
    let mut sum = 0u64;
    for bi in 0..nb {
        for bj in 0..nb {
            let cells: Vec<f64> = (0..b * b)
                .map(|k| g[(bi * b + k / b) * n + bj * b + k % b])
                .collect();
            sum = sum.wrapping_add(block_checksum(bi, bj, &cells));
        }
    }
    sum
}
