//! The Navi31 model's compute queue driven with PM4 streams written from docs/hw/amd-gpu.md §7:
//! dispatches reach the plugged executor with the exact register state, fences, waits, indirect
//! buffers, and every failure (refused dispatch, unknown packet, page fault) stops the queue
//! visibly.
use std::sync::{Arc, Mutex};

use super::support::*;
use modelrt_amd::emu::navi31_gpu::{Engine, GpuError};
use modelrt_rdna3::shader::{DispatchRequest, ExecError, GpuMemory, ShaderExecutor};

const RING: u64 = VA_BASE;
const RING_DWORDS: u64 = 1024;
const SIGNAL: u64 = VA_BASE + 0x8000;
const IB: u64 = VA_BASE + 0x9000;
const OUT: u64 = VA_BASE + 0xA000;
/// VRAM physical address of `va` in the rig's linear mapping.
fn phys(va: u64) -> u64 {
    DATA_AREA + (va - VA_BASE)
}

/// Records requests and writes `0xC0FFEE` at the VA in USER_DATA_0/1 (through the page tables).
struct Recorder(Arc<Mutex<Vec<DispatchRequest>>>);

impl ShaderExecutor for Recorder {
    fn dispatch(
        &mut self,
        req: &DispatchRequest,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), ExecError> {
        self.0.lock().unwrap().push(req.clone());
        let va = (req.user_data[1] as u64) << 32 | req.user_data[0] as u64;
        mem.write(va, &0xC0FFEEu32.to_le_bytes())
            .map_err(|fault| ExecError::PageFault {
                code_va: req.code_va,
                fault,
            })
    }
}

fn rig() -> Rig {
    let mut r = Rig::new();
    r.map(VA_BASE, DATA_AREA, 16, false);
    r.enable_gc_vm();
    r.compute_queue(RING, RING_DWORDS);
    r
}

/// Write `stream` at the ring start and ring the doorbell with its length.
fn submit(r: &mut Rig, stream: &[u32]) {
    r.put(phys(RING), stream);
    r.gpu.doorbell(COMPUTE_DOORBELL, stream.len() as u64);
    r.service();
}

fn set_sh(reg_byte: u64, values: &[u32]) -> Vec<u32> {
    let mut p = vec![
        pm4(0x76, 1 + values.len() as u32),
        ((reg_byte / 4) - 0x2C00) as u32,
    ];
    p.extend_from_slice(values);
    p
}

/// RELEASE_MEM end-of-pipe, data_sel `sel` (1: 32-bit, 2: 64-bit, 3: GPU clock), docs/hw/amd-gpu.md
/// §7.1.
fn release_mem(va: u64, sel: u32, value: u64) -> Vec<u32> {
    vec![
        pm4(0x49, 7),
        20 | (5 << 8),
        sel << 29,
        va as u32,
        (va >> 32) as u32,
        value as u32,
        (value >> 32) as u32,
        0,
    ]
}

fn dispatch_stream() -> (Vec<u32>, DispatchRequest) {
    let code = VA_BASE + 0x4000;
    let mut s = vec![pm4(0x58, 7), 0, 0xFFFF_FFFF, 0xFF_FFFF, 0, 0, 0xA, 0x3_0000];
    s.extend(set_sh(
        COMPUTE_PGM_LO,
        &[(code >> 8) as u32, (code >> 40) as u32],
    ));
    s.extend(set_sh(0xB848, &[0x6002_0040, 0x0000_1A1A])); // PGM_RSRC1, RSRC2 (USER_SGPR 13)
    s.extend(set_sh(0xB8A0, &[0x7])); // PGM_RSRC3
    s.extend(set_sh(0xB860, &[0])); // TMPRING_SIZE
    s.extend(set_sh(0xB900, &[OUT as u32, (OUT >> 32) as u32, 0x1234])); // USER_DATA_0..2
    s.extend(set_sh(0xB810, &[0, 0, 0, 32, 4, 1])); // START_X/Y/Z, NUM_THREAD_X/Y/Z
    s.extend([pm4(0x15, 4), 8, 2, 1, 0x8005]); // DISPATCH_DIRECT 8×2×1, cs_w32|force|en
    s.extend([pm4(0x46, 1), 7 | (4 << 8)]); // EVENT_WRITE CS_PARTIAL_FLUSH
    s.extend(release_mem(SIGNAL, 1, 42));
    let mut user_data = [0u32; 16];
    user_data[..3].copy_from_slice(&[OUT as u32, (OUT >> 32) as u32, 0x1234]);
    let req = DispatchRequest {
        code_va: code,
        pgm_rsrc1: 0x6002_0040,
        pgm_rsrc2: 0x0000_1A1A,
        pgm_rsrc3: 7,
        user_data,
        workgroup_size: [32, 4, 1],
        start: [0, 0, 0],
        grid: [8, 2, 1],
        initiator: 0x8005,
        tmpring_size: 0,
    };
    (s, req)
}

