//! Wrapper modules for versions other than the pinned ones, made from the pinned wrapper.
//!
//! The pinned `kubernetes` and `kyverno` wrappers under `xtask/upstream/` are committed with their
//! `go.sum`. For another release of the same upstream module, [`ensure_wrapper`] writes a wrapper
//! into the cache (`wrapper-<family>-<version>-<key>/`): the pinned wrapper's `module` and `go`
//! lines and `tools.go`, `require <module> <version>`, and the upstream release's own `replace`
//! directives carried over ([`render_go_mod`]): a replace to a module version is copied as it is
//! (Kyverno's fork of `k8s.io/pod-security-admission`); a replace to Kubernetes' `./staging/src/<m>`
//! directory becomes `<m> => <m> v0.Y.Z`, the staging module published for release v1.Y.Z. Then
//! `go mod tidy` resolves the rest through the Go module proxy and checks every sum against the
//! checksum database (`GOSUMDB=sum.golang.org`, `GONOSUMDB`/`GOPRIVATE`/`GOINSECURE` cleared).
//!
//! The same rule reproduces the committed pinned wrappers byte for byte (checked by hand on
//! 2026-12-01 for `k8s.io/kubernetes` v1.35.8 and `github.com/kyverno/kyverno` v1.19.1; see
//! docs/matrix.md), so a generated wrapper is what a maintainer would commit for that version.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::cache::{Cache, CacheKey};
use super::components::Family;
use super::go::GoEnv;
use crate::command;

/// Environment variables cleared for `go mod tidy`, so every sum is checked against the
/// checksum database.
const SUMDB_BYPASS_ENV: &[&str] = &[
    "GONOSUMDB",
    "GONOSUMCHECK",
    "GOPRIVATE",
    "GOINSECURE",
    "GONOPROXY",
];

/// One `replace` directive of a `go.mod`: `old [old_version] => new [new_version]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replace {
    /// Module path replaced.
    pub old: String,
    /// Version replaced (`None`: every version).
    pub old_version: Option<String>,
    /// Replacement module path or local directory (`./…`, `../…`).
    pub new: String,
    /// Replacement version (`None` for a directory).
    pub new_version: Option<String>,
}

/// The `replace` directives of a `go.mod` text, single-line and block forms.
///
/// # Errors
/// A directive without `=>` or with a wrong number of fields (naming the line).
pub fn replaces(go_mod: &str) -> anyhow::Result<Vec<Replace>> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (n, raw) in go_mod.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or("").trim();
        let body = if in_block {
            if line == ")" {
                in_block = false;
                continue;
            }
            line
        } else if let Some(rest) = line.strip_prefix("replace") {
            let rest = rest.trim();
            if rest == "(" {
                in_block = true;
                continue;
            }
            if !line.starts_with("replace ") && !line.starts_with("replace\t") {
                continue;
            }
            rest
        } else {
            continue;
        };
        if body.is_empty() {
            continue;
        }
        let (lhs, rhs) = body
            .split_once("=>")
            .with_context(|| format!("go.mod line {}: replace without =>: {raw:?}", n + 1))?;
        let l: Vec<&str> = lhs.split_whitespace().collect();
        let r: Vec<&str> = rhs.split_whitespace().collect();
        if !(1..=2).contains(&l.len()) || !(1..=2).contains(&r.len()) {
            bail!(
                "go.mod line {}: expected `old [version] => new [version]`, found {raw:?}",
                n + 1
            );
        }
        out.push(Replace {
            old: l[0].to_string(),
            old_version: l.get(1).map(|s| s.to_string()),
            new: r[0].to_string(),
            new_version: r.get(1).map(|s| s.to_string()),
        });
    }
    Ok(out)
}

/// The first line of `go_mod` starting with `word ` (e.g. `module`, `go`), trimmed.
fn directive<'a>(go_mod: &'a str, word: &str) -> Option<&'a str> {
    go_mod
        .lines()
        .map(str::trim)
        .find(|l| l.strip_prefix(word).is_some_and(|r| r.starts_with(' ')))
}

