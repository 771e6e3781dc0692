//! Faults and their healers: the freeze of one process through a pidfd (lab B) and the
//! scale-down of the admission controller (lab A). Both are *attempts* that follow one protocol
//! (`docs/faults.md`): plan → ledger → detached healer → ready → fault → deadline → heal.
//!
//! The shared part, used by both faults (no module below imports one that imports it back):
//! - [`records`]: the records' one writer (atomic, directory fsync) and bounded reader, the
//!   healer's log, the clock format;
//! - [`process`]: a process by PID + start ticks, pinned by a pidfd, and the proofs of ownership
//!   (exact container, this attempt's healer) and the healer's stand-down;
//! - [`attempt`]: the attempt id, the work-dir and target locks, the healer's start (the lab
//!   binary, its hardening);
//! - [`heal`]: what every later command does with an unfinished attempt.
//!
//! What differs: [`freeze`] (SIGSTOP/SIGCONT of one process) and [`scale`] (replicas to 0 and
//! back through the scale subresource).

pub mod attempt;
pub mod freeze;
pub mod heal;
pub mod process;
pub mod records;
pub mod scale;
