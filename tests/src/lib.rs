//! Test harness helpers: placeholder until the cluster fixture lands.
