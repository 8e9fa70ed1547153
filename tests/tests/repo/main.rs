//! Repository checks: the maps, docs, soundness and test-target policies hold (no device involved).
//!
//! One test binary (`cargo test -p modelrt-tests --test repo`); each module was once a binary of its own
//! (tests/README.md lists the groups).
mod bundle_doc;
mod capi_header;
mod crate_map;
mod doc_paths;
mod golden_independent;
mod hw_refs;
mod ignored_tests;
mod layout;
mod msrv;
mod skip_report;
mod soundness;
mod test_targets;
mod wheel_package;
