#!/usr/bin/env python3
"""Record the USB transfers tinygrad 0.14.0's ASM24 driver emits, as golden vectors for modelrt.

tinygrad's own classes do the encoding: `CustomASM24Controller` (config/memory TLPs, streaming,
XDATA, SRAM DMA, PCIe power), `USBMMIOInterface` (the SRAM view a copy-out reads through) and the
AMD allocator's `_copyin` / `_copyout` (the pipelined streamed copies). They run against
`RecordingUsb` below, a stand-in for tinygrad's `USB3` (the libusb wrapper) that writes down every
control and bulk transfer and answers IN transfers from a small scripted device. Nothing of
tinygrad's code is copied here; the GPU behind the bridge is replaced by stubs that do nothing,
because only the USB traffic is recorded.

Output: `asm24_usb.json` next to this script (or the path given with `-o`). Every case holds the
operation tinygrad was asked to do, its result, and the transfers in order:
  control_out: request, value, index, data (hex), timeout_ms, async
  control_in:  request, value, index, length, timeout_ms, reply (hex), async
  bulk_out:    endpoint, length, timeout_ms, async, and data (hex, when <= 64 bytes) or sha256
  bulk_in:     endpoint, length, timeout_ms, reply (hex, when <= 64 bytes) or reply_sha256

Run with the project venv:  target/modelrt-venv/bin/python usbgpu/bridge/tests/golden/record_usb_golden.py
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import struct
import sys
import types
from importlib import metadata

INLINE_MAX = 64  # bulk payloads up to this size are stored as hex, bigger ones as sha256


def pattern(n: int, seed: int) -> bytes:
    """Deterministic test payload; the Rust tests rebuild it with the same formula."""
    return bytes((i * 131 + seed) & 0xFF for i in range(n))


def completion(data: int, status: int = 0, ret: int = 0) -> bytes:
    """An 8-byte 0xF0 IN completion as the fake device answers (status in byte 4 bits 7:5)."""
    return struct.pack("<IBBBB", data, (status & 7) << 5, 0, 0, ret)


class RecordingUsb:
    """Duck-typed replacement for tinygrad's `USB3`: records transfers, answers from a script."""

    def __init__(self):
        self.log: list[dict] = []
        self.xdata = bytearray(0x10000)  # XDATA as the fake firmware keeps it
        self.completions: list[bytes] = []  # replies to 0xF0 IN, in order
        self.bulk_replies: list[bytes] = []  # replies to bulk IN, in order
        self.copyin_chunks = 0  # window bulks seen after the copy-in set-up (the fake GPU's drain fence)
        self.fence_follows_bulks = False
        self._tag = 0
        self.product = "custom (recorded)"

    # -- synchronous transfers ------------------------------------------------------------------
    def control_write(self, request: int, value: int = 0, index: int = 0, data: bytes = b"", timeout: int = 1000):
        self._control_out(request, value, index, bytes(data), timeout, False)

    def control_read(self, request: int, length: int, value: int = 0, index: int = 0, timeout: int = 1000):
        return memoryview(self._control_in(request, length, value, index, timeout, False))

    def bulk_write(self, payload, timeout: int = 1000):
        self._bulk_out(bytes(payload), timeout, False)

    def bulk_read(self, length: int, timeout: int = 1000):
        reply = self.bulk_replies.pop(0) if self.bulk_replies else bytes(length)
        assert len(reply) == length, f"scripted bulk reply of {len(reply)} bytes for a {length}-byte read"
        entry = {"type": "bulk_in", "endpoint": 0x81, "length": length, "timeout_ms": timeout, "async": False}
        entry.update(blob("reply", reply))
        self.log.append(entry)
        return memoryview(bytearray(reply))

    # -- asynchronous transfers (complete at once; recorded with async = true) ------------------
    def control_write_async(self, request: int, value: int = 0, index: int = 0, data: bytes = b"", timeout: int = 1000):
        self._control_out(request, value, index, bytes(data), timeout, True)
        return self._next_tag()

    def control_read_async(self, request: int, length: int, value: int = 0, index: int = 0, timeout: int = 1000):
        return self._next_tag(), memoryview(bytearray(self._control_in(request, length, value, index, timeout, True)))

    def bulk_write_async(self, payload, timeout: int = 10000):
        self._bulk_out(bytes(payload), timeout, True)
        return self._next_tag()

    def bulk_wait(self, tag: int):
        pass

    # -- the scripted device ----------------------------------------------------------------------
    def _next_tag(self) -> int:
        self._tag += 1
        return self._tag

    def _control_out(self, request, value, index, data, timeout, is_async):
        self.log.append({"type": "control_out", "request": request, "value": value, "index": index,
                         "data": data.hex(), "timeout_ms": timeout, "async": is_async})
        if request == 0xE5:
            self.xdata[value] = index & 0xFF
        elif request == 0xF3:
            self.xdata[0xB450] = 0x78 if value & 1 else 0x00

    def _control_in(self, request, length, value, index, timeout, is_async) -> bytes:
        if request == 0xE4:
            reply = bytes(self.xdata[value:value + length])
        elif request == 0xF0:
            reply = self.completions.pop(0)
        else:
            raise AssertionError(f"unexpected control IN 0x{request:02X}")
        assert len(reply) == length
        self.log.append({"type": "control_in", "request": request, "value": value, "index": index, "length": length,
                         "timeout_ms": timeout, "reply": reply.hex(), "async": is_async})
        return reply

    def _bulk_out(self, payload: bytes, timeout: int, is_async: bool):
        entry = {"type": "bulk_out", "endpoint": 0x02, "length": len(payload), "timeout_ms": timeout, "async": is_async}
        entry.update(blob("data", payload))
        self.log.append(entry)
        if self.fence_follows_bulks and is_async:
            # The fake GPU drains every window at once: the drain fence (XDATA 0xA800, u64) counts chunks.
            self.copyin_chunks += 1
            self.xdata[0xA800:0xA808] = self.copyin_chunks.to_bytes(8, "little")


