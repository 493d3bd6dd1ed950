//! hello's command line.

use chorus_core::Config;
use clap::Parser;

/// The command line of hello.
#[derive(Parser)]
#[command(
    version,
    about = "chares + group broadcast + reduction + quiescence detection"
)]
pub struct Args {
    /// Print one JSON object (PEs, layer, sum, messages, seconds) instead of lines.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// The runtime's flags.
    #[command(flatten)]
    pub chorus: Config,
}

impl super::ProgramArgs for Args {
    const NAME: &'static str = "hello";

    fn job(&self) -> Option<Config> {
        Some(self.chorus.clone())
    }
}
