//! A small BM25 ranker (k1 = 1.2, b = 0.75) over short documents, with an English
//! stop-word list and crude plural stripping: what the tool-search and retrieval
//! strategies rank tools with, and the lexical model ranks what it sees with.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::hash::{FastMap, FastSet};

const K1: f64 = 1.2;
const B: f64 = 0.75;

const STOP: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but",
    "by", "can", "could", "do", "does", "did", "for", "from", "get", "give", "had", "has", "have",
    "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just",
    "let", "like", "me", "my", "need", "no", "not", "now", "of", "on", "one", "or", "our",
    "please", "s", "she", "show", "so", "some", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "up", "us", "use", "was", "we", "were", "what", "when",
    "where", "which", "who", "why", "will", "with", "would", "you", "your", "want", "tell",
    "thanks", "thank", "hi", "hello", "ok", "okay", "great", "t", "d", "ll", "re", "ve", "m",
];

/// Whether a lower-cased word is a stop word.
fn is_stop(w: &str) -> bool {
    static SET: std::sync::OnceLock<FastSet<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOP.iter().copied().collect())
        .contains(w)
}

/// Lower-cased words without stop words, plural `s` stripped from longer words.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .filter(|w| !is_stop(w))
        .map(|w| {
            if w.len() > 4 && w.ends_with('s') && !w.ends_with("ss") {
                w[..w.len() - 1].to_string()
            } else {
                w
            }
        })
        .collect()
}

/// BM25 scores of each document for the query, in document order.
pub fn scores(query: &str, docs: &[String]) -> Vec<f64> {
    Index::cached(docs).scores(query)
}

/// Indexes a thread keeps, by the documents they index, before it starts afresh.
const MEMO: usize = 256;

/// Documents the indexes a thread keeps may hold together before it starts afresh: a
/// sweep's tool lists hold up to ten thousand documents each, and an index ranked
/// often holds its inverted index beside them.
const MEMO_DOCS: usize = 40_000;

/// A document's term counts and its length in terms.
type Terms = (Arc<FastMap<Arc<str>, u32>>, usize);

/// Per term: the documents holding it, in document order, each with the term's count
/// there.
type Postings = FastMap<Arc<str>, Vec<(u32, u32)>>;

/// Documents a thread keeps tokenized before it starts afresh.
const DOC_MEMO: usize = 20_000;

/// A document's term counts and length, from this thread's memo when it was
/// tokenized before (the same tool descriptions are ranked on every turn).
fn terms_of(doc: &str) -> Terms {
    DOCS.with(|m| {
        let mut m = m.borrow_mut();
        if let Some(hit) = m.get(doc) {
            return hit.clone();
        }
        let words = tokenize(doc);
        let len = words.len();
        let mut tf: FastMap<Arc<str>, u32> = FastMap::default();
        for w in words {
            match tf.get_mut(w.as_str()) {
                Some(n) => *n += 1,
                None => {
                    tf.insert(w.into(), 1);
                }
            }
        }
        if m.len() >= DOC_MEMO {
            m.clear();
        }
        let v = (Arc::new(tf), len);
        m.insert(doc.to_string(), v.clone());
        v
    })
}

/// A thread's indexes, by a hash of their documents.
type Indexes = FastMap<[u8; 32], std::rc::Rc<Index>>;

thread_local! {
    static DOCS: std::cell::RefCell<FastMap<String, Terms>> =
        std::cell::RefCell::new(FastMap::default());
    /// The lexical model ranks the same visible tools on many turns of many episodes:
    /// their index is built once per thread, not once per turn. Kept with the number
    /// of documents the indexes hold together.
    static INDEXES: std::cell::RefCell<(Indexes, usize)> =
        std::cell::RefCell::new((FastMap::default(), 0));
}

/// Documents tokenized once, to be ranked against many queries (the search tool's
/// pool is searched on every call; the lexical model ranks a tool list on every turn
/// it is shown).
///
/// The first queries scan every document's term counts; once the scans have looked
/// up as many terms as the documents hold, an inverted index (made then, once) visits
/// only the documents that hold a query term, so an index never costs more than
/// twice the better of the two ways. Most of the lexical model's indexes are ranked
/// once or twice, where the inverted index cost three times what it saved; the
/// pool's and a recurring tool list's are ranked many times. Both ways give the same
/// bits.
pub struct Index {
    /// Per document: term → count.
    docs: Vec<Arc<FastMap<Arc<str>, u32>>>,
    lens: Vec<usize>,
    avg: f64,
    /// Terms the documents hold, counted once per document: what making the inverted
    /// index costs.
    held: usize,
    /// Term lookups the scans have made so far.
    scanned: AtomicUsize,
    postings: OnceLock<Postings>,
}

