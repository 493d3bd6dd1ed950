//! Pivot selection by sampling: a task's members agree, without a message, on a few
//! random positions of the task (a fixed hash of the seed, the task and the draw);
//! the members holding them contribute those elements to one allgather, and every
//! member takes the median sample as the pivot. With one sample this is the paper's
//! random pivot; more samples make the split closer to even.

use super::key::Elem;
use super::task::TaskKey;
use chorus_sections::hash::mix64;

/// The task's sample positions, each in a..b (drawn with replacement).
pub fn sample_positions(seed: u64, key: TaskKey, samples: u32) -> impl Iterator<Item = u64> {
    let span = key.b - key.a;
    let base = mix64(seed ^ mix64(key.a ^ mix64(key.b ^ mix64(u64::from(key.depth)))));
    (0..u64::from(samples)).map(move |j| key.a + mix64(base ^ j) % span)
}

/// The samples of `elems` (this member's elements of the task, which hold the
/// task's positions first..first+len) as flat (key, origin) words.
pub fn local_samples(
    seed: u64,
    key: TaskKey,
    samples: u32,
    first: u64,
    elems: &[Elem],
) -> Vec<u64> {
    let end = first + elems.len() as u64;
    sample_positions(seed, key, samples)
        .filter(|&pos| first <= pos && pos < end)
        .flat_map(|pos| {
            let (k, g) = elems[(pos - first) as usize];
            [k, g]
        })
        .collect()
}

/// The median of flat (key, origin) words; None if there are none.
pub fn median(words: &[u64]) -> Option<Elem> {
    let mut s: Vec<Elem> = words.chunks_exact(2).map(|c| (c[0], c[1])).collect();
    if s.is_empty() {
        return None;
    }
    let mid = s.len() / 2;
    Some(*s.select_nth_unstable(mid).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_stay_in_the_task_and_members_see_the_same_draws() {
        let key = TaskKey {
            a: 10,
            b: 17,
            depth: 3,
        };
        let all: Vec<u64> = sample_positions(9, key, 50).collect();
        assert!(all.iter().all(|&p| (10..17).contains(&p)));
        assert_eq!(all, sample_positions(9, key, 50).collect::<Vec<_>>());
        let elems: Vec<Elem> = (0..7).map(|i| (100 + i, i)).collect();
        let left = local_samples(9, key, 50, 10, &elems[..3]);
        let right = local_samples(9, key, 50, 13, &elems[3..]);
        assert_eq!(left.len() + right.len(), 100);
        assert_eq!(median(&[5, 0, 1, 1, 9, 2]), Some((5, 0)));
        assert_eq!(median(&[]), None);
    }
}
