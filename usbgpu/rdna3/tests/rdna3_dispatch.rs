//! The RDNA3 interpreter as the GPU model's shader executor: the dispatch ABI (user SGPRs, the
//! workgroup ids after them, packed v0 thread ids, EXEC of a partial wave), `s_barrier` + LDS
//! across the waves of a workgroup, and the loud failures — wave64 refused, a wild address is a
//! page fault, an unknown instruction names its offset and dwords, a runaway loop is a hang.
//! Programs are hand-assembled (`rdna3_support/asm.rs`); expected memory contents follow from the
//! ABI definition, written out in each test.
mod rdna3_support;

use modelrt_rdna3::shader::{DispatchRequest, ExecError, MemFault, ShaderExecutor};
use modelrt_rdna3::Rdna3;
use rdna3_support::asm::*;
use rdna3_support::flat::FlatMemory;

const CODE: u64 = 0x10_0000;
const KARGS: u64 = 0x20_0000;
const OUT: u64 = 0x30_0000;
/// RNE, denormals preserved (f32 and f16/f64), DX10_CLAMP, IEEE_MODE.
const RSRC1: u32 = 3 << 16 | 3 << 18 | 1 << 21 | 1 << 23;
/// USER_SGPR_COUNT = 2 (the kernarg pointer), TGID_X_EN.
const RSRC2: u32 = 2 << 1 | 1 << 7;

