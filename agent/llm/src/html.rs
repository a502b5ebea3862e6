//! The text a person would read on an HTML error page.
//!
//! A proxy or a web server in front of the model server (nginx, a cloud
//! gateway, a misconfigured base URL that hits a website) answers errors
//! with a page. Its first line is `<!DOCTYPE html>`, which says nothing;
//! the page's title and visible text say what went wrong.

/// The title and visible text of `body` when it is an HTML page, with
/// tags, scripts and styles removed, common entities decoded and
/// whitespace collapsed; `None` when `body` is not HTML.
pub fn visible_text(body: &str) -> Option<String> {
    let lower = body.to_ascii_lowercase();
    let start = lower.trim_start();
    if !(start.starts_with("<!doctype html") || start.starts_with("<html")) {
        return None;
    }
    let title = between(body, &lower, "<title", "</title>")
        .map(|t| collapse(&decode(t)))
        .unwrap_or_default();
    let text = collapse(&decode(&strip(body, &lower)));
    let text = match (title.is_empty(), text.is_empty()) {
        (_, true) if title.is_empty() => "an HTML page without text".to_owned(),
        (_, true) => title,
        (false, false) if !text.starts_with(&title) => format!("{title}: {text}"),
        _ => text,
    };
    Some(text)
}

/// The inner text of the first `open ... close` element (`lower` is `body`
/// lower-cased, so byte offsets match).
fn between<'a>(body: &'a str, lower: &str, open: &str, close: &str) -> Option<&'a str> {
    let at = lower.find(open)?;
    let inner = at + lower[at..].find('>')? + 1;
    let end = inner + lower[inner..].find(close)?;
    Some(&body[inner..end])
}

/// `body` without tags, and without the head, scripts and styles.
fn strip(body: &str, lower: &str) -> String {
    let mut out = String::new();
    let mut at = 0;
    while at < body.len() {
        let Some(open) = lower[at..].find('<').map(|i| at + i) else {
            out.push_str(&body[at..]);
            break;
        };
        out.push_str(&body[at..open]);
        // Elements whose content is not shown are skipped whole.
        let skipped = ["head", "script", "style"].iter().find_map(|name| {
            let rest = &lower[open + 1..];
            let after = rest.strip_prefix(name)?;
            if !after.starts_with(['>', ' ', '\t', '\n', '\r']) {
                return None;
            }
            let close = format!("</{name}");
            Some(lower[open..].find(&close).map_or(body.len(), |i| open + i))
        });
        let from = skipped.unwrap_or(open);
        at = match lower[from..].find('>') {
            Some(i) => from + i + 1,
            None => body.len(),
        };
        // A tag separates words: `<td>a</td><td>b</td>` reads "a b".
        out.push(' ');
    }
    out
}

fn decode(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::visible_text;

    #[test]
    fn a_proxy_page_reads_as_its_title_and_text() {
        let nginx = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n";
        assert_eq!(visible_text(nginx).unwrap(), "502 Bad Gateway nginx/1.25.3");
        let page = "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>404 Not Found</title>\n<style>body{color:red}</style></head><body>\n<p>The requested URL &quot;/chat/completions&quot; was not found on this server.</p><script>var x = 1 < 2;</script>\n</body></html>";
        assert_eq!(
            visible_text(page).unwrap(),
            "404 Not Found: The requested URL \"/chat/completions\" was not found on this server."
        );
        assert_eq!(
            visible_text("<html><body></body></html>").unwrap(),
            "an HTML page without text"
        );
        assert_eq!(visible_text("{\"error\":\"x\"}"), None);
        assert_eq!(visible_text("Bad gateway <b>x</b>"), None);
    }
}
