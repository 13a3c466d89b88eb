//! The OpenAI Responses API wire format (`POST /v1/responses`, `stream: true`): the semantic
//! events for a turn (`response.created`, output items with their deltas, `response.completed` /
//! `response.incomplete`), in-stream `error` and `response.failed` events, HTTP error bodies, and
//! the checks the real API makes on a request's `input` items.
//!
//! Thinking is sent as a reasoning item with a summary and an `encrypted_content` derived from
//! the item's id; a later request that sends the item back (stateless reasoning, `store: false`)
//! must carry that same `encrypted_content`, or it is refused as the real API refuses it.
//!
//! The same events serve DashScope's OpenAI-compatible Responses API (Alibaba Cloud Model
//! Studio, "OpenAI Responses API reference") at [`DASHSCOPE_PATH`], where the request is also
//! checked for what DashScope does not support (`instructions`, `background`: ignored there, so
//! a client sending them loses what they say) and for its built-in tools (`web_extractor` only
//! with `web_search`), and usage carries the hosted tools' call counts
//! (`usage.x_tools.{web_search,web_extractor}.count`).

use serde_json::{json, Value};

use crate::plan::{openai_finish_reason, padded, to_json, Ctx};
use crate::script::{Turn, Usage};
use crate::sse::Event;

/// DashScope's Responses endpoint (the path under `dashscope-intl.aliyuncs.com`).
pub(crate) const DASHSCOPE_PATH: &str = "/api/v2/apps/protocols/compatible-mode/v1/responses";

/// The `encrypted_content` mock-llm issues for the reasoning item `id`.
pub(crate) fn encrypted_content(id: &str) -> String {
    format!("gAAAAA_mock_{id}")
}

/// An event: the SSE `event:` name equals the payload's `type`, as the API sends it.
fn event(kind: &'static str, mut payload: Value) -> Event {
    if let Some(object) = payload.as_object_mut() {
        let mut ordered = serde_json::Map::new();
        ordered.insert("type".into(), Value::from(kind));
        ordered.append(object);
        payload = Value::Object(ordered);
    }
    Event::named(kind, to_json(&payload))
}

fn usage_json(u: &Usage, reasoning_tokens: u64, x_tools: Option<Value>) -> Value {
    // Like Chat Completions, `input_tokens` includes the cached ones.
    let input = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    let mut usage = json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input + u.output_tokens,
    });
    if let (Some(x_tools), Some(usage)) = (x_tools, usage.as_object_mut()) {
        usage.insert("x_tools".into(), x_tools);
    }
    usage
}

/// The hosted tool whose call an item type is: `web_search_call` → `web_search`.
fn hosted_tool(item: &Value) -> &str {
    item.get("type")
        .and_then(Value::as_str)
        .and_then(|kind| kind.strip_suffix("_call"))
        .unwrap_or_default()
}

