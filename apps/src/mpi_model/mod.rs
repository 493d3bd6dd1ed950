//! MPI's communicator creation, modelled as chorus programs so that chorus's sections
//! can be set against it at any scale, the simulator's included: the calls' messages
//! and blocking as MPICH implements them, run over range sections of the world.
//! `comm_create` writes each PE's steps of `MPI_Comm_create`, MPICH's native
//! `MPI_Comm_create_group` and Dinan et al.'s noncollective algorithm; `script_run`
//! runs them inside any chare. (`MPI_Comm_split`, which JQuick's levels need, is
//! `jquick::split_model`.)

pub mod comm_create;
pub mod script_run;

/// Words of the context-id allreduce: MPICH reduces `MPIR_MAX_CONTEXT_MASK + 1` = 65
/// ints (260 bytes); 33 words are 264 bytes. The first few name the call.
pub const CONTEXT_WORDS: usize = 33;

/// Modelled time per member or pair of a table that a local pass touches (a colour
/// scan, a group mapping, a rank translation), ns. `gcc -O2` on MPICH's loops
/// measured 1.2 ns (p = 1024) to 1.6 ns (p = 32,768) on the 2-core EPYC this was
/// written on.
pub const NS_PER_PAIR: f64 = 1.5;
