//! The [`KgslIo`] calls of the model: bring-up ioctls, object allocation and mapping (zeroed host
//! memory), user-memory imports, GPU_COMMAND (every IB validated by `stream`) and timestamp waits.
use super::{merr, KgslModel, Obj};
use crate::kgsl::abi::{self, CommandObject, DevInfo};
use crate::kgsl::{KgslError, KgslIo, ObjAlloc};

// SAFETY: `mmap_obj` hands out fresh zeroed, page-aligned host allocations of exactly `len` bytes
// that stay allocated until `munmap` of exactly that (address, length) — the model never frees a
// still-mapped object, not even when dropped — and `munmap` refuses any other range.
unsafe impl KgslIo for KgslModel {
    fn label_shader(&mut self, gpuaddr: u64, name: &str) {
        self.name_shader(gpuaddr, name);
    }

    fn device_info(&mut self) -> Result<DevInfo, KgslError> {
        self.trace.push("DEVICE_GETPROPERTY(DEVICE_INFO)".into());
        Ok(DevInfo {
            device_id: 1,
            chip_id: self.cfg.chip_id,
            mmu_enabled: 1,
            gpu_id: 630,
            ..Default::default()
        })
    }

    fn set_power_max(&mut self, ctx: u32) -> Result<(), KgslError> {
        if Some(ctx) != self.ctx {
            return Err(merr(format!("SETPROPERTY for unknown context {ctx}")));
        }
        self.power_max = true;
        self.trace
            .push(format!("SETPROPERTY(PWR_CONSTRAINT max, ctx {ctx})"));
        Ok(())
    }

    fn drawctxt_create(&mut self, flags: u32) -> Result<u32, KgslError> {
        if flags != self.cfg.ctx_flags {
            return Err(merr(format!(
                "DRAWCTXT_CREATE flags {flags:#x}, model expects {:#x}",
                self.cfg.ctx_flags
            )));
        }
        if self.ctx.is_some() {
            return Err(merr("a second draw context (the backend uses one)"));
        }
        self.ctx = Some(1);
        self.trace
            .push(format!("DRAWCTXT_CREATE(flags {flags:#x}) -> 1"));
        Ok(1)
    }

