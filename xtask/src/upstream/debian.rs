//! The Debian packages the project needs on a machine, for whom, and the one installer that
//! puts them there: root on Debian runs `apt-get`, saying what and why; anywhere else the error
//! names the packages to install.
//!
//! Standard library only, because it is compiled twice: into xtask (the prerequisites of the
//! upstream builds and of the node, [`super::prereq`]) and, by `#[path]`, into the lab crate's
//! tests (`lab/tests/common/mod.rs`), which cannot depend on xtask (the crates' layers) but must
//! install what they need through the same path, so that the README's `cargo test` sets a fresh
//! machine up by itself.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;

/// One Debian package and why the project needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Package {
    /// The Debian package name, e.g. `chromium`.
    pub name: &'static str,
    /// What needs it, in a few words (printed when it is installed or missing).
    pub needed_for: &'static str,
}

/// What the report page test needs (`lab/tests/report.rs`): a headless browser that builds the
/// page's DOM, a Japanese font so that the Japanese page renders as text, and fontconfig's
/// `fc-list` to tell that the font is there.
pub const REPORT_PAGES: &[Package] = &[
    Package {
        name: "chromium",
        needed_for: "the report page test loads the pages in headless Chromium",
    },
    Package {
        name: "fonts-noto-cjk",
        needed_for: "the Japanese report pages render as text, not boxes",
    },
    Package {
        name: "fontconfig",
        needed_for: "`fc-list :lang=ja` tells the report test a Japanese font is installed",
    },
];

/// What the workflow test needs besides actionlint (`tests/tests/workflows.rs`): shellcheck,
/// which actionlint runs on every `run:` script when it is on `PATH` and silently skips when not.
pub const WORKFLOWS: &[Package] = &[Package {
    name: "shellcheck",
    needed_for: "actionlint checks the workflows' `run:` scripts with shellcheck",
}];

/// What `cargo xtask conformance`'s agnhost image takes from Debian (`crate::conformance`): the
/// static BusyBox, the `sleep`, `cat` and `sh` that upstream's Alpine-based image has and the
/// suite's pods run.
pub const CONFORMANCE: &[Package] = &[Package {
    name: "busybox-static",
    needed_for: "the suite's agnhost image carries BusyBox's sleep, cat and sh, as upstream's Alpine image does",
}];

/// What the completion and man page test parses the generated files with
/// (`lab/tests/scripting.rs`): the shells of `completion zsh|fish` (bash is always there) and groff.
pub const SCRIPTING: &[Package] = &[
    Package {
        name: "zsh",
        needed_for: "`zsh -n` parses the zsh completion script",
    },
    Package {
        name: "fish",
        needed_for: "`fish --no-execute` parses the fish completion script",
    },
    Package {
        name: "groff-base",
        needed_for: "groff renders the man pages with every warning on",
    },
];

/// What `cargo xtask dist` runs on the binary it built: `file` and binutils' `readelf`.
pub const DIST: &[Package] = &[
    Package {
        name: "file",
        needed_for: "`cargo xtask dist` checks the binary is a static ELF executable",
    },
    Package {
        name: "binutils",
        needed_for: "`cargo xtask dist` reads the binary's program headers with readelf",
    },
];

/// Whether this machine is Debian (or a derivative) with `apt-get`.
pub fn is_debian() -> bool {
    Path::new("/etc/debian_version").exists() && on_path("apt-get")
}

/// Whether `name` is an executable file in a directory of `PATH` or of `/usr/sbin`, `/sbin`.
pub fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(Into::into))
        .map(|d| d.join(name))
        .any(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Whether dpkg says `package` is installed (`dpkg-query -W -f='${Status}'` is
/// `install ok installed`); false when dpkg-query is absent or fails.
pub fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.ends_with(b"install ok installed"))
}

/// The packages of `wanted` dpkg does not list as installed (all of them off Debian).
pub fn missing(wanted: &[Package]) -> Vec<Package> {
    wanted
        .iter()
        .copied()
        .filter(|p| !installed(p.name))
        .collect()
}

/// Whether this process runs as root: the owner of `/proc/self` is its effective uid.
fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// The pasteable command that installs `packages`.
pub fn install_command(packages: &[Package]) -> String {
    let names: Vec<&str> = packages.iter().map(|p| p.name).collect();
    format!("apt-get install -y {}", names.join(" "))
}

