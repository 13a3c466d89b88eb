//! The prompt-cache simulation (script field `prompt_cache`): input tokens counted from the
//! request itself, and cache reads and writes accounted the way each provider does it, so a test
//! or benchmark can see what a client's requests would cost.
//!
//! A request is read as a sequence of blocks in the order the provider caches them: tool
//! definitions, then the system prompt, then the messages' content blocks (Anthropic) or whole
//! messages (OpenAI). A block costs `ceil(len(canonical JSON) / chars_per_token)` tokens; a
//! prefix is identified by a hash of every block up to it (the model, `tool_choice` and
//! `thinking` mixed in before the messages, as changing them invalidates the message cache).
//!
//! - **Anthropic**: only prefixes ending at a block marked `cache_control` are written. A
//!   breakpoint reads the longest cached prefix ending at it or at one of the 19 blocks before
//!   it (the API's 20-block lookback). Tokens from the read point up to the last breakpoint are
//!   written (`cache_creation_input_tokens`); the rest is uncached `input_tokens`.
//! - **OpenAI** (automatic caching): every prefix of every request is cached; the longest prefix
//!   shared with an earlier request is read (`cached_tokens`).
//!
//! Prefixes shorter than `min_tokens` are neither read nor written.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::plan::Dialect;
use crate::script::PromptCacheSim;

/// The input side of a call's usage, as the simulated provider reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct InputUsage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// Tokens written to the cache.
    pub cache_creation_input_tokens: u64,
}

/// The cached prefixes of one server.
#[derive(Debug, Default)]
pub(crate) struct CacheSim {
    cached: HashSet<u64>,
}

/// One block of a request: its prefix hash, the tokens up to and including it, and whether it
/// carries a `cache_control` breakpoint.
struct Block {
    prefix: u64,
    tokens_through: u64,
    breakpoint: bool,
}

impl CacheSim {
    /// Forgets every cached prefix.
    pub(crate) fn clear(&mut self) {
        self.cached.clear();
    }

    /// Counts `body`'s input tokens and accounts its cache reads and writes.
    pub(crate) fn account(
        &mut self,
        dialect: Dialect,
        body: &Value,
        sim: &PromptCacheSim,
    ) -> InputUsage {
        let blocks = blocks(dialect, body, sim.chars_per_token.max(1));
        let total = blocks.last().map_or(0, |b| b.tokens_through);
        let usable = |b: &Block| b.tokens_through >= sim.min_tokens.max(1);
        match dialect {
            Dialect::Anthropic => {
                let mut read = 0;
                for (end, block) in blocks.iter().enumerate() {
                    if !block.breakpoint {
                        continue;
                    }
                    let hit = blocks[end.saturating_sub(19)..=end]
                        .iter()
                        .rev()
                        .find(|b| usable(b) && self.cached.contains(&b.prefix));
                    if let Some(hit) = hit {
                        read = read.max(hit.tokens_through);
                    }
                }
                let written_through = blocks
                    .iter()
                    .rev()
                    .find(|b| b.breakpoint && usable(b))
                    .map_or(0, |b| b.tokens_through);
                let written = written_through.saturating_sub(read);
                for block in blocks.iter().filter(|b| b.breakpoint && usable(b)) {
                    self.cached.insert(block.prefix);
                }
                InputUsage {
                    input_tokens: total - read - written,
                    cache_read_input_tokens: read,
                    cache_creation_input_tokens: written,
                }
            }
            // Gemini's implicit caching is prefix-based, like OpenAI's.
            Dialect::OpenAi | Dialect::Gemini | Dialect::Responses => {
                let read = blocks
                    .iter()
                    .rev()
                    .find(|b| usable(b) && self.cached.contains(&b.prefix))
                    .map_or(0, |b| b.tokens_through);
                self.cached.extend(blocks.iter().map(|b| b.prefix));
                InputUsage {
                    input_tokens: total - read,
                    cache_read_input_tokens: read,
                    cache_creation_input_tokens: 0,
                }
            }
        }
    }
}

