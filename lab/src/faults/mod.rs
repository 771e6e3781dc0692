//! Placeholder: faults (freeze, scale-down) and their watchdogs.
