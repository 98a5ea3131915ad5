//! Gradual rollout: which keys a flag with `rollout_percent` < 100 is on for, by Unleash's
//! normalisation of MurmurHash3 (x86, 32-bit, seed 0) over `"<flag>:<key>"`. Pure functions.

/// MurmurHash3 x86_32 of `data` with `seed`, as in Austin Appleby's reference implementation
/// (and Python's `mmh3.hash(data, seed, signed=False)`).
pub fn murmur3_x86_32(data: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h = seed;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let mut k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, b) in tail.iter().enumerate() {
            k |= u32::from(*b) << (8 * i);
        }
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// The key's bucket for `flag`, 1..=100: `murmur3("<flag>:<key>") % 100 + 1`.
pub fn bucket(flag: &str, key: &str) -> u32 {
    murmur3_x86_32(format!("{flag}:{key}").as_bytes(), 0) % 100 + 1
}

/// Whether an enabled flag with `rollout_percent` is on for `key`. At 100 (or more) it is on
/// for everyone, keyed or not; below that a request without a key is off.
pub fn rolled_out(flag: &str, rollout_percent: u8, key: Option<&str>) -> bool {
    if rollout_percent >= 100 {
        return true;
    }
    match key {
        Some(key) => bucket(flag, key) <= u32::from(rollout_percent),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from Python's `mmh3` (`mmh3.hash(s, 0, signed=False)`).
    #[test]
    fn murmur3_matches_the_reference_implementation() {
        let vectors: [(&str, u32); 7] = [
            ("", 0),
            ("hello", 613_153_351),
            ("Hello world", 2_911_983_372),
            ("ab_test_haiku:session-1", 3_230_549_079),
            ("progressive_disclosure:abc", 1_965_773_975),
            ("ab_test_haiku:세션", 3_298_565_503),
            ("flag:key", 2_655_680_254),
        ];
        for (input, expected) in vectors {
            assert_eq!(murmur3_x86_32(input.as_bytes(), 0), expected, "{input:?}");
        }
    }

    /// The vectors Unleash's clients share (`normalizedValue('123', 'gr1') == 73`,
    /// `normalizedValue('999', 'groupX') == 25`), so our buckets equal theirs.
    #[test]
    fn buckets_match_unleash_normalisation() {
        assert_eq!(bucket("gr1", "123"), 73);
        assert_eq!(bucket("groupX", "999"), 25);
        assert_eq!(bucket("ab_test_haiku", "session-1"), 80);
        assert_eq!(bucket("ab_test_haiku", "세션"), 4);
    }

    #[test]
    fn rollout_edges() {
        // bucket("gr1", "123") is 73: on at 73, off at 72.
        assert!(rolled_out("gr1", 73, Some("123")));
        assert!(!rolled_out("gr1", 72, Some("123")));
        assert!(!rolled_out("gr1", 0, Some("123")));
        assert!(rolled_out("gr1", 100, None));
        assert!(!rolled_out("gr1", 99, None));
    }

    /// 10,000 random keys at 50 % land within 50 ± 2 %.
    #[test]
    fn half_of_random_keys_at_fifty_percent() {
        // A small xorshift generator: the keys are random-looking yet the test is repeatable.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut on = 0;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = format!("session-{state:016x}");
            if rolled_out("ab_test_haiku", 50, Some(&key)) {
                on += 1;
            }
        }
        assert!(
            (4_800..=5_200).contains(&on),
            "{on} of 10000 keys on at 50 %"
        );
    }
}
