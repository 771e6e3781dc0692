//! The Kyverno chart assembled from the Go modules: `charts/kyverno` as the
//! Kyverno module ships it, plus the dependency charts that ship in modules
//! Kyverno's go.mod pins, minus the one dependency no module serves (it is
//! disabled by default). Nothing is fetched from a Helm repository.
//!
//! Source of the facts: `charts/kyverno/Chart.yaml` and `values.yaml` of
//! `github.com/kyverno/kyverno` v1.19.1 (dependencies `grafana` and `crds` in
//! `charts/`, `kyverno-api`, `openreports`, `reports-server` from Helm
//! repositories; `reportsServer.enabled: false`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use serde_yaml_ng::Value;

use super::cache::{Cache, CacheKey};
use super::go::{GoEnv, module_dirs};
use super::versions::KyvernoRelease;
use crate::status::Step;

/// The chart version of the pinned Kyverno (`Chart.yaml` `version`); another release's is in
/// [`super::versions::KYVERNO_RELEASES`].
pub const CHART_VERSION: &str = "3.9.1";
/// The app version of the pinned Kyverno (`Chart.yaml` `appVersion`).
pub const CHART_APP_VERSION: &str = "v1.19.1";

/// A dependency chart taken from a Go module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleChart {
    /// The dependency's name in `Chart.yaml` (and its directory under `charts/`).
    pub name: &'static str,
    /// The Go module holding it, at the version Kyverno's go.mod selects.
    pub module: &'static str,
    /// Its directory inside the module.
    pub path: &'static str,
}

/// Dependency charts copied from Go modules into `charts/`.
pub const MODULE_CHARTS: &[ModuleChart] = &[
    ModuleChart {
        name: "kyverno-api",
        module: "github.com/kyverno/api",
        path: "charts/kyverno-api",
    },
    ModuleChart {
        name: "openreports",
        module: "github.com/openreports/reports-api",
        path: "charts/openreports",
    },
];

/// A dependency left out of the assembled `Chart.yaml`: (name, the values
/// key that enables it, which must be `false` by default).
pub const DROPPED_DEPENDENCIES: &[(&str, &str)] = &[("reports-server", "reportsServer.enabled")];

/// One change the assembly makes to the chart as the module ships it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChartChange {
    /// The file or directory changed, relative to the chart directory.
    pub file: &'static str,
    /// What changed and why.
    pub change: &'static str,
}

/// Every change the assembly makes to `charts/kyverno` of the Kyverno
/// module (for the README; `cargo xtask upstream chart-changes` prints it).
pub const CHART_CHANGES: &[ChartChange] = &[
    ChartChange {
        file: "Chart.yaml",
        change: "the `reports-server` dependency (0.1.6 from https://kyverno.github.io/reports-server/) \
                 is removed: no Go module Kyverno pins ships that chart, and it is disabled by default \
                 (`reportsServer.enabled: false` in values.yaml); the assembly refuses to drop it \
                 if that default changes. Chart.lock is left as shipped (helm install/template/lint \
                 do not read it)",
    },
    ChartChange {
        file: "charts/kyverno-api/",
        change: "added: `charts/kyverno-api` of the Go module github.com/kyverno/api at the version \
                 Kyverno's go.mod pins (Chart.yaml names 0.0.1-alpha.4 from https://kyverno.github.io/api; \
                 the module's chart keeps its own version field, recorded in assembly.json)",
    },
    ChartChange {
        file: "charts/openreports/",
        change: "added: `charts/openreports` of the Go module github.com/openreports/reports-api at the \
                 version Kyverno's go.mod pins (Chart.yaml names 0.1.0 from \
                 https://openreports.github.io/reports-api; the module's chart keeps its own version \
                 field, recorded in assembly.json); installed only with `openreports.installCrds`",
    },
    ChartChange {
        file: "(all files)",
        change: "made writable (the Go module cache is read-only); contents unchanged",
    },
];

