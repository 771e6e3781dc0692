//! The guest's disk image: a Debian 12 (bookworm) root file system from `debootstrap` with
//! Debian's kernel, this checkout, its built binaries, the upstream programs, images and chart,
//! and the runner; made into an ext4 image with `mkfs.ext4 -d` (no loop mount). Also reading the
//! results back (`debugfs rdump`) and removing the work directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::command::wait_child;
use crate::status::Step;

/// Debian packages of the guest beyond `debootstrap --variant=minbase`: systemd as init, the
/// kernel, and what `cluster up` runs on the host (`ip`, iptables and conntrack for kube-proxy,
/// libseccomp for runc, CA certificates).
pub const PACKAGES: &[&str] = &[
    "systemd-sysv",
    "udev",
    "kmod",
    "linux-image-amd64",
    "iproute2",
    "iptables",
    "conntrack",
    "util-linux",
    "procps",
    "ca-certificates",
    "libseccomp2",
    "e2fsprogs",
];

/// The Debian mirror (`$KCA_GUEST_MIRROR`, default `http://deb.debian.org/debian`).
fn mirror() -> String {
    std::env::var("KCA_GUEST_MIRROR").unwrap_or_else(|_| "http://deb.debian.org/debian".into())
}

/// Size of the (sparse) disk image.
pub const DISK_BYTES: u64 = 16 << 30;

/// What goes into the image.
#[derive(Debug)]
pub struct Spec<'a> {
    /// The work directory (`target/guest/<run-id>`), fresh.
    pub work: &'a Path,
    /// This checkout (copied to the same path in the guest, without `target/` and `.git`).
    pub repo: &'a Path,
    /// The xtask binary (to `<repo>/target/debug/xtask`).
    pub xtask: &'a Path,
    /// The student tool (to `<repo>/target/debug/kca-webhook-lab`).
    pub lab: &'a Path,
    /// The upstream programs, images and chart (None: `exec:` steps only).
    pub artifacts: Option<&'a crate::upstream::Artifacts>,
    /// The runner's command lines.
    pub steps: &'a [String],
    /// A debootstrapped root file system to copy instead of running debootstrap (kept by an
    /// earlier run with `--keep-base`), and where to keep this run's when absent.
    pub base: Option<&'a Path>,
}

/// A built guest.
#[derive(Debug, Clone)]
pub struct Image {
    /// The ext4 disk image (`/dev/vda` in the guest).
    pub disk: PathBuf,
    /// Debian's kernel.
    pub kernel: PathBuf,
    /// Its initramfs.
    pub initrd: PathBuf,
}

/// Builds the guest (module docs); every step bounded and printed.
pub fn build(s: &Spec) -> Result<Image> {
    let rootfs = s.work.join("rootfs");
    if let Some(base) = s.base.filter(|b| b.join("boot").is_dir()) {
        let step = Step::start(format!(
            "copying the debootstrapped base {} (kept by an earlier --keep-base run)",
            base.display()
        ));
        let mut cmd = std::process::Command::new("cp");
        cmd.arg("-a").arg(base).arg(&rootfs);
        run_logged(
            cmd,
            &s.work.join("cp.log"),
            "cp -a",
            Duration::from_secs(600),
        )?;
        step.ok();
    } else {
        debootstrap(s, &rootfs)?;
        if let Some(base) = s.base {
            let step = Step::start(format!(
                "keeping the debootstrapped base in {}",
                base.display()
            ));
            let mut cmd = std::process::Command::new("cp");
            cmd.arg("-a").arg(&rootfs).arg(base);
            run_logged(
                cmd,
                &s.work.join("cp.log"),
                "cp -a",
                Duration::from_secs(600),
            )?;
            step.ok();
        }
    }
    finish(s, &rootfs)
}

/// `debootstrap --variant=minbase --include=PACKAGES bookworm <rootfs>`, bounded.
fn debootstrap(s: &Spec, rootfs: &Path) -> Result<()> {
    let step = Step::start(format!(
        "debootstrap bookworm ({} + {} packages) into {}",
        "minbase",
        PACKAGES.len(),
        rootfs.display()
    ));
    let mut cmd = std::process::Command::new("debootstrap");
    cmd.args([
        "--variant=minbase",
        &format!("--include={}", PACKAGES.join(",")),
        "bookworm",
    ])
    .arg(rootfs)
    .arg(mirror());
    run_logged(
        cmd,
        &s.work.join("debootstrap.log"),
        "debootstrap",
        Duration::from_secs(900),
    )?;
    // debootstrap unmounts what it mounted when it succeeds; nothing may stay mounted there.
    let left = mounts_under(s.work);
    if !left.is_empty() {
        bail!(
            "mounts left under {} after debootstrap: {}",
            s.work.display(),
            left.join(", ")
        );
    }
    step.ok();
    Ok(())
}

