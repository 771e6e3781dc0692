//! How the tool reads files and which directories it trusts. The tool runs as root on a lab VM,
//! so a file it reads or a directory it writes below must not be something another user chose.
//!
//! - **Bounded reads** ([`read_regular`], [`read_regular_in`]): only a regular file is read (never
//!   a FIFO, a device, a socket or a directory: the file is opened with `O_NONBLOCK`, so opening a
//!   FIFO cannot hang, and `fstat` of the open file decides), and at most a stated number of bytes
//!   ([`JSON_BOUND`] for inputs and evidence, [`RECORD_BOUND`] for fault records, [`PROC_BOUND`]
//!   for `/proc` files). Anything else is refused with an [`std::io::Error`] of kind
//!   `InvalidInput` saying what the file is; callers name the file.
//!   A log's tail, the last bytes up to a bound, of a file opened the same way: [`read_tail_in`].
//! - **Trusted directories** ([`check_trusted_dir`]): a directory the tool writes below (the work
//!   directory and its `faults/`, `evidence/`, `diagnostics/`) must be a real directory (not a
//!   symlink), owned by the effective user, and writable by nobody else (no group/other write
//!   bit); otherwise another user could plant, swap or delete what the tool reads and writes there.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

/// Bound on an input or evidence JSON file (and `digest`'s file): 8 MiB. The largest evidence file
/// recorded so far is 0.5 MB (`lab/tests/fixtures/recorded/a-*/evidence/06.json`, 462 078 bytes).
pub const JSON_BOUND: u64 = 8 << 20;
/// Bound on one fault record (`plan.json`, `ledger.json`, `healer.json`, `heal.json`, a lock
/// file): 1 MiB (they are a few KiB; a scale ledger holds one API answer or two).
pub const RECORD_BOUND: u64 = 1 << 20;
/// Bound on a `/proc` file the tool reads (`cgroup`, `cmdline`, `stat`): 64 KiB.
pub const PROC_BOUND: u64 = 64 << 10;

fn refused(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, what)
}

