//! Which CPU a threads-layer PE runs on. When every PE has a core of its own (the PEs
//! spin while idle, see `threads::idle_spin`), each is pinned to a CPU of its own:
//! unpinned, the scheduler wakes a parked PE on the CPU of the PE that woke it, and
//! two PEs then took turns on one core with the other idle (a collective loop 206 us
//! instead of 2 us, for the rest of the run) until its balancing parted them.

use std::time::Duration;

/// The CPU for each of `pes` PEs, in PE order, if they should be pinned: when they
/// spin (`spin` is not zero), there are at least two, and the process may run on at
/// least as many CPUs (a `taskset` mask is kept to).
pub(crate) fn plan(pes: usize, spin: Duration) -> Option<Vec<usize>> {
    if spin.is_zero() || pes < 2 {
        return None;
    }
    choose(pes, &allowed_cpus())
}

/// The first `pes` of the `allowed` CPUs, if there are that many.
fn choose(pes: usize, allowed: &[usize]) -> Option<Vec<usize>> {
    (allowed.len() >= pes).then(|| allowed[..pes].to_vec())
}

/// The CPUs this process may run on; none if the system does not say.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    use rustix::thread::{sched_getaffinity, CpuSet};
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Pin the calling thread to `cpu`. A refusal (a container's policy) leaves it
/// where the scheduler puts it: slower on an idle machine, never wrong.
#[cfg(target_os = "linux")]
pub(crate) fn pin_current_thread(cpu: usize) -> bool {
    use rustix::thread::{sched_setaffinity, CpuSet};
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).is_ok()
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_current_thread(_cpu: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pes_are_pinned_only_when_they_spin_and_each_has_a_cpu() {
        let spin = Duration::from_micros(100);
        assert_eq!(choose(2, &[0, 1]), Some(vec![0, 1]));
        assert_eq!(choose(2, &[3, 5, 7]), Some(vec![3, 5]), "within the mask");
        assert_eq!(choose(3, &[0, 1]), None, "more PEs than CPUs");
        assert_eq!(plan(2, Duration::ZERO), None, "no spin: the PEs park");
        assert_eq!(
            plan(1, spin),
            None,
            "one PE has nothing to share a core with"
        );
        if let Some(cpus) = plan(2, spin) {
            assert!(allowed_cpus().len() >= 2 && cpus.len() == 2 && cpus[0] != cpus[1]);
        }
    }

    #[test]
    fn a_thread_pinned_to_an_allowed_cpu_runs_there() {
        let Some(&cpu) = allowed_cpus().last() else {
            return;
        };
        let on = std::thread::spawn(move || {
            let pinned = pin_current_thread(cpu);
            (pinned, allowed_cpus())
        })
        .join()
        .expect("the pinned thread");
        if on.0 {
            assert_eq!(on.1, vec![cpu], "the thread's mask is its one CPU");
        }
    }
}