#[test]
fn dispatch_reaches_the_executor_with_the_exact_request_and_signals() {
    let mut r = rig();
    let seen = Arc::new(Mutex::new(Vec::new()));
    r.gpu.set_executor(Box::new(Recorder(seen.clone())));
    let (stream, expected) = dispatch_stream();
    submit(&mut r, &stream);
    assert_eq!(r.gpu.take_errors(), vec![]);
    assert_eq!(*seen.lock().unwrap(), vec![expected]);
    assert_eq!(
        r.get32(phys(OUT)),
        0xC0FFEE,
        "executor's write went through the page tables"
    );
    assert_eq!(r.get32(phys(SIGNAL)), 42, "RELEASE_MEM fence");
    r.gpu.reg_write(GRBM_GFX_CNTL, 1 << 2);
    assert_eq!(r.gpu.reg_read(CP_HQD_PQ_RPTR) as usize, stream.len());
    assert_eq!(r.gpu.reg_read(CP_STAT), 0);
}

#[test]
fn release_mem_writes_64_bit_values_and_the_gpu_clock() {
    let mut r = rig();
    let mut s = release_mem(SIGNAL, 2, 0x1122_3344_5566_7788);
    s.extend(release_mem(SIGNAL + 8, 3, 0));
    r.gpu.advance(1_000_000);
    submit(&mut r, &s);
    assert_eq!(r.get64(phys(SIGNAL)), 0x1122_3344_5566_7788);
    let t1 = r.get64(phys(SIGNAL + 8));
    // 1 ms of emulated time at the 100 MHz timestamp clock.
    assert!(t1 >= 100_000, "timestamp {t1}");
    r.gpu.advance(2_000_000);
    let mut s2 = s.clone();
    s2.extend(release_mem(SIGNAL + 16, 3, 0));
    r.put(phys(RING), &s2);
    r.gpu.doorbell(COMPUTE_DOORBELL, s2.len() as u64);
    r.service();
    let t2 = r.get64(phys(SIGNAL + 16));
    assert!(t2 >= t1 + 200_000, "clock advanced: {t1} → {t2}");
}

#[test]
fn wait_reg_mem_blocks_until_memory_satisfies_it() {
    let mut r = rig();
    // WAIT_REG_MEM memory GEQ(5) signal ≥ 5, mask all-ones, poll interval 4; then a fence.
    let mut s = vec![
        pm4(0x3C, 6),
        5 | (1 << 4),
        SIGNAL as u32,
        (SIGNAL >> 32) as u32,
        5,
        !0,
        4,
    ];
    s.extend(release_mem(SIGNAL + 0x40, 1, 7));
    submit(&mut r, &s);
    assert_eq!(r.get32(phys(SIGNAL + 0x40)), 0, "fence must wait");
    r.put(phys(SIGNAL), &[4]);
    r.service();
    assert_eq!(r.get32(phys(SIGNAL + 0x40)), 0, "4 < 5 still waits");
    r.put(phys(SIGNAL), &[5]);
    r.service();
    assert_eq!(r.get32(phys(SIGNAL + 0x40)), 7);
    assert_eq!(r.gpu.take_errors(), vec![]);
}