/// Configures the root file system, copies everything in, makes the disk image.
fn finish(s: &Spec, rootfs: &Path) -> Result<Image> {
    let rootfs = rootfs.to_path_buf();
    let step =
        Step::start("configuring the guest and copying the checkout, binaries and upstream cache");
    configure(&rootfs, s)?;
    copy_checkout(s.repo, &rootfs)?;
    let debug = rootfs
        .join(s.repo.strip_prefix("/").unwrap_or(s.repo))
        .join("target/debug");
    mkdir(&debug)?;
    copy_file(s.xtask, &debug.join("xtask"))?;
    copy_file(s.lab, &debug.join("kca-webhook-lab"))?;
    if let Some(a) = s.artifacts {
        copy_upstream(
            a,
            &rootfs.join(super::GUEST_UPSTREAM.trim_start_matches('/')),
        )?;
    }
    step.ok();

    let (kernel, initrd) = kernel_files(&rootfs)?;
    let image = Image {
        disk: s.work.join("disk.img"),
        kernel: s.work.join("vmlinuz"),
        initrd: s.work.join("initrd.img"),
    };
    copy_file(&kernel, &image.kernel)?;
    copy_file(&initrd, &image.initrd)?;
    let step = Step::start(format!(
        "mkfs.ext4 -d: the disk image {}",
        image.disk.display()
    ));
    std::fs::File::create(&image.disk)
        .and_then(|f| f.set_len(DISK_BYTES))
        .with_context(|| format!("creating {}", image.disk.display()))?;
    let mut cmd = std::process::Command::new("mkfs.ext4");
    cmd.args(["-q", "-F", "-L", "root", "-d"])
        .arg(&rootfs)
        .arg(&image.disk);
    run_logged(
        cmd,
        &s.work.join("mkfs.log"),
        "mkfs.ext4",
        Duration::from_secs(900),
    )?;
    step.ok();
    // The image holds it all now; the tree goes at once (2.5 GB).
    remove_tree(&rootfs)?;
    Ok(image)
}

/// Runs `cmd` with its output in `log`, bounded, with a progress line every 30 s naming its last
/// output line; fails with the log's tail.
fn run_logged(cmd: std::process::Command, log: &Path, what: &str, bound: Duration) -> Result<()> {
    let mut child = crate::command::spawn_logged(cmd, log)?;
    let mut next = Duration::from_secs(30);
    let st = wait_child(&mut child, what, bound, |waited| {
        if waited >= next {
            next += Duration::from_secs(30);
            let text = std::fs::read_to_string(log).unwrap_or_default();
            eprintln!(
                "   … {what} {} s of at most {} s: {}",
                waited.as_secs(),
                bound.as_secs(),
                text.lines().last().unwrap_or("").trim()
            );
        }
    })?;
    if !st.success() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        bail!(
            "{what} failed ({st}); last lines of {}:\n{}",
            log.display(),
            crate::command::tail(&text, 20)
        );
    }
    Ok(())
}

fn mkdir(p: &Path) -> Result<()> {
    std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))
}

fn write(p: &Path, text: &str) -> Result<()> {
    if let Some(d) = p.parent() {
        mkdir(d)?;
    }
    std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))
}

fn copy_file(from: &Path, to: &Path) -> Result<()> {
    if let Some(d) = to.parent() {
        mkdir(d)?;
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))
}

/// The guest's own files: hostname, fstab, the runner, its unit (enabled by its symlink), its
/// environment and steps.
fn configure(rootfs: &Path, s: &Spec) -> Result<()> {
    write(&rootfs.join("etc/hostname"), "kca-guest\n")?;
    write(
        &rootfs.join("etc/hosts"),
        "127.0.0.1 localhost\n127.0.1.1 kca-guest\n",
    )?;
    write(
        &rootfs.join("etc/fstab"),
        "/dev/vda / ext4 rw,errors=remount-ro 0 1\n",
    )?;
    let g = rootfs.join("root/kca-guest");
    write(&g.join("guest.sh"), super::GUEST_SCRIPT)?;
    write(&g.join("env.sh"), &super::env_sh(s.repo))?;
    write(&g.join("steps"), &format!("{}\n", s.steps.join("\n")))?;
    write(
        &rootfs.join("etc/systemd/system/kca-guest.service"),
        "[Unit]\n\
         Description=kca-webhook-lab guest runner (cargo xtask guest)\n\
         After=basic.target\n\n\
         [Service]\n\
         Type=oneshot\n\
         ExecStart=/bin/bash /root/kca-guest/guest.sh\n\
         TimeoutStartSec=infinity\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n",
    )?;
    // The runner owns the serial console: a getty there would hang it up (EIO for the runner).
    for unit in ["serial-getty@ttyS0.service", "getty@tty1.service"] {
        let mask = rootfs.join("etc/systemd/system").join(unit);
        std::os::unix::fs::symlink("/dev/null", &mask)
            .with_context(|| format!("masking {}", mask.display()))?;
    }
    let wants = rootfs.join("etc/systemd/system/multi-user.target.wants");
    mkdir(&wants)?;
    let link = wants.join("kca-guest.service");
    std::os::unix::fs::symlink("/etc/systemd/system/kca-guest.service", &link)
        .with_context(|| format!("linking {}", link.display()))?;
    Ok(())
}

