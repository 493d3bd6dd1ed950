//! The per-phase breakdown of a creation report on sim: the phases' times sum to the
//! creation's time and their messages to its messages, and the message counts follow
//! the langer paper's formulas (section VII-C) wherever those are exact.

use chorus_core::{Config, Layer};
use chorus_sections::host::batch::{self, Planned, PlannedParent, Step};
use chorus_sections::host::{available, CreationReport, Membership};
use chorus_sections::kary;
use chorus_sections::protocol::{Algorithm, Filler};

/// (messages between PEs + messages to itself) of the phase `name`, 0 if absent.
fn total(r: &CreationReport, name: &str) -> u64 {
    (r.phases.iter())
        .filter(|p| p.name == name)
        .map(|p| p.messages + p.local)
        .sum()
}

fn run(n: u32, k: u32, fraction: f64, algorithms: &[Algorithm]) -> Vec<CreationReport> {
    let membership = Membership::Random { fraction, seed: 7 };
    let stages: Vec<Vec<Step>> = (algorithms.iter())
        .map(|&algorithm| {
            vec![Step::Create(Planned {
                creator: 0,
                parent: PlannedParent::World,
                algorithm,
                k,
                membership: membership.clone(),
            })]
        })
        .collect();
    let config = Config {
        layer: Layer::Sim,
        ..Config::with_pes(n)
    };
    batch::run(config, stages, false).unwrap().reports
}

#[test]
fn phases_sum_to_the_total_and_counts_follow_the_papers_formulas() {
    let algorithms = available();
    for (n, k) in [(60, 3), (200, 4)] {
        for fraction in [0.1, 0.5, 1.0] {
            let membership = Membership::Random { fraction, seed: 7 };
            let root_in = membership.colour(0).is_some();
            let reports = run(n, k, fraction, &algorithms);
            let mut no_filler_passes = None;
            for (alg, r) in algorithms.iter().zip(&reports) {
                let at = format!("{} n {n} k {k} p {fraction}", alg.name());
                let (m, n64) = (r.members, u64::from(n));
                let times: f64 = r.phases.iter().map(|p| p.time_us).sum();
                assert!(
                    (times - r.time_us).abs() <= 1e-6 * r.time_us.max(1.0),
                    "{at}"
                );
                let msgs: u64 = r.phases.iter().map(|p| p.messages).sum();
                assert_eq!(msgs, r.messages, "{at}");
                assert_eq!(r.phases.last().map(|p| p.name.as_str()), Some("finish"));
                if m == 0 {
                    continue;
                }
                match alg {
                    // M_c = (n - 1) + (m - 1), plus the hand-over of the roster when
                    // the parent's root is not a member.
                    Algorithm::Centralized => {
                        assert_eq!(total(r, "up"), n64 - 1, "{at}");
                        assert_eq!(total(r, "down"), m - 1 + u64::from(!root_in), "{at}");
                        assert_eq!(r.messages, n64 + m - 2 + u64::from(!root_in), "{at}");
                    }
                    // Hashing messages 3m + t (t internal ranks): 2m announcements
                    // (2m - 1: rank 0 has no parent to announce to) and t + m answers
                    // (m - 1 parent ids: rank 0 gets none).
                    Algorithm::ShrinkAndHash(filler) => {
                        let m32 = m as u32;
                        let t = (0..m32).filter(|&r| kary::num_children(r, m32, k) > 0);
                        let t = t.count() as u64;
                        assert_eq!(t, (m - 1).div_ceil(u64::from(k)), "{at}");
                        assert_eq!(total(r, "announce"), 2 * m - 1, "{at}");
                        assert_eq!(total(r, "answer"), t + m - 1, "{at}");
                        let passes = total(r, "up") + total(r, "down");
                        if *filler == Filler::None {
                            assert_eq!(total(r, "up"), n64 - 1, "{at}");
                            no_filler_passes = Some(passes);
                        }
                        if fraction == 1.0 {
                            // Nothing to shrink: the parent tree up and down.
                            assert_eq!(passes, 2 * (n64 - 1), "{at}");
                        }
                    }
                    Algorithm::ShrinkAndBalance(_) => {}
                }
            }
            assert!(no_filler_passes.is_some());
        }
    }
}
