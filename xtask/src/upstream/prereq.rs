//! Prerequisites of the upstream builds and of the embedded node, checked
//! before anything is built; on Debian as root, missing packages are
//! installed with `apt-get` (saying what), elsewhere the error says what to
//! install.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use xshell::cmd;

use super::debian;
use crate::command;
use crate::status::Step;

/// The programs the builds run, found on `PATH`.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The `go` command.
    pub go: PathBuf,
    /// The C compiler (`gcc`): cgo builds and the static pause binary.
    pub gcc: PathBuf,
    /// `pkg-config`: cgo finds libseccomp through it.
    pub pkg_config: PathBuf,
}

/// The CA bundle the Kyverno images carry (Debian's `ca-certificates`).
pub const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// One prerequisite: what it is, the Debian package that provides it, and
/// why it is needed.
#[derive(Debug, Clone, Copy)]
struct Requirement {
    what: &'static str,
    debian_package: &'static str,
    needed_for: &'static str,
    present: fn() -> bool,
}

const REQUIREMENTS: &[Requirement] = &[
    Requirement {
        what: "gcc",
        debian_package: "gcc",
        needed_for: "cgo builds (kine, runc) and the static pause binary",
        present: || which("gcc").is_some(),
    },
    Requirement {
        what: "static C library (libc.a)",
        debian_package: "libc6-dev",
        needed_for: "`gcc -static` of the pause binary",
        present: static_libc_present,
    },
    Requirement {
        what: "pkg-config",
        debian_package: "pkg-config",
        needed_for: "runc's cgo build finds libseccomp through it",
        present: || which("pkg-config").is_some(),
    },
    Requirement {
        what: "libseccomp (pkg-config --exists libseccomp)",
        debian_package: "libseccomp-dev",
        needed_for: "runc built with the seccomp tag",
        present: || {
            command::shell()
                .is_ok_and(|sh| command::run(cmd!(sh, "pkg-config --exists libseccomp")).is_ok())
        },
    },
    Requirement {
        what: "iptables",
        debian_package: "iptables",
        needed_for: "kube-proxy (iptables mode) and the CNI portmap plugin on the node",
        present: || which("iptables").is_some(),
    },
    Requirement {
        what: "ip (iproute2)",
        debian_package: "iproute2",
        needed_for: "the node's network namespace and veth pair, and the host snapshot of the tests",
        present: || which("ip").is_some(),
    },
    Requirement {
        what: "conntrack",
        debian_package: "conntrack",
        needed_for: "kube-proxy clears stale conntrack entries with it",
        present: || which("conntrack").is_some(),
    },
    Requirement {
        what: CA_BUNDLE,
        debian_package: "ca-certificates",
        needed_for: "the CA certificates inside the Kyverno images",
        present: || Path::new(CA_BUNDLE).is_file(),
    },
];

