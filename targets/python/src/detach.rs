//! Releasing the GIL around a run. PyO3's `Python::detach` requires the closure to be `Send` so it
//! cannot smuggle Python objects out of the GIL; the model is not `Send` (its device handles are
//! single-threaded), but the closure runs synchronously on the calling thread, so nothing crosses
//! threads. [`Detached`] states that for the one value that needs it.
use modelrt_capi::ffi::OwnedModel;

/// A mutable borrow of a model carried into `Python::detach`.
pub struct Detached<'a>(pub &'a mut OwnedModel);

// SAFETY: `Python::detach` runs its closure on the current thread before returning, so the model
// is used by the thread that owns it; the borrow comes from `owner::Owned::borrow`, which checked
// that this is the owner thread and holds the model's `RefCell` borrow for the whole call, so no
// other call (from this or another Python thread) can reach the model meanwhile.
unsafe impl Send for Detached<'_> {}
