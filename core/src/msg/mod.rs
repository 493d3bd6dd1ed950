//! Messages: user payloads, array addresses, callbacks, reduction values, and the
//! envelope that carries them between PEs. Imports only `base`.

pub mod array;
pub mod callback;
pub mod envelope;
pub mod payload;
pub mod reduction;
