//! `cargo xtask conformance`: upstream's own admission tests (`k8s.io/kubernetes`
//! `test/e2e/apimachinery/webhook.go` and `validatingadmissionpolicy.go`, the `[sig-api-machinery]
//! AdmissionWebhook` and `ValidatingAdmissionPolicy` specs) against the embedded node.
//!
//! This file holds the pure parts, each unit-tested: the default focus and the skips with their
//! reasons ([`DEFAULT_FOCUS`], [`SKIPS`], [`skip_regex`]), the image names the suite asks for, read
//! from the module's own `test/utils/image/manifest.go` ([`suite_image`]), the agnhost image's
//! layout ([`agnhost_spec`]), and the one-line verdict from the suite's JUnit report
//! ([`Verdict::from_junit`]).
//!
//! How far the command itself goes is recorded in docs/conformance.md (issue 39): the `e2e.test`
//! and `agnhost` builds were measured with plain `go test -c` / `go build` of a wrapper module
//! made as [`crate::upstream::wrapper`] makes one; the cache entry, the image and the run are not
//! built yet.

use std::path::Path;

use anyhow::{Context as _, bail};

use crate::upstream::images::{Entry, ImageSpec, Source};

/// The suite's specs the command runs by default (a Ginkgo `--ginkgo.focus` regular expression).
pub const DEFAULT_FOCUS: &str = "AdmissionWebhook|ValidatingAdmissionPolicy";

/// One spec (or tag) skipped on the embedded node, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skip {
    /// A regular expression on the spec's full text (Ginkgo `--ginkgo.skip`).
    pub pattern: &'static str,
    /// Why it does not apply to a single embedded node.
    pub reason: &'static str,
}

/// The skips, each with its reason (docs/conformance.md lists them again with the run's result).
pub const SKIPS: &[Skip] = &[
    Skip {
        pattern: r"\[Disruptive\]",
        reason: "restarts or breaks cluster components; the node is shared by the run's own specs",
    },
    Skip {
        pattern: r"\[Flaky\]",
        reason: "upstream marks it flaky: it is out of upstream's own release-blocking jobs too",
    },
    Skip {
        pattern: r"\[Feature:[^\]]+\]",
        reason: "needs a feature gate or component the default configuration does not enable",
    },
];

/// The `--ginkgo.skip` expression of [`SKIPS`] (`a|b|c`).
pub fn skip_regex() -> String {
    SKIPS
        .iter()
        .map(|s| s.pattern)
        .collect::<Vec<_>>()
        .join("|")
}

/// The reference `registry/name:version` the suite asks for image `id` (e.g. `Agnhost`), read from
/// the module's `test/utils/image/manifest.go`: the `configs[<id>] = Config{list.<Registry>,
/// "<name>", "<version>"}` line and the `initRegistry` field `<Registry>: "<host/path>"`.
///
/// # Errors
/// Either line missing or not of that shape (naming `path`, what was expected and found).
pub fn suite_image(manifest_go: &str, path: &str, id: &str) -> anyhow::Result<String> {
    let key = format!("configs[{id}] = Config{{");
    let line = manifest_go
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&key))
        .with_context(|| format!("{path}: no line `{key}…}}` for image {id}"))?;
    let body = line[key.len()..]
        .strip_suffix('}')
        .with_context(|| format!("{path}: `{line}`: expected it to end with `}}`"))?;
    let fields: Vec<&str> = body.split(',').map(str::trim).collect();
    let unquote = |s: &str| {
        s.strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .map(str::to_owned)
    };
    let (Some(reg), Some(name), Some(version)) = (
        fields.first().and_then(|f| f.strip_prefix("list.")),
        fields.get(1).and_then(|f| unquote(f)),
        fields.get(2).and_then(|f| unquote(f)),
    ) else {
        bail!("{path}: `{line}`: expected Config{{list.<Registry>, \"<name>\", \"<version>\"}}");
    };
    let reg_key = format!("{reg}:");
    let host = manifest_go
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(&reg_key))
        .and_then(|v| unquote(v.trim().trim_end_matches(',')))
        .with_context(|| format!("{path}: no registry line `{reg}: \"…\",` in initRegistry"))?;
    Ok(format!("{host}/{name}:{version}"))
}

