//! `cargo xtask guest run`: the embedded node proven on a cgroup v2 host — a Debian 12 guest
//! built from Debian's packages (debootstrap, Debian's kernel), booted with qemu, running this
//! checkout's built binaries against the upstream cache (docs/cgroup.md).
//!
//! The steps, all bounded and each printed:
//! 1. [`image::build`]: `debootstrap` a bookworm root file system into
//!    `target/guest/<run-id>/rootfs`, copy in this checkout (same path: the binaries find the
//!    repository at their compile-time path), `target/debug/{xtask,kca-webhook-lab}`, the upstream
//!    programs, images and chart (`/opt/kca-upstream`, used through the `KCA_UPSTREAM_*`
//!    variables of `cluster::Inputs::from_env`, so the guest needs neither cargo nor Go), the
//!    runner [`GUEST_SCRIPT`] and its steps; then `mkfs.ext4 -d` makes the disk image.
//! 2. [`boot::run`]: qemu boots Debian's kernel with `systemd.unified_cgroup_hierarchy=1` (KVM when
//!    it can boot a stock kernel, else software emulation, [`boot::choose_accel`]), without a
//!    network device; the runner takes a host snapshot, runs the steps, takes it again, copies
//!    the artifacts to `/root/kca-guest/out` and powers off. Its serial console is the progress.
//! 3. `debugfs rdump` reads `/root/kca-guest/out` back from the disk image into
//!    `target/guest-results/<run-id>/` (no mount), then the work directory is removed.
//!
//! It holds the machine's cluster lock while the guest runs (two emulated CPUs load the host's).

pub mod boot;
pub mod image;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::flags::{GuestCmd, GuestRunArgs as RunArgs, GuestSub as Sub};
use crate::status::Step;

/// The runner started inside the guest (`kca-guest.service`).
pub const GUEST_SCRIPT: &str = include_str!("guest.sh");

impl GuestCmd {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        match self.cmd {
            Sub::Run(a) => run(&a),
        }
    }
}

/// The guest's shell command lines for the `--step` words (pure): `up` is three lines (up,
/// status, down) so each has its own time; `xtask` is the copied binary.
pub fn step_lines(steps: &[String], xtask: &Path) -> Result<Vec<String>> {
    let x = xtask.display();
    let mut out = Vec::new();
    for s in steps {
        match s.as_str() {
            "up" => {
                out.push(format!("{x} cluster up --name guest"));
                out.push(format!("{x} cluster status --name guest"));
                out.push(format!("{x} cluster down --name guest"));
            }
            "lab-a" => out.push(format!("{x} lab run --lab a --run-id guest-lab-a")),
            "lab-b" => out.push(format!("{x} lab run --lab b --run-id guest-lab-b")),
            other => match other.strip_prefix("exec:") {
                Some(cmd) if !cmd.trim().is_empty() && !cmd.contains('\n') => {
                    out.push(cmd.to_string())
                }
                _ => bail!(
                    "--step {other:?}: expected `up`, `lab-a`, `lab-b` or `exec:<one-line shell command>`"
                ),
            },
        }
    }
    Ok(out)
}

/// Paths where Kubernetes node programs put files by default: the one list that the host tests
/// (`tests/src/host.rs`) and the guest's snapshot compare; none may appear because of a cluster.
pub const WATCHED_PATHS: &[&str] = &[
    "/var/lib/kubelet",
    "/var/log/pods",
    "/var/log/containers",
    "/run/containerd",
    "/var/run/containerd",
    "/var/lib/containerd",
    "/var/lib/cni",
    "/etc/cni",
    "/opt/cni",
    "/opt/containerd",
    "/var/run/nri",
    "/etc/nri",
    "/etc/kubernetes",
    "/var/run/kubernetes",
    "/root/.kube",
    "/root/.cache/helm",
    "/root/.config/helm",
];