def blob(key: str, data: bytes) -> dict:
    if len(data) <= INLINE_MAX:
        return {key: data.hex()}
    return {f"{key}_sha256": hashlib.sha256(data).hexdigest()}


class Anything:
    """GPU-side stub: every attribute and call gives another stub, so queue building is a no-op."""

    va_addr = 0
    size = 0

    def __getattr__(self, name):
        return Anything()

    def __call__(self, *args, **kwargs):
        return Anything()

    def __or__(self, other):
        return 0

    __ror__ = __or__

    def __sub__(self, other):
        return 0


def amd_allocator_stub(ctrl, sram_view):
    """A stand-in `self` for `AMDAllocator._copyin/_copyout`: the USB controller is real, the GPU is not."""
    dev = Anything()
    dev.is_usb = lambda: True
    dev.iface = types.SimpleNamespace(pci_dev=types.SimpleNamespace(usb=ctrl), sys_buf=Anything(), cq_buf=Anything())
    dev.timeline_value = 1
    dev.device = "AMD"
    staging = types.SimpleNamespace(size=0x80000, offset=lambda off, size: Anything(), cpu_view=lambda: sram_view)
    return types.SimpleNamespace(dev=dev, b=[staging])


def record(name: str, usb: RecordingUsb, op: dict, fn, note: str | None = None) -> dict:
    start = len(usb.log)
    result = fn()
    if isinstance(result, (bytes, bytearray, memoryview)):
        result = {"bytes": bytes(result).hex()} if len(result) <= INLINE_MAX else {"sha256": hashlib.sha256(bytes(result)).hexdigest()}
    case = {"name": name, "op": op, "result": result, "transfers": usb.log[start:]}
    if note:
        case["note"] = note
    return case


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=pathlib.Path, default=pathlib.Path(__file__).with_name("asm24_usb.json"))
    args = ap.parse_args()

    from tinygrad.runtime.support.usb import CustomASM24Controller, USBMMIOInterface
    from tinygrad.runtime.ops_amd import AMDAllocator

    usb = RecordingUsb()
    cases = []
    # Open: LTSSM reads 0x00, so the controller powers PCIe on (0xF3) and reads it again.
    holder = {}
    cases.append(record("open_powers_on", usb, {"kind": "open"},
                        lambda: holder.setdefault("ctrl", CustomASM24Controller(usb)) and None))
    ctrl = holder["ctrl"]

    def cfg_read(name, bus, reg, size, data, dev=0, fn=0):
        usb.completions.append(completion(data))
        cases.append(record(name, usb, {"kind": "config_read", "bus": bus, "dev": dev, "fn": fn, "reg": reg, "size": size},
                            lambda: ctrl.pcie_cfg_req(reg, bus=bus, dev=dev, fn=fn, size=size)))

    def cfg_write(name, bus, reg, size, value, dev=0, fn=0):
        usb.completions.append(completion(0))
        cases.append(record(name, usb, {"kind": "config_write", "bus": bus, "dev": dev, "fn": fn, "reg": reg, "size": size,
                                        "value": value},
                            lambda: ctrl.pcie_cfg_req(reg, bus=bus, dev=dev, fn=fn, value=value, size=size)))

    cfg_read("config_read_gpu_id", 4, 0x00, 4, 0x744C1002)
    cfg_read("config_read_type0_command_byte", 0, 0x04, 1, 0x00100407)
    cfg_read("config_read_device_id_half", 4, 0x02, 2, 0x744C1002)
    cfg_read("config_read_byte3", 1, 0x0B, 1, 0x06040000)
    cfg_read("config_read_dev_fn_ext", 0x82, 0xFFE, 2, 0xBEEF0000, dev=0x1F, fn=5)
    cfg_write("config_write_command", 4, 0x04, 1, 0x07)
    cfg_write("config_write_dev_fn", 3, 0x109, 1, 0x5A, dev=6, fn=2)
    cfg_write("config_write_memory_limit", 0, 0x22, 2, 0xFFFF)
    cfg_write("config_write_bus_numbers", 1, 0x18, 4, 0x00040201)
    cfg_write("config_write_bar_sizing", 4, 0x10, 4, 0xFFFFFFFF)
    # Engine error once (ret_status 3), then success: the whole request is re-issued.
    usb.completions += [completion(0, ret=3), completion(0x744C1002)]
    cases.append(record("config_read_engine_retry", usb, {"kind": "config_read", "bus": 4, "dev": 0, "fn": 0, "reg": 0, "size": 4},
                        lambda: ctrl.pcie_cfg_req(0, bus=4, dev=0, fn=0, size=4)))

    # Mode-0 memory TLPs: tinygrad's controller encodes them when asked (its AM driver uses streams instead).
    usb.completions.append(completion(0xDDCCBBAA))
    cases.append(record("mem_read_single_u16", usb, {"kind": "mem_read", "address": 0x10200006, "size": 2},
                        lambda: ctrl.pcie_request(0x20, 0x10200006, size=2),
                        "CustomASM24Controller.pcie_request with fmt 0x20; the AM driver itself never issues mode-0 memory TLPs"))
    usb.completions.append(completion(0x12345678))
    cases.append(record("mem_read_single_u32_high", usb, {"kind": "mem_read", "address": 0x800000010, "size": 4},
                        lambda: ctrl.pcie_request(0x20, 0x800000010, size=4),
                        "CustomASM24Controller.pcie_request with fmt 0x20; the AM driver itself never issues mode-0 memory TLPs"))
    cases.append(record("mem_write_single_u8", usb, {"kind": "mem_write", "address": 0x10200003, "size": 1, "value": 0xA5},
                        lambda: ctrl.pcie_request(0x60, 0x10200003, value=0xA5, size=1),
                        "posted: no 0xF0 IN follows"))
    cases.append(record("mem_write_single_u16", usb, {"kind": "mem_write", "address": 0x10200006, "size": 2, "value": 0xABCD},
                        lambda: ctrl.pcie_request(0x60, 0x10200006, value=0xABCD, size=2)))

    # Streaming memory access (every BAR access of the AM driver).
    data = pattern(16, 1)
    cases.append(record("stream_write_16", usb, {"kind": "stream_write", "address": 0x10200000, "len": 16, "seed": 1},
                        lambda: ctrl.pcie_mem_write(0x10200000, data)))
    cases.append(record("stream_write_vram_4", usb, {"kind": "stream_write", "address": 0x800001000, "len": 4, "seed": 2},
                        lambda: ctrl.pcie_mem_write(0x800001000, pattern(4, 2))))
    usb.bulk_replies.append(pattern(8, 3))
    cases.append(record("stream_read_8", usb, {"kind": "stream_read", "address": 0x10200010, "len": 8, "seed": 3},
                        lambda: ctrl.pcie_mem_read(0x10200010, 8)))

    # XDATA.
    cases.append(record("xdata_write_fence", usb, {"kind": "xdata_write", "address": 0xA800, "data": "0102030405060708"},
                        lambda: ctrl.write(0xA800, bytes(range(1, 9)))))
    cases.append(record("xdata_read_fence", usb, {"kind": "xdata_read", "address": 0xA800, "len": 8},
                        lambda: ctrl.read(0xA800, 8)))
    usb.xdata[0xA000:0xA000 + 300] = pattern(300, 10)
    cases.append(record("xdata_read_chunked_300", usb, {"kind": "xdata_read", "address": 0xA000, "len": 300, "seed": 10},
                        lambda: ctrl.read(0xA000, 300), "longer than 255 bytes: split into 255 + 45"))
    cases.append(record("pcie_power_off", usb, {"kind": "power", "on": False}, lambda: ctrl.set_pcie_power(False)))
    cases.append(record("pcie_power_on", usb, {"kind": "power", "on": True}, lambda: ctrl.set_pcie_power(True)))

    # SRAM DMA (0xF2): write arm + padded bulk OUT; read arm; bulk IN.
    cases.append(record("sram_write_slot16_1000", usb, {"kind": "sram_write", "slot": 16, "len": 1000, "seed": 4},
                        lambda: ctrl.scsi_write(pattern(1000, 4), slot_start=16)))
    cases.append(record("sram_write_slot0_full_window", usb, {"kind": "sram_write", "slot": 0, "len": 0x40000, "seed": 5},
                        lambda: ctrl.scsi_write(pattern(0x40000, 5), slot_start=0)))
    cases.append(record("sram_read_arm_1000", usb, {"kind": "sram_read_arm", "len": 1000}, lambda: ctrl.scsi_read_arm(1000)))
    cases.append(record("sram_read_arm_whole", usb, {"kind": "sram_read_arm", "len": 0x80000}, lambda: ctrl.scsi_read_arm(0x80000)))
    usb.bulk_replies.append(pattern(1024, 6))
    cases.append(record("sram_read_1000", usb, {"kind": "sram_read", "len": 1000, "seed": 6}, lambda: ctrl.scsi_read(1000),
                        "the reply is 1024 bytes of the pattern, truncated to 1000"))

    # Streamed copies through AMDAllocator (the GPU side is stubbed; the USB side is tinygrad's).
    sram_view = USBMMIOInterface(ctrl, 0xF000, 0x80000, fmt="B", pcimem=False)
    alloc = amd_allocator_stub(ctrl, sram_view)
    copy_len = 0x3FFFC + 0x3FFFC + 100  # two full chunks and a short third
    src = pattern(copy_len, 7)
    usb.fence_follows_bulks = False
    def copyin():
        usb.fence_follows_bulks = True
        AMDAllocator._copyin(alloc, Anything(), memoryview(bytearray(src)))
        usb.fence_follows_bulks = False
    cases.append(record("copyin_pipelined_3_chunks", usb, {"kind": "copyin", "len": copy_len, "seed": 7}, copyin,
                        "first copy-in: fence clear, both windows zeroed, then per chunk an async 0xF2 arm, an async "
                        "0xE4 fence read and an async bulk OUT of payload + sentinel, then one drain-fence read"))
    out_len = 0x80000 + 2000
    usb.bulk_replies += [pattern(0x80000, 8), pattern(2048, 9)]
    out = bytearray(out_len)
    def copyout():
        AMDAllocator._copyout(alloc, memoryview(out), Anything())
        return bytes(out)
    cases.append(record("copyout_2_chunks", usb, {"kind": "copyout", "len": out_len, "seeds": [8, 9]}, copyout,
                        "per 512 KiB chunk: 0xF2 read arm, (GPU copy), bulk IN of the sector-padded length"))

    doc = {
        "source": f"tinygrad {metadata.version('tinygrad')} CustomASM24Controller / USBMMIOInterface / AMDAllocator "
                  "over a recording USB3 stand-in (usbgpu/bridge/tests/golden/record_usb_golden.py)",
        "pattern": "byte i of a payload with seed s is (i * 131 + s) & 0xFF",
        "cases": cases,
    }
    args.output.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(cases)} cases, {sum(len(c['transfers']) for c in cases)} transfers to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
