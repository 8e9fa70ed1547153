//! Writing a multi-device bundle (format 2.3, see `multi`) from finished single-target bundles, one
//! per device role (feature `alloc`, used by `xtask compile --target ROLE=TARGET ...` and tests).
//!
//! [`plan_by_name`] plans the transfers from tensor names: a part input named `n` is fed by the
//! bundle input `n` or by the output `n` of an earlier role (a cross-device copy through one host
//! staging buffer); the bundle's outputs are the part outputs named in `outputs`. [`write_multi`]
//! seals the container and parses it back with the reader, like [`super::writer::write_bundle`].
use alloc::string::String;
use alloc::vec::Vec;

use super::multi::{Multi, Role, Xfer};
use super::schema::{Body, BufferDesc, BufferKind, Producer, RefTensor, Reference, TensorDesc};
use super::writer::{seal_as, ReferenceSpec, TableBuilder, WriteError};
use super::{Bundle, BundleError, FLAG_MULTI, MULTI_MINOR, WEIGHTS_ALIGN};

/// One host staging buffer of the container.
#[derive(Clone, Debug)]
pub struct HostBuffer<'a> {
    pub label: String,
    /// The tensor it holds (name, dtype and shape; `buffer` is this buffer's index).
    pub tensor: TensorDesc<'a>,
    pub kind: BufferKind,
}

/// Everything that goes into a multi-device bundle.
#[derive(Clone, Debug)]
pub struct MultiSpec<'a> {
    pub producer: Producer<'a>,
    /// `(role name, the role's single-target bundle bytes)`, first role first.
    pub roles: Vec<(&'a str, &'a [u8])>,
    pub hosts: Vec<HostBuffer<'a>>,
    /// Indexes into `hosts` of the bundle's inputs and outputs, in order.
    pub inputs: Vec<u32>,
    pub outputs: Vec<u32>,
    pub plan: Vec<Xfer>,
    pub reference: Option<ReferenceSpec<'a>>,
}

fn refuse(what: &'static str, index: usize) -> WriteError {
    WriteError::Invalid(BundleError::Invalid {
        what,
        index: index as u32,
    })
}

/// Plan a container for `roles` (name, part bytes) whose outputs are the part outputs named
/// `outputs`: each part input is loaded from the bundle input of its name, or from the host buffer an
/// earlier role stored its output of that name into; roles run in the given order.
pub fn plan_by_name<'a>(
    producer: Producer<'a>,
    roles: &[(&'a str, &'a [u8])],
    outputs: &[&str],
) -> Result<MultiSpec<'a>, WriteError> {
    let mut spec = MultiSpec {
        producer,
        roles: roles.to_vec(),
        hosts: Vec::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        plan: Vec::new(),
        reference: None,
    };
    // Host buffer of each tensor name produced so far (bundle inputs and stored part outputs).
    let mut by_name: Vec<(&'a str, u32)> = Vec::new();
    let host = |spec: &mut MultiSpec<'a>, label: String, t: &TensorDesc<'a>, kind| -> u32 {
        let index = spec.hosts.len() as u32;
        let mut tensor = t.clone();
        tensor.buffer = index;
        tensor.offset = 0;
        spec.hosts.push(HostBuffer {
            label,
            tensor,
            kind,
        });
        index
    };
    for (r, (name, bytes)) in roles.iter().enumerate() {
        let part = Bundle::parse_part(bytes).map_err(WriteError::Invalid)?;
        for (i, t) in part.body().inputs.iter().enumerate() {
            let t = t.map_err(WriteError::Invalid)?;
            let h = match by_name.iter().find(|(n, _)| *n == t.name) {
                Some(&(_, h)) => h,
                None => {
                    let h = host(
                        &mut spec,
                        alloc::format!("input:{}", t.name),
                        &t,
                        BufferKind::Input,
                    );
                    spec.inputs.push(h);
                    by_name.push((t.name, h));
                    h
                }
            };
            spec.plan.push(Xfer::Load {
                role: r as u32,
                input: i as u32,
                host: h,
            });
        }
        spec.plan.push(Xfer::Run { role: r as u32 });
        let later_inputs = |n: &str| {
            roles[r + 1..]
                .iter()
                .any(|(_, b)| Bundle::parse_part(b).is_ok_and(|p| p.input_index(n).is_some()))
        };
        for (o, t) in part.body().outputs.iter().enumerate() {
            let t = t.map_err(WriteError::Invalid)?;
            let is_output = outputs.contains(&t.name);
            if !is_output && !later_inputs(t.name) {
                continue; // read by no one: not copied off the device
            }
            if by_name.iter().any(|(n, _)| *n == t.name) {
                return Err(refuse("two roles produce a tensor of one name", r));
            }
            let (label, kind) = if is_output {
                (alloc::format!("output:{}", t.name), BufferKind::Output)
            } else {
                (
                    alloc::format!("cross:{name}.{}", t.name),
                    BufferKind::Scratch,
                )
            };
            let h = host(&mut spec, label, &t, kind);
            if is_output {
                spec.outputs.push(h);
            }
            by_name.push((t.name, h));
            spec.plan.push(Xfer::Store {
                role: r as u32,
                output: o as u32,
                host: h,
            });
        }
    }
    // Bundle outputs in the order asked for.
    let mut ordered = Vec::new();
    for (i, n) in outputs.iter().enumerate() {
        let h = spec
            .outputs
            .iter()
            .copied()
            .find(|&h| spec.hosts[h as usize].tensor.name == *n)
            .ok_or(refuse("no role produces a requested output", i))?;
        ordered.push(h);
    }
    spec.outputs = ordered;
    Ok(spec)
}