#[test]
fn wait_reg_mem_write_then_wait_on_the_hdp_flush_pair() {
    let mut r = rig();
    // docs/hw/amd-gpu.md §7.1 memory barrier: write REQ, wait DONE == ref (dword register indices).
    let (req, done) = (0x3898 / 4, 0x389C / 4);
    let mut s = vec![pm4(0x3C, 6), 3 | (1 << 6), req, done, 1, 1, 0x20];
    s.extend(release_mem(SIGNAL, 1, 9));
    submit(&mut r, &s);
    assert_eq!(r.get32(phys(SIGNAL)), 9);
}

#[test]
fn indirect_buffer_runs_its_packets_then_the_ring_continues() {
    let mut r = rig();
    let mut ib = release_mem(SIGNAL, 1, 1);
    ib.extend([
        pm4(0x37, 4),
        5 << 8,
        (SIGNAL + 4) as u32,
        (SIGNAL >> 32) as u32,
        0xAB,
    ]); // WRITE_DATA
    r.put(phys(IB), &ib);
    let mut s = vec![
        pm4(0x3F, 3),
        IB as u32,
        (IB >> 32) as u32,
        ib.len() as u32 | (1 << 23),
    ];
    s.extend(release_mem(SIGNAL + 8, 1, 2));
    submit(&mut r, &s);
    assert_eq!(r.gpu.take_errors(), vec![]);
    assert_eq!(
        [
            r.get32(phys(SIGNAL)),
            r.get32(phys(SIGNAL + 4)),
            r.get32(phys(SIGNAL + 8))
        ],
        [1, 0xAB, 2]
    );
}

#[test]
fn not_modelled_refusal_surfaces_and_no_fence_is_written() {
    let mut r = rig();
    let (stream, _) = dispatch_stream();
    submit(&mut r, &stream);
    let errors = r.gpu.take_errors();
    assert!(
        errors.contains(&GpuError::Dispatch(ExecError::NotModelled)),
        "{errors:?}"
    );
    assert!(errors.iter().any(|e| matches!(
        e,
        GpuError::QueueHang {
            engine: Engine::Compute,
            ..
        }
    )));
    assert_eq!(
        r.get32(phys(SIGNAL)),
        0,
        "no signal after a refused dispatch"
    );
    assert_ne!(r.gpu.reg_read(CP_STAT) & 0x8000_0000, 0, "CP busy (hung)");
}

#[test]
fn unknown_packet_hangs_the_queue_at_that_packet() {
    let mut r = rig();
    let mut s = release_mem(SIGNAL, 1, 1);
    let bad = pm4(0x99, 2);
    s.extend([bad, 0, 0]);
    s.extend(release_mem(SIGNAL + 4, 1, 2));
    submit(&mut r, &s);
    assert_eq!(r.get32(phys(SIGNAL)), 1);
    assert_eq!(
        r.get32(phys(SIGNAL + 4)),
        0,
        "nothing after the bad packet runs"
    );
    let errors = r.gpu.take_errors();
    assert!(
        matches!(&errors[..], [GpuError::QueueHang { engine: Engine::Compute, header, va, .. }]
            if *header == bad && *va == RING + 4 * 8),
        "{errors:?}"
    );
    r.gpu.reg_write(GRBM_GFX_CNTL, 1 << 2);
    assert_eq!(
        r.gpu.reg_read(CP_HQD_PQ_RPTR),
        8,
        "read pointer stays on the bad packet"
    );
    assert_ne!(r.gpu.reg_read(CP_STAT), 0);
}

