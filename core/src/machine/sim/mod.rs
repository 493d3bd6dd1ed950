//! The sim layer's transport: virtual time, the network model, the event list and
//! the ports through which simulated PEs send. The simulator that runs PEs by these
//! events is in `launch::sim`.

pub(crate) mod events;
pub mod network;
pub(crate) mod port;
pub mod resume;
pub mod stats;
