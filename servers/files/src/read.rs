//! `read_file`: line-numbered text with an offset and a limit in lines.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Files larger than this are only read in parts (offset/limit).
pub(crate) const HARD_CAP_BYTES: u64 = 4 * 1024 * 1024;
/// Lines returned when the caller gives no limit.
pub(crate) const DEFAULT_LIMIT: usize = 2000;
/// Characters kept of one line; longer lines are cut with a note.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes sniffed for a NUL to call a file binary.
const SNIFF_BYTES: usize = 8192;

/// What the caller asked for, already validated.
pub(crate) struct ReadRequest {
    /// 1-based first line.
    pub offset: usize,
    /// Most lines to return.
    pub limit: usize,
    /// Whether the caller chose the window (allows reading past the hard cap).
    pub windowed: bool,
    /// Cap on the text returned, in bytes.
    pub max_output: usize,
}

/// Reads the requested window of `path`; `shown` is the path as the model
/// gave it, for messages.
pub(crate) fn read_window(path: &Path, shown: &str, req: &ReadRequest) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| io_message(shown, &e))?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory; use list_dir to see its entries"
        ));
    }
    if meta.len() > HARD_CAP_BYTES && !req.windowed {
        return Err(format!(
            "{shown} is {} bytes, over the 4 MB read cap; read it in parts with offset and limit (lines)",
            meta.len()
        ));
    }
    let mut file = std::fs::File::open(path).map_err(|e| io_message(shown, &e))?;
    let mut sniff = vec![0u8; SNIFF_BYTES];
    let n = read_up_to(&mut file, &mut sniff).map_err(|e| io_message(shown, &e))?;
    sniff.truncate(n);
    if sniff.contains(&0) {
        return Err(format!(
            "{shown} is a binary file ({} bytes); read_file shows text only",
            meta.len()
        ));
    }
    if meta.len() == 0 {
        return Ok(format!("({shown} is empty)"));
    }
    let reader = BufReader::new(std::io::Cursor::new(sniff).chain(file));
    render_lines(reader, shown, req)
}

fn render_lines(
    mut reader: impl BufRead,
    shown: &str,
    req: &ReadRequest,
) -> Result<String, String> {
    let mut out = String::new();
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    let last_wanted = req.offset.saturating_add(req.limit).saturating_sub(1);
    let mut stopped_for_size = None;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| io_message(shown, &e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no < req.offset {
            continue;
        }
        if line_no > last_wanted {
            // There is more: say where to go on.
            out.push_str(&format!(
                "[showing lines {}-{}; more follow, continue with offset={}]\n",
                req.offset, last_wanted, line_no
            ));
            return Ok(out);
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        let line = format_line(line_no, text);
        if out.len() + line.len() > req.max_output && line_no > req.offset {
            stopped_for_size = Some(line_no);
            break;
        }
        out.push_str(&line);
    }
    if let Some(next) = stopped_for_size {
        out.push_str(&format!(
            "[output capped at {} bytes after line {}; continue with offset={next}]\n",
            req.max_output,
            next - 1
        ));
    } else if line_no < req.offset {
        return Err(format!(
            "offset {} is past the end of {shown}, which has {line_no} lines",
            req.offset
        ));
    }
    Ok(out)
}

fn format_line(line_no: usize, text: &str) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!(
            "{line_no:>6}\t{}… [line cut: {} more bytes]\n",
            &text[..cut],
            text.len() - cut
        ),
        None => format!("{line_no:>6}\t{text}\n"),
    }
}

fn read_up_to(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// A file-system error in words the model can act on.
pub(crate) fn io_message(shown: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("{shown} does not exist; check the path with list_dir")
        }
        std::io::ErrorKind::PermissionDenied => format!("permission denied: {shown}"),
        std::io::ErrorKind::IsADirectory => {
            format!("{shown} is a directory; use list_dir to see its entries")
        }
        std::io::ErrorKind::NotADirectory => {
            format!("{shown}: a component of the path is a file, not a directory")
        }
        _ => format!("{shown}: {e}"),
    }
}