/// What kind of file `meta` describes, in words (for refusals).
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symlink"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Reads the open `file` if it is a regular file of at most `bound` bytes (also when it grows
/// while being read).
fn read_open(file: File, bound: u64) -> std::io::Result<Vec<u8>> {
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(refused(format!(
            "{}, not a regular file: only regular files are read",
            kind_of(&meta)
        )));
    }
    if meta.len() > bound {
        return Err(refused(format!(
            "{} bytes, more than the {bound} bytes such a file may have",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(bound + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > bound {
        return Err(refused(format!(
            "grew past the {bound} bytes such a file may have while it was read"
        )));
    }
    Ok(bytes)
}

/// Reads the regular file at `path` (symlinks followed: a student may name any file), at most
/// `bound` bytes.
///
/// Errors: the open's own error (e.g. `NotFound`), or `InvalidInput` for a FIFO, device, socket
/// or directory, or a file above `bound`.
pub fn read_regular(path: &Path, bound: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)?;
    read_open(file, bound)
}

/// Bound on the part of the cluster's audit log one act reads (from the offset it noted when it
/// began): 256 MiB. An act's window holds a few MB of events on the embedded cluster.
pub const AUDIT_LOG_BOUND: u64 = 256 << 20;

/// Reads the regular file at `path` from byte `offset` to its end, at most `bound` bytes (the
/// cluster's audit log, which grows while the lab runs: what a reader sees is what was there when
/// it looked). A file shorter than `offset` (rotated) is read from its start.
///
/// Errors: as [`read_regular`]; `InvalidInput` when more than `bound` bytes follow `offset`.
pub fn read_regular_from(path: &Path, offset: u64, bound: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(refused(format!(
            "{}, not a regular file: only regular files are read",
            kind_of(&meta)
        )));
    }
    let from = if meta.len() < offset { 0 } else { offset };
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.take(bound + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > bound {
        return Err(refused(format!(
            "more than {bound} bytes after offset {from}, more than one act's window may have"
        )));
    }
    Ok(bytes)
}

/// Reads the regular file `name` inside the directory `dir` without following a symlink at
/// either: `dir` is opened with `O_DIRECTORY | O_NOFOLLOW` and the file relative to that
/// directory fd with `O_NOFOLLOW | O_NONBLOCK`, at most `bound` bytes. For files in a directory
/// checked with [`check_trusted_dir`] (fault records).
///
/// Errors: as [`read_regular`]; `ELOOP` for a symlink.
pub fn read_regular_in(dir: &Path, name: &str, bound: u64) -> std::io::Result<Vec<u8>> {
    read_open(open_in(dir, name)?, bound)
}

/// Opens `name` inside `dir` for reading, following a symlink at neither (`O_DIRECTORY |
/// O_NOFOLLOW` for `dir`, then `O_NOFOLLOW | O_NONBLOCK` relative to its fd).
fn open_in(dir: &Path, name: &str) -> std::io::Result<File> {
    // An open directory's own `/proc/self/fd/N` ([`TrustedDir::fd_path`]) is a link to follow:
    // it names the directory this process opened, not one someone else chose.
    let own_fd = fd_prefix(dir).is_some_and(|(_, rest)| rest.as_os_str().is_empty());
    let nofollow = if own_fd {
        OFlags::empty()
    } else {
        OFlags::NOFOLLOW
    };
    let dirfd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | nofollow | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let fd = rustix::fs::openat(
        &dirfd,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    Ok(File::from(fd))
}

/// Reads the last `bound` bytes (all of it when smaller) of the regular file `name` inside `dir`,
/// opened as [`read_regular_in`] opens it: for a log of any length of which only the tail is
/// wanted (the diagnostics' daemon logs).
///
/// Errors: as [`read_regular_in`]; `ELOOP` for a symlink, `InvalidInput` for a FIFO, device,
/// socket or directory.
pub fn read_tail_in(dir: &Path, name: &str, bound: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut file = open_in(dir, name)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(refused(format!(
            "{}, not a regular file: only regular files are read",
            kind_of(&meta)
        )));
    }
    file.seek(SeekFrom::Start(meta.len().saturating_sub(bound)))?;
    let mut bytes = Vec::new();
    file.take(bound).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Why the directory at `path` cannot be trusted by this process, or `None` when it can (or does
/// not exist: nothing below it to trust yet). Trusted: a real directory (a symlink is refused,
/// not followed), owned by the effective user, without the group or other write bit.
pub fn untrusted_dir(path: &Path) -> std::io::Result<Option<String>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let euid = rustix::process::geteuid().as_raw();
    Ok(if meta.file_type().is_symlink() {
        Some("it is a symlink (a directory is used only where it is, never through a link)".into())
    } else if !meta.is_dir() {
        Some(format!("it is {}, not a directory", kind_of(&meta)))
    } else if meta.uid() != euid {
        Some(format!(
            "it is owned by uid {}, not by this process's effective uid {euid}",
            meta.uid()
        ))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!(
            "it is writable by group or others (mode {:o}); `chmod go-w` it",
            meta.mode() & 0o7777
        ))
    } else {
        None
    })
}

/// Requires the directory at `path` to be trusted ([`untrusted_dir`]); `Err` says why not
/// (`path` not included).
pub fn check_trusted_dir(path: &Path) -> Result<(), String> {
    match untrusted_dir(path) {
        Ok(None) => Ok(()),
        Ok(Some(why)) => Err(why),
        Err(e) => Err(format!("it cannot be examined: {e}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Directories opened once: the walk from `/` and the writes relative to the open directory.

/// Why a directory was not opened by [`TrustedDir::open`].
#[derive(Debug)]
pub enum DirRefused {
    /// A component does not exist (and was not to be created): the path up to it.
    Missing(PathBuf),
    /// A component cannot be trusted: the path up to it and why.
    Untrusted {
        /// The path up to the refused component.
        path: PathBuf,
        /// Why, in words (e.g. `it is owned by uid 65534, …`).
        why: String,
    },
    /// A system call failed on the path up to a component.
    Io {
        /// The path up to that component.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl std::fmt::Display for DirRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DirRefused::Missing(p) => write!(f, "{}: no such directory", p.display()),
            DirRefused::Untrusted { path, why } => write!(f, "{}: {why}", path.display()),
            DirRefused::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

/// Who may own the directory a [`TrustedDir`] opens (its ancestors: always root or the effective
/// user, not writable by others unless sticky and root's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The effective user only, not group/other-writable: the work directory, its subdirectories,
    /// the target locks' directory (what root acts on later).
    Euid,
    /// Where a page is written for someone to read (`report --out DIR`): as [`Owner::Euid`], or
    /// the user `sudo` ran the tool for (`$SUDO_UID`, when root; its ancestors may be that user's
    /// too), or a sticky directory of root's (`/tmp`). Nothing in it is read back or acted on, and
    /// the write is by descriptor, so its owner can only move the page, never redirect it.
    Output,
}

/// A directory opened once by walking from `/` component by component with `openat(O_DIRECTORY |
/// O_NOFOLLOW)` ([`TrustedDir::open`]); every later read, check and write is relative to its fd,
/// so renaming or replacing any path component afterwards changes nothing the tool touches.
///
/// The rule (docs/faults.md, "Ownership"): no component is a symlink; every ancestor is owned by
/// root or the effective user and is not writable by group or others, unless it is sticky and
/// root's (`/tmp`, `/run/lock`: there the kernel lets only an entry's owner rename or remove it,
/// so the next component, itself root's or ours, stays where it is); the directory itself passes
/// its [`Owner`] check.
#[derive(Debug)]
pub struct TrustedDir {
    fd: rustix::fd::OwnedFd,
    path: PathBuf,
}

/// The effective uid.
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn stat_kind(st: &rustix::fs::Stat) -> &'static str {
    use rustix::fs::FileType;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Socket => "a socket",
        FileType::Unknown => "not a regular file",
    }
}

/// The user `sudo` ran the tool for (`$SUDO_UID`), when the tool runs as root.
fn sudo_uid() -> Option<u32> {
    std::env::var("SUDO_UID")
        .ok()
        .and_then(|u| u.parse::<u32>().ok())
        .filter(|_| euid() == 0)
}

/// Why an ancestor directory `st` cannot be trusted for `owner` (`None`: it can).
fn untrusted_ancestor(st: &rustix::fs::Stat, owner: Owner) -> Option<String> {
    let (uid, mode) = (st.st_uid, st.st_mode & 0o7777);
    let sticky = mode & 0o1000 != 0;
    let invoker = owner == Owner::Output && Some(uid) == sudo_uid();
    if uid != 0 && uid != euid() && !invoker {
        Some(format!(
            "a directory on the way is owned by uid {uid}, not by root or this process's effective uid {}: its owner could move what is below it",
            euid()
        ))
    } else if mode & 0o022 != 0 && !(sticky && uid == 0) {
        Some(format!(
            "a directory on the way is writable by group or others (mode {mode:o}) and not a sticky directory of root's"
        ))
    } else {
        None
    }
}

/// Why the directory itself (`st`) cannot be trusted for `owner` (`None`: it can).
fn untrusted_last(st: &rustix::fs::Stat, owner: Owner) -> Option<String> {
    let (uid, mode) = (st.st_uid, st.st_mode & 0o7777);
    let owner_ok = uid == euid() || (owner == Owner::Output && Some(uid) == sudo_uid());
    let sticky_root = owner == Owner::Output && uid == 0 && mode & 0o1000 != 0;
    if sticky_root {
        None
    } else if !owner_ok {
        Some(format!(
            "it is owned by uid {uid}, not by this process's effective uid {}",
            euid()
        ))
    } else if mode & 0o022 != 0 {
        Some(format!(
            "it is writable by group or others (mode {mode:o}); `chmod go-w` it"
        ))
    } else {
        None
    }
}

fn io_at(path: &Path) -> impl FnOnce(rustix::io::Errno) -> DirRefused + '_ {
    move |e| DirRefused::Io {
        path: path.to_path_buf(),
        source: e.into(),
    }
}

/// `O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC`: how every directory is opened.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Opens the component `name` of the directory `at` (shown as `here`), creating it with `create`
/// (the final mode, by `mkdirat`) when missing.
fn open_component(
    at: &rustix::fd::OwnedFd,
    name: &std::ffi::OsStr,
    here: &Path,
    create: Option<u32>,
) -> Result<rustix::fd::OwnedFd, DirRefused> {
    use rustix::io::Errno;
    for _ in 0..2 {
        match rustix::fs::openat(at, name, dir_flags(), rustix::fs::Mode::empty()) {
            Ok(fd) => return Ok(fd),
            Err(Errno::NOENT) => match create {
                Some(mode) => {
                    match rustix::fs::mkdirat(at, name, rustix::fs::Mode::from_raw_mode(mode)) {
                        Ok(()) | Err(Errno::EXIST) => continue,
                        Err(e) => return Err(io_at(here)(e)),
                    }
                }
                None => return Err(DirRefused::Missing(here.to_path_buf())),
            },
            Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
                let st = rustix::fs::statat(at, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(io_at(here))?;
                let why = if stat_kind(&st) == "a symlink" {
                    "it is a symlink (a directory is used only where it is, never through a link)"
                        .to_owned()
                } else {
                    format!("it is {}, not a directory", stat_kind(&st))
                };
                return Err(DirRefused::Untrusted {
                    path: here.to_path_buf(),
                    why,
                });
            }
            Err(e) => return Err(io_at(here)(e)),
        }
    }
    Err(DirRefused::Missing(here.to_path_buf()))
}

/// `/proc/self/fd/N` and the rest of `path`, when `path` is below an open directory's
/// [`TrustedDir::fd_path`].
fn fd_prefix(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let rest = path.strip_prefix("/proc/self/fd").ok()?;
    let mut parts = rest.components();
    let n = parts.next()?.as_os_str().to_str()?;
    n.parse::<u32>().ok()?;
    Some((
        Path::new("/proc/self/fd").join(n),
        parts.as_path().to_path_buf(),
    ))
}

impl TrustedDir {
    /// Opens the directory at `path` (made absolute against the current directory) by the walk
    /// of [`TrustedDir`]'s rule, creating missing components with `create` (the final mode, by
    /// `mkdirat`; the umask may only take bits away) when it is `Some`.
    ///
    /// Errors: [`DirRefused::Missing`] (nothing created), [`DirRefused::Untrusted`] naming the
    /// component refused and why, [`DirRefused::Io`].
    pub fn open(path: &Path, create: Option<u32>, owner: Owner) -> Result<TrustedDir, DirRefused> {
        use std::path::Component;
        let abs = std::path::absolute(path).map_err(|source| DirRefused::Io {
            path: path.to_path_buf(),
            source,
        })?;
        // A path below an open directory's `/proc/self/fd/N` ([`TrustedDir::fd_path`]) is walked
        // from that fd (what its own walk proved), not from `/`.
        let (start, rest) = match fd_prefix(&abs) {
            Some((fd_dir, rest)) => (fd_dir, rest),
            None => (PathBuf::from("/"), abs.clone()),
        };
        let mut here = start.clone();
        let mut fd = rustix::fs::open(
            &start,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(io_at(&here))?;
        let names: Vec<&std::ffi::OsStr> = rest
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                Component::ParentDir => Some(std::ffi::OsStr::new("..")),
                _ => None,
            })
            .collect();
        let st = rustix::fs::fstat(&fd).map_err(io_at(&here))?;
        let last_check = |st: &rustix::fs::Stat, here: &Path| match untrusted_last(st, owner) {
            Some(why) => Err(DirRefused::Untrusted {
                path: here.to_path_buf(),
                why,
            }),
            None => Ok(()),
        };
        if names.is_empty() {
            last_check(&st, &here)?;
        } else if let Some(why) = untrusted_ancestor(&st, owner) {
            return Err(DirRefused::Untrusted { path: here, why });
        }
        for (i, name) in names.iter().enumerate() {
            if *name == ".." {
                here.pop();
            } else {
                here.push(name);
            }
            fd = open_component(&fd, name, &here, create)?;
            let st = rustix::fs::fstat(&fd).map_err(io_at(&here))?;
            if i + 1 == names.len() {
                last_check(&st, &here)?;
            } else if let Some(why) = untrusted_ancestor(&st, owner) {
                return Err(DirRefused::Untrusted { path: here, why });
            }
        }
        Ok(TrustedDir { fd, path: abs })
    }

    /// The path it was opened by (for messages; never resolved again).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `/proc/self/fd/N` of the open directory: a path the kernel resolves from this fd, whatever
    /// has been renamed since, for the library calls that take a path (valid in this process
    /// only, while the `TrustedDir` lives).
    pub fn fd_path(&self) -> PathBuf {
        use rustix::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// The subdirectory `name` (one component), opened without following a link and checked as
    /// the directory itself ([`Owner::Euid`]); created with `create` when missing and `Some`.
    /// `Ok(None)`: missing and not to be created.
    ///
    /// Errors: [`DirRefused::Untrusted`], [`DirRefused::Io`].
    pub fn subdir(
        &self,
        name: &str,
        create: Option<u32>,
    ) -> Result<Option<TrustedDir>, DirRefused> {
        let here = self.path.join(name);
        let fd = match open_component(&self.fd, std::ffi::OsStr::new(name), &here, create) {
            Ok(fd) => fd,
            Err(DirRefused::Missing(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let st = rustix::fs::fstat(&fd).map_err(io_at(&here))?;
        if let Some(why) = untrusted_last(&st, Owner::Euid) {
            return Err(DirRefused::Untrusted { path: here, why });
        }
        Ok(Some(TrustedDir { fd, path: here }))
    }

    /// Reads the regular file `name` in this directory (`O_NOFOLLOW | O_NONBLOCK`), at most
    /// `bound` bytes ([`read_regular`]'s refusals).
    pub fn read(&self, name: &str, bound: u64) -> std::io::Result<Vec<u8>> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        read_open(File::from(fd), bound)
    }

    /// Whether an entry `name` exists in this directory (not following a link).
    pub fn exists(&self, name: &str) -> bool {
        rustix::fs::statat(&self.fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// Removes the file `name` of this directory (`unlinkat`); a missing one is not an error.
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, rustix::fs::AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The open directory's fd.
    pub fn fd(&self) -> rustix::fd::BorrowedFd<'_> {
        use rustix::fd::AsFd;
        self.fd.as_fd()
    }

    /// Writes `bytes` as the file `name` of this directory, atomically and relative to its fd: an
    /// unnamed file (`O_TMPFILE`, created with the final `mode`; a file system without it gets a
    /// `O_CREAT | O_EXCL | O_NOFOLLOW` temporary of that mode) is written and `fsync`ed, then
    /// given its name — `linkat` when `replace` is false (an existing `name` is
    /// `AlreadyExists`, never replaced), else `linkat` to a fresh temporary name and `renameat`
    /// over `name` — and the directory is `fsync`ed. Nothing is named until the content is
    /// whole, so a signal mid-write leaves no file behind (only between the `linkat` and the
    /// `renameat`, microseconds, a whole temporary `.NAME.PID.N.tmp`).
    pub fn write_file(
        &self,
        name: &str,
        bytes: &[u8],
        mode: u32,
        replace: bool,
    ) -> std::io::Result<()> {
        use rustix::fs::{AtFlags, Mode};
        use rustix::io::Errno;
        use std::io::Write;
        let mode = Mode::from_raw_mode(mode);
        let (file, named) = match rustix::fs::openat(
            &self.fd,
            ".",
            OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC,
            mode,
        ) {
            Ok(fd) => (File::from(fd), None),
            Err(Errno::OPNOTSUPP) | Err(Errno::ISDIR) | Err(Errno::INVAL) => {
                let tmp = self.temp_name(name, 0);
                let fd = rustix::fs::openat(
                    &self.fd,
                    &tmp,
                    OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::WRONLY
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    mode,
                )?;
                (File::from(fd), Some(tmp))
            }
            Err(e) => return Err(e.into()),
        };
        let written = (&file).write_all(bytes).and_then(|()| file.sync_all());
        let result = written.and_then(|()| self.name_file(&file, named.as_deref(), name, replace));
        if let Some(tmp) = &named {
            let _ = rustix::fs::unlinkat(&self.fd, tmp, AtFlags::empty());
        }
        result?;
        rustix::fs::fsync(&self.fd)?;
        Ok(())
    }

    /// Opens the directory holding the file at `path` ([`TrustedDir::open`], [`Owner::Euid`], not
    /// created) and returns it with the file's name: for writing one file by path with
    /// [`TrustedDir::write_file`].
    ///
    /// Errors: as [`TrustedDir::open`]; [`DirRefused::Io`] for a path without a file name.
    pub fn parent_of(path: &Path) -> Result<(TrustedDir, String), DirRefused> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| DirRefused::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
            })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Ok((TrustedDir::open(dir, None, Owner::Euid)?, name.to_owned()))
    }

    fn temp_name(&self, name: &str, n: u32) -> String {
        format!(".{name}.{}.{n}.tmp", std::process::id())
    }

    /// Gives the written `file` (unnamed, or the temporary `named`) the name `name`.
    fn name_file(
        &self,
        file: &File,
        named: Option<&str>,
        name: &str,
        replace: bool,
    ) -> std::io::Result<()> {
        use rustix::fd::AsRawFd;
        use rustix::fs::AtFlags;
        use rustix::io::Errno;
        let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
        // Links the content to `to`: the unnamed file through its /proc link, else the temporary.
        let link = |to: &str| match named {
            None => rustix::fs::linkat(
                rustix::fs::CWD,
                proc.as_str(),
                &self.fd,
                to,
                AtFlags::SYMLINK_FOLLOW,
            ),
            Some(tmp) => rustix::fs::linkat(&self.fd, tmp, &self.fd, to, AtFlags::empty()),
        };
        if !replace {
            return link(name).map_err(|e| match e {
                Errno::EXIST => std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("{name} exists already and is never replaced"),
                ),
                e => e.into(),
            });
        }
        if let Some(tmp) = named {
            return Ok(rustix::fs::renameat(&self.fd, tmp, &self.fd, name)?);
        }
        for n in 1..=16 {
            let tmp = self.temp_name(name, n);
            match link(&tmp) {
                Ok(()) => {
                    let renamed = rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name);
                    if renamed.is_err() {
                        let _ = rustix::fs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
                    }
                    return Ok(renamed?);
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("16 temporary names for {name} were taken"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_regular_file_within_the_bound_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, b"{}").unwrap();
        assert_eq!(read_regular(&p, 2).unwrap(), b"{}");
        assert_eq!(read_regular_in(dir.path(), "a.json", 2).unwrap(), b"{}");
        let e = read_regular(&p, 1).unwrap_err();
        assert!(e.to_string().contains("more than the 1 bytes"), "{e}");
    }

    #[test]
    fn a_log_is_read_from_its_offset_bounded_and_only_when_regular() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("audit.log");
        std::fs::write(&p, b"old\nnew\n").unwrap();
        assert_eq!(read_regular_from(&p, 4, 16).unwrap(), b"new\n");
        // Shorter than the offset: rotated, read from the start.
        assert_eq!(read_regular_from(&p, 100, 16).unwrap(), b"old\nnew\n");
        let e = read_regular_from(&p, 0, 4).unwrap_err();
        assert!(e.to_string().contains("more than 4 bytes"), "{e}");
        for p in [Path::new("/dev/zero"), dir.path()] {
            let e = read_regular_from(p, 0, AUDIT_LOG_BOUND).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        for (p, kind) in [
            (Path::new("/dev/zero"), "character device"),
            (fifo.as_path(), "FIFO"),
            (dir.path(), "directory"),
        ] {
            let e = read_regular(p, JSON_BOUND).unwrap_err();
            assert!(e.to_string().contains(kind), "{}: {e}", p.display());
        }
        let e = read_regular_in(dir.path(), "fifo", JSON_BOUND).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[test]
    fn a_symlink_is_not_followed_inside_a_trusted_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        assert!(read_regular_in(dir.path(), "link", 10).is_err());
        assert_eq!(read_regular(&dir.path().join("link"), 10).unwrap(), b"x");
    }

    #[test]
    fn only_a_private_real_directory_of_ours_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("w");
        assert_eq!(
            untrusted_dir(&d).unwrap(),
            None,
            "missing: nothing to distrust yet"
        );
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        check_trusted_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert!(
            check_trusted_dir(&d)
                .unwrap_err()
                .contains("writable by group")
        );
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o757)).unwrap();
        assert!(
            check_trusted_dir(&d)
                .unwrap_err()
                .contains("writable by group")
        );
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(check_trusted_dir(&link).unwrap_err().contains("symlink"));
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
            assert!(
                check_trusted_dir(&d)
                    .unwrap_err()
                    .contains("owned by uid 65534")
            );
        }
    }

    #[test]
    fn the_walk_refuses_a_link_or_another_users_ancestor_and_accepts_a_sticky_root_dir() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("a/w");
        // Missing and not created: nothing made.
        assert!(matches!(
            TrustedDir::open(&w, None, Owner::Euid),
            Err(DirRefused::Missing(_))
        ));
        assert!(!dir.path().join("a").exists());
        let d = TrustedDir::open(&w, Some(0o700), Owner::Euid).unwrap();
        let mode = std::fs::metadata(&w).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(d.subdir("evidence", None).unwrap().is_none());
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("l")).unwrap();
        match TrustedDir::open(&dir.path().join("l/w"), None, Owner::Euid) {
            Err(DirRefused::Untrusted { path, why }) => {
                assert!(why.contains("symlink") && path.ends_with("l"), "{why}")
            }
            other => panic!("through a link: {other:?}"),
        }
        // An ancestor writable by others is refused, unless it is sticky and root's.
        let a = dir.path().join("a");
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o777)).unwrap();
        match TrustedDir::open(&w, None, Owner::Euid) {
            Err(DirRefused::Untrusted { why, .. }) => assert!(why.contains("writable"), "{why}"),
            other => panic!("other-writable ancestor: {other:?}"),
        }
        if rustix::process::geteuid().is_root() {
            std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o1777)).unwrap();
            TrustedDir::open(&w, None, Owner::Euid).unwrap();
            std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::chown(&a, Some(65534), Some(65534)).unwrap();
            match TrustedDir::open(&w, None, Owner::Euid) {
                Err(DirRefused::Untrusted { why, .. }) => {
                    assert!(why.contains("owned by uid 65534"), "{why}")
                }
                other => panic!("nobody's ancestor: {other:?}"),
            }
        }
    }

    #[test]
    fn a_file_is_written_whole_with_its_mode_relative_to_the_open_dir() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("w");
        let d = TrustedDir::open(&w, Some(0o755), Owner::Euid).unwrap();
        d.write_file("a.json", b"1", 0o640, false).unwrap();
        let e = d.write_file("a.json", b"2", 0o640, false).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
        // Renamed away after the open: writes still land in the opened directory.
        std::fs::rename(&w, dir.path().join("moved")).unwrap();
        d.write_file("a.json", b"3", 0o640, true).unwrap();
        let moved = dir.path().join("moved");
        assert_eq!(std::fs::read(moved.join("a.json")).unwrap(), b"3");
        assert_eq!(
            std::fs::metadata(moved.join("a.json"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o640
        );
        let names: Vec<_> = std::fs::read_dir(&moved)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.json"], "no temporary left");
        assert!(!w.exists());
        assert_eq!(d.read("a.json", 10).unwrap(), b"3");
        // Below the fd path, too.
        let (p, name) = TrustedDir::parent_of(&d.fd_path().join("b.json")).unwrap();
        p.write_file(&name, b"4", 0o600, true).unwrap();
        assert_eq!(std::fs::read(moved.join("b.json")).unwrap(), b"4");
    }
}