/// Renders the wrapper's `go.mod` before `go mod tidy`: `pinned`'s `module` and `go` lines,
/// `require <module> <version>`, and `upstream`'s replace directives carried over (a replace to
/// `./staging/src/<m>` becomes `<m> => <m> <staging>`; a replace to a module version is copied;
/// any other local directory is an error). `staging` is the staging modules' version
/// ([`super::versions::Release::staging`]), needed only when `upstream` has staging replaces.
///
/// # Errors
/// `pinned` lacks a `module` or `go` line; `upstream` has a local replace that is not a staging
/// module, or staging replaces and no `staging` version.
pub fn render_go_mod(
    pinned: &str,
    module: &str,
    version: &str,
    upstream: &str,
    staging: Option<&str>,
) -> anyhow::Result<String> {
    let module_line =
        directive(pinned, "module").context("the pinned wrapper's go.mod has no module line")?;
    let go_line = directive(pinned, "go").context("the pinned wrapper's go.mod has no go line")?;
    let mut lines = Vec::new();
    for r in replaces(upstream)? {
        let old = match &r.old_version {
            Some(v) => format!("{} {v}", r.old),
            None => r.old.clone(),
        };
        if r.new.starts_with("./") || r.new.starts_with("../") {
            let expected = format!("./staging/src/{}", r.old);
            if r.new != expected {
                bail!(
                    "{module} {version}: replace {} => {} points at a directory that is not a staging module; no module version to use",
                    r.old,
                    r.new
                );
            }
            let staging = staging.with_context(|| {
                format!("{module} {version}: staging replaces but no staging version")
            })?;
            lines.push(format!("\t{old} => {} {staging}", r.old));
        } else {
            let new_version = r.new_version.as_deref().with_context(|| {
                format!(
                    "{module} {version}: replace {} => {} has no version",
                    r.old, r.new
                )
            })?;
            lines.push(format!("\t{old} => {} {new_version}", r.new));
        }
    }
    let mut out = format!("{module_line}\n\n{go_line}\n\nrequire {module} {version}\n");
    match lines.len() {
        0 => {}
        1 => out.push_str(&format!("\nreplace {}\n", lines[0].trim_start())),
        _ => out.push_str(&format!("\nreplace (\n{}\n)\n", lines.join("\n"))),
    }
    Ok(out)
}

/// The wrapper module directory of `family` at `version`: the committed one
/// (`xtask/upstream/<family>/`) when `version` is `None`, else one made from it in the cache
/// (see the module docs) unless there already.
///
/// # Errors
/// The module or its `go.mod` cannot be downloaded, a replace cannot be carried over, `go mod
/// tidy` fails (its output quoted), or I/O.
pub fn ensure_wrapper(
    cache: &Cache,
    env: &GoEnv,
    family: &Family,
    version: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let pinned_dir = super::wrappers_dir().join(family.name);
    let Some(version) = version else {
        return Ok(pinned_dir);
    };
    let pinned_mod = fs::read_to_string(pinned_dir.join("go.mod"))
        .with_context(|| format!("reading {}", pinned_dir.join("go.mod").display()))?;
    let tools = fs::read(pinned_dir.join("tools.go"))
        .with_context(|| format!("reading {}", pinned_dir.join("tools.go").display()))?;
    let mut key = CacheKey::new("wrapper/v1");
    key.field("family", family.name.as_bytes())
        .field("module", family.module.as_bytes())
        .field("version", version.as_bytes())
        .field("pinned go.mod", pinned_mod.as_bytes())
        .field("tools.go", &tools)
        .field("go version", env.go_version.as_bytes());
    let dest = cache.entry(&format!("wrapper-{}-{version}", family.name), &key);
    if dest.join("go.sum").is_file() {
        super::progress::cached(&format!("{} {version} wrapper", family.name), &dest);
        return Ok(dest);
    }
    let step = crate::status::Step::start(format!(
        "Making the {} wrapper module for {} {version} (go mod tidy through the module proxy and checksum DB)",
        family.name, family.module
    ));
    let upstream_mod = upstream_go_mod(env, &pinned_dir, family.module, version)?;
    let staging = if family.module == super::components::KUBERNETES.module {
        Some(super::versions::Release::parse(version)?.staging())
    } else {
        None
    };
    let text = render_go_mod(
        &pinned_mod,
        family.module,
        version,
        &upstream_mod,
        staging.as_deref(),
    )?;
    let tmp = cache.staging(&format!(
        "wrapper-{}-{version}-{}",
        family.name,
        key.short()
    ))?;
    super::cache::write_file(&tmp.path().join("go.mod"), text.as_bytes())?;
    super::cache::write_file(&tmp.path().join("tools.go"), &tools)?;
    let mut cmd = env.go(tmp.path(), "0");
    for v in SUMDB_BYPASS_ENV {
        cmd.env_remove(v);
    }
    cmd.env("GOSUMDB", "sum.golang.org").args(["mod", "tidy"]);
    command::run(cmd)
        .with_context(|| format!("go mod tidy of the {} wrapper for {version}", family.name))?;
    tmp.commit(&dest)?;
    step.ok();
    Ok(dest)
}

