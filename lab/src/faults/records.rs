//! The attempt's records and their one writer and reader, shared by both faults: JSON files
//! written atomically (temporary file in the same directory, fsync, rename, fsync of the
//! directory) and read bounded ([`crate::files::RECORD_BOUND`]) without following a symlink
//! (relative to the attempt directory's fd, [`crate::files::read_regular_in`]); the helper's
//! best-effort log ([`HealerLog`]); and the one clock format (RFC 3339 UTC, ms).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::Serialize;

use crate::error::LabError;

/// Now, RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Writes `value` as pretty JSON to `path` atomically (temporary file in the same directory,
/// fsync, rename, directory fsync), so a reader never sees half a file.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), LabError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| LabError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    let mut tmp = tempfile::Builder::new()
        .prefix(".fault-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(LabError::io(dir))?;
    tmp.write_all(&bytes).map_err(LabError::io(tmp.path()))?;
    tmp.as_file().sync_all().map_err(LabError::io(tmp.path()))?;
    tmp.persist(path).map_err(|e| LabError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Reads one JSON record of an attempt (a plan, ledger, healer record, `heal.json`): a regular
/// file of at most [`crate::files::RECORD_BOUND`] bytes, opened relative to its directory without
/// following a symlink ([`crate::files::read_regular_in`]).
///
/// Errors: [`LabError::Io`] naming the file (missing, not a regular file, too large, not JSON of
/// the expected shape).
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, LabError> {
    let (dir, name) = match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(d), Some(n)) => (
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            },
            n,
        ),
        _ => {
            return Err(LabError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
            });
        }
    };
    let bytes = crate::files::read_regular_in(dir, name, crate::files::RECORD_BOUND)
        .map_err(LabError::io(path))?;
    serde_json::from_slice(&bytes).map_err(|e| LabError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("parsing: {e}")),
    })
}

/// A healer's log: lines appended to a file opened without following symlinks. Every write is
/// best-effort (a full disk or a closed file never stops a heal; nothing is printed on stdio).
#[derive(Debug)]
pub struct HealerLog(Option<File>);

impl HealerLog {
    /// Opens (creates) `path` for appending; on failure the log is silent.
    pub fn open(path: &Path) -> HealerLog {
        HealerLog(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(path)
                .ok(),
        )
    }

    /// Appends `<now> <who>[<pid>]: msg`, ignoring any error.
    pub fn line(&mut self, who: &str, msg: impl AsRef<str>) {
        if let Some(f) = self.0.as_mut() {
            let _ = writeln!(
                f,
                "{} {who}[{}]: {}",
                now_rfc3339(),
                std::process::id(),
                msg.as_ref()
            );
        }
    }
}
