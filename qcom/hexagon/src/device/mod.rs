//! The Hexagon cDSP as a HAL device: [`HexagonDevice`] implements [`modelrt_hal::device::Device`] over a FastRPC
//! [`Session`], so a hexagon bundle runs through `modelrt_core::Executor` like every other backend (the executor
//! owns the I/O checks, the state buffers and the timing), while a step stays **one FastRPC invoke**.
//!
//! - The HAL arena is one ION buffer: arena offsets are ION offsets (the bundle's memory plan aligns every buffer
//!   to 256 bytes or a page, so every view the DSP accepts — 128-byte aligned — stays aligned). Uploads and
//!   downloads (weights, inputs, outputs, the executor's state init and reset) move through the arena's host
//!   mapping; no FastRPC call.
//! - Kernels: the bundle's model library ([`MODEL_LIBRARY`], every kernel linked with the schedule runner,
//!   qcom/hexagon/dsp/schedule_runner.c) is opened once when it is loaded; the other kernel records only name the
//!   runner's dispatcher indices.
//! - A recorded queue ([`HexagonQueue`]) is the engine's op list ([`crate::fastrpc::engine::Op`], every view in
//!   the one arena), encoded once into a schedule table ([`crate::fastrpc::table`]); `submit` is a single
//!   INVOKE_ATTRS of the model library with that table, built on the stack (no allocation).
//!
//! Files: this one holds the device state, bring-up over a session and teardown; `error` the error type; `queue`
//! the recorder; `phase` a recorded queue's table and its one invoke; `hal` the `Device` implementation;
//! `transport` opening the device nodes (`--device dsp`) or the FastRPC model (`--device dsp-emu`).
use std::sync::Arc;
use std::time::Instant;

use crate::fastrpc::session::Session;
use crate::fastrpc::IonBuf;

mod error;
mod hal;
mod phase;
mod queue;
mod transport;

pub use error::DspError;
pub use queue::HexagonQueue;
pub use transport::{open, DspOptions, Model, Transport};

/// The kernel record the exporter appends for the model library (xtask/exporter/mrt/dsp.py `MODEL_LIBRARY`).
pub const MODEL_LIBRARY: &str = "modelrt_schedule";

/// The model library, once opened on the DSP.
struct Library {
    name: String,
    handle: u32,
}

/// A Hexagon cDSP over a FastRPC session (the device nodes or the FastRPC model: the same code).
pub struct HexagonDevice {
    /// `None` once [`HexagonDevice::close`]d.
    session: Option<Session>,
    arena: Option<IonBuf>,
    /// Bytes of the HAL arena (the bundle's `arena_size`); the ION buffer may be a little longer.
    arena_size: u64,
    /// Kernel names by id (the runner's dispatcher indices), for error messages.
    kernel_names: Vec<String>,
    /// The same names, frozen for the queues once the first one is created.
    names: Option<Names>,
    library: Option<Library>,
    /// Model-level invokes issued so far (one per non-empty submit).
    invokes: u64,
    epoch: Instant,
}

impl HexagonDevice {
    /// A device over a live session (nothing is allocated until the executor asks).
    pub fn new(session: Session) -> Self {
        HexagonDevice {
            session: Some(session),
            arena: None,
            arena_size: 0,
            kernel_names: Vec::new(),
            names: None,
            library: None,
            invokes: 0,
            epoch: Instant::now(),
        }
    }

    /// The session (counters, fault tests); `None` once closed.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// Model-level invokes issued so far (the init phase's, if any, and one per step).
    pub fn invokes(&self) -> u64 {
        self.invokes
    }

    fn live(&self, call: &str) -> Result<&Session, DspError> {
        self.session
            .as_ref()
            .ok_or_else(|| DspError::Other(format!("{call}: the DSP device is closed")))
    }

    /// Close the model library, free the arena and close the session; the first error wins. Later calls on the
    /// device fail with "closed".
    pub fn close(&mut self) -> Result<(), DspError> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let mut first = Ok(());
        if let Some(lib) = self.library.take() {
            first = session.close_lib(&lib.name, lib.handle);
        }
        if let Some(a) = self.arena.take() {
            let r = session.io().ion_free(a);
            if first.is_ok() {
                first = r;
            }
        }
        let r = session.close();
        if first.is_ok() {
            first = r;
        }
        first.map_err(DspError::from)
    }
}

/// Kernel names by id, shared with every queue recorded after the kernels are loaded.
pub(crate) type Names = Arc<[String]>;
