//! The sim layer's cost model (LogP-style), in integer nanoseconds.
//!
//! A message of `b` bytes (envelope header included) sent at virtual time `t` by a
//! handler on PE i:
//! - costs the sender `o_send` of CPU: its clock moves from `t` to `t + o_send`;
//! - arrives at PE j at `t + o_send + alpha + beta*b` (plus, with `jitter`, a delay
//!   drawn from 0..=jitter by the seed, which lets tests reorder messages on purpose);
//! - waits there until PE j is free (a PE is a single server; arrivals queue, and the
//!   highest-priority ready message runs first);
//! - costs the receiver `o_recv + gamma*b` (copying, decoding) plus the fixed
//!   `handler` cost before the handler runs; the handler then adds what it charges
//!   with `ctx.work(d)`.
//!
//! Messages a PE sends to itself skip the network: no `o_send`, `alpha`, `beta`,
//! `o_recv` or `gamma`, only the `handler` cost. With `contention` on, each PE's
//! outgoing link and incoming link carry one message at a time (`beta*b` each), so
//! messages fanning in or out of one PE serialise; ingress is booked in send order,
//! an approximation that is exact when sends happen in arrival order.

use crate::base::config::{SimArgs, SimPreset};

/// Costs of the network and of message handling, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkModel {
    /// Latency of one message through the network (alpha).
    pub alpha_ns: u64,
    /// Network time per byte (beta = 1 / bandwidth).
    pub beta_ns_per_byte: f64,
    /// Sender CPU overhead per message (o_send).
    pub send_overhead_ns: u64,
    /// Receiver CPU overhead per message (o_recv).
    pub recv_overhead_ns: u64,
    /// Receiver CPU time per byte (gamma).
    pub gamma_ns_per_byte: f64,
    /// Fixed CPU cost of every handler.
    pub handler_ns: u64,
    /// One message at a time on each PE's outgoing and incoming link.
    pub contention: bool,
    /// Largest extra delay of a network message, drawn per message from the seed.
    pub jitter_ns: u64,
}

impl NetworkModel {
    /// The starting point of a preset.
    ///
    /// `Bgp` approximates Blue Gene/P as the papers' runs saw it: about 2.5 us MPI
    /// latency between nodes, 425 MB/s torus links (2.35 ns/B), and 850 MHz cores
    /// that spend about 1 us of runtime overhead on each side of a message and copy
    /// at about 2 GB/s. `Cluster` is an HDR InfiniBand cluster: 1 us latency,
    /// 12.5 GB/s (0.08 ns/B), 0.2 us per side, 20 GB/s copies.
    pub fn preset(p: SimPreset) -> Self {
        match p {
            SimPreset::Bgp => NetworkModel {
                alpha_ns: 2_500,
                beta_ns_per_byte: 2.35,
                send_overhead_ns: 1_000,
                recv_overhead_ns: 1_000,
                gamma_ns_per_byte: 0.5,
                handler_ns: 500,
                contention: false,
                jitter_ns: 0,
            },
            SimPreset::Cluster => NetworkModel {
                alpha_ns: 1_000,
                beta_ns_per_byte: 0.08,
                send_overhead_ns: 200,
                recv_overhead_ns: 200,
                gamma_ns_per_byte: 0.05,
                handler_ns: 100,
                contention: false,
                jitter_ns: 0,
            },
            SimPreset::Ideal => NetworkModel {
                alpha_ns: 0,
                beta_ns_per_byte: 0.0,
                send_overhead_ns: 0,
                recv_overhead_ns: 0,
                gamma_ns_per_byte: 0.0,
                handler_ns: 0,
                contention: false,
                jitter_ns: 0,
            },
        }
    }

