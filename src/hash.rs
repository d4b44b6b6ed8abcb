//! Content hashing: the one short, stable name of a text, shared by the record
//! (shared texts, input hashes), the catalog (suffixes that make clashing names
//! unique) and the templates.

/// A map keyed by our own names, texts and addresses on a hot path: hashed with
/// foldhash, not the standard library's SipHash, whose resistance to chosen keys buys
/// nothing here (no adversary picks a catalog's names) and which took a tenth of a
/// 10,000-tool sweep's time. Iteration order is as unspecified as the standard map's.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// A set, as [`FastMap`].
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// A content hash of a text: 32 hex digits of BLAKE3.
pub fn content_hash(bytes: &[u8]) -> String {
    let h = blake3::hash(bytes);
    h.to_hex()[..32].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hash_is_fixed() {
        assert_eq!(content_hash(b"").len(), 32);
        // A fixed value: texts stored by hash must keep their names between builds.
        assert_eq!(content_hash(b"abc"), "6437b3ac38465133ffb63b75273a8db5");
    }
}
