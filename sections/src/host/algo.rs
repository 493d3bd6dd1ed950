//! Which creation protocols the builder can run, and how it builds one per PE: every
//! algorithm of the langer paper, as one state machine type and one message type.

use crate::creation::centralized::{self, Centralized};
use crate::creation::protocol::{
    Algorithm, FromIntermediary, Outbox, Phase, Protocol, ProtocolError, Setup, Wire,
};
use crate::creation::shrink_and_balance::{self, ShrinkAndBalance};
use crate::creation::shrink_and_hash::{self, ShrinkAndHash};
use crate::host::spec::{check_algorithm, HostError};
use crate::section::Placement;
use serde::{Deserialize, Serialize};

/// The state machine one PE runs, for any algorithm.
#[derive(Debug, Clone)]
pub enum Proto {
    /// The centralized reference.
    Centralized(Centralized),
    /// Shrink-and-Balance.
    ShrinkAndBalance(ShrinkAndBalance),
    /// Shrink-and-Hash.
    ShrinkAndHash(ShrinkAndHash),
}

/// The messages its PEs exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProtoMsg {
    /// Of the centralized reference.
    Centralized(centralized::Msg),
    /// Of Shrink-and-Balance.
    ShrinkAndBalance(shrink_and_balance::Msg),
    /// Of Shrink-and-Hash.
    ShrinkAndHash(shrink_and_hash::Msg),
}

impl ProtoMsg {
    /// The phase this state-machine message belongs to.
    pub fn phase(&self) -> Phase {
        match self {
            ProtoMsg::Centralized(centralized::Msg::Gather(_)) => Phase::Up,
            ProtoMsg::Centralized(centralized::Msg::Roster { .. }) => Phase::Down,
            ProtoMsg::ShrinkAndBalance(shrink_and_balance::Msg::Shrink(_)) => Phase::Up,
            ProtoMsg::ShrinkAndBalance(_) => Phase::Down,
            ProtoMsg::ShrinkAndHash(shrink_and_hash::Msg::Shrink(_)) => Phase::Up,
            ProtoMsg::ShrinkAndHash(shrink_and_hash::Msg::Rank { .. }) => Phase::Down,
        }
    }
}

/// The phase of a message as it travels.
pub fn phase_of(wire: &Wire<ProtoMsg>) -> Phase {
    wire.phase(ProtoMsg::phase)
}

/// The state machine of the PE `setup` describes.
pub fn protocol(alg: Algorithm, setup: Setup) -> Result<Proto, HostError> {
    check_algorithm(alg)?;
    let token = setup.token;
    Ok(match alg {
        Algorithm::Centralized => Proto::Centralized(Centralized::new(setup)),
        Algorithm::ShrinkAndBalance(f) => Proto::ShrinkAndBalance(
            ShrinkAndBalance::new(setup, f)
                .map_err(|source| HostError::Protocol { token, source })?,
        ),
        Algorithm::ShrinkAndHash(f) => Proto::ShrinkAndHash(ShrinkAndHash::new(setup, f)),
    })
}

/// Every algorithm this build can run.
pub fn available() -> Vec<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .filter(|a| check_algorithm(*a).is_ok())
        .collect()
}

/// Run `f` on an algorithm's own outbox and pass what it sent on, wrapped.
fn wrapped<M>(
    out: &mut Outbox<ProtoMsg>,
    wrap: fn(M) -> ProtoMsg,
    f: impl FnOnce(&mut Outbox<M>) -> Result<(), ProtocolError>,
) -> Result<(), ProtocolError> {
    let mut inner = Outbox::new();
    let result = f(&mut inner);
    out.extend(inner.into_iter().map(|(to, w)| {
        let w = match w {
            Wire::Role(m) => Wire::Role(wrap(m)),
            Wire::ToIntermediary(m) => Wire::ToIntermediary(m),
            Wire::FromIntermediary(m) => Wire::FromIntermediary(m),
        };
        (to, w)
    }));
    result
}

macro_rules! each {
    ($self:expr, $p:ident => $e:expr) => {
        match $self {
            Proto::Centralized($p) => $e,
            Proto::ShrinkAndBalance($p) => $e,
            Proto::ShrinkAndHash($p) => $e,
        }
    };
}

impl Protocol for Proto {
    type Msg = ProtoMsg;

    fn id(&self) -> u32 {
        each!(self, p => p.id())
    }

    fn start(&mut self, out: &mut Outbox<ProtoMsg>) -> Result<(), ProtocolError> {
        match self {
            Proto::Centralized(p) => wrapped(out, ProtoMsg::Centralized, |o| p.start(o)),
            Proto::ShrinkAndBalance(p) => wrapped(out, ProtoMsg::ShrinkAndBalance, |o| p.start(o)),
            Proto::ShrinkAndHash(p) => wrapped(out, ProtoMsg::ShrinkAndHash, |o| p.start(o)),
        }
    }

    fn handle(
        &mut self,
        from: u32,
        msg: ProtoMsg,
        out: &mut Outbox<ProtoMsg>,
    ) -> Result<(), ProtocolError> {
        match (self, msg) {
            (Proto::Centralized(p), ProtoMsg::Centralized(m)) => {
                wrapped(out, ProtoMsg::Centralized, |o| p.handle(from, m, o))
            }
            (Proto::ShrinkAndBalance(p), ProtoMsg::ShrinkAndBalance(m)) => {
                wrapped(out, ProtoMsg::ShrinkAndBalance, |o| p.handle(from, m, o))
            }
            (Proto::ShrinkAndHash(p), ProtoMsg::ShrinkAndHash(m)) => {
                wrapped(out, ProtoMsg::ShrinkAndHash, |o| p.handle(from, m, o))
            }
            (p, _) => Err(ProtocolError::Unexpected {
                me: p.id(),
                from,
                what: "message of another algorithm",
            }),
        }
    }

    fn found(
        &mut self,
        from: u32,
        msg: FromIntermediary,
        out: &mut Outbox<ProtoMsg>,
    ) -> Result<(), ProtocolError> {
        match self {
            Proto::Centralized(p) => wrapped(out, ProtoMsg::Centralized, |o| p.found(from, msg, o)),
            Proto::ShrinkAndBalance(p) => {
                wrapped(out, ProtoMsg::ShrinkAndBalance, |o| p.found(from, msg, o))
            }
            Proto::ShrinkAndHash(p) => {
                wrapped(out, ProtoMsg::ShrinkAndHash, |o| p.found(from, msg, o))
            }
        }
    }

    fn placement(&self) -> Option<&Placement> {
        each!(self, p => p.placement())
    }

    fn finished(&self) -> bool {
        each!(self, p => p.finished())
    }

    fn peak_state_bytes(&self) -> usize {
        each!(self, p => p.peak_state_bytes())
    }
}
