//! A running local-mcp, from outside: where it is ([`target`]), its HTTP
//! API called with answers decoded into `model` types ([`Client`]), and its
//! event stream followed ([`remote`]). The CLI's commands, the stdio bridge,
//! the Stop hooks and the desktop shell attached to a headless server all
//! use it; `cli` only parses and prints. It never opens the database.

pub mod remote;
pub mod target;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::{Instruction, QueueRecord, Report, StatusSnapshot, Template};
pub use target::{http_client, root_cause, Source, Target};

/// Why a call to the running instance failed, in words for the person.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// Nothing answers where local-mcp should be.
    #[error("{0}")]
    NotRunning(String),
    /// It answered with an error (its message, and what to do about a 401).
    #[error("{message}")]
    Refused { status: u16, message: String },
    /// Anything else: the request could not be made, or the answer not read.
    #[error("{0}")]
    Other(String),
}

impl From<crate::Error> for Failure {
    fn from(e: crate::Error) -> Failure {
        match e {
            crate::Error::NotFound(m) => Failure::NotRunning(m),
            other => Failure::Other(other.to_string()),
        }
    }
}

/// A file to send: its name and bytes.
#[derive(Debug, Clone)]
pub struct FilePart {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl FilePart {
    fn part(self) -> reqwest::multipart::Part {
        reqwest::multipart::Part::bytes(self.bytes).file_name(self.name)
    }
}

/// `{"item": …}`
#[derive(Deserialize)]
struct Item<T> {
    item: T,
}

/// `{"items": […]}`
#[derive(Deserialize)]
struct Items<T> {
    items: Vec<T>,
}

/// A new instruction as the API takes it.
#[derive(Debug, Default, Serialize)]
pub struct NewInstruction {
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// The running instance's API.
#[derive(Debug, Clone)]
pub struct Client {
    pub target: Target,
    http: reqwest::Client,
}

impl Client {
    pub fn new(target: Target) -> Result<Client, Failure> {
        Ok(Client {
            target,
            http: http_client()?,
        })
    }

    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, self.target.api(path))
    }

