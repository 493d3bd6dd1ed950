//! The nodegroup example: one member per node on threads and sim, with and without
//! `--pes-per-node`, each node counted once.

use std::process::Command;

/// The output of the nodegroup example with `args`.
fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nodegroup"))
        .args(args)
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn each_node_is_counted_once_with_all_its_pes() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--layer", "threads", "--pes", "4"],
            "4 nodes counted 4 PEs\n",
        ),
        (
            &["--layer", "threads", "--pes", "8", "--pes-per-node", "3"],
            "3 nodes counted 8 PEs\n",
        ),
        (
            &["--layer", "sim", "--pes", "64", "--pes-per-node", "8"],
            "8 nodes counted 64 PEs\n",
        ),
        (&["--layer", "sim", "--pes", "1"], "1 nodes counted 1 PEs\n"),
    ];
    for (args, expected) in cases {
        assert_eq!(run(args), expected, "{args:?}");
    }
}
