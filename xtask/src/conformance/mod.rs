//! `cargo xtask conformance`: upstream's own admission tests (`k8s.io/kubernetes`
//! `test/e2e/apimachinery/webhook.go` and `validatingadmissionpolicy.go`, the `[sig-api-machinery]
//! AdmissionWebhook` and `ValidatingAdmissionPolicy` specs) against the embedded node, or any
//! cluster through its kubeconfig. `suite.rs` builds the suite (`e2e.test`, `agnhost`,
//! `kubectl`) and its images into the upstream cache; `conformance/run.rs` is the command.
//!
//! This file holds the pure parts, each unit-tested: the default focus and the skips with their
//! reasons ([`DEFAULT_FOCUS`], [`SKIPS`], [`skip_regex`]), the image names the suite asks for, read
//! from the module's own `test/utils/image/manifest.go` ([`suite_image`]), the agnhost image's
//! layout ([`agnhost_spec`]), `e2e.test`'s arguments ([`e2e_args`]) and the one-line verdict from
//! the suite's JUnit report ([`Verdict::from_junit`], with each skipped spec's reason). The
//! result on this machine: docs/conformance.md.

pub mod run;
pub mod suite;

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

/// The BusyBox applets the agnhost image links in `/bin` (upstream's image is Alpine, whose
/// `/bin` is BusyBox): what the selected specs' pods run (`sleep` and `cat` in `[sig-auth]
/// ValidatingAdmissionPolicy can restrict access by-node`) and a shell's basics.
pub const BUSYBOX_APPLETS: &[&str] = &[
    "cat", "echo", "env", "false", "grep", "ls", "mkdir", "ps", "rm", "sh", "sleep", "true",
];

/// The agnhost image under `reference` (the name and tag the suite asks for, [`suite_image`]), as
/// upstream's `test/images/agnhost/Dockerfile` sets it up where the specs look: the binary at
/// `/agnhost`, `ENTRYPOINT ["/agnhost"]`, `CMD ["pause"]`, run as root, and, for the commands
/// pods of the suite run in it (`sleep`, `cat`), Debian's static BusyBox at `/bin/busybox` with
/// [`BUSYBOX_APPLETS`] linked to it (upstream's base is Alpine, whose `/bin` is BusyBox; its other
/// tools, curl, dig, iperf…, serve specs outside the admission focus and are left out).
pub fn agnhost_spec(binary: &Path, busybox: &Path, reference: &str) -> ImageSpec {
    let mut entries = vec![
        Entry::File {
            path: "agnhost".into(),
            mode: 0o755,
            source: Source::Path(binary.to_path_buf()),
        },
        Entry::Dir {
            path: "bin".into(),
            mode: 0o755,
        },
        Entry::File {
            path: "bin/busybox".into(),
            mode: 0o755,
            source: Source::Path(busybox.to_path_buf()),
        },
        Entry::Dir {
            path: "tmp".into(),
            mode: 0o1777,
        },
    ];
    entries.extend(BUSYBOX_APPLETS.iter().map(|a| Entry::Symlink {
        path: format!("bin/{a}"),
        target: "busybox".into(),
    }));
    ImageSpec {
        reference: reference.to_owned(),
        entries,
        entrypoint: vec!["/agnhost".into()],
        cmd: vec!["pause".into()],
        env: vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()],
        user: String::new(),
        created_by:
            "kca-webhook-lab xtask: k8s.io/kubernetes test/images/agnhost (go build, CGO off), Debian busybox-static"
                .into(),
    }
}

/// One selected spec that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The spec's name as the JUnit report gives it (`[It] …`).
    pub name: String,
    /// Why: the spec's own skip message, else the reason of the [`SKIPS`] entry it matches.
    pub reason: String,
}

/// The verdict of one run of the suite.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Specs that passed.
    pub passed: usize,
    /// Specs that failed (a failure or an error).
    pub failed: usize,
    /// Specs the focus selected that did not run (a [`SKIPS`] entry, or the spec skipped itself).
    pub skipped: usize,
    /// The failed specs' names.
    pub failures: Vec<String>,
    /// The skipped specs, each with its reason.
    pub skips: Vec<Skipped>,
    /// The passed specs' names.
    pub passes: Vec<String>,
}

/// Why a selected spec named `name` was skipped, from the JUnit `<skipped message>` Ginkgo wrote
/// (`skipped - <the spec's own reason>` when the spec called `Skip`, plain `skipped` when a filter
/// left it out): the spec's reason, else the reason of the first [`SKIPS`] entry matching `name`.
pub fn skip_reason(name: &str, message: &str) -> String {
    if let Some(own) = message.strip_prefix("skipped - ") {
        return format!("the spec skipped itself: {}", own.trim());
    }
    SKIPS
        .iter()
        .find(|s| regex::Regex::new(s.pattern).is_ok_and(|r| r.is_match(name)))
        .map(|s| format!("{}: {}", s.pattern, s.reason))
        .unwrap_or_else(|| format!("skipped by Ginkgo ({message})"))
}

