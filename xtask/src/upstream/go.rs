//! Running the Go toolchain: the fixed build environment, module look-ups,
//! and building one family into its cache entry.

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;
use serde::Deserialize;

use super::cache::{BuiltFamily, Cache, CacheKey};
use super::components::{Family, Program};
use super::prereq::Tools;
use super::progress::{self, Task};
use crate::command::{self, pretty as pretty_command};
use xshell::cmd;

/// `GOFLAGS` of every build: paths trimmed so binaries do not depend on
/// where the module cache is.
pub const GOFLAGS: &str = "-trimpath";

/// Variables removed from the environment of every `go` command, because
/// they would change what is built without being part of the cache key.
const SCRUBBED_ENV: &[&str] = &[
    "GOOS",
    "GOARCH",
    "GOAMD64",
    "GOARM",
    "GOEXPERIMENT",
    "GOFLAGS",
    "GOWORK",
    "GOTOOLCHAIN",
    "CGO_ENABLED",
    "CC",
    "CXX",
    "CGO_CFLAGS",
    "CGO_CPPFLAGS",
    "CGO_CXXFLAGS",
    "CGO_LDFLAGS",
    "PKG_CONFIG_PATH",
    "GOROOT",
];

/// How many of Go's last output lines a failed build shows.
const ERROR_TAIL: usize = 40;

/// The toolchain facts that enter cache keys.
#[derive(Debug, Clone)]
pub struct GoEnv {
    /// The programs found by the prerequisite check.
    pub tools: Tools,
    /// `go version` output, e.g. `go version go1.26.8 linux/amd64`.
    pub go_version: String,
    /// `gcc --version` first line (cgo builds and pause depend on it).
    pub cc_version: String,
    /// `pkg-config --modversion libseccomp` (runc's seccomp support).
    pub seccomp_version: String,
}

impl GoEnv {
    /// Asks the tools for their versions.
    ///
    /// # Errors
    /// A tool cannot be run.
    pub fn detect(tools: &Tools) -> anyhow::Result<GoEnv> {
        let sh = command::shell()?;
        let (go, gcc, pkg_config) = (&tools.go, &tools.gcc, &tools.pkg_config);
        let go_version = first_line(cmd!(sh, "{go} version").env("GOTOOLCHAIN", "local"))?;
        let cc_version = first_line(cmd!(sh, "{gcc} --version"))?;
        let seccomp_version = first_line(cmd!(sh, "{pkg_config} --modversion libseccomp"))?;
        Ok(GoEnv {
            tools: tools.clone(),
            go_version,
            cc_version,
            seccomp_version,
        })
    }

    /// A `go` command in `dir` with the fixed environment: `GOTOOLCHAIN=local`,
    /// `GOFLAGS=-trimpath`, `GOWORK=off`, the given `CGO_ENABLED`, and the
    /// variables in `SCRUBBED_ENV` otherwise removed.
    pub fn go(&self, dir: &Path, cgo_enabled: &str) -> Command {
        let mut cmd = Command::new(&self.tools.go);
        cmd.current_dir(dir);
        for v in SCRUBBED_ENV {
            cmd.env_remove(v);
        }
        cmd.env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", GOFLAGS)
            .env("GOWORK", "off")
            .env("CGO_ENABLED", cgo_enabled)
            .stdin(Stdio::null());
        cmd
    }
}

/// The first line of what `cmd` prints ([`command::run`]).
fn first_line(cmd: impl Into<Command>) -> anyhow::Result<String> {
    let out = command::run(cmd)?;
    Ok(out.stdout.lines().next().unwrap_or("").trim().to_string())
}

/// A module as `go mod download -json` describes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ModuleInfo {
    /// Module path.
    pub path: String,
    /// Selected version.
    pub version: String,
    /// Its directory in Go's (read-only) module cache.
    #[serde(default)]
    pub dir: PathBuf,
    /// An error Go reported for this module.
    #[serde(default)]
    pub error: Option<String>,
}

