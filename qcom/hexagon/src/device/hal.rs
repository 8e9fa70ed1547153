//! `impl Device for HexagonDevice`: target check, the ION arena, host transfers through its mapping, the model
//! library's load, and `submit` as one model-level invoke (nothing allocated once the queue is recorded).
use std::sync::Arc;

use modelrt_hal::device::{Device, KernelId, KernelImage, SubmitTiming};
use modelrt_hal::target::Target;

use super::phase::Phase;
use super::{DspError, HexagonDevice, HexagonQueue, Library, MODEL_LIBRARY};
use crate::fastrpc::abi::{ION_ALIGN, ION_FLAG_CACHED, ION_SYSTEM_HEAP_MASK};
use crate::fastrpc::pack::BUFFER_ALIGN;
use crate::fastrpc::IonBuf;

impl HexagonDevice {
    /// The arena, once `[offset, offset + len)` is checked to lie inside it.
    fn arena_range(&self, offset: u64, len: usize) -> Result<IonBuf, DspError> {
        let a = self
            .arena
            .ok_or_else(|| DspError::Other("the DSP arena is not allocated".into()))?;
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.arena_size)
        {
            return Err(DspError::Other(format!(
                "{len} bytes at arena offset {offset} lie outside the {}-byte arena",
                self.arena_size
            )));
        }
        Ok(a)
    }
}

impl Device for HexagonDevice {
    type Error = DspError;
    type Queue = HexagonQueue;

    fn check_target(&self, target: &Target<'_>) -> Result<(), DspError> {
        if !matches!(target, Target::Hexagon { .. }) {
            return Err(DspError::Other(format!(
                "this bundle targets {}, not the Hexagon DSP",
                target.family()
            )));
        }
        Ok(())
    }

    /// One ION buffer of the bundle's arena size (rounded up to the DSP's 128-byte view alignment); the DSP maps
    /// at most 2 GiB.
    fn alloc_arena(&mut self, bytes: u64) -> Result<(), DspError> {
        let align = u64::from(BUFFER_ALIGN);
        let total = bytes.next_multiple_of(align).max(align);
        if total > i32::MAX as u64 {
            return Err(DspError::Other(format!(
                "the arena needs {total} bytes; the DSP maps at most 2 GiB"
            )));
        }
        let io = self.live("alloc_arena")?.io();
        if let Some(old) = self.arena {
            io.ion_free(old)?;
        }
        let a = io.ion_alloc(total, ION_ALIGN, ION_SYSTEM_HEAP_MASK, ION_FLAG_CACHED)?;
        self.arena = Some(a);
        self.arena_size = bytes;
        Ok(())
    }

    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), DspError> {
        let io = self.live("upload")?.io();
        let a = self.arena_range(offset, data.len())?;
        Ok(io.ion_write(a.fd, offset, data)?)
    }

    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), DspError> {
        let io = self.live("download")?.io();
        let a = self.arena_range(offset, out.len())?;
        Ok(io.ion_read(a.fd, offset, out)?)
    }

    /// Kernel ids are table indices (the runner's dispatcher indices); the model library is opened on the DSP
    /// here (the loader fetches it through the listener once). The other records are linked into it.
    fn load_kernel(&mut self, kernel: &KernelImage<'_>) -> Result<KernelId, DspError> {
        if self.names.is_some() {
            return Err(DspError::Other(format!(
                "kernel {} loaded after a queue was created",
                kernel.name
            )));
        }
        if kernel.name == MODEL_LIBRARY && self.library.is_none() {
            let session = self.live("load_kernel")?;
            let handle = session.open_lib(kernel.name, Arc::from(kernel.binary))?;
            self.library = Some(Library {
                name: kernel.name.to_string(),
                handle,
            });
        }
        self.kernel_names.push(kernel.name.to_string());
        Ok(KernelId(self.kernel_names.len() as u32 - 1))
    }

    fn create_queue(&mut self) -> Result<HexagonQueue, DspError> {
        if self.library.is_none() {
            return Err(DspError::Other(format!(
                "this hexagon bundle has no DSP model library ({MODEL_LIBRARY}); recompile it with this modelrt"
            )));
        }
        let a = self
            .arena
            .ok_or_else(|| DspError::Other("the DSP arena is not allocated".into()))?;
        let names = self
            .names
            .get_or_insert_with(|| self.kernel_names.clone().into())
            .clone();
        // the arena is below 2 GiB (checked by `alloc_arena`)
        Ok(HexagonQueue::new(names, a.len as u32))
    }

    /// One INVOKE_ATTRS of the model library with the queue's table (none for an empty queue); the device time
    /// is the runner's own measurement of the table on the DSP.
    fn submit(&mut self, queue: &mut HexagonQueue) -> Result<SubmitTiming, DspError> {
        let (phase, names): (&Phase, &[String]) = queue.phase()?;
        if phase.len() == 0 {
            return Ok(SubmitTiming::default());
        }
        let (Some(session), Some(lib), Some(arena)) =
            (self.session.as_ref(), self.library.as_ref(), self.arena)
        else {
            return Err(DspError::Other(
                "submit: the DSP device is closed or has no model library open".into(),
            ));
        };
        let dsp_us = phase.invoke(session.io(), &lib.name, lib.handle, arena.fd, names)?;
        self.invokes += 1;
        Ok(SubmitTiming {
            enqueue_ns: 0,
            device_ns: dsp_us.saturating_mul(1000),
        })
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}
