//! The few fields of a Qualcomm (QCOM CL) kernel container this test needs, read as the fact sheet's table
//! says (docs/hw/adreno-kgsl-pm4.md §9.1 restates it): the instruction image, the kernel-argument records and
//! the constants the compiler placed in the constant file.
//!
//! Temporary: the crate's typed parser (helper cl26, `qcom/src/adreno/`) replaces this once it is merged.

/// What a CL-mode dispatch needs from one container.
pub struct Container {
    pub image: Vec<u8>,
    /// Dword offset into the constant file of each buffer argument's 64-bit address, in signature order.
    pub arg_dwords: Vec<u32>,
    /// Compiler constants: (value, byte offset in the constant file, size in bytes 4 or 2).
    pub consts: Vec<(u32, u32, u32)>,
}

fn u32_at(b: &[u8], o: usize) -> Result<u32, String> {
    b.get(o..o + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| {
            format!(
                "container field at {o:#x} is past its end ({} bytes)",
                b.len()
            )
        })
}

/// Read `b`, a container whose kernel is called `name` (the records start after the name, whose length the
/// container does not store: names of a multiple of 4 characters are not NUL-terminated).
pub fn read(b: &[u8], name: &str) -> Result<Container, String> {
    let at = |o: usize| u32_at(b, o).map(|v| v as usize);
    let (img, size, d) = (at(0xC0)?, at(0x100)?, at(0x110)?);
    let image = b
        .get(img..img + size)
        .ok_or("instruction image past the container's end")?
        .to_vec();
    let stored = b
        .get(d + 0x158..d + 0x158 + name.len())
        .ok_or("kernel name past the container's end")?;
    if stored != name.as_bytes() {
        return Err(format!(
            "container names kernel {:?}, not {name}",
            String::from_utf8_lossy(stored)
        ));
    }
    let samplers = at(d + 0xDC)?;
    let mut off = (d + 0x158 + name.len()).div_ceil(4) * 4 + 8 * samplers;
    let mut arg_dwords = Vec::new();
    loop {
        let len = at(off)?;
        if len == 0 {
            break;
        }
        if at(off + 28)? != 0 {
            return Err("argument record of an image or sampler kind: not a buffer".into());
        }
        arg_dwords.push(at(off + 12)? as u32);
        off += len;
    }
    let (coff, csize) = (at(0xAC)?, at(0xB0)?);
    let mut consts = Vec::new();
    if csize != 0 {
        let mut o = coff;
        while o + 40 <= img {
            let (v, k, is32) = (at(o)? as u32, at(o + 16)? as u32, at(o + 24)? != 0);
            consts.push(if is32 { (v, k * 4, 4) } else { (v, k * 2, 2) });
            o += 40;
        }
    }
    Ok(Container {
        image,
        arg_dwords,
        consts,
    })
}
