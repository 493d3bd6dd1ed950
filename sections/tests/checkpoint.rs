//! A checkpoint of a job that uses process-group sections: the section builder and
//! the collectives host are not saved, so the checkpoint fails with a typed error
//! naming the builder's group, and commits nothing, rather than drop the sections.

use chorus_core::{Callback, CheckpointError, Config, Layer, Registry, Runtime, RuntimeError};
use chorus_sections::Sections;

#[test]
fn a_checkpoint_with_sections_is_refused_naming_the_builder() {
    for layer in [Layer::Threads, Layer::Sim] {
        let dir = std::env::temp_dir().join(format!(
            "chorus-sections-ckpt-{layer:?}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mut reg = Registry::new();
        let init = Sections::register(&mut reg);
        let cfg = Config {
            layer,
            ..Config::with_pes(4)
        };
        let d = dir.clone();
        let failed = Runtime::new(reg, cfg).run(move |ctx| {
            init.setup(ctx);
            ctx.checkpoint(&d, Callback::Exit);
        });
        match failed {
            Err(RuntimeError::Checkpoint(CheckpointError::Unsaveable { what, why, .. })) => {
                assert!(what.contains("chorus_sections::Builder"), "{what}");
                assert!(why.contains("not checkpointable"), "{why}");
            }
            r => panic!(
                "a checkpoint with sections on {layer:?}: {:?}",
                r.map(|_| ())
            ),
        }
        assert!(!dir.join("manifest.json").exists(), "nothing was committed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
