//! Facts about the host the node runs on, read at `up`: capabilities, cgroup layout, root.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Host facts that change the node's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFacts {
    /// Whether this process has CAP_SYS_RESOURCE (effective set); without it runc cannot raise
    /// oom_score_adj and containerd must restrict it.
    pub cap_sys_resource: bool,
    /// Whether `/sys/fs/cgroup` is a cgroup v1 (or hybrid) layout rather than the unified v2 hierarchy.
    pub cgroup_v1: bool,
}

/// CAP_SYS_RESOURCE's bit number (linux/capability.h).
const CAP_SYS_RESOURCE: u32 = 24;

impl HostFacts {
    /// Reads `/proc/self/status` (CapEff) and `/sys/fs/cgroup`.
    pub fn detect() -> Result<HostFacts> {
        let status =
            std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
        let cap_eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .context("no CapEff line in /proc/self/status")?;
        let cap_eff = u64::from_str_radix(cap_eff.trim(), 16)
            .context("parsing CapEff in /proc/self/status")?;
        let unified = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
        Ok(HostFacts {
            cap_sys_resource: cap_eff & (1 << CAP_SYS_RESOURCE) != 0,
            cgroup_v1: !unified,
        })
    }
}

/// Fails with a clear message unless this is Linux and the effective user is root.
pub fn require_root() -> Result<()> {
    if !cfg!(target_os = "linux") {
        bail!(
            "the embedded cluster needs Linux (network namespaces, cgroups, containerd); this is {}",
            std::env::consts::OS
        );
    }
    if !rustix::process::geteuid().is_root() {
        bail!(
            "the embedded cluster needs root (network namespaces, mounts, cgroups); run as root, e.g. `sudo -E cargo xtask cluster up`"
        );
    }
    Ok(())
}

/// Mount points of cgroup hierarchies: every cgroup v1 controller mount and the unified (v2) mount,
/// from `/proc/self/mountinfo`.
pub fn cgroup_mounts() -> Result<Vec<std::path::PathBuf>> {
    let info =
        std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    let mut out = Vec::new();
    for line in info.lines() {
        // `… mount_point … - fstype source options`
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fstype = right.split_whitespace().next().unwrap_or("");
        if (fstype == "cgroup" || fstype == "cgroup2")
            && let Some(mp) = left.split_whitespace().nth(4)
        {
            out.push(std::path::PathBuf::from(mp));
        }
    }
    Ok(out)
}

/// The cluster's cgroup parent (`cgroup_root`) in every hierarchy where it does not exist yet:
/// what [`prepare_cgroups`] will create, recorded first so `down` removes only these.
pub fn missing_cgroups(cgroup_root: &str) -> Result<Vec<std::path::PathBuf>> {
    let rel = cgroup_root.trim_start_matches('/');
    Ok(cgroup_mounts()?
        .into_iter()
        .map(|m| m.join(rel))
        .filter(|d| !d.exists())
        .collect())
}

