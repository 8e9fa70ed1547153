//! Load-time validation: every cross-reference and size in a bundle is checked once, before the first
//! launch, so that the executor and backends can trust the bundle afterwards.
use modelrt_hal::target::{DType, KernelMeta, ParamKind, Target};

use super::schema::{
    ArgRef, BufferDesc, BufferKind, Step, TensorDesc, MAX_CHECKPOINT, MAX_IO, MAX_SLICES,
    MAX_SLICE_NAME,
};
use super::{Bundle, BundleError, Table};

fn invalid(what: &'static str, index: usize) -> BundleError {
    BundleError::Invalid {
        what,
        index: index as u32,
    }
}

/// Byte length of a tensor (shape product × element size), `None` on overflow.
fn tensor_bytes(t: &TensorDesc<'_>) -> Option<u64> {
    t.shape
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))?
        .checked_mul(t.dtype.size() as u64)
}

/// `offset + size <= limit` without overflow.
fn fits(offset: u64, size: u64, limit: u64) -> bool {
    offset.checked_add(size).is_some_and(|end| end <= limit)
}

pub(crate) fn validate(b: &Bundle<'_>) -> Result<(), BundleError> {
    let body = b.body();
    // One loop over the type-erased indexes rather than one call per table: less code.
    for (raw, name) in [
        (body.buffers.raw(), "buffers"),
        (body.kernels.raw(), "kernels"),
        (body.init.raw(), "init steps"),
        (body.run.raw(), "run steps"),
        (body.inputs.raw(), "inputs"),
        (body.outputs.raw(), "outputs"),
    ] {
        raw.check(name)?;
    }

    if let Target::Cpu { baseline, .. } = body.target {
        if baseline.is_empty() {
            return Err(invalid("CPU target without a baseline", 0));
        }
    }
    // With an allocator: the first state buffer (in table order) that shares arena bytes with
    // another buffer, found in one sweep when the first state buffer is reached and reported when
    // the loop gets there, so errors come in the same order as the per-buffer check gives them.
    #[cfg(feature = "alloc")]
    let mut overlapping: Option<Option<usize>> = None;
    for (i, buf) in body.buffers.iter().enumerate() {
        let buf = buf?;
        check_buffer(b, &buf, i)?;
        if buf.kind == BufferKind::State {
            #[cfg(feature = "alloc")]
            {
                let first = match overlapping {
                    Some(found) => found,
                    None => *overlapping.insert(first_overlapping_state(body.buffers)?),
                };
                if first == Some(i) {
                    return Err(invalid("state buffer overlaps another buffer", i));
                }
            }
            #[cfg(not(feature = "alloc"))]
            check_state_disjoint(b, &buf, i)?;
        }
    }
    for (i, k) in body.kernels.iter().enumerate() {
        let k = k?;
        if k.binary.is_empty() {
            return Err(invalid("kernel has an empty binary", i));
        }
        if k.entry.is_empty() {
            return Err(invalid("kernel has no entry symbol", i));
        }
        check_meta(
            &body.target,
            &k.meta,
            k.params
                .iter()
                .filter(|p| matches!(p.kind, ParamKind::Image { .. }))
                .count(),
            i,
        )?;
    }
    check_steps(b, body.init)?;
    check_steps(b, body.run)?;
    check_tensors(b, body.inputs, "inputs", true)?;
    check_tensors(b, body.outputs, "outputs", false)?;
    check_index_checks(b)?;
    check_output_slices(b)?;
    if let Some(r) = body.reference {
        r.inputs.check_index("reference inputs")?;
        r.outputs.check_index("reference outputs")?;
        if r.inputs.len() != body.inputs.len() || r.outputs.len() != body.outputs.len() {
            return Err(invalid(
                "reference tensor count differs from the model's",
                0,
            ));
        }
        for (i, (t, d)) in body.inputs.iter().zip(r.inputs.iter()).enumerate() {
            if Some(d?.data.len() as u64) != tensor_bytes(&t?) {
                return Err(invalid("reference input has the wrong size", i));
            }
        }
        for (i, (t, d)) in body.outputs.iter().zip(r.outputs.iter()).enumerate() {
            if Some(d?.data.len() as u64) != tensor_bytes(&t?) {
                return Err(invalid("reference output has the wrong size", i));
            }
        }
        if !(r.atol >= 0.0 && r.rtol >= 0.0) {
            return Err(invalid("reference tolerance is negative or NaN", 0));
        }
    }
    Ok(())
}

