//! LeanMD's model: the Lennard-Jones force and energy between particles within the
//! cutoff, the integration step, the initial lattice, and the geometry of cells and
//! their neighbourhoods. Units as the original's: positions in angstroms,
//! velocities in angstroms per femtosecond, masses in grams, one femtosecond a step.

use serde::{Deserialize, Serialize};

/// A particle's mass (hydrogen's), in grams.
pub const MASS: f64 = 1.67 * 1e-24;
/// The repulsive term's coefficient (g m^2/s^2 m^12).
pub const VDW_A: f64 = 1.1328 * 1e-133;
/// The attractive term's coefficient (g m^2/s^2 m^6).
pub const VDW_B: f64 = 2.23224 * 1e-76;
/// The largest change of total energy the run accepts (the original's `ENERGY_VAR`).
pub const ENERGY_VAR: f64 = 1e-5;
/// Particles of the first cell; the count rises linearly with the cell's id ...
pub const PARTICLES_START: usize = 100;
/// ... towards this many in the last.
pub const PARTICLES_END: usize = 250;
/// Cells a compute reaches along x, y and z (the neighbourhood's half-widths).
pub const KAWAY: [i64; 3] = [2, 2, 1];
/// Neighbour offsets along each axis.
pub const NBRS: [i64; 3] = [2 * KAWAY[0] + 1, 2 * KAWAY[1] + 1, 2 * KAWAY[2] + 1];
/// Offsets in a cell's neighbourhood, itself included (75).
pub const NUM_NEIGHBORS: usize = (NBRS[0] * NBRS[1] * NBRS[2]) as usize;
/// Computes each cell makes: the offsets from its own on, in offset order (38).
pub const COMPUTES_PER_CELL: usize = NUM_NEIGHBORS / 2 + 1;
/// Particles closer than this interact (angstroms).
pub const CUTOFF: f64 = 26.0;
/// Cell side along each axis: (cutoff + a margin of 4) over the reach.
pub const CELL_SIZE: [f64; 3] = [15.0, 15.0, 30.0];
/// Steps between two exchanges of the particles that left their cell.
pub const MIGRATE_STEPS: u32 = 20;
/// The largest speed along any axis (angstroms per femtosecond).
pub const MAX_VELOCITY: f64 = 0.1;
/// Lattice points per side of the initial placement, and their spacing.
const PERDIM: usize = 10;
const GAP: f64 = 3.0;

/// A three-vector.
pub type Vec3 = [f64; 3];

/// One particle: mass, position and velocity (the original keeps its acceleration
/// too, which nothing reads between steps).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Particle {
    /// Grams.
    pub mass: f64,
    /// Angstroms.
    pub pos: Vec3,
    /// Angstroms per femtosecond.
    pub vel: Vec3,
}

/// The 48-bit linear congruential generator of POSIX `drand48`, so that the initial
/// velocities are the original's.
pub struct Drand48(u64);

impl Drand48 {
    /// Seeded as `srand48(seed)` seeds it: the seed's low 32 bits above 0x330E.
    pub fn new(seed: u32) -> Self {
        Drand48((u64::from(seed) << 16) | 0x330E)
    }
    /// The next number in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0 = (self.0.wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB)) & ((1 << 48) - 1);
        self.0 as f64 / (1u64 << 48) as f64
    }
}

/// The neighbour offset of slot `num` (0..75), x slowest, each axis from -reach.
pub fn offset(num: usize) -> [i64; 3] {
    let n = num as i64;
    [
        n / (NBRS[1] * NBRS[2]) - KAWAY[0],
        (n % (NBRS[1] * NBRS[2])) / NBRS[2] - KAWAY[1],
        n % NBRS[2] - KAWAY[2],
    ]
}

/// The slot of a neighbour offset (the inverse of [`offset`]).
pub fn slot(d: [i64; 3]) -> usize {
    ((d[0] + KAWAY[0]) * NBRS[1] * NBRS[2] + (d[1] + KAWAY[1]) * NBRS[2] + d[2] + KAWAY[2]) as usize
}

/// Particles cell `id` of `cells` starts with.
pub fn initial_count(id: usize, cells: usize) -> usize {
    PARTICLES_START + id * (PARTICLES_END - PARTICLES_START) / cells
}