fn words(prog: &[&[u32]]) -> Vec<u8> {
    prog.iter()
        .flat_map(|i| i.iter())
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

fn setup(code: &[u8], out_words: usize) -> FlatMemory {
    let mut m = FlatMemory::default();
    m.map(CODE, 4096);
    m.put(CODE, code);
    m.map(KARGS, 4096);
    m.put(KARGS, &OUT.to_le_bytes());
    m.map(OUT, (out_words * 4).next_multiple_of(4096));
    m.put(OUT, &vec![0xee; out_words * 4]);
    m
}

fn request(local: [u32; 3], grid: [u32; 3], rsrc2: u32) -> DispatchRequest {
    let mut user_data = [0; 16];
    user_data[0] = KARGS as u32;
    user_data[1] = (KARGS >> 32) as u32;
    DispatchRequest {
        code_va: CODE,
        pgm_rsrc1: RSRC1,
        pgm_rsrc2: rsrc2,
        pgm_rsrc3: 0,
        user_data,
        workgroup_size: local,
        start: [0; 3],
        grid,
        initiator: 1 | 1 << 15,
        tmpring_size: 0,
    }
}

fn out_words(m: &mut FlatMemory, n: usize) -> Vec<u32> {
    m.get(OUT, n * 4)
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Each thread stores its v0 at OUT + (wg_x · 32 + x + 8·y) · 4, wg_x read from s2 (the first
/// SGPR after the two user SGPRs).
fn store_ids_program() -> Vec<u8> {
    words(&[
        &smem(1, 4, 0, 0), // s_load_b64 s[4:5], s[0:1], 0
        &[sopp(9, 0)],     // s_waitcnt 0
        &vop3(528, 2, [v(0), int(10), int(10)], 0, 0, false), // v_bfe_u32 v2, v0, 10, 10 (y)
        &[vop2(27, 1, LIT, 0), 0x3ff], // v_and_b32 v1, 0x3ff, v0 (x)
        &vop3(582, 1, [v(2), int(3), v(1)], 0, 0, false), // v_lshl_add_u32 v1, v2, 3, v1
        &[sop2(8, 6, s(2), int(5))], // s_lshl_b32 s6, s2, 5
        &[vop2(37, 1, s(6), 1)], // v_add_nc_u32 v1, s6, v1
        &[vop2(24, 1, int(2), 1)], // v_lshlrev_b32 v1, 2, v1
        &vop3sd(768, 3, VCC, [s(4), v(1), 0]), // v_add_co_u32 v3, vcc, s4, v1
        &vop3sd(256 + 32, 4, NULL, [s(5), int(0), s(VCC)]), // v_add_co_ci_u32 v4, null, s5, 0, vcc
        &global(26, 0, 3, 0, NULL, 0), // global_store_b32 v[3:4], v0, off
        &[sopp(48, 0)],    // s_endpgm
    ])
}

#[test]
fn dispatch_abi_user_sgprs_workgroup_ids_and_packed_thread_ids() {
    // Workgroup (5, 3, 1) = 15 threads: one wave with lanes 15..31 inactive. Grid of 3 groups.
    // TIDIG_COMP_CNT = 1 (x and y). Thread (x, y) of group g writes x | y << 10 at slot
    // g·32 + x + 8y; every other slot keeps the 0xeeeeeeee fill.
    let mut m = setup(&store_ids_program(), 96);
    let mut ex = Rdna3::new();
    ex.dispatch(&request([5, 3, 1], [3, 1, 1], RSRC2 | 1 << 11), &mut m)
        .unwrap();
    let got = out_words(&mut m, 96);
    let mut want = vec![0xeeee_eeee; 96];
    for g in 0..3 {
        for y in 0..3 {
            for x in 0..5 {
                want[g * 32 + x + 8 * y] = (x | y << 10) as u32;
            }
        }
    }
    assert_eq!(got, want);
    // TIDIG_COMP_CNT = 0: only x is provided, so y reads as 0 in v0 and threads with the same
    // x collide on slot g·32 + x, the last writer (highest y, later lane) winning: value x.
    let mut m = setup(&store_ids_program(), 96);
    ex.dispatch(&request([5, 3, 1], [1, 1, 1], RSRC2), &mut m)
        .unwrap();
    let got = out_words(&mut m, 8);
    assert_eq!(got[..5], [0, 1, 2, 3, 4]);
    assert_eq!(got[5..8], [0xeeee_eeee; 3]);
}

#[test]
fn barrier_orders_lds_traffic_between_waves() {
    // 64 threads = 2 waves. Thread t stores t at LDS[4t], waits at s_barrier, then reads
    // LDS[4(63 − t)] and writes it to OUT[t]: expected OUT[t] = 63 − t. Without the barrier wave 0
    // would run to the end first and read 0 for t < 32.
    let prog = words(&[
        &smem(1, 4, 0, 0),                     // s_load_b64 s[4:5], s[0:1], 0
        &[vop2(24, 1, int(2), 0)],             // v_lshlrev_b32 v1, 2, v0
        &ds(13, 0, 1, 0, 0),                   // ds_store_b32 v1, v0
        &[sopp(9, 0)],                         // s_waitcnt 0
        &[sopp(61, 0)],                        // s_barrier
        &[vop2(38, 2, int(63), 0)],            // v_sub_nc_u32 v2, 63, v0
        &[vop2(24, 2, int(2), 2)],             // v_lshlrev_b32 v2, 2, v2
        &ds(54, 3, 2, 0, 0),                   // ds_load_b32 v3, v2
        &vop3sd(768, 4, VCC, [s(4), v(1), 0]), // v_add_co_u32 v4, vcc, s4, v1
        &vop3sd(256 + 32, 5, NULL, [s(5), int(0), s(VCC)]),
        &global(26, 0, 4, 3, NULL, 0), // global_store_b32 v[4:5], v3, off
        &[sopp(48, 0)],
    ]);
    let mut m = setup(&prog, 64);
    let mut ex = Rdna3::new();
    // LDS_SIZE = 1 granule (512 bytes).
    ex.dispatch(&request([64, 1, 1], [1, 1, 1], RSRC2 | 1 << 15), &mut m)
        .unwrap();
    let want: Vec<u32> = (0..64).map(|t| 63 - t).collect();
    assert_eq!(out_words(&mut m, 64), want);
    // With no LDS allocated (LDS_SIZE = 0) every access is out of range: loads return 0.
    let mut m = setup(&prog, 64);
    ex.dispatch(&request([64, 1, 1], [1, 1, 1], RSRC2), &mut m)
        .unwrap();
    assert_eq!(out_words(&mut m, 64), vec![0; 64]);
}

#[test]
fn scratch_is_private_to_each_lane() {
    // Every lane stores its v0 (= its thread id) at private offset 8, then loads private offset 8
    // (same address in every lane) into v5 and private offset 1000 (outside the 512 bytes per lane
    // that TMPRING_SIZE.WAVESIZE = 128 gives: 128 × 4) into v6, and writes v5 to OUT[t] and v6 to
    // OUT[32 + t]. Private memory is per lane, so OUT[t] = t; out-of-range loads read 0.
    let prog = words(&[
        &smem(1, 4, 0, 0),
        &scratch(26, 0, None, 0, 8), // scratch_store_b32 off, v0, off offset:8
        &scratch(20, 5, None, 0, 8), // scratch_load_b32 v5, off, off offset:8
        &[vop1(1, 7, LIT), 1000],    // v_mov_b32 v7, 1000
        &scratch(20, 6, Some(7), 0, 0), // scratch_load_b32 v6, v7, off
        &[vop2(24, 1, int(2), 0)],   // v_lshlrev_b32 v1, 2, v0
        &vop3sd(768, 3, VCC, [s(4), v(1), 0]), // v_add_co_u32 v3, vcc, s4, v1
        &vop3sd(256 + 32, 4, NULL, [s(5), int(0), s(VCC)]),
        &global(26, 0, 3, 5, NULL, 0), // global_store_b32 v[3:4], v5, off
        &global(26, 0, 3, 6, NULL, 128), // global_store_b32 v[3:4], v6, off offset:128
        &[sopp(48, 0)],
    ]);
    let mut m = setup(&prog, 64);
    let mut req = request([32, 1, 1], [1, 1, 1], RSRC2 | 1); // SCRATCH_EN
    req.tmpring_size = 128 << 12 | 1;
    Rdna3::new().dispatch(&req, &mut m).unwrap();
    let got = out_words(&mut m, 64);
    let want: Vec<u32> = (0..32).chain(std::iter::repeat_n(0, 32)).collect();
    assert_eq!(got, want);
    // SCRATCH_EN without a scratch size is refused.
    req.tmpring_size = 0;
    assert!(matches!(
        Rdna3::new().dispatch(&req, &mut m),
        Err(ExecError::BadDispatch { .. })
    ));
}

#[test]
fn rewritten_code_at_the_same_address_is_decoded_again() {
    // One thread stores the constant k at OUT[0]. Dispatch with k = 1, overwrite the code in place
    // with k = 2 and dispatch again on the same executor: the second result must be 2 (a program
    // cached by address alone would still store 1).
    let prog = |k: u32| {
        words(&[
            &smem(1, 4, 0, 0),             // s_load_b64 s[4:5], s[0:1], 0
            &[vop1(1, 1, int(k as i32))],  // v_mov_b32 v1, k
            &[vop1(1, 2, s(4))],           // v_mov_b32 v2, s4
            &[vop1(1, 3, s(5))],           // v_mov_b32 v3, s5
            &global(26, 0, 2, 1, NULL, 0), // global_store_b32 v[2:3], v1, off
            &[sopp(48, 0)],
        ])
    };
    let mut m = setup(&prog(1), 1);
    let mut ex = Rdna3::new();
    let req = request([1, 1, 1], [1, 1, 1], RSRC2);
    ex.dispatch(&req, &mut m).unwrap();
    assert_eq!(out_words(&mut m, 1), [1]);
    m.put(CODE, &prog(2));
    ex.dispatch(&req, &mut m).unwrap();
    assert_eq!(out_words(&mut m, 1), [2]);
}

#[test]
fn wild_store_is_a_page_fault() {
    // OUT + 0x10000 · 4 … is past the one mapped page of OUT: the first active lane faults there.
    let prog = words(&[
        &smem(1, 4, 0, 0),
        &[vop2(37, 1, LIT, 0), 0x0004_0000], // v_add_nc_u32 v1, 0x40000, v0
        &vop3sd(768, 3, VCC, [s(4), v(1), 0]), // v_add_co_u32 v3, vcc, s4, v1
        &vop3sd(256 + 32, 4, NULL, [s(5), int(0), s(VCC)]),
        &global(26, 0, 3, 0, NULL, 0),
        &[sopp(48, 0)],
    ]);
    let mut m = setup(&prog, 16);
    let err = Rdna3::new()
        .dispatch(&request([32, 1, 1], [1, 1, 1], RSRC2), &mut m)
        .unwrap_err();
    assert_eq!(
        err,
        ExecError::PageFault {
            code_va: CODE,
            fault: MemFault {
                va: OUT + 0x4_0000,
                write: true
            }
        }
    );
}

#[test]
fn unknown_instruction_is_reported_with_offset_and_dwords() {
    // s_nop 0, then SOPP opcode 127 (not an RDNA3 operation) at byte offset 4.
    let bad = sopp(127, 0);
    let prog = words(&[&[sopp(0, 0)], &[bad], &[sopp(48, 0)]]);
    let mut m = setup(&prog, 1);
    let err = Rdna3::new()
        .dispatch(&request([1, 1, 1], [1, 1, 1], RSRC2), &mut m)
        .unwrap_err();
    match err {
        ExecError::Unsupported {
            code_va,
            offset,
            dwords,
            ..
        } => {
            assert_eq!((code_va, offset), (CODE, 4));
            assert_eq!(dwords[0], bad);
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn wave64_and_unmodelled_modes_are_refused() {
    let prog = words(&[&[sopp(48, 0)]]);
    let mut m = setup(&prog, 1);
    let mut ex = Rdna3::new();
    let mut req = request([64, 1, 1], [1, 1, 1], RSRC2);
    req.initiator = 1; // CS_W32_EN clear
    assert!(matches!(
        ex.dispatch(&req, &mut m),
        Err(ExecError::BadDispatch { .. })
    ));
    let mut req = request([32, 1, 1], [1, 1, 1], RSRC2);
    req.pgm_rsrc1 &= !(3 << 16); // f32 denormals flushed
    assert!(matches!(
        ex.dispatch(&req, &mut m),
        Err(ExecError::BadDispatch { .. })
    ));
    let req = request([32, 0, 1], [1, 1, 1], RSRC2);
    assert!(matches!(
        ex.dispatch(&req, &mut m),
        Err(ExecError::BadDispatch { .. })
    ));
}

#[test]
fn runaway_loop_is_a_hang() {
    // s_branch -1 jumps to itself forever (target = next PC − 4).
    let prog = words(&[&[sopp(32, -1)], &[sopp(48, 0)]]);
    let mut m = setup(&prog, 1);
    let err = Rdna3::new()
        .with_budget(1000)
        .dispatch(&request([1, 1, 1], [1, 1, 1], RSRC2), &mut m)
        .unwrap_err();
    assert_eq!(
        err,
        ExecError::Hang {
            code_va: CODE,
            budget: 1000
        }
    );
}

/// Workgroup g's threads access OUT + g·1024 + 4x (x = thread id): loads it first when `load`,
/// then store their thread id there. OUT maps one page, so workgroups 0–3 stay inside and
/// workgroups 4–7 are past it.
fn per_group_program(load: bool) -> Vec<u8> {
    let mut p: Vec<&[u32]> = Vec::new();
    let head = [
        smem(1, 4, 0, 0),                               // s_load_b64 s[4:5], s[0:1], 0
        [sop2(8, 6, s(2), int(10)), sopp(9, 0)],        // s_lshl_b32 s6, s2, 10; s_waitcnt 0
        [vop2(24, 1, int(2), 0), vop2(37, 1, s(6), 1)], // v_lshlrev_b32 v1, 2, v0; v_add_nc_u32 v1, s6, v1
    ];
    let carry = vop3sd(768, 3, VCC, [s(4), v(1), 0]); // v_add_co_u32 v3, vcc, s4, v1
    let high = vop3sd(256 + 32, 4, NULL, [s(5), int(0), s(VCC)]); // v_add_co_ci_u32 v4, null, s5, 0, vcc
    let ld = global(20, 5, 3, 0, NULL, 0); // global_load_b32 v5, v[3:4], off
    let st = global(26, 0, 3, 0, NULL, 0); // global_store_b32 v[3:4], v0, off
    let end = [sopp(48, 0)];
    for h in &head {
        p.push(h);
    }
    p.push(&carry);
    p.push(&high);
    if load {
        p.push(&ld);
    }
    p.push(&st);
    p.push(&end);
    words(&p)
}

#[test]
fn a_fault_in_a_parallel_workgroup_is_the_serial_one() {
    // Grid of 8 workgroups of 32 threads on 4 threads. Workgroup 4 is the first whose address
    // (OUT + 4·1024 = OUT + 0x1000, lane 0 first) is unmapped: the dispatch fails there, a read
    // fault with the load and a write fault without it, naming the kernel's code address; the
    // workgroups before it have written their thread ids, as a serial run would have.
    for load in [false, true] {
        for threads in [4, 1] {
            let mut m = setup(&per_group_program(load), 1024);
            let mut ex = Rdna3::new().with_threads(threads);
            let err = ex
                .dispatch(&request([32, 1, 1], [8, 1, 1], RSRC2), &mut m)
                .unwrap_err();
            assert_eq!(
                err,
                ExecError::PageFault {
                    code_va: CODE,
                    fault: MemFault {
                        va: OUT + 0x1000,
                        write: !load
                    }
                },
                "load {load}, {threads} threads"
            );
            let got = out_words(&mut m, 1024);
            for g in 0..4 {
                let want: Vec<u32> = (0..32)
                    .chain(std::iter::repeat_n(0xeeee_eeee, 224))
                    .collect();
                assert_eq!(got[g * 256..g * 256 + 256], want, "workgroup {g}");
            }
            assert_eq!(ex.stats().parallel_dispatches, u64::from(threads > 1));
        }
    }
}

#[test]
fn parallel_workgroups_see_their_own_writes_and_the_last_overlapping_write_wins() {
    // Every workgroup g (8 of 32 threads, on 4 threads) stores g at OUT[x] — the same 32 words
    // for all — then loads OUT[x] back and stores what it read at OUT[32·(g + 1) + x]. In
    // workgroup order, the last writer of OUT[x] is workgroup 7; each workgroup reads its own
    // store back (g), never the initial fill or another workgroup's. 7 workgroups × 32 words × 4
    // bytes overwrite bytes an earlier workgroup wrote.
    let prog = words(&[
        &smem(1, 4, 0, 0),                     // s_load_b64 s[4:5], s[0:1], 0
        &[sopp(9, 0)],                         // s_waitcnt 0
        &[vop1(1, 1, s(2))],                   // v_mov_b32 v1, s2
        &[vop2(24, 2, int(2), 0)],             // v_lshlrev_b32 v2, 2, v0
        &vop3sd(768, 3, VCC, [s(4), v(2), 0]), // v_add_co_u32 v3, vcc, s4, v2
        &vop3sd(256 + 32, 4, NULL, [s(5), int(0), s(VCC)]),
        &global(26, 0, 3, 1, NULL, 0), // global_store_b32 v[3:4], v1, off
        &global(20, 5, 3, 0, NULL, 0), // global_load_b32 v5, v[3:4], off
        &[sopp(9, 0)],
        &[sop2(0, 6, s(2), int(1))], // s_add_u32 s6, s2, 1
        &[sop2(8, 6, s(6), int(7))], // s_lshl_b32 s6, s6, 7
        &[vop2(37, 2, s(6), 2)],     // v_add_nc_u32 v2, s6, v2
        &vop3sd(768, 3, VCC, [s(4), v(2), 0]),
        &vop3sd(256 + 32, 4, NULL, [s(5), int(0), s(VCC)]),
        &global(26, 0, 3, 5, NULL, 0), // global_store_b32 v[3:4], v5, off
        &[sopp(48, 0)],
    ]);
    let mut m = setup(&prog, 288);
    let mut ex = Rdna3::new().with_threads(4);
    ex.dispatch(&request([32, 1, 1], [8, 1, 1], RSRC2), &mut m)
        .unwrap();
    let got = out_words(&mut m, 288);
    let mut want = vec![7u32; 32];
    for g in 0..8 {
        want.extend(std::iter::repeat_n(g, 32));
    }
    assert_eq!(got, want);
    let st = ex.stats();
    assert_eq!(
        (st.parallel_dispatches, st.overlapping_writes),
        (1, 7 * 32 * 4)
    );
}
