//! `cargo xtask dist`'s own test, without building the release: the LICENSE is Apache-2.0's
//! canonical text and goes into the archive `dist` packs; the krew manifest `dist` writes from a
//! `SHA256SUMS` has krew's documented fields and passes krew's rules; the CycloneDX SBOM of the
//! binary is made by cargo-cyclonedx (installed into the upstream cache's `tools/` on first use) from this
//! workspace's Cargo.lock and agrees with it.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use xtask::dist::{Artifact, archive, write_krew_manifest};
use xtask::packaging::{self, KrewPlugin};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// SHA-256 of the Apache License 2.0 as apache.org publishes it (`LICENSE-2.0.txt`).
const APACHE_2_0_SHA256: &str = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30";

#[test]
fn the_licence_is_apache_2_0_and_every_archive_holds_it() {
    let licence = std::fs::read(root().join("LICENSE")).expect("LICENSE at the repository root");
    assert_eq!(
        hex::encode(Sha256::digest(&licence)),
        APACHE_2_0_SHA256,
        "LICENSE is the canonical Apache-2.0 text"
    );
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("kca-webhook-lab-0.1.0-x86_64-linux");
    std::fs::write(&bin, b"\x7fELF not really").unwrap();
    let a = Artifact {
        target: "x86_64-unknown-linux-gnu".into(),
        path: bin,
        file: String::new(),
        size: 0,
        sha256: String::new(),
    };
    let docs = vec![packaging::Entry {
        path: "man/man1/kca-webhook-lab.1".into(),
        bytes: b".TH X 1\n".to_vec(),
        mode: 0o644,
    }];
    let path = archive(&root(), tmp.path(), &a, &docs, 1_764_000_000).unwrap();
    assert!(path.ends_with("kca-webhook-lab-0.1.0-x86_64-linux.tar.gz"));
    assert_eq!(
        packaging::archive_paths(&path).unwrap(),
        ["kca-webhook-lab", "LICENSE", "man/man1/kca-webhook-lab.1"]
    );
    // One commit, one archive: packing again gives the same bytes.
    let first = std::fs::read(&path).unwrap();
    archive(&root(), tmp.path(), &a, &docs, 1_764_000_000).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), first);
}

#[test]
fn the_krew_manifest_names_every_archive_of_sha256sums() {
    let tmp = tempfile::tempdir().unwrap();
    let (x, y) = ("1".repeat(64), "2".repeat(64));
    std::fs::write(
        tmp.path().join("SHA256SUMS"),
        format!(
            "{x}  kca-webhook-lab-0.1.0-x86_64-linux.tar.gz\n{}  kca-webhook-lab-0.1.0-x86_64-linux\n{y}  kca-webhook-lab-0.1.0-aarch64-linux.tar.gz\n{}  kca-webhook-lab-0.1.0-x86_64-linux.cdx.json\n",
            "3".repeat(64),
            "4".repeat(64)
        ),
    )
    .unwrap();
    write_krew_manifest(tmp.path(), "example/kca-webhook-lab", "0.1.0").unwrap();
    let text = std::fs::read_to_string(tmp.path().join("kca-webhook-lab.yaml")).unwrap();
    let m: KrewPlugin = serde_yaml_ng::from_str(&text).expect("only krew's documented fields");
    assert_eq!(
        packaging::krew_problems(&m, "kca-webhook-lab.yaml"),
        Vec::<String>::new()
    );
    let platforms: Vec<(&str, &str)> = m
        .spec
        .platforms
        .iter()
        .map(|p| (p.selector.match_labels["arch"].as_str(), p.sha256.as_str()))
        .collect();
    assert_eq!(platforms, [("amd64", x.as_str()), ("arm64", y.as_str())]);
    assert!(
        m.spec
            .platforms
            .iter()
            .all(|p| p.files.iter().any(|f| f.from == "LICENSE"))
    );
    assert_eq!(m.spec.version, "v0.1.0");
    assert!(!m.spec.caveats.is_empty() && !m.spec.description.is_empty());
    // No archive listed: refused, nothing written.
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(
        empty.path().join("SHA256SUMS"),
        format!("{x}  something-else\n"),
    )
    .unwrap();
    assert!(write_krew_manifest(empty.path(), "example/kca-webhook-lab", "0.1.0").is_err());
    assert!(!empty.path().join("kca-webhook-lab.yaml").exists());
}

#[test]
fn the_sbom_is_cyclonedx_from_cargo_lock_with_the_binarys_dependencies_only() {
    let root = root();
    let cache = xtask::upstream::default_cache_dir().unwrap();
    let tool = packaging::cyclonedx(&packaging::tools_dir(&cache))
        .expect("cargo-cyclonedx (installed into the upstream cache's tools/ on first use)");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sbom.cdx.json");
    packaging::sbom(&root, &tool, "x86_64-unknown-linux-gnu", &out).unwrap();
    let sbom: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    assert_eq!(
        packaging::sbom_problems(&sbom, &lock, env!("CARGO_PKG_VERSION")),
        Vec::<String>::new()
    );
    let names: Vec<&str> = sbom["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for dep in ["lab-core", "clap", "kube", "tokio", "clap_complete"] {
        assert!(names.contains(&dep), "{dep} is in the binary");
    }
    for not in ["rstest", "testcontainers", "xshell", "prost-build"] {
        assert!(
            !names.contains(&not),
            "{not} is not (dev, xtask's or build-only)"
        );
    }
    // The check is no pass-through: a version Cargo.lock does not pin is named.
    let mut wrong = sbom.clone();
    wrong["components"][0]["version"] = "0.0.0-not-locked".into();
    assert_eq!(
        packaging::sbom_problems(&wrong, &lock, env!("CARGO_PKG_VERSION")).len(),
        1
    );
    assert!(
        !root.join("lab/kca-webhook-lab_bin.cdx.json").exists(),
        "moved, not left in lab/"
    );
    assert!(
        !root.join("xtask/xtask_bin.cdx.json").exists(),
        "xtask's not left"
    );
}
