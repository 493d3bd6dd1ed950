//! Member lists as a creator may write them: unsorted, with repeats, or naming PEs
//! outside the job.

use chorus_core::{Config, Layer};
use chorus_sections::host::batch::{self, BatchError, Planned, PlannedParent, Step};
use chorus_sections::host::Membership;
use chorus_sections::protocol::{Algorithm, Filler};

fn create(membership: Membership) -> Step {
    Step::Create(Planned {
        creator: 1,
        parent: PlannedParent::World,
        algorithm: Algorithm::ShrinkAndHash(Filler::None),
        k: 2,
        membership,
    })
}

fn config(layer: Layer) -> Config {
    Config {
        layer,
        ..Config::with_pes(8)
    }
}

/// An unsorted list with a repeat makes the section of the PEs it names (it hung on
/// threads: members looked themselves up by binary search and some never joined).
#[test]
fn an_unsorted_list_with_repeats_makes_the_section_it_names() {
    for layer in [Layer::Threads, Layer::Sim] {
        let stages = vec![vec![create(Membership::Pes(vec![6, 2, 5, 2, 0]))]];
        let out =
            batch::run(config(layer), stages, true).unwrap_or_else(|e| panic!("{layer:?}: {e}"));
        let mut pes: Vec<u32> = out.sections.iter().map(|(pe, _)| *pe).collect();
        pes.sort_unstable();
        assert_eq!(pes, vec![0, 2, 5, 6], "{layer:?}");
        assert_eq!(out.reports[0].members, 4, "{layer:?}");
    }
}

/// A list naming a PE outside the job is an error naming it, not a hang.
#[test]
fn a_list_naming_a_pe_outside_the_job_is_an_error() {
    let stages = vec![vec![create(Membership::Pes(vec![1, 8]))]];
    match batch::run(config(Layer::Threads), stages, true) {
        Err(BatchError::Runtime(e)) => {
            let want = "PE 8";
            assert!(e.to_string().contains(want), "{e}");
        }
        other => panic!(
            "expected an error naming PE 8, got {:?}",
            other.map(|o| o.reports)
        ),
    }
}
