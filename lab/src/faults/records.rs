//! The attempt's records and their one writer and reader, shared by both faults: JSON files
//! written atomically relative to their directory's fd (an unnamed file, fsync, named by
//! `linkat`/`renameat`, fsync of the directory: [`write_json_atomic`]) and read bounded ([`crate::files::RECORD_BOUND`]) without following a symlink
//! (relative to the attempt directory's fd, [`crate::files::read_regular_in`]); the attempt's
//! who undid a fault ([`UndoneBy`]);
//! and the one clock format (RFC 3339 UTC, ms: [`now_rfc3339`], [`rfc3339`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// Now, RFC 3339 UTC with milliseconds: the evidence's one clock ([`crate::facts::now_rfc3339`]).
pub use crate::facts::now_rfc3339;

/// `t` as RFC 3339 UTC with milliseconds: the evidence's one format
/// ([`crate::facts::format_rfc3339`]).
pub use crate::facts::format_rfc3339 as rfc3339;

/// Who undid a fault (resumed the frozen process, restored the replicas), in both faults' records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndoneBy {
    /// The attempt's detached healer (at its deadline, on a signal, or asked by the runner).
    /// Scale ledgers written before the one vocabulary say `watcher`.
    #[serde(alias = "watcher")]
    Healer,
    /// The runner, on its normal path.
    Runner,
    /// The runner, on an error or interruption path (error, panic, SIGINT/SIGTERM/SIGHUP).
    RunnerExit,
    /// A later command (`heal`, `inspect`, `act`) that found the attempt unfinished.
    LaterCommand,
}

/// Writes `value` as pretty JSON to `path` atomically and by descriptor: the directory is opened
/// by the trusted walk ([`crate::files::TrustedDir::parent_of`]: no link, every component root's
/// or ours and not writable by others; a `/proc/self/fd/N/…` path from that fd), then an unnamed
/// file of mode `0600` is written, `fsync`ed and renamed into place relative to the directory's
/// fd, and the directory `fsync`ed ([`crate::files::TrustedDir::write_file`]), so a reader never
/// sees half a file and a signal leaves no temporary behind.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), LabError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| LabError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    let (dir, name) = crate::files::TrustedDir::parent_of(path).map_err(crate::workdir::refused)?;
    dir.write_file(&name, &bytes, 0o600, true)
        .map_err(LabError::io(path))
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
