//! The signature block of a signed bundle (format 2.2): where it lies, what it holds and which bytes
//! its signature covers. Verifying the signature is `crate::sign` (feature `sign`); this module only
//! reads bytes, so every build can tell a signed bundle and its signer's key.
//!
//! A signed bundle is an unsigned one with minor version 2 (3 if it carries index checks) and this 112-byte block appended after the
//! weights blob, as the last bytes of the file (the header's total length and body CRC include it):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `\x89MRTSIG\n` |
//! | 8 | 2 | algorithm (1 = Ed25519) |
//! | 10 | 2 | reserved (0) |
//! | 12 | 32 | the signer's Ed25519 public key |
//! | 44 | 64 | the Ed25519 signature |
//! | 108 | 4 | reserved (0) |
//!
//! The signed message ([`signed_message`]) is a domain string followed by every byte of the file but
//! the signature itself and the two CRC-32 fields of the header (bytes 48..52 and 60..64), which are
//! checksums of the signed bytes *and* the signature: header, body, padding, weights and the block up
//! to the key. Leaving the CRCs out keeps the body CRC over every byte after the header, so a 2.1
//! reader still reads a signed bundle (evolution rule 3: it ignores bytes after the weights).
use super::header::{parse_header, Header, HEADER_LEN, MAGIC};
use super::BundleError;

/// Magic of the signature block.
pub const SIGNATURE_MAGIC: [u8; 8] = *b"\x89MRTSIG\n";
/// Length of the signature block.
pub const SIGNATURE_BLOCK_LEN: usize = 112;
/// The algorithm number of Ed25519.
pub const ALG_ED25519: u16 = 1;
/// The first bytes of every signed message: a signature over a bundle means nothing elsewhere.
pub const SIGNATURE_DOMAIN: &[u8] = b"modelrt signed bundle v1\0";
/// The lowest minor version of a signed bundle (a file that needs a later minor keeps it when signed).
pub const SIGNED_MINOR: u16 = 2;

/// Offset of the key inside the block.
const KEY_AT: usize = 12;
/// Offset of the signature inside the block (the signed part of the block ends here).
const SIG_AT: usize = 44;

/// The signature block of a bundle, borrowing the file's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignatureBlock<'a> {
    /// Offset of the block in the file (= the length of what precedes it).
    pub offset: usize,
    /// The signer's Ed25519 public key.
    pub key: &'a [u8; 32],
    /// The Ed25519 signature.
    pub signature: &'a [u8; 64],
}

/// Read the signature block at the end of `bytes`, whatever the header says: `Ok(None)` if the file
/// does not end in one (it is unsigned, or not a bundle). What it covers is checked by the signature;
/// whether it is where the header puts the end of the weights, by `signed_end`.
pub fn read_block(bytes: &[u8]) -> Result<Option<SignatureBlock<'_>>, BundleError> {
    if bytes.len() < HEADER_LEN + SIGNATURE_BLOCK_LEN || bytes[..8] != MAGIC {
        return Ok(None);
    }
    let offset = bytes.len() - SIGNATURE_BLOCK_LEN;
    let b = &bytes[offset..];
    if b[..8] != SIGNATURE_MAGIC {
        return Ok(None);
    }
    if u16::from_le_bytes([b[8], b[9]]) != ALG_ED25519 {
        return Err(BundleError::Layout("unknown signature algorithm"));
    }
    if b[10..12] != [0, 0] || b[108..112] != [0, 0, 0, 0] {
        return Err(BundleError::Layout(
            "reserved signature block bytes are not zero",
        ));
    }
    let key = b[KEY_AT..SIG_AT].try_into().expect("32 bytes");
    let signature = b[SIG_AT..108].try_into().expect("64 bytes");
    Ok(Some(SignatureBlock {
        offset,
        key,
        signature,
    }))
}

/// Where the part of a file before any signature block ends (the file's length when it has none): a
/// file of minor 2 or later has nothing after its weights blob, or exactly a signature block. Earlier
/// minors ignore bytes after the weights (as their readers did).
#[inline(never)]
pub(crate) fn signed_end(bytes: &[u8], header: &Header) -> Result<usize, BundleError> {
    let len = bytes.len();
    if header.major < 2 || header.minor < SIGNED_MINOR {
        return Ok(len);
    }
    let weights_end = header.weights_offset.saturating_add(header.weights_len);
    if weights_end >= len as u64 {
        // At the end (unsigned), or past it (refused by the caller's layout check).
        return Ok(len);
    }
    match read_block(bytes) {
        Ok(Some(b)) if b.offset as u64 == weights_end => Ok(b.offset),
        Err(e) => Err(e),
        _ => Err(BundleError::Layout(
            "bytes after the weights blob are not a signature block",
        )),
    }
}

/// The signature block of bundle `bytes` after checking its header (magic, CRCs, version): `None`
/// for an unsigned bundle.
pub fn signature_block(bytes: &[u8]) -> Result<Option<SignatureBlock<'_>>, BundleError> {
    let header = parse_header(bytes)?;
    if signed_end(bytes, &header)? == bytes.len() {
        return Ok(None);
    }
    read_block(bytes)
}

/// The pieces of the message `block`'s signature signs, in order (their concatenation is the
/// message): the domain, the header without its CRC fields, every byte from the header to the block,
/// and the block up to and including the key.
pub fn signed_message(bytes: &[u8], block_offset: usize) -> [&[u8]; 5] {
    let block_end = (block_offset + SIG_AT).min(bytes.len());
    let body_start = HEADER_LEN.min(block_offset);
    [
        SIGNATURE_DOMAIN,
        &bytes[..48.min(body_start)],
        &bytes[52.min(body_start)..60.min(body_start)],
        &bytes[body_start..block_offset],
        &bytes[block_offset..block_end],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_fields_tile_its_length() {
        assert_eq!(8 + 2 + 2 + 32 + 64 + 4, SIGNATURE_BLOCK_LEN);
        assert_eq!(SIG_AT + 64 + 4, SIGNATURE_BLOCK_LEN);
    }

    #[test]
    fn a_file_without_a_block_is_unsigned() {
        assert_eq!(read_block(&[0u8; 300]), Ok(None));
        assert_eq!(read_block(b"short"), Ok(None));
    }
}
