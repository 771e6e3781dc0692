//! `cargo xtask dist [--out DIR] [--no-check] [--repository OWNER/NAME]`: the student tool as a
//! release: `kca-webhook-lab` built optimised (profile `dist`: release, symbols stripped) and
//! statically linked, and a check that it runs where there is no C library at all. Beside the
//! binary it writes (module [`crate::packaging`]):
//!
//! - `completions/` (bash, zsh, fish) and `man/man1/*.1`, made by the built binary itself
//!   (`completion SHELL`, `man-pages DIR`: clap_complete and clap_mangen over its own parser), and
//!   `xtask/completions/`, `xtask/man/man1/` for `cargo xtask` (the same generators over
//!   xtask's parser, handed in by `main`);
//! - `kca-webhook-lab-<version>-<arch>-linux.tar.gz`: the binary, `LICENSE`, the completions and
//!   man pages (krew's checklist: the licence inside the archive);
//! - `kca-webhook-lab-<version>-<arch>-linux.cdx.json`: the CycloneDX SBOM (cargo-cyclonedx);
//! - `kca-webhook-lab.yaml`: the krew plugin manifest of the archives, when the repository is
//!   known (`--repository`, `GITHUB_REPOSITORY` in the release workflow; `--krew-from DIR`
//!   writes it alone from a merged `SHA256SUMS`);
//! - `SHA256SUMS` of the binaries, archives and SBOMs.
//!
//! # How it is linked
//!
//! The toolchain here has one Rust standard library, `x86_64-unknown-linux-gnu` (no musl std:
//! rustup cannot download one, and Debian packages none for musl), so the binary links glibc
//! statically: `-C target-feature=+crt-static` (rustc then makes a static PIE; `file` says
//! `static-pie linked`, with no program interpreter and no `NEEDED` entry). The one part of glibc
//! that a static binary may still load at run time is NSS (name lookups), through `dlopen` of
//! `libnss_*.so` modules. Since glibc 2.34 the `files` and `dns` services are built into libc
//! itself (glibc 2.34 NEWS), so the kube client's `getaddrinfo` for the kubeconfig's server name
//! reads `/etc/hosts` and `/etc/resolv.conf` without loading any module; an IP address in the
//! kubeconfig (k3s writes `https://127.0.0.1:6443`) never reaches NSS at all. The check below
//! proves the first: in a root filesystem holding only the binary and `/etc/hosts`, the tool
//! reaches a listener on `https://localhost:PORT`. Only a `hosts:` line in `/etc/nsswitch.conf`
//! naming another module (`mdns4_minimal`, `resolve`, `myhostname`) placed *before* the service
//! that answers would make glibc try to load that module; a module absent is skipped.
//!
//! Other architectures: a target is built only when its Rust standard library is installed in
//! the active toolchain (`rustc --print sysroot`/`lib/rustlib/<target>/lib`); the release workflow
//! builds each architecture on a runner of that architecture instead of cross-compiling.
//!
//! # What the check runs (unless `--no-check`)
//!
//! In a fresh directory holding only the binary, a recorded work dir
//! (`lab/tests/fixtures/recorded/b-20261130T210502Z`), `/dev/random` and `/dev/urandom`
//! (getrandom falls back to them in a static binary: `docs/dist.md`) and, for the name lookup,
//! `/etc/hosts` and a CA certificate:
//! `chroot DIR /kca-webhook-lab --version` (the commit and the pinned versions must show),
//! `chroot DIR /kca-webhook-lab --lang en --workdir /wd grade all` (every act passes), and
//! `inspect` against a kubeconfig naming `localhost` (the listener must see the connection; with
//! `/etc/hosts` removed it must not: the negative control). The check needs root (`chroot`,
//! `mknod`).

use std::ffi::OsStr;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use sha2::{Digest, Sha256};

use crate::command;
use crate::flags::DistCmd;

/// The recorded work dir the check grades inside the root filesystem.
pub const RECORDED_WORKDIR: &str = "lab/tests/fixtures/recorded/b-20261130T210502Z";