/// Copies the checkout without `target/` and `.git` to the same path under `rootfs`.
fn copy_checkout(repo: &Path, rootfs: &Path) -> Result<()> {
    let dest = rootfs.join(repo.strip_prefix("/").unwrap_or(repo));
    for e in walkdir::WalkDir::new(repo)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| {
            !(e.depth() == 1 && (e.file_name() == "target" || e.file_name() == ".git"))
        })
    {
        let e = e.with_context(|| format!("walking {}", repo.display()))?;
        let rel = e.path().strip_prefix(repo).unwrap_or(e.path());
        let to = dest.join(rel);
        let t = e.file_type();
        if t.is_dir() {
            mkdir(&to)?;
        } else if t.is_symlink() {
            let target = std::fs::read_link(e.path())
                .with_context(|| format!("reading {}", e.path().display()))?;
            std::os::unix::fs::symlink(&target, &to)
                .with_context(|| format!("linking {}", to.display()))?;
        } else if t.is_file() {
            copy_file(e.path(), &to)?;
        }
    }
    Ok(())
}

/// Copies every entry of `from` (following symlinks: the cache's `bin-*` directories link into
/// its entries) into `to`.
fn copy_dir_following(from: &Path, to: &Path) -> Result<()> {
    for e in walkdir::WalkDir::new(from).follow_links(true).min_depth(1) {
        let e = e.with_context(|| format!("walking {}", from.display()))?;
        let rel = e.path().strip_prefix(from).unwrap_or(e.path());
        if e.file_type().is_dir() {
            mkdir(&to.join(rel))?;
        } else {
            copy_file(e.path(), &to.join(rel))?;
        }
    }
    Ok(())
}

/// `bin/`, `cni/`, `images/<n>.tar` with `<n>.ref` (the reference), `chart/`.
fn copy_upstream(a: &crate::upstream::Artifacts, to: &Path) -> Result<()> {
    copy_dir_following(&a.bin_dir, &to.join("bin"))?;
    copy_dir_following(&a.cni_bin_dir, &to.join("cni"))?;
    copy_dir_following(&a.chart_dir, &to.join("chart"))?;
    for (i, img) in a.images.iter().enumerate() {
        let tar = to.join(format!("images/{i:02}.tar"));
        copy_file(&img.path, &tar)?;
        write(&tar.with_extension("ref"), &format!("{}\n", img.reference))?;
    }
    Ok(())
}

/// The kernel and initramfs Debian installed (`/boot/vmlinuz-*`, `/boot/initrd.img-*`).
fn kernel_files(rootfs: &Path) -> Result<(PathBuf, PathBuf)> {
    let boot = rootfs.join("boot");
    let mut kernel = None;
    let mut initrd = None;
    for e in std::fs::read_dir(&boot)
        .with_context(|| format!("reading {}", boot.display()))?
        .flatten()
    {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("vmlinuz-") {
            kernel = Some(e.path());
        } else if n.starts_with("initrd.img-") {
            initrd = Some(e.path());
        }
    }
    match (kernel, initrd) {
        (Some(k), Some(i)) => Ok((k, i)),
        _ => bail!(
            "no vmlinuz-* and initrd.img-* in {} (linux-image-amd64 not installed?)",
            boot.display()
        ),
    }
}

/// Copies directory `path` of the ext4 image `disk` into `dest` (`debugfs rdump`; nothing is
/// mounted).
pub fn read_back(disk: &Path, path: &str, dest: &Path) -> Result<()> {
    let parent = dest.parent().context("a destination without a parent")?;
    mkdir(parent)?;
    let mut cmd = std::process::Command::new("debugfs");
    cmd.arg("-R")
        .arg(format!("rdump {path} {}", parent.display()))
        .arg(disk);
    let log = parent.join("debugfs.log");
    run_logged(cmd, &log, "debugfs rdump", Duration::from_secs(300))?;
    let got = parent.join(Path::new(path).file_name().unwrap_or_default());
    if got != dest {
        std::fs::rename(&got, dest)
            .with_context(|| format!("renaming {} to {}", got.display(), dest.display()))?;
    }
    if !dest.is_dir() {
        bail!(
            "{path} was not found in the guest's disk image {} (the runner never started?)",
            disk.display()
        );
    }
    Ok(())
}

/// Mount points under `dir` (`/proc/self/mountinfo`).
fn mounts_under(dir: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|m| Path::new(m).starts_with(dir))
        .map(str::to_owned)
        .collect()
}

/// Removes a tree this run made, never across a mount point (a mount under it is an error).
fn remove_tree(dir: &Path) -> Result<()> {
    let m = mounts_under(dir);
    if !m.is_empty() {
        bail!(
            "not removing {}: mounted under it: {}",
            dir.display(),
            m.join(", ")
        );
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", dir.display())),
    }
}

/// Removes the run's work directory (root file system, disk image, kernel, logs).
pub fn remove_work(work: &Path) -> Result<()> {
    remove_tree(work)
}
