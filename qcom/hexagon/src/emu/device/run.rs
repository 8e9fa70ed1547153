//! The model's side of a model-level invoke (method 3 on an open library: one schedule table in, a 16-byte result
//! out, the arenas as dma handles; docs/hw/fastrpc.md §6). Written from the documented table layout, not from the
//! host encoder: every word of the table is checked against the arenas the call actually passes (views inside,
//! 128-byte aligned, at most 15 buffers and 64 scalars per launch, no trailing words) before the executor runs the
//! library's `entry` under qemu. The magic, op kinds, limits and alignment are the documented layout's
//! ([`crate::fastrpc::layout`], shared with the host's encoder in `fastrpc/table.rs`); the parsing below is the model's
//! own, never the encoder's code.
use super::{einval, FastRpcModel, Run};
use crate::fastrpc::layout::{
    BUFFER_ALIGN, COPY_WORDS, MAX_HANDLES, MAX_VALS, OP_COPY, OP_LAUNCH, RESULT_LEN,
    RUN_FIXED_ARGS as FIXED, TABLE_MAGIC, VIEW_WORDS,
};
use crate::fastrpc::scalars::Scalars;
use crate::fastrpc::{Arg, FastRpcError};

/// Check a schedule table against arenas of the given lengths; returns the op count.
pub(super) fn check_table(t: &[u8], arenas: &[u64]) -> Result<u32, String> {
    if !t.len().is_multiple_of(4) {
        return Err(format!("table of {} bytes is not whole words", t.len()));
    }
    let words: Vec<u32> = t
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut at = 0usize;
    let mut next = |what: &str| -> Result<u32, String> {
        let w = words
            .get(at)
            .copied()
            .ok_or(format!("table ends inside {what}"))?;
        at += 1;
        Ok(w)
    };
    if next("the header")? != TABLE_MAGIC {
        return Err("table does not start with MRS1".into());
    }
    let nops = next("the header")?;
    let na = next("the header")? as usize;
    if na != arenas.len() {
        return Err(format!(
            "table names {na} arenas, the call passes {}",
            arenas.len()
        ));
    }
    let mut size = Vec::with_capacity(na);
    for (i, &len) in arenas.iter().enumerate() {
        let s = next("the arena sizes")?;
        if u64::from(s) > len {
            return Err(format!(
                "arena {i} claims {s} bytes, its ION buffer has {len}"
            ));
        }
        size.push(u64::from(s));
    }
    let inside = |a: u32, off: u32, n: u32| {
        size.get(a as usize)
            .is_some_and(|&s| u64::from(off) + u64::from(n) <= s)
    };
    for op in 0..nops {
        match next("an op")? {
            OP_LAUNCH => {
                let (_kernel, nb, nv) = (next("a launch")?, next("a launch")?, next("a launch")?);
                if nb as usize > MAX_HANDLES || nv as usize > MAX_VALS {
                    return Err(format!(
                        "op {op}: {nb} buffers / {nv} scalars (at most {MAX_HANDLES} / {MAX_VALS})"
                    ));
                }
                for b in 0..nb {
                    let v: Vec<u32> = (0..VIEW_WORDS)
                        .map(|_| next("a view"))
                        .collect::<Result<_, _>>()?;
                    let (a, off, n) = (v[0], v[1], v[2]);
                    if !inside(a, off, n) {
                        return Err(format!(
                            "op {op}: buffer {b} ({off}+{n} in arena {a}) lies outside its arena"
                        ));
                    }
                    if !off.is_multiple_of(BUFFER_ALIGN) {
                        return Err(format!(
                            "op {op}: buffer {b} at arena offset {off} is not {BUFFER_ALIGN}-byte aligned (the DSP faults)"
                        ));
                    }
                }
                for _ in 0..2 * nv {
                    next("the scalars")?;
                }
            }
            OP_COPY => {
                let w: Vec<u32> = (0..COPY_WORDS)
                    .map(|_| next("a copy"))
                    .collect::<Result<_, _>>()?;
                if !inside(w[0], w[1], w[4]) || !inside(w[2], w[3], w[4]) {
                    return Err(format!("op {op}: copy outside its arenas"));
                }
            }
            k => return Err(format!("op {op}: unknown kind {k}")),
        }
    }
    if at != words.len() {
        return Err(format!(
            "{} trailing words after {nops} ops",
            words.len() - at
        ));
    }
    Ok(nops)
}

