//! Search and retrieval: the catalog held back in a pool ([`super::pool`]) and
//! surfaced by a search the model runs (`tool-search`: discbench's BM25 or regex search
//! answered with references, or Anthropic's and OpenAI's tool search as the providers
//! ship them) or by a retriever before the model is asked (`retrieval`: RAG-MCP's
//! pre-selection of the top k tools for the query).

pub mod retrieval;
pub mod tool_search;
