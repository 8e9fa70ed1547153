//! Loading a bundle's weights over the bridge, measured (`modelrt usb load-bench`, run by `cargo xtask
//! bench usb-big`): the whole load as `modelrt` does it (the executor's load with the weights packed
//! into the copy-in pipeline, docs/hw/amd-driver.md §6.1), or tinygrad 0.14's copy-in protocol
//! replayed on the same bridge and GPU model — one `_copyin` per weight buffer, each its own SDMA
//! submission, the drain fence read with every chunk (docs/hw/amd-driver.md §6). Both report bytes,
//! transfers and the device clock (emulated on the emulator); the caller adds wall time and peak RSS.
use super::device::AmdDevice;
use super::error::AmdError;
use modelrt_asm24::counting::TransferCounts;
use modelrt_core::bundle::Bundle;
use modelrt_core::Executor;
use modelrt_hal::device::Device;
use modelrt_hal::usb::UsbTransport;

/// Which protocol loads the weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `Executor::load` with the load stream (everything a real load does).
    Modelrt,
    /// tinygrad's per-buffer copy-in, weights only (no kernels, no schedule).
    Tinygrad,
}

/// What a load cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadReport {
    /// Bytes of weights and initial state in the bundle.
    pub weight_bytes: u64,
    /// Buffers that carry them.
    pub buffers: u64,
    /// Device clock nanoseconds of the load (emulated on the emulator).
    pub device_ns: u64,
    /// Transfers during the load.
    pub counts: TransferCounts,
}

impl LoadReport {
    /// Transfers per MiB of weights.
    pub fn per_mib(&self, n: u64) -> f64 {
        n as f64 / (self.weight_bytes.max(1) as f64 / (1u64 << 20) as f64)
    }
}

/// Load `bundle` on `dev` with `protocol`; `progress(sent, total)` follows the weights.
pub fn load<T: UsbTransport>(
    bundle: Bundle<'_>,
    mut dev: AmdDevice<T>,
    counts: &dyn Fn(&mut AmdDevice<T>) -> TransferCounts,
    protocol: Protocol,
    mut progress: Option<Box<dyn FnMut(u64, u64) + Send>>,
) -> Result<LoadReport, String> {
    let body = bundle.body();
    let inits: Vec<(u64, &[u8])> = body
        .buffers
        .iter()
        .filter_map(|b| b.ok())
        .filter_map(|b| bundle.init_bytes(&b).map(|i| (b.arena_offset, i)))
        .collect();
    let weight_bytes: u64 = inits.iter().map(|(_, i)| i.len() as u64).sum();
    let (c0, t0) = (counts(&mut dev), dev.now_ns());
    let dev = match protocol {
        Protocol::Modelrt => {
            dev.stream_loads(progress.map(|mut p| {
                Box::new(move |sent: u64| p(sent.min(weight_bytes), weight_bytes))
                    as Box<dyn FnMut(u64) + Send>
            }));
            let mut ex = Executor::load(bundle, dev).map_err(|e| e.to_string())?;
            let d = ex.device_mut();
            let report = LoadReport {
                weight_bytes,
                buffers: inits.len() as u64,
                device_ns: d.now_ns() - t0,
                counts: counts(d).since(&c0),
            };
            d.fini().map_err(|e| e.to_string())?;
            return Ok(report);
        }
        Protocol::Tinygrad => {
            let step = |e: AmdError| e.to_string();
            dev.alloc_arena(body.arena_size).map_err(step)?;
            dev.copy_engine().set_tinygrad_replay(true);
            let mut sent = 0u64;
            for (offset, data) in &inits {
                dev.upload_via(super::device::CopyPath::Pipeline, *offset, data)
                    .map_err(step)?;
                sent += data.len() as u64;
                if let Some(p) = progress.as_mut() {
                    p(sent, weight_bytes);
                }
            }
            dev
        }
    };
    let mut dev = dev;
    let report = LoadReport {
        weight_bytes,
        buffers: inits.len() as u64,
        device_ns: dev.now_ns() - t0,
        counts: counts(&mut dev).since(&c0),
    };
    dev.fini().map_err(|e| e.to_string())?;
    Ok(report)
}
