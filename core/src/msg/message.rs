//! The traits of a message value: `Message`, what a chare may be sent, and
//! `AnyMsg`, the same value with its type erased. Both `payload` and `local` (the
//! inline store) build on them, so they live apart from either.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::Write;

/// A value that can be sent to a chare: moved within a process, bincode-encoded across
/// processes, and cloned for broadcasts.
pub trait Message: Serialize + DeserializeOwned + Clone + Send + 'static {}

impl<T: Serialize + DeserializeOwned + Clone + Send + 'static> Message for T {}

/// A message whose type is known only to its receiver.
pub trait AnyMsg: Send {
    /// Encode for a process boundary.
    fn encode(&self) -> Result<Vec<u8>, String>;
    /// Bytes `encode` would produce.
    fn encoded_len(&self) -> u64;
    /// Append the encoding to `out`.
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), String>;
    /// Write the encoding to `out`.
    fn encode_to(&self, out: &mut dyn Write) -> Result<(), String>;
    /// Name of the concrete type, for error messages.
    fn type_name(&self) -> &'static str;
}

impl<T: Message> AnyMsg for T {
    fn encode(&self) -> Result<Vec<u8>, String> {
        bincode::serialize(self).map_err(|e| e.to_string())
    }
    fn encoded_len(&self) -> u64 {
        // A value that cannot be encoded fails when it crosses a process boundary;
        // for sizing it counts as empty.
        bincode::serialized_size(self).unwrap_or(0)
    }
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), String> {
        bincode::serialize_into(out, self).map_err(|e| e.to_string())
    }
    fn encode_to(&self, out: &mut dyn Write) -> Result<(), String> {
        bincode::serialize_into(out, self).map_err(|e| e.to_string())
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
}
