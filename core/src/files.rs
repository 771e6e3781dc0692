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
use std::path::Path;

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
    let dirfd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
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
}
