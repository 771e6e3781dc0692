//! Placeholder: to be written.