/// The cargo profile of a release (workspace `Cargo.toml`: release, symbols stripped).
pub const PROFILE: &str = "dist";

/// How long one run of the binary inside the root filesystem may take.
const RUN_BOUND: Duration = Duration::from_secs(60);

/// One built binary.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The target triple.
    pub target: String,
    /// Its path under the output directory.
    pub path: PathBuf,
    /// `file -b`'s description of it.
    pub file: String,
    /// Its size in bytes.
    pub size: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
}

impl DistCmd {
    /// Builds, links statically, checksums and (unless `--no-check`) checks the binary.
    ///
    /// # Errors
    /// The build, a static-linking check or a run in the root filesystem failed (each says what).
    pub fn run(self, xtask_cli: clap::Command) -> Result<()> {
        let root = workspace_root();
        if let (Some(dir), Some(repo)) = (&self.krew_from, &self.repository) {
            return write_krew_manifest(&root.join(dir), repo, env!("CARGO_PKG_VERSION"));
        }
        crate::upstream::debian::ensure(crate::upstream::debian::DIST, "cargo xtask dist", false)
            .map_err(anyhow::Error::msg)?;
        let out = root.join(&self.out);
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let host = host_target()?;
        let commit = commit(&root)?;
        let version = env!("CARGO_PKG_VERSION");
        println!("dist: kca-webhook-lab {version}, commit {commit}");
        let (targets, skipped) = buildable_targets(&host)?;
        for (t, why) in &skipped {
            println!("  not built: {t} ({why})");
        }
        let date = commit_date(&root)?;
        let mut artifacts = Vec::new();
        for target in &targets {
            let artifact = build(&root, &out, target, &commit, &date.0, version)?;
            println!(
                "  built {}: {} bytes, {}",
                artifact.path.display(),
                artifact.size,
                artifact.file
            );
            artifacts.push(artifact);
        }
        let host_binary = artifacts
            .iter()
            .find(|a| a.target == host)
            .map(|a| a.path.clone())
            .context("the host target was not built")?;
        let docs = shell_files(&host_binary, &out)?;
        xtask_shell_files(xtask_cli, &out.join("xtask"))?;
        let cyclonedx = crate::packaging::cyclonedx(&crate::packaging::tools_dir(
            &crate::upstream::default_cache_dir()?,
        ))?;
        let mut released = Vec::new();
        for a in &artifacts {
            released.push(archive(&root, &out, a, &docs, date.1)?);
            let sbom = out.join(format!("{}.cdx.json", artifact_name(version, &a.target)));
            crate::packaging::sbom(&root, &cyclonedx, &a.target, &sbom)?;
            println!(
                "  wrote {} (CycloneDX {})",
                sbom.display(),
                crate::packaging::CYCLONEDX_SPEC
            );
            released.push(sbom);
        }
        let sums = out.join("SHA256SUMS");
        write_sums(&sums, &artifacts, &released)?;
        println!("  wrote {}", sums.display());
        match &self.repository {
            Some(repo) => write_krew_manifest(&out, repo, version)?,
            None => println!("  krew manifest not written: no --repository (GITHUB_REPOSITORY)"),
        }
        if self.no_check {
            println!("  check skipped (--no-check)");
            return Ok(());
        }
        for a in artifacts.iter().filter(|a| a.target == host) {
            check_without_libc(&root, &a.path, &commit)?;
        }
        Ok(())
    }
}

/// The workspace root (this crate is `xtask/`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_path_buf()
}

/// The host's target triple (`rustc -vV`'s `host:` line).
fn host_target() -> Result<String> {
    let out = command::run(tool(rustc(), ["-vV"]))?;
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV printed no `host:` line")
}

/// `program ARGS` as an owned command (for [`command::run`]).
fn tool<I, A>(program: impl AsRef<OsStr>, args: I) -> Command
where
    I: IntoIterator<Item = A>,
    A: AsRef<OsStr>,
{
    let mut c = Command::new(program);
    c.args(args);
    c
}

