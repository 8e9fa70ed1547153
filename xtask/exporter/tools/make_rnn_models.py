#!/usr/bin/env python3
"""Test-only: LSTM, GRU and RNN models with onnxruntime's outputs (tests/tests/cpu/rnn_ops.rs).

  make_rnn_models.py OUTDIR
writes OUTDIR/NAME.onnx, its inputs OUTDIR/NAME.in_INPUT.npy and onnxruntime's outputs OUTDIR/NAME.ort_OUTPUT.npy for a
small set that between them covers every direction, with and without initial state, sequence lengths, biases and
peepholes, GRU's linear_before_reset, LSTM's input_forget and clip, a non-default activation and layout=1 (the defaults
are ONNX's own node tests, `cargo xtask conformance --filter lstm`, docs/conformance.md). onnxruntime has no layout=1
kernels, so a layout=1 model's outputs are onnxruntime's for the same model in layout 0 on transposed inputs, transposed
back. Weights are initializers; X, sequence_lens and the initial states are graph inputs.
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
T, N, IN, H = 5, 3, 4, 3
# name: (op, direction, bias, initial state, sequence_lens, peepholes, layout, extra attributes)
CASES = {
  "lstm_rev_clip_forget": ("LSTM", "reverse", True, True, False, True, 0, {"clip": 0.6, "input_forget": 1}),
  "lstm_bidi_layout1": ("LSTM", "bidirectional", True, True, True, False, 1, {}),
  "gru_bidi_lbr": ("GRU", "bidirectional", True, True, True, False, 0, {"linear_before_reset": 1}),
  "rnn_bidi_relu_seqlen": ("RNN", "bidirectional", False, True, True, False, 0, {"activations": ["Relu", "Tanh"]}),
}


def build(op, direction, bias, state, seqlen, peep, layout, extra, seed):
  D, G = (2 if direction == "bidirectional" else 1), GATES[op]
  rng = np.random.default_rng(seed)

  def init(name, shape):
    return helper.make_tensor(name, TensorProto.FLOAT, shape, (rng.standard_normal(shape) * 0.5).astype(np.float32).ravel())

  inits = [init("W", [D, G * H, IN]), init("R", [D, G * H, H])]
  names = ["X", "W", "R", "B" if bias else "", "sequence_lens" if seqlen else "", "initial_h" if state else ""]
  if bias:
    inits.append(init("B", [D, 2 * G * H]))
  if op == "LSTM":
    names += ["initial_c" if state else "", "P" if peep else ""]
    if peep:
      inits.append(init("P", [D, 3 * H]))
  while names[-1] == "":
    names.pop()
  xs, hs = ([T, N, IN], [D, N, H]) if layout == 0 else ([N, T, IN], [N, D, H])
  ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, xs)]
  feeds = {"X": rng.standard_normal(xs).astype(np.float32)}
  if seqlen:
    ins.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [N]))
    feeds["sequence_lens"] = np.array([T, 2, T - 1][:N], np.int32)
  if state:
    for s in ["initial_h"] + (["initial_c"] if op == "LSTM" else []):
      ins.append(helper.make_tensor_value_info(s, TensorProto.FLOAT, hs))
      feeds[s] = rng.standard_normal(hs).astype(np.float32)
  outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
  kw = {"hidden_size": H, "direction": direction, **extra}
  if layout:
    kw["layout"] = 1
  node = helper.make_node(op, names, outs, name="rnn0", **kw)
  g = helper.make_graph([node], op.lower(), ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), feeds


def ort_outputs(case, seed, model, feeds, scratch):
  op, direction, bias, state, seqlen, peep, layout, extra = case
  if not layout:
    onnx.save(model, scratch)
    sess = ort.InferenceSession(scratch, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
  m0, _ = build(op, direction, bias, state, seqlen, peep, 0, extra, seed)
  onnx.save(m0, scratch)
  sess = ort.InferenceSession(scratch, providers=["CPUExecutionProvider"])
  f0 = {k: (v.transpose(1, 0, 2) if v.ndim == 3 else v) for k, v in feeds.items()}
  res = sess.run(None, f0)
  return {o.name: (r.transpose(2, 0, 1, 3) if r.ndim == 4 else r.transpose(1, 0, 2)) for o, r in zip(sess.get_outputs(), res)}


def main(out: str):
  os.makedirs(out, exist_ok=True)
  for k, (name, case) in enumerate(CASES.items()):
    model, feeds = build(*case, 100 + k)
    path = os.path.join(out, f"{name}.onnx")
    onnx.save(model, path)
    for n, v in feeds.items():
      np.save(os.path.join(out, f"{name}.in_{n}.npy"), v)
    for n, v in ort_outputs(case, 100 + k, model, feeds, os.path.join(out, f"{name}.ort-tmp.onnx")).items():
      np.save(os.path.join(out, f"{name}.ort_{n}.npy"), v)
    os.remove(os.path.join(out, f"{name}.ort-tmp.onnx"))


if __name__ == "__main__":
  main(sys.argv[1])
