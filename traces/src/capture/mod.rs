//! The run side: what a traced run does while it runs and once at its end. Each PE's
//! [`Recorder`](recorder::Recorder) buffers records and hands full buffers to the
//! shared [`Collector`](collector::Collector), which spools them to disk in the
//! [`spool`] format; at the end, [`chrome`] merges the spool into one Chrome trace
//! ([`perfetto`] into a Perfetto protobuf trace), through a [`staged`] file renamed
//! onto the output only once it is complete.

pub mod chrome;
pub mod collector;
pub(crate) mod layout;
pub mod perfetto;
pub mod recorder;
pub mod scratch;
pub mod spool;
pub mod staged;
pub mod stats;
