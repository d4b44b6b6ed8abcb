//! A small BM25 ranker (k1 = 1.2, b = 0.75) over short documents, with an English
//! stop-word list and crude plural stripping: what the tool-search and retrieval
//! strategies rank tools with, and the lexical model ranks what it sees with.

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

/// A document's term counts and its length in terms.
type Terms = (std::sync::Arc<FastMap<String, usize>>, usize);

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
        let mut tf: FastMap<String, usize> = FastMap::default();
        for w in words {
            *tf.entry(w).or_default() += 1;
        }
        if m.len() >= DOC_MEMO {
            m.clear();
        }
        let v = (std::sync::Arc::new(tf), len);
        m.insert(doc.to_string(), v.clone());
        v
    })
}

thread_local! {
    static DOCS: std::cell::RefCell<FastMap<String, Terms>> =
        std::cell::RefCell::new(FastMap::default());
    /// The lexical model ranks the same visible tools on many turns of many episodes:
    /// their index is built once per thread, not once per turn.
    static INDEXES: std::cell::RefCell<FastMap<[u8; 32], std::rc::Rc<Index>>> =
        std::cell::RefCell::new(FastMap::default());
}

/// Documents tokenized once, to be ranked against many queries (the search tool's
/// pool is searched on every call). How many documents hold a term is counted per
/// query, for the query's terms only: a scan as long as the scoring's own, where a
/// table of every term's count cost more to build than most indexes are searched
/// (the lexical model ranks each new tool list once).
pub struct Index {
    /// Per document: term → count.
    docs: Vec<std::sync::Arc<FastMap<String, usize>>>,
    lens: Vec<usize>,
    avg: f64,
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
            let mut m = m.borrow_mut();
            if let Some(i) = m.get(&key) {
                return i.clone();
            }
            if m.len() >= MEMO {
                m.clear();
            }
            let i = std::rc::Rc::new(Index::new(docs));
            m.insert(key, i.clone());
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
        Index {
            docs: out,
            lens,
            avg,
        }
    }

    /// How many documents hold `term` (a tokenized word).
    pub fn df(&self, term: &str) -> usize {
        self.docs.iter().filter(|d| d.contains_key(term)).count()
    }

    /// BM25 scores of each document for the query, in document order.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let n = self.docs.len() as f64;
        let mut q = tokenize(query);
        q.sort();
        q.dedup();
        let df: Vec<f64> = q.iter().map(|term| self.df(term) as f64).collect();
        self.docs
            .iter()
            .zip(&self.lens)
            .map(|(d, &len)| {
                let len = len as f64;
                q.iter()
                    .zip(&df)
                    .map(|(term, &nq)| {
                        let tf = d.get(term).copied().unwrap_or(0) as f64;
                        if tf == 0.0 {
                            return 0.0;
                        }
                        let idf = ((n - nq + 0.5) / (nq + 0.5) + 1.0).ln();
                        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / self.avg.max(1.0)))
                    })
                    .sum()
            })
            .collect()
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
            let got = Index::new(&docs).scores(query);
            assert_eq!(
                got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "{query}"
            );
        }
        assert_eq!(Index::new(&docs).df("issue"), 3);
    }
}
