//! Agent-written Markdown to HTML that is safe to put in the page: a
//! CommonMark parser (`pulldown-cmark`) and an allow-list sanitizer
//! (`ammonia`) run on the server, and the page inserts only this output.
//!
//! What survives is text formatting, lists, tables, quotes and code. Links
//! keep only `http`, `https` and `mailto` and open in a new tab without
//! handing over the opener; images are dropped (a report never makes the
//! page fetch anything); raw HTML is escaped by the parser before the
//! sanitizer sees it, so the sanitizer is the second wall, not the first.

use pulldown_cmark::{html, Event, Options, Parser};

/// Render `source` (CommonMark with GitHub tables, strikethrough and task
/// lists) to sanitized HTML.
pub fn render(source: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // Raw HTML in the source is shown as text, never passed through.
    let events = Parser::new_ext(source, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut unsafe_html = String::with_capacity(source.len() * 5 / 4);
    html::push_html(&mut unsafe_html, events);
    ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .rm_tags(["img"])
        .link_rel(Some("noopener noreferrer"))
        .set_tag_attribute_value("a", "target", "_blank")
        .clean(&unsafe_html)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn formatting_lists_tables_and_code_survive() {
        let html = render("**done**: fixed `x`\n\n- a\n- b\n\n| h |\n|---|\n| c |\n\n```rust\nfn f() {}\n```\n");
        for want in [
            "<strong>done</strong>",
            "<code>x</code>",
            "<li>a</li>",
            "<table>",
            "<td>c</td>",
            "<pre><code",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
    }

    #[test]
    fn hostile_markdown_renders_inert() {
        let cases = [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "![pic](https://example.com/track.png)",
            "[click](javascript:alert(1))",
            "[data](data:text/html;base64,PHNjcmlwdD4=)",
            "<svg onload=alert(1)><circle/></svg>",
            "<iframe src=https://example.com></iframe>",
            "<a href=\"https://x\" onclick=\"alert(1)\">x</a>",
            "<div style=\"background:url(https://example.com)\">x</div>",
        ];
        for source in cases {
            let html = render(source);
            // Only what is inside tags can act; escaped source shown as text cannot.
            let tags: String = html
                .split('<')
                .skip(1)
                .filter_map(|rest| rest.split_once('>').map(|(tag, _)| tag.to_ascii_lowercase()))
                .collect::<Vec<_>>()
                .join(" ");
            for banned in [
                "script",
                "img",
                "svg",
                "iframe",
                "javascript:",
                "data:",
                "onerror",
                "onload",
                "onclick",
                "style",
            ] {
                assert!(!tags.contains(banned), "{source:?} rendered {html:?}");
            }
        }
        let link = render("[site](https://example.com)");
        assert!(
            link.contains(r#"rel="noopener noreferrer""#) && link.contains(r#"target="_blank""#),
            "{link}"
        );
    }

    #[test]
    fn pathological_input_stays_bounded() {
        let backticks = "`".repeat(64 * 1024);
        assert!(render(&backticks).contains("<pre>"), "an empty fenced block");
        assert!(
            render(&format!("x {backticks}")).contains("``"),
            "an unclosed code span is text"
        );
        let nested = "- ".repeat(5_000) + "deep";
        assert!(render(&nested).contains("deep"));
    }
}
