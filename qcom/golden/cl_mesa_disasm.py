"""Write Mesa's own disassembly of the six Qualcomm-compiled kernels in qcom/testdata/qcom-cl/ (the reference
`tests/tests/adreno/convert_qcom_cl.rs` compares `modelrt disasm`'s listing with).

The instruction image is cut from each container with the fact sheet's two fields (image offset at 0xc0, code size at
0x100; docs/hw/adreno-kgsl-pm4.md §9.1), independently of our Rust parser, and disassembled by tinymesa 25.2.7.2's
`ir3_isa_disasm` (qcom/ir3/tests/mesa_disasm.py). Usage, with the exporter venv's python:

    python qcom/golden/cl_mesa_disasm.py qcom/testdata/qcom-cl/mesa-disasm.txt
"""

import glob
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ir3", "tests"))
import mesa_disasm

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "qcom-cl")


def main(out_path: str) -> None:
  out = []
  for path in sorted(glob.glob(os.path.join(HERE, "*.adreno.bin"))):
    with open(path, "rb") as f:
      b = f.read()
    off, size = struct.unpack_from("<I", b, 0xC0)[0], struct.unpack_from("<I", b, 0x100)[0]
    name = os.path.basename(path).removesuffix(".adreno.bin")
    out.append(f"=== {name}")
    out.extend(line for line in mesa_disasm.disasm(b[off : off + size]).splitlines() if line.strip())
  with open(out_path, "w") as f:
    f.write("\n".join(out) + "\n")


if __name__ == "__main__":
  main(sys.argv[1])