/// Looks a program up on `PATH`, then in `/usr/local/sbin`, `/usr/sbin`,
/// `/sbin` and `/usr/local/go/bin` (where Debian and go.dev put them).
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let extra = ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/go/bin"];
    std::env::split_paths(&path)
        .chain(extra.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn static_libc_present() -> bool {
    let Ok(sh) = command::shell() else {
        return false;
    };
    let Ok(out) = command::run_unchecked(cmd!(sh, "gcc -print-file-name=libc.a")) else {
        return false;
    };
    let p = out.stdout.trim().to_string();
    // gcc prints the bare name back when it does not find the file.
    Path::new(&p).is_absolute() && Path::new(&p).is_file()
}

/// The Go version the wrapper modules need: the highest `go` directive of
/// their `go.mod` files, e.g. `(1, 26, 6)`.
///
/// # Errors
/// A wrapper's `go.mod` cannot be read.
pub fn required_go_version(wrappers: &Path) -> anyhow::Result<(u32, u32, u32)> {
    let mut max = (0, 0, 0);
    for f in super::components::FAMILIES {
        let path = wrappers.join(f.name).join("go.mod");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        for line in text.lines() {
            if let Some(v) = line
                .trim()
                .strip_prefix("go ")
                .and_then(|v| parse_go_version(v.trim()))
            {
                max = max.max(v);
            }
        }
    }
    Ok(max)
}

/// `1.26.6` or `go1.26.8` → `(1, 26, 6)`; a missing patch is 0.
pub fn parse_go_version(s: &str) -> Option<(u32, u32, u32)> {
    let s = s.strip_prefix("go").unwrap_or(s);
    let mut parts = s.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = match parts.next() {
        None => 0,
        Some(p) => p
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?,
    };
    Some((major, minor, patch))
}

/// The version word of `go version` output: `go version go1.26.8 linux/amd64`
/// → `go1.26.8`.
pub fn go_version_word(output: &str) -> Option<&str> {
    output.split_whitespace().find(|w| w.starts_with("go1"))
}

/// Checks every prerequisite. With `install` true, running as root on
/// Debian, missing packages are installed (`apt-get update`, then
/// `apt-get install -y --no-install-recommends …`), the list printed first.
///
/// # Errors
/// Go missing or older than the wrapper modules need (Go is not taken from
/// Debian, whose Go is too old: install it from go.dev); packages missing and
/// not installed (the error lists them with `apt-get install`); `apt-get`
/// failing.
pub fn check(install: bool) -> anyhow::Result<Tools> {
    let step = Step::start(
        "Checking prerequisites (go, gcc, pkg-config, libseccomp, iptables, conntrack)",
    );
    let go = which("go").context(
        "go is not installed (not on PATH nor /usr/local/go/bin): install Go from https://go.dev/dl \
         (Debian's golang package is too old for these modules)",
    )?;
    let sh = command::shell()?;
    let version_text = command::run(cmd!(sh, "{go} version").env("GOTOOLCHAIN", "local"))?
        .stdout
        .trim()
        .to_string();
    let have = go_version_word(&version_text)
        .and_then(parse_go_version)
        .with_context(|| format!("cannot read the Go version from `{version_text}`"))?;
    let need = required_go_version(&super::wrappers_dir())?;
    if have < need {
        anyhow::bail!(
            "{} is older than go{}.{}.{} which the wrapper modules under xtask/upstream need: \
             install a newer Go from https://go.dev/dl (GOTOOLCHAIN=local: no toolchain download)",
            version_text,
            need.0,
            need.1,
            need.2
        );
    }

    let missing: Vec<Requirement> = REQUIREMENTS
        .iter()
        .copied()
        .filter(|r| !(r.present)())
        .collect();
    if !missing.is_empty() {
        let list = missing
            .iter()
            .map(|r| {
                format!(
                    "  {} (Debian package {}): {}",
                    r.what, r.debian_package, r.needed_for
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mut packages: Vec<&str> = missing.iter().map(|r| r.debian_package).collect();
        packages.dedup();
        let root = nix::unistd::geteuid().is_root();
        if install && root && debian::is_debian() {
            crate::status_line!("   missing prerequisites:\n{list}");
            let wanted: Vec<debian::Package> = missing
                .iter()
                .map(|r| debian::Package {
                    name: r.debian_package,
                    needed_for: r.needed_for,
                })
                .collect();
            debian::ensure(&wanted, "the upstream builds and the embedded node", false)
                .map_err(anyhow::Error::msg)?;
            let still: Vec<&str> = REQUIREMENTS
                .iter()
                .filter(|r| !(r.present)())
                .map(|r| r.what)
                .collect();
            if !still.is_empty() {
                anyhow::bail!("still missing after apt-get install: {}", still.join(", "));
            }
        } else {
            let how = if debian::is_debian() {
                format!("apt-get install {}", packages.join(" "))
            } else {
                format!(
                    "install the equivalents of the Debian packages {}",
                    packages.join(" ")
                )
            };
            anyhow::bail!("missing prerequisites:\n{list}\nto fix: {how}");
        }
    }
    let gcc = which("gcc").context("gcc not found after the check")?;
    let pkg_config = which("pkg-config").context("pkg-config not found after the check")?;
    step.ok();
    Ok(Tools {
        go,
        gcc,
        pkg_config,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_command_names_every_package() {
        assert_eq!(
            debian::install_command(debian::REPORT_PAGES),
            "apt-get install -y chromium fonts-noto-cjk fontconfig"
        );
    }

    #[test]
    fn an_installed_package_is_not_missing_and_an_unknown_one_is() {
        // dpkg itself is installed wherever dpkg-query runs; no package has this name.
        let dpkg = debian::Package {
            name: "dpkg",
            needed_for: "test",
        };
        let nonesuch = debian::Package {
            name: "kca-no-such-package",
            needed_for: "test",
        };
        if debian::on_path("dpkg-query") {
            assert_eq!(debian::missing(&[dpkg, nonesuch]), vec![nonesuch]);
        } else {
            assert_eq!(debian::missing(&[dpkg, nonesuch]), vec![dpkg, nonesuch]);
        }
    }

    /// `ci/prereqs.sh` (the GitHub workflows' root step: their runners run `cargo test` as a
    /// user that cannot install) lists exactly what `cargo test` and `cargo xtask` install
    /// themselves: these lists, plus `ci/protoc`'s protobuf-compiler.
    #[test]
    fn the_workflows_prereqs_script_lists_exactly_the_rust_lists() {
        let script = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/prereqs.sh"),
        )
        .unwrap();
        let mut listed: Vec<String> = script
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                l.strip_prefix("pkgs=(")
                    .or_else(|| l.strip_prefix("pkgs+=("))
                    .and_then(|r| r.strip_suffix(')'))
            })
            .flat_map(|r| r.split_whitespace().map(str::to_owned))
            .collect();
        let mut want: Vec<String> = REQUIREMENTS
            .iter()
            .map(|r| r.debian_package)
            .chain(["protobuf-compiler"])
            .chain(
                [
                    debian::REPORT_PAGES,
                    debian::WORKFLOWS,
                    debian::DIST,
                    debian::SCRIPTING,
                    debian::CONFORMANCE,
                ]
                .concat()
                .iter()
                .map(|p| p.name),
            )
            .map(str::to_owned)
            .collect();
        listed.sort();
        want.sort();
        assert_eq!(listed, want, "ci/prereqs.sh and the Rust lists differ");
    }

    #[test]
    fn go_versions_parse_and_compare() {
        assert_eq!(parse_go_version("1.26.6"), Some((1, 26, 6)));
        assert_eq!(parse_go_version("go1.26.8"), Some((1, 26, 8)));
        assert_eq!(parse_go_version("1.26"), Some((1, 26, 0)));
        assert_eq!(parse_go_version("go1.27rc1"), None);
        assert!(parse_go_version("go1.26.8") >= parse_go_version("1.26.6"));
        assert!(parse_go_version("1.25.9") < parse_go_version("1.26"));
        assert_eq!(
            go_version_word("go version go1.26.8 linux/amd64"),
            Some("go1.26.8")
        );
    }

    #[test]
    fn wrappers_need_at_least_kyvernos_go() {
        // Kyverno v1.19.1's go.mod says `go 1.26.6`; the kyverno wrapper repeats it.
        let need = required_go_version(&crate::upstream::wrappers_dir()).unwrap();
        assert!(need >= (1, 26, 6), "{need:?}");
    }
}
