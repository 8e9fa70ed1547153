//! Execution vectors for the atomics beyond the local add…xor (docs/hw/adreno-kgsl-pm4.md §16.10): local
//! `inc`/`dec`/`cmpxchg` and global `atomic.g.OP` across work groups and threads. Expected values follow from the
//! read-modify-write rule (each fiber gets the old word, memory gets OP(old, operand); cmpxchg's pair is (new,
//! compare)) and are checked only through order-independent consequences.
mod blob_asm;
use blob_asm::*;
use modelrt_ir3::{run_threads, Launch, Program};

/// Every fiber of one 8-fiber work group runs the local atomic `opc` on l[0] = `init` with src = r3.x = a(lid),
/// r3.y = b(lid); returns (final word, old values).
fn local_rmw(opc: u64, init: u32, a: i64, b: i64) -> (u32, Vec<u32>) {
    let p = vec![
        mov_imm(U32, r(5, 0), 0),
        mov_imm(U32, r(6, 0), init),
        stl(r(5, 0), r(6, 0)),
        BAR,
        alu_ri(ADD_U, r(3, 0), r(0, 0), a),
        mov_imm(U32, r(3, 1), b as u32),
        atomic(opc, U32, false, r(1, 0), r(5, 0), r(3, 0)),
        BAR,
        ldl(r(1, 1), r(5, 0)),
    ];
    let out = exec(&store(p, &[r(1, 0), r(1, 1)]), 8, 1, &[], &[]).unwrap();
    (out[128], col(&out, 0, 8))
}

#[test]
fn local_inc_dec_and_cmpxchg() {
    let sorted = |mut v: Vec<u32>| {
        v.sort();
        v
    };
    // inc: 8 fibers from 5 → 13, the olds are 5…12 once each; dec: 5 → 5 − 8 (wraps), olds 5, 4, …, −2.
    let (fin, old) = local_rmw(19, 5, 0, 0);
    assert_eq!(fin, 13);
    assert_eq!(sorted(old), (5..13).collect::<Vec<u32>>());
    let (fin, old) = local_rmw(20, 5, 0, 0);
    assert_eq!(fin, 5u32.wrapping_sub(8));
    assert_eq!(
        sorted(old),
        sorted((0..8).map(|k| 5u32.wrapping_sub(k)).collect())
    );
    // cmpxchg with the pair (new = lid + 100, compare = 7) on l[0] = 7: exactly one fiber finds 7 and swaps in
    // its value; every later fiber finds that value and leaves it.
    let (fin, old) = local_rmw(21, 7, 100, 7);
    let winners: Vec<usize> = (0..8).filter(|&l| old[l] == 7).collect();
    assert_eq!(winners.len(), 1, "{old:?}");
    assert_eq!(fin, 100 + winners[0] as u32);
    assert!(old.iter().all(|&o| o == 7 || o == fin));
    // A compare value no fiber finds: nothing changes.
    let (fin, old) = local_rmw(21, 7, 100, 8);
    assert_eq!((fin, old), (7, vec![7; 8]));
}

/// Two work groups of 4 fibers run global `atomic.g.OP` on dword 256 (= `init`) with src = r3.x = a(lid),
/// r3.y = b; returns (final word, old values of the 8 fibers).
fn global_rmw(opc: u64, ty: u64, init: u32, a: i64, b: u32) -> (u32, Vec<u32>) {
    let mut p = addr_in(r(5, 0), 512).to_vec();
    p.extend([
        alu_ri(ADD_U, r(5, 0), r(5, 0), 512),
        alu_ri(ADD_U, r(3, 0), r(0, 0), a),
        mov_imm(U32, r(3, 1), b),
        atomic(opc, ty, true, r(1, 0), r(5, 0), r(3, 0)),
        // Each work group stores its olds at dwords 4·wg + lid.
        alu_ri(MULL_U, r(6, 0), r(48, 0), 4),
        alu_ri(ADD_U, r(6, 0), r(6, 0), 0),
    ]);
    // r6.x += lid (add.u with a register source).
    p.push(r(0, 0) << 16 | r(6, 0) | r(6, 0) << 32 | 1 << 52 | ADD_U << 53 | 2 << 61);
    p.extend(addr_in(r(40, 0), 0));
    p.extend([stg_idx(r(40, 0), r(6, 0), r(1, 0)), END]);
    let mut init_mem = vec![0u32; 256];
    init_mem.push(init);
    let out = exec(&p, 4, 2, &init_mem, &[]).unwrap();
    (out[256], out[..8].to_vec())
}