fn check_tools() -> Result<()> {
    let missing: Vec<&str> = ["debootstrap", "qemu-system-x86_64", "mkfs.ext4", "debugfs"]
        .into_iter()
        .filter(|t| {
            !std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(t).is_file()))
        })
        .collect();
    if !missing.is_empty() {
        bail!(
            "missing on this host: {}; install them with `apt-get install qemu-system-x86 qemu-utils debootstrap e2fsprogs`",
            missing.join(", ")
        );
    }
    Ok(())
}

/// `guest run`: build, boot, run, bring back, remove (module docs).
pub fn run(a: &RunArgs) -> Result<()> {
    crate::cluster::host::require_root()?;
    check_tools()?;
    let accel = boot::choose_accel(
        &a.accel,
        Path::new("/dev/kvm").exists(),
        Path::new("/sys/module/kvm_pvm").exists(),
    )?;
    let repo = crate::cluster::config::repo_root();
    let run_id = a
        .run_id
        .clone()
        .unwrap_or_else(|| format!("guest-{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ")));
    anyhow::ensure!(
        !run_id.is_empty()
            && run_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "--run-id {run_id:?}: letters, digits, - and _ only"
    );
    let work = repo.join("target/guest").join(&run_id);
    let base = repo.join("target/guest/base-bookworm");
    let results = repo.join("target/guest-results").join(&run_id);
    if work.exists() || results.exists() {
        bail!(
            "{} or {} exists already: choose another --run-id",
            work.display(),
            results.display()
        );
    }
    let xtask = std::env::current_exe().context("locating this xtask binary")?;
    let lab = crate::lab_run::build_bin("lab", "kca-webhook-lab")?;
    // Only the cluster steps need the upstream programs (`exec:` steps alone: a quick look).
    let artifacts = if a.steps.iter().all(|s| s.starts_with("exec:")) {
        None
    } else {
        Some(
            crate::upstream::ensure_built(&crate::upstream::BuildOptions::default())
                .context("building the upstream programs, images and chart")?,
        )
    };
    let lines = step_lines(&a.steps, &repo.join("target/debug/xtask"))?;
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    std::fs::create_dir_all(&results).with_context(|| format!("creating {}", results.display()))?;
    eprintln!(
        " • guest {run_id}: {} with {} CPUs, {} MiB; steps:\n{}",
        accel.describe(),
        a.cpus,
        a.memory_mib,
        lines
            .iter()
            .map(|l| format!("     {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let outcome = (|| -> Result<boot::Outcome> {
        let img = image::build(&image::Spec {
            work: &work,
            repo: &repo,
            xtask: &xtask,
            lab: &lab,
            artifacts: artifacts.as_ref(),
            steps: &lines,
            base: a.keep_base.then_some(base.as_path()),
        })?;
        let _lock =
            crate::lock::ClusterLock::acquire(&crate::cluster::config::default_state_root())?;
        let outcome = boot::run(&boot::Boot {
            image: &img,
            accel,
            cpus: a.cpus,
            memory_mib: a.memory_mib,
            bound: Duration::from_secs(a.bound_min * 60),
            serial_log: &results.join("serial.log"),
        })?;
        image::read_back(&img.disk, "/root/kca-guest/out", &results.join("out"))?;
        Ok(outcome)
    })();
    let cleanup = if a.keep {
        eprintln!(" • kept {}", work.display());
        Ok(())
    } else {
        let step = Step::start(format!("removing the guest {}", work.display()));
        let r = image::remove_work(&work);
        if r.is_ok() {
            step.ok();
        }
        r
    };
    let outcome = outcome?;
    cleanup?;
    summarize(&results, &outcome)
}

