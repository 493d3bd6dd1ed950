//! What an envelope carries (`Kind`): a user message, or a runtime message of one
//! family, the messages one engine subsystem sends and handles (quiescence, exit,
//! creation, migration, flow control, reductions, broadcasts, replies to asks). Each family is
//! declared once, with `family!`, in its own module here: its messages (one struct
//! each), their wire tags and their names in traces. The handlers live in the
//! engine module of the subsystem; `kinds!` below lists the families, and the wire
//! reads its tables from here.

use crate::base::ids::CollectionId;
use crate::msg::dest::Dest;
use crate::msg::payload::Payload;
use balance::BalanceMsg;
use bcast::BcastMsg;
use checkpoint::CkptMsg;
use create::CreateMsg;
use exit::ExitMsg;
use flow::FlowMsg;
use migrate::MoveMsg;
use quiescence::QdMsg;
use reduce::ReduceMsg;
use section::SectionMsg;
use serde::{Deserializer, Serialize, Serializer};
use task::TaskMsg;

pub(crate) mod balance;
pub(crate) mod bcast;
pub(crate) mod checkpoint;
pub(crate) mod create;
pub(crate) mod exit;
pub(crate) mod flow;
mod lb_records;
pub(crate) mod migrate;
pub(crate) mod quiescence;
pub(crate) mod reduce;
pub(crate) mod section;
pub(crate) mod task;

/// What the runtime asks of one runtime message beyond its fields; each default fits
/// a message with no payload that needs nothing on arrival.
pub(crate) trait Body {
    /// The user payload it carries (a creation's arguments, a migrating state).
    fn payload(&self) -> Option<&Payload> {
        None
    }
    /// The same, to fill in on decode.
    fn payload_mut(&mut self) -> Option<&mut Payload> {
        None
    }
    /// The collection it acts on: it waits on a PE where that is not yet created.
    fn needs(&self) -> Option<CollectionId> {
        None
    }
    /// What is wrong with it as received (a tree root outside the job, a bad shape);
    /// the rest is checked where it is used.
    fn check(&self, _npes: usize) -> Result<(), String> {
        Ok(())
    }
    /// About the bytes its body takes on a wire, for traces.
    fn body_bytes(&self) -> u64 {
        16
    }
}

/// `Body::payload` and `Body::payload_mut` for a message whose payload is field `$f`.
macro_rules! payload_in {
    ($f:ident) => {
        fn payload(&self) -> Option<&Payload> {
            Some(&self.$f)
        }
        fn payload_mut(&mut self) -> Option<&mut Payload> {
            Some(&mut self.$f)
        }
    };
}
pub(crate) use payload_in;

/// The check of a tree root a message names: inside the job of `npes` PEs.
pub(crate) fn check_root(root: crate::base::ids::Pe, npes: usize) -> Result<(), String> {
    crate::base::tree::check_root(root, npes).map_err(|e| e.to_string())
}

/// A family of runtime messages, as `Kind` sees it: each message's wire tag, names
/// and `Body`.
pub(crate) trait Family {
    /// Its tag on the wire, unique among all kinds.
    fn tag(&self) -> u8;
    /// Its name in wire errors.
    fn name(&self) -> &'static str;
    /// Its handler's name in traces; `None` for messages traced as the user code
    /// they run (broadcasts, creations).
    fn trace_name(&self) -> Option<&'static str>;
    /// The message itself.
    fn body(&self) -> &dyn Body;
    /// The message itself, to fill in on decode.
    fn body_mut(&mut self) -> &mut dyn Body;
}

/// How a family's messages go to and from a wire body: the tag as a u32, then the
/// message's fields (bincode), as when the envelope's kinds were one flat enum.
pub(crate) trait FamilyWire: Sized {
    /// Tag and name of each message of the family.
    const MESSAGES: &'static [(u8, &'static str)];
    /// Write the body of this message.
    fn serialize_body<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error>;
    /// Read the body of the message with tag `tag` (one of `MESSAGES`).
    fn deserialize_body<'de, D: Deserializer<'de>>(tag: u8, d: D) -> Result<Self, D::Error>;
}

/// The error for a body whose leading tag is not its header's.
pub(crate) fn tag_mismatch<E: serde::de::Error>(body: u32, header: u8) -> E {
    E::custom(format_args!(
        "its body is tagged {body}, its header {header}"
    ))
}

