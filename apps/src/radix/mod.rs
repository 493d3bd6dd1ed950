//! Parallel LSD radix sort (Zagha–Blelloch) of u32/u64 keys with the histogram
//! allgather started asynchronously and overlapped with the local key movement, as
//! in the offloaded-allgather paper's section V; the blocking variant is the baseline.
#![forbid(unsafe_code)]

pub mod bucket;
pub mod driver;
pub mod key;
pub mod measure;
pub mod overlap;
pub mod params;
pub mod report;
pub mod routing;
pub mod row;
pub mod sorter;
pub mod summary;

pub use driver::{run, RadixError};
pub use key::Key;
pub use measure::{compare, Comparison};
pub use overlap::{overlap, PhaseTimes};
pub use params::RadixParams;
pub use report::SortReport;
pub use summary::{Outcome, Summary};