/// Sets a command's working directory, returning it owned.
trait InDir {
    fn in_dir(self, dir: &Path) -> Command;
}

impl InDir for Command {
    fn in_dir(mut self, dir: &Path) -> Command {
        self.current_dir(dir);
        self
    }
}

fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned())
}

/// The commit being built: `git rev-parse HEAD`, with `-dirty` when the work tree has changes.
fn commit(root: &Path) -> Result<String> {
    let head = command::run(tool("git", ["rev-parse", "HEAD"]).in_dir(root))?;
    let status =
        command::run(tool("git", ["status", "--porcelain", "--untracked-files=no"]).in_dir(root))?;
    let dirty = if status.stdout.trim().is_empty() {
        ""
    } else {
        "-dirty"
    };
    Ok(format!("{}{dirty}", head.stdout.trim()))
}

/// A target not built, and why.
type NotBuilt = (String, String);

/// Linux targets to build: the host always; another `*-linux-gnu` target when its standard
/// library is installed in the active toolchain. Returns (targets, [(target, why not built)]);
/// aarch64 is always named, built or not.
fn buildable_targets(host: &str) -> Result<(Vec<String>, Vec<NotBuilt>)> {
    ensure!(
        host.ends_with("-unknown-linux-gnu"),
        "dist builds Linux binaries on a Linux host; this host is {host}"
    );
    let sysroot = command::run(tool(rustc(), ["--print", "sysroot"]))?;
    let rustlib = PathBuf::from(sysroot.stdout.trim()).join("lib/rustlib");
    let mut targets = vec![host.to_owned()];
    let mut skipped = Vec::new();
    for other in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        if other == host {
            continue;
        }
        if rustlib.join(other).join("lib").is_dir() {
            // Cross-linking would need a C cross toolchain and its static glibc too: the release
            // workflow builds each architecture on its own runner instead.
            skipped.push((
                other.to_owned(),
                "std installed, but dist does not cross-link; build on that architecture".into(),
            ));
        } else {
            skipped.push((
                other.to_owned(),
                format!(
                    "its Rust standard library is not in this toolchain ({} missing)",
                    rustlib.join(other).display()
                ),
            ));
        }
    }
    targets.dedup();
    Ok((targets, skipped))
}

/// The release file name of the binary for `target`: `kca-webhook-lab-<version>-<arch>-linux`.
pub fn artifact_name(version: &str, target: &str) -> String {
    let arch = target.split('-').next().unwrap_or(target);
    format!("kca-webhook-lab-{version}-{arch}-linux")
}

/// `cargo build --profile dist` of the student tool for `target`, the C runtime linked
/// statically, stamped with `commit` and `date`; copies it to `out` and checks it is static.
fn build(
    root: &Path,
    out: &Path,
    target: &str,
    commit: &str,
    date: &str,
    version: &str,
) -> Result<Artifact> {
    let flags_var = format!(
        "CARGO_TARGET_{}_RUSTFLAGS",
        target.to_uppercase().replace('-', "_")
    );
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cmd.current_dir(root)
        .args(["build", "--locked", "--profile", PROFILE, "-p", "lab"])
        .args(["--bin", "kca-webhook-lab", "--target", target])
        .env(&flags_var, "-C target-feature=+crt-static")
        .env("KCA_BUILD_COMMIT", commit)
        .env("KCA_BUILD_DATE", date);
    println!("  building for {target} (cargo's progress follows)");
    command::run_inherited(cmd)?;
    let built = root
        .join("target")
        .join(target)
        .join(PROFILE)
        .join("kca-webhook-lab");
    let path = out.join(artifact_name(version, target));
    std::fs::copy(&built, &path)
        .with_context(|| format!("copying {} to {}", built.display(), path.display()))?;
    let file = command::run(tool("file", [OsStr::new("-b"), path.as_os_str()]))?
        .stdout
        .trim()
        .to_owned();
    check_static(&path)?;
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Artifact {
        target: target.to_owned(),
        size: bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(&bytes)),
        path,
        file,
    })
}