/// Where the selected versions of `modules` are, as seen from the wrapper
/// module in `wrapper`, downloading through the Go module proxy if the module
/// cache lacks them (`go mod download -json MODULE…`).
///
/// # Errors
/// `go` fails or reports an error for a module.
pub fn module_dirs(
    env: &GoEnv,
    wrapper: &Path,
    modules: &[&str],
) -> anyhow::Result<Vec<ModuleInfo>> {
    let mut cmd = env.go(wrapper, "0");
    cmd.args(["mod", "download", "-json"]).args(modules);
    let shown = pretty_command(&cmd);
    // Unchecked: on failure go still prints each module's JSON, whose `Error` says which failed.
    let out = command::run_unchecked(cmd)?;
    let cmd = shown;
    let infos: Vec<ModuleInfo> = serde_json::Deserializer::from_str(&out.stdout)
        .into_iter::<ModuleInfo>()
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading the JSON of {cmd}"))?;
    if !out.status.success() || infos.iter().any(|i| i.error.is_some()) {
        let errs: Vec<String> = infos
            .iter()
            .filter_map(|i| i.error.as_ref().map(|e| format!("{}: {e}", i.path)))
            .collect();
        anyhow::bail!(
            "{cmd} failed ({}): {} {}",
            out.status,
            errs.join("; "),
            out.stderr.trim()
        );
    }
    for m in modules {
        if !infos
            .iter()
            .any(|i| i.path == *m && !i.dir.as_os_str().is_empty())
        {
            anyhow::bail!("{cmd} did not report a directory for {m}");
        }
    }
    Ok(infos)
}

/// The selected versions of `modules` in the wrapper's build list
/// (`go list -m -f '{{.Path}} {{.Version}}' MODULE…`).
///
/// # Errors
/// `go list` fails or prints something unexpected.
pub fn module_versions(
    env: &GoEnv,
    wrapper: &Path,
    modules: &[&str],
) -> anyhow::Result<BTreeMap<String, String>> {
    if modules.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut cmd = env.go(wrapper, "0");
    cmd.args(["list", "-m", "-f", "{{.Path}} {{.Version}}"])
        .args(modules);
    let out = command::run(cmd)?;
    let mut map = BTreeMap::new();
    for line in out.stdout.lines() {
        let mut parts = line.split_whitespace();
        if let (Some(p), Some(v)) = (parts.next(), parts.next()) {
            map.insert(p.to_string(), v.to_string());
        }
    }
    Ok(map)
}

/// Everything a family's build depends on, ready to hash and to run.
#[derive(Debug, Clone)]
pub struct FamilyPlan {
    /// The wrapper module directory.
    pub wrapper: PathBuf,
    /// The rendered `-ldflags`.
    pub ldflags: String,
    /// Module versions the stamps read.
    pub versions: BTreeMap<String, String>,
}

/// Computes a family's cache key. Inputs: the wrapper's `go.mod`, `go.sum`
/// and `tools.go`, every program's name and package, the tags, the rendered
/// `-ldflags`, `CGO_ENABLED`, `GOFLAGS`, `go version`, and for cgo families
/// the C compiler's and libseccomp's versions.
///
/// # Errors
/// A wrapper file cannot be read.
pub fn family_key(env: &GoEnv, family: &Family, plan: &FamilyPlan) -> anyhow::Result<CacheKey> {
    let mut key = CacheKey::new("go-family/v1");
    key.field("family", family.name.as_bytes());
    for f in ["go.mod", "go.sum", "tools.go"] {
        key.file(f, &plan.wrapper.join(f))?;
    }
    for p in family.programs {
        // A test program's line says so; a `go build` program's line is as it always was, so
        // the existing families' keys do not change.
        let test = if p.test { " (go test -c)" } else { "" };
        key.field(
            "program",
            format!("{} {}{test}", p.name, p.package).as_bytes(),
        );
    }
    key.field("tags", family.tags_arg().as_bytes())
        .field("ldflags", plan.ldflags.as_bytes())
        .field("CGO_ENABLED", family.cgo_enabled().as_bytes())
        .field("GOFLAGS", GOFLAGS.as_bytes())
        .field("go version", env.go_version.as_bytes());
    if family.cgo {
        key.field("cc", env.cc_version.as_bytes())
            .field("libseccomp", env.seccomp_version.as_bytes());
    }
    Ok(key)
}