/// Prints the steps' exit codes and times and the snapshot difference from the results; fails
/// when a step failed or the runner did not finish.
fn summarize(results: &Path, outcome: &boot::Outcome) -> Result<()> {
    let out = results.join("out");
    let steps = std::fs::read_to_string(out.join("steps.tsv")).unwrap_or_default();
    let diff = std::fs::read_to_string(out.join("snapshot.diff")).unwrap_or_default();
    eprintln!(
        " • guest ran {:.1}s (boot to power-off); results in {}",
        outcome.elapsed.as_secs_f64(),
        results.display()
    );
    let mut failed = Vec::new();
    for l in steps.lines() {
        let f: Vec<&str> = l.splitn(4, '\t').collect();
        if let [n, rc, secs, cmd] = f[..] {
            eprintln!("   step {n}: rc {rc}, {secs} s: {cmd}");
            if rc != "0" {
                failed.push(format!("step {n} ({cmd}) rc {rc}"));
            }
        }
    }
    eprintln!(
        "   host snapshot difference (before the first step, after the last; `<` before, `>` after):"
    );
    if diff.trim().is_empty() {
        eprintln!("     none");
    }
    for l in diff.lines() {
        eprintln!("     {l}");
    }
    if !out.join("finished").is_file() {
        failed.push(format!(
            "the guest's runner did not finish (see {})",
            results.join("serial.log").display()
        ));
    }
    if !failed.is_empty() {
        bail!("guest run failed: {}", failed.join("; "));
    }
    Ok(())
}

/// Where the built binaries and the upstream cache go inside the guest.
pub const GUEST_UPSTREAM: &str = "/opt/kca-upstream";

/// The guest's `/root/kca-guest/env.sh` (pure): the checkout path, the `KCA_UPSTREAM_*`
/// variables, `CARGO=/bin/true` (`lab run` builds nothing: the binary is there), the snapshot's
/// lists.
pub fn env_sh(repo: &Path) -> String {
    let q = crate::command::shell_quote;
    let sysctls: Vec<&str> = crate::cluster::sysctl::WATCHED.to_vec();
    format!(
        "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
         export HOME=/root\n\
         export REPO={}\n\
         export KCA_UPSTREAM_BIN={GUEST_UPSTREAM}/bin\n\
         export KCA_UPSTREAM_CNI_BIN={GUEST_UPSTREAM}/cni\n\
         export KCA_UPSTREAM_IMAGES={GUEST_UPSTREAM}/images\n\
         export KCA_UPSTREAM_CHART={GUEST_UPSTREAM}/chart\n\
         export CARGO=/bin/true\n\
         export KCA_WAIT_SCALE=3\n\
         export WATCHED_PATHS={}\n\
         export WATCHED_SYSCTLS={}\n",
        q(&repo.display().to_string()),
        q(&WATCHED_PATHS.join(" ")),
        q(&sysctls.join(" ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_become_guest_command_lines() {
        let x = Path::new("/r/target/debug/xtask");
        let l = step_lines(
            &[
                "up".into(),
                "lab-b".into(),
                "exec:cat /proc/1/cgroup".into(),
            ],
            x,
        )
        .unwrap();
        assert_eq!(
            l,
            [
                "/r/target/debug/xtask cluster up --name guest",
                "/r/target/debug/xtask cluster status --name guest",
                "/r/target/debug/xtask cluster down --name guest",
                "/r/target/debug/xtask lab run --lab b --run-id guest-lab-b",
                "cat /proc/1/cgroup",
            ]
        );
        assert!(step_lines(&["lab-c".into()], x).is_err());
        assert!(step_lines(&["exec:".into()], x).is_err());
    }

    #[test]
    fn env_sh_points_xtask_at_the_copied_upstream_cache() {
        let e = env_sh(Path::new("/work/wt/x"));
        assert!(e.contains("export REPO=/work/wt/x\n"), "{e}");
        assert!(
            e.contains("KCA_UPSTREAM_BIN=/opt/kca-upstream/bin\n"),
            "{e}"
        );
        assert!(e.contains("export CARGO=/bin/true\n"), "{e}");
        assert!(e.contains("vm.overcommit_memory"), "{e}");
    }
}
