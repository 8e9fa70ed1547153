"""openpilot metadata pickles (mrt/op_metadata.py, `export.py --pickle P --metadata FILE`).

The three real files of openpilot 0.11.1 (qcom/testdata/openpilot-0.11/*_metadata.pkl.gz) read to exactly the slices
written below, which were read off the files by hand with `python -m pickletools` (e.g. driving_policy: `plan`
REDUCE of (0, 990, None), `desire_state` (990, 998, None), `pad` (-2, None, None) over output_shapes
{'outputs': (1, 1000)}, so pad = 998:1000 by Python's slice.indices). Crafted files (a step of 2, a slice past the
output, a list instead of a slice, a class other than builtins.slice — one whose code would run, proven live first —
and a mismatched input shape) are refused with one `error:` line, no traceback, nothing run and no manifest written.
"""

import contextlib
import gzip
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(EXPORTER))
DATA = os.path.join(REPO, "qcom", "testdata", "openpilot-0.11")
sys.path.insert(0, EXPORTER)

from mrt import op_metadata  # noqa: E402

# Read off the files with pickletools (see the module doc): (checkpoint, input_shapes, output_shapes, slices).
POLICY = (
  "a27b3122-733e-4a65-938b-acfebebbe5e8/100",
  {"desire_pulse": (1, 25, 8), "traffic_convention": (1, 2), "features_buffer": (1, 25, 512)},
  {"outputs": (1, 1000)},
  [("plan", 0, 990), ("desire_state", 990, 998), ("pad", 998, 1000)],
)
VISION = (
  "6a7d09ad-bcc9-43bc-916d-29287e60cee2/200",
  {"img": (1, 12, 128, 256), "big_img": (1, 12, 128, 256)},
  {"outputs": (1, 1576)},
  [
    ("meta", 0, 55),
    ("desire_pred", 55, 87),
    ("pose", 87, 99),
    ("wide_from_device_euler", 99, 105),
    ("road_transform", 105, 117),
    ("lane_lines", 117, 645),
    ("lane_lines_prob", 645, 653),
    ("road_edges", 653, 917),
    ("lead", 917, 1061),
    ("lead_prob", 1061, 1064),
    ("hidden_state", 1064, 1576),
    ("pad", 0, 1576),  # slice(0, None): the whole output
  ],
)
DMONITORING = (
  "81248b12-6592-4a5c-9b59-a44c64123b2b",
  {"input_img": (1, 1382400), "calib": (1, 3)},
  {"outputs": (1, 551)},
  [
    ("face_descs_lhd", 0, 12),
    ("face_prob_lhd", 12, 13),
    ("left_eye_prob_lhd", 13, 14),
    ("right_eye_prob_lhd", 14, 15),
    ("sunglasses_prob_lhd", 15, 16),
    ("left_blink_prob_lhd", 16, 17),
    ("right_blink_prob_lhd", 17, 18),
    ("using_phone_prob_lhd", 18, 19),
    ("face_descs_rhd", 19, 31),
    ("face_prob_rhd", 31, 32),
    ("left_eye_prob_rhd", 32, 33),
    ("right_eye_prob_rhd", 33, 34),
    ("sunglasses_prob_rhd", 34, 35),
    ("left_blink_prob_rhd", 35, 36),
    ("right_blink_prob_rhd", 36, 37),
    ("using_phone_prob_rhd", 37, 38),
    ("wheel_on_right", 38, 39),
    ("features", 39, 551),
  ],
)


def manifest_for(inputs: dict, outputs: dict) -> dict:
  """The inputs/outputs part of a manifest with these names and shapes."""
  return {
    "inputs": [{"name": n, "shape": list(s)} for n, s in inputs.items()],
    "outputs": [{"name": n, "shape": list(s)} for n, s in outputs.items()],
  }


def policy_dict(**change) -> dict:
  d = {
    "model_checkpoint": POLICY[0],
    "output_slices": {"plan": slice(0, 990, None), "desire_state": slice(990, 998, None), "pad": slice(-2, None, None)},
    "input_shapes": dict(POLICY[1]),
    "output_shapes": dict(POLICY[2]),
  }
  d.update(change)
  return d


class Evil:
  """Pickles to `os.system("touch MARKER")` when loaded by a plain unpickler."""

  def __init__(self, marker):
    self.marker = marker

  def __reduce__(self):
    return (os.system, (f"touch {self.marker}",))


