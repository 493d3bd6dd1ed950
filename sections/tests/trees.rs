//! Property tests of the creation algorithms, run in memory by the seeded driver
//! (joins and messages in random order): for random parents, memberships and k, every
//! algorithm and filler builds a valid section over exactly the members, of the ideal
//! height, with the message counts and per-PE state the langer paper gives.

use chorus_sections::driver::{drive, world_setups, Outcome};
use chorus_sections::host::{available, drawn, protocol};
use chorus_sections::kary;
use chorus_sections::neighbour_discovery::intermediary;
use chorus_sections::protocol::{Algorithm, Filler};
use chorus_sections::section::{check, Placement};
use proptest::prelude::*;

const TOKEN: u64 = 0xC0FFEE;

fn run(alg: Algorithm, members: &[bool], k: u32, salt: u64, seed: u64) -> Outcome {
    drive(
        world_setups(members, k, salt, TOKEN),
        |s| protocol(alg, s).expect("an available algorithm"),
        seed,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", alg.name()))
}

/// Members of the parent's k-ary tree over 0..n in preorder.
fn preorder(members: &[bool], k: u32) -> Vec<u32> {
    let n = members.len() as u32;
    let (mut out, mut stack) = (Vec::new(), vec![0u32]);
    while let Some(v) = stack.pop() {
        if members[v as usize] {
            out.push(v);
        }
        let kids: Vec<u32> = kary::children(v, n, k).collect();
        stack.extend(kids.into_iter().rev());
    }
    out
}

/// Members in each parent-tree subtree.
fn subtree_members(members: &[bool], k: u32) -> Vec<u32> {
    let n = members.len() as u32;
    let mut below: Vec<u32> = members.iter().map(|&b| u32::from(b)).collect();
    for v in (1..n).rev() {
        let p = kary::parent(v, k).expect("not the root");
        below[p as usize] += below[v as usize];
    }
    below
}

/// True if `v` is a hole with two or more child subtrees that hold members.
fn meets(members: &[bool], below: &[u32], k: u32, v: u32) -> bool {
    let n = members.len() as u32;
    !members[v as usize]
        && kary::children(v, n, k)
            .filter(|&c| below[c as usize] > 0)
            .count()
            >= 2
}

/// Holes where two or more subtrees with members meet: each sends one relocation.
fn relocations(members: &[bool], k: u32) -> u64 {
    let n = members.len() as u32;
    let below = subtree_members(members, k);
    (0..n).filter(|&v| meets(members, &below, k, v)).count() as u64
}

/// Hash-based discovery messages between distinct ids (section VI-C: 2m
/// announcements, t + m - 1 answers, less those an id sends itself).
fn hashing_messages(placed: &[Option<Placement>], k: u32, salt: u64) -> u64 {
    let n = placed.len() as u32;
    let mut holder = vec![0u32; placed.iter().flatten().count()];
    for (id, p) in placed.iter().enumerate() {
        if let Some(p) = p {
            holder[p.rank as usize] = id as u32;
        }
    }
    let m = holder.len() as u32;
    let at = |r: u32| intermediary(r, n, salt);
    let mut count = 0u64;
    for r in 0..m {
        let me = holder[r as usize];
        count += u64::from(at(r) != me); // register
        if kary::num_children(r, m, k) > 0 {
            count += u64::from(at(r) != me); // children's ids
        }
        if let Some(p) = kary::parent(r, k) {
            count += 2 * u64::from(at(p) != me); // child-of and the parent's id
        }
    }
    count
}

fn depth(placed: &[Option<Placement>]) -> u32 {
    let mut deepest = 0;
    for p in placed.iter().flatten() {
        let (mut d, mut at) = (1, p.parent);
        while let Some(id) = at {
            d += 1;
            at = placed[id as usize].as_ref().expect("a member").parent;
        }
        deepest = deepest.max(d);
    }
    deepest
}

fn ranks(placed: &[Option<Placement>]) -> Vec<Option<u32>> {
    placed.iter().map(|p| p.as_ref().map(|p| p.rank)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_algorithm_builds_the_balanced_section_of_exactly_the_members(
        n in 1u32..300,
        fraction in prop_oneof![Just(0.0), Just(1.0), 0.0f64..1.0],
        k in kary::MIN_K..=kary::MAX_K,
        draw: u64,
        seed: u64,
    ) {
        let members: Vec<bool> = (0..n).map(|pe| drawn(draw, pe, fraction)).collect();
        let m = members.iter().filter(|&&b| b).count() as u32;
        let salt = draw ^ 0x5A17;
        let pre = preorder(&members, k);
        let below = subtree_members(&members, k);
        let up = u64::from(n - 1);
        let handover = u64::from(m > 0 && !members[0]);
        for alg in available() {
            let out = run(alg, &members, k, salt, seed);
            let name = alg.name();
            // Valid: ranks a bijection onto 0..m, k-ary tree neighbours, one header.
            check(&members, &out.placed, TOKEN, k)
                .map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
            // The ideal height d_{m,k} (equation 4).
            prop_assert_eq!(depth(&out.placed), kary::height(m, k), "{}", name);
            // The same section on another schedule.
            let again = run(alg, &members, k, salt, seed ^ 0xA5A5);
            check(&members, &again.placed, TOKEN, k)
                .map_err(|e| TestCaseError::fail(format!("{name} again: {e}")))?;
            let rel = relocations(&members, k);
            match alg {
                Algorithm::Centralized | Algorithm::ShrinkAndHash(Filler::None) => {
                    // Both rank the members in the preorder of the parent's tree.
                    for (r, &id) in pre.iter().enumerate() {
                        prop_assert_eq!(out.placed[id as usize].as_ref().map(|p| p.rank), Some(r as u32), "{}", name);
                    }
                }
                _ => {}
            }
            if let Algorithm::ShrinkAndHash(_) | Algorithm::Centralized = alg {
                // Ranks depend on the members only, not on the schedule. (Not so for
                // Shrink-and-Balance: what an exporting vertex hands over depends on
                // the order its export requests arrive in.)
                prop_assert_eq!(ranks(&out.placed), ranks(&again.placed), "{}", name);
            }
            let down = u64::from(m.saturating_sub(1));
            match alg {
                Algorithm::Centralized => {
                    // M_c = (n-1) + (m-1), plus the hand-over from a non-member root.
                    prop_assert_eq!(out.messages, up + down + handover, "{}", name);
                }
                Algorithm::ShrinkAndHash(Filler::None) => {
                    // Ranges go to every non-root member and every non-root hole where
                    // two subtrees with members meet; a chain of holes is passed over.
                    // As the paper says (VII-C), that is the fillers' count within one.
                    let ranged = (1..n)
                        .filter(|&v| members[v as usize] || meets(&members, &below, k, v))
                        .count() as u64;
                    let hashing = hashing_messages(&out.placed, k, salt);
                    prop_assert_eq!(out.messages, up + ranged + hashing, "{}", name);
                    let with_fillers = rel + down + handover;
                    prop_assert!(ranged.abs_diff(with_fillers) <= 1, "{}", name);
                }
                Algorithm::ShrinkAndHash(_) => {
                    // Relocations replace the ranges through holes (section VII-C).
                    let hashing = hashing_messages(&out.placed, k, salt);
                    prop_assert_eq!(out.messages, up + rel + down + handover + hashing, "{}", name);
                }
                Algorithm::ShrinkAndBalance(_) => {
                    // No closed form (the paper has none): at least the shrinking and
                    // one placement per member; balancing adds exports and gifts.
                    prop_assert!(out.messages >= up + rel + down + handover, "{}", name);
                }
            }
        }
    }

    #[test]
    fn shrink_and_hash_without_filler_keeps_o_k_state_per_pe(
        n in 1u32..300,
        fraction in 0.0f64..1.0,
        k in kary::MIN_K..=kary::MAX_K,
        draw: u64,
        seed: u64,
    ) {
        let members: Vec<bool> = (0..n).map(|pe| drawn(draw, pe, fraction)).collect();
        let out = run(Algorithm::ShrinkAndHash(Filler::None), &members, k, draw, seed);
        let peak = out.peak_state.iter().copied().max().unwrap_or(0);
        // A constant times k, whatever n: k child reports, k children, one open
        // intermediary slot with k children, a member's k children's ids.
        prop_assert!(peak <= state_bound(k), "peak {} > {} at k={} n={}", peak, state_bound(k), k, n);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn large_parents_still_give_valid_sections_of_ideal_height(
        n in 1000u32..10_000,
        fraction in prop_oneof![Just(0.001), Just(0.01), Just(0.3), Just(0.99), 0.0f64..1.0],
        k in kary::MIN_K..=8,
        draw: u64,
        seed: u64,
    ) {
        let members: Vec<bool> = (0..n).map(|pe| drawn(draw, pe, fraction)).collect();
        let m = members.iter().filter(|&&b| b).count() as u32;
        for alg in available() {
            let out = run(alg, &members, k, draw, seed);
            check(&members, &out.placed, TOKEN, k)
                .map_err(|e| TestCaseError::fail(format!("{}: {e}", alg.name())))?;
            prop_assert_eq!(depth(&out.placed), kary::height(m, k), "{}", alg.name());
            if alg == Algorithm::ShrinkAndHash(Filler::None) {
                let peak = out.peak_state.iter().copied().max().unwrap_or(0);
                prop_assert!(peak <= state_bound(k), "peak {} at n={}", peak, n);
            }
        }
    }
}

/// The O(k) per-PE state bound asserted for Shrink-and-Hash without a filler.
fn state_bound(k: u32) -> usize {
    4 * (32 + 12 * k as usize)
}

#[test]
fn centralized_root_state_grows_with_the_section_and_shrink_and_hash_does_not() {
    let k = 3;
    let peak = |alg, n: u32| {
        let members = vec![true; n as usize];
        let out = run(alg, &members, k, 1, 2);
        out.peak_state.iter().copied().max().unwrap_or(0)
    };
    let c = Algorithm::Centralized;
    let h = Algorithm::ShrinkAndHash(Filler::None);
    // The gather holds every id at the root: 4 bytes per member at least.
    assert!(peak(c, 2000) >= 4 * 2000);
    assert!(peak(c, 2000) > 8 * peak(c, 200));
    assert_eq!(peak(h, 2000), peak(h, 200));
    assert!(peak(h, 2000) <= state_bound(k));
}
