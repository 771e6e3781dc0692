//! Booting the guest: qemu with Debian's kernel on the guest's disk image, its serial console
//! shown as progress, bounded by [`crate::command::wait_child`] (the wait every long guest step uses).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::image::Image;
use crate::command::wait_child;

/// How qemu runs the guest's CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// The host's KVM (`-accel kvm -cpu host`).
    Kvm,
    /// qemu's software emulation (`-accel tcg,thread=multi`), several times slower.
    Tcg,
}

impl Accel {
    /// For the terminal.
    pub fn describe(self) -> &'static str {
        match self {
            Accel::Kvm => "qemu with KVM",
            Accel::Tcg => "qemu with software emulation (TCG)",
        }
    }
}

/// Picks the accelerator (pure): `tcg`; `kvm` (an error without `/dev/kvm` or on a PVM host,
/// whose `kvm_pvm` runs only PVM-aware guest kernels, not Debian's); `auto`: KVM when it can
/// boot a stock kernel, else TCG.
pub fn choose_accel(requested: &str, kvm_device: bool, pvm: bool) -> Result<Accel> {
    match requested {
        "tcg" => Ok(Accel::Tcg),
        "kvm" if !kvm_device => bail!("--accel kvm: /dev/kvm does not exist"),
        "kvm" if pvm => bail!(
            "--accel kvm: /dev/kvm here is kvm_pvm (/sys/module/kvm_pvm), which boots only PVM-aware guest kernels, not Debian's; use --accel tcg"
        ),
        "kvm" => Ok(Accel::Kvm),
        "auto" if kvm_device && !pvm => Ok(Accel::Kvm),
        "auto" => Ok(Accel::Tcg),
        other => bail!("--accel {other:?}: expected auto, kvm or tcg"),
    }
}

/// What [`run`] boots.
#[derive(Debug)]
pub struct Boot<'a> {
    /// Disk image and kernel.
    pub image: &'a Image,
    /// Accelerator.
    pub accel: Accel,
    /// CPUs.
    pub cpus: u32,
    /// Memory in MiB.
    pub memory_mib: u32,
    /// Bound from start to power-off.
    pub bound: Duration,
    /// Where the serial console goes.
    pub serial_log: &'a Path,
}

/// How the guest ended.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// From qemu's start to its exit.
    pub elapsed: Duration,
    /// qemu's exit status.
    pub status: ExitStatus,
}

/// The qemu command line (pure).
pub fn qemu_args(b: &Boot) -> Vec<String> {
    let mut a: Vec<String> = vec!["-name".into(), "kca-guest".into()];
    match b.accel {
        Accel::Kvm => a.extend(["-accel".into(), "kvm".into(), "-cpu".into(), "host".into()]),
        Accel::Tcg => a.extend([
            "-accel".into(),
            "tcg,thread=multi,tb-size=512".into(),
            "-cpu".into(),
            "max".into(),
        ]),
    }
    a.extend([
        "-smp".into(),
        b.cpus.to_string(),
        "-m".into(),
        b.memory_mib.to_string(),
        "-kernel".into(),
        b.image.kernel.display().to_string(),
        "-initrd".into(),
        b.image.initrd.display().to_string(),
        "-append".into(),
        "root=/dev/vda rw console=ttyS0 quiet systemd.unified_cgroup_hierarchy=1 net.ifnames=0"
            .into(),
        "-drive".into(),
        format!(
            "file={},format=raw,if=virtio,cache=unsafe",
            b.image.disk.display()
        ),
        "-nic".into(),
        "none".into(),
        "-display".into(),
        "none".into(),
        "-monitor".into(),
        "none".into(),
        "-serial".into(),
        format!("file:{}", b.serial_log.display()),
        "-no-reboot".into(),
    ]);
    a
}

/// Boots the guest and waits (bounded) until it powers off, printing its serial console's new
/// lines as they come and a line every minute of silence.
pub fn run(b: &Boot) -> Result<Outcome> {
    let mut cmd = std::process::Command::new("qemu-system-x86_64");
    cmd.args(qemu_args(b));
    let qemu_log = b.serial_log.with_file_name("qemu.log");
    let t0 = Instant::now();
    let mut child = crate::command::spawn_logged(cmd, &qemu_log)?;
    eprintln!(
        " • guest booting ({}, qemu pid {}); its console (also in {}):",
        b.accel.describe(),
        child.id(),
        b.serial_log.display()
    );
    let mut offset = 0u64;
    let mut partial = String::new();
    let mut last_output = Instant::now();
    let mut last_note = Instant::now();
    let status = wait_child(&mut child, "the guest to power off", b.bound, |waited| {
        let new = read_from(b.serial_log, &mut offset);
        if !new.is_empty() {
            last_output = Instant::now();
            partial.push_str(&new);
            while let Some(i) = partial.find('\n') {
                let line: String = partial.drain(..=i).collect();
                let line = line.trim_end_matches(['\r', '\n']);
                if !line.trim().is_empty() {
                    eprintln!("   guest| {line}");
                }
            }
        } else if last_output.elapsed() > Duration::from_secs(60)
            && last_note.elapsed() > Duration::from_secs(60)
        {
            last_note = Instant::now();
            eprintln!(
                "   … guest running {}m{:02}s of at most {} min; no console output for {} s",
                waited.as_secs() / 60,
                waited.as_secs() % 60,
                b.bound.as_secs() / 60,
                last_output.elapsed().as_secs()
            );
        }
    })?;
    let rest = read_from(b.serial_log, &mut offset);
    for line in format!("{partial}{rest}").lines() {
        if !line.trim().is_empty() {
            eprintln!("   guest| {}", line.trim_end_matches('\r'));
        }
    }
    if !status.success() {
        let log = std::fs::read_to_string(&qemu_log).unwrap_or_default();
        bail!(
            "qemu exited with {status}: {}",
            crate::command::tail(&log, 20)
        );
    }
    Ok(Outcome {
        elapsed: t0.elapsed(),
        status,
    })
}

/// The text appended to `path` since `offset` (lossy UTF-8); advances `offset`.
fn read_from(path: &Path, offset: &mut u64) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    if f.seek(SeekFrom::Start(*offset)).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    *offset += buf.len() as u64;
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pvm_host_boots_the_stock_kernel_under_emulation() {
        assert_eq!(choose_accel("auto", true, true).unwrap(), Accel::Tcg);
        assert_eq!(choose_accel("auto", true, false).unwrap(), Accel::Kvm);
        assert_eq!(choose_accel("auto", false, false).unwrap(), Accel::Tcg);
        assert!(choose_accel("kvm", true, true).is_err());
        assert!(choose_accel("kvm", false, false).is_err());
        assert_eq!(choose_accel("tcg", true, false).unwrap(), Accel::Tcg);
        assert!(choose_accel("hvf", true, false).is_err());
    }

    #[test]
    fn the_guest_boots_unified_cgroups_without_a_network_device() {
        let img = Image {
            disk: "/w/disk.img".into(),
            kernel: "/w/vmlinuz".into(),
            initrd: "/w/initrd.img".into(),
        };
        let a = qemu_args(&Boot {
            image: &img,
            accel: Accel::Tcg,
            cpus: 2,
            memory_mib: 8192,
            bound: Duration::from_secs(60),
            serial_log: Path::new("/r/serial.log"),
        })
        .join(" ");
        assert!(a.contains("systemd.unified_cgroup_hierarchy=1"), "{a}");
        assert!(a.contains("-nic none"), "{a}");
        assert!(a.contains("-accel tcg,thread=multi"), "{a}");
        assert!(a.contains("-serial file:/r/serial.log"), "{a}");
    }
}