/// The `go.mod` of `module@version` as the module proxy serves it (`go mod download -json`,
/// run in `dir`, a module whose settings are used).
fn upstream_go_mod(env: &GoEnv, dir: &Path, module: &str, version: &str) -> anyhow::Result<String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Info {
        #[serde(default)]
        go_mod: PathBuf,
        #[serde(default)]
        error: Option<String>,
    }
    let mut cmd = env.go(dir, "0");
    cmd.args(["mod", "download", "-json", &format!("{module}@{version}")]);
    let out = command::run_unchecked(cmd)?;
    let info: Info = serde_json::from_str(&out.stdout).with_context(|| {
        format!(
            "go mod download -json {module}@{version}: unreadable answer: {} {}",
            out.stdout.trim(),
            out.stderr.trim()
        )
    })?;
    if let Some(e) = info.error {
        bail!("go mod download {module}@{version}: {e}");
    }
    fs::read_to_string(&info.go_mod).with_context(|| {
        format!(
            "reading the go.mod of {module}@{version} ({})",
            info.go_mod.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PINNED_K8S: &str = "module kca-webhook-lab/upstream/kubernetes\n\ngo 1.26\n\nrequire k8s.io/kubernetes v1.35.8\n\nrequire (\n\tcel.dev/expr v0.24.0 // indirect\n)\n\nreplace (\n\tk8s.io/api => k8s.io/api v0.35.8\n)\n";

    /// The shape of `k8s.io/kubernetes`'s own go.mod (v1.36.3, abridged).
    const UPSTREAM_K8S: &str = "module k8s.io/kubernetes\n\ngo 1.26.0\n\ngodebug default=go1.26\n\nrequire (\n\tk8s.io/api v0.0.0\n)\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/cri-streaming => ./staging/src/k8s.io/cri-streaming // new in 1.36\n)\n";

    #[test]
    fn kubernetes_staging_replaces_become_module_versions() {
        let got = render_go_mod(
            PINNED_K8S,
            "k8s.io/kubernetes",
            "v1.36.3",
            UPSTREAM_K8S,
            Some("v0.36.3"),
        )
        .unwrap();
        assert_eq!(
            got,
            "module kca-webhook-lab/upstream/kubernetes\n\ngo 1.26\n\nrequire k8s.io/kubernetes v1.36.3\n\nreplace (\n\tk8s.io/api => k8s.io/api v0.36.3\n\tk8s.io/cri-streaming => k8s.io/cri-streaming v0.36.3\n)\n"
        );
    }

    #[test]
    fn module_replaces_are_copied_with_their_versions() {
        let pinned = "module kca-webhook-lab/upstream/kyverno\n\ngo 1.26.6\n\nrequire github.com/kyverno/kyverno v1.19.1\n";
        let upstream = "module github.com/kyverno/kyverno\n\ngo 1.26\n\ntoolchain go1.26.4\n\nreplace k8s.io/pod-security-admission v0.34.1 => github.com/kyverno/pod-security-admission v0.0.0-20251031094455-46f20778634f\n";
        let got = render_go_mod(
            pinned,
            "github.com/kyverno/kyverno",
            "v1.18.2",
            upstream,
            None,
        )
        .unwrap();
        assert_eq!(
            got,
            "module kca-webhook-lab/upstream/kyverno\n\ngo 1.26.6\n\nrequire github.com/kyverno/kyverno v1.18.2\n\nreplace k8s.io/pod-security-admission v0.34.1 => github.com/kyverno/pod-security-admission v0.0.0-20251031094455-46f20778634f\n"
        );
    }

    #[test]
    fn the_committed_pinned_wrappers_have_the_replaces_the_rule_makes() {
        // The committed kubernetes wrapper replaces exactly the staging modules, each at v0.35.8;
        // the kyverno wrapper carries Kyverno's one module replace.
        let k8s =
            fs::read_to_string(super::super::wrappers_dir().join("kubernetes/go.mod")).unwrap();
        let r = replaces(&k8s).unwrap();
        assert!(r.len() >= 29, "{r:?}");
        for x in &r {
            assert_eq!(x.new, x.old, "{x:?}");
            assert_eq!(x.new_version.as_deref(), Some("v0.35.8"), "{x:?}");
            assert!(x.old.starts_with("k8s.io/"), "{x:?}");
        }
        let ky = fs::read_to_string(super::super::wrappers_dir().join("kyverno/go.mod")).unwrap();
        let r = replaces(&ky).unwrap();
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].old, "k8s.io/pod-security-admission");
        assert_eq!(r[0].new, "github.com/kyverno/pod-security-admission");
    }

    #[test]
    fn a_local_replace_that_is_not_staging_is_refused() {
        let upstream = "module x\n\nreplace example.com/a => ../a\n";
        let e = render_go_mod(
            PINNED_K8S,
            "k8s.io/kubernetes",
            "v1.36.3",
            upstream,
            Some("v0.36.3"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("example.com/a") && e.contains("not a staging module"),
            "{e}"
        );
        let e = replaces("replace (\n\ta b c d e\n)\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }
}
