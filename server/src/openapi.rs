//! The OpenAPI 3.1 document of the `/v1` routes, generated from the wire types' JSON Schemas
//! (schemars) so it cannot drift from what the server parses and answers.

use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use robota_remote::wire::{
    CommandRequest, CreateSessionRequest, ErrorBody, ForkSessionRequest, Gap, NameBody,
    PromptStatus, SavedSessionList, SessionInfo, SessionList, SubmitRequest, SubmitResponse,
    WsClientMessage, WsServerMessage,
};

fn add<T: JsonSchema>(schemas: &mut Map<String, Value>) {
    let schema = schemars::schema_for!(T);
    let mut value = serde_json::to_value(&schema).unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        if let Some(Value::Object(defs)) = object.remove("$defs") {
            for (name, def) in defs {
                schemas.entry(name).or_insert(def);
            }
        }
    }
    schemas.insert(T::schema_name().to_string(), value);
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

fn operation(summary: &str, body: Option<&str>, status: &str, answer: Value) -> Value {
    let mut op = json!({
        "summary": summary,
        "responses": {
            status: {"description": "success", "content": json_content(answer)},
            "default": {"description": "an error", "content": json_content(reference("ErrorBody"))},
        },
    });
    if let (Some(body), Some(object)) = (body, op.as_object_mut()) {
        object.insert(
            "requestBody".into(),
            json!({"required": true, "content": json_content(reference(body))}),
        );
    }
    op
}

fn object() -> Value {
    json!({"type": "object"})
}

/// The document.
pub fn document() -> Value {
    let mut schemas = Map::new();
    add::<CreateSessionRequest>(&mut schemas);
    add::<ForkSessionRequest>(&mut schemas);
    add::<SessionInfo>(&mut schemas);
    add::<SessionList>(&mut schemas);
    add::<SavedSessionList>(&mut schemas);
    add::<SubmitRequest>(&mut schemas);
    add::<SubmitResponse>(&mut schemas);
    add::<PromptStatus>(&mut schemas);
    add::<CommandRequest>(&mut schemas);
    add::<NameBody>(&mut schemas);
    add::<ErrorBody>(&mut schemas);
    add::<Gap>(&mut schemas);
    add::<WsClientMessage>(&mut schemas);
    add::<WsServerMessage>(&mut schemas);
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let prompt_id =
        json!({"name": "prompt_id", "in": "path", "required": true, "schema": {"type": "integer"}});
    let with = |mut op: Value, params: &[&Value]| {
        if let Some(object) = op.as_object_mut() {
            object.insert(
                "parameters".into(),
                Value::Array(params.iter().map(|p| (*p).clone()).collect()),
            );
        }
        op
    };
    let paths = json!({
        "/v1/health": {"get": {"summary": "Liveness (no token needed)", "security": [], "responses": {"200": {"description": "ok"}}}},
        "/v1/sessions": {
            "post": operation("Open a session (new or resumed)", Some("CreateSessionRequest"), "201", reference("SessionInfo")),
            "get": operation("The hosted sessions", None, "200", reference("SessionList")),
        },
        "/v1/saved-sessions": {"get": with(operation("The saved sessions of a project folder", None, "200", reference("SavedSessionList")),
            &[&json!({"name": "cwd", "in": "query", "required": false, "schema": {"type": "string"}})])},
        "/v1/sessions/{id}": {
            "get": with(operation("One hosted session", None, "200", reference("SessionInfo")), &[&id]),
            "delete": with(operation("Close a session (abort, save, stop hosting)", None, "200", object()), &[&id]),
        },
        "/v1/sessions/{id}/fork": {"post": with(operation("Host a copy of a session", Some("ForkSessionRequest"), "201", reference("SessionInfo")), &[&id])},
        "/v1/sessions/{id}/prompts": {"post": with(operation("Submit a prompt", Some("SubmitRequest"), "202", reference("SubmitResponse")), &[&id])},
        "/v1/sessions/{id}/prompts/{prompt_id}": {
            "get": with(operation("A prompt's state (waits up to wait_ms for its end)", None, "200", reference("PromptStatus")),
                &[&id, &prompt_id, &json!({"name": "wait_ms", "in": "query", "required": false, "schema": {"type": "integer", "maximum": robota_remote::wire::MAX_PROMPT_WAIT_MS}})]),
            "delete": with(operation("Cancel a prompt", None, "200", object()), &[&id, &prompt_id]),
        },
        "/v1/sessions/{id}/abort": {"post": with(operation("Abort the running prompt and drop the queued one", None, "200", object()), &[&id])},
        "/v1/sessions/{id}/commands": {
            "get": with(operation("The session's commands", None, "200", object()), &[&id]),
            "post": with(operation("Run a command", Some("CommandRequest"), "200", object()), &[&id]),
        },
        "/v1/sessions/{id}/history": {"get": with(operation("The full history", None, "200", object()), &[&id])},
        "/v1/sessions/{id}/context": {"get": with(operation("The context window's state", None, "200", object()), &[&id])},
        "/v1/sessions/{id}/name": {
            "get": with(operation("The session's name", None, "200", reference("NameBody")), &[&id]),
            "put": with(operation("Rename the session", Some("NameBody"), "200", reference("NameBody")), &[&id]),
        },
        "/v1/sessions/{id}/permissions": {"get": with(operation("Permission requests waiting for an answer", None, "200", object()), &[&id])},
        "/v1/sessions/{id}/permissions/{request_id}": {"post": with(operation("Answer a permission request (a PermissionResponse: {\"type\":\"allow_once\"}, …)", None, "200", object()),
            &[&id, &json!({"name": "request_id", "in": "path", "required": true, "schema": {"type": "string"}})])},
        "/v1/sessions/{id}/events": {"get": with(json!({
            "summary": "The session's events as Server-Sent Events (resume with Last-Event-ID or ?after=)",
            "responses": {"200": {"description": "an event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}},
        }), &[&id, &json!({"name": "after", "in": "query", "required": false, "schema": {"type": "integer"}})])},
        "/v1/sessions/{id}/ws": {"get": with(json!({
            "summary": "WebSocket (subprotocol robota.v1): WsClientMessage in, WsServerMessage out",
            "responses": {"101": {"description": "switching protocols"}},
        }), &[&id])},
    });
    let document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "robota serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sessions of the robota agent engine over HTTP + SSE and WebSocket. See server/PROTOCOL.md.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": Value::Object(schemas),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    });
    // schemars points at `#/$defs/…`; in OpenAPI the definitions live in components.
    let text = document
        .to_string()
        .replace("#/$defs/", "#/components/schemas/");
    serde_json::from_str(&text).unwrap_or(document)
}