class RealFiles(unittest.TestCase):
  def check(self, name: str, want):
    path = os.path.join(DATA, f"0.11.1_{name}_metadata.pkl.gz")
    meta = op_metadata.read(path)
    ck, ins, outs, slices = want
    self.assertEqual(meta["checkpoint"], ck)
    self.assertEqual(meta["inputs"], ins)
    self.assertEqual(meta["outputs"], outs)
    self.assertEqual([(s["name"], s["start"], s["stop"]) for s in meta["slices"].values()], slices)
    self.assertEqual({s["output"] for s in meta["slices"].values()}, {"outputs"})
    # The plain (not gzipped) file reads the same.
    with tempfile.TemporaryDirectory() as d:
      plain = os.path.join(d, "m.pkl")
      with open(path, "rb") as f, open(plain, "wb") as g:
        g.write(gzip.decompress(f.read()))
      self.assertEqual(op_metadata.read(plain), meta)
    # Against a program whose single output (a TinyJit's `output0`) has the shape: renamed to openpilot's name.
    man = manifest_for(ins, {"output0": outs["outputs"]})
    op_metadata.apply(meta, man, path, lambda _m: None)
    self.assertEqual([o["name"] for o in man["outputs"]], ["outputs"])
    self.assertEqual([(s["output"], s["name"], s["start"], s["stop"]) for s in man["output_slices"]], [("outputs", *s) for s in slices])
    self.assertEqual(man["checkpoint"], ck)

  def test_driving_policy(self):
    self.check("driving_policy", POLICY)

  def test_driving_vision(self):
    self.check("driving_vision", VISION)

  def test_dmonitoring_model(self):
    self.check("dmonitoring_model", DMONITORING)


class Program(unittest.TestCase):
  """`apply` against programs that do not fit the metadata."""

  def refuse(self, man: dict, want: str):
    meta = op_metadata.read_obj(policy_dict(), "m.pkl")
    with self.assertRaises(op_metadata.MetadataError) as e:
      op_metadata.apply(meta, man, "m.pkl", lambda _m: None)
    msg = str(e.exception)
    self.assertNotIn("\n", msg)
    self.assertIn(want, msg)
    self.assertNotIn("output_slices", man)

  def test_mismatched_input_shape(self):
    ins = dict(POLICY[1], features_buffer=(1, 24, 512))
    self.refuse(
      manifest_for(ins, {"outputs": (1, 1000)}),
      "input_shapes['features_buffer'] is (1, 25, 512), but the program's input 'features_buffer' has shape (1, 24, 512)",
    )

  def test_missing_input(self):
    ins = {k: v for k, v in POLICY[1].items() if k != "desire_pulse"}
    self.refuse(manifest_for(ins, {"outputs": (1, 1000)}), "input_shapes names 'desire_pulse', which is not an input of the program")

  def test_named_output_of_another_shape(self):
    self.refuse(
      manifest_for(POLICY[1], {"outputs": (1, 999)}), "output_shapes['outputs'] is (1, 1000), but the program's output 'outputs' has shape (1, 999)"
    )

  def test_no_output_of_the_shape(self):
    self.refuse(manifest_for(POLICY[1], {"output0": (1, 999)}), "no output of the program has that shape")

  def test_two_outputs_of_the_shape_are_ambiguous(self):
    self.refuse(manifest_for(POLICY[1], {"a": (1, 1000), "b": (1, 1000)}), "which 2 outputs of the program have")

  def test_extra_outputs_of_other_shapes_are_kept(self):
    meta = op_metadata.read_obj(policy_dict(), "m.pkl")
    man = manifest_for(POLICY[1], {"hidden": (1, 512), "output1": (1, 1000)})
    op_metadata.apply(meta, man, "m.pkl", lambda _m: None)
    self.assertEqual([o["name"] for o in man["outputs"]], ["hidden", "outputs"])


def export(meta_bytes: bytes, d: str) -> subprocess.CompletedProcess:
  """export.py --pickle (a stand-in: the metadata is read and refused before the model pickle is opened)."""
  mpath = os.path.join(d, "m_metadata.pkl")
  with open(mpath, "wb") as f:
    f.write(meta_bytes)
  return subprocess.run(
    [
      sys.executable,
      os.path.join(EXPORTER, "export.py"),
      "--pickle",
      os.path.join(d, "model.pkl"),
      "--metadata",
      mpath,
      "--out",
      os.path.join(d, "m"),
    ],
    capture_output=True,
    text=True,
  )


