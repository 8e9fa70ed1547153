"""Capture tinygrad 0.14's own QCOM (CL) command streams for the real Qualcomm-compiled kernels of openpilot's warp
pickles (qcom/testdata/qcom-cl/), against the fake KGSL of fake_kgsl.py, for modelrt's golden test
(qcom/tests/golden_cl.rs).

No compiler runs: tinygrad's `QCOMProgram` is built directly from each kernel's Qualcomm container (the `.adreno.bin`
next to the pickle, byte-identical to the binary inside it) with the CL path selected (`NIR` false: tinygrad decides by
the device's renderer class, and its Qualcomm compiler cannot start here, so the IR3 renderer class is swapped out
after the device opened). Each distinct kernel is launched once with the global/local sizes and buffer sizes of its
first launch in the pickle's schedule; so are the kernels of openpilot 0.11.1's road warp with fractional global sizes
(`FRACTIONAL`, from qcom/testdata/openpilot-0.11/). Recorded per launch: the submitted IB dwords, the filled kernel-argument region,
and the GPU addresses involved (for normalisation). No shader executes.

Independent of the code under test: nothing here imports the exporter (`mrt`, xtask/exporter/). The pickles are read
by this script's own inert unpickler (`InertUnpickler` below), not through tinygrad or `mrt`; only tinygrad's QCOM
backend (the reference being recorded) and fake_kgsl.py are imported. tests/tests/repo/golden_independent.rs checks
that no file under qcom/golden/ imports `mrt`.

Usage: $MODELRT_PYTHON qcom/golden/capture_cl.py qcom/testdata/qcom-cl qcom/golden/qcom_cl.json
"""

import ctypes
import gzip
import io
import json
import os
import pickle
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# Every global openpilot v0.10.4's two warp pickles name (tinygrad 0.14 classes, plus bytearray), by module. Each maps
# to an inert stand-in class; any other name makes the read fail.
PICKLE_NAMES = {
    "builtins": ("bytearray",),
    "tinygrad.codegen.opt": ("Opt", "OptOps"),
    "tinygrad.device": ("Buffer",),
    "tinygrad.dtype": ("AddrSpace", "ConstFloat", "DType", "InvalidType", "PtrDType"),
    "tinygrad.engine.jit": ("CapturedJit", "TinyJit"),
    "tinygrad.engine.realize": ("BufferCopy", "CompiledRunner", "ExecItem"),
    "tinygrad.helpers": ("Metadata",),
    "tinygrad.renderer": ("Estimates", "ProgramSpec"),
    "tinygrad.tensor": ("Tensor",),
    "tinygrad.uop": ("Ops",),
    "tinygrad.uop.ops": ("AxisType", "KernelInfo", "UOp"),
}


class Inert:
    """One pickled object kept as data. A pickle builds an object by calling its class (REDUCE: `cls(*args)`, NEWOBJ:
    `cls.__new__(cls, *args)`) and then, optionally, BUILD (`obj.__setstate__(state)`); here those calls only record
    `ctor` (the arguments) and `state`. `kind` is the pickled class name."""

    kind = ""

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj.ctor, obj.ctor_kwargs, obj.state = args, kwargs, None
        return obj

    def __init__(self, *args, **kwargs):
        """REDUCE calls the class: the arguments were already kept by __new__."""

    def __setstate__(self, state):
        self.state = state

    def attr(self, key):
        """Attribute `key` of the original object, from its BUILD state: a dict, or (dict or None, slots dict)."""
        st = self.state
        if isinstance(st, tuple) and len(st) == 2:
            merged = {}
            for part in st:
                merged.update(part or {})
            st = merged
        return st[key] if isinstance(st, dict) and key in st else None

    def __repr__(self):
        return f"Inert({self.kind}, {len(self.ctor)} args)"


STAND_INS = {
    (m, n): type(n, (Inert,), {"kind": n})
    for m, names in PICKLE_NAMES.items()
    for n in names
}


class InertUnpickler(pickle.Unpickler):
    """`find_class` is the pickle protocol's only way to reach code (GLOBAL, STACK_GLOBAL, INST, OBJ and the EXT
    opcodes all go through it): here it returns the stand-in for an allow-listed name and refuses everything else,
    importing nothing. Persistent ids are refused too."""

    def find_class(self, module, name):
        try:
            return STAND_INS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing {module}.{name}: not a name the warp pickles use"
            ) from None

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refusing a persistent id")


def read_pickle(path: Path):
    return InertUnpickler(io.BytesIO(gzip.decompress(path.read_bytes()))).load()