    fn gpuobj_alloc(&mut self, size: u64, flags: u64) -> Result<ObjAlloc, KgslError> {
        let n = self.allocs;
        self.allocs += 1;
        if self.cfg.fail_alloc_at == Some(n) {
            return Err(KgslError::Errno {
                call: "GPUOBJ_ALLOC",
                errno: 12,
                reason: "injected ENOMEM".into(),
            });
        }
        if flags & abi::MEMFLAGS_USE_CPU_MAP == 0
            || (flags & abi::MEMALIGN_MASK) >> abi::MEMALIGN_SHIFT != 12
        {
            return Err(merr(format!(
                "GPUOBJ_ALLOC flags {flags:#x} lack USE_CPU_MAP / MEMALIGN(12)"
            )));
        }
        if size == 0 || !size.is_multiple_of(abi::PAGE) || size > 1 << 32 {
            return Err(merr(format!(
                "GPUOBJ_ALLOC size {size:#x} is not a page multiple"
            )));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.objs.insert(id, Obj { size, mem: None });
        self.dummy.get_or_insert(id);
        self.trace
            .push(format!("GPUOBJ_ALLOC({size:#x}, {flags:#x}) -> id {id}"));
        Ok(ObjAlloc { id, mmapsize: size })
    }

    fn mmap_obj(&mut self, id: u32, len: u64) -> Result<u64, KgslError> {
        let o = self
            .objs
            .get_mut(&id)
            .ok_or_else(|| merr(format!("mmap of unknown object {id}")))?;
        if o.mem.is_some() || len != o.size {
            return Err(merr(format!(
                "mmap of object {id}: already mapped or length {len:#x} != {:#x}",
                o.size
            )));
        }
        let layout = std::alloc::Layout::from_size_align(len as usize, abi::PAGE as usize)
            .map_err(|e| merr(e.to_string()))?;
        // SAFETY: layout has non-zero size (alloc checked size > 0).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(KgslError::Errno {
                call: "mmap",
                errno: 12,
                reason: "host out of memory".into(),
            });
        }
        o.mem = Some((p, layout));
        self.by_va.insert(p as u64, id);
        Ok(p as u64)
    }

    fn gpuobj_free(&mut self, id: u32) -> Result<(), KgslError> {
        if !self.objs.contains_key(&id) {
            return Err(merr(format!("GPUOBJ_FREE of unknown object {id}")));
        }
        self.trace.push(format!("GPUOBJ_FREE({id})"));
        Ok(())
    }

    unsafe fn munmap(&mut self, va: u64, len: u64) -> Result<(), KgslError> {
        let id = *self
            .by_va
            .get(&va)
            .ok_or_else(|| merr(format!("munmap of unknown mapping {va:#x}")))?;
        let size = self
            .objs
            .get(&id)
            .ok_or_else(|| merr("munmap: object vanished"))?
            .size;
        if size != len {
            return Err(merr(format!("munmap length {len:#x} != {size:#x}")));
        }
        let mut o = self
            .objs
            .remove(&id)
            .ok_or_else(|| merr("munmap: object vanished"))?;
        self.by_va.remove(&va);
        if let Some((p, l)) = o.mem.take() {
            // SAFETY: allocated in `mmap_obj` with this layout; removed from the tables so freed once.
            unsafe { std::alloc::dealloc(p, l) };
        }
        Ok(())
    }

    unsafe fn map_user_mem(&mut self, hostptr: u64, len: u64) -> Result<u64, KgslError> {
        if self.cfg.user_mem_efault {
            return Err(KgslError::Errno {
                call: "MAP_USER_MEM",
                errno: 14,
                reason: "Bad address".into(),
            });
        }
        if !hostptr.is_multiple_of(abi::PAGE) || !len.is_multiple_of(abi::PAGE) || len == 0 {
            return Err(merr(format!(
                "MAP_USER_MEM {hostptr:#x}+{len:#x} not page aligned"
            )));
        }
        self.user_maps.insert(hostptr, len);
        self.trace
            .push(format!("MAP_USER_MEM({hostptr:#x}, {len:#x})"));
        Ok(hostptr)
    }

    fn sharedmem_free(&mut self, gpuaddr: u64) -> Result<(), KgslError> {
        self.user_maps
            .remove(&gpuaddr)
            .ok_or_else(|| merr(format!("SHAREDMEM_FREE of unknown {gpuaddr:#x}")))?;
        Ok(())
    }

    fn gpu_command(&mut self, ctx: u32, ibs: &[CommandObject]) -> Result<u32, KgslError> {
        if Some(ctx) != self.ctx {
            return Err(merr(format!("GPU_COMMAND on unknown context {ctx}")));
        }
        if ibs.is_empty() {
            return Err(merr("GPU_COMMAND without IBs"));
        }
        self.ts += 1;
        self.stats.submissions += 1;
        let ts = self.ts;
        self.trace
            .push(format!("GPU_COMMAND ctx {ctx} #{ts}: {} IB(s)", ibs.len()));
        for ib in ibs {
            if ib.flags != abi::CMDLIST_IB || ib.size % 4 != 0 || ib.size == 0 {
                return Err(merr(format!(
                    "IB flags {:#x} size {:#x}",
                    ib.flags, ib.size
                )));
            }
            let dw = self
                .dwords(ib.gpuaddr, ib.size as usize / 4)
                .map_err(|e| merr(format!("IB: {e}")))?;
            self.trace
                .push(format!(" IB {:#x}: {} dwords", ib.gpuaddr, dw.len()));
            if self.hung {
                continue;
            }
            let done = self.run_ib(&dw).map_err(|e| {
                self.trace.push(format!(" REJECTED: {e}"));
                merr(format!("submission {ts}: {e}"))
            })?;
            self.submitted.push(dw);
            if !done {
                self.hung = true;
            }
        }
        if !self.hung {
            self.retired = ts;
        }
        Ok(ts)
    }

    fn wait_timestamp(
        &mut self,
        ctx: u32,
        timestamp: u32,
        timeout_ms: u32,
    ) -> Result<(), KgslError> {
        if Some(ctx) != self.ctx || timestamp > self.ts {
            return Err(merr(format!(
                "WAITTIMESTAMP ctx {ctx} ts {timestamp} was never submitted"
            )));
        }
        if timestamp > self.retired {
            return Err(KgslError::Timeout {
                timestamp,
                timeout_ms,
            });
        }
        Ok(())
    }
}
