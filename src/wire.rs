//! What a model is sent and what it answers: the context (system prompt, tool
//! definitions, messages) and tool calls, in the OpenAI Chat Completions shape.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool definition as it is sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolDef {
    /// The exact JSON that is sent and counted: the OpenAI function-tool wrapper,
    /// compact, keys in the order written here and in the schema.
    /// Written from borrowed fields (no copy of the description or the schema).
    pub fn wire_json(&self) -> String {
        #[derive(Serialize)]
        struct Wire<'a> {
            r#type: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        serde_json::to_string(&Wire {
            r#type: "function",
            function: Function {
                name: &self.name,
                description: &self.description,
                parameters: &self.parameters,
            },
        })
        .expect("a tool definition serializes")
    }
}

/// A tool call made by the model. `arguments` is the raw JSON text, which may be invalid.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: &Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }
    }
}

/// One message of the conversation after the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        tool_calls: Vec<ToolCall>,
        /// Searches the provider ran itself while answering (native tool search),
        /// sent back verbatim with the answer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        searches: Vec<NativeSearch>,
        /// The provider's own parts of the answer, verbatim (a JSON array), when it
        /// asks to have them sent back as received (Gemini's thought signatures ride
        /// on them); the backend that made them sends them in place of `content` and
        /// `tool_calls`, which say the same for counting and scoring.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        echo: Option<String>,
    },
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
        /// The tools a search found, when the answer goes back in the provider's own
        /// form (`tool_reference` blocks, `tool_search_output`) so that the provider
        /// expands their definitions.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        references: Vec<String>,
    },
}

impl Message {
    /// An answer of the model, with no provider-side search.
    pub fn assistant(content: Option<String>, tool_calls: Vec<ToolCall>) -> Message {
        Message::Assistant {
            content,
            tool_calls,
            searches: Vec::new(),
            echo: None,
        }
    }
}

/// A search the provider ran itself while answering (its server-side tool search).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NativeSearch {
    /// The provider's blocks or items of the search, verbatim (a JSON array).
    pub raw: String,
    /// What it searched with (the search's input, as JSON).
    pub query: String,
    /// The tools it found, by name, best first.
    pub found: Vec<String>,
    /// Why the blocks could not be read as a search (an unknown block type, a result
    /// without tool references): counted as a protocol error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed: Option<String>,
}

/// Who runs a native tool search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Execution {
    /// The provider searches the deferred tools itself.
    Server,
    /// discbench searches, and answers in the provider's own form so that the
    /// provider expands what it found.
    Client,
}

/// How a provider's own tool search is asked for: which tools are deferred (sent
/// with `defer_loading`), who searches, and with what.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeTools {
    pub execution: Execution,
    /// `bm25` or `regex` (the provider's server tool variant).
    pub variant: &'static str,
    /// discbench's own search tool (replaced by the provider's on the server side).
    pub search_tool: String,
    /// Every deferred definition, in tool-list order: the same in every request.
    pub deferred: std::sync::Arc<[ToolDef]>,
}

impl NativeTools {
    pub fn defers(&self, name: &str) -> bool {
        self.deferred.iter().any(|t| t.name == name)
    }
}

/// Tools a provider may be shown as one group with its own name and description
/// (OpenAI's `namespace`): the legacy tools of one connector, one database or one MCP
/// server. Each member keeps its own name, so a call names the same tool on every
/// backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGroup {
    pub name: String,
    pub description: String,
    /// Member tool names, in tool-list order.
    pub tools: Vec<String>,
}

/// Everything sent in one request. The tool list is shared: every request of a
/// scenario × mode with all tools loaded sends the same one, so it is not copied.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub system: String,
    pub tools: std::sync::Arc<[ToolDef]>,
    /// A tool the model must call (the selection step's forced call); `None` = the
    /// model chooses.
    pub tool_choice: Option<String>,
    /// Ask for a JSON object as the answer (OpenAI's `response_format`; the selection
    /// step's second level).
    pub json_mode: bool,
    pub messages: Vec<Message>,
    /// The tools that may be called, when a mode limits them without changing the tool
    /// list (`allowed-tools`): the Responses API's `allowed_tools`; `None` = any.
    pub allowed: Option<Vec<String>>,
    /// The provider's own tool search, when the mode asks for it (`native=server` or
    /// `native=client`).
    pub native: Option<std::sync::Arc<NativeTools>>,
    /// The groups the mode's tools fall into (a connector, a database, an MCP server),
    /// for a backend that sends them grouped; tools of no group stand alone.
    pub groups: Option<std::sync::Arc<[ToolGroup]>>,
}

impl Context {
    pub fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The user's message being answered: the last one (a single query's only one; in
    /// a conversation, the current turn's).
    pub fn query(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            })
            .unwrap_or("")
    }
}

/// A model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub text: Option<String>,
    pub calls: Vec<ToolCall>,
    /// Searches the provider ran itself while answering.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<NativeSearch>,
    /// The provider's own parts of the answer, to be sent back as received
    /// ([`Message::Assistant`]'s `echo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub echo: Option<String>,
}

impl Response {
    pub fn say(text: impl Into<String>) -> Self {
        Response {
            text: Some(text.into()),
            calls: Vec::new(),
            searches: Vec::new(),
            echo: None,
        }
    }
    pub fn call(calls: Vec<ToolCall>) -> Self {
        Response {
            text: None,
            calls,
            searches: Vec::new(),
            echo: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The wrapper as a `json!` value writes it: keys in insertion order (the
    /// `preserve_order` feature), every string escaped alike.
    fn as_value(t: &ToolDef) -> String {
        json!({
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters}
        })
        .to_string()
    }

    #[test]
    fn the_wire_json_is_the_wrappers_value_written() {
        let defs = [
            ToolDef {
                name: "a".into(),
                description: String::new(),
                parameters: json!({}),
            },
            ToolDef {
                name: "jira.create_issue".into(),
                description:
                    "Quotes \" and \\ back, a tab\t, a line\nbreak, \u{1} and é, 日本, </script>"
                        .into(),
                parameters: json!({
                    "type": "object",
                    "required": ["z", "a"],
                    "properties": {"z": {"type": "string", "enum": ["x", 1, null, 2.5]}, "a": {"type": "integer"}}
                }),
            },
        ];
        for d in &defs {
            assert_eq!(d.wire_json(), as_value(d));
        }
        assert!(defs[1]
            .wire_json()
            .starts_with(r#"{"type":"function","function":{"name":"jira.create_issue","#));
    }
}