/// Cell `id` at `at`'s particles at the start: on a lattice of spacing 3 inside the
/// cell, with random velocities of at most a tenth of the limit per axis.
pub fn initial_particles(id: usize, at: [usize; 3], cells: usize) -> Vec<Particle> {
    let mut rng = Drand48::new(id as u32);
    let (ky, kz) = (KAWAY[1] as usize, KAWAY[2] as usize);
    (0..initial_count(id, cells))
        .map(|i| {
            let lattice = [
                (i * ky * kz) / (PERDIM * PERDIM),
                ((i * kz) / PERDIM) % (PERDIM / ky),
                i % (PERDIM / kz),
            ];
            let pos = std::array::from_fn(|a| {
                GAP / 2.0 + at[a] as f64 * CELL_SIZE[a] + lattice[a] as f64 * GAP
            });
            let vel = std::array::from_fn(|_| (rng.next_f64() - 0.5) * 0.2 * MAX_VELOCITY);
            Particle {
                mass: MASS,
                pos,
                vel,
            }
        })
        .collect()
}

fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The force's factor for two particles `r2` apart (squared angstroms), and their
/// potential energy if `with_energy` (else 0; the original sums it only at the
/// first and last steps); None beyond the cutoff or closer than one angstrom.
/// The force on the first is its separation from the second times the factor.
#[inline(always)]
fn lennard_jones(r2: f64, with_energy: bool) -> Option<(f64, f64)> {
    if r2 <= 1.0 || r2 >= CUTOFF * CUTOFF {
        return None;
    }
    let r2 = r2 * 1e-20;
    let r6 = r2 * r2 * r2;
    let r12 = r6 * r6;
    let f = (12.0 * VDW_A) / r12 - (6.0 * VDW_B) / r6;
    let energy = if with_energy {
        VDW_A / r12 - VDW_B / r6
    } else {
        0.0
    };
    Some((f / r2 * 1e-10, energy))
}

/// The forces `p` and the particles of `others` exert on each other: added to
/// `fp` and subtracted from `fo` (one per other), in order, as is the potential
/// energy to `energy`.
#[inline(always)]
fn interact(
    p: Vec3,
    fp: &mut Vec3,
    others: &[Vec3],
    fo: &mut [Vec3],
    energy: &mut f64,
    with_energy: bool,
) {
    let mut sum = *energy;
    let [mut fx, mut fy, mut fz] = *fp;
    for (q, fq) in others.iter().zip(fo.iter_mut()) {
        let (dx, dy, dz) = (p[0] - q[0], p[1] - q[1], p[2] - q[2]);
        if let Some((s, e)) = lennard_jones(dx * dx + dy * dy + dz * dz, with_energy) {
            sum += e;
            let (gx, gy, gz) = (dx * s, dy * s, dz * s);
            fx += gx;
            fy += gy;
            fz += gz;
            fq[0] -= gx;
            fq[1] -= gy;
            fq[2] -= gz;
        }
    }
    *fp = [fx, fy, fz];
    *energy = sum;
}

/// Forces between the particles of one cell, and (if `with_energy`) their
/// potential energy.
pub fn self_forces(pos: &[Vec3], with_energy: bool) -> (Vec<Vec3>, f64) {
    let mut f = vec![[0.0; 3]; pos.len()];
    let mut energy = 0.0;
    for (i, &p) in pos.iter().enumerate() {
        let (head, tail) = f.split_at_mut(i + 1);
        interact(
            p,
            &mut head[i],
            &pos[i + 1..],
            tail,
            &mut energy,
            with_energy,
        );
    }
    (f, energy)
}

/// Forces between the particles of two cells (`first` already moved to the image
/// nearest `second`), and (if `with_energy`) their potential energy.
pub fn pair_forces(
    first: &[Vec3],
    second: &[Vec3],
    with_energy: bool,
) -> (Vec<Vec3>, Vec<Vec3>, f64) {
    let mut f1 = vec![[0.0; 3]; first.len()];
    let mut f2 = vec![[0.0; 3]; second.len()];
    let mut energy = 0.0;
    for (&p, fp) in first.iter().zip(f1.iter_mut()) {
        interact(p, fp, second, &mut f2, &mut energy, with_energy);
    }
    (f1, f2, energy)
}

/// Move `first`'s positions by the box's length along each axis where its cell and
/// `second`'s are more than one cell apart, towards `second`'s side.
pub fn to_nearest_image(first: &mut [Vec3], c1: [usize; 3], c2: [usize; 3], dims: [usize; 3]) {
    for a in 0..3 {
        if c1[a].abs_diff(c2[a]) > 1 {
            let len = CELL_SIZE[a] * dims[a] as f64;
            let shift = if c2[a] < c1[a] { -len } else { len };
            for p in first.iter_mut() {
                p[a] += shift;
            }
        }
    }
}

