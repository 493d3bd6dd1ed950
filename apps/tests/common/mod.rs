//! Running an app binary under mpirun from a test: find mpirun, run with OpenMPI's
//! root permission and a time limit, and read the one JSON object rank 0 prints.

use serde_json::Value;
use std::process::{Command, Output, Stdio};

/// True if `mpirun` is on the PATH.
pub fn have_mpirun() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `mpirun <mpirun_args> <bin> --layer mpi <args>`, killed after two minutes.
pub fn mpirun(mpirun_args: &[&str], bin: &str, args: &[&str]) -> Output {
    let mut with_layer = vec!["--layer", "mpi"];
    with_layer.extend_from_slice(args);
    mpirun_as_typed(mpirun_args, bin, &with_layer)
}

/// `mpirun <mpirun_args> <bin> <args>`, killed after two minutes.
pub fn mpirun_as_typed(mpirun_args: &[&str], bin: &str, args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["120", "mpirun"])
        .args(mpirun_args)
        .arg(bin)
        .args(args)
        // CI runs as root, which OpenMPI refuses unless told it is intended.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("RUST_LOG", "off")
        .output()
        .expect("start mpirun")
}

/// The one JSON object rank 0 printed, after checking the job succeeded.
pub fn json_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "status {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(
        lines.len(),
        1,
        "one JSON object, from rank 0 only:\n{stdout}"
    );
    serde_json::from_str(lines[0]).expect("valid JSON")
}
