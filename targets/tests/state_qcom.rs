//! Recurrent state and zero-copy inputs on the Adreno backend, against the KGSL model: a stateful a630 bundle
//! built from tinygrad's `E_8_32_4` IR3 kernel (`out = a·3.7 + b`, 1024 floats; the ISA the selftest uses) keeps
//! its state in the arena's GPU object across submits (streams validated, kernels run by the IR3 interpreter),
//! resets and reads back; `bind_input` re-points the recorded launch at an imported camera buffer and refuses
//! inputs it cannot serve. Expected values are closed forms computed here.
mod state_common;

use modelrt_core::bundle::{KernelDesc, Producer};
use modelrt_core::{Bundle, Executor, InputSource};
use modelrt_hal::device::Device;
use modelrt_hal::target::{KernelMeta, Target};
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use modelrt_qcom::platform::{bind_input, unbind_input};
use modelrt_qcom::selftest;
use state_common::{buffer_params, build, bytes_f32, f32_bytes, StatefulSpec};

const N: usize = selftest::N;
const BYTES: u64 = (N * 4) as u64;
const SCALE: f32 = 3.7;

fn w0() -> Vec<f32> {
    (0..N).map(|i| (i % 7) as f32 - 3.0).collect()
}
fn acc0() -> Vec<f32> {
    (0..N).map(|i| (i % 13) as f32).collect()
}
fn queue0() -> Vec<f32> {
    (0..N).map(|i| -(i as f32)).collect()
}
fn x(k: usize) -> Vec<f32> {
    (0..N).map(|i| ((i + 5 * k) % 9) as f32 * 0.25).collect()
}

/// Closed forms after steps `0..=k`: (acc state, output y, queue state).
fn expected(k: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut acc = acc0();
    for j in 0..=k {
        for (a, xi) in acc.iter_mut().zip(x(j)) {
            *a += xi * SCALE;
        }
    }
    let y = acc.iter().zip(w0()).map(|(a, w)| w * SCALE + a).collect();
    let mut stream = queue0();
    stream.extend((0..=k).map(|j| x(j)[0]));
    (acc, y, stream[stream.len() - N..].to_vec())
}

fn close(got: &[f32], want: &[f32], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

/// The a630 bundle (layout in `state_common::build`): per step `acc = x·3.7 + acc; y = w·3.7 + acc`, and with
/// `queue_x` also `queue = queue[1..] ++ [x[0]]` (a host copy out of the input).
fn bundle(queue_x: bool) -> Vec<u8> {
    build(StatefulSpec {
        target: Target::Adreno {
            chip: 630,
            image: false,
            half: false,
        },
        producer: Producer {
            tinygrad: "0.14.0",
            tinymesa: Some("test"),
            source_sha256: [4; 32],
            dev: "QCOM:IR3",
            flags: "",
        },
        kernel: KernelDesc {
            name: "E_8_32_4",
            entry: "E_8_32_4",
            binary: selftest::ISA,
            source: None,
            params: buffer_params().into_iter().collect(),
            meta: KernelMeta::Ir3(selftest::kernel_meta()),
        },
        n: N,
        global: [8, 1, 1],
        local: [32, 1, 1],
        acc_args: [4, 0, 2],
        y_args: [5, 1, 2],
        queue_x,
        w: w0(),
        acc: acc0(),
        queue: queue0(),
    })
}

fn load(bytes: &[u8], execute_shaders: bool) -> Executor<'_, AdrenoDevice<KgslModel>> {
    let model = KgslModel::new(ModelConfig {
        execute_shaders,
        ..Default::default()
    });
    let dev = AdrenoDevice::open(model, AdrenoOptions::default()).unwrap();
    Executor::load(Bundle::parse(bytes).unwrap(), dev).unwrap()
}

fn state(ex: &mut Executor<'_, AdrenoDevice<KgslModel>>, label: &str) -> Vec<f32> {
    let i = ex.state_index(label).unwrap();
    let mut out = vec![0u8; BYTES as usize];
    ex.read_state(i, &mut out).unwrap();
    bytes_f32(&out)
}