/// The ELF file at `path` asks for no program interpreter and no shared library
/// (`readelf --program-headers`: no `INTERP`; `readelf --dynamic`: no `NEEDED`).
fn check_static(path: &Path) -> Result<()> {
    let headers = command::run(tool("readelf", [OsStr::new("-lW"), path.as_os_str()]))?.stdout;
    let dynamic = command::run(tool("readelf", [OsStr::new("-dW"), path.as_os_str()]))?.stdout;
    let problems = static_problems(&headers, &dynamic);
    ensure!(
        problems.is_empty(),
        "{} is not statically linked: {}",
        path.display(),
        problems.join("; ")
    );
    Ok(())
}

/// What in `readelf -lW` / `readelf -dW` output makes a binary dynamic: an `INTERP` program
/// header, a `(NEEDED)` dynamic entry. Empty when static.
pub fn static_problems(program_headers: &str, dynamic: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(l) = program_headers
        .lines()
        .find(|l| l.split_whitespace().next() == Some("INTERP"))
    {
        out.push(format!("program interpreter: {}", l.trim()));
    }
    for l in dynamic.lines().filter(|l| l.contains("(NEEDED)")) {
        out.push(format!("needs {}", l.trim()));
    }
    out
}

/// `SHA256SUMS` in `sha256sum`'s format (`<hex>  <file name>`) of the binaries and the other
/// released files (archives, SBOMs), so `sha256sum -c SHA256SUMS` verifies a download.
fn write_sums(path: &Path, artifacts: &[Artifact], released: &[PathBuf]) -> Result<()> {
    let mut text: String = artifacts
        .iter()
        .map(|a| {
            let name = a.path.file_name().unwrap_or_default().to_string_lossy();
            format!("{}  {name}\n", a.sha256)
        })
        .collect();
    for p in released {
        let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        text.push_str(&format!(
            "{}  {name}\n",
            hex::encode(Sha256::digest(&bytes))
        ));
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The commit's committer date: (RFC 3339 in UTC, seconds since the epoch), so that one commit
/// gives one build date and one archive.
fn commit_date(root: &Path) -> Result<(String, u64)> {
    let out = command::run(tool("git", ["show", "-s", "--format=%ct", "HEAD"]).in_dir(root))?;
    let secs: i64 = out
        .stdout
        .trim()
        .parse()
        .context("git show %ct is not a number")?;
    let date = chrono::DateTime::from_timestamp(secs, 0)
        .context("the commit's date is out of range")?
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    Ok((date, secs as u64))
}

/// The completion scripts and man pages, made by running the built `binary` (so they are its
/// parser's), written under `out/completions/` and `out/man/man1/`; returns them as archive
/// entries (`completions/…`, `man/man1/…`).
fn shell_files(binary: &Path, out: &Path) -> Result<Vec<crate::packaging::Entry>> {
    use lab::shell::Shell;
    let mut entries = Vec::new();
    let dir = out.join("completions");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (shell, arg) in Shell::ALL.iter().zip(["bash", "zsh", "fish"]) {
        let script = command::run(tool(binary, ["completion", arg]))?.stdout;
        let name = shell.file_name("kca-webhook-lab");
        std::fs::write(dir.join(&name), &script).with_context(|| format!("writing {name}"))?;
        entries.push(crate::packaging::Entry {
            path: format!("completions/{name}"),
            bytes: script.into_bytes(),
            mode: 0o644,
        });
    }
    let man = out.join("man/man1");
    let _ = std::fs::remove_dir_all(&man);
    command::run(tool(binary, [OsStr::new("man-pages"), man.as_os_str()]))?;
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&man)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    pages.sort();
    ensure!(
        !pages.is_empty(),
        "the binary wrote no man page into {}",
        man.display()
    );
    for p in &pages {
        entries.push(crate::packaging::Entry {
            path: format!(
                "man/man1/{}",
                p.file_name().unwrap_or_default().to_string_lossy()
            ),
            bytes: std::fs::read(p)?,
            mode: 0o644,
        });
    }
    println!(
        "  wrote {} completion scripts and {} man pages",
        Shell::ALL.len(),
        pages.len()
    );
    Ok(entries)
}

/// `cargo xtask`'s own completions and man pages from its parser `cli`, under `dir`
/// (`completions/`, `man/man1/`); not released, for maintainers.
///
/// # Errors
/// A directory or file under `dir` cannot be written.
pub fn xtask_shell_files(cli: clap::Command, dir: &Path) -> Result<()> {
    use lab::shell::Shell;
    let comp = dir.join("completions");
    std::fs::create_dir_all(&comp).with_context(|| format!("creating {}", comp.display()))?;
    for shell in Shell::ALL {
        let script = lab::shell::completion(cli.clone(), "cargo-xtask", shell);
        std::fs::write(comp.join(shell.file_name("cargo-xtask")), script)?;
    }
    let pages = lab::shell::man_pages(cli.name("cargo-xtask"), &dir.join("man/man1"))?;
    println!(
        "  wrote cargo xtask's completions and {} man pages into {}",
        pages.len(),
        dir.display()
    );
    Ok(())
}

/// The release archive of `a` in `out` (`<artifact>.tar.gz`): the binary, the repository's
/// `LICENSE` and the `docs` entries (completions, man pages), dated `mtime`; returns its path.
///
/// # Errors
/// A file cannot be read or the archive written.
pub fn archive(
    root: &Path,
    out: &Path,
    a: &Artifact,
    docs: &[crate::packaging::Entry],
    mtime: u64,
) -> Result<PathBuf> {
    let name = a
        .path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let path = out.join(format!("{name}.tar.gz"));
    let mut entries = vec![
        crate::packaging::Entry {
            path: "kca-webhook-lab".to_owned(),
            bytes: std::fs::read(&a.path)?,
            mode: 0o755,
        },
        crate::packaging::Entry {
            path: "LICENSE".to_owned(),
            bytes: std::fs::read(root.join("LICENSE")).context("reading LICENSE")?,
            mode: 0o644,
        },
    ];
    entries.extend(docs.iter().cloned());
    crate::packaging::write_archive(&path, &entries, mtime)?;
    println!("  wrote {} ({} files)", path.display(), entries.len());
    Ok(path)
}

/// Writes `dir/kca-webhook-lab.yaml`, the krew manifest of every `*-linux.tar.gz` that
/// `dir/SHA256SUMS` lists, checked by krew's rules first ([`crate::packaging::krew_problems`]).
///
/// # Errors
/// No archive listed, an unknown architecture, or a rule broken.
pub fn write_krew_manifest(dir: &Path, repository: &str, version: &str) -> Result<()> {
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS"))
        .with_context(|| format!("reading {}", dir.join("SHA256SUMS").display()))?;
    let prefix = format!("kca-webhook-lab-{version}-");
    let archives: Vec<(String, String, String)> = sums
        .lines()
        .filter_map(|l| l.split_once("  "))
        .filter_map(|(sha, file)| {
            let arch = file.strip_prefix(&prefix)?.strip_suffix("-linux.tar.gz")?;
            Some((arch.to_owned(), file.to_owned(), sha.to_owned()))
        })
        .collect();
    ensure!(
        !archives.is_empty(),
        "{} lists no {prefix}<arch>-linux.tar.gz",
        dir.join("SHA256SUMS").display()
    );
    let manifest = crate::packaging::krew_manifest(version, repository, &archives)?;
    let file = format!("{}.yaml", crate::packaging::PLUGIN_NAME);
    let problems = crate::packaging::krew_problems(&manifest, &file);
    ensure!(
        problems.is_empty(),
        "the krew manifest breaks krew's rules: {}",
        problems.join("; ")
    );
    let path = dir.join(&file);
    std::fs::write(&path, serde_yaml_ng::to_string(&manifest)?)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("  wrote {} ({} platforms)", path.display(), archives.len());
    Ok(())
}

/// Runs `binary` inside a root filesystem holding only it, a recorded work dir, the two random
/// devices and `/etc/hosts`
/// (module docs): `--version`, `grade all`, and a name lookup of `localhost` with its negative
/// control. Prints each command and its output.
fn check_without_libc(root: &Path, binary: &Path, commit: &str) -> Result<()> {
    ensure!(
        rustix::process::geteuid().is_root(),
        "the check needs root (chroot, mknod of /dev/random and /dev/urandom): run as root, or \
         pass --no-check to build and checksum only"
    );
    let dir = tempfile::Builder::new()
        .prefix("dist-root-")
        .tempdir_in(root.join("target"))
        .context("creating the root filesystem directory")?;
    let fs = dir.path();
    std::fs::copy(binary, fs.join("kca-webhook-lab")).context("copying the binary")?;
    copy_tree(&root.join(RECORDED_WORKDIR), &fs.join("wd"))?;
    random_devices(fs)?;
    println!("  check in {} (only: {})", fs.display(), listing(fs)?);

    let version = in_root(fs, &["--version"])?;
    ensure!(
        version.status.success()
            && version.stdout.contains(commit)
            && version.stdout.contains("kubernetes: v")
            && version.stdout.contains("kyverno: v"),
        "--version inside the root filesystem did not print the commit and versions:\n{}",
        version.text()
    );

    let grade = in_root(fs, &["--lang", "en", "--workdir", "/wd", "grade", "all"])?;
    ensure!(
        grade.status.success(),
        "grade all inside the root filesystem failed ({}):\n{}",
        grade.status,
        grade.text()
    );

    std::fs::create_dir(fs.join("etc")).context("creating etc/")?;
    std::fs::write(fs.join("etc/hosts"), "127.0.0.1 localhost\n").context("writing etc/hosts")?;
    let (reached, text) = lookup_localhost(fs)?;
    ensure!(
        reached,
        "with /etc/hosts, the binary did not reach https://localhost:PORT:\n{text}"
    );
    println!("  localhost resolved from /etc/hosts without NSS modules: the listener was reached");
    std::fs::remove_file(fs.join("etc/hosts")).context("removing etc/hosts")?;
    let (reached, text) = lookup_localhost(fs)?;
    ensure!(
        !reached,
        "without /etc/hosts the binary still reached localhost: the check proves nothing:\n{text}"
    );
    println!(
        "  negative control: without /etc/hosts the name did not resolve ({})",
        text.lines()
            .find(|l| l.contains("lookup") || l.contains("resolution"))
            .unwrap_or("no connection")
            .trim()
    );
    println!("  ✓ static binary runs without a C library: --version, grade all, name lookup");
    Ok(())
}

/// `/dev/random` and `/dev/urandom` (character devices 1:8 and 1:9) in `fs`: the binary's hash
/// maps seed themselves through getrandom 0.3, whose Linux backend finds libc's `getrandom` with
/// `dlsym`, which a static binary does not have, so it falls back to polling `/dev/random` and
/// reading `/dev/urandom` (getrandom 0.3.4 `backends/linux_android_with_fallback.rs`). Every real
/// root filesystem has them; an empty chroot does not (measured: `grade all` panics there with
/// `getrandom::fill() failed … NotFound`).
fn random_devices(fs: &Path) -> Result<()> {
    std::fs::create_dir(fs.join("dev")).context("creating dev/")?;
    for (name, minor) in [("random", "8"), ("urandom", "9")] {
        let path = fs.join("dev").join(name);
        command::run(tool(
            "mknod",
            [
                OsStr::new("-m"),
                OsStr::new("666"),
                path.as_os_str(),
                OsStr::new("c"),
                OsStr::new("1"),
                OsStr::new(minor),
            ],
        ))?;
    }
    Ok(())
}

/// Runs `/kca-webhook-lab ARGS` chrooted into `fs` (as root), bounded by [`RUN_BOUND`]; prints
/// the command and its output.
fn in_root(fs: &Path, args: &[&str]) -> Result<command::Output> {
    let mut cmd = Command::new("timeout");
    cmd.arg(format!("{}s", RUN_BOUND.as_secs()));
    cmd.arg("chroot").arg(fs).arg("/kca-webhook-lab").args(args);
    println!("  $ {}", command::pretty(&cmd));
    let out = command::run_unchecked(cmd)?;
    for l in out.text().lines() {
        println!("    {l}");
    }
    Ok(out)
}

/// Runs `inspect` in `fs` against a kubeconfig whose server is `https://localhost:PORT`, PORT a
/// listener of this process on 127.0.0.1: returns whether the listener saw a connection (the name
/// was resolved) and the tool's output.
fn lookup_localhost(fs: &Path) -> Result<(bool, String)> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback listener")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    // A CA of its own, as every real kubeconfig has: without one the client loads the system's
    // roots, which a root filesystem without /etc/ssl does not have (measured: "No CA
    // certificates were loaded from the system", before any connection).
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .context("making a CA certificate")?;
    std::fs::write(fs.join("ca.crt"), ca.cert.pem()).context("writing ca.crt")?;
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
         https://localhost:{port}\n    certificate-authority: /ca.crt\nusers:\n- name: u\n  user:\n    \
         token: not-a-token\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
         current-context: c\n"
    );
    let mut f = std::fs::File::create(fs.join("kubeconfig.yaml"))?;
    f.write_all(kubeconfig.as_bytes())?;
    let stop = AtomicBool::new(false);
    let (reached, out) = std::thread::scope(|s| {
        // Accepts and drops every connection (the tool then fails its TLS handshake at once)
        // until the tool has ended.
        let acceptor = s.spawn(|| {
            let mut seen = false;
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok(_) => seen = true,
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
            seen || listener.accept().is_ok()
        });
        let out = in_root(
            fs,
            &[
                "--lang",
                "en",
                "--workdir",
                "/nowd",
                "--kubeconfig",
                "/kubeconfig.yaml",
                "inspect",
            ],
        );
        stop.store(true, Ordering::Relaxed);
        (acceptor.join().unwrap_or(false), out)
    });
    Ok((reached, out?.text()))
}