/// Encode `spec` as a multi-device bundle (format 2.3, header flag [`FLAG_MULTI`]).
pub fn write_multi(spec: &MultiSpec<'_>) -> Result<Vec<u8>, WriteError> {
    let mut weights: Vec<u8> = Vec::new();
    let mut roles = TableBuilder::new();
    let mut target = None;
    for (name, bytes) in &spec.roles {
        let part = Bundle::parse_part(bytes).map_err(WriteError::Invalid)?;
        let n = weights.len().next_multiple_of(WEIGHTS_ALIGN);
        weights.resize(n, 0);
        let start = weights.len() as u64;
        weights.extend_from_slice(bytes);
        target.get_or_insert(part.body().target);
        roles.push(&Role {
            name,
            target: part.body().target,
            part: (start, bytes.len() as u64),
        })?;
    }
    let sizes: Vec<u64> = spec.hosts.iter().map(|h| h.tensor.byte_len()).collect();
    let mut offsets = alloc::vec![0u64; sizes.len()];
    let arena_size = crate::plan::plan_arena(&sizes, &mut offsets).ok_or(WriteError::Plan)?;
    let mut buffers = TableBuilder::new();
    for (h, off) in spec.hosts.iter().zip(&offsets) {
        buffers.push(&BufferDesc {
            label: &h.label,
            size: h.tensor.byte_len(),
            dtype: h.tensor.dtype,
            kind: h.kind,
            arena_offset: *off,
            init: None,
        })?;
    }
    let tensors = |idx: &[u32]| -> Result<TableBuilder, WriteError> {
        let mut t = TableBuilder::new();
        for &i in idx {
            let h = spec
                .hosts
                .get(i as usize)
                .ok_or(refuse("no such host buffer", i as usize))?;
            t.push(&h.tensor)?;
        }
        Ok(t)
    };
    let inputs = tensors(&spec.inputs)?;
    let outputs = tensors(&spec.outputs)?;
    let empty = TableBuilder::new();
    let wrap = |v: &[&[u8]]| -> Result<TableBuilder, WriteError> {
        let recs: Vec<RefTensor<'_>> = v.iter().map(|d| RefTensor { data: d }).collect();
        TableBuilder::of(&recs)
    };
    let refs = match &spec.reference {
        Some(r) => Some((r, wrap(&r.inputs)?, wrap(&r.outputs)?)),
        None => None,
    };
    let body = Body {
        target: target.ok_or(refuse("no roles", 0))?,
        producer: spec.producer,
        arena_size,
        buffers: buffers.view(),
        kernels: empty.view(),
        init: empty.view(),
        run: empty.view(),
        inputs: inputs.view(),
        outputs: outputs.view(),
        reference: refs.as_ref().map(|(r, i, o)| Reference {
            seed: r.seed,
            atol: r.atol,
            rtol: r.rtol,
            inputs: i.view(),
            outputs: o.view(),
        }),
    };
    let plan = TableBuilder::of(&spec.plan)?;
    let record = postcard::to_allocvec(&Multi {
        roles: roles.view(),
        plan: plan.view(),
    })
    .map_err(|_| WriteError::Encode)?;
    let out = seal_as(
        &body,
        None,
        None,
        &record,
        &weights,
        MULTI_MINOR,
        FLAG_MULTI,
    )?;
    Bundle::parse(&out).map_err(WriteError::Invalid)?;
    Ok(out)
}
