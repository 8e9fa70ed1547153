"""Record what tinygrad 0.14's own QCOM (CL) container parser (`QCOMProgram._parse_lib`) reads from each Qualcomm
kernel binary in qcom/testdata/qcom-cl/, as the independent reference for modelrt's Rust parser
(qcom/src/a6xx/cl_container.rs, test qcom/tests/cl_container.rs).

Offline: no device, no compiler. `_parse_lib` is called on a bare `QCOMProgram` object whose only input besides the
bytes is the kernel name, which tinygrad takes from the program (not the file); this script takes it from the
kernel's OpenCL C source next to the binary (`__kernel void NAME(`), never from modelrt.

Usage: $MODELRT_PYTHON qcom/golden/cl_container.py qcom/testdata/qcom-cl qcom/golden/cl_container.json
"""

import hashlib
import json
import re
import sys
from pathlib import Path


def parse_one(bin_path: Path) -> dict:
    from tinygrad.runtime.ops_qcom import QCOMProgram

    cl = bin_path.with_name(bin_path.name.replace(".adreno.bin", ".cl")).read_text()
    name = re.search(r"__kernel\s+void\s+(\w+)\s*\(", cl).group(1)
    lib = bin_path.read_bytes()
    prg = object.__new__(QCOMProgram)
    prg.name = name
    prg._parse_lib(lib)
    image = bytes(prg.image)
    return {
        "file": bin_path.name,
        "name": name,
        "image_size": prg.image_size,
        "image_sha256": hashlib.sha256(image).hexdigest(),
        "image_first_dword": int.from_bytes(image[:4], "little"),
        "prg_offset": prg.prg_offset,
        "brnchstck": prg.brnchstck,
        "pvtmem": prg.pvtmem,
        "shmem": prg.shmem,
        "samp_cnt": prg.samp_cnt,
        "samplers": [int(x) for x in prg.samplers],
        "buf_offs": list(prg.buf_offs),
        "tex_cnt": prg.tex_cnt,
        "ibo_cnt": prg.ibo_cnt,
        "ibo_off": prg.ibo_off,
        "tex_off": prg.tex_off,
        "samp_off": prg.samp_off,
        "consts_info": [list(c) for c in prg.consts_info],
        "fregs": prg.fregs,
        "hregs": prg.hregs,
    }


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: cl_container.py DATA_DIR OUT_JSON")
    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    rows = [parse_one(p) for p in sorted(data.glob("*.adreno.bin"))]
    out.write_text(json.dumps({"tinygrad": "0.14", "kernels": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