#[test]
fn state_persists_in_device_memory_and_resets() {
    let bytes = bundle(true);
    let mut ex = load(&bytes, true);
    assert_eq!(state(&mut ex, "state:acc"), acc0());
    let (mut y, mut q) = (vec![0u8; BYTES as usize], vec![0u8; BYTES as usize]);
    for k in 0..20 {
        ex.run(&[&f32_bytes(&x(k))], &mut [&mut y, &mut q]).unwrap();
        let (acc, y_want, q_want) = expected(k);
        close(&bytes_f32(&y), &y_want, &format!("y at step {k}"));
        assert_eq!(bytes_f32(&q), q_want, "queue at step {k}");
        close(
            &state(&mut ex, "state:acc"),
            &acc,
            &format!("acc at step {k}"),
        );
        assert_eq!(state(&mut ex, "state:queue"), q_want);
    }
    ex.reset_state().unwrap();
    assert_eq!(state(&mut ex, "state:acc"), acc0());
    assert_eq!(state(&mut ex, "state:queue"), queue0());
    ex.run(&[&f32_bytes(&x(0))], &mut [&mut y, &mut q]).unwrap();
    close(&bytes_f32(&y), &expected(0).1, "y after reset");
    // Every launch went through the model's stream validation and the IR3 interpreter.
    let dispatches = ex.device_mut().with_kgsl(|m| m.dispatches().len());
    assert_eq!(dispatches, 2 * 21);
}

#[test]
fn bind_input_repoints_the_launch_at_a_camera_buffer() {
    let bytes = bundle(false);
    let mut ex = load(&bytes, false);
    let (arena, _) = ex.device_mut().arena().unwrap();
    let input_at = ex.input_range(0).unwrap().offset;
    // A page-aligned "camera frame" in host memory, imported with MAP_USER_MEM.
    let storage = vec![0u64; 2 * BYTES as usize / 8];
    let page = (storage.as_ptr() as u64 + 0xFFF) & !0xFFF;
    // SAFETY: `page..page+BYTES` lies inside `storage`, which outlives the binding and the release below and is
    // not touched while the queue is bound; this model does not execute shaders, so nothing dereferences it.
    let ext = unsafe { ex.device_mut().import_user_memory(page, BYTES) }.unwrap();
    assert_eq!(
        bind_input(&mut ex, 0, &ext).unwrap(),
        1,
        "one launch reads x"
    );
    let (mut y, mut q) = (vec![0u8; BYTES as usize], vec![0u8; BYTES as usize]);
    ex.run_with(&[InputSource::Bound], &mut [&mut y, &mut q], |d, qu| {
        d.submit(qu)
    })
    .unwrap();
    let arg1 = |ex: &mut Executor<'_, AdrenoDevice<KgslModel>>, d: usize| {
        ex.device_mut().with_kgsl(|m| {
            let c = &m.dispatches()[d].consts;
            u64::from_le_bytes(c[8..16].try_into().unwrap())
        })
    };
    assert_eq!(arg1(&mut ex, 0), page, "the first launch reads the frame");
    assert_eq!(
        arg1(&mut ex, 1),
        arena + ex.bundle().body().buffers.get(1).unwrap().arena_offset
    );
    assert_eq!(unbind_input(&mut ex, 0).unwrap(), 1);
    ex.run(&[&vec![0u8; BYTES as usize]], &mut [&mut y, &mut q])
        .unwrap();
    assert_eq!(arg1(&mut ex, 2), arena + input_at);

    // Refused: a wrong length, and a bundle whose host copies read the input.
    ex.device_mut().release_external(ext).unwrap();
    // SAFETY: as above.
    let short = unsafe { ex.device_mut().import_user_memory(page, BYTES / 2) }.unwrap();
    assert_eq!(
        bind_input(&mut ex, 0, &short).unwrap_err().to_string(),
        format!(
            "input 0 has {BYTES} bytes, the external buffer {}",
            BYTES / 2
        )
    );
    ex.device_mut().release_external(short).unwrap();
    let bytes_x = bundle(true);
    let mut ex2 = load(&bytes_x, false);
    // SAFETY: as above.
    let ext2 = unsafe { ex2.device_mut().import_user_memory(page, BYTES) }.unwrap();
    let err = bind_input(&mut ex2, 0, &ext2).unwrap_err().to_string();
    assert_eq!(
        err,
        "the bundle copies input 0 on the host; it cannot be bound in place"
    );
    ex2.device_mut().release_external(ext2).unwrap();
}
