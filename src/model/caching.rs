//! Provider prompt caching: whether requests ask for it, for how long, and what cache
//! reads and writes cost.
//!
//! Anthropic caches only where a request carries `cache_control` breakpoints; discbench
//! puts them on the last tool definition, the system prompt and the newest message
//! (three of the four a request may carry), so that each request reads what the one
//! before it wrote. OpenAI caches automatically; the Responses backend sends a
//! `prompt_cache_key` per conversation. Both report what they read (and Anthropic and
//! newer OpenAI models what they wrote) in their usage.
//!
//! The settings ([`PromptCache`], [`Ttl`]) are recorded in `run.json`, so they live with
//! the record; prices are completed here from the published multipliers.

pub use crate::record::manifest::{PromptCache, Ttl, READ, WRITE_1H, WRITE_5M};

use super::prices::Prices;

/// `prices` with cache reads and writes priced where the entry did not price them:
/// reads at `cache`'s read multiplier, writes at its TTL's write multiplier.
pub fn complete(cache: &PromptCache, prices: Prices) -> Prices {
    Prices {
        cached_input: prices
            .cached_input
            .or(Some(prices.input * cache.read_multiplier)),
        cache_write: prices
            .cache_write
            .or(Some(prices.input * cache.write_multiplier)),
        ..prices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_are_completed_from_the_published_multipliers() {
        let p = Prices {
            input: 3.0,
            output: 15.0,
            cached_input: None,
            cache_write: None,
            above: None,
        };
        let five = complete(&PromptCache::new(true, Ttl::FiveMinutes), p);
        assert_eq!(five.cached_input, Some(3.0 * 0.1));
        assert_eq!(five.cache_write, Some(3.75));
        let hour = complete(&PromptCache::new(true, Ttl::OneHour), p);
        assert_eq!(hour.cache_write, Some(6.0));
        // An entry's own prices win.
        let own = complete(
            &PromptCache::default(),
            Prices {
                cached_input: Some(0.5),
                cache_write: Some(4.0),
                ..p
            },
        );
        assert_eq!((own.cached_input, own.cache_write), (Some(0.5), Some(4.0)));
        assert_eq!(Ttl::parse("1h"), Ok(Ttl::OneHour));
        assert!(Ttl::parse("2h").is_err());
    }
}
