//! Quickstart: one full tool-using turn, offline and deterministic.
//!
//! A scripted model (no network, no API key) asks for the weather in two cities. The engine runs
//! the read-only `get_weather` tool for both at once, feeds the results back, and the model
//! answers. Every event is printed as it arrives, then the outcome and the conversation.
//!
//!     cargo run -p robota-examples --example quickstart
//!
//! To talk to a real model, replace the `ScriptedProvider` with an Anthropic or OpenAI provider;
//! nothing else changes.

use std::sync::Arc;

use async_trait::async_trait;
use robota::engine::{Engine, EngineConfig, EngineEvent, RunOptions};
use robota::message::{ContentBlock, Conversation, Message};
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

/// A tool the model can call. This one only reads, so calls may run concurrently.
struct GetWeather;

#[async_trait]
impl Tool for GetWeather {
    fn name(&self) -> &str {
        "get_weather"
    }

    fn description(&self) -> &str {
        "Current weather for a city."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": { "city": { "type": "string" } },
            "required": ["city"]
        })
    }

    fn is_read_only(&self) -> bool {
        true
    }

    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        // Plain text for the model; errors say what to do differently.
        match input["city"].as_str() {
            Some("Paris") => ToolOutput::text("Paris: 18 °C, light rain"),
            Some("Lisbon") => ToolOutput::text("Lisbon: 24 °C, sunny"),
            Some(city) => {
                ToolOutput::error(format!("No weather data for {city}; try Paris or Lisbon."))
            }
            None => ToolOutput::error("Missing \"city\": pass the city name as a string."),
        }
    }
}

#[tokio::main]
async fn main() {
    // The model's side of the conversation, one entry per model call.
    let model = ScriptedProvider::new(vec![
        ScriptedTurn::chunks(["Let me check ", "both cities."])
            .with_tool_call("call_1", "get_weather", json!({ "city": "Paris" }))
            .with_tool_call("call_2", "get_weather", json!({ "city": "Lisbon" })),
        ScriptedTurn::chunks([
            "Lisbon is warmer: ",
            "24 °C and sunny, ",
            "against 18 °C and rain in Paris.",
        ]),
    ]);

    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(GetWeather));
    let engine = Engine::new(Arc::new(model), tools, EngineConfig::default());

    let options = RunOptions::new().with_on_event(|event| match event {
        EngineEvent::TextDelta { text } => println!("text_delta        {text:?}"),
        EngineEvent::Thinking { text } => println!("thinking          {text:?}"),
        EngineEvent::ServerToolUse { name, input, .. } => {
            println!("server_tool_use   {name} {input}")
        }
        EngineEvent::ServerToolResult {
            result_type,
            is_error,
            ..
        } => println!("server_tool_result {result_type} error={is_error}"),
        EngineEvent::ToolStart { name, input, .. } => println!("tool_start        {name} {input}"),
        EngineEvent::ToolEnd { name, output, .. } => {
            println!("tool_end          {name} -> {:?}", output.content)
        }
        EngineEvent::ProviderRetry {
            attempt,
            delay_ms,
            error,
            ..
        } => {
            println!(
                "provider_retry    attempt {attempt} failed ({error}); retrying in {delay_ms} ms"
            )
        }
        EngineEvent::AssistantMessage { message } => {
            println!(
                "assistant_message {} content block(s)",
                message.content.len()
            )
        }
    });

    let mut conversation = Conversation::new();
    let question = Message::user("Is it warmer in Paris or Lisbon right now?");
    let outcome = engine.run(&mut conversation, question, options).await;

    println!();
    println!("stop_reason: {}", outcome.stop_reason.as_str());
    println!("rounds:      {}", outcome.rounds);
    println!("tools run:   {}", outcome.tools_executed.join(", "));
    println!("response:    {}", outcome.response);

    println!();
    println!("conversation:");
    for message in conversation.messages() {
        for block in &message.content {
            let line = match block {
                ContentBlock::Text { text, .. } => text.clone(),
                ContentBlock::Thinking { thinking, .. } => format!("(thinking) {thinking}"),
                ContentBlock::ToolUse { id, name, input } => {
                    format!("tool_use {id} {name} {input}")
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => {
                    format!("tool_result {tool_use_id} {content}")
                }
            };
            println!(
                "  {:<9} {line}",
                format!("{:?}", message.role).to_lowercase()
            );
        }
    }
}
