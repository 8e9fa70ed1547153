//! A value usable only on the thread that created it, checked at every use. `modelrt.Model` keeps
//! its device-side state (`OwnedModel`, whose device handles are single-threaded and not `Send`) in
//! an [`Owned`], so that use from a second Python thread raises `modelrt.Error` with a clear message
//! instead of PyO3's `unsendable` panic; re-entrant use on the owner thread (a `run` reached again
//! from Python code a `run` triggered) is refused the same way.
use std::cell::{RefCell, RefMut};
use std::mem::ManuallyDrop;
use std::thread::{self, ThreadId};

use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;

use crate::error::Error;

/// `T`, reachable only from the thread that made the [`Owned`].
pub struct Owned<T> {
    owner: ThreadId,
    value: ManuallyDrop<RefCell<T>>,
}

// SAFETY: an `Owned<T>` may be moved to and shared with other threads (Python objects are), but
// `value` is touched only by `borrow` after checking that the caller is the owner thread, and by
// `drop` under the same check (another thread leaks it instead); so `T` itself never crosses a
// thread, which is all `T: !Send`/`!Sync` forbids. `RefCell` is only borrowed on the owner thread.
unsafe impl<T> Send for Owned<T> {}
// SAFETY: as for `Send`: shared references from other threads cannot reach `value`.
unsafe impl<T> Sync for Owned<T> {}

impl<T> Owned<T> {
    /// Owned by the current thread.
    pub fn new(value: T) -> Self {
        Owned {
            owner: thread::current().id(),
            value: ManuallyDrop::new(RefCell::new(value)),
        }
    }

    /// The value, for `what` (a method name in the error message): `modelrt.Error` on any thread
    /// but the owner or while another call on this thread holds it.
    pub fn borrow(&self, what: &str) -> PyResult<RefMut<'_, T>> {
        if thread::current().id() != self.owner {
            return Err(Error::new_err(format!(
                "{what}: this Model belongs to the thread that loaded it ({:?}), not to {:?}; \
                 load one Model per thread (modelrt.load in the thread that uses it)",
                self.owner,
                thread::current().id()
            )));
        }
        self.value.try_borrow_mut().map_err(|_| {
            Error::new_err(format!(
                "{what}: this Model is already in use by a call that has not returned"
            ))
        })
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        if thread::current().id() == self.owner {
            // SAFETY: dropped once, here; `value` is not used afterwards.
            unsafe { ManuallyDrop::drop(&mut self.value) };
        } else {
            // The device state cannot be released from this thread: leak it, and say so.
            Python::attach(|py| {
                PyRuntimeWarning::new_err(
                    "a modelrt.Model was released on another thread than the one that loaded it; \
                     its device resources are leaked",
                )
                .write_unraisable(py, None)
            });
        }
    }
}