/// Makes sure the family's binaries are in the cache, building them (one
/// `go build` per program, with a progress line each) if not, from the wrapper
/// module in `wrapper` (the committed `xtask/upstream/<family>/` or one made by
/// [`super::wrapper::ensure_wrapper`]). `on_build` is called once, just before the first build,
/// only when the cache lacks the family.
///
/// # Errors
/// A failed `go build` names the program, the full command, the log file and
/// the last lines of Go's output; the staging directory is removed.
pub fn ensure_family(
    cache: &Cache,
    env: &GoEnv,
    family: &'static Family,
    wrapper: &Path,
    on_build: impl FnOnce(),
) -> anyhow::Result<BuiltFamily> {
    let wrapper = wrapper.to_path_buf();
    let mut modules = family.stamp_modules();
    if !modules.contains(&family.module) {
        modules.push(family.module);
    }
    let versions = module_versions(env, &wrapper, &modules)
        .with_context(|| format!("resolving the versions {} stamps", family.name))?;
    let ldflags = family.ldflags(&versions)?;
    let plan = FamilyPlan {
        wrapper,
        ldflags,
        versions,
    };
    let key = family_key(env, family, &plan)?;
    let dest = cache.entry(family.name, &key);
    if dest.is_dir() && family.programs.iter().all(|p| dest.join(p.name).is_file()) {
        progress::cached(family.name, &dest);
        return Ok(BuiltFamily {
            family,
            dir: dest,
            key: key.hex(),
        });
    }
    if dest.exists() {
        anyhow::bail!(
            "cache entry {} exists but lacks some of {}'s programs; delete it and run again",
            dest.display(),
            family.name
        );
    }
    on_build();
    let staging = cache.staging(&format!("{}-{}", family.name, key.short()))?;
    let logs = cache.root().join("logs");
    fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let mut records = Vec::new();
    for prog in family.programs {
        records.push(build_program(
            env,
            family,
            &plan,
            prog,
            staging.path(),
            &logs,
        )?);
    }
    let record = serde_json::json!({
        "family": family.name,
        "module": family.module,
        "versions": plan.versions,
        "go_version": env.go_version,
        "cgo_enabled": family.cgo_enabled(),
        "goflags": GOFLAGS,
        "tags": family.tags_arg(),
        "ldflags": plan.ldflags,
        "key": key.hex(),
        "programs": records,
    });
    let text = serde_json::to_vec_pretty(&record).context("rendering build.json")?;
    super::cache::write_file(&staging.path().join("build.json"), &text)?;
    staging.commit(&dest)?;
    Ok(BuiltFamily {
        family,
        dir: dest,
        key: key.hex(),
    })
}

/// Builds one program of `family` into `dir` (its log under `logs`) and returns its record for
/// `build.json`. A `go build` program is one `go build -v` (a progress line per package). A test
/// program ([`Program::test`]) is first its packages, `go build -v` of everything `go list -deps
/// -test` names (the progress line), then `go test -c` (the test variants and the link).
fn build_program(
    env: &GoEnv,
    family: &Family,
    plan: &FamilyPlan,
    prog: &Program,
    dir: &Path,
    logs: &Path,
) -> anyhow::Result<serde_json::Value> {
    let out = dir.join(prog.name);
    let detail = match plan.versions.get(family.module) {
        Some(v) => format!("{} {v}", family.module),
        None => family.module.to_string(),
    };
    let go = |verb: &[&str]| {
        let mut cmd = env.go(&plan.wrapper, family.cgo_enabled());
        cmd.args(verb);
        if !family.tags.is_empty() {
            cmd.args(["-tags", &family.tags_arg()]);
        }
        cmd.args(["-ldflags", &plan.ldflags]);
        cmd
    };
    let mut commands = Vec::new();
    let mut seconds = 0.0;
    if prog.test {
        let deps = test_deps(env, &plan.wrapper, family, prog.package)?;
        let mut cmd = go(&["build", "-v"]);
        cmd.args(&deps);
        let log = logs.join(format!("{}.packages.log", prog.name));
        let name = format!("{} (packages)", prog.name);
        seconds += run_build(&cmd, &name, &detail, &log, deps.len())?;
        commands.push(format!(
            "go build -v … ({} packages of go list -deps -test)",
            deps.len()
        ));
        let mut cmd = go(&["test", "-c"]);
        cmd.arg("-o").arg(&out).arg(prog.package);
        let log = logs.join(format!("{}.log", prog.name));
        seconds += run_build(&cmd, prog.name, &detail, &log, 0)?;
        commands.push(pretty_command(&cmd));
    } else {
        let mut cmd = go(&["build", "-v"]);
        cmd.arg("-o").arg(&out).arg(prog.package);
        let log = logs.join(format!("{}.log", prog.name));
        let total = package_count(env, &plan.wrapper, family, prog.package);
        seconds += run_build(&cmd, prog.name, &detail, &log, total)?;
        commands.push(pretty_command(&cmd));
    }
    let size = fs::metadata(&out)
        .with_context(|| format!("go build of {} wrote no {}", prog.name, out.display()))?
        .len();
    Ok(serde_json::json!({
        "program": prog.name,
        "package": prog.package,
        "command": commands.join(" && "),
        "seconds": (seconds * 10.0).round() / 10.0,
        "bytes": size,
    }))
}

