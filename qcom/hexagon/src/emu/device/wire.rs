//! The model's side of the reverse-RPC byte format (docs/hw/fastrpc.md §4), written independently of the
//! runtime's decoder: requests as the DSP sends them, responses as the host returns them; and the check that a
//! served library is a Hexagon ELF32 shared object exporting `entry`.

fn align8(x: usize) -> usize {
    (x + 7) & !7
}

/// A request: each input as {u32 size, data at the next 8-byte boundary}, then each output's u32 size.
pub fn encode_request(ins: &[&[u8]], out_sizes: &[u32]) -> Vec<u8> {
    let mut b = Vec::new();
    for i in ins {
        b.extend_from_slice(&(i.len() as u32).to_le_bytes());
        b.resize(align8(b.len()), 0);
        b.extend_from_slice(i);
    }
    for o in out_sizes {
        b.extend_from_slice(&o.to_le_bytes());
    }
    b
}

/// Split a response into `n` outputs, checking each against its requested size.
pub fn decode_response(r: &[u8], sizes: &[u32]) -> Result<Vec<Vec<u8>>, String> {
    let mut c = 0usize;
    let mut outs = Vec::new();
    for (k, &want) in sizes.iter().enumerate() {
        let n = r
            .get(c..c + 4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .ok_or_else(|| format!("response too short for output {k}"))?;
        if n > want {
            return Err(format!("output {k} has {n} bytes, {want} were asked for"));
        }
        let s = align8(c + 4);
        let data = r
            .get(s..s + n as usize)
            .ok_or_else(|| format!("output {k} runs past the response"))?;
        outs.push(data.to_vec());
        c = s + n as usize;
    }
    Ok(outs)
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

/// The DSP loader's acceptance check: ELFCLASS32 little-endian, `ET_DYN`, `e_machine` 164 (Hexagon), and a
/// dynamic symbol named `entry`.
pub fn check_library(b: &[u8]) -> Result<(), String> {
    if b.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err("not an ELF file".into());
    }
    if b[4..6] != [1, 1] {
        return Err("not a little-endian ELF32 file".into());
    }
    if u16_at(b, 16) != Some(3) || u16_at(b, 18) != Some(164) {
        return Err("not a Hexagon (e_machine 164) shared object".into());
    }
    let bad = || "malformed section headers".to_string();
    let shoff = u32_at(b, 32).ok_or_else(bad)? as usize;
    let shentsize = u16_at(b, 46).ok_or_else(bad)? as usize;
    let shnum = u16_at(b, 48).ok_or_else(bad)? as usize;
    let sh = |i: usize, f: usize| u32_at(b, shoff + i * shentsize + f);
    for i in 0..shnum {
        if sh(i, 4) != Some(11) {
            continue; // SHT_DYNSYM
        }
        let (off, size, link) = (
            sh(i, 16).ok_or_else(bad)?,
            sh(i, 20).ok_or_else(bad)?,
            sh(i, 24).ok_or_else(bad)?,
        );
        let stroff = sh(link as usize, 16).ok_or_else(bad)? as usize;
        for s in (off as usize..(off + size) as usize).step_by(16) {
            let name = stroff + u32_at(b, s).ok_or_else(bad)? as usize;
            if b.get(name..name + 6) == Some(b"entry\0".as_slice())
                && u16_at(b, s + 14).is_some_and(|x| x != 0)
            {
                return Ok(());
            }
        }
    }
    Err("the library exports no `entry`".into())
}