#[test]
fn global_atomics_update_one_word_across_work_groups() {
    // add lid + 1 from 1000: final 1000 + 2·(1 + 2 + 3 + 4); the olds are 8 distinct running sums.
    let (fin, mut old) = global_rmw(16, U32, 1000, 1, 0);
    assert_eq!(fin, 1020);
    old.sort();
    old.dedup();
    assert_eq!(old.len(), 8);
    assert!(old.iter().all(|o| (1000..1020).contains(o)));
    // max.s32 of lid − 2 against −5: the largest operand, 1; unsigned max of the same bits: −1 = 0xFFFFFFFF.
    assert_eq!(global_rmw(23, S32, -5i32 as u32, -2, 0).0, 1);
    assert_eq!(global_rmw(23, U32, -5i32 as u32, -2, 0).0, 0xFFFF_FFFF);
    // inc: 8 fibers from 0.
    assert_eq!(global_rmw(19, U32, 0, 0, 0).0, 8);
    // cmpxchg (new = lid + 50, compare = 3) on 3: one fiber wins.
    let (fin, old) = global_rmw(21, U32, 3, 50, 3);
    assert_eq!(old.iter().filter(|&&o| o == 3).count(), 1, "{old:?}");
    assert!((50..54).contains(&fin));
}

#[test]
fn a_global_atomic_outside_every_object_is_a_gpu_fault() {
    let p = vec![
        mov_imm(U32, r(5, 0), 0x1000),
        mov_imm(U32, r(5, 1), 0),
        atomic(16, U32, true, r(1, 0), r(5, 0), r(3, 0)),
        END,
    ];
    let err = exec(&p, 4, 1, &[], &[]).unwrap_err();
    assert!(
        err.contains("atomic.g.add")
            && err.contains("GPU fault in fiber 0")
            && err.contains("0x1000"),
        "{err}"
    );
}

#[test]
fn a_shader_with_a_global_atomic_runs_its_work_groups_in_order_even_with_threads() {
    // 24 work groups of 64 fibers (three batches of 512) each add 1 to one word: 1536 whatever the thread count.
    // (Run on separate threads, each batch would see the word as the dispatch began and the last log would win.)
    let mut p = addr_in(r(5, 0), 0).to_vec();
    p.extend([
        mov_imm(U32, r(3, 0), 1),
        atomic(16, U32, true, r(1, 0), r(5, 0), r(3, 0)),
        END,
    ]);
    let image: Vec<u8> = p.iter().flat_map(|w| w.to_le_bytes()).collect();
    let prog = Program::decode("count", &image).unwrap();
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    for threads in [1, 3] {
        let mut mem = Mem(vec![0u8; 64]);
        let launch = Launch {
            consts: &c,
            groups: [24, 1, 1],
            local: [64, 1, 1],
            wgid_reg: None,
            lid_reg: Some(0),
            textures: &[],
            uavs: &[],
            samplers: &[],
            ubos: &[],
            bindless: [0; 5],
            wgsize_reg: None,
            wgoffset_reg: None,
            shared_bytes: 0,
            items: None,
        };
        run_threads(&prog, &launch, &mut mem, threads).unwrap();
        assert_eq!(
            u32::from_le_bytes([mem.0[0], mem.0[1], mem.0[2], mem.0[3]]),
            1536,
            "{threads} threads"
        );
    }
}
