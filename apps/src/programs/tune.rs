//! chorus-tune's command line (its flags are `TuneArgs`).

use chorus_core::Config;

/// The command line of chorus-tune.
pub type Args = crate::tune::TuneArgs;

impl super::ProgramArgs for Args {
    const NAME: &'static str = "chorus-tune";

    fn job(&self) -> Option<Config> {
        Some(self.chorus.clone())
    }

    fn usage(&self) -> Result<(), String> {
        self.check()
    }
}
