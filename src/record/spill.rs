//! Sorting more entries than should be held at once: an external merge sort.
//!
//! Readers that hold one entry per outcome to write them in plan order (the JUnit
//! cases, the explorer's rows) push them here. Up to [`Spill::new`]'s limit they stay
//! in memory and are sorted there, as before; past it each full buffer is sorted and
//! written to an anonymous temporary file as one sorted run, and [`Spill::sorted`]
//! merges the runs. Memory then follows the limit, not the number of outcomes.
//!
//! The order is the caller's key, and it may be refined while entries arrive (a
//! reader numbers names as it first sees them and sorts by the names' own order):
//! a key given later must order any two entries given earlier as the earlier key did.
//! Equal keys keep the order the entries were pushed in, as a stable sort does.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Entries held in memory before a sorted run is written out, unless
/// `DISCBENCH_SPILL_LIMIT` says otherwise: a million entries of a few dozen bytes each.
pub const DEFAULT_LIMIT: usize = 1 << 20;

/// The environment variable that sets how many entries a reader holds before it
/// sorts them on disk (a positive number; tests set it low to go through the files).
pub const LIMIT_VAR: &str = "DISCBENCH_SPILL_LIMIT";

/// The limit in force: [`LIMIT_VAR`] when set, else [`DEFAULT_LIMIT`].
pub fn limit() -> anyhow::Result<usize> {
    match std::env::var(LIMIT_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_LIMIT),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => anyhow::bail!("{LIMIT_VAR}={v:?}: expected a number of entries above 0"),
        },
        Err(e) => anyhow::bail!("{LIMIT_VAR}: {e}"),
    }
}

/// Entries to be read back in key order.
pub struct Spill<T> {
    dir: PathBuf,
    limit: usize,
    buf: Vec<T>,
    /// Sorted runs, one JSON line per entry, each file rewound to its start.
    runs: Vec<File>,
}

impl<T: Serialize + DeserializeOwned> Spill<T> {
    /// Holds up to `limit` entries in memory; runs past it go to anonymous files in
    /// `dir` (removed by the system when closed, whatever happens).
    pub fn new(dir: &Path, limit: usize) -> Spill<T> {
        Spill {
            // `Path::new("outcomes.jsonl").parent()` is the empty path.
            dir: if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir.to_path_buf()
            },
            limit: limit.max(1),
            buf: Vec::new(),
            runs: Vec::new(),
        }
    }

    pub fn push(&mut self, item: T) {
        self.buf.push(item);
    }

    /// Whether the buffer is full: the caller then calls [`Spill::spill`].
    pub fn full(&self) -> bool {
        self.buf.len() >= self.limit
    }

    /// How many sorted runs were written out.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Sorts the buffer by `key` and writes it out as one run.
    pub fn spill<K: Ord>(&mut self, key: impl Fn(&T) -> K) -> anyhow::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.buf.sort_by_key(|t| key(t));
        let file = tempfile::tempfile_in(&self.dir)
            .with_context(|| format!("cannot make a temporary file in {}", self.dir.display()))?;
        let mut w = BufWriter::with_capacity(1 << 16, file);
        for t in self.buf.drain(..) {
            serde_json::to_writer(&mut w, &t)?;
            w.write_all(b"\n")?;
        }
        let mut file = w.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        self.runs.push(file);
        self.buf.shrink_to(self.limit);
        Ok(())
    }

    /// Every entry, in `key` order (equal keys in the order they were pushed).
    pub fn sorted<K: Ord, F: Fn(&T) -> K>(mut self, key: F) -> anyhow::Result<Sorted<T, K, F>> {
        if self.runs.is_empty() {
            self.buf.sort_by_key(|t| key(t));
            return Ok(Sorted::Held(self.buf.into_iter()));
        }
        self.spill(&key)?;
        let mut merge = Merge {
            readers: self
                .runs
                .into_iter()
                .map(|f| BufReader::with_capacity(1 << 16, f))
                .collect(),
            heap: BinaryHeap::new(),
            key,
            line: String::new(),
        };
        for run in 0..merge.readers.len() {
            merge.refill(run)?;
        }
        Ok(Sorted::Merged(merge))
    }
}

/// The entries of a [`Spill`] in order.
pub enum Sorted<T, K, F> {
    /// It never spilled: sorted in memory.
    Held(std::vec::IntoIter<T>),
    Merged(Merge<T, K, F>),
}