impl Index {
    /// The index of `docs`, from this thread's memo when it was built before (the
    /// documents are compared by a hash of their whole text).
    pub fn cached(docs: &[String]) -> std::rc::Rc<Index> {
        let mut h = blake3::Hasher::new();
        for d in docs {
            h.update(&(d.len() as u64).to_le_bytes());
            h.update(d.as_bytes());
        }
        let key = *h.finalize().as_bytes();
        INDEXES.with(|m| {
            let (m, held) = &mut *m.borrow_mut();
            if let Some(i) = m.get(&key) {
                return i.clone();
            }
            if m.len() >= MEMO || *held + docs.len() > MEMO_DOCS {
                m.clear();
                *held = 0;
            }
            let i = std::rc::Rc::new(Index::new(docs));
            m.insert(key, i.clone());
            *held += docs.len();
            i
        })
    }

    pub fn new(docs: &[String]) -> Index {
        let mut out = Vec::with_capacity(docs.len());
        let mut lens = Vec::with_capacity(docs.len());
        for d in docs {
            let (tf, len) = terms_of(d);
            lens.push(len);
            out.push(tf);
        }
        let avg = if docs.is_empty() {
            0.0
        } else {
            lens.iter().sum::<usize>() as f64 / docs.len() as f64
        };
        let held = out.iter().map(|d| d.len()).sum();
        Index {
            docs: out,
            lens,
            avg,
            held,
            scanned: AtomicUsize::new(0),
            postings: OnceLock::new(),
        }
    }

    fn postings(&self) -> &Postings {
        self.postings.get_or_init(|| {
            let mut p: Postings = FastMap::default();
            for (i, d) in self.docs.iter().enumerate() {
                let i = u32::try_from(i).expect("fewer than 2^32 documents");
                for (w, n) in d.iter() {
                    match p.get_mut(&**w) {
                        Some(list) => list.push((i, *n)),
                        None => {
                            p.insert(w.clone(), vec![(i, *n)]);
                        }
                    }
                }
            }
            p
        })
    }

    /// How many documents hold `term` (a tokenized word), from the inverted index.
    pub fn df(&self, term: &str) -> usize {
        self.postings().get(term).map_or(0, Vec::len)
    }

    /// The distinct terms of document `doc`, in no order.
    pub fn terms(&self, doc: usize) -> impl Iterator<Item = &str> {
        self.docs[doc].keys().map(|w| &**w)
    }

    /// [`Index::df`] by a scan of the documents, where the inverted index is not made.
    fn df_scanned(&self, term: &str) -> usize {
        match self.postings.get() {
            Some(p) => p.get(term).map_or(0, Vec::len),
            None => self.docs.iter().filter(|d| d.contains_key(term)).count(),
        }
    }

    /// One term's share of a document's score.
    fn share(&self, idf: f64, tf: u32, len: usize) -> f64 {
        let tf = tf as f64;
        let len = len as f64;
        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / self.avg.max(1.0)))
    }

    /// BM25 scores of each document for the query, in document order.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let mut q = tokenize(query);
        q.sort();
        q.dedup();
        let inverted = self.postings.get().is_some()
            || self
                .scanned
                .fetch_add(self.docs.len() * q.len(), Ordering::Relaxed)
                >= self.held;
        if inverted {
            self.scores_inverted(&q)
        } else {
            self.scores_scanned(&q)
        }
    }

    /// Every document against every query term.
    fn scores_scanned(&self, q: &[String]) -> Vec<f64> {
        let n = self.docs.len() as f64;
        let idf: Vec<f64> = q
            .iter()
            .map(|term| {
                let nq = self.df_scanned(term) as f64;
                ((n - nq + 0.5) / (nq + 0.5) + 1.0).ln()
            })
            .collect();
        self.docs
            .iter()
            .zip(&self.lens)
            .map(|(d, &len)| {
                q.iter()
                    .zip(&idf)
                    .map(|(term, &idf)| match d.get(term.as_str()) {
                        Some(&tf) => self.share(idf, tf, len),
                        None => 0.0,
                    })
                    .sum()
            })
            .collect()
    }

    /// Each query term's documents alone. A document's score adds its terms' shares in
    /// the query's sorted term order, as the scan does (a term a document lacks adds
    /// an exact zero there): the same bits.
    fn scores_inverted(&self, q: &[String]) -> Vec<f64> {
        let postings = self.postings();
        let n = self.docs.len() as f64;
        // An empty sum is what `Iterator::sum` starts from; any term makes it +0.0.
        let start = if q.is_empty() {
            std::iter::empty::<f64>().sum()
        } else {
            0.0
        };
        let mut out = vec![start; self.docs.len()];
        for term in q {
            let Some(list) = postings.get(term.as_str()) else {
                continue;
            };
            let nq = list.len() as f64;
            let idf = ((n - nq + 0.5) / (nq + 0.5) + 1.0).ln();
            for &(d, tf) in list {
                let d = d as usize;
                out[d] += self.share(idf, tf, self.lens[d]);
            }
        }
        out
    }
}

