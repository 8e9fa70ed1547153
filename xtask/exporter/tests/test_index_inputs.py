"""mrt/index_inputs.py: which integer graph inputs index what, and the ranges recorded for them (ONNX semantics)."""

import unittest

from onnx import TensorProto, helper

from mrt.index_inputs import index_checks


def model(nodes, inputs, inits=()):
  ins = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
  g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def table(rows, cols=4):
  return helper.make_tensor("table", TensorProto.FLOAT, [rows, cols], [0.0] * (rows * cols))


class IndexInputTests(unittest.TestCase):
  def test_gather_range_is_minus_size_to_size_minus_one(self):
    m = model([helper.make_node("Gather", ["table", "idx"], ["y"], axis=0, name="g")], [("idx", TensorProto.INT64, [3])], [table(50)])
    (c,) = index_checks(m, {"idx": (3,)})
    self.assertEqual((c["input"], c["period"], c["phase"], c["min"], c["max"]), ("idx", 1, 0, -50, 49))

  def test_negative_axis_and_a_reshape_on_the_way(self):
    m = model(
      [helper.make_node("Flatten", ["idx"], ["f"]), helper.make_node("Gather", ["table", "f"], ["y"], axis=-1)],
      [("idx", TensorProto.INT32, [2, 2])],
      [table(3, 9)],
    )
    (c,) = index_checks(m, {"idx": (2, 2)})
    self.assertEqual((c["min"], c["max"]), (-9, 8))

  def test_narrowing_cast_and_arithmetic_are_not_checked_but_noted(self):
    notes = []
    m = model(
      [helper.make_node("Add", ["idx", "idx"], ["s"]), helper.make_node("Gather", ["table", "s"], ["y"])],
      [("idx", TensorProto.INT64, [3])],
      [table(5)],
    )
    self.assertEqual(index_checks(m, {"idx": (3,)}, notes.append), [])
    self.assertIn("through computed values", notes[0])
    m = model(
      [helper.make_node("Cast", ["idx"], ["c"], to=TensorProto.INT8), helper.make_node("Gather", ["table", "c"], ["y"])],
      [("idx", TensorProto.INT64, [3])],
      [table(5)],
    )
    self.assertEqual(index_checks(m, {"idx": (3,)}), [])

  def test_gathernd_checks_each_position_of_the_index_tuples(self):
    m = model(
      [helper.make_node("GatherND", ["data", "idx"], ["y"], batch_dims=1)],
      [("data", TensorProto.FLOAT, [2, 5, 7]), ("idx", TensorProto.INT64, [2, 3, 2])],
    )
    got = sorted((c["period"], c["phase"], c["min"], c["max"]) for c in index_checks(m, {"data": (2, 5, 7), "idx": (2, 3, 2)}))
    self.assertEqual(got, [(2, 0, -5, 4), (2, 1, -7, 6)])

  def test_float_inputs_are_not_index_inputs(self):
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", TensorProto.FLOAT, [3])])
    self.assertEqual(index_checks(m, {"x": (3,)}), [])


if __name__ == "__main__":
  unittest.main()
