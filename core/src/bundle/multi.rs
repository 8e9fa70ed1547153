//! Bundles spanning several devices (format 2.3, header flag [`FLAG_MULTI`](super::FLAG_MULTI)).
//!
//! A multi-device bundle names one or more device **roles** (`warp`, `model`, …), each with its
//! target. Every kernel and device buffer belongs to exactly one role: each role's program is a
//! complete single-target bundle (a **part**) stored inside the container's weights blob, 64-byte
//! aligned, and parsed and validated like any bundle file. Nothing crosses devices implicitly: the
//! container's per-frame **plan** ([`Xfer`]) lists every transfer the compile planned, in order:
//!
//! - `Load{role, input, host}`: host buffer `host` → input `input` of the role's part (to its device);
//! - `Run{role}`: one frame of the role's part (its state buffers advance, as for a single bundle);
//! - `Store{role, output, host}`: output `output` of the role's part → host buffer `host`.
//!
//! A cross-device copy is a `Store` from one role into a host staging buffer followed by a `Load`
//! of that buffer into another role (Adreno buffer → host → bridge into VRAM, and back), so the
//! runtime only ever does what the plan says. The container's own body is the host side: its
//! buffers are the host staging buffers (kinds `Input`, `Output`, `Scratch`, no initial bytes), its
//! inputs and outputs are the bundle's named tensors, its reference (if any) checks the whole frame,
//! and it has no kernels and no steps; its target is the first role's.
//!
//! The record follows the index-check table after the postcard `Body`, before the padding to the
//! weights blob (an appended field, evolution rule 3). Validating containers and reading their parts
//! needs the crate's `multi` feature (on with `std`); without it, a device build refuses them. Readers before 2.3 refuse the header flag, so they never run
//! a container as if it were a program.
use modelrt_hal::target::Target;
use serde::{Deserialize, Serialize};

#[cfg(feature = "multi")]
use super::schema::{BufferKind, TensorDesc};
use super::table::Table;
#[cfg(feature = "multi")]
use super::{Bundle, BundleError, WEIGHTS_ALIGN};

/// Most roles a bundle may name.
pub const MAX_ROLES: usize = 8;
/// Most host staging buffers of a multi-device bundle (the plan checks are bit sets of this width).
pub const MAX_HOST_BUFFERS: usize = 128;

/// The multi-device record.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Multi<'a> {
    #[serde(borrow)]
    pub roles: Table<'a, Role<'a>>,
    /// The per-frame transfer plan, in execution order.
    #[serde(borrow)]
    pub plan: Table<'a, Xfer>,
}

/// One device role and its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role<'a> {
    /// The role's name (`--target ROLE=TARGET` at compile time).
    pub name: &'a str,
    /// The part's target (equal to the part's own).
    #[serde(borrow)]
    pub target: Target<'a>,
    /// `(offset, len)` of the part (a complete single-target bundle) in the weights blob.
    pub part: (u64, u64),
}

/// One planned transfer or run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Xfer {
    /// Host buffer `host` → input `input` of role `role`'s part.
    Load { role: u32, input: u32, host: u32 },
    /// One frame of role `role`'s part.
    Run { role: u32 },
    /// Output `output` of role `role`'s part → host buffer `host`.
    Store { role: u32, output: u32, host: u32 },
}

#[cfg(feature = "multi")]
fn invalid(what: &'static str, index: usize) -> BundleError {
    BundleError::Invalid {
        what,
        index: u32::try_from(index).unwrap_or(u32::MAX),
    }
}

/// The bytes of role `role`'s part, if its range lies in the weights blob.
#[cfg(feature = "multi")]
pub(crate) fn part_bytes<'a>(weights: &'a [u8], role: &Role<'_>) -> Option<&'a [u8]> {
    let (start, len) = role.part;
    let start = usize::try_from(start).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    weights.get(start..end)
}

/// Host buffer `host` of the container, which must hold exactly `t`'s bytes and be host-side.
#[cfg(feature = "multi")]
fn check_host(
    b: &Bundle<'_>,
    host: u32,
    t: &TensorDesc<'_>,
    i: usize,
) -> Result<BufferKind, BundleError> {
    let buf = b
        .body()
        .buffers
        .get(host as usize)
        .map_err(|_| invalid("plan names a missing host buffer", i))?;
    if buf.size != t.byte_len() || buf.dtype != t.dtype {
        return Err(invalid(
            "plan moves a tensor into a host buffer of another size or type",
            i,
        ));
    }
    Ok(buf.kind)
}

