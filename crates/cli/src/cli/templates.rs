//! `templates` (list, save, delete) and `add --template`: saved
//! instructions and their files.

use super::commands::{file_part, print_json, text_of};
use super::Failure;
use crate::client::{Client, FilePart};

/// `add --template NAME [TEXT…]`: the template's text, then TEXT after a
/// blank line; and its files, fetched to attach again (kept in memory).
pub async fn from_template(
    client: &Client,
    name: &str,
    words: &[String],
) -> Result<(Vec<String>, Vec<FilePart>), Failure> {
    let template = client.template(name).await?;
    let mut text = template.content;
    if !words.is_empty() {
        text = format!("{}\n\n{}", text.trim_end(), text_of(words)?);
    }
    let mut files = Vec::new();
    for file in &template.files {
        files.push(FilePart {
            name: crate::model::attachment_name(&file.name),
            bytes: client.template_file(name, file.ordinal).await?,
        });
    }
    Ok((vec![text], files))
}

/// `templates [--save NAME TEXT [--attach FILE…] | --delete NAME] [--json]`.
pub async fn templates(
    client: &Client,
    save: Option<Vec<String>>,
    attach: &[std::path::PathBuf],
    delete: Option<String>,
    json: bool,
) -> Result<(), Failure> {
    if let Some(pair) = save {
        let (name, text) = (&pair[0], &pair[1]);
        let content = text_of(std::slice::from_ref(text))?;
        let files = attach.iter().map(|p| file_part(p)).collect::<Result<Vec<_>, _>>()?;
        let saved = client.save_template(name, &content, files).await?;
        let note = match saved.files.len() {
            0 => String::new(),
            1 => " with 1 file".to_owned(),
            n => format!(" with {n} files"),
        };
        println!("saved template {}{note}", saved.name);
        return Ok(());
    }
    if let Some(name) = delete {
        client.delete_template(&name).await?;
        println!("deleted template {name}");
        return Ok(());
    }
    let items = client.templates().await?;
    if json {
        print_json(&serde_json::json!({ "items": items }));
        return Ok(());
    }
    if items.is_empty() {
        println!("no templates yet: templates --save NAME TEXT, or in the page's settings");
    }
    for t in items {
        let first = t.content.lines().next().unwrap_or_default();
        let more = if t.content.lines().nth(1).is_some() { " …" } else { "" };
        println!("{:<20} {first}{more}", t.name);
    }
    Ok(())
}