impl Verdict {
    /// Counts the specs of the suite's JUnit report (`<report-dir>/junit_01.xml`): the test cases
    /// named `[It] …`. The report lists every spec of the suite, so a skipped spec counts only
    /// when `focus` (the run's `--ginkgo.focus`) selects it: the others were never asked for.
    /// Ginkgo also reports its suite nodes as test cases (`[SynchronizedBeforeSuite]`,
    /// `[ReportAfterSuite] …`): one of those that failed counts as a failure (a failed set-up fails
    /// the run), one that passed is no spec and is not counted.
    ///
    /// # Errors
    /// Not JUnit XML, or `focus` not a regular expression.
    pub fn from_junit(xml: &str, focus: &str) -> anyhow::Result<Verdict> {
        let focus =
            regex::Regex::new(focus).with_context(|| format!("focus {focus:?}: not a regex"))?;
        let r = quick_junit::Report::deserialize_from_str(&without_timestamps(xml))
            .map_err(|e| anyhow::anyhow!("not JUnit XML: {e}"))?;
        let mut v = Verdict::default();
        for s in &r.test_suites {
            for c in &s.test_cases {
                let name = c.name.as_str();
                let spec = name.starts_with("[It] ");
                match &c.status {
                    quick_junit::TestCaseStatus::Success { .. } if spec => {
                        v.passed += 1;
                        v.passes.push(name.to_owned());
                    }
                    quick_junit::TestCaseStatus::Skipped { message, .. }
                        if spec && focus.is_match(name) =>
                    {
                        v.skipped += 1;
                        let message = message.as_ref().map(|m| m.as_str()).unwrap_or("skipped");
                        v.skips.push(Skipped {
                            name: name.to_owned(),
                            reason: skip_reason(name, message),
                        });
                    }
                    quick_junit::TestCaseStatus::NonSuccess { .. } => {
                        v.failed += 1;
                        v.failures.push(name.to_owned());
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

    /// Whether the run passed: something ran, nothing failed.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.passed > 0
    }
}

/// `xml` without its `timestamp="…"` attributes: Ginkgo writes them without a zone
/// (`2026-12-02T23:07:39`), which the JUnit reader refuses, and the verdict does not read them.
fn without_timestamps(xml: &str) -> String {
    regex::Regex::new(r#"\stimestamp="[^"]*""#)
        .map(|r| r.replace_all(xml, "").into_owned())
        .unwrap_or_else(|_| xml.to_owned())
}

/// `e2e.test`'s arguments: the cluster (`--kubeconfig`, `--kubectl-path` of the same release,
/// `--provider skeleton`: no cloud), the JUnit report (`--report-dir`, which writes
/// `junit_01.xml`), the specs (`--ginkgo.focus`, `--ginkgo.skip` of [`SKIPS`]), plain output, and
/// a bound on the whole run (`--ginkgo.timeout`).
pub fn e2e_args(kubeconfig: &Path, kubectl: &Path, report_dir: &Path, focus: &str) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--kubectl-path={}", kubectl.display()),
        "--provider=skeleton".to_owned(),
        format!("--report-dir={}", report_dir.display()),
        format!("--ginkgo.focus={focus}"),
        format!("--ginkgo.skip={}", skip_regex()),
        "--ginkgo.no-color".to_owned(),
        format!("--ginkgo.timeout={SUITE_TIMEOUT}"),
    ]
}

/// The bound of one run of the suite (`--ginkgo.timeout`): the 29 selected specs of v1.35.8 took
/// 136 s here (docs/conformance.md); Ginkgo stops the run and reports it when it is reached.
pub const SUITE_TIMEOUT: &str = "90m";

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
        let busybox = tmp.path().join("busybox");
        std::fs::write(&busybox, b"\x7fELF bytes standing for busybox").unwrap();
        let reference = suite_image(MANIFEST, "m.go", "Agnhost").unwrap();
        let out = tmp.path().join("agnhost.tar");
        let w = crate::upstream::images::write_layout_archive(
            &agnhost_spec(&bin, &busybox, &reference),
            &out,
        )
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
        // The one layer: /agnhost, /bin/busybox and `sleep` linked to it (what the sig-auth
        // spec's pod runs).
        let manifest_blob = format!(
            "blobs/sha256/{}",
            w.manifest_digest.trim_start_matches("sha256:")
        );
        let manifest: serde_json::Value = serde_json::from_slice(&files[&manifest_blob]).unwrap();
        let layer = manifest["layers"][0]["digest"].as_str().unwrap();
        let layer = &files[&format!("blobs/sha256/{}", layer.trim_start_matches("sha256:"))];
        let mut t = tar::Archive::new(flate2::read::GzDecoder::new(&layer[..]));
        let mut links = std::collections::HashMap::new();
        let mut regular = Vec::new();
        for e in t.entries().unwrap() {
            let e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().to_string();
            match e.header().entry_type() {
                tar::EntryType::Symlink => {
                    let to = e
                        .link_name()
                        .unwrap()
                        .unwrap()
                        .to_string_lossy()
                        .to_string();
                    links.insert(name, to);
                }
                tar::EntryType::Regular => regular.push(name),
                _ => {}
            }
        }
        assert_eq!(regular, ["agnhost", "bin/busybox"]);
        assert_eq!(links["bin/sleep"], "busybox");
        assert_eq!(links.len(), BUSYBOX_APPLETS.len());
    }

    /// A selected spec skipped by one of [`SKIPS`] carries that entry's reason; one that skipped
    /// itself carries its own; a run where everything passed is `ok`, one where nothing ran is not.
    #[test]
    fn skipped_selected_specs_carry_their_reasons() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" failures="0" errors="0" disabled="2">
  <testsuite name="Kubernetes e2e suite" package="/work/r" tests="4" disabled="0" skipped="3" errors="0" failures="0" time="135.4" timestamp="2026-12-02T23:07:39">
    <testcase name="[It] [sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate pod and apply defaults after mutation [Conformance]" classname="Kubernetes e2e suite" status="passed" time="9.0"></testcase>
    <testcase name="[It] [sig-api-machinery] ValidatingAdmissionPolicy [Privileged:ClusterAdmin] [Feature:Foo] does foo" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
    <testcase name="[It] [sig-api-machinery] AdmissionWebhook should work across nodes" classname="Kubernetes e2e suite" status="skipped" time="0.1"><skipped message="skipped - Requires at least 2 nodes (not 1)"></skipped></testcase>
    <testcase name="[It] [sig-node] Pods should be submitted and removed [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
  </testsuite>
</testsuites>"#;
        let v = Verdict::from_junit(xml, DEFAULT_FOCUS).unwrap();
        assert_eq!(v.line(), "1 passed, 0 failed, 2 skipped");
        assert!(v.ok());
        assert!(
            v.skips[0].reason.starts_with(r"\[Feature:[^\]]+\]: "),
            "{:?}",
            v.skips
        );
        assert_eq!(
            v.skips[1].reason,
            "the spec skipped itself: Requires at least 2 nodes (not 1)"
        );
        let none = Verdict::from_junit(xml, "nothing matches this").unwrap();
        assert_eq!(none.line(), "1 passed, 0 failed, 0 skipped");
        assert!(!Verdict::default().ok());
    }

