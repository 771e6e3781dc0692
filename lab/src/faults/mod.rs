//! Faults and their watchdogs: the freeze of one process through a pidfd (lab B) and the
//! scale-down of the admission controller (lab A). Both heal on their own: an independent
//! detached process resumes / restores at a deadline whatever happens to the runner.

pub mod freeze;
pub mod scale;