/// Creates the cluster's cgroup parent (`cgroup_root`, e.g. `/kca-<name>`) in every cgroup
/// hierarchy, so kubelet's `cgroupRoot` exists everywhere it checks. In the v1 cpuset controller a
/// new cgroup starts with empty `cpuset.cpus`/`cpuset.mems`; copy the parent's.
pub fn prepare_cgroups(cgroup_root: &str) -> Result<()> {
    let rel = cgroup_root.trim_start_matches('/');
    for mount in cgroup_mounts()? {
        let dir = mount.join(rel);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating cgroup {}", dir.display()))?;
        for f in ["cpuset.cpus", "cpuset.mems"] {
            let parent = mount.join(f);
            if parent.exists() {
                let v = std::fs::read_to_string(&parent)
                    .with_context(|| format!("reading {}", parent.display()))?;
                std::fs::write(dir.join(f), v.trim())
                    .with_context(|| format!("writing {}", dir.join(f).display()))?;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// cgroup v2: the controllers kubelet validates on its cgroup root, and how this host gets them.
// ---------------------------------------------------------------------------------------------

/// The controllers kubelet v1.35 requires in its cgroup root's `cgroup.controllers`, limited to
/// those the kernel has (`pkg/kubelet/cm/cgroup_v2_manager_linux.go`: `Validate` and
/// `getSupportedUnifiedControllers`, run before kubelet creates any cgroup).
pub const KUBELET_CONTROLLERS: &[&str] = &["cpu", "cpuset", "memory", "hugetlb", "pids"];

/// The controllers systemd 252 enables along the path to a unit with `Delegate=yes` (every
/// controller it manages: `CGROUP_MASK_DELEGATE`, systemd.resource-control(5) "Delegate=").
/// systemd does not manage `hugetlb`, `rdma` or `misc`, so it never enables them.
pub const SYSTEMD_CONTROLLERS: &[&str] = &["cpu", "cpuset", "io", "memory", "pids"];

/// The slice the transient unit of [`V2Plan::Delegate`] runs in.
pub const DELEGATE_SLICE: &str = "system.slice";

/// What decides how a cgroup v2 host gives kubelet its controllers (read by [`V2Facts::detect`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct V2Facts {
    /// `/sys/fs/cgroup/cgroup.controllers`: what the kernel (or the namespace's root) offers.
    pub controllers: Vec<String>,
    /// `/sys/fs/cgroup/cgroup.subtree_control`: what the root's children get.
    pub subtree_control: Vec<String>,
    /// systemd is the service manager (`/run/systemd/system` exists, sd_booted(3)) and
    /// `systemd-run` is on PATH.
    pub systemd: bool,
    /// `/sys/fs/cgroup` is not the host's root cgroup (it has `cgroup.type`, which only non-root
    /// cgroups have: a private cgroup namespace, e.g. a container) and processes live in it, so
    /// a write to its `cgroup.subtree_control` fails with EBUSY (the no-internal-processes rule,
    /// Documentation/admin-guide/cgroup-v2.rst).
    pub namespace_root_busy: bool,
}

/// How kubelet's cgroup root gets [`KUBELET_CONTROLLERS`] on a cgroup v2 host ([`plan_v2`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum V2Plan {
    /// A transient systemd unit with `Delegate=yes` owns kubelet's cgroup root; systemd enables
    /// `by_systemd` along the path to it; `by_hand` (controllers systemd does not manage) are
    /// written into `cgroup.subtree_control` of each ancestor that lacks them.
    Delegate {
        /// Controllers kubelet needs on this kernel.
        needed: Vec<String>,
        /// Of those, what systemd enables for a delegated unit.
        by_systemd: Vec<String>,
        /// Of those, what must be written by hand along the path.
        by_hand: Vec<String>,
    },
    /// No systemd: `enable` is written into the root's `cgroup.subtree_control` (empty: nothing
    /// to write), then the cgroup root is made under it.
    Enable {
        /// Controllers kubelet needs on this kernel.
        needed: Vec<String>,
        /// Of those, what the root does not give its children yet.
        enable: Vec<String>,
    },
    /// The host cannot give kubelet its controllers; the reason, for the user.
    Refuse(String),
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

/// Decides how kubelet's cgroup root gets its controllers on a cgroup v2 host (pure): what
/// kubelet needs is [`KUBELET_CONTROLLERS`] ∩ `controllers`; with systemd a delegated unit
/// ([`V2Plan::Delegate`]), without it the missing ones enabled in the root ([`V2Plan::Enable`]),
/// and a refusal when they are missing and the root cannot take the write (a busy namespace root).
pub fn plan_v2(f: &V2Facts) -> V2Plan {
    let needed: Vec<String> = KUBELET_CONTROLLERS
        .iter()
        .filter(|c| f.controllers.iter().any(|h| h == *c))
        .map(|c| c.to_string())
        .collect();
    if f.systemd && !f.namespace_root_busy {
        let (by_systemd, by_hand): (Vec<String>, Vec<String>) = needed
            .iter()
            .cloned()
            .partition(|c| SYSTEMD_CONTROLLERS.contains(&c.as_str()));
        return V2Plan::Delegate {
            needed,
            by_systemd,
            by_hand,
        };
    }
    let enable: Vec<String> = needed
        .iter()
        .filter(|c| !f.subtree_control.contains(c))
        .cloned()
        .collect();
    if !enable.is_empty() && f.namespace_root_busy {
        return V2Plan::Refuse(format!(
            "kubelet needs the cgroup controllers {} in its cgroup root, but /sys/fs/cgroup gives its children only [{}]; /sys/fs/cgroup is the root of a private cgroup namespace (a container?) with processes in it, so enabling {} there fails with EBUSY (cgroup v2's no-internal-processes rule). Run the cluster on the host or in a VM, or give the container a cgroup whose processes sit in a child cgroup (as kind's entrypoint does)",
            needed.join(" "),
            f.subtree_control.join(" "),
            enable.join(" ")
        ));
    }
    V2Plan::Enable { needed, enable }
}

impl V2Facts {
    /// Reads `/sys/fs/cgroup/cgroup.{controllers,subtree_control,type,procs}`,
    /// `/run/systemd/system` and PATH.
    pub fn detect() -> Result<V2Facts> {
        let read = |f: &str| {
            std::fs::read_to_string(format!("{CGROUP2_MOUNT}/{f}"))
                .with_context(|| format!("reading {CGROUP2_MOUNT}/{f}"))
        };
        let namespaced = std::path::Path::new(CGROUP2_MOUNT)
            .join("cgroup.type")
            .exists();
        let busy = namespaced && !read("cgroup.procs")?.trim().is_empty();
        Ok(V2Facts {
            controllers: words(&read("cgroup.controllers")?),
            subtree_control: words(&read("cgroup.subtree_control")?),
            systemd: std::path::Path::new("/run/systemd/system").is_dir() && on_path("systemd-run"),
            namespace_root_busy: busy,
        })
    }
}

/// Whether an executable named `prog` is in a directory of `PATH`.
fn on_path(prog: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(prog))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// The unified hierarchy's mount point.
pub const CGROUP2_MOUNT: &str = "/sys/fs/cgroup";

/// The transient unit that owns cluster `name`'s cgroup root on a systemd v2 host.
pub fn delegate_unit(name: &str) -> String {
    format!("kca-node-{name}.service")
}

/// kubelet's `cgroupRoot` for cluster `name`: `/kca-<name>` (v1, or v2 without systemd), or the
/// `node` child of the delegated unit's cgroup (`/system.slice/kca-node-<name>.service/node`).
pub fn cgroup_root_for(name: &str, plan: Option<&V2Plan>) -> String {
    match plan {
        Some(V2Plan::Delegate { .. }) => {
            format!("/{DELEGATE_SLICE}/{}/node", delegate_unit(name))
        }
        _ => format!("/kca-{name}"),
    }
}

/// The host's cgroup layout as `up` found it and what `up` changed, kept in `cluster.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CgroupChanges {
    /// `v1` or `v2`.
    pub version: String,
    /// v2: the facts the plan was made from (the root's controllers and subtree_control before).
    pub facts: Option<V2Facts>,
    /// v2: `delegate`, `enable` (the plan's kind).
    pub plan: String,
    /// The transient unit started with `Delegate=yes` (v2 with systemd).
    pub unit: Option<String>,
    /// That unit's `InvocationID` (`systemctl show`), so `down` stops only this invocation.
    pub unit_invocation: Option<String>,
    /// That unit's cgroup directory.
    pub unit_cgroup: Option<std::path::PathBuf>,
    /// `<cgroup>/cgroup.subtree_control` + controller for each `+controller` written by hand.
    pub enabled_by_hand: Vec<EnabledController>,
    /// The root (and, with systemd, the unit's slice) as `up` found them: `down` puts their
    /// `cgroup.subtree_control` back from these ([`put_back`]).
    #[serde(default)]
    pub parents_before: Vec<ParentBefore>,
}

/// A parent cgroup of kubelet's cgroup root as `up` found it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ParentBefore {
    /// The cgroup directory.
    pub cgroup: std::path::PathBuf,
    /// Its `cgroup.subtree_control`.
    pub subtree_control: Vec<String>,
    /// The names of its child cgroups.
    pub children: Vec<String>,
}

impl ParentBefore {
    /// Reads `cgroup`'s `cgroup.subtree_control` and child directories.
    pub fn read(cgroup: &std::path::Path) -> Result<ParentBefore> {
        Ok(ParentBefore {
            cgroup: cgroup.to_path_buf(),
            subtree_control: read_subtree_control(cgroup)?,
            children: child_cgroups(cgroup)?,
        })
    }
}

fn read_subtree_control(cgroup: &std::path::Path) -> Result<Vec<String>> {
    let f = cgroup.join("cgroup.subtree_control");
    Ok(words(
        &std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?,
    ))
}

fn child_cgroups(cgroup: &std::path::Path) -> Result<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(cgroup)
        .with_context(|| format!("reading {}", cgroup.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Ok(v)
}

/// What `down` may disable again in a parent's `cgroup.subtree_control` (pure): the controllers
/// enabled since `up` (by hand, or by kubelet and runc, which enable every available controller
/// in each ancestor of the cgroups they make), except those systemd manages when it does (it
/// disables its own when the delegated unit stops) — and only when no child cgroup appeared
/// since `up`: a new child may have come to rely on one (disabling a controller takes its files
/// and limits from every child), while the children `up` found did not have it. `Err`: why
/// nothing is put back.
pub fn put_back(
    before: &ParentBefore,
    now_subtree: &[String],
    now_children: &[String],
    systemd: bool,
) -> std::result::Result<Vec<String>, String> {
    let extra: Vec<String> = now_subtree
        .iter()
        .filter(|c| !before.subtree_control.contains(c))
        .filter(|c| !(systemd && SYSTEMD_CONTROLLERS.contains(&c.as_str())))
        .cloned()
        .collect();
    if extra.is_empty() {
        return Ok(extra);
    }
    let new: Vec<&String> = now_children
        .iter()
        .filter(|c| !before.children.contains(c))
        .collect();
    if !new.is_empty() {
        return Err(format!(
            "{} left enabled in {}: cgroups appeared there since `up` ({})",
            extra.join(" "),
            before.cgroup.display(),
            new.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(extra)
}

/// At `down`, after the cluster's cgroups and unit are gone: disables again, parent by parent
/// (deepest first), what [`put_back`] allows; one line per parent for the report.
pub fn put_back_parents(changes: &CgroupChanges) -> Vec<String> {
    let systemd = changes.unit.is_some();
    let mut notes = Vec::new();
    for before in changes.parents_before.iter().rev() {
        let now = read_subtree_control(&before.cgroup).unwrap_or_default();
        let children = child_cgroups(&before.cgroup).unwrap_or_default();
        match put_back(before, &now, &children, systemd) {
            Ok(list) if list.is_empty() => {}
            Ok(list) => {
                let file = before.cgroup.join("cgroup.subtree_control");
                let (mut done, mut busy) = (Vec::new(), Vec::new());
                // Reverse order: a controller another depends on (cpuset before cpu…) goes last.
                for c in list.iter().rev() {
                    match std::fs::write(&file, format!("-{c}")) {
                        Ok(()) => done.push(c.clone()),
                        Err(e) => busy.push(format!("{c} ({e})")),
                    }
                }
                let mut line = format!("{}: ", file.display());
                if !done.is_empty() {
                    line.push_str(&format!("put back (disabled {})", done.join(" ")));
                }
                if !busy.is_empty() {
                    line.push_str(&format!(
                        "{}left enabled: {}",
                        if done.is_empty() { "" } else { "; " },
                        busy.join(", ")
                    ));
                }
                notes.push(line);
            }
            Err(why) => notes.push(why),
        }
    }
    notes
}

/// One `+controller` written into a `cgroup.subtree_control`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnabledController {
    /// The cgroup directory whose `cgroup.subtree_control` got the write.
    pub cgroup: std::path::PathBuf,
    /// The controller.
    pub controller: String,
}

/// The host line's cgroup part: `v1 (kubelet failCgroupV1: false)` or `v2, controllers: …`.
pub fn cgroup_line(v1: bool, facts: Option<&V2Facts>, plan: Option<&V2Plan>) -> String {
    if v1 {
        return "v1 (kubelet failCgroupV1: false)".into();
    }
    let Some(f) = facts else {
        return "v2".into();
    };
    let how = match plan {
        Some(V2Plan::Delegate {
            by_systemd,
            by_hand,
            ..
        }) => format!(
            "; kubelet's controllers from systemd unit (Delegate=yes): {}{}",
            by_systemd.join(" "),
            if by_hand.is_empty() {
                String::new()
            } else {
                format!(", by hand where missing: {}", by_hand.join(" "))
            }
        ),
        Some(V2Plan::Enable { enable, .. }) if enable.is_empty() => {
            "; kubelet's controllers already enabled in the root".into()
        }
        Some(V2Plan::Enable { enable, .. }) => {
            format!("; enabling in the root: {}", enable.join(" "))
        }
        Some(V2Plan::Refuse(_)) => "; cannot give kubelet its controllers".into(),
        None => String::new(),
    };
    format!(
        "v2, controllers: {} (root's subtree_control: {}){how}",
        f.controllers.join(" "),
        f.subtree_control.join(" ")
    )
}

/// Writes `+controller` into `<cgroup>/cgroup.subtree_control` unless it is there; records it.
fn enable_in(
    cgroup: &std::path::Path,
    controller: &str,
    done: &mut Vec<EnabledController>,
) -> Result<()> {
    let file = cgroup.join("cgroup.subtree_control");
    let now =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    if words(&now).iter().any(|c| c == controller) {
        return Ok(());
    }
    std::fs::write(&file, format!("+{controller}")).with_context(|| {
        format!(
            "enabling the {controller} controller: writing +{controller} to {}",
            file.display()
        )
    })?;
    done.push(EnabledController {
        cgroup: cgroup.to_path_buf(),
        controller: controller.to_string(),
    });
    Ok(())
}

/// Runs `systemctl show -p PROP --value UNIT`.
fn unit_property(unit: &str, prop: &str) -> Result<String> {
    let mut cmd = std::process::Command::new("systemctl");
    cmd.args(["show", "-p", prop, "--value", unit]);
    Ok(crate::command::run_unchecked(cmd)?
        .text()
        .trim()
        .to_string())
}

/// Whether unit `unit` is loaded (`LoadState` other than `not-found`).
pub fn unit_exists(unit: &str) -> Result<bool> {
    Ok(unit_property(unit, "LoadState")? != "not-found")
}

/// Applies a v2 plan before any daemon starts: starts the delegated unit (moving its one
/// process, `sleep infinity`, into `<unit>/holder` so the unit's cgroup may enable controllers)
/// and writes what must be written by hand; or writes the missing controllers into the root.
/// Every change is put into `changes` as it is made (the caller saves the record after each).
pub fn apply_v2(
    name: &str,
    plan: &V2Plan,
    changes: &mut CgroupChanges,
    save: &mut dyn FnMut(&CgroupChanges) -> Result<()>,
) -> Result<()> {
    let root = std::path::Path::new(CGROUP2_MOUNT);
    changes.parents_before = vec![ParentBefore::read(root)?];
    if let V2Plan::Delegate { .. } = plan {
        changes
            .parents_before
            .push(ParentBefore::read(&root.join(DELEGATE_SLICE))?);
    }
    save(changes)?;
    match plan {
        V2Plan::Refuse(why) => bail!("{why}"),
        V2Plan::Enable { enable, .. } => {
            changes.plan = "enable".into();
            for c in enable {
                let r = enable_in(root, c, &mut changes.enabled_by_hand);
                save(changes)?;
                r?;
            }
            Ok(())
        }
        V2Plan::Delegate {
            needed, by_hand, ..
        } => {
            changes.plan = "delegate".into();
            let unit_dir = start_delegate_unit(name, root, changes, save)?;
            // What systemd did not enable along the path (hugetlb always): by hand, top down.
            for c in by_hand {
                for a in [root.to_path_buf(), root.join(DELEGATE_SLICE)] {
                    let r = enable_in(&a, c, &mut changes.enabled_by_hand);
                    save(changes)?;
                    r?;
                }
            }
            give_unit_subtree(&unit_dir, needed, changes)
        }
    }
}

/// The delegate plan's first step: starts the transient unit `kca-<name>` (Delegate=yes) under
/// [`DELEGATE_SLICE`], recording its name, invocation and cgroup as it goes, checks its cgroup
/// is the expected one, and moves its process into `<unit>/holder`. Returns the unit's cgroup
/// directory.
///
/// Errors: a unit of that name exists already (left alone), systemd-run fails, or systemd put the
/// unit elsewhere.
fn start_delegate_unit(
    name: &str,
    root: &Path,
    changes: &mut CgroupChanges,
    save: &mut dyn FnMut(&CgroupChanges) -> Result<()>,
) -> Result<PathBuf> {
    let unit = delegate_unit(name);
    if unit_exists(&unit)? {
        bail!(
            "the systemd unit {unit} exists already and no record of this cluster names it: left alone; if it is a leftover of this checkout, `systemctl stop {unit}` and run `up` again"
        );
    }
    changes.unit = Some(unit.clone());
    save(changes)?;
    let mut cmd = std::process::Command::new("systemd-run");
    cmd.args([
        "--quiet",
        "--collect",
        &format!("--unit={unit}"),
        &format!("--slice={DELEGATE_SLICE}"),
        "--property=Delegate=yes",
        &format!("--description=kca-webhook-lab cluster {name}: kubelet's delegated cgroup root"),
        "--",
        "sleep",
        "infinity",
    ]);
    crate::command::run(cmd)
        .with_context(|| format!("starting the transient unit {unit} (Delegate=yes)"))?;
    changes.unit_invocation = Some(unit_property(&unit, "InvocationID")?);
    let cg = unit_property(&unit, "ControlGroup")?;
    let expected = format!("/{DELEGATE_SLICE}/{unit}");
    let unit_dir = root.join(cg.trim_start_matches('/'));
    changes.unit_cgroup = Some(unit_dir.clone());
    save(changes)?;
    if cg != expected {
        bail!("systemd put {unit} in cgroup {cg:?}, not {expected}");
    }
    // The unit's process leaves the unit's own cgroup for a leaf, so the unit's cgroup
    // may give its children controllers.
    let holder = unit_dir.join("holder");
    std::fs::create_dir_all(&holder).with_context(|| format!("creating {}", holder.display()))?;
    let procs = std::fs::read_to_string(unit_dir.join("cgroup.procs"))
        .with_context(|| format!("reading {}/cgroup.procs", unit_dir.display()))?;
    for pid in procs.split_whitespace() {
        std::fs::write(holder.join("cgroup.procs"), pid)
            .with_context(|| format!("moving pid {pid} of {unit} into {}", holder.display()))?;
    }
    Ok(unit_dir)
}

/// The delegate plan's last step: once the unit's cgroup `unit_dir` has every `needed`
/// controller, enables them all for its subtree (ours: kubelet's cgroup root lives there).
///
/// Errors: a controller still missing (naming them and what was written by hand), or the write.
fn give_unit_subtree(unit_dir: &Path, needed: &[String], changes: &CgroupChanges) -> Result<()> {
    let have = words(
        &std::fs::read_to_string(unit_dir.join("cgroup.controllers"))
            .with_context(|| format!("reading {}/cgroup.controllers", unit_dir.display()))?,
    );
    let missing: Vec<&String> = needed.iter().filter(|c| !have.contains(c)).collect();
    if !missing.is_empty() {
        bail!(
            "the delegated unit {}'s cgroup {} lacks the controllers {:?} after systemd's delegation and the writes by hand ({:?}): systemd did not enable them along the path",
            changes.unit.as_deref().unwrap_or_default(),
            unit_dir.display(),
            missing,
            changes.enabled_by_hand
        );
    }
    let file = unit_dir.join("cgroup.subtree_control");
    let plus: Vec<String> = needed.iter().map(|c| format!("+{c}")).collect();
    std::fs::write(&file, plus.join(" "))
        .with_context(|| format!("writing {} to {}", plus.join(" "), file.display()))?;
    Ok(())
}

/// At `down`: stops the delegated unit when it is still the invocation `up` started (systemd
/// then removes its cgroup); returns what it did, or None when there is nothing to stop.
pub fn stop_delegate_unit(changes: &CgroupChanges) -> Result<Option<String>> {
    let Some(unit) = changes.unit.as_deref() else {
        return Ok(None);
    };
    if !unit_exists(unit)? {
        return Ok(None);
    }
    let now = unit_property(unit, "InvocationID")?;
    if changes.unit_invocation.as_deref() != Some(now.as_str()) {
        bail!(
            "systemd unit {unit} runs as invocation {now:?}, not {:?} that `up` started: left alone",
            changes.unit_invocation
        );
    }
    let mut cmd = std::process::Command::new("systemctl");
    cmd.args(["stop", unit]);
    crate::command::run(cmd).with_context(|| format!("stopping {unit}"))?;
    Ok(Some(format!(
        "stopped systemd unit {unit} (its cgroup went with it)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(controllers: &str, subtree: &str, systemd: bool, busy: bool) -> V2Facts {
        V2Facts {
            controllers: words(controllers),
            subtree_control: words(subtree),
            systemd,
            namespace_root_busy: busy,
        }
    }

    /// Debian 12's stock root (research trial): systemd enables only `memory pids`.
    const DEBIAN12: &str = "cpuset cpu io memory hugetlb pids rdma misc";

    #[test]
    fn without_systemd_the_root_gets_the_missing_kubelet_controllers() {
        assert_eq!(
            plan_v2(&facts(DEBIAN12, "memory pids", false, false)),
            V2Plan::Enable {
                needed: words("cpu cpuset memory hugetlb pids"),
                enable: words("cpu cpuset hugetlb"),
            }
        );
        // Already there (a cgroupfs runtime ran before): nothing to write.
        assert_eq!(
            plan_v2(&facts(DEBIAN12, DEBIAN12, false, false)),
            V2Plan::Enable {
                needed: words("cpu cpuset memory hugetlb pids"),
                enable: vec![],
            }
        );
    }

    #[test]
    fn only_controllers_the_kernel_has_are_needed() {
        // A kernel without hugetlb (CONFIG_CGROUP_HUGETLB unset) and without cpuset.
        assert_eq!(
            plan_v2(&facts("cpu io memory pids", "memory pids", false, false)),
            V2Plan::Enable {
                needed: words("cpu memory pids"),
                enable: words("cpu"),
            }
        );
    }

    #[test]
    fn with_systemd_a_delegated_unit_and_hugetlb_by_hand() {
        assert_eq!(
            plan_v2(&facts(DEBIAN12, "memory pids", true, false)),
            V2Plan::Delegate {
                needed: words("cpu cpuset memory hugetlb pids"),
                by_systemd: words("cpu cpuset memory pids"),
                by_hand: words("hugetlb"),
            }
        );
        assert_eq!(
            cgroup_root_for(
                "labb",
                Some(&plan_v2(&facts(DEBIAN12, "memory pids", true, false)))
            ),
            "/system.slice/kca-node-labb.service/node"
        );
    }

    #[test]
    fn a_busy_namespace_root_is_refused_when_something_must_be_written() {
        match plan_v2(&facts(DEBIAN12, "", false, true)) {
            V2Plan::Refuse(why) => {
                assert!(why.contains("EBUSY"), "{why}");
                assert!(why.contains("cpu cpuset memory hugetlb pids"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        // systemd inside such a container cannot delegate either.
        assert!(matches!(
            plan_v2(&facts(DEBIAN12, "", true, true)),
            V2Plan::Refuse(_)
        ));
        // Nothing to write: no refusal.
        assert_eq!(
            plan_v2(&facts("cpu memory pids", "cpu memory pids", false, true)),
            V2Plan::Enable {
                needed: words("cpu memory pids"),
                enable: vec![],
            }
        );
    }

    fn parent(subtree: &str, children: &str) -> ParentBefore {
        ParentBefore {
            cgroup: "/sys/fs/cgroup".into(),
            subtree_control: words(subtree),
            children: words(children),
        }
    }

    #[test]
    fn down_disables_what_appeared_since_up_unless_a_new_cgroup_may_use_it() {
        let before = parent("memory pids", "init.scope system.slice user.slice");
        // No systemd: what we and kubelet enabled goes.
        assert_eq!(
            put_back(
                &before,
                &words("cpuset cpu memory hugetlb pids rdma misc"),
                &words("init.scope system.slice user.slice"),
                false
            ),
            Ok(words("cpuset cpu hugetlb rdma misc"))
        );
        // systemd disables its own when the unit stops; hugetlb, rdma, misc are ours to put back.
        assert_eq!(
            put_back(
                &before,
                &words("cpuset cpu io memory hugetlb pids rdma misc"),
                &words("init.scope system.slice user.slice"),
                true
            ),
            Ok(words("hugetlb rdma misc"))
        );
        // A cgroup that appeared meanwhile (another runtime's) may rely on them: left alone.
        let r = put_back(
            &before,
            &words("memory hugetlb pids"),
            &words("docker init.scope system.slice user.slice"),
            false,
        );
        assert!(
            r.as_ref()
                .is_err_and(|e| e.contains("docker") && e.contains("hugetlb")),
            "{r:?}"
        );
        // Nothing new enabled: nothing to do, whatever the children.
        assert_eq!(
            put_back(&before, &words("memory pids"), &words("docker"), false),
            Ok(vec![])
        );
    }

    #[test]
    fn the_host_line_names_the_controllers_and_what_happens() {
        let f = facts(DEBIAN12, "memory pids", false, false);
        let line = cgroup_line(false, Some(&f), Some(&plan_v2(&f)));
        assert_eq!(
            line,
            "v2, controllers: cpuset cpu io memory hugetlb pids rdma misc (root's subtree_control: memory pids); enabling in the root: cpu cpuset hugetlb"
        );
        assert_eq!(
            cgroup_line(true, None, None),
            "v1 (kubelet failCgroupV1: false)"
        );
        assert_eq!(cgroup_root_for("x", None), "/kca-x");
    }
}
