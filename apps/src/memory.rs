//! Up-front memory checks for size flags: a run whose own figures (bytes per PE,
//! per key, per message) say it needs more memory than the machine has left is a
//! usage error naming both, not an abort or a panic minutes later.

/// Memory per simulated PE, bytes: `hello --layer sim --pes 400000` peaked at
/// 664 MB of address space (1.7 KB per PE, which `ulimit -v` counts) and 572 MB
/// resident, above the 1.2 KB per PE `chorus-bench sim-scale` peaks at (README
/// *The sim layer*). Each PE holds a group member and its part of a reduction.
pub const SIM_BYTES_PER_PE: u64 = 1_800;

/// Memory per key of a radix sort, bytes, over the key's own size: `radix --layer
/// sim --pes 8 --keys-per-pe 1000000` peaked at 124 MB with u32 keys and 238 MB
/// with u64 (about 13 and 27 bytes per key above the process's 20 MB): the keys,
/// their moved copy and the buckets' buffers.
pub const RADIX_BYTES_PER_KEY_BYTE: u64 = 4;

/// The memory this process may still use, bytes: the least of `MemAvailable` of
/// `/proc/meminfo`, the cgroup's limit less its usage and what `ulimit -v` leaves;
/// `None` where none can be read (the check is then skipped).
pub fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let line = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb.saturating_mul(1024))
    });
    let read = |f: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{f}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let cgroup =
        read("memory.max").map(|max| max.saturating_sub(read("memory.current").unwrap_or(0)));
    [meminfo, cgroup, address_space_left()]
        .into_iter()
        .flatten()
        .min()
}

/// What a `ulimit -v` (RLIMIT_AS) leaves this process: its soft limit less the
/// address space already mapped, from `/proc/self/limits` and `/proc/self/status`.
fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let vm = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kb: u64 = vm.split_whitespace().nth(1)?.parse().ok()?;
    Some(soft.saturating_sub(kb.saturating_mul(1024)))
}

/// Refuses `what` (the flags that size it) when `need` bytes exceed what is available.
pub fn check(what: &str, need: u64) -> Result<(), String> {
    check_against(what, need, available())
}

/// [`check`] against `avail` bytes.
pub fn check_against(what: &str, need: u64, avail: Option<u64>) -> Result<(), String> {
    match avail {
        Some(avail) if need > avail => Err(format!(
            "{what} needs about {} of memory, but {} is available (MemAvailable, or the cgroup or ulimit -v limit if lower); use a smaller size",
            gib(need),
            gib(avail)
        )),
        _ => Ok(()),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_need_above_what_is_available_names_both() {
        let e = check_against("--pes 9", 3 << 30, Some(1 << 30)).unwrap_err();
        assert!(
            e.contains("--pes 9 needs about 3.0 GiB") && e.contains("1.0 GiB is available"),
            "{e}"
        );
        assert!(check_against("--pes 9", 1 << 20, Some(1 << 30)).is_ok());
        assert!(
            check_against("--pes 9", u64::MAX, None).is_ok(),
            "unknown: not refused"
        );
        assert!(
            available().is_some_and(|a| a > 0),
            "Linux has /proc/meminfo"
        );
    }
}
