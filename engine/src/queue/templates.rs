//! Templates: saved instructions, kept with the same durability as the
//! person's other input. Using one is the composer's (or the CLI's) business:
//! it fills the text, which is then queued like any other.

use super::{validate_content, Queue};
use crate::model::{template_name, Template};
use crate::store::Durability;
use crate::{time, Error, Result};

/// How many templates a database keeps: a list to pick from, not a second history.
pub const MAX_TEMPLATES: usize = 500;

impl Queue {
    /// Every template, by name.
    pub async fn templates(&self) -> Result<Vec<Template>> {
        self.blocking(|i| i.store.read(|db| db.templates())).await
    }

    pub async fn template(&self, name: &str) -> Result<Template> {
        let name = template_name(name)?;
        self.blocking(move |i| {
            i.store
                .read(|db| db.get_template(&name)?.ok_or_else(|| no_template(&name)))
        })
        .await
    }

    /// Save `content` under `name` (replacing what was there); true when it is new.
    pub async fn save_template(&self, name: &str, content: String) -> Result<(Template, bool)> {
        let name = template_name(name)?;
        let content = validate_content(content)?;
        self.blocking(move |i| {
            i.store.write(
                Durability::Full,
                |db| {
                    let new = db.get_template(&name)?.is_none();
                    if new && db.templates()?.len() >= MAX_TEMPLATES {
                        return Err(Error::Conflict(format!(
                            "there are {MAX_TEMPLATES} templates already: delete one first"
                        )));
                    }
                    Ok((db.put_template(&name, &content, &time::now())?, new))
                },
                |_| {},
            )
        })
        .await
    }

    pub async fn delete_template(&self, name: &str) -> Result<()> {
        let name = template_name(name)?;
        self.blocking(move |i| {
            i.store.write(
                Durability::Full,
                |db| {
                    if db.delete_template(&name)? {
                        Ok(())
                    } else {
                        Err(no_template(&name))
                    }
                },
                |_| {},
            )
        })
        .await
    }
}

fn no_template(name: &str) -> Error {
    Error::NotFound(format!("no template named {name}"))
}
