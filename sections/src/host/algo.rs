//! Which creation protocols the builder can run, and how it builds one per PE.

use crate::host::spec::HostError;
use crate::protocol::{Algorithm, Setup};
use crate::shrink_and_hash::{self, ShrinkAndHash};

/// The state machine one PE runs.
pub(crate) type Proto = ShrinkAndHash;

/// The messages its PEs exchange.
pub type ProtoMsg = shrink_and_hash::Msg;

/// Whether this build can run `alg`.
pub(crate) fn check(alg: Algorithm) -> Result<(), HostError> {
    match alg {
        Algorithm::ShrinkAndHash(_) => Ok(()),
        other => Err(HostError::Unsupported(other)),
    }
}

/// The state machine of the PE `setup` describes.
pub(crate) fn protocol(alg: Algorithm, setup: Setup) -> Result<Proto, HostError> {
    match alg {
        Algorithm::ShrinkAndHash(filler) => Ok(ShrinkAndHash::new(setup, filler)),
        other => Err(HostError::Unsupported(other)),
    }
}

/// Every algorithm this build can run.
pub fn available() -> Vec<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .filter(|a| check(*a).is_ok())
        .collect()
}
