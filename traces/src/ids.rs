//! How PEs and ranks become the process and thread ids of a trace file, and back.
//! Perfetto takes pid 0 for the kernel's swapper and renames its threads, so both
//! writers number from 1: PE n is thread n + 1 and rank r is process r + 1. The names
//! (`PE n`, `rank r`) and everything the tools show keep the run's own numbers.

/// The pid or tid written for rank or PE `n`.
pub fn file_id(n: u32) -> u32 {
    // PEs and ranks stay far below u32::MAX (`--pes` is at most 2^24).
    n.saturating_add(1)
}

/// The rank or PE of a pid or tid a chorus writer wrote ([`file_id`]); id 0, which
/// chorus never writes, counts as 0.
pub fn run_id(id: u32) -> u32 {
    id.saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_pe_or_rank_is_written_as_0_and_each_reads_back() {
        for n in [0, 1, 7, 16_777_215] {
            assert_ne!(file_id(n), 0);
            assert_eq!(run_id(file_id(n)), n);
        }
    }
}