class Crafted(unittest.TestCase):
  def refused(self, build, live: bool = False) -> str:
    """Export with the metadata `build(marker)`; assert one error line, no traceback, no marker, no manifest."""
    with tempfile.TemporaryDirectory() as d:
      marker = os.path.join(d, "ran")
      if live:  # the payload really runs code when unpickled without restrictions
        with tempfile.TemporaryDirectory() as d2:
          m2 = os.path.join(d2, "ran")
          with contextlib.suppress(Exception):
            pickle.loads(build(m2))
          self.assertTrue(os.path.exists(m2), "the crafted payload is not live")
      r = export(build(marker), d)
      self.assertFalse(os.path.exists(marker), "code from the metadata ran")
      self.assertNotEqual(r.returncode, 0)
      self.assertNotIn("Traceback", r.stderr)
      errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
      self.assertEqual(len(errors), 1, r.stderr)
      self.assertFalse(os.path.exists(os.path.join(d, "m", "manifest.json")), "a manifest was written")
      self.assertIn("--metadata ", errors[0])
      return errors[0]

  def test_the_real_file_gets_past_the_metadata(self):
    # Control for the cases below: with the real metadata the refusal is about the (missing) model pickle.
    with tempfile.TemporaryDirectory() as d, open(os.path.join(DATA, "0.11.1_driving_policy_metadata.pkl.gz"), "rb") as f:
      r = export(f.read(), d)
      self.assertIn("error: pickle not found", r.stderr)

  def test_step_other_than_one(self):
    line = self.refused(lambda m: pickle.dumps(policy_dict(output_slices={"plan": slice(0, 990, 2)})))
    self.assertIn("output_slices['plan'] is slice(0, 990, 2): step 2; only contiguous slices (step 1)", line)

  def test_slice_past_the_output(self):
    line = self.refused(lambda m: pickle.dumps(policy_dict(output_slices={"plan": slice(0, 1001)})))
    self.assertIn("output_slices['plan'] is slice(0, 1001, None), outside the output's last dimension of 1000", line)
    line = self.refused(lambda m: pickle.dumps(policy_dict(output_slices={"pad": slice(-1001, None)})))
    self.assertIn("outside the output's last dimension of 1000", line)

  def test_empty_slice(self):
    line = self.refused(lambda m: pickle.dumps(policy_dict(output_slices={"plan": slice(990, 990)})))
    self.assertIn("which selects nothing", line)

  def test_a_value_that_is_not_a_slice(self):
    line = self.refused(lambda m: pickle.dumps(policy_dict(output_slices={"plan": [0, 990]})))
    self.assertIn("output_slices['plan'] is [0, 990], not a slice", line)

  def test_a_class_other_than_slice_that_would_run(self):
    line = self.refused(lambda m: pickle.dumps(policy_dict(output_slices={"plan": Evil(m)})), live=True)
    self.assertRegex(line, r"pickle references (posix|os)\.system, which the restricted reader does not allow")

  def test_a_tinygrad_class_is_not_metadata(self):
    # tinygrad.tensor.Tensor is on the model reader's allow-list (an inert record), but has no place in metadata.
    data = pickle.dumps(policy_dict(output_slices={"plan": 0}), protocol=2)
    data = data.replace(b"K\x00", b"ctinygrad.tensor\nTensor\n)R", 1)
    line = self.refused(lambda m: data)
    self.assertIn("references tinygrad.tensor.Tensor; a metadata pickle holds only", line)

  def test_damaged_gzip(self):
    with open(os.path.join(DATA, "0.11.1_driving_policy_metadata.pkl.gz"), "rb") as f:
      real = f.read()
    line = self.refused(lambda m: real[:100])  # truncated
    self.assertIn("not a valid gzip file", line)
    line = self.refused(lambda m: real[:10] + b"garbage" * 4)  # a gzip header over a damaged deflate stream
    self.assertIn("not a valid gzip file", line)

  def test_not_a_dict(self):
    line = self.refused(lambda m: pickle.dumps([1, 2]))
    self.assertIn("holds a list, not openpilot's metadata dict", line)

  def test_missing_field(self):
    d = policy_dict()
    del d["output_shapes"]
    line = self.refused(lambda m: pickle.dumps(d))
    self.assertIn("has no output_shapes", line)


if __name__ == "__main__":
  unittest.main()