/// The request as cacheable blocks, in cache order.
fn blocks(dialect: Dialect, body: &Value, chars_per_token: u64) -> Vec<Block> {
    let mut parts: Vec<(Value, bool)> = Vec::new();
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        parts.push(strip(tool));
    }
    match (dialect, body.get("system")) {
        (Dialect::Anthropic, Some(Value::Array(system))) => {
            parts.extend(system.iter().map(strip));
        }
        (Dialect::Anthropic, Some(system @ Value::String(_))) => {
            parts.push((system.clone(), false))
        }
        (Dialect::Gemini, _) => parts.extend(body.get("systemInstruction").map(strip)),
        _ => {}
    }
    if let (Dialect::Responses, Some(instructions)) = (dialect, body.get("instructions")) {
        parts.push((instructions.clone(), false));
    }
    // Changing these invalidates the cached messages (not the tools or system prompt).
    let settings = serde_json::json!([body.get("tool_choice"), body.get("thinking")]);
    let settings = match dialect {
        Dialect::Gemini => {
            serde_json::json!([body.get("toolConfig"), body.get("generationConfig")])
        }
        _ => settings,
    };
    let messages_key = match dialect {
        Dialect::Gemini => "contents",
        Dialect::Responses => "input",
        _ => "messages",
    };
    let messages_start = parts.len();
    for message in body
        .get(messages_key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").cloned().unwrap_or(Value::Null);
        match (dialect, message.get("content")) {
            (Dialect::Anthropic, Some(Value::Array(content))) => {
                for block in content {
                    let (block, breakpoint) = strip(block);
                    parts.push((serde_json::json!([role, block]), breakpoint));
                }
            }
            _ => parts.push(strip(message)),
        }
    }

    let mut hasher = DefaultHasher::new();
    body.get("model").and_then(Value::as_str).hash(&mut hasher);
    let mut tokens = 0;
    let mut out = Vec::with_capacity(parts.len());
    for (index, (part, breakpoint)) in parts.into_iter().enumerate() {
        if index == messages_start {
            settings.to_string().hash(&mut hasher);
        }
        let text = part.to_string();
        text.hash(&mut hasher);
        tokens += (text.len() as u64).div_ceil(chars_per_token);
        out.push(Block {
            prefix: hasher.finish(),
            tokens_through: tokens,
            breakpoint,
        });
    }
    out
}

/// The block without its `cache_control`, and whether it had one.
fn strip(block: &Value) -> (Value, bool) {
    let mut block = block.clone();
    let marked = block
        .as_object_mut()
        .and_then(|b| b.remove("cache_control"))
        .is_some();
    (block, marked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sim() -> PromptCacheSim {
        PromptCacheSim {
            chars_per_token: 1,
            min_tokens: 0,
        }
    }

    fn anthropic(messages: Value) -> Value {
        json!({"model": "m", "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}], "messages": messages})
    }

    #[test]
    fn anthropic_reads_what_an_earlier_breakpoint_wrote() {
        let mut cache = CacheSim::default();
        let first = anthropic(json!([
            {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]}
        ]));
        let one = cache.account(Dialect::Anthropic, &first, &sim());
        assert_eq!(one.cache_read_input_tokens, 0);
        assert!(one.cache_creation_input_tokens > 0);
        assert_eq!(
            one.input_tokens, 0,
            "everything is up to the last breakpoint"
        );
        let second = anthropic(json!([
            {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}]}
        ]));
        let two = cache.account(Dialect::Anthropic, &second, &sim());
        let total = one.cache_creation_input_tokens;
        assert_eq!(two.cache_read_input_tokens, total);
        assert!(two.cache_creation_input_tokens > 0);
    }

    #[test]
    fn anthropic_without_breakpoints_is_all_input() {
        let mut cache = CacheSim::default();
        let body = json!({"model": "m", "system": "sys", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hello"}]}
        ]});
        for _ in 0..2 {
            let usage = cache.account(Dialect::Anthropic, &body, &sim());
            assert_eq!(
                usage.cache_read_input_tokens + usage.cache_creation_input_tokens,
                0
            );
            assert!(usage.input_tokens > 0);
        }
    }

    #[test]
    fn openai_reads_the_longest_shared_prefix() {
        let mut cache = CacheSim::default();
        let first = json!({"model": "m", "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "a"}]});
        assert_eq!(
            cache
                .account(Dialect::OpenAi, &first, &sim())
                .cache_read_input_tokens,
            0
        );
        let second = json!({"model": "m", "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]});
        let usage = cache.account(Dialect::OpenAi, &second, &sim());
        let first_total = cache_total(&first);
        assert_eq!(usage.cache_read_input_tokens, first_total);
        // A changed first message shares nothing.
        let third = json!({"model": "m", "messages": [{"role": "system", "content": "other"}]});
        assert_eq!(
            cache
                .account(Dialect::OpenAi, &third, &sim())
                .cache_read_input_tokens,
            0
        );
    }

    fn cache_total(body: &Value) -> u64 {
        blocks(Dialect::OpenAi, body, 1)
            .last()
            .map_or(0, |b| b.tokens_through)
    }
}