impl FastRpcModel {
    /// INVOKE_ATTRS with method 3: validate the call and the table, apply any injected fault, run the library.
    pub(super) fn run_schedule(
        &self,
        handle: u32,
        sc: u32,
        args: &mut [Arg<'_>],
        fds: &[i32],
        attrs: &[u32],
    ) -> Result<(), FastRpcError> {
        let call = "INVOKE_ATTRS run";
        let s = Scalars::decode(sc);
        let n = s.outhandles as usize;
        if s.inbufs != 1 || s.outbufs != 1 || s.inhandles != 0 || s.attr != 0 || n == 0 {
            return Err(einval(
                call,
                format!("sc {sc:#010x} is not a run (method 3, 1 in, 1 out, 1–15 arenas)"),
            ));
        }
        if fds.len() != FIXED + n
            || attrs.len() != FIXED + n
            || !Self::arena_lists_ok(fds, attrs, FIXED)
        {
            return Err(einval(
                call,
                "fds must be [-1,-1, fd…] and attrs [0,0, NOVA…]",
            ));
        }
        let Arg::In(table) = &args[0] else {
            unreachable!("shape checked")
        };
        if !matches!(&args[1], Arg::Out(r) if r.len() == RESULT_LEN) {
            return Err(einval(
                call,
                format!("pra[1] must be a {RESULT_LEN}-byte output"),
            ));
        }
        let mut st = self.lock();
        Self::ready(&mut st, call)?;
        let lib = Self::lib(&st, handle, call)?;
        let mut handles = Vec::with_capacity(n);
        let mut lens = Vec::with_capacity(n);
        for &fd in &fds[FIXED..] {
            let o = Self::obj(&st, fd, call)?;
            if handles.contains(&st.fd_to_handle[&fd]) {
                return Err(einval(call, format!("arena fd {fd} passed twice")));
            }
            lens.push(o.len);
            handles.push(st.fd_to_handle[&fd]);
        }
        check_table(table, &lens).map_err(|e| einval(call, format!("schedule table: {e}")))?;
        st.counts.run += 1;
        let st = self.apply_fault(st, call)?;
        let r = self.execute(st, &handles, |exec, arenas| {
            exec.run(Run {
                lib: &lib,
                sc,
                table,
                arenas,
            })
        });
        let res = r.map_err(|e| FastRpcError::Remote {
            call: call.into(),
            reason: e,
        })?;
        if let Arg::Out(o) = &mut args[1] {
            o.copy_from_slice(&res);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::check_table;

    fn table(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    const HEAD: [u32; 4] = [0x3153_524d, 1, 1, 1024];

    #[test]
    fn accepts_a_valid_launch_and_copy() {
        let t = table(&[
            0x3153_524d,
            2,
            1,
            1024,
            0,
            3,
            1,
            1,
            0,
            256,
            512,
            7,
            0,
            1,
            0,
            0,
            0,
            512,
            64,
        ]);
        assert_eq!(check_table(&t, &[1024]), Ok(2));
    }

    #[test]
    fn refuses_what_the_dsp_would_fault_on_or_misread() {
        let cases: [(&[u32], &[u64], &str); 7] = [
            (&[0, 3, 1, 1, 0, 64, 128], &[1024], "not 128-byte aligned"),
            (&[0, 3, 1, 0, 0, 896, 256], &[1024], "outside its arena"),
            (&[0, 3, 16, 0], &[1024], "at most 15"),
            (&[1, 0, 0, 0, 1000, 64], &[1024], "copy outside"),
            (&[0, 3, 0, 0, 9], &[1024], "trailing"),
            (&[0, 3, 1, 0, 0, 0], &[1024], "ends inside"),
            (&[0, 3, 0, 0], &[512], "claims 1024 bytes"),
        ];
        for (ops, arenas, want) in cases {
            let mut w = HEAD.to_vec();
            w.extend_from_slice(ops);
            let e = check_table(&table(&w), arenas).unwrap_err();
            assert!(e.contains(want), "{ops:?}: {e}");
        }
        assert!(check_table(&table(&HEAD), &[1024, 1024])
            .unwrap_err()
            .contains("names 1 arenas"));
        assert!(check_table(&[1, 2, 3], &[1024])
            .unwrap_err()
            .contains("whole words"));
    }
}