/// Copies the directory `from` to `to` (files and directories only).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for e in walkdir::WalkDir::new(from) {
        let e = e?;
        let dest = to.join(e.path().strip_prefix(from)?);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else if e.file_type().is_file() {
            std::fs::copy(e.path(), &dest)
                .with_context(|| format!("copying {}", e.path().display()))?;
        } else {
            bail!("{} is neither a file nor a directory", e.path().display());
        }
    }
    Ok(())
}

/// The top-level entries of `dir`, sorted, comma-separated.
fn listing(dir: &Path) -> Result<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    names.sort();
    Ok(names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_binary_is_named_and_a_static_one_passes() {
        let dynamic_headers = "  INTERP         0x000318 0x0000000000000318 0x0000000000000318 0x00001c 0x00001c R   0x1\n      [Requesting program interpreter: /lib64/ld-linux-x86-64.so.2]\n  LOAD ...";
        let dynamic_dyn = " 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n";
        let p = static_problems(dynamic_headers, dynamic_dyn);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[1].contains("libc.so.6"));
        let static_headers = "  LOAD           0x000000 0x0000000000000000\n  DYNAMIC        0x1\n";
        let static_dyn = " 0x000000000000001e (FLAGS)              BIND_NOW\n";
        assert!(static_problems(static_headers, static_dyn).is_empty());
    }

    #[test]
    fn artifact_names_carry_version_and_architecture() {
        assert_eq!(
            artifact_name("0.1.0", "x86_64-unknown-linux-gnu"),
            "kca-webhook-lab-0.1.0-x86_64-linux"
        );
        assert_eq!(
            artifact_name("0.1.0", "aarch64-unknown-linux-gnu"),
            "kca-webhook-lab-0.1.0-aarch64-linux"
        );
    }
}
