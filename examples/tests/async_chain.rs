//! The async example: each element's task asks two others in turn and contributes
//! the answer; the sum is twice the sum of the squares 0..100, on every layer.

use std::process::Command;

#[test]
fn async_chain_sums_the_chained_answers() {
    let expected: u64 = 2 * (0..100u64).map(|i| i * i).sum::<u64>();
    for (layer, pes) in [("threads", 4), ("sim", 16), ("sim", 1)] {
        let out = Command::new(env!("CARGO_BIN_EXE_async_chain"))
            .args(["--layer", layer, "--pes", &pes.to_string()])
            .output()
            .expect("the example runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{layer} {pes}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout, format!("sum of chained answers: {expected}\n"));
    }
}