/// Kinetic energy of `p` (in the original's millijoule scale).
pub fn kinetic(p: &Particle) -> f64 {
    0.5 * p.mass * dot(p.vel, p.vel) * 1e10
}

/// One step of `p` under `force`: velocity, clamped per axis, then position.
pub fn integrate(p: &mut Particle, force: Vec3) {
    for (a, f) in force.into_iter().enumerate() {
        let acc = f * (1.0 / p.mass);
        let v = p.vel[a] + acc * 1e-20;
        p.vel[a] = v.clamp(-MAX_VELOCITY, MAX_VELOCITY);
        p.pos[a] += p.vel[a];
    }
}

/// The offset (each axis in -2..=2) of the cell a particle at `pos` is in, seen
/// from the cell at `at`.
pub fn cell_offset(pos: Vec3, at: [usize; 3]) -> [i64; 3] {
    std::array::from_fn(|a| {
        let (lo, size) = (at[a] as f64 * CELL_SIZE[a], CELL_SIZE[a]);
        let x = pos[a];
        if x < lo - size {
            -2
        } else if x < lo {
            -1
        } else if x > lo + 2.0 * size {
            2
        } else if x > lo + size {
            1
        } else {
            0
        }
    })
}

/// Whether an offset is inside the neighbourhood a cell sends particles to.
pub fn in_reach(d: [i64; 3]) -> bool {
    (0..3).all(|a| d[a].abs() <= KAWAY[a])
}

/// Bring a position that left the periodic box back in from the other side.
pub fn wrap_into_box(pos: &mut Vec3, dims: [usize; 3]) {
    for a in 0..3 {
        let len = CELL_SIZE[a] * dims[a] as f64;
        if pos[a] < 0.0 {
            pos[a] += len;
        }
        if pos[a] > len {
            pos[a] -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drand48_follows_the_posix_sequence() {
        // srand48(0): X0 = 0x330E, X1 = a * X0 + c mod 2^48.
        let mut r = Drand48::new(0);
        let x1 = (0x5_DEEC_E66Du64 * 0x330E + 0xB) & ((1 << 48) - 1);
        assert_eq!(r.next_f64(), x1 as f64 / (1u64 << 48) as f64);
        assert!((0.0..1.0).contains(&r.next_f64()));
    }

    #[test]
    fn offsets_and_slots_are_inverse() {
        for num in 0..NUM_NEIGHBORS {
            assert_eq!(slot(offset(num)), num);
        }
        assert_eq!(offset(NUM_NEIGHBORS / 2), [0, 0, 0]);
        assert_eq!(COMPUTES_PER_CELL, 38);
    }

    #[test]
    fn forces_are_equal_and_opposite_and_vanish_beyond_the_cutoff() {
        let (f, e) = self_forces(&[[0.0; 3], [3.0, 0.0, 0.0], [40.0, 0.0, 0.0]], true);
        assert_eq!(f[0][0], -f[1][0]);
        assert!(f[0][0] < 0.0, "repelled at 3 angstroms: {f:?}");
        assert_eq!(f[2], [0.0; 3]);
        assert!(e.is_finite() && e != 0.0);
        let (f1, f2, e2) = pair_forces(&[[0.0; 3]], &[[3.0, 0.0, 0.0]], true);
        assert_eq!(self_forces(&[[0.0; 3], [3.0, 0.0, 0.0]], false).1, 0.0);
        assert_eq!((f1[0], f2[0], e2), (f[0], f[1], e));
    }

    #[test]
    fn particles_start_inside_their_cell() {
        let cells = 27;
        let ps = initial_particles(26, [2, 2, 2], cells);
        assert_eq!(ps.len(), PARTICLES_START + 26 * 150 / 27);
        for p in &ps {
            assert_eq!(cell_offset(p.pos, [2, 2, 2]), [0, 0, 0], "{p:?}");
            assert!(p.vel.iter().all(|v| v.abs() <= 0.1 * MAX_VELOCITY));
        }
    }

    #[test]
    fn a_particle_leaving_the_box_comes_back_on_the_other_side() {
        let mut p = [-1.0, 46.0, 10.0];
        wrap_into_box(&mut p, [3, 3, 3]);
        assert_eq!(p, [44.0, 1.0, 10.0]);
        assert_eq!(cell_offset([-1.0, 16.0, 10.0], [0, 0, 0]), [-1, 1, 0]);
    }
}
