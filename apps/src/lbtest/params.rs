//! What an lb-test run is asked to do: the objects' graph, their loads and how the
//! loads change, all drawn from the seed so every run (and the serial check) sees
//! the same.

use chorus_core::mix64;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The most objects an lb-test run takes.
pub const MAX_OBJECTS: usize = 1 << 24;

/// How the objects are connected; every graph is symmetric (a neighbour's neighbour
/// is itself), so each object receives from exactly the objects it sends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Topology {
    /// Object i talks to i-1 and i+1 (mod n).
    Ring,
    /// A 2-D torus of rows x columns, columns the largest divisor of n up to sqrt(n);
    /// each object talks to its four neighbours.
    Mesh,
    /// A random circulant graph: `degree / 2` offsets drawn from the seed, and object
    /// i talks to i +- each offset (mod n).
    Random,
}

/// How an object's load is drawn for a phase (a run of `change_every` steps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum LoadDist {
    /// Uniformly between the base and `ratio` times the base.
    Uniform,
    /// `ratio` times the base for a random tenth of the objects, the base for the rest.
    Skew,
    /// Rising linearly from the base to `ratio` times the base along the objects,
    /// from a starting object drawn per phase.
    Linear,
}

/// The objects, their graph and their loads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LbTestParams {
    /// Objects in the array.
    pub objects: usize,
    /// Steps; at each every object sends to its neighbours and computes.
    pub steps: u32,
    /// The graph.
    pub topology: Topology,
    /// Neighbours per object of the random graph (even; at most objects - 1).
    pub degree: usize,
    /// The load distribution.
    pub load: LoadDist,
    /// The lightest load, microseconds.
    pub base_us: f64,
    /// The heaviest load over the lightest.
    pub ratio: f64,
    /// Steps between changes of the loads.
    pub change_every: u32,
    /// Seed of the graph, the loads and the messages' values.
    pub seed: u64,
}

/// Why lb-test parameters cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// No objects, or too many.
    #[error("--objects {0}: give from 1 to {MAX_OBJECTS}")]
    Objects(usize),
    /// The random graph's degree is odd, zero, or not below the objects.
    #[error(
        "--degree {degree} with {objects} objects: give an even degree from 2 to {objects} - 1"
    )]
    Degree {
        /// The degree asked for.
        degree: usize,
        /// Objects in the run.
        objects: usize,
    },
}

/// A value in [0, 1) from a hash.
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