/// The agnhost image under `reference` (the name and tag the suite asks for, [`suite_image`]), as
/// upstream's `test/images/agnhost/Dockerfile` sets it up where the admission specs look: the
/// binary at `/agnhost`, `ENTRYPOINT ["/agnhost"]`, `CMD ["pause"]`, run as root. Upstream's image
/// is Alpine with network tools for other specs; the admission specs run only its `webhook`
/// subcommand (`test/e2e/apimachinery/webhook.go`, `deployWebhookAndService`), so the layer holds
/// the static binary and `/tmp` alone.
pub fn agnhost_spec(binary: &Path, reference: &str) -> ImageSpec {
    ImageSpec {
        reference: reference.to_owned(),
        entries: vec![
            Entry::File {
                path: "agnhost".into(),
                mode: 0o755,
                source: Source::Path(binary.to_path_buf()),
            },
            Entry::Dir {
                path: "tmp".into(),
                mode: 0o1777,
            },
        ],
        entrypoint: vec!["/agnhost".into()],
        cmd: vec!["pause".into()],
        env: vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()],
        user: String::new(),
        created_by:
            "kca-webhook-lab xtask: k8s.io/kubernetes test/images/agnhost (go build, CGO off)"
                .into(),
    }
}

/// The verdict of one run of the suite.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Specs that passed.
    pub passed: usize,
    /// Specs that failed (a failure or an error).
    pub failed: usize,
    /// Specs skipped (by the focus, the skips, or the spec itself).
    pub skipped: usize,
    /// The failed specs' names.
    pub failures: Vec<String>,
}

impl Verdict {
    /// Counts the specs of a JUnit report (Ginkgo's `--ginkgo.junit-report`): the test cases named
    /// `[It] …`. Ginkgo also reports its suite nodes as test cases (`[SynchronizedBeforeSuite]`,
    /// `[ReportAfterSuite] …`): one of those that failed counts as a failure (a failed set-up fails
    /// the run), one that passed is no spec and is not counted.
    ///
    /// # Errors
    /// Not JUnit XML.
    pub fn from_junit(xml: &str) -> anyhow::Result<Verdict> {
        let r = quick_junit::Report::deserialize_from_str(xml)
            .map_err(|e| anyhow::anyhow!("not JUnit XML: {e}"))?;
        let mut v = Verdict::default();
        for s in &r.test_suites {
            for c in &s.test_cases {
                let spec = c.name.as_str().starts_with("[It] ");
                match &c.status {
                    quick_junit::TestCaseStatus::Success { .. } if spec => v.passed += 1,
                    quick_junit::TestCaseStatus::Skipped { .. } if spec => v.skipped += 1,
                    quick_junit::TestCaseStatus::NonSuccess { .. } => {
                        v.failed += 1;
                        v.failures.push(c.name.as_str().to_owned());
                    }
                    _ => {}
                }
            }
        }
        Ok(v)
    }