/// The types of the hosted (non-function) tools a Responses request declares.
pub(crate) fn hosted_tools(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool.get("type").and_then(Value::as_str))
                .filter(|kind| *kind != "function")
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Checks a request to [`DASHSCOPE_PATH`] for what DashScope does not take (see the module
/// docs).
pub(crate) fn check_dashscope(body: &Value) -> Result<(), String> {
    for field in ["instructions", "background"] {
        if body.get(field).is_some() {
            return Err(format!(
                "`{field}` is not supported by the DashScope Responses API (it is ignored \
                 there); send the system prompt as a system message in `input`"
            ));
        }
    }
    let tools = hosted_tools(body);
    if tools.iter().any(|t| t == "web_extractor") && !tools.iter().any(|t| t == "web_search") {
        return Err(
            "the web_extractor tool needs the web_search tool: add {\"type\": \"web_search\"} to \
             `tools`"
                .into(),
        );
    }
    Ok(())
}

/// The item as `response.output_item.added` shows it: the call started, no results yet.
fn started(item: &Value) -> Value {
    let mut item = item.clone();
    if let Some(fields) = item.as_object_mut() {
        fields.remove("output");
        if let Some(Value::Object(action)) = fields.get_mut("action") {
            action.remove("sources");
        }
        fields.insert("status".into(), json!("in_progress"));
    }
    item
}

/// The response object in `response.*` lifecycle events.
fn response_object(ctx: &Ctx<'_>, status: &str, output: Vec<Value>, extra: Value) -> Value {
    let mut response = json!({
        "id": format!("resp_mock_{}", ctx.seq),
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": true,
        "store": false,
        "usage": null,
    });
    if let (Some(target), Value::Object(extra)) = (response.as_object_mut(), extra) {
        target.extend(extra);
    }
    response
}

/// How the turn ends: `(status, incomplete reason)`.
fn outcome(turn: &Turn) -> (&'static str, Option<&'static str>) {
    match openai_finish_reason(turn).as_str() {
        "length" => ("incomplete", Some("max_output_tokens")),
        "content_filter" => ("incomplete", Some("content_filter")),
        _ => ("completed", None),
    }
}

/// The full event sequence for `turn`; `include_terminal: false` drops the closing
/// `response.completed` / `response.incomplete`.
pub(crate) fn events(turn: &Turn, ctx: &Ctx<'_>, include_terminal: bool) -> Vec<Event> {
    let mut out = vec![
        event(
            "response.created",
            json!({"response": response_object(ctx, "in_progress", Vec::new(), json!({}))}),
        ),
        event(
            "response.in_progress",
            json!({"response": response_object(ctx, "in_progress", Vec::new(), json!({}))}),
        ),
    ];
    let mut output: Vec<Value> = Vec::new();
    let mut reasoning_tokens = 0;

    if let Some(thinking) = &turn.thinking {
        let index = output.len();
        let id = format!("rs_mock_{}_{}", ctx.seq, index);
        let summary = thinking.joined();
        out.push(event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
        ));
        out.push(event(
            "response.reasoning_summary_part.added",
            json!({"item_id": id, "output_index": index, "summary_index": 0,
                   "part": {"type": "summary_text", "text": ""}}),
        ));
        for piece in thinking.pieces() {
            reasoning_tokens += 1;
            out.push(event(
                "response.reasoning_summary_text.delta",
                json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": piece}),
            ));
        }
        out.push(event(
            "response.reasoning_summary_text.done",
            json!({"item_id": id, "output_index": index, "summary_index": 0, "text": summary}),
        ));
        out.push(event(
            "response.reasoning_summary_part.done",
            json!({"item_id": id, "output_index": index, "summary_index": 0,
                   "part": {"type": "summary_text", "text": summary}}),
        ));
        let item = json!({
            "id": id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": encrypted_content(&id),
        });
        out.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        output.push(item);
    }

    // Hosted-tool calls: only of tools the request declares.
    let mut calls_per_tool: Vec<(String, u64)> = Vec::new();
    for (n, scripted) in turn.hosted_items.iter().enumerate() {
        let tool = hosted_tool(scripted);
        if !ctx.hosted_tools.iter().any(|declared| declared == tool) {
            continue;
        }
        match calls_per_tool.iter_mut().find(|(name, _)| name == tool) {
            Some((_, count)) => *count += 1,
            None => calls_per_tool.push((tool.to_owned(), 1)),
        }
        let index = output.len();
        let mut item = scripted.clone();
        if let Some(fields) = item.as_object_mut() {
            if !fields.contains_key("id") {
                fields.insert("id".into(), json!(format!("{tool}_mock_{}_{n}", ctx.seq)));
            }
            fields.entry("status").or_insert_with(|| json!("completed"));
        }
        out.push(event(
            "response.output_item.added",
            json!({"output_index": index, "item": started(&item)}),
        ));
        out.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        output.push(item);
    }

    if turn.text.is_some() || turn.refusal.is_some() {
        let index = output.len();
        let id = format!("msg_mock_{}", ctx.seq);
        out.push(event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "message",
                   "status": "in_progress", "role": "assistant", "content": []}}),
        ));
        let mut content = Vec::new();
        if let Some(text) = &turn.text {
            let part = content.len();
            out.push(event(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": part,
                       "part": {"type": "output_text", "text": "", "annotations": []}}),
            ));
            for piece in text.pieces() {
                out.push(event(
                    "response.output_text.delta",
                    json!({"item_id": id, "output_index": index, "content_index": part,
                           "delta": piece, "logprobs": []}),
                ));
            }
            let full = json!({"type": "output_text", "text": text.joined(), "annotations": []});
            out.push(event(
                "response.output_text.done",
                json!({"item_id": id, "output_index": index, "content_index": part,
                       "text": text.joined(), "logprobs": []}),
            ));
            out.push(event(
                "response.content_part.done",
                json!({"item_id": id, "output_index": index, "content_index": part, "part": full}),
            ));
            content.push(full);
        }
        if let Some(refusal) = &turn.refusal {
            let part = content.len();
            out.push(event(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": part,
                       "part": {"type": "refusal", "refusal": ""}}),
            ));
            for piece in refusal.pieces() {
                out.push(event(
                    "response.refusal.delta",
                    json!({"item_id": id, "output_index": index, "content_index": part,
                           "delta": piece}),
                ));
            }
            let full = json!({"type": "refusal", "refusal": refusal.joined()});
            out.push(event(
                "response.refusal.done",
                json!({"item_id": id, "output_index": index, "content_index": part,
                       "refusal": refusal.joined()}),
            ));
            out.push(event(
                "response.content_part.done",
                json!({"item_id": id, "output_index": index, "content_index": part, "part": full}),
            ));
            content.push(full);
        }
        let item = json!({"id": id, "type": "message", "status": "completed",
                          "role": "assistant", "content": content});
        out.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        output.push(item);
    }

    for (n, call) in turn.tool_calls.iter().enumerate() {
        let index = output.len();
        let id = format!("fc_mock_{}_{n}", ctx.seq);
        let default_call_id = format!("call_mock_{}_{n}", ctx.turn_index);
        let call_id = call.id.as_deref().unwrap_or(&default_call_id);
        out.push(event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "function_call",
                   "status": "in_progress", "arguments": "", "call_id": call_id,
                   "name": call.name}}),
        ));
        let pieces = call.argument_pieces();
        for piece in &pieces {
            out.push(event(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": piece}),
            ));
        }
        let arguments = pieces.concat();
        out.push(event(
            "response.function_call_arguments.done",
            json!({"item_id": id, "output_index": index, "arguments": arguments}),
        ));
        let item = json!({"id": id, "type": "function_call", "status": "completed",
                          "arguments": arguments, "call_id": call_id, "name": call.name});
        out.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        output.push(item);
    }

    if include_terminal {
        let (status, reason) = outcome(turn);
        let x_tools = ctx.dashscope.then(|| {
            let counts: serde_json::Map<String, Value> = calls_per_tool
                .iter()
                .map(|(tool, count)| (tool.clone(), json!({ "count": count })))
                .collect();
            Value::Object(counts)
        });
        let extra = json!({
            "usage": usage_json(&ctx.usage(turn), reasoning_tokens, x_tools),
            "incomplete_details": reason.map(|reason| json!({"reason": reason})),
        });
        let response = response_object(ctx, status, output, extra);
        let kind = if status == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        out.push(event(kind, json!({ "response": response })));
    }
    number(out)
}