/// Declare a family of runtime messages: an enum `$family` with one variant per
/// message struct (same name), each with its wire tag and its trace name.
macro_rules! family {
    ($(#[$doc:meta])* $family:ident { $($msg:ident = $tag:literal => $trace:expr;)+ }) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub(crate) enum $family {
            $(
                #[allow(missing_docs)]
                $msg($msg),
            )+
        }

        $(
            impl From<$msg> for $family {
                fn from(m: $msg) -> Self {
                    $family::$msg(m)
                }
            }

            impl From<$msg> for $crate::msg::kind::Kind {
                fn from(m: $msg) -> Self {
                    $family::$msg(m).into()
                }
            }
        )+

        impl $crate::msg::kind::Family for $family {
            fn tag(&self) -> u8 {
                match self {
                    $($family::$msg(_) => $tag,)+
                }
            }
            fn name(&self) -> &'static str {
                match self {
                    $($family::$msg(_) => stringify!($msg),)+
                }
            }
            fn trace_name(&self) -> Option<&'static str> {
                match self {
                    $($family::$msg(_) => $trace,)+
                }
            }
            fn body(&self) -> &dyn $crate::msg::kind::Body {
                match self {
                    $($family::$msg(m) => m,)+
                }
            }
            fn body_mut(&mut self) -> &mut dyn $crate::msg::kind::Body {
                match self {
                    $($family::$msg(m) => m,)+
                }
            }
        }

        impl $crate::msg::kind::FamilyWire for $family {
            const MESSAGES: &'static [(u8, &'static str)] = &[$(($tag, stringify!($msg))),+];

            fn serialize_body<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $($family::$msg(m) => serde::Serialize::serialize(&(u32::from($tag as u8), m), s),)+
                }
            }

            fn deserialize_body<'de, D: serde::Deserializer<'de>>(
                tag: u8,
                d: D,
            ) -> Result<Self, D::Error> {
                match tag {
                    $(
                        $tag => {
                            let (said, m): (u32, $msg) = serde::Deserialize::deserialize(d)?;
                            if said != u32::from(tag) {
                                return Err($crate::msg::kind::tag_mismatch(said, tag));
                            }
                            Ok($family::$msg(m))
                        }
                    )+
                    _ => Err(<D::Error as serde::de::Error>::custom(format_args!(
                        "kind {tag} is not a {}", stringify!($family)
                    ))),
                }
            }
        }
    };
}
pub(crate) use family;

/// Declare `Kind`: user messages, whose body `wire/user_body.rs` writes, and one
/// variant per family of runtime messages (the modules here), with what the wire and
/// the engine ask of any runtime message.
macro_rules! kinds {
    ($($variant:ident($family:ident),)+) => {
        /// The body of an envelope. On a wire its payload travels after it, raw (see
        /// `wire.rs`).
        #[derive(Debug)]
        pub(crate) enum Kind {
            /// A message for one chare, group member or array element on the receiving PE.
            User {
                dest: Dest,
                payload: Payload,
                hops: u8,
            },
            $(
                #[allow(missing_docs)]
                $variant($family),
            )+
        }

        $(
            impl From<$family> for Kind {
                fn from(m: $family) -> Self {
                    Kind::$variant(m)
                }
            }
        )+

        impl Kind {
            /// The family of a runtime message; `None` for a user message.
            pub(crate) fn family(&self) -> Option<&dyn Family> {
                match self {
                    Kind::User { .. } => None,
                    $(Kind::$variant(m) => Some(m),)+
                }
            }

            /// The same, to fill in on decode.
            pub(crate) fn family_mut(&mut self) -> Option<&mut dyn Family> {
                match self {
                    Kind::User { .. } => None,
                    $(Kind::$variant(m) => Some(m),)+
                }
            }

            /// Read the body of the runtime message with wire tag `tag`.
            pub(crate) fn deserialize_body<'de, D: serde::Deserializer<'de>>(
                tag: u8,
                d: D,
            ) -> Result<Kind, D::Error> {
                $(
                    if $family::MESSAGES.iter().any(|(t, _)| *t == tag) {
                        return $family::deserialize_body(tag, d).map(Kind::$variant);
                    }
                )+
                Err(<D::Error as serde::de::Error>::custom(format_args!(
                    "kind {tag} is not a runtime message"
                )))
            }
        }

        impl Serialize for Kind {
            /// A runtime message's body; a user message's is `user_body`'s to write.
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    Kind::User { .. } => Err(<S::Error as serde::ser::Error>::custom(
                        "a user message's body is written by wire::user_body",
                    )),
                    $(Kind::$variant(m) => m.serialize_body(s),)+
                }
            }
        }

        /// Every kind's wire tag and name: user messages, then each family's.
        const KIND_TABLES: &[&[(u8, &str)]] = &[&[(USER_TAG, "User")], $($family::MESSAGES,)+];
    };
}