/// The packages a test binary of `package` is made of, without its test variants (`go list -deps
/// -test`: the lines naming a plain import path; `p [p.test]` and `p.test` are left to `go test
/// -c`).
///
/// # Errors
/// `go list` fails (its command and output).
fn test_deps(
    env: &GoEnv,
    wrapper: &Path,
    family: &Family,
    package: &str,
) -> anyhow::Result<Vec<String>> {
    let mut cmd = env.go(wrapper, family.cgo_enabled());
    cmd.args(["list", "-deps", "-test"]);
    if !family.tags.is_empty() {
        cmd.args(["-tags", &family.tags_arg()]);
    }
    cmd.arg(package);
    let out =
        command::run(cmd).with_context(|| format!("listing the packages of {package}'s tests"))?;
    Ok(plain_packages(&out.stdout))
}

/// The lines of `go list -deps -test` that name a package as it is built for any importer: not a
/// test variant (`p [q.test]`), not the generated test main (`p.test`).
fn plain_packages(list: &str) -> Vec<String> {
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.contains(' ') && !l.ends_with(".test"))
        .map(str::to_owned)
        .collect()
}

/// Runs one `go build -v`, showing its progress, logging all output to `log`.
/// Returns the elapsed seconds.
fn run_build(
    cmd: &Command,
    name: &str,
    detail: &str,
    log: &Path,
    total: usize,
) -> anyhow::Result<f64> {
    let mut cmd_run = clone_command(cmd);
    let mut log_file =
        fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    writeln!(log_file, "$ {}", pretty_command(cmd))
        .with_context(|| format!("writing {}", log.display()))?;
    let stdout_log = log_file
        .try_clone()
        .with_context(|| format!("opening {}", log.display()))?;
    cmd_run
        .stdout(Stdio::from(stdout_log))
        .stderr(Stdio::piped());
    let task = Task::start(name, detail);
    task.set_total(total);
    let mut child = cmd_run
        .spawn()
        .with_context(|| format!("starting {}", pretty_command(cmd)))?;
    let mut tail: VecDeque<String> = VecDeque::with_capacity(ERROR_TAIL + 1);
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines() {
            let line = line.with_context(|| format!("reading the output of go build {name}"))?;
            let _ = writeln!(log_file, "{line}");
            if is_package_line(&line) {
                task.compiled(&line);
            } else {
                if tail.len() == ERROR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for go build of {name}"))?;
    let seconds = task.elapsed_secs();
    if !status.success() {
        drop(task);
        let tail: Vec<String> = tail.into_iter().collect();
        anyhow::bail!(
            "building {name} failed ({status})\n  command: {}\n  log: {}\n  last lines of go's output:\n    {}",
            pretty_command(cmd),
            log.display(),
            tail.join("\n    ")
        );
    }
    task.ok("");
    Ok(seconds)
}

/// Downloads, through the Go module proxy into Go's module cache, the modules the programs of
/// each of `families` import, one family after another (`go list -e -deps` of their packages in
/// their committed wrapper, output discarded), until `stop` is set. Run beside the builds on a
/// cold machine: the download before each family's first `go build` (12 s for Kubernetes, 49 s
/// for Kyverno, about 87 s in all on 2026-12-04, docs/bench.md "A cold machine") then happens
/// while the previous family compiles. Errors are ignored here: the build that follows reports
/// them. Go's module cache takes concurrent downloads (it locks per module).
pub fn prefetch_modules(env: &GoEnv, families: &[&Family], stop: &std::sync::atomic::AtomicBool) {
    for family in families {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let wrapper = super::wrappers_dir().join(family.name);
        let mut cmd = env.go(&wrapper, family.cgo_enabled());
        cmd.args(["list", "-e", "-deps"]);
        if !family.tags.is_empty() {
            cmd.args(["-tags", &family.tags_arg()]);
        }
        cmd.args(
            family
                .programs
                .iter()
                .filter(|p| !p.test)
                .map(|p| p.package),
        );
        let _ = command::run_unchecked(cmd);
    }
}

/// The number of packages in `package`'s build graph (`go list -deps`, with the family's tags and
/// `CGO_ENABLED`), for the progress line's ETA; 0 when `go list` fails (the build then shows no
/// ETA and reports its own error).
fn package_count(env: &GoEnv, wrapper: &Path, family: &Family, package: &str) -> usize {
    let mut cmd = env.go(wrapper, family.cgo_enabled());
    cmd.args(["list", "-deps"]);
    if !family.tags.is_empty() {
        cmd.args(["-tags", &family.tags_arg()]);
    }
    cmd.arg(package);
    match command::run(cmd) {
        Ok(out) => out.stdout.lines().filter(|l| !l.trim().is_empty()).count(),
        Err(_) => 0,
    }
}

/// `go build -v` prints each package it compiles as a bare import path; any
/// other line (errors, `go: downloading …`, `# pkg` headers) is kept for the
/// error message.
fn is_package_line(line: &str) -> bool {
    !line.is_empty()
        && !line.starts_with('#')
        && !line.contains(char::is_whitespace)
        && !line.contains(':')
}

fn clone_command(cmd: &Command) -> Command {
    let mut c = Command::new(cmd.get_program());
    c.args(cmd.get_args());
    if let Some(d) = cmd.get_current_dir() {
        c.current_dir(d);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.stdin(Stdio::null());
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_binarys_packages_leave_out_the_test_variants() {
        let list = "internal/abi\nk8s.io/kubernetes/test/e2e/framework\nk8s.io/kubernetes/test/e2e [k8s.io/kubernetes/test/e2e.test]\nk8s.io/kubernetes/test/e2e.test\n\n";
        assert_eq!(
            plain_packages(list),
            ["internal/abi", "k8s.io/kubernetes/test/e2e/framework"]
        );
    }

    #[test]
    fn package_lines_are_told_from_errors() {
        assert!(is_package_line("k8s.io/apiserver/pkg/server"));
        assert!(is_package_line("internal/abi"));
        assert!(!is_package_line("# k8s.io/kubernetes/cmd/kube-apiserver"));
        assert!(!is_package_line("go: downloading k8s.io/api v0.35.8"));
        assert!(!is_package_line("./main.go:12:2: undefined: foo"));
        assert!(!is_package_line(""));
    }

    #[test]
    fn a_failed_build_names_program_command_log_and_go_error() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("kube-apiserver.log");
        let mut cmd = Command::new("sh");
        cmd.current_dir(tmp.path()).env("CGO_ENABLED", "0").args([
            "-c",
            "echo k8s.io/api/core/v1 >&2; echo '# k8s.io/kubernetes/cmd/kube-apiserver' >&2; \
             echo './main.go:12:2: undefined: foo' >&2; exit 1",
        ]);
        let err = run_build(&cmd, "kube-apiserver", "k8s.io/kubernetes v1.35.8", &log, 0)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("building kube-apiserver failed (exit status: 1)"),
            "{err}"
        );
        assert!(err.contains("CGO_ENABLED=0 sh -c"), "{err}");
        assert!(err.contains(&log.display().to_string()), "{err}");
        assert!(err.contains("./main.go:12:2: undefined: foo"), "{err}");
        let tail = err
            .split("last lines of go's output:")
            .nth(1)
            .unwrap_or_default();
        assert!(tail.contains("undefined: foo"), "{err}");
        assert!(
            !tail.contains("k8s.io/api/core/v1"),
            "package lines stay out of the tail: {err}"
        );
        let logged = fs::read_to_string(&log).unwrap();
        assert!(
            logged.contains("k8s.io/api/core/v1") && logged.contains("undefined: foo"),
            "{logged}"
        );
    }

    #[test]
    fn a_successful_build_returns_its_time_and_logs_its_output() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("x.log");
        let mut cmd = Command::new("sh");
        // The build lasts at least 0.3 s, so the time it returns cannot be below that (a lower
        // bound only: no upper bound is asserted on a shared machine).
        cmd.args(["-c", "echo a/b >&2; sleep 0.3; echo c/d >&2; echo out"]);
        let secs = run_build(&cmd, "x", "y", &log, 2).unwrap();
        assert!(secs >= 0.3, "a 0.3 s build reported {secs} s");
        let logged = fs::read_to_string(&log).unwrap();
        for line in ["a/b", "c/d", "out"] {
            assert!(
                logged.lines().any(|l| l == line),
                "{line} missing from {logged}"
            );
        }
    }
}
