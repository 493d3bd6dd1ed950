//! The array_section example: three multicasts and section sums over every third of
//! 1,000 elements, racing the members' moves, each counted once on threads and sim.

use std::process::Command;

#[test]
fn three_section_sums_count_every_member_once_while_they_move() {
    for (layer, pes) in [("threads", 4), ("sim", 64), ("sim", 1)] {
        let out = Command::new(env!("CARGO_BIN_EXE_array_section"))
            .args(["--layer", layer, "--pes", &pes.to_string()])
            .output()
            .expect("the example runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{layer} {pes}: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "334 members, 3 multicasts: section sums [166833, 166833, 166833] (expected 166833 each)\n",
            "{layer} {pes}"
        );
    }
}
