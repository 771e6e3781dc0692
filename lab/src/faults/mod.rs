//! Faults and their healers: the freeze of one process through a pidfd (lab B) and the
//! scale-down of the admission controller (lab A). Both are *attempts* that follow one protocol
//! (`docs/faults.md`): plan → ledger → detached healer → ready → fault → deadline → heal.
//!
//! The shared part, used by both faults (no module below imports one that imports it back):
//! - [`records`]: the records' one writer (atomic, directory fsync) and bounded reader, who undid
//!   a fault, the clock format;
//! - [`process`]: a process by PID + start ticks, pinned by a pidfd, and the proofs of ownership
//!   (exact container, this attempt's healer) and the healer's stand-down;
//! - [`attempt`]: the attempt id and its files (the same names in both faults), the work-dir and
//!   target locks, where the lab binary is;
//! - [`healer`]: the healer's life (its start by the runner, arguments, hardening, log);
//! - [`heal`]: what every later command does with an unfinished attempt.
//!
//! What differs: [`freeze`] (SIGSTOP/SIGCONT of one process) and [`scale`] (replicas to 0 and
//! back through the scale subresource).

pub mod attempt;
pub mod freeze;
pub mod heal;
pub mod healer;
pub mod process;
pub mod records;
pub mod scale;
