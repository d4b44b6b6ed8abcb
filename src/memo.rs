//! A bounded memo of values by text, in two generations: a hit in the old generation
//! is moved to the young one; when the young one is full, it becomes the old one and
//! the old one is dropped. What is asked for again and again (a system prompt, a tool
//! list every request sends) stays young, and memory stays bounded however long a run
//! goes (DESIGN §12). The token counter keeps each text's count in one, the run's text
//! store each text's content hash.

use std::collections::HashMap;

/// The memo's hasher: a fast one (its keys are our own texts, not an adversary's).
type Hasher = foldhash::fast::FixedState;

pub struct Generations<V> {
    young: HashMap<String, V, Hasher>,
    old: HashMap<String, V, Hasher>,
    /// Bytes of the young generation's keys.
    young_bytes: usize,
    /// Entries and key bytes a generation holds before it becomes the old one.
    entries: usize,
    bytes: usize,
}

impl<V: Clone> Generations<V> {
    /// A memo whose generations hold at most `entries` keys of `bytes` bytes in all
    /// (a key longer than `bytes` is never kept).
    pub fn new(entries: usize, bytes: usize) -> Self {
        Generations {
            young: HashMap::default(),
            old: HashMap::default(),
            young_bytes: 0,
            entries,
            bytes,
        }
    }

    pub fn get(&mut self, key: &str) -> Option<V> {
        if let Some(v) = self.young.get(key) {
            return Some(v.clone());
        }
        let (key, v) = self.old.remove_entry(key)?;
        self.insert(key, v.clone());
        Some(v)
    }

    pub fn insert(&mut self, key: String, v: V) {
        if key.len() > self.bytes {
            return;
        }
        if self.young.len() >= self.entries || self.young_bytes + key.len() > self.bytes {
            self.old = std::mem::take(&mut self.young);
            self.young_bytes = 0;
        }
        let len = key.len();
        // A key inserted twice is counted once.
        if self.young.insert(key, v).is_none() {
            self.young_bytes += len;
        }
    }

    /// Keys held now (at most two generations).
    pub fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_in_the_old_generation_survives_the_next_turnover() {
        let mut m = Generations::new(2, usize::MAX);
        m.insert("a".into(), 1);
        m.insert("b".into(), 2);
        // Full: "a" and "b" become old.
        m.insert("c".into(), 3);
        assert_eq!(m.get("a"), Some(1));
        // Young now holds "c" and "a": the next insert drops "b".
        m.insert("d".into(), 4);
        assert_eq!(m.get("b"), None);
        assert_eq!(m.get("a"), Some(1));
        assert_eq!(m.get("c"), Some(3));
        assert!(m.len() <= 4);
    }

    #[test]
    fn generations_are_bounded_by_bytes() {
        let mut m = Generations::new(usize::MAX, 10);
        m.insert("x".repeat(11), 0);
        assert!(m.is_empty(), "a key longer than a generation is not kept");
        for i in 0..100 {
            m.insert(format!("{i:04}"), i);
        }
        // Two generations of at most 10 bytes: at most 2 keys of 4 bytes each.
        assert!(m.len() <= 4, "{}", m.len());
        assert_eq!(m.get("0099"), Some(99));
        assert_eq!(m.get("0000"), None);
    }
}