impl LbTestParams {
    /// Check the sizes (the flags range-check the rest).
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(1..=MAX_OBJECTS).contains(&self.objects) {
            return Err(ParamError::Objects(self.objects));
        }
        let d = self.degree;
        if self.topology == Topology::Random && (d < 2 || d % 2 == 1 || d >= self.objects) {
            return Err(ParamError::Degree {
                degree: d,
                objects: self.objects,
            });
        }
        Ok(())
    }

    /// Columns of the mesh: the largest divisor of the object count up to its root.
    pub fn mesh_columns(&self) -> usize {
        let n = self.objects;
        (1..=n)
            .take_while(|c| c * c <= n)
            .filter(|&c| n.is_multiple_of(c))
            .last()
            .unwrap_or(1)
    }

    /// The objects `i` sends to and receives from, sorted, without itself.
    pub fn neighbours(&self, i: usize) -> Vec<usize> {
        let n = self.objects;
        let (plus, minus) = (|k: usize| (i + k) % n, |k: usize| (i + n - k % n) % n);
        let mut out = match self.topology {
            Topology::Ring => vec![plus(1), minus(1)],
            Topology::Mesh => {
                let cols = self.mesh_columns();
                let (r, c) = (i / cols, i % cols);
                let rows = n / cols;
                vec![
                    ((r + rows - 1) % rows) * cols + c,
                    ((r + 1) % rows) * cols + c,
                    r * cols + (c + cols - 1) % cols,
                    r * cols + (c + 1) % cols,
                ]
            }
            Topology::Random => (0..self.degree / 2)
                .flat_map(|k| {
                    let off = 1 + (mix64(self.seed ^ 0x7261_6e64 ^ k as u64) as usize) % (n - 1);
                    [plus(off), minus(off)]
                })
                .collect(),
        };
        out.sort_unstable();
        out.dedup();
        out.retain(|&j| j != i);
        out
    }

    /// The compute object `i` charges at `step`.
    pub fn load(&self, i: usize, step: u32) -> Duration {
        let phase = u64::from(step / self.change_every);
        let h = mix64(self.seed ^ mix64(phase) ^ (i as u64).wrapping_mul(0x9e37_79b9));
        let factor = match self.load {
            LoadDist::Uniform => 1.0 + (self.ratio - 1.0) * unit(h),
            LoadDist::Skew if unit(h) < 0.1 => self.ratio,
            LoadDist::Skew => 1.0,
            LoadDist::Linear => {
                let from = mix64(self.seed ^ phase) as usize % self.objects;
                let rank = (i + self.objects - from) % self.objects;
                let span = self.objects.saturating_sub(1).max(1) as f64;
                1.0 + (self.ratio - 1.0) * rank as f64 / span
            }
        };
        Duration::from_nanos((self.base_us * 1e3 * factor).round() as u64)
    }

    /// The value object `from` sends its neighbours at `step`.
    pub fn token(&self, from: usize, step: u32) -> u64 {
        mix64(self.seed ^ mix64(from as u64) ^ u64::from(step).wrapping_mul(0x51_7cc1))
    }

    /// What object `to` adds to its checksum for a token it received.
    pub fn receipt(to: usize, token: u64) -> u64 {
        mix64(token ^ (to as u64).rotate_left(17))
    }

    /// The sum (wrapping) of every receipt of every object over the run, computed
    /// serially: what the objects' checksums must add up to.
    pub fn serial_checksum(&self) -> u64 {
        let mut sum = 0u64;
        for i in 0..self.objects {
            let nbrs = self.neighbours(i);
            for step in 0..self.steps {
                for &j in &nbrs {
                    sum = sum.wrapping_add(Self::receipt(i, self.token(j, step)));
                }
            }
        }
        sum
    }

    /// Compute charged per step over every object, averaged over the steps, seconds.
    pub fn mean_work_per_step_s(&self) -> f64 {
        let total: f64 = (0..self.steps)
            .flat_map(|s| (0..self.objects).map(move |i| (i, s)))
            .map(|(i, s)| self.load(i, s).as_secs_f64())
            .sum();
        total / f64::from(self.steps.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(topology: Topology, objects: usize) -> LbTestParams {
        LbTestParams {
            objects,
            steps: 3,
            topology,
            degree: 4,
            load: LoadDist::Skew,
            base_us: 10.0,
            ratio: 10.0,
            change_every: 2,
            seed: 7,
        }
    }

    #[test]
    fn every_graph_is_symmetric() {
        for topology in [Topology::Ring, Topology::Mesh, Topology::Random] {
            for n in [1usize, 2, 3, 6, 12, 49, 64] {
                let p = params(topology, n);
                if p.validate().is_err() {
                    continue;
                }
                for i in 0..n {
                    for j in p.neighbours(i) {
                        assert!(j < n && j != i, "{topology:?} {n}: {i} -> {j}");
                        assert!(p.neighbours(j).contains(&i), "{topology:?} {n}: {i} -> {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_mesh_is_as_square_as_the_count_allows() {
        assert_eq!(params(Topology::Mesh, 64).mesh_columns(), 8);
        assert_eq!(params(Topology::Mesh, 12).mesh_columns(), 3);
        assert_eq!(params(Topology::Mesh, 7).mesh_columns(), 1);
        assert_eq!(params(Topology::Mesh, 64).neighbours(0), vec![1, 7, 8, 56]);
    }

    #[test]
    fn loads_stay_within_the_ratio_and_change_by_phase() {
        for load in [LoadDist::Uniform, LoadDist::Skew, LoadDist::Linear] {
            let p = LbTestParams {
                load,
                ..params(Topology::Ring, 200)
            };
            let loads: Vec<Duration> = (0..200).map(|i| p.load(i, 0)).collect();
            for d in &loads {
                assert!((10_000..=100_000).contains(&d.as_nanos()), "{load:?} {d:?}");
            }
            assert_eq!(loads, (0..200).map(|i| p.load(i, 1)).collect::<Vec<_>>());
            assert_ne!(loads, (0..200).map(|i| p.load(i, 2)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_random_degree_must_be_even_and_below_the_objects() {
        let p = LbTestParams {
            degree: 3,
            ..params(Topology::Random, 10)
        };
        assert_eq!(
            p.validate(),
            Err(ParamError::Degree {
                degree: 3,
                objects: 10
            })
        );
        let p = LbTestParams {
            degree: 10,
            ..params(Topology::Random, 10)
        };
        assert!(p.validate().is_err());
        assert_eq!(
            params(Topology::Ring, 0).validate(),
            Err(ParamError::Objects(0))
        );
    }
}
