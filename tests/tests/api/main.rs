//! The Python and C APIs from their own languages.
//!
//! One test binary (`cargo test -p modelrt-tests --test api`); each module was once a binary of its own
//! (tests/README.md lists the groups).
mod capi;
mod index_check_api;
mod python_api;
mod wheel_user;