/// Makes (or finds) `chart-<key>/kyverno`, the assembled chart, and checks it
/// renders with the built Helm (`helm template kyverno <dir> -n kyverno`).
/// Also writes `chart-<key>/assembly.json` (module versions, subchart
/// versions, the changes).
///
/// # Errors
/// A module or chart file is missing, the chart's version is not
/// `release`'s chart version / Kyverno version, a dropped dependency is enabled by
/// default, a dependency is missing from `charts/`, or `helm template` fails.
pub fn ensure_chart(
    cache: &Cache,
    env: &GoEnv,
    helm: &Path,
    wrapper: &Path,
    release: &KyvernoRelease,
) -> anyhow::Result<PathBuf> {
    let mut key = CacheKey::new("chart/v1");
    key.file("go.mod", &wrapper.join("go.mod"))?
        .file("go.sum", &wrapper.join("go.sum"))?;
    for c in CHART_CHANGES {
        key.field(c.file, c.change.as_bytes());
    }
    let dest = cache.entry("chart", &key);
    let chart_dir = dest.join("kyverno");
    if chart_dir.join("Chart.yaml").is_file() {
        super::progress::cached("kyverno chart", &dest);
        return Ok(chart_dir);
    }
    let step = Step::start(format!(
        "Assembling the Kyverno chart {} from the Go modules",
        release.chart_version
    ));
    let mut modules = vec![super::components::KYVERNO];
    modules.extend(MODULE_CHARTS.iter().map(|c| c.module));
    let infos = module_dirs(env, wrapper, &modules)?;
    let dir_of = |m: &str| {
        infos
            .iter()
            .find(|i| i.path == m)
            .map(|i| (i.dir.clone(), i.version.clone()))
    };
    let (kyverno_dir, kyverno_version) =
        dir_of(super::components::KYVERNO).context("internal: no kyverno module directory")?;

    let staging = cache.staging(&format!("chart-{}", key.short()))?;
    let out = staging.path().join("kyverno");
    let src = kyverno_dir.join("charts/kyverno");
    copy_tree(&src, &out)?;
    let mut subcharts = Vec::new();
    for mc in MODULE_CHARTS {
        let (dir, version) = dir_of(mc.module)
            .with_context(|| format!("internal: no directory for {}", mc.module))?;
        let from = dir.join(mc.path);
        let chart_yaml = read_yaml(&from.join("Chart.yaml"))?;
        let name = chart_yaml.get("name").and_then(Value::as_str).unwrap_or("");
        if name != mc.name {
            anyhow::bail!(
                "{}: expected chart name {}, found {name:?}",
                from.join("Chart.yaml").display(),
                mc.name
            );
        }
        let chart_version = yaml_string(&chart_yaml, "version");
        copy_tree(&from, &out.join("charts").join(mc.name))?;
        subcharts.push(serde_json::json!({
            "name": mc.name, "module": mc.module, "module_version": version,
            "path": mc.path, "chart_version": chart_version,
        }));
    }

    let values = read_yaml(&out.join("values.yaml"))?;
    let chart_path = out.join("Chart.yaml");
    let original = fs::read_to_string(&chart_path)
        .with_context(|| format!("reading {}", chart_path.display()))?;
    let assembled = assemble_chart_yaml(&original, &values, release.chart_version, release.version)
        .with_context(|| format!("assembling {}", chart_path.display()))?;
    super::cache::write_file(&chart_path, assembled.as_bytes())?;
    let missing = missing_dependencies(&out)?;
    if !missing.is_empty() {
        anyhow::bail!(
            "{}: dependencies missing from charts/: {}",
            chart_path.display(),
            missing.join(", ")
        );
    }
    helm_template(helm, &out, &staging.path().join("helm-home"))?;
    let _ = fs::remove_dir_all(staging.path().join("helm-home"));

    let record = serde_json::json!({
        "kyverno_module": super::components::KYVERNO,
        "kyverno_module_version": kyverno_version,
        "chart_source": "charts/kyverno",
        "chart_version": release.chart_version,
        "chart_app_version": release.version,
        "subcharts": subcharts,
        "dropped_dependencies": DROPPED_DEPENDENCIES.iter().map(|(n, k)| serde_json::json!({"name": n, "disabled_by": k})).collect::<Vec<_>>(),
        "changes": CHART_CHANGES.iter().map(|c| serde_json::json!({"file": c.file, "change": c.change})).collect::<Vec<_>>(),
    });
    let text = serde_json::to_vec_pretty(&record).context("rendering assembly.json")?;
    super::cache::write_file(&staging.path().join("assembly.json"), &text)?;
    staging.commit(&dest)?;
    step.ok();
    Ok(chart_dir)
}

