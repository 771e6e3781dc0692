//! `kca-webhook-lab version [-o json|yaml]`: the build facts as a document (kubectl's
//! `version -o json`, the Kyverno CLI's `version -o json|yaml`). The facts come from `lab/build.rs`
//! at compile time: the commit and build date that `cargo xtask dist` gives (`unknown` in a
//! development build), the target triple and its linking, and the Kubernetes and Kyverno versions
//! the labs were made for (the upstream wrapper modules' go.mod). The JSON Schema is
//! [`schema`], published as `lab/schemas/version.schema.json` (`lab/tests/schemas.rs` keeps it
//! current).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// The format name of [`Version`].
pub const FORMAT: &str = "kca-webhook-lab/version/v1";

/// What `version -o json|yaml` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Version {
    /// [`FORMAT`].
    pub format: String,
    /// The tool's version (the workspace's `version`, semver without `v`).
    pub version: String,
    /// The git commit it was built from (`-dirty` when the work tree had changes), or `unknown`
    /// in a development build.
    pub commit: String,
    /// When it was built: the commit's committer date, RFC 3339 in UTC (reproducible: the same
    /// commit gives the same date), or `unknown` in a development build.
    pub build_date: String,
    /// The target triple, e.g. `x86_64-unknown-linux-gnu`.
    pub target: String,
    /// `static` when the C runtime is linked in (a release), else `dynamic`.
    pub linking: String,
    /// The Kubernetes version the labs were made for, e.g. `v1.35.8`.
    pub kubernetes: String,
    /// The Kyverno version the labs were made for, e.g. `v1.19.1`.
    pub kyverno: String,
}

/// `-o` of `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Output {
    /// `--version`'s lines.
    #[default]
    Text,
    /// [`Version`] as JSON.
    Json,
    /// [`Version`] as YAML.
    Yaml,
}

/// This binary's facts (module docs).
pub fn current() -> Version {
    let (target, linking) = env!("KCA_TARGET")
        .split_once(", ")
        .unwrap_or((env!("KCA_TARGET"), "unknown"));
    Version {
        format: FORMAT.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        commit: env!("KCA_COMMIT").to_owned(),
        build_date: env!("KCA_BUILD_DATE").to_owned(),
        target: target.to_owned(),
        linking: linking.to_owned(),
        kubernetes: env!("KCA_KUBERNETES_VERSION").to_owned(),
        kyverno: env!("KCA_KYVERNO_VERSION").to_owned(),
    }
}

/// `v` in `output`: `--version`'s lines (`text`), pretty JSON, or YAML.
///
/// Errors: the encoder failed (not expected for this shape).
pub fn render(v: &Version, output: Output) -> Result<String, LabError> {
    match output {
        Output::Text => Ok(format!(
            "{}\ncommit: {}\nbuild date: {}\nkubernetes: {}\nkyverno: {}\ntarget: {}, {}",
            v.version, v.commit, v.build_date, v.kubernetes, v.kyverno, v.target, v.linking
        )),
        Output::Json => serde_json::to_string_pretty(v)
            .map_err(|e| LabError::Usage(format!("encoding the version as JSON: {e}"))),
        Output::Yaml => serde_yaml_ng::to_string(v)
            .map(|s| s.trim_end().to_owned())
            .map_err(|e| LabError::Usage(format!("encoding the version as YAML: {e}"))),
    }
}

/// The JSON Schema of `version -o json` ([`Version`]).
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Version)).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_has_every_fact_and_yaml_reads_back() {
        let v = current();
        let text = render(&v, Output::Text).unwrap();
        for fact in [
            &v.commit,
            &v.build_date,
            &v.kubernetes,
            &v.kyverno,
            &v.target,
        ] {
            assert!(text.contains(fact.as_str()), "{fact} in {text}");
        }
        let yaml = render(&v, Output::Yaml).unwrap();
        let back: Version = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(back, v);
        assert!(v.kubernetes.starts_with('v') && v.kyverno.starts_with('v'));
    }
}