fn check_buffer(b: &Bundle<'_>, buf: &BufferDesc<'_>, i: usize) -> Result<(), BundleError> {
    if buf.size == 0 {
        return Err(invalid("buffer has size 0", i));
    }
    if !fits(buf.arena_offset, buf.size, b.body().arena_size) {
        return Err(invalid("buffer lies outside the arena", i));
    }
    match buf.init {
        Some((off, len)) => {
            if !fits(off, len, b.weights().len() as u64) {
                return Err(invalid(
                    "buffer's initial data lies outside the weights blob",
                    i,
                ));
            }
            if len > buf.size {
                return Err(invalid(
                    "buffer's initial data is larger than the buffer",
                    i,
                ));
            }
        }
        None if matches!(buf.kind, BufferKind::Weight | BufferKind::State) => {
            return Err(invalid("weight buffer without initial data", i));
        }
        None => {}
    }
    Ok(())
}

/// One buffer's arena range for the disjointness sweep: `[start, end)`, whether it is a State
/// buffer, and its index in the buffer table.
#[cfg(feature = "alloc")]
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    state: bool,
    index: usize,
}

#[cfg(feature = "alloc")]
fn span(d: &BufferDesc<'_>, index: usize) -> Result<Span, BundleError> {
    let end = d
        .arena_offset
        .checked_add(d.size)
        .ok_or_else(|| invalid("buffer lies outside the arena", index))?;
    Ok(Span {
        start: d.arena_offset,
        end,
        state: d.kind == BufferKind::State,
        index,
    })
}

/// A State buffer persists across runs, so nothing else may share its arena bytes: no scratch the
/// memory plan reuses, no input that `run` uploads, no weight. (The writer lays buffers out side by
/// side, so no written bundle fails this; it guards hand-made and foreign bundles.)
/// Rule 7 of the format (`bundle/mod.rs`) still holds: format 1.0 already defined a State buffer as
/// persisting across runs, which an overlapping one cannot do; running such a bundle would give
/// wrong answers, so this enforces that existing meaning rather than adding a rule.
///
/// Cost: with an allocator (feature `alloc`, which every hosted build — CLI, C and Python APIs —
/// enables) one sweep over the buffers sorted by arena offset, O(n) for a table already in arena
/// order (everything the writer produces; nothing is allocated then) and O(n log n) otherwise.
/// A `no_std` build without an allocator has no room to sort (detecting overlaps among n read-only
/// records in constant space needs ~n² comparisons) and compares each State buffer with every
/// buffer (`check_state_disjoint`): O(states × buffers), linear for the handful of state buffers
/// real models have.
///
/// Returns the lowest table index of a State buffer that shares arena bytes with any other buffer
/// (`None` if there is none), or the first record, in table order, that does not decode or whose
/// range overflows.
#[cfg(feature = "alloc")]
fn first_overlapping_state(
    buffers: Table<'_, BufferDesc<'_>>,
) -> Result<Option<usize>, BundleError> {
    let spans = || buffers.iter().enumerate().map(|(j, d)| span(&d?, j));
    let mut in_order = true;
    let mut prev = (0u64, 0u64);
    for s in spans() {
        let s = s?;
        in_order &= prev <= (s.start, s.end);
        prev = (s.start, s.end);
    }
    if in_order {
        // Every record decoded above, so none is dropped here.
        return Ok(sweep(spans().filter_map(Result::ok)));
    }
    let mut sorted: alloc::vec::Vec<Span> = spans().collect::<Result<_, _>>()?;
    sorted.sort_unstable_by_key(|s| (s.start, s.end));
    Ok(sweep(sorted.into_iter()))
}

