//! Verifying a signed bundle against a set of trusted Ed25519 keys (feature `sign`), on the raw
//! bytes and before anything is parsed, mapped or run. The block and the signed message are defined
//! in `bundle::signature`; the signature is checked incrementally over the file, so nothing is
//! copied and no allocator is needed.
use core::fmt;

use crate::bundle::signature::{read_block, signed_message};
use crate::bundle::BundleError;

/// Why a bundle is refused by a trust store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignError {
    /// The file does not end in a signature block.
    Unsigned,
    /// The signature block is malformed.
    Block(BundleError),
    /// Signed, but by a key that is not trusted.
    UntrustedKey { key: [u8; 32] },
    /// Signed by a trusted key, but the signature does not match the bytes: the file was changed
    /// after signing (or the signature is forged).
    BadSignature { key: [u8; 32] },
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignError::Unsigned => write!(f, "the bundle is not signed"),
            SignError::Block(e) => write!(f, "the signature block is malformed: {e}"),
            SignError::UntrustedKey { .. } => {
                write!(f, "the bundle is signed by a key that is not trusted")
            }
            SignError::BadSignature { .. } => write!(
                f,
                "the signature does not match the bundle's bytes (changed after signing)"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SignError {}

/// Check that `bytes` is a bundle signed by one of `trusted` (Ed25519 public keys) and that its
/// signature covers these bytes; returns the signer's key. The header's CRCs and layout are the
/// parser's to check afterwards (they are not signed, being checksums of what is).
pub fn verify(bytes: &[u8], trusted: &[[u8; 32]]) -> Result<[u8; 32], SignError> {
    let block = read_block(bytes)
        .map_err(SignError::Block)?
        .ok_or(SignError::Unsigned)?;
    let key = *block.key;
    if !trusted.contains(&key) {
        return Err(SignError::UntrustedKey { key });
    }
    let public = ed25519_compact::PublicKey::new(key);
    let signature = ed25519_compact::Signature::new(*block.signature);
    let mut state = public
        .verify_incremental(&signature)
        .map_err(|_| SignError::BadSignature { key })?;
    for part in signed_message(bytes, block.offset) {
        state.absorb(part);
    }
    state
        .verify()
        .map_err(|_| SignError::BadSignature { key })?;
    Ok(key)
}