kinds! {
    Bcast(BcastMsg),
    Create(CreateMsg),
    Reduce(ReduceMsg),
    Qd(QdMsg),
    Exit(ExitMsg),
    Move(MoveMsg),
    Flow(FlowMsg),
    Balance(BalanceMsg),
    Ckpt(CkptMsg),
    Task(TaskMsg),
    Section(SectionMsg),
}

/// The wire tag of user messages.
pub(crate) const USER_TAG: u8 = 0;

/// One more than the highest tag in use: tags are below it. Tags between may be
/// unused (blocks of tags are handed out to work in progress), and name no kind.
pub(crate) const KIND_COUNT: usize = {
    let mut n = 0;
    let mut t = 0;
    while t < KIND_TABLES.len() {
        let mut i = 0;
        while i < KIND_TABLES[t].len() {
            let tag = KIND_TABLES[t][i].0 as usize;
            if tag + 1 > n {
                n = tag + 1;
            }
            i += 1;
        }
        t += 1;
    }
    n
};

/// The name of each kind, by its tag (empty for a tag no kind uses); fails to
/// compile if two kinds share a tag.
pub(crate) const fn kind_names() -> [&'static str; KIND_COUNT] {
    let mut names = [""; KIND_COUNT];
    let mut t = 0;
    while t < KIND_TABLES.len() {
        let mut i = 0;
        while i < KIND_TABLES[t].len() {
            let (tag, name) = KIND_TABLES[t][i];
            assert!(names[tag as usize].is_empty(), "two kinds share a wire tag");
            names[tag as usize] = name;
            i += 1;
        }
        t += 1;
    }
    names
}

impl Kind {
    /// True for a quiescence wave going down the PE tree or a reply coming up.
    pub(crate) fn is_quiescence_wave(&self) -> bool {
        matches!(self, Kind::Qd(m) if m.is_wave())
    }

    /// Its tag on the wire.
    pub(crate) fn tag(&self) -> u8 {
        self.family().map_or(USER_TAG, |f| f.tag())
    }

    /// Its name in wire errors.
    pub(crate) fn name(&self) -> &'static str {
        self.family().map_or("User", |f| f.name())
    }

    /// The trace name of a runtime-internal message's handler; `None` for user
    /// messages and creations, whose chare entry or constructor is traced instead.
    pub(crate) fn runtime_entry(&self) -> Option<&'static str> {
        self.family().and_then(|f| f.trace_name())
    }

    /// The payload it carries, if any.
    pub(crate) fn payload(&self) -> Option<&Payload> {
        match self {
            Kind::User { payload, .. } => Some(payload),
            kind => kind.family().and_then(|f| f.body().payload()),
        }
    }

    /// The same, to fill in on decode.
    pub(crate) fn payload_mut(&mut self) -> Option<&mut Payload> {
        match self {
            Kind::User { payload, .. } => Some(payload),
            kind => kind.family_mut().and_then(|f| f.body_mut().payload_mut()),
        }
    }

    /// What is wrong with it as received from elsewhere (tree roots, array shapes).
    pub(crate) fn check(&self, npes: usize) -> Result<(), String> {
        self.family().map_or(Ok(()), |f| f.body().check(npes))
    }
}

/// Serde for payload fields inside a kind's body: nothing is written, and decoding
/// leaves an empty payload that `decode` fills from the bytes after the body.
pub(crate) mod payload_slot {
    use crate::msg::payload::Payload;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer, P>(_: &P, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>, P: From<Payload>>(
        d: D,
    ) -> Result<P, D::Error> {
        <()>::deserialize(d)?;
        Ok(Payload::placeholder().into())
    }
}

/// Serde for an error carried by an exit: its text, which becomes a
/// `RuntimeError::Remote` on the receiving side.
pub(crate) mod error_text {
    use crate::base::error::RuntimeError;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        e: &Option<RuntimeError>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        e.as_ref()
            .map(|e| match e {
                RuntimeError::Remote(text) => text.clone(),
                e => e.to_string(),
            })
            .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<RuntimeError>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(RuntimeError::Remote))
    }
}