    /// The preset with the flags that were given applied over it.
    pub fn from_args(a: &SimArgs) -> Self {
        let us = |v: f64| (v * 1e3).round() as u64;
        let mut m = Self::preset(a.chosen_preset());
        if let Some(v) = a.alpha_us {
            m.alpha_ns = us(v);
        }
        if let Some(v) = a.beta_ns_per_byte {
            m.beta_ns_per_byte = v;
        }
        if let Some(v) = a.overhead_us {
            m.send_overhead_ns = us(v);
            m.recv_overhead_ns = us(v);
        }
        if let Some(v) = a.send_overhead_us {
            m.send_overhead_ns = us(v);
        }
        if let Some(v) = a.recv_overhead_us {
            m.recv_overhead_ns = us(v);
        }
        if let Some(v) = a.gamma_ns_per_byte {
            m.gamma_ns_per_byte = v;
        }
        if let Some(v) = a.handler_us {
            m.handler_ns = us(v);
        }
        if let Some(v) = a.jitter_us {
            m.jitter_ns = us(v);
        }
        m.contention = a.contention;
        m
    }

    /// Time `b` bytes occupy a link: beta*b, rounded to the nanosecond.
    pub fn wire_ns(&self, bytes: u64) -> u64 {
        (self.beta_ns_per_byte * bytes as f64).round() as u64
    }

    /// Receiver CPU time for a message of `b` bytes from another PE: o_recv + gamma*b.
    pub fn receive_ns(&self, bytes: u64) -> u64 {
        self.recv_overhead_ns + (self.gamma_ns_per_byte * bytes as f64).round() as u64
    }
}

/// Link occupancy per PE, kept only when contention is modelled.
pub(crate) struct Links {
    out_free: Vec<u64>,
    in_free: Vec<u64>,
}

impl Links {
    pub(crate) fn new(npes: usize) -> Self {
        Links {
            out_free: vec![0; npes],
            in_free: vec![0; npes],
        }
    }

    /// Every PE's link bookings, (outgoing, incoming), for a checkpoint.
    pub(crate) fn snapshot(&self) -> (Vec<u64>, Vec<u64>) {
        (self.out_free.clone(), self.in_free.clone())
    }

    /// Take up the bookings `snapshot` gave, if they are for as many PEs.
    pub(crate) fn restore(&mut self, (out_free, in_free): &(Vec<u64>, Vec<u64>)) {
        if out_free.len() == self.out_free.len() && in_free.len() == self.in_free.len() {
            self.out_free.clone_from(out_free);
            self.in_free.clone_from(in_free);
        }
    }

    /// Arrival time of a message of `wire` link-nanoseconds leaving `from` at
    /// `depart` for `to`, booking both links.
    pub(crate) fn book(
        &mut self,
        from: usize,
        to: usize,
        depart: u64,
        wire: u64,
        alpha: u64,
    ) -> u64 {
        let start = depart.max(self.out_free[from]);
        self.out_free[from] = start + wire;
        let arrive = (start + alpha + wire).max(self.in_free[to] + wire);
        self.in_free[to] = arrive;
        arrive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_preset() {
        let a = SimArgs {
            preset: Some(SimPreset::Bgp),
            alpha_us: Some(3.0),
            overhead_us: Some(0.5),
            recv_overhead_us: Some(0.25),
            ..SimArgs::default()
        };
        let m = NetworkModel::from_args(&a);
        assert_eq!(m.alpha_ns, 3_000);
        assert_eq!(m.send_overhead_ns, 500);
        assert_eq!(m.recv_overhead_ns, 250);
        assert_eq!(m.beta_ns_per_byte, 2.35, "unset values keep the preset's");
    }

    #[test]
    fn contended_links_serialise_a_fan_in() {
        let mut l = Links::new(3);
        // Two 100 ns messages from PEs 0 and 1 to PE 2 at the same time: the second
        // finishes arriving one transfer after the first.
        assert_eq!(l.book(0, 2, 0, 100, 1_000), 1_100);
        assert_eq!(l.book(1, 2, 0, 100, 1_000), 1_200);
        // PE 0 sending again at once waits for its own link.
        assert_eq!(l.book(0, 1, 0, 100, 1_000), 1_200);
    }
}
