"""Test-only helper: disassemble raw a6xx IR3 shader images with Mesa's own decoder (tinymesa 25.2.7.2,
`ir3_isa_disasm`, gpu_id 630, no branch labels) so the Rust decoder can be compared with it.

Usage: python mesa_disasm.py FILE...   For each FILE prints `=== FILE`, then one line per instruction
as Mesa prints it."""
import ctypes, os, sys, tempfile
import tinymesa

lib = ctypes.CDLL(str(tinymesa.libtinymesa))
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fclose.argtypes = [ctypes.c_void_p]
lib.ir3_isa_disasm.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
lib.ir3_isa_disasm.restype = None

def options() -> ctypes.Array:
  # struct isa_decode_options (80 bytes): u32 gpu_id @0, bool show_errors @4, u32 max_errors @8,
  # bool branch_labels @12, bool stop @13, then callback pointers (all NULL here).
  o = (ctypes.c_uint8 * 80)()
  ctypes.c_uint32.from_buffer(o, 0).value = 630
  o[4] = 1
  return o

def disasm(code: bytes) -> str:
  with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "out.txt")
    fp = libc.fopen(path.encode(), b"w")
    buf = ctypes.create_string_buffer(code, len(code))
    lib.ir3_isa_disasm(buf, len(code), fp, options())
    libc.fclose(fp)
    with open(path) as f: return f.read()

if __name__ == "__main__":
  for p in sys.argv[1:]:
    print(f"=== {p}")
    with open(p, "rb") as f: sys.stdout.write(disasm(f.read()))
