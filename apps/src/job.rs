//! The start every app binary shares: MPI when the job runs on the mpi layer, and
//! which process prints.

use chorus_core::Config;

/// This process's part in a job.
pub struct JobProcess {
    /// MPI, held for the whole job when it runs on the mpi layer.
    #[cfg(feature = "mpi")]
    pub session: Option<chorus_core::MpiSession>,
    /// True on the one process that prints (rank 0, or the only process).
    pub speaks: bool,
    /// PEs in the job: the ranks times `--pes-per-rank` under MPI, else `--pes`.
    pub pes: u32,
}

impl JobProcess {
    /// Start MPI if `config` runs on the mpi layer.
    pub fn start(config: &Config) -> Result<Self, String> {
        #[cfg(feature = "mpi")]
        {
            use mpi::topology::Communicator;
            let session = match config.layer {
                chorus_core::Layer::Mpi => {
                    Some(chorus_core::MpiSession::init().map_err(|e| e.to_string())?)
                }
                _ => None,
            };
            let pes = session.as_ref().map_or(config.pes, |s| {
                s.world().size() as u32 * config.pes_per_rank
            });
            let speaks = chorus_core::is_root_process();
            Ok(JobProcess {
                session,
                speaks,
                pes,
            })
        }
        #[cfg(not(feature = "mpi"))]
        Ok(JobProcess {
            speaks: chorus_core::is_root_process(),
            pes: config.pes,
        })
    }
}