    /// Send a request (with the token) and read the answer's text; an error
    /// answer becomes its message.
    pub async fn send_text(&self, mut request: reqwest::RequestBuilder) -> Result<String, Failure> {
        if let Some(token) = &self.target.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| {
            Failure::NotRunning(format!(
                "local-mcp is not answering at {} ({}). Is it running?",
                self.target.base,
                root_cause(&e)
            ))
        })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| Failure::Other(format!("reading the answer failed: {e}")))?;
        if status.is_success() {
            return Ok(text);
        }
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let message = value["error"]["message"].as_str().unwrap_or(text.trim());
        let hint = match status.as_u16() {
            401 => {
                " (this local-mcp requires a token: pass --token, or run this where it wrote its connection-info file)"
            }
            _ => "",
        };
        Err(Failure::Refused {
            status: status.as_u16(),
            message: format!("{message}{hint}"),
        })
    }

    /// Send a request and decode its JSON answer.
    pub async fn send<T: DeserializeOwned>(&self, request: reqwest::RequestBuilder) -> Result<T, Failure> {
        let text = self.send_text(request).await?;
        serde_json::from_str(&text).map_err(|e| {
            Failure::Other(format!(
                "local-mcp answered in a shape this version does not read ({e}); is it another version?"
            ))
        })
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Failure> {
        self.send(self.request(reqwest::Method::GET, path)).await
    }

    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> Result<T, Failure> {
        self.send(self.request(reqwest::Method::POST, path).json(body)).await
    }

    pub async fn status(&self) -> Result<StatusSnapshot, Failure> {
        self.get("/api/status").await
    }

    /// Instructions, by the query the API takes (`status=pending&queue=…`).
    pub async fn instructions(&self, query: &str) -> Result<Vec<Instruction>, Failure> {
        Ok(self
            .get::<Items<Instruction>>(&format!("/api/instructions?{query}"))
            .await?
            .items)
    }

    /// One instruction by its id.
    pub async fn instruction(&self, id: &str) -> Result<Instruction, Failure> {
        Ok(self
            .get::<Item<Instruction>>(&format!("/api/instructions/{}", encode(id)))
            .await?
            .item)
    }

    /// Queue an instruction, with files if any (then the text may be empty).
    pub async fn add(&self, new: NewInstruction, files: Vec<FilePart>) -> Result<Instruction, Failure> {
        if files.is_empty() {
            return Ok(self.post::<Item<Instruction>>("/api/instructions", &new).await?.item);
        }
        let mut form = reqwest::multipart::Form::new().text("content", new.content);
        if let Some(q) = new.queue {
            form = form.text("queue", q);
        }
        if let Some(t) = new.target {
            form = form.text("target", t);
        }
        for file in files {
            form = form.part("files", file.part());
        }
        let request = self.request(reqwest::Method::POST, "/api/instructions").multipart(form);
        Ok(self.send::<Item<Instruction>>(request).await?.item)
    }

    /// Reports, newest first, by the query the API takes.
    pub async fn reports(&self, query: &str) -> Result<Vec<Report>, Failure> {
        Ok(self.get::<Items<Report>>(&format!("/api/reports?{query}")).await?.items)
    }

    /// Answer a report: queued first, for the agent that wrote it.
    pub async fn reply(&self, report_id: &str, content: &str) -> Result<Instruction, Failure> {
        let path = format!("/api/reports/{}/reply", encode(report_id));
        Ok(self
            .post::<Item<Instruction>>(&path, &json!({ "content": content }))
            .await?
            .item)
    }

    /// Hold or release one queue, or every queue; the queues whose state changed.
    pub async fn hold(&self, queue: Option<&str>, held: bool) -> Result<Vec<QueueRecord>, Failure> {
        #[derive(Deserialize)]
        struct Changed {
            changed: Vec<QueueRecord>,
        }
        let path = if held { "/api/hold" } else { "/api/release" };
        Ok(self.post::<Changed>(path, &json!({ "queue": queue })).await?.changed)
    }

    /// Release the instructions held since an import or a restore (one
    /// queue's, or all); the instructions released.
    pub async fn release_held(&self, queue: Option<&str>) -> Result<Vec<Instruction>, Failure> {
        Ok(self
            .post::<Items<Instruction>>("/api/instructions/release", &json!({ "queue": queue }))
            .await?
            .items)
    }

    /// Forget an agent, or (`None`) every agent that is gone; those forgotten.
    pub async fn forget_agents(
        &self,
        agent: Option<&str>,
        queue: Option<&str>,
    ) -> Result<Vec<crate::model::AgentRef>, Failure> {
        #[derive(Deserialize)]
        struct Forgotten {
            forgotten: Vec<crate::model::AgentRef>,
        }
        Ok(self
            .post::<Forgotten>("/api/agents/forget", &json!({ "agent_id": agent, "queue": queue }))
            .await?
            .forgotten)
    }

    /// End an agent's loop (its waiting or next call tells it to stop).
    pub async fn stop_agent(&self, agent: &str, queue: Option<&str>) -> Result<(), Failure> {
        let request = self
            .request(reqwest::Method::POST, "/api/agents/stop")
            .json(&json!({ "agent_id": agent, "queue": queue }));
        self.send_text(request).await.map(drop)
    }

    pub async fn templates(&self) -> Result<Vec<Template>, Failure> {
        Ok(self.get::<Items<Template>>("/api/templates").await?.items)
    }

    pub async fn template(&self, name: &str) -> Result<Template, Failure> {
        Ok(self
            .get::<Item<Template>>(&format!("/api/templates/{}", encode(name)))
            .await?
            .item)
    }

    /// Save a template (and its files, when given); returns it as stored.
    pub async fn save_template(&self, name: &str, content: &str, files: Vec<FilePart>) -> Result<Template, Failure> {
        let path = format!("/api/templates/{}", encode(name));
        let request = self
            .request(reqwest::Method::PUT, &path)
            .json(&json!({ "content": content }));
        let mut saved = self.send::<Item<Template>>(request).await?.item;
        if !files.is_empty() {
            let mut form = reqwest::multipart::Form::new();
            for file in files {
                form = form.part("files", file.part());
            }
            let request = self
                .request(reqwest::Method::POST, &format!("{path}/files"))
                .multipart(form);
            saved = self.send::<Item<Template>>(request).await?.item;
        }
        Ok(saved)
    }

    pub async fn delete_template(&self, name: &str) -> Result<(), Failure> {
        let request = self.request(reqwest::Method::DELETE, &format!("/api/templates/{}", encode(name)));
        self.send_text(request).await.map(drop)
    }

    /// A template's file, by its ordinal.
    pub async fn template_file(&self, name: &str, ordinal: u32) -> Result<Vec<u8>, Failure> {
        let mut request = self.request(
            reqwest::Method::GET,
            &format!("/api/templates/{}/files/{ordinal}", encode(name)),
        );
        if let Some(token) = &self.target.token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| {
                Failure::Other(format!(
                    "cannot fetch the template's file {ordinal}: {}",
                    root_cause(&e)
                ))
            })?;
        let bytes = response
            .bytes()
            .await
            .map_err(|e| Failure::Other(format!("cannot fetch the template's file {ordinal}: {e}")))?;
        Ok(bytes.to_vec())
    }
}

/// Percent-encode a path segment or query value (agent ids may hold any
/// printable character). A space is `%20`, never `+`: in a path `+` is a
/// plus (a template "Bad Name" was refused as "Bad+Name").
pub fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}