    /// `N passed, N failed, N skipped`.
    pub fn line(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `k8s.io/kubernetes` v1.37.2 `test/utils/image/manifest.go` the parse reads,
    /// verbatim (abridged: the other registries and images left out).
    const MANIFEST: &str = r#"
var (
	initRegistry = RegistryList{
		PromoterE2eRegistry:      "registry.k8s.io/e2e-test-images",
		GcRegistry:               "registry.k8s.io",
	}
)
func initImageConfigs(list RegistryList) (map[ImageID]Config, map[ImageID]Config) {
	configs := map[ImageID]Config{}
	configs[AgnhostPrev] = Config{list.PromoterE2eRegistry, "agnhost", "2.55"}
	configs[Agnhost] = Config{list.PromoterE2eRegistry, "agnhost", "2.66.1"}
	configs[Pause] = Config{list.GcRegistry, "pause", "3.10.2"}
"#;

    #[test]
    fn the_suites_image_names_come_from_its_manifest() {
        assert_eq!(
            suite_image(MANIFEST, "m.go", "Agnhost").unwrap(),
            "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
        );
        assert_eq!(
            suite_image(MANIFEST, "m.go", "Pause").unwrap(),
            "registry.k8s.io/pause:3.10.2"
        );
        let e = suite_image(MANIFEST, "m.go", "BusyBox")
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.go") && e.contains("configs[BusyBox]"), "{e}");
        let bad = MANIFEST.replace("GcRegistry:               \"registry.k8s.io\",", "");
        let e = suite_image(&bad, "m.go", "Pause").unwrap_err().to_string();
        assert!(e.contains("GcRegistry"), "{e}");
        let bad = MANIFEST.replace("\"2.66.1\"", "version");
        let e = suite_image(&bad, "m.go", "Agnhost")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected Config{list."), "{e}");
    }

    /// The image is written as the node's other images are (`images::write_layout_archive`) and
    /// names itself as the suite asks, with agnhost's entrypoint and default command.
    #[test]
    fn the_agnhost_image_carries_the_suites_name_and_agnhosts_command() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("agnhost");
        std::fs::write(&bin, b"\x7fELF bytes standing for agnhost").unwrap();
        let reference = suite_image(MANIFEST, "m.go", "Agnhost").unwrap();
        let out = tmp.path().join("agnhost.tar");
        let w =
            crate::upstream::images::write_layout_archive(&agnhost_spec(&bin, &reference), &out)
                .unwrap();
        let mut files = std::collections::HashMap::new();
        let mut a = tar::Archive::new(std::fs::File::open(&out).unwrap());
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().to_string();
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut buf).unwrap();
            files.insert(name, buf);
        }
        let index: serde_json::Value = serde_json::from_slice(&files["index.json"]).unwrap();
        assert_eq!(
            index["manifests"][0]["annotations"]["io.containerd.image.name"],
            "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
        );
        let config_blob = format!(
            "blobs/sha256/{}",
            w.config_digest.trim_start_matches("sha256:")
        );
        let config: serde_json::Value = serde_json::from_slice(&files[&config_blob]).unwrap();
        assert_eq!(
            config["config"]["Entrypoint"],
            serde_json::json!(["/agnhost"])
        );
        assert_eq!(config["config"]["Cmd"], serde_json::json!(["pause"]));
    }

    #[test]
    fn the_focus_and_skips_are_ginkgo_expressions_with_reasons() {
        assert_eq!(DEFAULT_FOCUS, "AdmissionWebhook|ValidatingAdmissionPolicy");
        let skip = skip_regex();
        assert_eq!(skip.split('|').count(), SKIPS.len());
        assert!(skip.contains(r"\[Disruptive\]") && skip.contains(r"\[Feature:[^\]]+\]"));
        for s in SKIPS {
            assert!(!s.reason.is_empty(), "{}", s.pattern);
        }
    }

    #[test]
    fn the_verdict_counts_junit_test_cases() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="6" failures="1" errors="0" disabled="0">
  <testsuite name="Kubernetes e2e suite" tests="6" failures="1" errors="0" skipped="1">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1.0"></testcase>
    <testcase name="[It] [sig-api-machinery] AdmissionWebhook should honor timeout [Conformance]" classname="Kubernetes e2e suite" status="passed" time="12.1"></testcase>
    <testcase name="[It] [sig-api-machinery] AdmissionWebhook should mutate configmap [Conformance]" classname="Kubernetes e2e suite" status="passed" time="6.0"></testcase>
    <testcase name="[It] [sig-storage] CSI something" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
    <testcase name="[It] [sig-api-machinery] ValidatingAdmissionPolicy should type check a CRD" classname="Kubernetes e2e suite" status="failed" time="3.0"><failure message="boom" type="failed">boom</failure></testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e suite report" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
  </testsuite>
</testsuites>"#;
        let v = Verdict::from_junit(xml).unwrap();
        assert_eq!((v.passed, v.failed, v.skipped), (2, 1, 1));
        assert_eq!(v.line(), "2 passed, 1 failed, 1 skipped");
        assert_eq!(
            v.failures,
            vec!["[It] [sig-api-machinery] ValidatingAdmissionPolicy should type check a CRD"]
        );
        let failed_setup = xml.replace(
            r#"name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1.0"></testcase>"#,
            r#"name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="failed" time="1.0"><failure message="no nodes" type="failed">no nodes</failure></testcase>"#,
        );
        let v = Verdict::from_junit(&failed_setup).unwrap();
        assert_eq!(v.line(), "2 passed, 2 failed, 1 skipped");
        assert!(Verdict::from_junit("not xml").is_err());
    }
}
