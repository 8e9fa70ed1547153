"""The kernel-metadata records the exporter writes match manifest_schema.json, the schema `cargo xtask manifest-schema`
derives from the Rust types that read them (xtask/src/manifest/meta_schema.rs): the record builders' field names (read from their
source, so no compile is needed), the values their checks accept and refuse, and `write_out` refusing a drifted manifest
before it writes anything. Real exports are checked by `write_out` itself, in every export test.
"""

import ast
import inspect
import os
import tempfile
import types
import unittest

from mrt import manifest_schema as ms
from mrt import meta as mrt_meta


def _dict_keys(fn, var: str) -> set[str]:
  """The keys of the dict literal assigned to `var` in function `fn`."""
  tree = ast.parse(inspect.getsource(fn))
  for node in ast.walk(tree):
    named = isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == var for t in node.targets)
    if named and isinstance(node.value, ast.Dict):
      return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
  raise AssertionError(f"{fn.__name__} assigns no dict literal to {var}")


def _amd_record(**over):
  rec = dict.fromkeys(ms.load_schema()["amd"], 0)
  rec.update({"wavefront_size": 32, **over})
  return {"amd": rec}


def _ir3_record(**over):
  rec = dict.fromkeys(ms.load_schema()["ir3"], 0)
  rec.update({"immediates": "blobs/k0.imm", "tex_to_image": [0, 1], **over})
  return {"ir3": rec}


class ManifestSchemaTests(unittest.TestCase):
  def setUp(self):
    self.schema = ms.load_schema()

  def test_schema_has_every_record_kind(self):
    self.assertEqual(set(self.schema), {"cpu", "ir3", "amd", "qcomcl"})

  def test_record_builders_write_the_schema_fields(self):
    self.assertEqual(_dict_keys(mrt_meta._ir3_meta, "meta"), set(self.schema["ir3"]))
    self.assertEqual(_dict_keys(mrt_meta._amd_meta, "meta"), set(self.schema["amd"]))

  def test_cpu_hexagon_and_qcom_records_pass(self):
    for runtimevars, want in (({"core_id": None}, 4), ({}, 1)):
      prg = types.SimpleNamespace(
        arg=types.SimpleNamespace(global_size=(4, 1, 1), runtimevars=runtimevars), src=(None, None, types.SimpleNamespace(arg="int f;"))
      )
      _, _, meta, _ = mrt_meta._cpu_meta(prg, types.SimpleNamespace(lib=b"\x7fELF"))
      self.assertEqual(meta, {"cpu": {"threads": want}})
      ms.check_meta("cpu", meta, self.schema)
    ms.check_meta("hexagon", {"cpu": {"threads": 1}}, self.schema)
    ms.check_meta("qcomcl", {"qcomcl": {}}, self.schema)
    ms.check_meta("amd", _amd_record(), self.schema)
    ms.check_meta("ir3", _ir3_record(), self.schema)

  def test_values_outside_the_rust_types_are_refused(self):
    bad = {
      "descriptor_offset": _amd_record(descriptor_offset=2**32),
      "wavefront_size": _amd_record(wavefront_size=256),
      "sgpr_count": _amd_record(sgpr_count=-1),
      "kernel_code_properties": _amd_record(kernel_code_properties=True),
      "tex_to_image": _ir3_record(tex_to_image=[256]),
      "33 entries": _ir3_record(tex_to_image=[0] * 33),
      "immediates": _ir3_record(immediates=3),
    }
    for what, rec in bad.items():
      with self.subTest(what), self.assertRaises(ms.SchemaDrift):
        ms.check_meta(what, rec, self.schema)

  def test_added_missing_and_unknown_fields_are_refused(self):
    extra = _amd_record(kernarg_align=8)
    missing = _amd_record()
    del missing["amd"]["vgpr_count"]
    for what, rec in (("extra", extra), ("missing", missing), ("kind", {"tpu": {}}), ("two", {"cpu": {"threads": 1}, "qcomcl": {}})):
      with self.subTest(what), self.assertRaises(ms.SchemaDrift) as e:
        ms.check_meta(what, rec, self.schema)
      if what == "extra":
        self.assertIn("kernarg_align", str(e.exception))

  def test_write_out_refuses_a_drifted_manifest_before_writing(self):
    from mrt.export import write_out

    with tempfile.TemporaryDirectory() as d:
      kernels = [{"name": "k", "meta": {"cpu": {"threads": 1, "extra": 0}}}]
      with self.assertRaises(ms.SchemaDrift):
        write_out(d, {"kernels": kernels}, {"blobs/k0.bin": b"x"})
      self.assertFalse(os.path.exists(os.path.join(d, "manifest.json")))
      write_out(d, {"kernels": [{"name": "k", "meta": {"cpu": {"threads": 1}}}]}, {"blobs/k0.bin": b"x"})
      self.assertTrue(os.path.exists(os.path.join(d, "manifest.json")))


if __name__ == "__main__":
  unittest.main()
