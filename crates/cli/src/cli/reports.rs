//! `reports` and `reply`: what agents reported (a question's options
//! numbered), and the person's answer to an agent's latest report.

use super::commands::{print_json, text_of};
use super::Failure;
use crate::client::{encode, Client};
use crate::model::Report;

/// `reports`: newest first, the Markdown as the agent wrote it, a question's
/// options numbered (`reply AGENT 2` picks the second).
pub async fn reports(
    client: &Client,
    agent: Option<String>,
    queue: Option<String>,
    count: u32,
    raw: bool,
) -> Result<(), Failure> {
    let mut query = format!("limit={}", count.min(500));
    if let Some(q) = queue {
        query.push_str(&format!("&queue={}", crate::model::QueueName::new(&q)?));
    }
    if let Some(a) = agent {
        query.push_str(&format!("&agent_id={}", encode(&a)));
    }
    let items = client.reports(&query).await?;
    if raw {
        print_json(&serde_json::json!({ "items": items }));
        return Ok(());
    }
    if items.is_empty() {
        println!("no reports yet");
    }
    // What each question was answered with: the replies queued or taken
    // (`answers` names the report a reply answers).
    let open: Vec<String> = client
        .status()
        .await?
        .agents
        .into_iter()
        .filter_map(|a| a.asking)
        .collect();
    let mut replies = client.instructions("status=pending").await?;
    replies.extend(client.instructions("status=consumed&limit=200").await?);
    for r in items {
        let on = match &r.instruction_id {
            Some(id) => match client.instruction(id).await {
                Ok(i) => format!(" · on \"{}\"", super::show::first_line(&i.content)),
                Err(_) => " · on an instruction since deleted".to_owned(),
            },
            None => String::new(),
        };
        println!(
            "── {} in {} · {}{on}",
            r.agent_id,
            r.queue,
            super::show::when(&r.created_at)
        );
        println!("{}", r.content.trim_end());
        let answer = replies.iter().find(|i| i.answers.as_deref() == Some(r.id.as_str()));
        match answer {
            Some(a) => println!(
                "answered: \"{}\" ({})",
                super::show::first_line(&a.content),
                if a.status == crate::model::InstructionStatus::Pending {
                    "queued, next for it"
                } else {
                    "delivered"
                }
            ),
            // Open (the agent's newest question, nothing delivered to it
            // since, as the status says): answerable from here.
            None if !r.options.is_empty() && open.contains(&r.id) => {
                println!("answers (reply {} NUMBER picks one):", r.agent_id);
                for (n, option) in r.options.iter().enumerate() {
                    println!("  {}. {option}", n + 1);
                }
            }
            // No longer open (the agent got an instruction since, or asked
            // again): its answers as they were, nothing to pick.
            None if !r.options.is_empty() => {
                println!("answers it offered (no longer open): {}", r.options.join(" | "));
            }
            None => {}
        }
    }
    Ok(())
}

/// What a reply to `report` says: option N when the words are just a number
/// of one of its options, else the words.
fn answer_of(report: &Report, words: &[String]) -> Result<String, Failure> {
    if let [only] = words {
        if let Ok(n) = only.trim().parse::<usize>() {
            if !report.options.is_empty() {
                return report.options.get(n.wrapping_sub(1)).cloned().ok_or_else(|| {
                    Failure(
                        format!(
                            "the question has {} answers; pick 1 to {} (or write the answer in words)",
                            report.options.len(),
                            report.options.len()
                        ),
                        1,
                    )
                });
            }
        }
    }
    text_of(words)
}

/// `reply <agent> <text|N>`: answer that agent's latest report.
pub async fn reply(client: &Client, agent: String, queue: Option<String>, words: &[String]) -> Result<(), Failure> {
    // Without `--queue`: the agent's newest report wherever it is, as
    // `reports --agent` finds it (the hints `status` and `reports` print
    // name no queue).
    let scope = match &queue {
        Some(q) => format!("queue={}&", crate::model::QueueName::new(q)?),
        None => String::new(),
    };
    let latest = client
        .reports(&format!("{scope}agent_id={}&limit=1", encode(&agent)))
        .await?;
    let Some(report) = latest.into_iter().next() else {
        return Err(Failure(
            match queue {
                Some(q) => format!("{agent} has not reported anything in {q} yet"),
                None => format!("{agent} has not reported anything yet"),
            },
            1,
        ));
    };
    let queue = report.queue.clone();
    let answer = answer_of(&report, words)?;
    client.reply(&report.id, &answer).await?;
    println!("sent to {agent}: {answer:?} is next in {queue}");
    Ok(())
}
