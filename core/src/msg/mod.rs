//! Messages: user payloads, array addresses, callbacks, reduction values, and the
//! envelope that carries them between PEs. Imports only `base`.

pub mod array;
pub mod callback;
pub mod envelope;
// The one audited module outside the mpi layer that uses `unsafe` (see its header).
pub(crate) mod dest;
pub(crate) mod kind;
#[allow(unsafe_code)]
mod local;
mod message;
pub mod payload;
pub mod reduction;
pub(crate) mod section_spec;
