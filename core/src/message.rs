//! Message values and their type-erased form.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::Any;

/// A value that can be sent to a chare: moved within a process, bincode-encoded across
/// processes, and cloned for broadcasts.
pub trait Message: Serialize + DeserializeOwned + Clone + Send + 'static {}

impl<T: Serialize + DeserializeOwned + Clone + Send + 'static> Message for T {}

/// A message whose type is known only to its receiver.
pub trait AnyMsg: Send {
    /// Copy for a broadcast to several receivers.
    fn clone_box(&self) -> Box<dyn AnyMsg>;
    /// Encode for a process boundary.
    fn encode(&self) -> Result<Vec<u8>, String>;
    /// Give up the erased box to downcast it.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// Name of the concrete type, for error messages.
    fn type_name(&self) -> &'static str;
}

impl<T: Message> AnyMsg for T {
    fn clone_box(&self) -> Box<dyn AnyMsg> {
        Box::new(self.clone())
    }
    fn encode(&self) -> Result<Vec<u8>, String> {
        bincode::serialize(self).map_err(|e| e.to_string())
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
}

/// A message body as it travels: a moved value inside one process, bytes across processes.
pub enum Payload {
    /// The value itself; never serialized.
    Local(Box<dyn AnyMsg>),
    /// The bincode encoding of the value.
    Bytes(Vec<u8>),
}

impl Payload {
    /// Wrap a typed value.
    pub fn new<T: Message>(value: T) -> Self {
        Payload::Local(Box::new(value))
    }

    /// Copy the payload for another receiver.
    pub fn duplicate(&self) -> Self {
        match self {
            Payload::Local(b) => Payload::Local(b.clone_box()),
            Payload::Bytes(v) => Payload::Bytes(v.clone()),
        }
    }

    /// Size in bytes when it crosses a process boundary (0 while it stays local).
    pub fn wire_len(&self) -> usize {
        match self {
            Payload::Local(_) => 0,
            Payload::Bytes(v) => v.len(),
        }
    }

    /// Recover the typed value, decoding if it arrived as bytes.
    pub fn take<T: Message>(self) -> Result<T, String> {
        match self {
            Payload::Local(b) => {
                let found = b.type_name();
                b.into_any()
                    .downcast::<T>()
                    .map(|b| *b)
                    .map_err(|_| format!("expected {}, found {found}", std::any::type_name::<T>()))
            }
            Payload::Bytes(v) => bincode::deserialize(&v).map_err(|e| {
                format!(
                    "{} bytes are not a valid {}: {e}",
                    v.len(),
                    std::any::type_name::<T>()
                )
            }),
        }
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Local(b) => write!(f, "Local({})", b.type_name()),
            Payload::Bytes(v) => write!(f, "Bytes({} B)", v.len()),
        }
    }
}
