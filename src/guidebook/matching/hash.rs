//! The hash of the literal index's tables and the pattern validator's class memo: a
//! multiply-rotate over machine words, for keys nothing adversarial chooses. Reads and writes
//! nothing.

/// A multiply-rotate hasher for the class memo and the literal windows: SipHash spent a tenth
/// of a large load on the memo's long range lists, and nothing adversarial chooses either key.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHash(u64);

impl std::hash::BuildHasher for FastHash {
    type Hasher = FastHash;
    fn build_hasher(&self) -> FastHash {
        FastHash(0)
    }
}

impl std::hash::Hasher for FastHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes a step; the length that `Hash` writes first tells a short tail apart
        // from one padded with zeros.
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.write_u64(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let mut word = [0u8; 8];
            word[..tail.len()].copy_from_slice(tail);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_hash_tells_apart_byte_strings_that_differ_only_in_padding_or_order() {
        use std::hash::BuildHasher;
        let keys: [&[u8]; 7] = [
            b"",
            b"\0",
            b"ab",
            b"ab\0",
            b"ab\0\0\0\0\0\0",
            b"OrderInvoiceImpl(",
            b"OrderInvoiceImpl)",
        ];
        let hashes: std::collections::HashSet<u64> = keys
            .iter()
            .map(|k| FastHash::default().hash_one(k))
            .collect();
        assert_eq!(hashes.len(), keys.len());
        // The words are mixed in order: the same eight-byte words swapped hash apart.
        assert_ne!(
            FastHash::default().hash_one(b"AAAAAAAABBBBBBBB".as_slice()),
            FastHash::default().hash_one(b"BBBBBBBBAAAAAAAA".as_slice())
        );
    }
}
