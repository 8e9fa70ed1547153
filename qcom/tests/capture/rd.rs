//! Reader of the `.rd` command-stream capture format (docs/hw/adreno-kgsl-pm4.md §17): sections of
//! `u32 type, u32 size, size bytes`; a `0xffffffff 0xffffffff` pair is padding. Type 3 names a GPU buffer
//! (`lo, size, hi`), type 12 gives the contents of the buffer named last, type 6 submits a command stream
//! (`lo, size in dwords, hi`), type 13 the GPU id. Every command stream is kept with a snapshot of the buffers
//! as they were when it was submitted.

/// One submitted command stream and the GPU memory the capture had dumped by then.
pub struct Submit {
    pub addr: u64,
    pub dwords: u32,
    pub memory: Vec<(u64, Vec<u8>)>,
}

pub struct Capture {
    pub gpu_id: Option<u32>,
    pub submits: Vec<Submit>,
}

fn u32_at(d: &[u8], o: usize) -> Result<u32, String> {
    d.get(o..o + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| format!("capture ends inside the field at byte {o}"))
}

/// Parse a whole capture; it must end exactly after its last section.
pub fn parse(d: &[u8]) -> Result<Capture, String> {
    let (mut p, mut gpu_id, mut submits) = (0usize, None, Vec::new());
    let mut memory: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut last: Option<(u64, u32)> = None;
    while p < d.len() {
        let (ty, size) = (u32_at(d, p)?, u32_at(d, p + 4)?);
        p += 8;
        if ty == u32::MAX && size == u32::MAX {
            continue;
        }
        let body = d
            .get(p..p + size as usize)
            .ok_or_else(|| format!("section of type {ty} at byte {} runs past the end", p - 8))?;
        match ty {
            3 => {
                let a = u32_at(body, 0)? as u64 | (u32_at(body, 8)? as u64) << 32;
                last = Some((a, u32_at(body, 4)?));
            }
            12 => {
                let (a, _) = last.ok_or("buffer contents before any GPU address")?;
                memory.retain(|(b, _)| *b != a);
                memory.push((a, body.to_vec()));
            }
            6 => submits.push(Submit {
                addr: u32_at(body, 0)? as u64 | (u32_at(body, 8)? as u64) << 32,
                dwords: u32_at(body, 4)?,
                memory: memory.clone(),
            }),
            13 => gpu_id = Some(u32_at(body, 0)?),
            _ => {}
        }
        p += size as usize;
    }
    Ok(Capture { gpu_id, submits })
}

impl Submit {
    /// `n` dwords of GPU memory at `addr`, from the buffer that holds them.
    pub fn read(&self, addr: u64, n: usize) -> Result<Vec<u32>, String> {
        let (base, bytes) = self
            .memory
            .iter()
            .find(|(b, v)| addr >= *b && addr + 4 * n as u64 <= b + v.len() as u64)
            .ok_or_else(|| format!("no dumped buffer holds {n} dwords at {addr:#x}"))?;
        let o = (addr - base) as usize;
        Ok(bytes[o..o + 4 * n]
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}