/// Check a multi-device container: the host side, every part, and the plan's order (every part input
/// loaded once before its run from a host buffer that holds data by then, every role run exactly once,
/// outputs stored only after their run, every container output stored).
#[cfg(feature = "multi")]
pub(crate) fn validate_multi(b: &Bundle<'_>, m: &Multi<'_>) -> Result<(), BundleError> {
    let body = b.body();
    m.roles.raw().check("roles")?;
    m.plan.raw().check("plan")?;
    if m.roles.is_empty() || m.roles.len() > MAX_ROLES {
        return Err(invalid("a multi-device bundle names 1 to 8 roles", 0));
    }
    if !body.kernels.is_empty() || !body.init.is_empty() || !body.run.is_empty() {
        return Err(invalid(
            "a multi-device bundle's own body holds no kernels or steps",
            0,
        ));
    }
    if body.buffers.len() > MAX_HOST_BUFFERS {
        return Err(invalid("too many host buffers", MAX_HOST_BUFFERS));
    }
    for (i, buf) in body.buffers.iter().enumerate() {
        let buf = buf?;
        if buf.init.is_some() || matches!(buf.kind, BufferKind::Weight | BufferKind::State) {
            return Err(invalid(
                "host buffers of a multi-device bundle hold no initial data",
                i,
            ));
        }
    }
    let mut parts: [Option<Bundle<'_>>; MAX_ROLES] = Default::default();
    for (i, role) in m.roles.iter().enumerate() {
        let role = role?;
        if role.name.is_empty() {
            return Err(invalid("role without a name", i));
        }
        for other in m.roles.iter().take(i) {
            if other?.name == role.name {
                return Err(invalid("duplicate role name", i));
            }
        }
        if i == 0 && role.target != body.target {
            return Err(invalid(
                "a multi-device bundle's target is not its first role's",
                0,
            ));
        }
        if !role.part.0.is_multiple_of(WEIGHTS_ALIGN as u64) {
            return Err(invalid("part is not 64-byte aligned", i));
        }
        let bytes =
            part_bytes(b.weights(), &role).ok_or(invalid("part lies outside the weights", i))?;
        // A part is a single-target bundle: a nested container is refused before its body is read.
        let part = Bundle::parse_part(bytes)?;
        if part.body().target != role.target {
            return Err(invalid("part's target differs from its role's", i));
        }
        parts[i] = Some(part);
    }
    check_plan(b, m, &parts)
}

/// Bit `i` of a 128-bit set.
#[cfg(feature = "multi")]
fn bit(i: u32) -> u128 {
    1u128 << (i % 128)
}

#[cfg(feature = "multi")]
fn check_plan(
    b: &Bundle<'_>,
    m: &Multi<'_>,
    parts: &[Option<Bundle<'_>>; MAX_ROLES],
) -> Result<(), BundleError> {
    let mut ran: u32 = 0;
    let mut loaded = [0u64; MAX_ROLES];
    // Host buffers holding data: the container's inputs at first, then every stored buffer.
    let mut filled: u128 = 0;
    for t in b.body().inputs.iter() {
        filled |= bit(t?.buffer);
    }
    for (i, x) in m.plan.iter().enumerate() {
        let x = x?;
        let r = match x {
            Xfer::Load { role, .. } | Xfer::Run { role } | Xfer::Store { role, .. } => role,
        };
        let part = parts
            .get(r as usize)
            .and_then(Option::as_ref)
            .ok_or(invalid("plan names a missing role", i))?;
        let done = ran & (1 << r) != 0;
        match x {
            Xfer::Load { input, host, .. } => {
                let t = part
                    .body()
                    .inputs
                    .get(input as usize)
                    .map_err(|_| invalid("plan loads a missing part input", i))?;
                check_host(b, host, &t, i)?;
                if done || loaded[r as usize] & (1 << input) != 0 {
                    return Err(invalid("part input loaded twice or after its run", i));
                }
                if filled & bit(host) == 0 {
                    return Err(invalid("plan loads a host buffer nothing filled", i));
                }
                loaded[r as usize] |= 1 << input;
            }
            Xfer::Run { .. } => {
                let n = part.body().inputs.len();
                let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
                if done || loaded[r as usize] != all {
                    return Err(invalid(
                        "role runs twice or before all its inputs are loaded",
                        i,
                    ));
                }
                ran |= 1 << r;
            }
            Xfer::Store { output, host, .. } => {
                let t = part
                    .body()
                    .outputs
                    .get(output as usize)
                    .map_err(|_| invalid("plan stores a missing part output", i))?;
                if check_host(b, host, &t, i)? == BufferKind::Input {
                    return Err(invalid("plan stores into an input buffer", i));
                }
                if !done {
                    return Err(invalid("part output stored before its run", i));
                }
                filled |= bit(host);
            }
        }
    }
    if ran.count_ones() as usize != m.roles.len() {
        return Err(invalid("a role never runs", 0));
    }
    for (i, t) in b.body().outputs.iter().enumerate() {
        if filled & bit(t?.buffer) == 0 {
            return Err(invalid("an output is never stored", i));
        }
    }
    Ok(())
}