    #[test]
    fn the_suite_runs_against_the_given_cluster_with_the_focus_and_skips() {
        let a = e2e_args(
            Path::new("/k/config"),
            Path::new("/c/kubectl"),
            Path::new("/r"),
            DEFAULT_FOCUS,
        );
        for want in [
            "--kubeconfig=/k/config",
            "--kubectl-path=/c/kubectl",
            "--provider=skeleton",
            "--report-dir=/r",
            "--ginkgo.focus=AdmissionWebhook|ValidatingAdmissionPolicy",
        ] {
            assert!(a.iter().any(|x| x == want), "{want} missing from {a:?}");
        }
        let skip = a
            .iter()
            .find_map(|x| x.strip_prefix("--ginkgo.skip="))
            .unwrap();
        assert_eq!(skip, skip_regex());
    }

    #[test]
    fn the_focus_and_skips_are_ginkgo_expressions_with_reasons() {
        assert_eq!(DEFAULT_FOCUS, "AdmissionWebhook|ValidatingAdmissionPolicy");
        let skip = skip_regex();
        assert_eq!(skip.split('|').count(), SKIPS.len());
        assert!(skip.contains(r"\[Disruptive\]") && skip.contains(r"\[Feature:[^\]]+\]"));
        for s in SKIPS {
            assert!(!s.reason.is_empty(), "{}", s.pattern);
            assert!(regex::Regex::new(s.pattern).is_ok(), "{}", s.pattern);
        }
        assert!(
            regex::Regex::new(&skip)
                .unwrap()
                .is_match("x [Feature:Foo] y")
        );
        assert!(regex::Regex::new(DEFAULT_FOCUS).is_ok());
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
        let v = Verdict::from_junit(xml, DEFAULT_FOCUS).unwrap();
        assert_eq!((v.passed, v.failed, v.skipped), (2, 1, 0), "{v:?}");
        assert_eq!(v.line(), "2 passed, 1 failed, 0 skipped");
        assert!(!v.ok());
        // Focused on everything, the storage spec the filter left out counts as skipped.
        let v = Verdict::from_junit(xml, ".").unwrap();
        assert_eq!(v.line(), "2 passed, 1 failed, 1 skipped");
        assert_eq!(
            v.failures,
            vec!["[It] [sig-api-machinery] ValidatingAdmissionPolicy should type check a CRD"]
        );
        let failed_setup = xml.replace(
            r#"name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1.0"></testcase>"#,
            r#"name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="failed" time="1.0"><failure message="no nodes" type="failed">no nodes</failure></testcase>"#,
        );
        let v = Verdict::from_junit(&failed_setup, DEFAULT_FOCUS).unwrap();
        assert_eq!(v.line(), "2 passed, 2 failed, 0 skipped");
        assert!(Verdict::from_junit("not xml", DEFAULT_FOCUS).is_err());
        assert!(Verdict::from_junit(xml, "(").is_err());
    }
}
