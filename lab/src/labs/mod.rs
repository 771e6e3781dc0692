//! Placeholder: the acts of both labs.