/// The pairwise form of the rule for State buffer `state` (record `i`), used without an allocator.
#[cfg(not(feature = "alloc"))]
fn check_state_disjoint(
    b: &Bundle<'_>,
    state: &BufferDesc<'_>,
    i: usize,
) -> Result<(), BundleError> {
    // Both ranges lie inside the arena (`check_buffer` ran for `state`; the others are checked
    // as they come), so the ends are computed checked only for robustness.
    let end = |d: &BufferDesc<'_>| d.arena_offset.checked_add(d.size);
    let s_end = end(state).ok_or_else(|| invalid("buffer lies outside the arena", i))?;
    for (j, other) in b.body().buffers.iter().enumerate() {
        if j == i {
            continue;
        }
        let other = other?;
        let o_end = end(&other).ok_or_else(|| invalid("buffer lies outside the arena", j))?;
        if state.arena_offset < o_end && other.arena_offset < s_end {
            return Err(invalid("state buffer overlaps another buffer", i));
        }
    }
    Ok(())
}

/// The lowest index of a State span that overlaps another span, for spans sorted by
/// `(start, end)`: a span overlaps an earlier one exactly when the furthest end before it passes its
/// start, and a later one exactly when the next span starts before its end. (A zero-size span sorts
/// before a span with the same start and overlaps nothing there, as in the pairwise test.)
#[cfg(feature = "alloc")]
fn sweep(sorted: impl Iterator<Item = Span>) -> Option<usize> {
    let mut it = sorted.peekable();
    let mut max_end = 0u64;
    let mut first: Option<usize> = None;
    while let Some(s) = it.next() {
        if s.state
            && (max_end > s.start || it.peek().is_some_and(|n| n.start < s.end))
            && first.is_none_or(|f| s.index < f)
        {
            first = Some(s.index);
        }
        max_end = max_end.max(s.end);
    }
    first
}

fn check_meta(
    target: &Target<'_>,
    meta: &KernelMeta<'_>,
    images: usize,
    i: usize,
) -> Result<(), BundleError> {
    match (target, meta) {
        (Target::Cpu { .. }, KernelMeta::Cpu(m)) => {
            if m.threads == 0 {
                return Err(invalid("CPU kernel with 0 threads", i));
            }
        }
        (Target::Adreno { .. }, KernelMeta::Ir3(m)) => {
            if m.immediates.len() % 4 != 0 {
                return Err(invalid("IR3 immediates are not whole dwords", i));
            }
            if m.tex_cnt as usize != m.tex_to_image.len() {
                return Err(invalid(
                    "IR3 texture map length differs from the texture count",
                    i,
                ));
            }
            // Images are numbered IBOs first, then textures: every texture's image index
            // (`ibo_cnt + t`) and the whole texture range must lie inside the image parameters.
            let ibo = u64::from(m.ibo_cnt);
            let images = images as u64;
            let past = |n: u64| ibo.checked_add(n).is_none_or(|end| end > images);
            if m.tex_to_image.iter().any(|&t| past(u64::from(t) + 1))
                || past(m.tex_to_image.len() as u64)
            {
                return Err(invalid(
                    "IR3 texture map points past the image parameters",
                    i,
                ));
            }
        }
        // The Qualcomm container is parsed (every field checked) when the Adreno device loads the kernel.
        (Target::Adreno { .. }, KernelMeta::QcomCl) => {}
        // A Hexagon kernel is a DSP shared object run on one hardware thread: CPU meta with 1 thread.
        (Target::Hexagon { .. }, KernelMeta::Cpu(m)) => {
            if m.threads != 1 {
                return Err(invalid("Hexagon kernel with more than 1 thread", i));
            }
        }
        (Target::Amd { .. }, KernelMeta::Amd(m)) => {
            if m.wavefront_size != 32 && m.wavefront_size != 64 {
                return Err(invalid("AMD kernel wavefront size is not 32 or 64", i));
            }
        }
        _ => {
            return Err(invalid(
                "kernel metadata does not match the bundle target",
                i,
            ))
        }
    }
    Ok(())
}