/// Checks the shipped `Chart.yaml` text (version, appVersion, every dropped
/// dependency disabled by default in `values`) and returns it with the
/// dropped dependencies' list items removed, everything else byte for byte.
///
/// # Errors
/// Unexpected version or appVersion, a dropped dependency enabled by default
/// or absent, or a result that does not parse to the original minus the
/// dropped dependencies.
pub fn assemble_chart_yaml(
    original: &str,
    values: &Value,
    chart_version: &str,
    app_version_expected: &str,
) -> anyhow::Result<String> {
    let before: Value = serde_yaml_ng::from_str(original).context("parsing Chart.yaml")?;
    let version = yaml_string(&before, "version");
    let app_version = yaml_string(&before, "appVersion");
    if version != chart_version || app_version != app_version_expected {
        anyhow::bail!(
            "Chart.yaml: expected version {chart_version} / appVersion {app_version_expected}, \
             found {version} / {app_version}"
        );
    }
    let mut text = original.to_string();
    for (name, values_key) in DROPPED_DEPENDENCIES {
        let enabled = values_key
            .split('.')
            .try_fold(values, |v, k| v.get(k))
            .with_context(|| format!("values.yaml: no {values_key} (expected false)"))?;
        if enabled.as_bool() != Some(false) {
            anyhow::bail!(
                "values.yaml: {values_key} is {enabled:?}, expected false; the {name} dependency \
                 cannot be dropped from Chart.yaml while it is enabled by default"
            );
        }
        text = remove_list_item(&text, "dependencies", name)?;
    }
    let after: Value =
        serde_yaml_ng::from_str(&text).context("parsing the assembled Chart.yaml")?;
    let mut expected = before.clone();
    if let Some(Value::Sequence(deps)) = expected.get_mut("dependencies") {
        deps.retain(|d| {
            let n = d.get("name").and_then(Value::as_str).unwrap_or("");
            !DROPPED_DEPENDENCIES
                .iter()
                .any(|(dropped, _)| *dropped == n)
        });
    }
    if after != expected {
        anyhow::bail!(
            "internal: the assembled Chart.yaml differs from the original beyond the dropped dependencies"
        );
    }
    Ok(text)
}

/// Removes the item with `name: <name>` from the block list under the
/// top-level key `key`, keeping every other line (and comment) as it is.
///
/// # Errors
/// No such key or no such item.
pub fn remove_list_item(text: &str, key: &str, name: &str) -> anyhow::Result<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end() == format!("{key}:"))
        .with_context(|| format!("no top-level `{key}:` list"))?;
    // The block ends at the next line that starts in column 0 and is not a list item.
    let end = lines[start + 1..]
        .iter()
        .position(|l| {
            let first = l.chars().next().unwrap_or(' ');
            !first.is_whitespace() && first != '-' && first != '#'
        })
        .map_or(lines.len(), |p| start + 1 + p);
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let item_starts: Vec<usize> = (start + 1..end)
        .filter(|&i| lines[i].trim_start().starts_with("- "))
        .collect();
    let item_indent = item_starts
        .first()
        .map(|&i| indent_of(lines[i]))
        .context("empty list")?;
    let starts: Vec<usize> = item_starts
        .into_iter()
        .filter(|&i| indent_of(lines[i]) == item_indent)
        .collect();
    for (n, &s) in starts.iter().enumerate() {
        let e = starts.get(n + 1).copied().unwrap_or(end);
        let is_target = lines[s..e].iter().any(|l| {
            let t = l.trim_start().trim_start_matches("- ").trim();
            t.strip_prefix("name:")
                .map(|v| {
                    v.split('#')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .trim_matches(['"', '\''])
                        == name
                })
                .unwrap_or(false)
        });
        if is_target {
            let mut out: String = lines[..s].concat();
            out.push_str(&lines[e..].concat());
            return Ok(out);
        }
    }
    anyhow::bail!("no item named {name} under `{key}:`")
}

