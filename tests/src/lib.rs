//! Shared helpers for modelrt's cross-crate integration tests.