/// Makes sure every package of `wanted` is installed, for `whom` (e.g. "the report page test").
///
/// Nothing to do when dpkg lists them all. As root on Debian it prints one line naming the
/// packages and why, runs `apt-get update` then `apt-get install -y` (waiting up to 10 min for
/// another apt's lock: `DPkg::Lock::Timeout=600`) with apt's output on stderr, and checks again.
/// `recommends` false adds `--no-install-recommends`.
///
/// # Errors
/// Not root or not Debian: a message naming each package, what needs it and the command to run.
/// `apt-get` failing, or a package still not installed after it: the message says which.
pub fn ensure(wanted: &[Package], whom: &str, recommends: bool) -> Result<(), String> {
    if missing(wanted).is_empty() {
        return Ok(());
    }
    // One installer at a time in this process: two tests of one binary that need packages run on
    // two threads, and a second `apt-get update` while the first holds apt's lists lock fails at
    // once (exit 100; `DPkg::Lock::Timeout` covers dpkg's lock, not the lists lock). The second
    // then finds the packages installed. CI's run of stop 41 failed on exactly that.
    let _one = INSTALLING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let missing = missing(wanted);
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing
        .iter()
        .map(|p| format!("  {}: {}", p.name, p.needed_for))
        .collect::<Vec<_>>()
        .join("\n");
    if !(is_root() && is_debian()) {
        let how = if is_debian() {
            format!("as root: {}", install_command(&missing))
        } else {
            "their equivalents for this system".to_owned()
        };
        return Err(format!(
            "{whom} needs Debian packages that are not installed:\n{list}\ninstall {how}"
        ));
    }
    let names: Vec<&str> = missing.iter().map(|p| p.name).collect();
    // Straight to file descriptor 2, not through `eprintln!`, which a test harness captures: the
    // line must show whoever installs.
    let _ = writeln!(
        std::io::stderr(),
        "   installing with apt-get, for {whom}: {}\n{list}",
        names.join(" ")
    );
    update()?;
    let mut args = vec!["install", "-y", "-qq"];
    if !recommends {
        args.push("--no-install-recommends");
    }
    args.extend(&names);
    apt(&args)?;
    let still = self::missing(&missing);
    if !still.is_empty() {
        let names: Vec<&str> = still.iter().map(|p| p.name).collect();
        return Err(format!(
            "still not installed after apt-get install: {}",
            names.join(" ")
        ));
    }
    Ok(())
}

/// Serialises [`ensure`] within a process.
static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How long `apt-get update` is retried while another process (another apt, an unattended
/// upgrade, a second test binary) holds apt's lists lock: 60 tries, 5 s apart.
const UPDATE_TRIES: u32 = 60;
const UPDATE_PAUSE: std::time::Duration = std::time::Duration::from_secs(5);

/// `apt-get update`, tried again while apt's lists lock is held by another process (apt does not
/// wait for that lock itself), at most [`UPDATE_TRIES`] times, saying so on stderr.
fn update() -> Result<(), String> {
    let lists_lock = Path::new("/var/lib/apt/lists/lock");
    let mut tries = 0;
    loop {
        tries += 1;
        match apt(&["update", "-qq"]) {
            Ok(()) => return Ok(()),
            Err(e) if tries < UPDATE_TRIES && held_by_another(lists_lock) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "   {e}; apt's lists lock is held by another process: trying again in {} s \
                     ({tries} of {UPDATE_TRIES})",
                    UPDATE_PAUSE.as_secs()
                );
                std::thread::sleep(UPDATE_PAUSE);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether some process holds a lock on `path`, read from `/proc/locks` by the file's inode
/// (field 6, `major:minor:inode`), without touching the lock: apt takes its locks with
/// `fcntl(F_SETLK)`. Unreadable `/proc/locks`: true (most likely a lock; the tries are bounded).
fn held_by_another(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
        // Cannot tell: try again rather than fail on what is most likely a lock.
        return true;
    };
    let inode = format!(":{}", meta.ino());
    locks.lines().any(|l| {
        l.split_whitespace()
            .nth(5)
            .is_some_and(|id| id.ends_with(&inode))
    })
}

fn apt(args: &[&str]) -> Result<(), String> {
    let status = Command::new("apt-get")
        .args(["-o", "DPkg::Lock::Timeout=600"])
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        // apt's progress goes to stderr: a test's or a command's stdout stays its own.
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status()
        .map_err(|e| format!("running apt-get {}: {e}", args.join(" ")))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("apt-get {} failed: {status}", args.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::held_by_another;

    /// The check that decides whether `apt-get update` is tried again reads a held lock from
    /// `/proc/locks`, and a released one as free.
    #[test]
    fn a_held_lock_is_seen_and_a_released_one_is_not() {
        let path = std::env::temp_dir().join(format!("kca-lock-probe-{}", std::process::id()));
        // create_new (O_EXCL): never opens a file or symlink someone else put there first.
        let file = std::fs::File::create_new(&path).expect("a new file in the temporary directory");
        assert!(!held_by_another(&path), "nobody holds the lock yet");
        file.lock().expect("flock on our own file");
        let held = held_by_another(&path);
        file.unlock().expect("unlock");
        let released = held_by_another(&path);
        drop(file);
        std::fs::remove_file(&path).expect("removing the probe file");
        assert!(held, "a held lock is listed in /proc/locks");
        assert!(!released, "a released lock is not");
        assert!(!held_by_another(&path), "a missing file is not locked");
    }
}