def launches(pkl_gz: Path) -> list[dict]:
    """First launch of each distinct kernel in the pickle's schedule: name, global, local, parameter byte sizes, lib."""
    top = read_pickle(pkl_gz)  # TinyJit(fxn, CapturedJit(ret, jit_cache, ...))
    cj = next(a for a in top.ctor if isinstance(a, Inert) and a.kind == "CapturedJit")
    out, seen = [], set()
    for ei in cj.ctor[1]:  # ExecItems
        prg = ei.attr("prg")
        if prg.kind != "CompiledRunner":
            continue
        p = prg.ctor[0]  # ProgramSpec
        name = p.attr("src").split("__kernel void ", 1)[1].split("(", 1)[0]
        if name in seen:
            continue
        seen.add(name)
        # PtrDType(priority, bitsize, name, fmt, count, scalar, base, addrspace, v, size): size elements of bitsize bits
        sizes = [d.ctor[-1] * (d.ctor[1] // 8) for d in p.attr("aux")[0]]
        out.append(
            {
                "name": name,
                "global": p.attr("global_size"),
                "local": p.attr("local_size"),
                "sizes": sizes,
                "lib": bytes(p.attr("lib")),
            }
        )
    return out


# openpilot 0.11.1's road warp (tinygrad v0.12.0-329): its kernels with fractional global sizes (tinygrad's work-group
# tuning stored global/local, e.g. [128, 2.5, 1] with local [256, 4, 1]) are launched too, with their binary — which
# is byte-identical to the v0.10.4 container of the same name (asserted) — so the golden holds tinygrad's own stream for
# a launch with a partial last work group (docs/hw/adreno-kgsl-pm4.md §18.1).
FRACTIONAL = ("openpilot-0.11", "tg0.12-329_warp_1928x1208_tinygrad.pkl.gz")


def main():
    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    from fake_kgsl import install

    submissions = []
    install(submissions)
    from tinygrad import Device, dtypes
    from tinygrad.device import TinyELF
    from tinygrad.runtime import ops_qcom

    dev = Device["QCOM"]
    ops_qcom.IR3Renderer = type(
        "NotIR3Renderer", (), {}
    )  # select the CL path in QCOMProgram (see module doc)
    kernels = []
    todo = [
        (pkl, ln, f"{pkl.name[: -len('.pkl.gz')]}.{ln['name']}.adreno.bin")
        for pkl in sorted(data.glob("*.pkl.gz"))
        for ln in launches(pkl)
    ]
    frac = data.parent / FRACTIONAL[0] / FRACTIONAL[1]
    for ln in launches(frac):
        if any(isinstance(g, float) for g in ln["global"]):
            file = next(f for _, o, f in todo if o["name"] == ln["name"])
            assert (data / file).read_bytes() == ln["lib"], (
                f"{ln['name']}: the 0.11.1 binary differs from {file}"
            )
            todo.append((frac, ln, file))
    for pkl, ln, file in todo:
        lib = (data / file).read_bytes()
        sig = tuple((f"data{i}", i, dtypes.uchar, ()) for i in range(len(ln["sizes"])))
        prg = ops_qcom.QCOMProgram(
            dev, TinyELF(lib=lib, name=ln["name"], target=None, signature=sig)
        )
        assert not prg.NIR
        bufs = [dev.allocator.alloc(n) for n in ln["sizes"]]
        start = len(submissions)
        prg(*bufs, global_size=tuple(ln["global"]), local_size=tuple(ln["local"]))
        assert len(submissions) == start + 1, "one GPU_COMMAND per launch expected"
        dws = submissions[-1]["dwords"]
        k = next(
            i
            for i in range(len(dws) - 3)
            if dws[i] == 0x70348003 and dws[i + 1] == 0x40364000
        )
        args_va = dws[k + 2] | dws[k + 3] << 32
        args = bytes((ctypes.c_uint8 * prg.kernargs_alloc_size).from_address(args_va))
        kernels.append(
            {
                "pickle": pkl.name,
                "file": file,
                "name": ln["name"],
                "global": ln["global"],
                "local": ln["local"],
                "sizes": ln["sizes"],
                "ib": dws,
                "args": args.hex(),
                "kernargs_alloc_size": prg.kernargs_alloc_size,
                "addrs": {
                    "dummy": dev.dummy_addr,
                    "border": dev.border_color_buf.va_addr,
                    "stack": dev._stack.va_addr,
                    "lib": prg.lib_gpu.va_addr,
                    "args": args_va,
                    "timeline": dev.timeline_signal.value_addr,
                    "bufs": [b.va_addr for b in bufs],
                },
            }
        )
    out.write_text(
        json.dumps(
            {
                "tinygrad": "0.14",
                "tinygrad_device": "QCOM (CL path)",
                "kernels": kernels,
            }
        )
        + "\n"
    )


if __name__ == "__main__":
    os.environ.setdefault("DEV", "QCOM")
    main()
