//! Faults and their healers: the freeze of one process through a pidfd (lab B) and the
//! scale-down of the admission controller (lab A). Both are *attempts* ([`attempt`]): an id, a
//! work-dir lock held by the runner, a target lock held by the detached healer, typed records, and
//! a heal that every later command runs first ([`heal`]).

pub mod attempt;
pub mod freeze;
pub mod heal;
pub mod scale;