fn buffer(b: &Bundle<'_>, id: u32, i: usize) -> Result<BufferDesc<'static>, BundleError> {
    // Only the numeric fields are needed here; drop the label's borrow.
    let d = b
        .body()
        .buffers
        .get(id as usize)
        .map_err(|_| invalid("step refers to a missing buffer", i))?;
    Ok(BufferDesc { label: "", ..d })
}

fn check_steps(b: &Bundle<'_>, steps: Table<'_, Step>) -> Result<(), BundleError> {
    let body = b.body();
    for (i, step) in steps.iter().enumerate() {
        let step = step?;
        if let Step::LaunchThreads {
            global,
            local,
            threads,
            ..
        } = &step
        {
            // Only the last group of a dimension may be partial, and it must run at least one item.
            let ok = (0..3).all(|d| {
                let full = u64::from(global[d]) * u64::from(local[d]);
                let below = full.saturating_sub(u64::from(local[d]));
                u64::from(threads[d]) > below && u64::from(threads[d]) <= full
            });
            if !ok {
                return Err(invalid(
                    "launch thread counts are not within its last work groups",
                    i,
                ));
            }
        }
        match step {
            Step::Launch {
                kernel,
                args,
                global,
                local,
            }
            | Step::LaunchThreads {
                kernel,
                args,
                global,
                local,
                ..
            } => {
                let k = body
                    .kernels
                    .get(kernel as usize)
                    .map_err(|_| invalid("launch refers to a missing kernel", i))?;
                if args.len() != k.params.len() {
                    return Err(invalid(
                        "launch argument count differs from the kernel's parameters",
                        i,
                    ));
                }
                if global.contains(&0) || local.contains(&0) {
                    return Err(invalid("launch with a zero global or local size", i));
                }
                for (p, a) in k.params.iter().zip(args.iter()) {
                    match (p.kind, a) {
                        (
                            ParamKind::Buffer | ParamKind::Image { .. },
                            ArgRef::Buffer {
                                buffer: id,
                                offset,
                                size,
                            },
                        ) => {
                            let buf = buffer(b, *id, i)?;
                            if *size == 0 || !fits(*offset, *size, buf.size) {
                                return Err(invalid("launch argument lies outside its buffer", i));
                            }
                            if let ParamKind::Image { height, width } = p.kind {
                                // RGBA texels: height × width × 4 channels × element size.
                                let need = u64::from(height)
                                    .checked_mul(u64::from(width))
                                    .and_then(|n| n.checked_mul(4))
                                    .and_then(|n| n.checked_mul(p.dtype.size() as u64));
                                if need.is_none_or(|need| need > *size) {
                                    return Err(invalid(
                                        "image argument is smaller than its image shape",
                                        i,
                                    ));
                                }
                            }
                        }
                        (ParamKind::CoreId | ParamKind::Var, ArgRef::Int(_)) => {}
                        _ => {
                            return Err(invalid(
                                "launch argument kind differs from the kernel parameter",
                                i,
                            ))
                        }
                    }
                }
                if let KernelMeta::Cpu(m) = k.meta {
                    let has_core = k.params.iter().any(|p| p.kind == ParamKind::CoreId);
                    if !has_core && m.threads != 1 {
                        return Err(invalid(
                            "threaded CPU kernel without a core_id parameter",
                            i,
                        ));
                    }
                }
            }
            Step::Copy { dst, src, size } => {
                let d = buffer(b, dst.buffer, i)?;
                let s = buffer(b, src.buffer, i)?;
                if size == 0 || !fits(dst.offset, size, d.size) || !fits(src.offset, size, s.size) {
                    return Err(invalid("copy lies outside its buffers", i));
                }
                // Both views lie inside buffers that lie inside the arena, so these sums are
                // bounded by `arena_size`; they are still computed checked.
                let overlap = (|| {
                    let da = d.arena_offset.checked_add(dst.offset)?;
                    let sa = s.arena_offset.checked_add(src.offset)?;
                    Some(da < sa.checked_add(size)? && sa < da.checked_add(size)?)
                })();
                match overlap {
                    Some(false) => {}
                    Some(true) => return Err(invalid("copy source and destination overlap", i)),
                    None => return Err(invalid("copy lies outside the arena", i)),
                }
            }
        }
    }
    Ok(())
}

/// Format 2.3's index checks: each names an integer input, a period of at least 1 with a phase
/// below it, and a non-empty range.
fn check_index_checks(b: &Bundle<'_>) -> Result<(), BundleError> {
    let checks = b.index_checks();
    checks.raw().check("index checks")?;
    for (i, c) in checks.iter().enumerate() {
        let c = c?;
        let t = b
            .body()
            .inputs
            .get(c.input as usize)
            .map_err(|_| invalid("index check names no input", i))?;
        let int = matches!(
            t.dtype,
            DType::I8
                | DType::I16
                | DType::I32
                | DType::I64
                | DType::U8
                | DType::U16
                | DType::U32
                | DType::U64
        );
        if !int {
            return Err(invalid("index check on a non-integer input", i));
        }
        if c.period == 0 || c.phase >= c.period || c.min > c.max {
            return Err(invalid("index check has an empty range or period", i));
        }
    }
    Ok(())
}

/// Format 2.4's output slices: each names an output and a non-empty range inside its last
/// dimension; names are non-empty, bounded and unique; the checkpoint is bounded.
fn check_output_slices(b: &Bundle<'_>) -> Result<(), BundleError> {
    let slices = b.output_slices();
    slices.raw().check("output slices")?;
    if slices.len() > MAX_SLICES {
        return Err(invalid("too many output slices", 0));
    }
    if b.checkpoint().is_some_and(|c| c.len() > MAX_CHECKPOINT) {
        return Err(invalid("checkpoint string is too long", 0));
    }
    for (i, s) in slices.iter().enumerate() {
        let s = s?;
        let t = b
            .body()
            .outputs
            .get(s.output as usize)
            .map_err(|_| invalid("output slice names no output", i))?;
        let last = t.shape.last().copied().unwrap_or(1);
        if s.start >= s.stop || s.stop > last {
            return Err(invalid(
                "output slice is empty or outside its output's last dimension",
                i,
            ));
        }
        if s.name.is_empty() || s.name.len() > MAX_SLICE_NAME {
            return Err(invalid("output slice name is empty or too long", i));
        }
        for other in slices.iter().take(i) {
            if other?.name == s.name {
                return Err(invalid("duplicate output slice name", i));
            }
        }
    }
    Ok(())
}

fn check_tensors(
    b: &Bundle<'_>,
    t: Table<'_, TensorDesc<'_>>,
    what: &'static str,
    input: bool,
) -> Result<(), BundleError> {
    if t.len() > MAX_IO {
        return Err(invalid(
            if input {
                "too many inputs"
            } else {
                "too many outputs"
            },
            0,
        ));
    }
    if !input && t.is_empty() {
        return Err(invalid("bundle has no outputs", 0));
    }
    for (i, d) in t.iter().enumerate() {
        let d = d?;
        if d.name.is_empty() {
            return Err(invalid(
                if input {
                    "input without a name"
                } else {
                    "output without a name"
                },
                i,
            ));
        }
        let bytes = tensor_bytes(&d);
        let buf = b
            .body()
            .buffers
            .get(d.buffer as usize)
            .map_err(|_| invalid(what, i))?;
        if input && buf.kind == BufferKind::State {
            // `run` uploads every input, which would overwrite the state it is meant to keep.
            return Err(invalid("input lies in a state buffer", i));
        }
        match bytes {
            Some(n) if n > 0 && fits(d.offset, n, buf.size) => {}
            _ => {
                return Err(invalid(
                    if input {
                        "input does not fit its buffer"
                    } else {
                        "output does not fit its buffer"
                    },
                    i,
                ))
            }
        }
        for (j, other) in t.iter().enumerate().take(i) {
            if other?.name == d.name {
                return Err(invalid(
                    if input {
                        "duplicate input name"
                    } else {
                        "duplicate output name"
                    },
                    j,
                ));
            }
        }
    }
    Ok(())
}
