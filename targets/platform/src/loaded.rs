//! The device-independent view of a bundle loaded on some device ([`LoadedModel`]), and the reports
//! some devices add to it (USB link counters, memory).
use modelrt_core::bundle::Bundle;
use modelrt_core::{StateInfo, Timing};

use crate::frame::{FrameInput, InputPath};
use crate::multi::FrameReport;

/// A bundle loaded on some device.
pub trait LoadedModel<'b> {
    /// The bundle.
    fn bundle(&self) -> &Bundle<'b>;
    /// Run one inference on raw tensors (bundle input/output order).
    fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> anyhow::Result<Timing>;
    /// Human-readable device description.
    fn device_name(&self) -> String;
    /// False when the device only models the hardware and computes no outputs.
    fn computes_outputs(&self) -> bool;
    /// The bundle's state buffers (recurrent state that persists across `run`s), in table order.
    fn states(&self) -> Vec<StateInfo<'b>>;
    /// Current bytes of state buffer `i` (an index into [`states`](Self::states)).
    fn read_state(&mut self, i: usize) -> anyhow::Result<Vec<u8>>;
    /// Put every state buffer back to its load-time contents.
    fn reset_state(&mut self) -> anyhow::Result<()>;
    /// Run one frame whose inputs may be borrowed buffers read in place (see [`crate::frame`]);
    /// `paths[i]` reports how input `i` reached the kernels.
    fn run_frame(
        &mut self,
        inputs: &mut [FrameInput<'_>],
        outputs: &mut [&mut [u8]],
        paths: &mut [InputPath],
    ) -> anyhow::Result<Timing>;
    /// USB transfers issued so far on the link to the device (the driver's transfer counters), for
    /// devices behind a USB bridge; `None` for others.
    fn usb_counts(&mut self) -> Option<UsbCounts> {
        None
    }
    /// [`run`](Self::run), with the USB transfers of its three phases counted apart (devices
    /// behind a USB bridge; `None` for others): the inputs' copy-in, the launch, the outputs'
    /// copy-out (what a multi-device frame reports per cross-device copy).
    fn run_phased(
        &mut self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> anyhow::Result<(Timing, Option<PhaseCounts>)> {
        Ok((self.run(inputs, outputs)?, None))
    }
    /// Where the device keeps the model's buffers, for devices that report it (the CPU); `None`
    /// for others.
    fn memory(&mut self) -> Option<MemoryReport> {
        None
    }
    /// For a multi-device bundle: each role's time and USB counters and every cross-device copy of
    /// the last frame (`crate::multi`); `None` for a single-target bundle.
    fn frame_report(&self) -> Option<FrameReport> {
        None
    }
}

/// USB transfers and bytes on the link to a device behind a USB bridge (a summary of the bridge
/// driver's own counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsbCounts {
    /// Control transfers (both directions).
    pub control: u64,
    /// Bulk transfers (both directions).
    pub bulk: u64,
    /// Bytes sent to the device (control data stages and bulk OUT).
    pub bytes_out: u64,
    /// Bytes received from the device (control data stages and bulk IN).
    pub bytes_in: u64,
}

impl UsbCounts {
    /// All transfers.
    pub fn transfers(&self) -> u64 {
        self.control + self.bulk
    }

    /// What happened since `earlier` (counters only grow).
    pub fn since(&self, earlier: &UsbCounts) -> UsbCounts {
        UsbCounts {
            control: self.control.saturating_sub(earlier.control),
            bulk: self.bulk.saturating_sub(earlier.bulk),
            bytes_out: self.bytes_out.saturating_sub(earlier.bytes_out),
            bytes_in: self.bytes_in.saturating_sub(earlier.bytes_in),
        }
    }
}

/// The USB transfers of one run, by phase ([`LoadedModel::run_phased`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseCounts {
    /// Uploading every input (the device's `upload`s, before the launch).
    pub copy_in: UsbCounts,
    /// The recorded queue's submission and wait (kernels, on-device copies, completion polls).
    pub launch: UsbCounts,
    /// Downloading every output (after the launch).
    pub copy_out: UsbCounts,
    /// `copy_in` input by input (bundle input order) when the device counted each upload apart;
    /// empty when it could not (a bundle with index checks uploads its inputs in one go).
    pub per_input: Vec<UsbCounts>,
}

impl PhaseCounts {
    /// The three phases together (what [`LoadedModel::usb_counts`] moves by over the run).
    pub fn total(&self) -> UsbCounts {
        let (a, b, c) = (self.copy_in, self.launch, self.copy_out);
        UsbCounts {
            control: a.control + b.control + c.control,
            bulk: a.bulk + b.bulk + c.bulk,
            bytes_out: a.bytes_out + b.bytes_out + c.bytes_out,
            bytes_in: a.bytes_in + b.bytes_in + c.bytes_in,
        }
    }
}

/// A device's memory after load (the CPU reports it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    /// The bundle's arena size (the device's arena mapping).
    pub arena_bytes: u64,
    /// Bytes of the arena resident right now (`mincore`), `None` if the OS query failed.
    pub arena_resident: Option<u64>,
    /// Weights read in place from the mapped bundle file (none when the file was read).
    pub weights: WeightBinding,
}

/// Which weights a device reads in place from the mapped bundle file instead of copying them
/// (what `modelrt_cpu::CpuDevice::bind_weights` did).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeightBinding {
    /// Weight buffers read in place.
    pub bound: usize,
    /// Their total size in bytes (what the arena no longer holds).
    pub bound_bytes: u64,
    /// Weight buffers that are copied as before: (buffer index, why).
    pub copied: Vec<(u32, &'static str)>,
}