#[test]
fn fence_to_an_unmapped_address_is_a_page_fault_with_status() {
    let mut r = rig();
    let unmapped = VA_BASE + 0x40_0000;
    submit(&mut r, &release_mem(unmapped, 1, 1));
    let errors = r.gpu.take_errors();
    assert!(
        errors.iter().any(|e| matches!(e, GpuError::PageFault { engine: Engine::Compute, va, write: true, .. } if *va == unmapped)),
        "{errors:?}"
    );
    let status = r.gpu.reg_read(GCVM_L2_PROTECTION_FAULT_STATUS);
    assert_ne!(status, 0);
    assert_ne!(status & (1 << 18), 0, "RW bit = write");
    assert_eq!(
        r.gpu.reg_read(GCVM_L2_PROTECTION_FAULT_ADDR_LO32),
        (unmapped >> 12) as u32
    );
    // An invalidate with clear_protection_fault_status_addr clears it.
    r.gpu.reg_write(GCVM_INVALIDATE_ENG17_REQ, (1 << 24) | 1);
    assert_eq!(r.gpu.reg_read(GCVM_L2_PROTECTION_FAULT_STATUS), 0);
}

#[test]
fn injected_poisoned_page_faults_a_shader_access() {
    let mut r = rig();
    r.gpu.faults(|f| f.poisoned_page = Some(OUT));
    r.gpu.set_executor(Box::new(Recorder(Arc::default())));
    let (stream, _) = dispatch_stream();
    submit(&mut r, &stream);
    let errors = r.gpu.take_errors();
    assert!(errors.iter().any(|e| matches!(e, GpuError::Dispatch(ExecError::PageFault { fault, .. }) if fault.va == OUT)), "{errors:?}");
    assert_eq!(r.get32(phys(SIGNAL)), 0);
}

#[test]
fn dequeue_request_deactivates_the_hqd() {
    let mut r = rig();
    r.gpu.reg_write(GRBM_GFX_CNTL, 1 << 2);
    r.gpu.reg_write(CP_HQD_DEQUEUE_REQUEST, 2);
    assert_eq!(r.gpu.reg_read(CP_HQD_ACTIVE), 0);
    // A doorbell now runs nothing.
    r.put(phys(RING), &release_mem(SIGNAL, 1, 5));
    r.gpu.doorbell(COMPUTE_DOORBELL, 8);
    r.service();
    assert_eq!(r.get32(phys(SIGNAL)), 0);
}

#[test]
fn write_to_a_read_only_page_is_a_permission_fault() {
    let mut r = rig();
    let ro = VA_BASE + 0x20_0000;
    // A leaf with VALID | READABLE but not WRITEABLE (docs/hw/amd-gpu.md §3.1 bits), hand-written
    // into the PTB
    // the rig built for the first 2 MiB: map one page, then clear its WRITEABLE bit.
    r.map(ro, DATA_AREA + 0x20_0000, 1, false);
    r.gpu.reg_write(GCVM_INVALIDATE_ENG17_REQ, 0xF8_0001);
    let read_only = |r: &Rig| {
        // Find the PTE by walking the tables the same way the rig wrote them.
        let mut table = PT_AREA;
        let off = ro - VA_BASE;
        for shift in [39u32, 30, 21] {
            table = r.get64(table + ((off >> shift) & 0x1FF) * 8) & 0x0000_FFFF_FFFF_F000;
        }
        table + ((off >> 12) & 0x1FF) * 8
    };
    let pte_at = read_only(&r);
    let pte = r.get64(pte_at) & !(1 << 6);
    r.gpu.vram_write(pte_at, &pte.to_le_bytes());
    submit(&mut r, &release_mem(ro, 1, 1));
    let e = r.gpu.take_errors();
    assert!(
        e.iter()
            .any(|x| matches!(x, GpuError::PageFault { va, write: true, .. } if *va == ro)),
        "{e:?}"
    );
    let status = r.gpu.reg_read(GCVM_L2_PROTECTION_FAULT_STATUS);
    assert_eq!(status & 0xF0, 1 << 6, "write-permission fault bit");
    assert_eq!(r.get32(DATA_AREA + 0x20_0000), 0, "nothing written");
}
