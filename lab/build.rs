//! Build facts for `kca-webhook-lab --version` (`lab::build_info`):
//!
//! - `KCA_COMMIT`: the commit the binary was built from, given by `cargo xtask dist` (and the
//!   release workflow) as the environment variable `KCA_BUILD_COMMIT`; `unknown` in a development
//!   build (reading git here would rebuild the crate on every commit, or go stale);
//! - `KCA_KUBERNETES_VERSION`, `KCA_KYVERNO_VERSION`: the upstream versions the labs were made for,
//!   read from the `require` lines of the upstream wrapper modules
//!   (`xtask/upstream/kubernetes/go.mod`, `xtask/upstream/kyverno/go.mod`), the one place the
//!   project pins them;
//! - `KCA_BUILD_DATE`: when it was built, given by `cargo xtask dist` as `KCA_BUILD_DATE` (the
//!   commit's committer date in UTC, so one commit gives one binary); `unknown` otherwise;
//! - `KCA_TARGET`: the target triple, and whether the C runtime is linked statically.

use std::path::Path;

/// The version `module` is required at in the go.mod `file` (`require MODULE vX.Y.Z`), or
/// `unknown` when the file or the line is not there.
fn required_version(file: &Path, module: &str) -> String {
    println!("cargo:rerun-if-changed={}", file.display());
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                let first = words.next()?;
                let m = if first == "require" {
                    words.next()?
                } else {
                    first
                };
                (m == module).then(|| words.next().map(str::to_owned))?
            })
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("lab has a parent directory")
        .to_path_buf();
    let upstream = root.join("xtask/upstream");
    println!(
        "cargo:rustc-env=KCA_KUBERNETES_VERSION={}",
        required_version(&upstream.join("kubernetes/go.mod"), "k8s.io/kubernetes")
    );
    println!(
        "cargo:rustc-env=KCA_KYVERNO_VERSION={}",
        required_version(
            &upstream.join("kyverno/go.mod"),
            "github.com/kyverno/kyverno"
        )
    );
    println!("cargo:rerun-if-env-changed=KCA_BUILD_COMMIT");
    let commit = std::env::var("KCA_BUILD_COMMIT").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=KCA_COMMIT={commit}");
    println!("cargo:rerun-if-env-changed=KCA_BUILD_DATE");
    let date = std::env::var("KCA_BUILD_DATE").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=KCA_BUILD_DATE={date}");
    let target = std::env::var("TARGET").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let linking = if features.split(',').any(|f| f == "crt-static") {
        "static"
    } else {
        "dynamic"
    };
    println!("cargo:rustc-env=KCA_TARGET={target}, {linking}");
}