/// Names listed in `Chart.yaml` dependencies that have no chart directory
/// with that name under `charts/` (what `helm install` refuses).
///
/// # Errors
/// `Chart.yaml` or a subchart's `Chart.yaml` cannot be read.
pub fn missing_dependencies(chart_dir: &Path) -> anyhow::Result<Vec<String>> {
    let chart = read_yaml(&chart_dir.join("Chart.yaml"))?;
    let mut present = Vec::new();
    let charts = chart_dir.join("charts");
    if charts.is_dir() {
        for e in fs::read_dir(&charts).with_context(|| format!("listing {}", charts.display()))? {
            let p = e?.path().join("Chart.yaml");
            if p.is_file() {
                present.push(yaml_string(&read_yaml(&p)?, "name"));
            }
        }
    }
    let deps = chart
        .get("dependencies")
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default();
    Ok(deps
        .iter()
        .map(|d| {
            d.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .filter(|n| !present.contains(n))
        .collect())
}

/// Runs `helm template kyverno <chart> -n kyverno` with Helm's homes in
/// `home` (nothing of the user's Helm configuration is read or written).
fn helm_template(helm: &Path, chart: &Path, home: &Path) -> anyhow::Result<()> {
    let mut cmd = Command::new(helm);
    cmd.args(["template", "kyverno"])
        .arg(chart)
        .args(["--namespace", "kyverno"]);
    for (var, sub) in [
        ("HELM_CACHE_HOME", "cache"),
        ("HELM_CONFIG_HOME", "config"),
        ("HELM_DATA_HOME", "data"),
        ("KUBECACHEDIR", "kube-cache"),
    ] {
        cmd.env(var, home.join(sub));
    }
    crate::command::run(cmd).context("the assembled chart does not render")?;
    Ok(())
}

fn read_yaml(path: &Path) -> anyhow::Result<Value> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_yaml_ng::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn yaml_string(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
        None => String::new(),
    }
}

/// Copies a directory tree (regular files and directories; Go module
/// directories hold nothing else), making it writable: directories 0755,
/// files 0644 (0755 if executable).
///
/// # Errors
/// I/O, or an entry that is neither a file nor a directory.
pub fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    fs::set_permissions(to, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("setting permissions of {}", to.display()))?;
    let mut entries: Vec<_> = fs::read_dir(from)
        .with_context(|| format!("listing {}", from.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("listing {}", from.display()))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let src = e.path();
        let dst = to.join(e.file_name());
        let meta =
            fs::symlink_metadata(&src).with_context(|| format!("reading {}", src.display()))?;
        if meta.is_dir() {
            copy_tree(&src, &dst)?;
        } else if meta.is_file() {
            fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
            let mode = if meta.permissions().mode() & 0o111 != 0 {
                0o755
            } else {
                0o644
            };
            fs::set_permissions(&dst, fs::Permissions::from_mode(mode))
                .with_context(|| format!("setting permissions of {}", dst.display()))?;
        } else {
            anyhow::bail!("{}: neither a file nor a directory", src.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dependency list as Kyverno v1.19.1's `charts/kyverno/Chart.yaml` has it.
    const CHART: &str = r#"apiVersion: v2
name: kyverno
version: 3.9.1  # VERSION
appVersion: v1.19.1
kubeVersion: ">=1.25.0-0"
dependencies:
  - name: grafana
    version: 3.9.1  # VERSION
    condition: grafana.enabled
  - name: crds
    version: 3.9.1  # VERSION
    condition: crds.install
  - name: kyverno-api
    version: 0.0.1-alpha.4
    repository: "https://kyverno.github.io/api"
    condition: crds.install
  - name: openreports
    version: 0.1.0
    repository: "https://openreports.github.io/reports-api"
    condition: openreports.installCrds
  - name: reports-server
    version: 0.1.6
    repository: "https://kyverno.github.io/reports-server/"
    condition: reportsServer.enabled
"#;

    fn values(enabled: bool) -> Value {
        serde_yaml_ng::from_str(&format!("reportsServer:\n  enabled: {enabled}\n")).unwrap()
    }

    fn dep_names(text: &str) -> Vec<String> {
        let v: Value = serde_yaml_ng::from_str(text).unwrap();
        v["dependencies"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn reports_server_is_dropped_and_nothing_else_changes() {
        let out =
            assemble_chart_yaml(CHART, &values(false), CHART_VERSION, CHART_APP_VERSION).unwrap();
        assert_eq!(
            dep_names(&out),
            ["grafana", "crds", "kyverno-api", "openreports"]
        );
        assert!(out.contains("version: 3.9.1  # VERSION\n"), "comments kept");
        assert!(!out.contains("reports-server"));
        assert!(out.starts_with("apiVersion: v2\nname: kyverno\n"));
    }

    #[test]
    fn reports_server_enabled_by_default_is_refused() {
        let err = assemble_chart_yaml(CHART, &values(true), CHART_VERSION, CHART_APP_VERSION)
            .unwrap_err();
        assert!(err.to_string().contains("reportsServer.enabled"), "{err}");
        let none: Value = serde_yaml_ng::from_str("other: 1\n").unwrap();
        assert!(assemble_chart_yaml(CHART, &none, CHART_VERSION, CHART_APP_VERSION).is_err());
    }

    #[test]
    fn another_chart_version_is_refused() {
        let other = CHART.replace(
            "version: 3.9.1  # VERSION\nappVersion",
            "version: 3.9.0\nappVersion",
        );
        let err = assemble_chart_yaml(&other, &values(false), CHART_VERSION, CHART_APP_VERSION)
            .unwrap_err();
        assert!(err.to_string().contains("found 3.9.0 / v1.19.1"), "{err}");
    }

    #[test]
    fn removing_an_item_in_the_middle_and_a_missing_item() {
        let text = "a: 1\ndeps:\n- name: x\n  v: 1\n- name: y # the y\n  v: 2\n- name: z\nb: 2\n";
        assert_eq!(
            remove_list_item(text, "deps", "y").unwrap(),
            "a: 1\ndeps:\n- name: x\n  v: 1\n- name: z\nb: 2\n"
        );
        assert!(remove_list_item(text, "deps", "w").is_err());
        assert!(remove_list_item(text, "nodeps", "x").is_err());
    }

    #[test]
    fn dependencies_missing_from_charts_dir_are_found() {
        let tmp = tempfile::tempdir().unwrap();
        let chart = tmp.path();
        fs::write(
            chart.join("Chart.yaml"),
            assemble_chart_yaml(CHART, &values(false), CHART_VERSION, CHART_APP_VERSION).unwrap(),
        )
        .unwrap();
        for name in ["grafana", "crds", "kyverno-api"] {
            fs::create_dir_all(chart.join("charts").join(name)).unwrap();
            fs::write(
                chart.join("charts").join(name).join("Chart.yaml"),
                format!("name: {name}\nversion: v0.0.0\n"),
            )
            .unwrap();
        }
        assert_eq!(missing_dependencies(chart).unwrap(), ["openreports"]);
    }

    #[test]
    fn copied_trees_are_writable() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        fs::create_dir_all(src.join("sub")).unwrap();
        fs::write(src.join("sub/f"), b"x").unwrap();
        fs::set_permissions(src.join("sub/f"), fs::Permissions::from_mode(0o444)).unwrap();
        fs::set_permissions(src.join("sub"), fs::Permissions::from_mode(0o555)).unwrap();
        copy_tree(&src, &tmp.path().join("dst")).unwrap();
        let m = |p: &str| {
            fs::metadata(tmp.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(m("dst/sub"), 0o755);
        assert_eq!(m("dst/sub/f"), 0o644);
        assert_eq!(fs::read(tmp.path().join("dst/sub/f")).unwrap(), b"x");
    }
}