impl<T: DeserializeOwned, K: Ord, F: Fn(&T) -> K> Iterator for Sorted<T, K, F> {
    type Item = anyhow::Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Sorted::Held(it) => it.next().map(Ok),
            Sorted::Merged(m) => m.next(),
        }
    }
}

/// A k-way merge of sorted runs: the heap holds each run's next entry, smallest key
/// first and, on equal keys, the earlier run first (it was pushed first).
pub struct Merge<T, K, F> {
    readers: Vec<BufReader<File>>,
    heap: BinaryHeap<Reverse<Head<K, T>>>,
    key: F,
    line: String,
}

/// A run's next entry, ordered by its key and then by its run.
struct Head<K, T> {
    key: K,
    run: usize,
    item: T,
}

impl<K: Ord, T> PartialEq for Head<K, T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl<K: Ord, T> Eq for Head<K, T> {}
impl<K: Ord, T> PartialOrd for Head<K, T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord, T> Ord for Head<K, T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.key, self.run).cmp(&(&other.key, other.run))
    }
}

impl<T: DeserializeOwned, K: Ord, F: Fn(&T) -> K> Merge<T, K, F> {
    /// Reads the next entry of `run` into the heap, if it has one.
    fn refill(&mut self, run: usize) -> anyhow::Result<()> {
        self.line.clear();
        if self.readers[run].read_line(&mut self.line)? == 0 {
            return Ok(());
        }
        let item: T = serde_json::from_str(self.line.trim_end())
            .context("a temporary sorted run could not be read back")?;
        self.heap.push(Reverse(Head {
            key: (self.key)(&item),
            run,
            item,
        }));
        Ok(())
    }

    fn next(&mut self) -> Option<anyhow::Result<T>> {
        let Reverse(head) = self.heap.pop()?;
        Some(self.refill(head.run).map(|()| head.item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes `items` with a limit, spilling as a reader does, and reads them back.
    fn through(items: &[(u32, u32)], limit: usize) -> (Vec<(u32, u32)>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spill::new(dir.path(), limit);
        for &i in items {
            s.push(i);
            if s.full() {
                s.spill(|t: &(u32, u32)| t.0).unwrap();
            }
        }
        let runs = s.runs();
        let out = s
            .sorted(|t: &(u32, u32)| t.0)
            .unwrap()
            .collect::<anyhow::Result<Vec<_>>>()
            .unwrap();
        (out, runs)
    }

    /// Whatever the limit, the entries come back as a stable sort by key gives them
    /// (the second field numbers the entries, so ties show their order), and past the
    /// limit they did go through files.
    #[test]
    fn spilled_runs_merge_into_the_stable_sorted_order() {
        // A scrambled sequence with many equal keys.
        let items: Vec<(u32, u32)> = (0..5_000u32).map(|i| ((i * 7_919) % 37, i)).collect();
        let mut want = items.clone();
        want.sort_by_key(|t| t.0);
        for limit in [50, 100, 4_999, 5_000, 100_000] {
            let (got, runs) = through(&items, limit);
            assert_eq!(got, want, "limit {limit}");
            assert_eq!(runs, 5_000 / limit, "limit {limit}");
        }
        assert_eq!(through(&[], 3), (Vec::new(), 0));
    }

    /// A key refined between spills (new names sort between old ones) still merges
    /// right, as long as it keeps the order of what was there.
    #[test]
    fn a_key_refined_between_spills_still_merges_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spill::new(dir.path(), 2);
        // Names numbered as first seen; the key is each name's place among those seen.
        let names = ["m", "c", "x", "a", "p"];
        let place = |seen: usize| {
            let mut sorted: Vec<&str> = names[..seen].to_vec();
            sorted.sort();
            move |t: &(u32, u32)| sorted.iter().position(|n| *n == names[t.0 as usize])
        };
        for (i, _) in names.iter().enumerate() {
            s.push((i as u32, i as u32));
            if s.full() {
                s.spill(place(i + 1)).unwrap();
            }
        }
        let got: Vec<&str> = s
            .sorted(place(names.len()))
            .unwrap()
            .map(|t| names[t.unwrap().0 as usize])
            .collect();
        assert_eq!(got, ["a", "c", "m", "p", "x"]);
    }
}