/// Gives every event its `sequence_number`, in order.
fn number(events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .enumerate()
        .map(|(n, mut e)| {
            if let Ok(Value::Object(mut payload)) = serde_json::from_str::<Value>(&e.data) {
                payload.insert("sequence_number".into(), Value::from(n));
                e.data = to_json(&payload);
            }
            e
        })
        .collect()
}

/// An event whose JSON is cut off mid-string.
pub(crate) fn malformed() -> Event {
    Event::named(
        "response.output_text.delta",
        r#"{"type":"response.output_text.delta","item_id":"msg_mock","output_index":0,"delta":"cut of"#
            .to_owned(),
    )
}

/// A `response.in_progress` event whose data payload is exactly `bytes` long (or minimal).
pub(crate) fn oversized(ctx: &Ctx<'_>, bytes: usize) -> Event {
    let data = padded(bytes, |padding| {
        let response = response_object(
            ctx,
            "in_progress",
            Vec::new(),
            json!({"metadata": {"padding": padding}}),
        );
        to_json(&json!({"type": "response.in_progress", "response": response}))
    });
    Event::named("response.in_progress", data)
}

/// The in-stream failure: an `error` event (`{"type": "error", "code", "message", "param"}`), or
/// with `failed`, a `response.failed` event whose response carries `error: {code, message}`.
pub(crate) fn stream_error(
    ctx: &Ctx<'_>,
    error_type: Option<&str>,
    message: Option<&str>,
    failed: bool,
) -> Event {
    let code = error_type.unwrap_or("server_error");
    let message = message.unwrap_or("Overloaded");
    if failed {
        let response = response_object(
            ctx,
            "failed",
            Vec::new(),
            json!({"error": {"code": code, "message": message}}),
        );
        event("response.failed", json!({ "response": response }))
    } else {
        event(
            "error",
            json!({"code": code, "message": message, "param": null}),
        )
    }
}

/// Checks the `input` of a request as the real API does: function calls and their outputs pair
/// up by `call_id`, and a reasoning item sent back without storage carries the encrypted content
/// it was issued with.
pub(crate) fn check_input(input: &[Value], store: bool) -> Result<(), String> {
    let kind = |item: &Value| {
        item.get("type")
            .and_then(Value::as_str)
            .unwrap_or("message")
            .to_owned()
    };
    let field = |item: &Value, key: &str| {
        item.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut calls: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    for (i, item) in input.iter().enumerate() {
        match kind(item).as_str() {
            "function_call" => {
                let call_id = field(item, "call_id");
                if calls.contains(&call_id) {
                    return Err(format!(
                        "input[{i}]: Duplicate function call with call_id {call_id}."
                    ));
                }
                calls.push(call_id);
            }
            "function_call_output" => {
                let call_id = field(item, "call_id");
                if !calls.contains(&call_id) {
                    return Err(format!(
                        "No tool call found for function call output with call_id {call_id}."
                    ));
                }
                answered.push(call_id);
            }
            "reasoning" => {
                let id = field(item, "id");
                match item.get("encrypted_content").and_then(Value::as_str) {
                    None if !store => {
                        return Err(format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` \
                             is set to false. Try again with `store` set to true, or remove this \
                             item from your input."
                        ))
                    }
                    Some(content)
                        if id.starts_with("rs_mock_") && content != encrypted_content(&id) =>
                    {
                        return Err(format!(
                            "The encrypted content for item {id} could not be verified."
                        ))
                    }
                    _ => {}
                }
                if !item.get("summary").is_some_and(Value::is_array) {
                    return Err(format!("input[{i}].summary: Missing required parameter."));
                }
            }
            _ => {}
        }
    }
    if let Some(missing) = calls.iter().find(|id| !answered.contains(id)) {
        return Err(format!("No tool output found for function call {missing}."));
    }
    Ok(())
}