/// Index of the best-scoring document, earliest on ties; `None` if all score 0.
pub fn best(query: &str, docs: &[String]) -> Option<(usize, f64)> {
    let s = scores(query, docs);
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in s.into_iter().enumerate() {
        if v > 0.0 && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_the_matching_document_first() {
        let docs = vec![
            "create a jira issue".to_string(),
            "send an email message".to_string(),
        ];
        assert_eq!(best("please email the report", &docs).unwrap().0, 1);
        assert_eq!(best("thanks, that's all", &docs), None);
    }

    #[test]
    fn the_memo_tells_documents_apart() {
        let a = vec!["ab".to_string(), "c".to_string()];
        let b = vec!["a".to_string(), "bc".to_string()];
        assert_eq!(scores("ab", &a), Index::new(&a).scores("ab"));
        assert_eq!(scores("ab", &b), Index::new(&b).scores("ab"));
        assert_ne!(scores("ab", &a), scores("ab", &b));
        assert!(std::rc::Rc::ptr_eq(&Index::cached(&a), &Index::cached(&a)));
    }

    /// BM25 with every term's document count tabled up front, as the index did
    /// before it counted per query: the scores must agree to the bit.
    #[test]
    fn scores_agree_with_a_table_of_every_terms_count() {
        let docs: Vec<String> = [
            "create a jira issue in a project",
            "send an email message to a list of recipients",
            "search issues by project and status; issues issues",
            "",
            "list the projects of a workspace and their issues",
            "read an email thread, reply to the email",
        ]
        .map(String::from)
        .to_vec();
        let toks: Vec<Vec<String>> = docs.iter().map(|d| tokenize(d)).collect();
        let mut df: std::collections::HashMap<&str, usize> = Default::default();
        for t in &toks {
            let distinct: std::collections::BTreeSet<&str> = t.iter().map(String::as_str).collect();
            for w in distinct {
                *df.entry(w).or_default() += 1;
            }
        }
        let avg = toks.iter().map(Vec::len).sum::<usize>() as f64 / docs.len() as f64;
        let n = docs.len() as f64;
        for query in [
            "email the project issues",
            "jira",
            "nothing matches",
            "issues issues list",
            "thanks, that's all",
        ] {
            let mut q = tokenize(query);
            q.sort();
            q.dedup();
            let want: Vec<f64> = toks
                .iter()
                .map(|t| {
                    let len = t.len() as f64;
                    q.iter()
                        .map(|w| {
                            let tf = t.iter().filter(|x| *x == w).count() as f64;
                            if tf == 0.0 {
                                return 0.0;
                            }
                            let nq = df.get(w.as_str()).copied().unwrap_or(0) as f64;
                            let idf = ((n - nq + 0.5) / (nq + 0.5) + 1.0).ln();
                            idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg.max(1.0)))
                        })
                        .sum()
                })
                .collect();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            // The first queries scan; once they have looked up as many terms as the
            // documents hold, the inverted index answers.
            let index = Index::new(&docs);
            assert_eq!(bits(&index.scores(query)), bits(&want), "{query}: scanned");
            assert!(index.postings.get().is_none());
            for _ in 0..index.held {
                index.scores("email issues project");
            }
            assert!(index.postings.get().is_some());
            assert_eq!(bits(&index.scores(query)), bits(&want), "{query}: inverted");
        }
        // A term's document count by a scan, then from the inverted index it makes.
        let index = Index::new(&docs);
        assert_eq!(index.df_scanned("issue"), 3);
        assert!(index.postings.get().is_none());
        assert_eq!(index.df("issue"), 3);
        assert!(index.postings.get().is_some());
        assert_eq!(index.df_scanned("issue"), 3);
        assert_eq!(index.df("nowhere"), 0);
    }
}
